"""Every link the registry makes, one function per kind of page (PRODUCT.md §6).

Python (page contexts, the API's ``url`` fields, feeds, citations, sitemaps) and templates
(the ``urls`` global) build links only through these functions, so a path is written once
and a test checks that each one is answered by a route of the app. Path segments are
percent-encoded and empty query parameters (and page 1) left out. Paths are relative to
the site; ``absolute`` prefixes the canonical origin for permalinks, feeds and citations.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, urlencode

API = "/api/v1"


def with_query(path: str, **params: Any) -> str:
    """``path`` with the given query parameters, leaving out empty ones and page 1."""
    kept = {key: value for key, value in params.items() if value not in (None, "") and (key, value) != ("page", 1)}
    return f"{path}?{urlencode(kept, doseq=True)}" if kept else path


def _segment(value: str) -> str:
    # ":" may stand in a path segment (RFC 3986 pchar), so a digest reads "sha256:…" as it is.
    return quote(value, safe=":")


def absolute(origin: str, path: str) -> str:
    """``path`` on the site at ``origin`` (e.g. ``https://kernelindex.example``)."""
    return origin.rstrip("/") + path


def home() -> str:
    return "/"


def workloads(**query: Any) -> str:
    return with_query("/workloads", **query)


def workload(slug: str, **query: Any) -> str:
    return with_query(f"/workloads/{_segment(slug)}", **query)


def workload_group(slug: str, comparison_key: str, **query: Any) -> str:
    """A leaderboard opened on one comparison group, named by the first 16 hex digits of its key."""
    return workload(slug, group=comparison_key.removeprefix("sha256:")[:16], **query)


def workload_on(slug: str, comparison_key: str | None, **query: Any) -> str:
    """A leaderboard opened on the comparison group ``comparison_key`` (its default group without one):
    where a page that names a GPU links a workload, the group of its figures on that GPU."""
    return workload_group(slug, comparison_key, **query) if comparison_key else workload(slug, **query)


def workload_feed(slug: str) -> str:
    return f"/workloads/{_segment(slug)}/records.atom"


def workload_citation(slug: str, fmt: str, **query: Any) -> str:
    return with_query(f"/workloads/{_segment(slug)}/cite.{fmt}", **query)


def run(name: str) -> str:
    return f"/runs/{_segment(name)}"


def run_citation(name: str, fmt: str, **query: Any) -> str:
    return with_query(f"/runs/{_segment(name)}/cite.{fmt}", **query)


def run_attestations(name: str) -> str:
    """Where a run's attestation form posts."""
    return f"/runs/{_segment(name)}/attestations"


def run_report_form(name: str) -> str:
    """A run's report form, a page of its own."""
    return f"/runs/{_segment(name)}/report"


def run_reports(name: str) -> str:
    """Where a run's report form posts."""
    return f"/runs/{_segment(name)}/reports"


def attestation(name: str) -> str:
    return f"/attestations/{_segment(name)}"


def implementation(slug: str, **query: Any) -> str:
    return with_query(f"/implementations/{_segment(slug)}", **query)


def gpu(slug: str, **query: Any) -> str:
    return with_query(f"/gpus/{_segment(slug)}", **query)


def gpus() -> str:
    return "/gpus"


def model(slug: str) -> str:
    return f"/models/{_segment(slug)}"


def source(slug: str) -> str:
    return f"/sources/{_segment(slug)}"


def sources() -> str:
    return "/sources"


def figures(anchor: str | None = None) -> str:
    """What each kind of figure on the site is (``docs/FIGURES.md``), at one kind's section."""
    return f"/figures#{anchor}" if anchor else "/figures"


def protocol(name: str) -> str:
    return f"/protocols/{_segment(name)}"


def manifest(digest: str) -> str:
    return f"/manifests/{_segment(digest)}"


def schema(kind: str) -> str:
    return f"/schemas/v1alpha1/{_segment(kind)}.json"


def rerun_bundle(bundle_id: str) -> str:
    return f"/reruns/bundles/{_segment(bundle_id)}.json"


def rerun_source(implementation_name: str) -> str:
    return f"/reruns/sources/{_segment(implementation_name)}.py"


def discrepancies() -> str:
    return "/discrepancies"


def records(**query: Any) -> str:
    return with_query("/records", **query)


def regressions(**query: Any) -> str:
    return with_query("/regressions", **query)


def records_feed() -> str:
    return "/records.atom"


def search(q: str = "", kind: str | None = None, gpu: str | None = None, read_gpu: bool = True) -> str:
    """The search page; ``read_gpu=False`` searches a GPU's name in ``q`` as words instead of
    showing figures on that GPU."""
    return with_query("/search", q=q, kind=kind, gpu=gpu, read_gpu=None if read_gpu else 0)


def compare(run_names: Iterable[str], fmt: str | None = None) -> str:
    return with_query("/compare" + (f".{fmt}" if fmt else ""), run=list(run_names))


def signin(next_path: str | None = None) -> str:
    """The sign-in page, returning to ``next_path`` (a path of this site; its slashes kept readable)."""
    return f"/signin?next={quote(next_path)}" if next_path else "/signin"


def account() -> str:
    return "/account"


def admin() -> str:
    return "/admin"


def admin_runner_keys() -> str:
    return "/admin/runner-keys"


def admin_runner_key_revoke(key_id: str) -> str:
    return f"/admin/runner-keys/{_segment(key_id)}/revoke"


def user(handle: str) -> str:
    """A person's public page: the runs they submitted that the registry published."""
    return f"/users/{_segment(handle)}"


def submit() -> str:
    """The form to submit a run for review."""
    return "/submit"


def submission(public_id: str) -> str:
    """A submitted run's page: its state in the review, for its submitter and the maintainers."""
    return f"/submissions/{_segment(public_id)}"


def submission_withdrawal(public_id: str) -> str:
    """Where the submitter of an accepted run posts its withdrawal."""
    return f"/submissions/{_segment(public_id)}/withdraw"


def admin_submission(public_id: str, decision: str) -> str:
    """Where a maintainer posts a decision on a submission: ``accept``, ``reject`` or ``request-changes``."""
    return f"/admin/submissions/{_segment(public_id)}/{_segment(decision)}"


def catalogue_export() -> str:
    return "/exports/catalog.jsonl.gz"


def api_docs() -> str:
    return "/api/docs"


def json_twin(path: str) -> str:
    """The JSON twin of a page: the same path plus ``.json`` (``/index.json`` for ``/``), query kept."""
    route, _, query = path.partition("?")
    twin = "/index.json" if route == "/" else route + ".json"
    return f"{twin}?{query}" if query else twin


# --- the JSON API ------------------------------------------------------------------------


def api_workload(slug: str) -> str:
    return f"{API}/workloads/{_segment(slug)}"


def api_workload_top(slug: str, **query: Any) -> str:
    """A workload's ranked top on one GPU at one case (``?gpu=&case=&limit=``)."""
    return with_query(f"{API}/workloads/{_segment(slug)}/top", **query)


def api_reruns() -> str:
    """Where an operator uploads a signed rerun bundle (``POST``)."""
    return f"{API}/reruns"


def api_run(name: str) -> str:
    return f"{API}/runs/{_segment(name)}"


def api_runs(**query: Any) -> str:
    return with_query(f"{API}/runs", **query)


def api_implementation(slug: str) -> str:
    return f"{API}/implementations/{_segment(slug)}"


def api_gpu(slug: str) -> str:
    return f"{API}/gpus/{_segment(slug)}"


def api_gpu_workloads(slug: str, **query: Any) -> str:
    return with_query(f"{API}/gpus/{_segment(slug)}/workloads", **query)


def api_model(slug: str) -> str:
    return f"{API}/models/{_segment(slug)}"


def api_compare(run_names: Iterable[str]) -> str:
    return with_query(f"{API}/compare", run=list(run_names))


def api_source(slug: str) -> str:
    return f"{API}/sources/{_segment(slug)}"


def api_submissions() -> str:
    """Where a run is submitted for review (``POST``)."""
    return f"{API}/submissions"
