"""Reading a GitHub repository's history: the REST API for commits and trees, the raw host for files.

Two small clients over ``Fetcher`` (so timeouts, retries and size limits are the same as for
every upstream), and ``snapshot_transport``, which answers the same requests from a recorded
snapshot folder (``refs.json`` plus ``files/<commit>/<path>``). A snapshot and the live
repository therefore go through exactly the same parsing and mapping code.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import httpx

from kernelindex.ingest.bounds import NotARegularFile, read_regular, regular_file_problem
from kernelindex.ingest.http import Fetcher, UpstreamError

if TYPE_CHECKING:
    from kernelindex.ingest.reading import Reading

PER_PAGE = 100
# A bound on pages, so an upstream that ignores ``page`` cannot loop us forever.
MAX_PAGES = 1_000


@dataclass(frozen=True)
class Commit:
    sha: str
    committed_at: datetime
    subject: str


def _commit(item: Any, where: str) -> Commit:
    try:
        sha = item["sha"]
        date = datetime.fromisoformat(item["commit"]["committer"]["date"].replace("Z", "+00:00"))
        subject = item["commit"]["message"].split("\n", 1)[0]
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise UpstreamError(f"{where}: a commit has an unexpected shape ({exc!r})") from None
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}", sha) or date.tzinfo is None:
        raise UpstreamError(f"{where}: a commit has no full hash or no time zone")
    return Commit(sha=sha, committed_at=date.astimezone(UTC), subject=subject[:300])


class GitHubApi:
    """The few REST calls a history reader needs (``GET /repos/{owner}/{repo}/...``)."""

    def __init__(self, fetcher: Fetcher, owner: str, repo: str):
        self.fetcher = fetcher
        self.prefix = f"repos/{owner}/{repo}"

    def _pages(self, path: str, params: dict[str, str | int]) -> list[Any]:
        bounds = self.fetcher.budget.bounds
        pages = min(MAX_PAGES, bounds.max_pages)
        items: list[Any] = []
        for page in range(1, pages + 1):
            body = self.fetcher.get(path, {**params, "per_page": PER_PAGE, "page": page})
            if not isinstance(body, list):
                raise UpstreamError(f"{self.fetcher.url(path)}: expected a list")
            items.extend(body)
            if len(body) < PER_PAGE:
                return items
            if len(items) > bounds.max_listed:
                raise UpstreamError(
                    f"{self.fetcher.url(path)}: lists more than {bounds.max_listed} entries "
                    "(KERNELINDEX_INGEST_MAX_LISTED); stopped there: check the upstream, or raise the cap"
                )
        raise UpstreamError(
            f"{self.fetcher.url(path)}: more than {pages} pages (KERNELINDEX_INGEST_MAX_PAGES); "
            "stopped there: check the upstream, or raise the cap"
        )

    def branches(self) -> list[tuple[str, str]]:
        """``(name, head commit)`` of every branch."""
        path = f"{self.prefix}/branches"
        try:
            return [(item["name"], item["commit"]["sha"]) for item in self._pages(path, {})]
        except (KeyError, TypeError) as exc:
            raise UpstreamError(f"{self.fetcher.url(path)}: a branch has an unexpected shape ({exc!r})") from None

    def commits(self, touching: str, head: str) -> list[Commit]:
        """Commits reachable from ``head`` that changed anything under ``touching``, newest first."""
        path = f"{self.prefix}/commits"
        return [_commit(item, self.fetcher.url(path)) for item in self._pages(path, {"path": touching, "sha": head})]

    def tree(self, commit: str) -> dict[str, str]:
        """Every file of the repository at ``commit``: path → git blob hash (same hash, same bytes)."""
        path = f"{self.prefix}/git/trees/{commit}"
        body = self.fetcher.get(path, {"recursive": 1})
        if not isinstance(body, dict) or not isinstance(body.get("tree"), list):
            raise UpstreamError(f"{self.fetcher.url(path)}: expected a tree")
        if body.get("truncated"):
            # A truncated listing would silently lose files; say so instead.
            raise UpstreamError(f"{self.fetcher.url(path)}: the tree is truncated")
        if len(body["tree"]) > self.fetcher.budget.bounds.max_listed:
            raise UpstreamError(
                f"{self.fetcher.url(path)}: the tree lists {len(body['tree'])} entries, more than "
                f"{self.fetcher.budget.bounds.max_listed} (KERNELINDEX_INGEST_MAX_LISTED); not read: check the upstream"
            )
        try:
            return {entry["path"]: entry["sha"] for entry in body["tree"] if entry.get("type") == "blob"}
        except (KeyError, TypeError, AttributeError) as exc:
            raise UpstreamError(f"{self.fetcher.url(path)}: a tree entry has an unexpected shape ({exc!r})") from None


class GitHubRaw:
    """Files at a commit (or branch) from the raw host: ``GET /{owner}/{repo}/{ref}/{path}``."""

    def __init__(self, fetcher: Fetcher, owner: str, repo: str):
        self.fetcher = fetcher
        self.owner, self.repo = owner, repo

    def file(self, ref: str, path: str) -> bytes:
        return self.fetcher.get_bytes(f"{self.owner}/{self.repo}/{ref}/{path}")

    def url(self, ref: str, path: str) -> str:
        """The URL ``file`` reads, as errors name it."""
        return self.fetcher.url(f"{self.owner}/{self.repo}/{ref}/{path}")

    def public_url(self, ref: str, path: str) -> str:
        """Where a reader finds the file on github.com (not the mirror we may have read it from)."""
        return f"https://github.com/{self.owner}/{self.repo}/blob/{ref}/{path}"


def git_blob_sha(content: bytes) -> str:
    """The hash git gives a file's content, as the tree API reports it."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content, usedforsecurity=False).hexdigest()


