"""Search results in the API's form."""

from __future__ import annotations

from typing import Any

from kernelindex.store.api.schemas import SearchHitItem, SearchResponse

API_PATHS = {"workload": "workloads", "implementation": "implementations", "gpu": "gpus", "model": "models"}


def search_response(results: Any) -> SearchResponse:
    """The API form of ``kernelindex.store.search.SearchResults``."""
    return SearchResponse(
        query=results.query,
        hits=[
            SearchHitItem(
                kind=hit.kind,
                slug=hit.slug,
                title=hit.title,
                subtitle=hit.subtitle,
                url=hit.url,
                api_url=f"/api/v1/{API_PATHS[hit.kind]}/{hit.slug}",
            )
            for hit in results.hits
        ],
        did_you_mean=results.did_you_mean,
    )
