"""Time search-as-you-type (PRODUCT.md §10: median ≤ 5 ms server time at 10,000 workloads).

    .venv/bin/python bench/search_suggest.py [--workloads 10000] [--queries 300] [--database-url URL]
    .venv/bin/python bench/search_suggest.py --existing URL [--existing URL]

Builds a synthetic catalogue of ``--workloads`` workloads in a new SQLite file (and, with
``--database-url``, in that PostgreSQL database too, which is emptied first by downgrading
and upgrading its migrations). The workloads are variants of the 235 bundled SOL-ExecBench
kernels: the same names, descriptions, tags and origin models, each with a distinct number,
a few realistic modifiers ("fp8", "backward", "paged", ...), the origin model sometimes
replaced by another model or a sibling of it, three implementations from a pool of 600
projects and one of five GPUs. Everything is written through the store
(``apply_batch``), so the ingest hook builds the search index as it would in production.

On PostgreSQL the search tables are then vacuumed and analysed, as autovacuum would do
soon after such a load. Then it times, in the process and on a warm connection, ``suggest()`` over prefixes typed
as a reader would (a title, project or model name cut after 2 to 12 characters, or after a
whole word and part of the next) and ``search()`` over whole queries, a tenth of them
misspelt so that "did you mean" runs. Prints the median and min–max of each, in ms.
With ``--existing``, nothing is built: it times on catalogues already built (e.g. by
``synthetic_catalog.py``, whose workloads are made the same way).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.db import migrate
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.search_tables import SearchEntry, SearchTerm
from kernelindex.ingest.sol_execbench import KernelDetail, environment_manifest, workload_manifest
from kernelindex.manifests import Implementation
from kernelindex.paths import BUNDLED_SNAPSHOT
from kernelindex.store.batch import Batch, SourceInfo
from kernelindex.store.ingest import apply_batch, ensure_source
from kernelindex.store.search import search, suggest, words

SOURCE = SourceInfo(
    slug="bench-synthetic",
    name="Synthetic benchmark catalogue",
    url="https://kernelindex.invalid/bench",
    description="Variants of the bundled SOL-ExecBench kernels, for benchmarks only.",
    licence="none",
    attribution="Synthetic data made by bench/search_suggest.py.",
)
MODIFIERS = [
    "fp8", "bf16", "fp16", "nvfp4", "int8", "backward", "fused", "paged", "varlen", "causal", "decode",
    "prefill", "h64", "h128", "d128", "k4096", "n2048", "gqa", "mla", "with_rope", "with_bias", "split_k",
    "persistent", "tma", "warp_specialized", "sm90", "sm100", "small_batch", "long_context", "sparse",
]  # fmt: skip
GPUS = ["B200", "H100", "H200", "GB200", "A100"]
ADJECTIVES = ["rapid", "gleaming", "hollow", "proud", "electric", "silent", "amber", "brisk", "lucid", "vivid"]
ANIMALS = ["tiger", "coyote", "jellyfish", "wren", "cheetah", "quail", "otter", "falcon", "lynx", "heron"]


def real_kernels() -> list[KernelDetail]:
    folder = BUNDLED_SNAPSHOT / "api" / "kernels"
    kernels = [KernelDetail.model_validate(json.loads(p.read_text())["data"]) for p in folder.glob("*.json")]
    return sorted(kernels, key=lambda kernel: kernel.id)


def project_pool(rng: random.Random) -> list[str]:
    pool = {f"{a.title()} {b.title()}" for a in ADJECTIVES for b in ANIMALS}
    pool |= {f"{rng.choice(ADJECTIVES)}-{rng.choice(ANIMALS)}-lab-{n}" for n in range(400)}
    pool |= {"Geometric", "ac4k", "Recursive", "doubleAI", "Databricks", "Qwen", "TH3CHARLie | TileGym"}
    return sorted(pool)


def batches(count: int, seed: int = 7) -> list[Batch]:
    """``count`` synthetic workloads, each with three implementations and one environment."""
    rng = random.Random(seed)
    kernels = real_kernels()
    models = sorted({tag.removeprefix("model:") for k in kernels for tag in k.tags if tag.startswith("model:")})
    models += [f"{model}-v{n}" for model in models[:60] for n in range(2, 6)]
    projects = project_pool(rng)
    environments = [environment_manifest(gpu, "v1.1") for gpu in GPUS]
    made = []
    for i in range(count):
        base = kernels[i % len(kernels)]
        data = base.model_dump(mode="json")
        if i >= len(kernels):
            stem = base.name.split("_", 1)[-1]
            extra = "_".join(rng.sample(MODIFIERS, rng.choice((1, 1, 2, 3))))
            data["name"] = f"{i:05d}_{stem}_{extra}"
            data["workloads"] = data["workloads"][:2]
            if rng.random() < 0.5:
                tags = [t for t in data["tags"] if not t.startswith("model:")]
                data["tags"] = [*tags, f"model:{rng.choice(models)}"]
        data["id"] = 100_000 + i
        kernel = KernelDetail.model_validate(data)
        implementations = [
            Implementation.model_validate(
                {
                    "apiVersion": "kernelindex.dev/v1alpha1",
                    "kind": "Implementation",
                    "metadata": {"name": f"bench-{i}-{n}", "title": project},
                    "spec": {
                        "project": {"name": project},
                        "revision": f"submission-{i * 3 + n}",
                        "source": {"available": False},
                    },
                }
            )
            for n, project in enumerate(rng.sample(projects, 3))
        ]
        made.append(
            Batch(
                unit=f"kernel {kernel.id}",
                workload=workload_manifest(kernel),
                external_id=str(kernel.id),
                environments=[environments[i % len(environments)]],
                implementations=implementations,
            )
        )
    return made


def build(url: str, count: int) -> tuple[sessionmaker[Session], float]:
    if not url.startswith("sqlite"):
        migrate.downgrade(url, "base")
    migrate.upgrade(url)
    sessions = make_sessionmaker(make_engine(url))
    made = batches(count)
    now = datetime.now(UTC)
    start = time.perf_counter()
    for first in range(0, len(made), 500):
        with sessions.begin() as session:
            source = ensure_source(session, SOURCE)
            for batch in made[first : first + 500]:
                apply_batch(session, source, batch, now)
    seconds = time.perf_counter() - start
    if not url.startswith("sqlite"):
        # What autovacuum does in a while on a live database: statistics for the planner and
        # a visibility map, without which no scan can be index-only.
        engine = make_engine(url, isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(sa.text("VACUUM ANALYZE search_entry, search_term, search_word"))
        engine.dispose()
    return sessions, seconds


def prefixes(session: Session, count: int, rng: random.Random) -> list[str]:
    """What a reader types: the start of a name, or whole words and the start of the next."""
    names = session.scalars(select(SearchEntry.title).order_by(SearchEntry.id)).all()
    typed = []
    while len(typed) < count:
        name = rng.choice(names)
        found = words(name)
        if len(found) > 1 and rng.random() < 0.4:
            keep = rng.randrange(1, len(found))
            following = found[keep]
            typed.append(" ".join(found[:keep]) + " " + following[: rng.randint(1, len(following))])
        else:
            typed.append(name[: rng.randint(2, 12)])
    return typed


def misspelt(word: str, rng: random.Random) -> str:
    if len(word) < 5:
        return word
    at = rng.randrange(1, len(word) - 1)
    return rng.choice([word[:at] + word[at + 1 :], word[:at] + word[at + 1] + word[at] + word[at + 2 :]])


def queries(session: Session, count: int, rng: random.Random) -> list[str]:
    """Whole queries: one to three words of a name; one in ten with a typo in a word."""
    names = session.scalars(select(SearchEntry.title).order_by(SearchEntry.id)).all()
    made = []
    while len(made) < count:
        found = words(rng.choice(names))
        chosen = rng.sample(found, min(len(found), rng.randint(1, 3)))
        if rng.random() < 0.1:
            chosen[-1] = misspelt(chosen[-1], rng)
        made.append(" ".join(chosen))
    return made


def timed(call: Callable[[str], object], inputs: Sequence[str]) -> list[float]:
    for text in inputs:  # warm the statement cache and the database's pages
        call(text)
    timings = []
    for text in inputs:
        start = time.perf_counter()
        call(text)
        timings.append((time.perf_counter() - start) * 1000)
    return timings


def describe(label: str, values: list[float]) -> str:
    median, low, high = statistics.median(values), min(values), max(values)
    p95 = statistics.quantiles(values, n=20)[-1]
    return f"{label}: median {median:.2f} ms (min {low:.2f}, max {high:.2f}, p95 {p95:.2f}, n={len(values)})"


def run(label: str, url: str, count: int, query_count: int, existing: bool = False) -> None:
    if existing:
        sessions, seconds = make_sessionmaker(make_engine(url)), 0.0
    else:
        sessions, seconds = build(url, count)
    rng = random.Random(11)
    with sessions() as session:
        entries = session.scalar(select(func.count()).select_from(SearchEntry))
        terms = session.scalar(select(func.count()).select_from(SearchTerm))
        typed, whole = prefixes(session, query_count, rng), queries(session, query_count, rng)
        suggest_ms = timed(lambda text: suggest(session, text), typed)
        search_ms = timed(lambda text: search(session, text), whole)
        corrected = sum(search(session, text).did_you_mean is not None for text in whole)
    if existing:
        print(f"{label}: an existing catalogue; {entries} entries, {terms} terms")
    else:
        print(f"{label}: {count} workloads written through the store in {seconds:.1f} s", end="")
        print(f"; {entries} entries, {terms} terms")
    print("  " + describe("suggest()", suggest_ms))
    print("  " + describe("search() ", search_ms) + f"; {corrected} with a 'did you mean'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--database-url", help="a PostgreSQL URL to time too (it is emptied!)")
    parser.add_argument(
        "--existing", action="append", default=[], metavar="URL", help="time on this built catalogue (not emptied)"
    )
    args = parser.parse_args()
    if args.existing:
        for url in args.existing:
            run(url.split(":")[0], url, 0, args.queries, existing=True)
        return
    with tempfile.TemporaryDirectory() as folder:
        run("SQLite", f"sqlite:///{Path(folder) / 'search.db'}", args.workloads, args.queries)
    if args.database_url:
        run("PostgreSQL", args.database_url, args.workloads, args.queries)


if __name__ == "__main__":
    main()