# --- A recorded snapshot, served as both hosts -------------------------------------

SNAPSHOT_API = "http://api.snapshot.invalid/"
SNAPSHOT_RAW = "http://raw.snapshot.invalid/"
SNAPSHOT_BRANCH = "snapshot"


def snapshot_refs(root: Path) -> list[dict[str, Any]]:
    """``refs.json``: the recorded commits, oldest first. A snapshot of one commit may write it
    as that one object (``{"commit": …, "files": […]}``)."""
    try:
        refs = json.loads(read_regular(root / "refs.json", root))
    except (NotARegularFile, RecursionError) as exc:
        raise ValueError(f"{root}/refs.json: not read ({exc or 'nested too deep'})") from None
    if isinstance(refs, dict) and "commit" in refs:
        refs = [refs]
    if not isinstance(refs, list) or not all(isinstance(ref, dict) and "commit" in ref for ref in refs):
        raise ValueError(f"{root}/refs.json: expected a list of commits")
    return refs


def _last_changes(ref: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Per file, the commit that last changed it, where the snapshot recorded one: a ``files``
    entry ``{"path": …, "last_changed": "<hash> <ISO time>"}``, as a refs entry of its own."""
    changes: dict[str, dict[str, str]] = {}
    for entry in ref.get("files", []):
        if isinstance(entry, dict) and isinstance(entry.get("last_changed"), str):
            sha, _, committed = entry["last_changed"].partition(" ")
            changes[entry["path"]] = {"commit": sha, "committed": committed}
    return changes


def snapshot_transport(root: Path, owner: str, repo: str) -> httpx.MockTransport:
    """Answers the API and raw-host requests of ``GitHubApi`` and ``GitHubRaw`` from a snapshot.

    The snapshot has one branch (``snapshot``) whose history is every recorded commit; the
    tree of a commit is what the snapshot holds of it (``files/<commit>/``). On both hosts a
    ref that is not a full commit hash (a branch name, ``HEAD``) is that branch, whose head is
    the newest commit.
    """
    refs = snapshot_refs(root)
    files = root / "files"
    newest = refs[-1]["commit"]
    last_changes = _last_changes(refs[-1])

    def commit_json(ref: dict[str, Any]) -> dict[str, Any]:
        date = datetime.fromisoformat(ref["committed"]).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "sha": ref["commit"],
            "commit": {"committer": {"date": date}, "message": ref.get("subject", "")},
        }

    def tree(commit: str) -> list[dict[str, str]]:
        base = files / commit
        return [
            {"path": path.relative_to(base).as_posix(), "type": "blob", "sha": git_blob_sha(read_regular(path, root))}
            for path in sorted(base.rglob("*"))
            if not path.is_dir() and regular_file_problem(path, root) is None
        ]

    def paged(items: list[Any], request: httpx.Request) -> httpx.Response:
        per_page = int(request.url.params.get("per_page", "30"))
        page = int(request.url.params.get("page", "1"))
        return httpx.Response(200, json=items[(page - 1) * per_page : page * per_page])

    def api(request: httpx.Request) -> httpx.Response:
        path = request.url.path.strip("/")
        prefix = f"repos/{owner}/{repo}/"
        if not path.startswith(prefix):
            return httpx.Response(404, json={"message": "Not Found"})
        rest = path.removeprefix(prefix)
        if rest == "branches":
            return paged([{"name": SNAPSHOT_BRANCH, "commit": {"sha": newest}}], request)
        if rest == "commits":
            touching = request.url.params.get("path", "").strip("/")
            head = request.url.params.get("sha", SNAPSHOT_BRANCH)
            # As on the raw host, a ref that is not a full hash (a branch, HEAD) is the one branch.
            if re.fullmatch(r"[0-9a-f]{40}", head) and head != newest:
                return httpx.Response(404, json={"message": "No commit found"})
            if touching in last_changes:
                # The snapshot holds the file at its newest commit only; its history is the
                # commit that last changed it, which is all a reader of one file asks for.
                return paged([commit_json(last_changes[touching])], request)
            matching = [
                commit_json(ref)
                for ref in reversed(refs)
                if not touching or (files / ref["commit"] / touching).exists()
            ]
            return paged(matching, request)
        if match := re.fullmatch(r"git/trees/([0-9a-f]{40})", rest):
            if not (files / match[1]).is_dir():
                return httpx.Response(404, json={"message": "Not Found"})
            return httpx.Response(200, json={"sha": match[1], "tree": tree(match[1]), "truncated": False})
        return httpx.Response(404, json={"message": "Not Found"})

    def raw(request: httpx.Request) -> httpx.Response:
        parts = unquote(request.url.path).strip("/").split("/", 3)
        if len(parts) != 4 or parts[:2] != [owner, repo]:
            return httpx.Response(404, text="404: Not Found")
        # A full hash names a recorded commit; any other ref (a branch, HEAD) is the newest one.
        ref = parts[2] if re.fullmatch(r"[0-9a-f]{40}", parts[2]) else newest
        file = files / ref / parts[3]
        if not file.exists():
            return httpx.Response(404, text="404: Not Found")
        try:
            return httpx.Response(200, content=read_regular(file, files))
        except NotARegularFile:
            # A link pointing out of the snapshot, a device or a FIFO: never read.
            return httpx.Response(404, text="404: Not Found")

    def handle(request: httpx.Request) -> httpx.Response:
        return api(request) if request.url.host == httpx.URL(SNAPSHOT_API).host else raw(request)

    return httpx.MockTransport(handle)


@dataclass
class Hosts:
    """GitHub's REST API and raw-file host for one repository, as an adapter reads them: from a
    recorded snapshot (both served from its folder) or from GitHub, the token to the API only."""

    api: GitHubApi
    raw: GitHubRaw
    clients: list[httpx.Client]
    # Where it reads: "snapshot <folder>" and the snapshot's date, or the live hosts' URLs.
    snapshot_origin: str | None
    observed_at: datetime | None
    api_url: str
    raw_url: str


def open_hosts(reading: Reading, owner: str, repo: str) -> Hosts:
    """The hosts on ``reading``'s snapshot, else on GitHub (``--api-url``/``--raw-url``, else the settings)."""
    if reading.snapshot is not None:
        transport = snapshot_transport(reading.snapshot, owner, repo)
        api_client = httpx.Client(transport=transport, base_url=SNAPSHOT_API)
        raw_client = httpx.Client(transport=transport, base_url=SNAPSHOT_RAW)
        origin, observed = reading.snapshot_origin()
        api_url, raw_url = SNAPSHOT_API, SNAPSHOT_RAW
    else:
        settings = reading.settings
        api_url = reading.options.get("api_url") or settings.github_api_url
        raw_url = reading.options.get("raw_url") or settings.github_raw_url
        token = settings.github_token.get_secret_value() if settings.github_token else ""
        api_client = reading.client(api_url, headers={"Authorization": f"Bearer {token}"} if token else None)
        raw_client = reading.client(raw_url)
        origin, observed = None, None
    return Hosts(
        GitHubApi(reading.fetcher(api_client), owner, repo),
        GitHubRaw(reading.fetcher(raw_client), owner, repo),
        [api_client, raw_client],
        origin,
        observed,
        api_url.rstrip("/"),
        raw_url.rstrip("/"),
    )
