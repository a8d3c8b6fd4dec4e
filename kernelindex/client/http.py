"""``Client``: the registry's JSON API over HTTP, answered in the API's own Pydantic models.

Lists page by keyset (each ``iter_*`` follows ``nextCursor`` to the end, or ``limit`` items);
GETs are retried with exponential backoff on network errors, 429 and 502/503/504 (a
``Retry-After`` the registry sends is honoured, up to ``max_wait_s``); a POST is retried only
when it was never sent (a refused connection). Refusals raise ``ProblemError`` subclasses
carrying the RFC 9457 body.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from kernelindex import __version__, urls
from kernelindex.client.errors import NetworkError, UnexpectedResponse, problem_error
from kernelindex.store.schemas import (
    GpuDetail,
    GpuItem,
    GpuPage,
    RunDetail,
    RunItem,
    RunPage,
    SearchResponse,
    WorkloadDetail,
    WorkloadItem,
    WorkloadPage,
)
from kernelindex.store.workload_top import WorkloadTop
from kernelindex.web.compare import CompareResult
from kernelindex.web.regressions import RegressionsPage

Model = TypeVar("Model", bound=BaseModel)
Item = TypeVar("Item", bound=BaseModel)

RETRIED_STATUSES = frozenset({429, 502, 503, 504})
# The formats of /runs/{name}/cite.{fmt} and /workloads/{slug}/cite.{fmt}, by the names people use.
CITATION_FORMATS = {"bibtex": "bib", "ris": "ris", "csl": "csl.json", "text": "txt"}


class SubmissionReceipt(BaseModel):
    """What ``POST /api/v1/submissions`` answers (202 or 201): at least its id, status and url;
    other members are kept as sent."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str | int
    status: str
    url: str


