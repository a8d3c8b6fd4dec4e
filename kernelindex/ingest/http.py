"""Fetching from an upstream (a JSON API or a raw-file host): timeouts, retries with backoff,
clear failures."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

from kernelindex.ingest.bounds import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_JSON_DEPTH,
    BoundHit,
    Budget,
    json_depth_over,
    reset_time,
)

RETRYABLE_STATUS = {429, 500, 502, 503, 504}
MAX_BODY_BYTES = DEFAULT_MAX_BODY_BYTES


class UpstreamError(Exception):
    """The upstream could not give a usable answer for one request (after retries).

    ``status`` is the HTTP status of the last answer when there was one (a 404 tells a
    file that does not exist from a host that failed)."""

    def __init__(self, message: str, status: int | None = None, bound: BoundHit | None = None):
        super().__init__(message)
        self.status = status
        # The bound this request met, when it met one (the deadline, a size, a rate limit).
        self.bound = bound


def bound_error(hit: BoundHit) -> UpstreamError:
    return UpstreamError(str(hit), bound=hit)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def decode_json(body: bytes | str, url: str, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> Any:
    """Strict JSON: NaN and Infinity (which Python would accept) are refused, and so is JSON
    nested deeper than ``max_depth`` (the decoder's own recursion limit included)."""
    too_deep = UpstreamError(
        f"{url}: the response nests JSON deeper than {max_depth} levels; not read: check the upstream",
        bound=BoundHit("too_deep", f"JSON deeper than {max_depth} levels"),
    )
    try:
        value = json.loads(body, parse_constant=_reject_constant)
    except RecursionError:
        raise too_deep from None
    except ValueError as exc:
        raise UpstreamError(f"{url}: the response is not valid JSON ({exc})") from None
    if json_depth_over(value, max_depth):
        raise too_deep
    return value


class Fetcher:
    """GETs over an injected ``httpx.Client`` (JSON or raw bytes), retrying what is worth retrying.

    429 and 5xx answers, timeouts and connection errors are retried up to ``retries``
    times with exponential backoff (``Retry-After`` is honoured, capped); other 4xx
    answers fail at once. Every failure becomes an ``UpstreamError`` naming the URL.

    Each attempt has a deadline for the whole answer (``deadline_s``, by default the
    client's read timeout), not only for each read: an upstream dripping a byte at a time
    is cut off at the deadline (overshooting it by at most one read), like a timeout. The
    body is streamed and reading stops as soon as it passes ``max_body_bytes``.

    The ingest's ``budget`` bounds it all: no request starts and no wait sleeps past the
    ingest's deadline, nor over its memory ceiling; a ``Retry-After`` (or GitHub's rate-limit
    reset) longer than one wait may last (``max_backoff_s``) or than the time left fails at
    once, naming the time the upstream gave. A bound met is an ``UpstreamError`` whose
    ``bound`` says which.
    """

    def __init__(
        self,
        client: httpx.Client,
        retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        deadline_s: float | None = None,
        max_body_bytes: int | None = None,
        budget: Budget | None = None,
    ):
        self.client = client
        self.budget = budget or Budget()
        self.deadline_s = deadline_s if deadline_s is not None else client.timeout.read
        bounds = self.budget.bounds
        self.max_body_bytes = max_body_bytes if max_body_bytes is not None else bounds.max_body_bytes
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s if max_backoff_s is not None else bounds.max_wait_s
        self.sleep = sleep
        self.requests = 0

    def get(self, path: str, params: Mapping[str, str | int] | None = None) -> Any:
        """The decoded JSON body at ``path``; ``UpstreamError`` if it cannot be had or is not JSON."""
        return decode_json(self.get_bytes(path, params), self.url(path, params), self.budget.bounds.max_json_depth)

    def url(self, path: str, params: Mapping[str, str | int] | None = None) -> str:
        """The URL a GET of ``path`` with ``params`` asks for, as errors name it."""
        url = self.client.base_url.join(path.lstrip("/")) if self.client.base_url else httpx.URL(path)
        return str(url.copy_merge_params(params) if params else url)

    def get_bytes(self, path: str, params: Mapping[str, str | int] | None = None) -> bytes:
        """The body at ``path`` as bytes (a file from a raw host), with the same retries and limits."""
        url = self.url(path, params)
        try:
            return self._get_bytes(path, params, url)
        except BoundHit as hit:
            raise bound_error(hit) from None

    def _get_bytes(self, path: str, params: Mapping[str, str | int] | None, url: str) -> bytes:
        for attempt in range(self.retries + 1):
            last_try = attempt == self.retries
            self.budget.check(url)
            try:
                self.requests += 1
                status, headers, body = self._get_once(path, params, url)
            except httpx.TimeoutException:
                self.budget.check(url)  # the ingest's deadline, not this request's, may be what passed
                if last_try:
                    raise UpstreamError(f"{url}: timed out {attempt + 1} times") from None
                self._wait(self._delay(attempt), url)
                continue
            except httpx.TransportError as exc:
                if last_try:
                    raise UpstreamError(f"{url}: connection failed ({exc})") from None
                self._wait(self._delay(attempt), url)
                continue
            limited = self._rate_limit(status, headers, url)
            if status in RETRYABLE_STATUS and not last_try:
                self._wait(limited if limited is not None else self._delay(attempt), url)
                continue
            if status != 200:
                raise UpstreamError(f"{url}: HTTP {status} after {attempt + 1} attempt(s)", status=status)
            return body
        raise AssertionError("unreachable")

    def _rate_limit(self, status: int, headers: httpx.Headers, url: str) -> float | None:
        """Seconds the upstream asks us to wait before asking again (``Retry-After``, or GitHub's
        exhausted rate limit), or ``None``; a wait longer than one may last, or than the time the
        ingest has left, is a ``BoundHit`` naming the time the upstream gave."""
        exhausted = status in (403, 429) and headers.get("x-ratelimit-remaining") == "0"
        retry_after = headers.get("retry-after")
        if retry_after is None and not exhausted:
            return None
        now = datetime.now(UTC)
        reset = reset_time(now, retry_after, headers.get("x-ratelimit-reset") if exhausted else None)
        if reset is None:
            return None
        wait = max((reset - now).total_seconds(), 0.0)
        if wait > self.max_backoff_s or wait >= self.budget.remaining():
            raise self.budget.rate_limited(f"{url} (HTTP {status})", reset)
        return wait

    def _wait(self, seconds: float, url: str) -> None:
        """Sleep before the next attempt, never past the ingest's deadline."""
        remaining = self.budget.remaining()
        if seconds < remaining:
            self.sleep(seconds)
            return
        self.sleep(max(remaining, 0.0))
        self.budget.check(url)

    def _get_once(
        self, path: str, params: Mapping[str, str | int] | None, url: str
    ) -> tuple[int, httpx.Headers, bytes]:
        """One attempt: the status, its headers and (for a 200) the body, read within the
        deadline (this request's and the ingest's) and the size cap; raises
        ``httpx.TimeoutException`` past the deadline."""
        allowed = self.budget.remaining()
        if self.deadline_s is not None:
            allowed = min(allowed, self.deadline_s)
        deadline = time.monotonic() + allowed
        too_large = UpstreamError(
            f"{url}: the response is larger than {self.max_body_bytes} bytes; not read: check the upstream",
            bound=BoundHit("too_large", f"larger than {self.max_body_bytes} bytes"),
        )
        timeout = self.client.timeout.as_dict()
        timeout = {name: min(value, allowed) if value is not None else allowed for name, value in timeout.items()}
        with self.client.stream("GET", path.lstrip("/"), params=params, timeout=httpx.Timeout(**timeout)) as response:
            if response.status_code != 200:
                return response.status_code, response.headers, b""
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_body_bytes:
                raise too_large
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > self.max_body_bytes:
                    raise too_large
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout(f"no whole answer in {allowed:g} s", request=response.request)
            return 200, response.headers, bytes(body)

    def _delay(self, attempt: int) -> float:
        return min(self.backoff_s * 2**attempt, self.max_backoff_s)
