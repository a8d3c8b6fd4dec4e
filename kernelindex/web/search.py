"""Search (PRODUCT.md §6): the results page, its JSON twin and the as-you-type suggestions."""

from __future__ import annotations

from typing import ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kernelindex import urls
from kernelindex.store import search as store
from kernelindex.store.gpu_filter import GpuFilterError, product_of
from kernelindex.store.gpu_search import search_on_gpu
from kernelindex.store.schemas import WorkloadItem
from kernelindex.uncertainty import headline_text
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import BadRequest
from kernelindex.web.pages import PageContext, Part, cached_response, dump_json, page_route, render_page
from kernelindex.web.params import choice, text
from kernelindex.web.workloads import GpuOption, gpu_options

router = APIRouter()

MAX_QUERY_CHARS = 200
PAGE_LIMIT = 50  # results on the page for all kinds; one kind alone gets up to 100
KIND_LABELS = {
    "workload": "Workloads",
    "implementation": "Implementations",
    "gpu": "GPUs",
    "model": "Origin models",
}


class HitSource(Part):
    slug: str
    name: str
    url: str


class HitBest(Part):
    """A workload's fastest eligible run on the GPU the search is filtered by."""

    run: str
    url: str
    latency_ns: int
    primary_statistic: str
    implementation: str
    environment: str
    # "#1, tied with 2" where the noise cannot tell it from the runs after it in its group.
    headline: str | None = None
    tied_with: int | None = None


class Hit(Part):
    kind: str
    slug: str
    title: str
    subtitle: str
    url: str
    sources: list[HitSource]  # where its records come from; none for a GPU
    runs_on_gpu: int | None  # a workload, filtered by GPU: its runs there (0: not measured on it); else None
    best_on_gpu: HitBest | None  # and its best there, if one is eligible


def _hit(hit: store.SearchHit, on_gpu: WorkloadItem | None) -> Hit:
    best = on_gpu.fastest if on_gpu else None
    return Hit(
        kind=hit.kind,
        slug=hit.slug,
        title=hit.title,
        subtitle=hit.subtitle,
        # Searched on a GPU, a workload opens on the comparison group of its figures there.
        url=on_gpu.url if on_gpu else hit.url,
        sources=[HitSource(slug=s.slug, name=s.name, url=urls.source(s.slug)) for s in hit.sources],
        runs_on_gpu=on_gpu.runs_on_gpu if on_gpu else None,
        best_on_gpu=None
        if best is None
        else HitBest(
            run=best.run,
            url=urls.run(best.run),
            latency_ns=best.latency_ns,
            primary_statistic=best.primary_statistic,
            implementation=best.project,
            environment=best.environment_label,
            headline=headline_text(best.tied_with) if best.tied_with is not None else None,
            tied_with=best.tied_with,
        ),
    )


class SearchGpu(Part):
    """The GPU a search is filtered by: its workloads' figures are on it."""

    slug: str
    product: str
    url: str
    everywhere_url: str  # the same search on every GPU
    read_from: str | None  # the words of the query that named it, when no GPU was chosen
    as_words_url: str | None  # then, the query as typed, its GPU words searched as words


class HitGroup(Part):
    """The results of one kind, in rank order; ``more_url`` lists more of them when the page was cut short."""

    kind: str
    label: str
    hits: list[Hit]
    more_url: str | None


class SearchPage(PageContext):
    """``/search``: results grouped by kind, best first in each, the group of the best result first.

    ``query`` is the text as typed, trimmed; ``kind`` the one kind asked for, if any. An
    empty query has no groups and the page explains what can be searched.
    """

    template: ClassVar[str] = "search.html"
    query: str
    kind: str | None
    gpu: SearchGpu | None
    gpus: list[GpuOption]  # the GPU filter's choices
    total: int
    groups: list[HitGroup]
    did_you_mean: str | None
    did_you_mean_url: str | None


def checked_query(q: str) -> str:
    if len(q) > MAX_QUERY_CHARS:
        raise BadRequest(f"The search text is {len(q)} characters long; at most {MAX_QUERY_CHARS} are searched.")
    return q.strip()


@page_route(router, "/search")
def search_page(
    request: Request,
    session: SessionDep,
    q: str = "",
    kind: str | None = None,
    gpu: str | None = None,
    read_gpu: bool = True,
) -> Response:
    typed = checked_query(q)
    kind = choice("kind", kind, KIND_LABELS, "") or None  # the form's "Everything" sends kind=""
    chosen = text("gpu", gpu)
    limit = 100 if kind else PAGE_LIMIT
    try:
        found = search_on_gpu(
            session, typed, limit=limit, kinds={kind} if kind else None, gpu=chosen or None, read_gpu=read_gpu
        )
    except GpuFilterError as exc:
        raise BadRequest(str(exc)) from None
    results, slug, named, on_gpu = found.results, found.gpu, found.named, found.on_gpu
    query = results.query
    cut_short = kind is None and len(results.hits) >= limit
    kinds = list(dict.fromkeys(hit.kind for hit in results.hits))  # in the order of each kind's best hit

    def hits_of(group: str) -> list[store.SearchHit]:
        return [hit for hit in results.hits if hit.kind == group]

    groups = [
        HitGroup(
            kind=group,
            label=KIND_LABELS[group],
            hits=[_hit(hit, on_gpu.get(hit.slug) if hit.kind == "workload" else None) for hit in hits_of(group)],
            more_url=urls.search(query, group, slug) if cut_short else None,
        )
        for group in kinds
    ]
    context = SearchPage(
        query=query,
        kind=kind,
        gpu=None
        if slug is None
        else SearchGpu(
            slug=slug,
            product=product_of(session, slug),
            url=urls.gpu(slug),
            everywhere_url=urls.search(query, kind),
            read_from=named.words if named else None,
            as_words_url=urls.search(typed, kind, read_gpu=False) if named else None,
        ),
        gpus=gpu_options(session, slug),
        total=len(results.hits),
        groups=groups,
        did_you_mean=results.did_you_mean,
        did_you_mean_url=urls.search(results.did_you_mean, kind, slug) if results.did_you_mean else None,
    )
    return render_page(request, context)


@router.get("/search/suggestions.json", include_in_schema=False)
def suggestions(request: Request, session: SessionDep, q: str = "") -> Response:
    """As-you-type suggestions for the search box (``static/kernelindex.js``)."""
    hits = store.suggest(session, checked_query(q))
    body = dump_json(
        {
            "query": q,
            "suggestions": [{"title": h.title, "kind": h.kind, "subtitle": h.subtitle, "url": h.url} for h in hits],
        }
    )
    return cached_response(request, body, "application/json")