class Client:
    """One registry, e.g. ``Client("https://kernelindex.example")``; use as a context manager."""

    def __init__(
        self,
        registry: str,
        *,
        timeout_s: float = 20.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        max_wait_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        public_url: str | None = None,
    ):
        if not registry.startswith(("http://", "https://")):
            raise ValueError(f"a registry is an http:// or https:// URL, not {registry!r}")
        self.registry = registry.rstrip("/")
        # Where permalinks point: the registry's canonical origin, when it is asked at another address.
        self.public_url = (public_url or registry).rstrip("/")
        self.retries, self.backoff_s, self.max_wait_s, self._sleep = retries, backoff_s, max_wait_s, sleep
        self._http = httpx.Client(
            base_url=self.registry,
            timeout=timeout_s,
            transport=transport,
            follow_redirects=True,  # a registry moved (to https, to a new path) answers where it went
            headers={"User-Agent": f"kernelindex-client/{__version__}", "Accept": "application/json"},
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def permalink(self, path: str) -> str:
        """A path the registry served (``url`` fields are relative to the site), as an absolute URL."""
        return path if path.startswith(("http://", "https://")) else urls.absolute(self.public_url, path)

    # --- transport ----------------------------------------------------------------------

    def _wait(self, attempt: int, response: httpx.Response | None) -> float:
        retry_after = response.headers.get("Retry-After", "") if response is not None else ""
        if retry_after.isdigit():
            return min(float(retry_after), self.max_wait_s)
        return min(self.backoff_s * 2**attempt, self.max_wait_s)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """The registry's 2xx answer to one request; ``ProblemError`` or ``NetworkError`` otherwise."""
        kept = {key: value for key, value in (params or {}).items() if value is not None}
        idempotent = method in ("GET", "HEAD")
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, params=kept, content=content, headers=headers)
            except httpx.TransportError as exc:
                # A POST whose connection never opened was not received, so it may be sent again.
                if attempt < self.retries and (idempotent or isinstance(exc, httpx.ConnectError)):
                    self._sleep(self._wait(attempt, None))
                    attempt += 1
                    continue
                raise NetworkError(f"{self.registry} could not be reached: {exc or type(exc).__name__}") from exc
            if response.status_code in RETRIED_STATUSES and idempotent and attempt < self.retries:
                self._sleep(self._wait(attempt, response))
                attempt += 1
                continue
            if response.is_success:
                return response
            raise problem_error(response.status_code, _body(response), str(response.url))

    def _json(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        response = self.request("GET", path, params=params)
        try:
            return response.json()
        except ValueError as exc:
            raise UnexpectedResponse(f"{response.url} did not answer JSON") from exc

    def _get(self, model: type[Model], path: str, params: Mapping[str, Any] | None = None) -> Model:
        data = self._json(path, params)
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise UnexpectedResponse(f"{path} answered JSON that is not a {model.__name__}: {exc}") from exc

    def _pages(
        self, page: type[Model], items: Callable[[Model], Sequence[Item]], path: str, params: Mapping[str, Any]
    ) -> Iterator[Item]:
        """Every item of a keyset-paged list, following ``nextCursor`` page by page."""
        cursor: str | None = None
        while True:
            found = self._get(page, path, {**params, "cursor": cursor})
            yield from items(found)
            cursor = getattr(found, "next_cursor", None)
            if not cursor:
                return

    # --- the API ------------------------------------------------------------------------

    def search(self, q: str, *, gpu: str | None = None, kinds: Sequence[str] = (), limit: int = 20) -> SearchResponse:
        params: dict[str, Any] = {"q": q, "gpu": gpu, "limit": limit}
        if kinds:
            params["kind"] = list(kinds)
        return self._get(SearchResponse, f"{urls.API}/search", params)

    def workload(self, ref: str) -> WorkloadDetail:
        return self._get(WorkloadDetail, urls.api_workload(ref))

    def iter_workloads(self, *, page_size: int = 100, **filters: Any) -> Iterator[WorkloadItem]:
        """Every workload the filters admit (source, collection, tag, model, gpu, q, measured, sort)."""
        return self._pages(
            WorkloadPage, lambda page: page.items, f"{urls.API}/workloads", {**filters, "limit": page_size}
        )

    def workload_top(
        self, ref: str, *, gpu: str | None = None, case: str | int | None = None, limit: int = 10
    ) -> WorkloadTop:
        """The ranked top of a workload on ``gpu`` at ``case`` (index or axis values, "num_tokens=4096")."""
        params = {"gpu": gpu, "case": None if case is None else str(case), "limit": limit}
        return self._get(WorkloadTop, urls.api_workload_top(ref), params)

    def run(self, ref: str) -> RunDetail:
        return self._get(RunDetail, urls.api_run(ref))

    def iter_runs(self, *, page_size: int = 100, **filters: Any) -> Iterator[RunItem]:
        """Every run the filters admit (workload, gpu, implementation, evidence, eligible, comparison_key, sort)."""
        return self._pages(RunPage, lambda page: page.items, f"{urls.API}/runs", {**filters, "limit": page_size})

    def compare(self, runs: Sequence[str]) -> CompareResult:
        return self._get(CompareResult, f"{urls.API}/compare", {"run": list(runs)})

    def gpu(self, slug: str) -> GpuDetail:
        return self._get(GpuDetail, urls.api_gpu(slug))

    def iter_gpus(self, *, page_size: int = 100) -> Iterator[GpuItem]:
        return self._pages(GpuPage, lambda page: page.items, f"{urls.API}/gpus", {"limit": page_size})

    def regressions(
        self,
        *,
        gpu: str | None = None,
        framework: str | None = None,
        workload: str | None = None,
        kernel: str | None = None,
        page: int = 1,
    ) -> RegressionsPage:
        """One page of version regressions, largest slowdown first (the JSON twin of /regressions)."""
        params = {"gpu": gpu, "framework": framework, "workload": workload, "kernel": kernel, "page": page}
        return self._get(RegressionsPage, urls.json_twin(urls.regressions()), params)

    def citation(self, ref: str, fmt: str, *, of: Literal["run", "workload"] = "run") -> str:
        """A run's (``of="run"``) or a leaderboard's (``of="workload"``) citation as text."""
        if fmt not in CITATION_FORMATS:
            raise ValueError(f"citation formats are {', '.join(CITATION_FORMATS)}; not {fmt!r}")
        build = urls.run_citation if of == "run" else urls.workload_citation
        return self.request("GET", build(ref, CITATION_FORMATS[fmt])).text

    def submit(self, document: bytes, api_key: str) -> SubmissionReceipt:
        """Post a submission file as it is, with the Bearer ``api_key``."""
        headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        response = self.request("POST", f"{urls.API}/submissions", content=document, headers=headers)
        try:
            return SubmissionReceipt.model_validate(response.json())
        except (ValueError, ValidationError) as exc:
            raise UnexpectedResponse(f"{response.url} answered a submission with no id, status and url") from exc


def _body(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {"detail": response.text[:500]}
    return body if isinstance(body, dict) else {"detail": str(body)[:500]}
