"""A search whose workload hits carry their figures on one GPU: the page ``/search`` and the API's
``/api/v1/search`` both answer with ``search_on_gpu``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy.orm import Session

from kernelindex.store.gpu_filter import GpuInQuery, gpu_in_query, gpu_named
from kernelindex.store.schemas import WorkloadItem
from kernelindex.store.search import SearchResults, search
from kernelindex.store.workloads import workloads_on_gpu


@dataclass(frozen=True)
class GpuSearch:
    results: SearchResults  # its ``query`` is the text searched: without the words that named the GPU
    gpu: str | None  # the GPU whose figures the workload hits carry
    named: GpuInQuery | None  # the words of the query that named it, when no GPU was chosen
    on_gpu: Mapping[str, WorkloadItem]  # workload slug → its figures on ``gpu``


def search_on_gpu(
    session: Session, q: str, *, limit: int, kinds: set[str] | None, gpu: str | None, read_gpu: bool = True
) -> GpuSearch:
    """``search`` for ``q`` with each workload hit's figures on ``gpu`` (a slug, checked by
    ``gpu_named``: ``GpuFilterError`` for an unknown one) or, without it and with ``read_gpu``,
    on the GPU that words of ``q`` name (``gpu_in_query``), the other words searched."""
    slug = gpu_named(session, gpu) if gpu else None
    named = gpu_in_query(session, q) if slug is None and read_gpu else None
    if named is not None:
        slug = named.slug
    results = search(session, named.rest if named else q, limit=limit, kinds=kinds)
    found = [hit.slug for hit in results.hits if hit.kind == "workload"]
    on_gpu = workloads_on_gpu(session, found, slug) if slug and found else {}
    return GpuSearch(results=results, gpu=slug, named=named, on_gpu=on_gpu)
