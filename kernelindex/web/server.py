"""The HTTP server's own limits, for ``kernelindex serve``: slow clients are cut off.

uvicorn closes an idle keep-alive connection (``timeout_keep_alive``) but waits forever for
the headers of a request that has begun: a client sending a byte of its headers every few
seconds holds a connection (and, with many, the server) as long as it likes. ``Protocol``
closes a connection whose request headers are not complete within ``HEADER_TIMEOUT_S`` of
its opening or of the previous response. Slow bodies are bounded by the app
(``kernelindex.web.request_guard.BodyLimit``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0
KEEP_ALIVE_TIMEOUT_S = 5
# The largest request head h11 buffers before refusing it: addresses are capped at 8 KiB.
MAX_HEAD_BYTES = 16 * 1024


class Protocol(H11Protocol):
    header_timeout_s = HEADER_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.header_deadline is not None:
            self.header_deadline.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self.header_deadline is not None:
            self.header_deadline.cancel()
        self.header_deadline = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _headers_late(self) -> None:
        # Still no complete request head (h11 leaves the client IDLE until it has one).
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.logger.info("closed a connection whose request headers took over %ss", self.header_timeout_s)
            self.transport.close()


def server_options() -> dict[str, Any]:
    """The options ``uvicorn.run`` is given by ``kernelindex serve``."""
    return {
        "http": Protocol,
        "timeout_keep_alive": KEEP_ALIVE_TIMEOUT_S,
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
    }
