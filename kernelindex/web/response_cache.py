"""A per-worker cache of public responses, kept exact by page versions.

Pages and their JSON twins are pure functions of the catalogue, the URL and the day (the
access date of citations), and a public one is the same for every visitor. This ASGI
middleware keeps the bytes of each such ``200`` response with the scopes the page depends
on (``kernelindex.store.version``: declared by the page with ``depends_on``, else ``lists``)
and the sequence number read before it was made. A later request for the same URL is
answered from memory while none of those scopes has been changed by a later write: an
attestation on one run leaves every other run's page cached, the ingest of one workload
every other leaderboard. The check costs one indexed read on SQLite (in the threadpool,
off the event loop) and nothing on PostgreSQL, where a listener keeps the numbers in
memory (``VersionReader`` says how stale that can be, and for how long).

Only what is safe to share is kept: ``GET`` requests without a signed-in visitor's session
cookie (checked with the site's key: any other cookie does not count) or an
``Authorization`` header, answered ``200`` with ``Cache-Control: public`` and no
``Set-Cookie``. ``If-None-Match`` is answered ``304`` from the kept ETag; byte ranges and
date conditions go to the app, which answers them itself. An error is never kept: while
the database is down, every request asks it again, and when the version check itself finds
it down or silent, the request is answered 503 at once (``kernelindex.web.errors``).

The key holds the path, the query and the day, and nothing the client sends in a header:
so a response that may be kept is rendered as if asked for at the public origin (its
scheme and ``Host`` are those of ``KERNELINDEX_PUBLIC_URL``), and no header of one
visitor's request can reach the body served to the next.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kernelindex.store.version import ATTESTATION_PATHS, ATTESTATIONS, LISTS, VersionReader
from kernelindex.web.errors import TOO_SLOW, UNREACHABLE, database_trouble, unavailable

# The largest page kept: a sixteenth of the default cache (64 MiB), so one page never crowds out many.
# The largest pages of the 1M-run catalogue stay under it; a larger one is logged once per path.
MAX_ENTRY_BYTES = 4 * 1024 * 1024
LOG = logging.getLogger("kernelindex.response_cache")
# Requests the app answers itself: credentials, byte ranges, date-based conditions.
_APP_ANSWERS = frozenset({b"authorization", b"range", b"if-range", b"if-modified-since"})
_REPLACED = frozenset({b"host", b"forwarded", b"x-forwarded-host", b"x-forwarded-proto", b"x-forwarded-port"})
# Headers of a 304: the body's own headers are not sent again.
_BODY_HEADERS = frozenset({b"content-length", b"content-type", b"content-encoding"})


# Where a page being rendered for the cache declares what it depends on (``depends_on``).
_DEPENDS = "kernelindex.depends"


def depends_on(request: Request, scopes: Iterable[str]) -> None:
    """Say which scopes the page being rendered depends on, instead of the lists."""
    declared = request.scope.get(_DEPENDS)
    if declared is not None:
        declared.update(scopes)


def _default_scopes(path: str) -> frozenset[str]:
    return frozenset({LISTS, ATTESTATIONS} if path.startswith(ATTESTATION_PATHS) else {LISTS})


@dataclass(frozen=True)
class Entry:
    scopes: frozenset[str]
    made_at: int  # the sequence number read before it was rendered
    epoch: int  # the reader's epoch then: a store found again since may be another
    headers: list[tuple[bytes, bytes]]
    body: bytes
    etag: bytes | None


class ResponseCache:
    def __init__(
        self,
        app: ASGIApp,
        reader: VersionReader,
        max_bytes: int,
        session_cookie: str,
        signed_in: Callable[[bytes], bool],
        public_url: str,
    ):
        self.app = app
        origin = urlsplit(public_url)
        self.scheme = origin.scheme
        self.host = origin.netloc.encode()
        self.reader = reader
        self.max_bytes = max_bytes
        self.cookie = session_cookie.encode() + b"="
        self.signed_in = signed_in
        self.entries: OrderedDict[tuple[bytes, ...], Entry] = OrderedDict()
        self.size = 0
        self.hits = 0
        self.misses = 0
        # Paths whose page was too large to keep, logged the first time (it is then rendered every time).
        self.oversized: set[bytes] = set()
        # Single flight: the renders under way, by key. A request for a page another request is
        # rendering waits for that render and is answered from it, so a stale page (after an
        # ingest, say) is rendered once per worker however many ask for it at once.
        self.rendering: dict[tuple[bytes, ...], asyncio.Event] = {}
        self.joined = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        match = b""
        for name, value in scope["headers"]:
            if name == b"cookie":
                # Only a signed-in visitor's pages are their own; a stray, expired or forged
                # session cookie (or none) gets the page everyone gets.
                if self.cookie in value and self.signed_in(value):
                    await self.app(scope, receive, send)
                    return
            elif name in _APP_ANSWERS:
                await self.app(scope, receive, send)
                return
            elif name == b"if-none-match":
                match = value
        day = datetime.now(UTC).date().isoformat().encode()
        # No page varies with Accept or Accept-Encoding (only error responses, never kept, do).
        key = (scope.get("raw_path") or scope["path"].encode(), scope["query_string"], day)
        entry = self.entries.get(key)
        scopes = entry.scopes if entry is not None else ()
        versions = self.reader.from_memory(scopes)
        if versions is None:
            # A round trip to the database (or a wait for it, when it is in trouble): in the
            # threadpool, so that other requests go on meanwhile.
            versions = await run_in_threadpool(self.reader.read, scopes)
        if versions is None:
            trouble = self.reader.trouble
            detail = database_trouble(trouble) if trouble is not None else None
            if trouble is not None and detail in (UNREACHABLE, TOO_SLOW):
                # The database was just found down or silent: say so now, rather than have the
                # page wait for it a second time.
                await unavailable(Request(scope), trouble, detail)(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        seq, numbers = versions
        # Read after the versions: a store found again while they were read is seen here.
        epoch = self.reader.epoch
        if self._fresh(entry, epoch, numbers):
            assert entry is not None
            self.hits += 1
            self.entries.move_to_end(key)
            await self._answer(entry, match, send)
            return
        under_way = self.rendering.get(key)
        if under_way is not None:
            await under_way.wait()
            entry = self.entries.get(key)
            if self._fresh(entry, epoch, numbers):
                assert entry is not None
                self.joined += 1
                self.entries.move_to_end(key)
                await self._answer(entry, match, send)
                return
        self.misses += 1
        done = asyncio.Event()
        self.rendering.setdefault(key, done)
        try:
            await self._render(scope, receive, send, key, seq, epoch)
        finally:
            if self.rendering.get(key) is done:
                del self.rendering[key]
            done.set()

    @staticmethod
    def _fresh(entry: Entry | None, epoch: int, numbers: dict[str, int]) -> bool:
        return (
            entry is not None and entry.epoch == epoch and all(number <= entry.made_at for number in numbers.values())
        )

    async def _answer(self, entry: Entry, match: bytes, send: Send) -> None:
        if match and entry.etag and _matches(match, entry.etag):
            headers = [(name, value) for name, value in entry.headers if name not in _BODY_HEADERS]
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": entry.headers})
        await send({"type": "http.response.body", "body": entry.body})

    async def _render(
        self, scope: Scope, receive: Receive, send: Send, key: tuple[bytes, ...], seq: int, epoch: int
    ) -> None:
        declared: set[str] = set()
        headers: list[tuple[bytes, bytes]] = []
        chunks: list[bytes] = []
        size = 0
        keep = True

        async def capture(message: Message) -> None:
            nonlocal headers, size, keep
            if message["type"] == "http.response.start":
                # A copy: the middlewares outside add their own headers to this message.
                headers = list(message.get("headers", []))
                keep = message["status"] == 200 and _shareable(message.get("headers", []))
            elif message["type"] == "http.response.body" and keep:
                body = message.get("body", b"")
                size += len(body)
                if size > MAX_ENTRY_BYTES:
                    keep = False
                    self._refused(key[0])
                else:
                    chunks.append(body)
                    if not message.get("more_body", False):
                        scopes = frozenset(declared) or _default_scopes(scope["path"])
                        self._store(key, Entry(scopes, seq, epoch, headers, b"".join(chunks), _etag(headers)))
            await send(message)

        # Forwarding headers could change the scheme or host the app sees; they are dropped too.
        asked = [(name, value) for name, value in scope["headers"] if name not in _REPLACED]
        canonical = {**scope, "scheme": self.scheme, "headers": [(b"host", self.host), *asked], _DEPENDS: declared}
        await self.app(canonical, receive, capture)

    def _refused(self, path: bytes) -> None:
        if path in self.oversized:
            return
        self.oversized.add(path)
        LOG.warning(
            "response cache: %s is over the %s bytes a page may take, so it is rendered for every request",
            path.decode("latin-1"),
            f"{MAX_ENTRY_BYTES:,}",
        )

    def _store(self, key: tuple[bytes, ...], entry: Entry) -> None:
        old = self.entries.pop(key, None)
        if old is not None:
            self.size -= len(old.body)
        self.entries[key] = entry
        self.size += len(entry.body)
        while self.size > self.max_bytes and self.entries:
            _, evicted = self.entries.popitem(last=False)
            self.size -= len(evicted.body)


def _etag(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    return next((value for name, value in headers if name == b"etag"), None)


def _shareable(headers: list[tuple[bytes, bytes]]) -> bool:
    public = False
    for name, value in headers:
        if name == b"set-cookie":
            return False
        if name == b"cache-control":
            public = value.startswith(b"public")
    return public


def _matches(header: bytes, etag: bytes) -> bool:
    if header.strip() == b"*":
        return True
    return etag in [tag.strip().removeprefix(b"W/") for tag in header.split(b",")]
