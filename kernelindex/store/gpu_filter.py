"""A GPU named by a filter (``?gpu=``): its slug, or a refusal that suggests the near ones.

Lists filtered by GPU show each workload's figures on that GPU, so a slug nobody knows
must be refused: read as "no match", it would show every workload as not measured.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernelindex.db.tables import Environment
from kernelindex.gpus import TRACKED_GPUS
from kernelindex.slugs import slugify
from kernelindex.store.tallies import workloads_per_gpu


class GpuFilterError(ValueError):
    """A GPU filter that cannot be applied; the message says why, for the person who asked."""


class MeasuredWithoutGpu(GpuFilterError):
    def __init__(self) -> None:
        super().__init__("measured= says measured on which GPU only with gpu= (a GPU slug such as b200).")


class UnknownGpu(GpuFilterError):
    """A filter named a GPU the registry neither tracks nor has runs on; the message suggests some."""

    def __init__(self, slug: str, known: list[str]):
        self.slug = slug
        self.suggestions = difflib.get_close_matches(slug.lower(), known, n=3, cutoff=0.5)
        near = f" Did you mean {' or '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"No GPU has the slug {slug!r}.{near} The GPUs are: {', '.join(known)}.")


def known_gpu_slugs(session: Session) -> list[str]:
    """Every GPU slug a filter may name: those measured on and those tracked, by slug."""
    measured = set(session.scalars(select(Environment.gpu_slug).distinct()))
    return sorted(measured | {gpu.slug for gpu in TRACKED_GPUS})


def gpu_named(session: Session, slug: str) -> str:
    """The slug of the GPU ``slug`` names (in any case), or ``UnknownGpu``."""
    wanted = slug.strip().lower()
    known = known_gpu_slugs(session)
    if wanted not in known:
        raise UnknownGpu(slug, known)
    return wanted


@dataclass(frozen=True)
class GpuChoice:
    """A GPU with runs, as a GPU filter offers it."""

    slug: str
    product: str
    workloads: int  # workloads with a run on it


def gpu_choices(session: Session) -> list[GpuChoice]:
    """The GPUs with runs, most workloads measured first, then by product: what a GPU filter offers."""
    measured = workloads_per_gpu(session)
    products = session.execute(
        select(Environment.gpu_slug, func.min(Environment.gpu_product))
        .where(Environment.gpu_slug.in_(sorted(measured)))
        .group_by(Environment.gpu_slug)
    )
    choices = [GpuChoice(slug, product, measured[slug]) for slug, product in products]
    return sorted(choices, key=lambda choice: (-choice.workloads, choice.product.casefold()))


def product_of(session: Session, slug: str) -> str:
    """The product name of a known GPU slug (``gpu_named``'s), e.g. "NVIDIA H200"."""
    product = session.scalar(select(Environment.gpu_product).where(Environment.gpu_slug == slug).limit(1))
    if product is not None:
        return product
    return next((gpu.product for gpu in TRACKED_GPUS if gpu.slug == slug), slug)


# The most words a GPU's name spans in a query ("rtx pro 6000 blackwell server": five).
_GPU_NAME_WORDS = 5


@dataclass(frozen=True)
class GpuInQuery:
    """A GPU named by words of a search query, and the query without those words."""

    slug: str
    words: str  # the words that named it, as typed
    rest: str  # the query without them


def gpu_in_query(session: Session, q: str) -> GpuInQuery | None:
    """The GPU that consecutive words of ``q`` name by its slug ("moe 7168 fp8 h200": the H200;
    "gemm H100 SXM": the ``h100-sxm``), when other words remain; else ``None``.

    No workload's text names a GPU (a workload is measured on many), so searching for a GPU's
    name among the other words would only find the GPU; a search reads it as the GPU whose
    figures to show instead. A query that is only a GPU's name is left to find the GPU itself.
    The longest name wins, then the first.
    """
    words = q.split()
    if len(words) < 2:
        return None
    known = set(known_gpu_slugs(session))
    for length in range(min(_GPU_NAME_WORDS, len(words) - 1), 0, -1):
        for start in range(len(words) - length + 1):
            named = " ".join(words[start : start + length])
            if (slug := slugify(named, fallback="")) in known:
                rest = " ".join(words[:start] + words[start + length :])
                return GpuInQuery(slug=slug, words=named, rest=rest)
    return None
