"""Fetching from an upstream (a JSON API or a raw-file host): timeouts, retries with backoff,
clear failures."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

RETRYABLE_STATUS = {429, 500, 502, 503, 504}
MAX_BODY_BYTES = 50 * 1024 * 1024


class UpstreamError(Exception):
    """The upstream could not give a usable answer for one request (after retries).

    ``status`` is the HTTP status of the last answer when there was one (a 404 tells a
    file that does not exist from a host that failed)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def decode_json(body: bytes, url: str) -> Any:
    """Strict JSON: NaN and Infinity (which Python would accept) are refused."""
    try:
        return json.loads(body, parse_constant=_reject_constant)
    except ValueError as exc:
        raise UpstreamError(f"{url}: the response is not valid JSON ({exc})") from None


class Fetcher:
    """GETs over an injected ``httpx.Client`` (JSON or raw bytes), retrying what is worth retrying.

    429 and 5xx answers, timeouts and connection errors are retried up to ``retries``
    times with exponential backoff (``Retry-After`` is honoured, capped); other 4xx
    answers fail at once. Every failure becomes an ``UpstreamError`` naming the URL.

    Each attempt has a deadline for the whole answer (``deadline_s``, by default the
    client's read timeout), not only for each read: an upstream dripping a byte at a time
    is cut off at the deadline (overshooting it by at most one read), like a timeout. The
    body is streamed and reading stops as soon as it passes ``max_body_bytes``.
    """

    def __init__(
        self,
        client: httpx.Client,
        retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        deadline_s: float | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ):
        self.client = client
        self.deadline_s = deadline_s if deadline_s is not None else client.timeout.read
        self.max_body_bytes = max_body_bytes
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.sleep = sleep
        self.requests = 0

    def get(self, path: str, params: Mapping[str, str | int] | None = None) -> Any:
        """The decoded JSON body at ``path``; ``UpstreamError`` if it cannot be had or is not JSON."""
        return decode_json(self.get_bytes(path, params), self.url(path, params))

    def url(self, path: str, params: Mapping[str, str | int] | None = None) -> str:
        """The URL a GET of ``path`` with ``params`` asks for, as errors name it."""
        url = self.client.base_url.join(path.lstrip("/")) if self.client.base_url else httpx.URL(path)
        return str(url.copy_merge_params(params) if params else url)

    def get_bytes(self, path: str, params: Mapping[str, str | int] | None = None) -> bytes:
        """The body at ``path`` as bytes (a file from a raw host), with the same retries and limits."""
        url = self.url(path, params)
        for attempt in range(self.retries + 1):
            last_try = attempt == self.retries
            try:
                self.requests += 1
                status, retry_after, body = self._get_once(path, params, url)
            except httpx.TimeoutException:
                if last_try:
                    raise UpstreamError(f"{url}: timed out {attempt + 1} times") from None
                self.sleep(self._delay(attempt, None))
                continue
            except httpx.TransportError as exc:
                if last_try:
                    raise UpstreamError(f"{url}: connection failed ({exc})") from None
                self.sleep(self._delay(attempt, None))
                continue
            if status in RETRYABLE_STATUS and not last_try:
                self.sleep(self._delay(attempt, retry_after))
                continue
            if status != 200:
                raise UpstreamError(f"{url}: HTTP {status} after {attempt + 1} attempt(s)", status=status)
            return body
        raise AssertionError("unreachable")

    def _get_once(self, path: str, params: Mapping[str, str | int] | None, url: str) -> tuple[int, str | None, bytes]:
        """One attempt: the status, its ``Retry-After`` and (for a 200) the body, read within the
        deadline and the size cap; raises ``httpx.TimeoutException`` past the deadline."""
        deadline = time.monotonic() + self.deadline_s if self.deadline_s is not None else None
        too_large = UpstreamError(f"{url}: the response is larger than {self.max_body_bytes} bytes")
        with self.client.stream("GET", path.lstrip("/"), params=params) as response:
            if response.status_code != 200:
                return response.status_code, response.headers.get("retry-after"), b""
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_body_bytes:
                raise too_large
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > self.max_body_bytes:
                    raise too_large
                if deadline is not None and time.monotonic() > deadline:
                    raise httpx.ReadTimeout(f"no whole answer in {self.deadline_s} s", request=response.request)
            return 200, None, bytes(body)

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self.max_backoff_s)
            except ValueError:
                pass
        return min(self.backoff_s * 2**attempt, self.max_backoff_s)
