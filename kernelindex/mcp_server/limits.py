"""A cap on tool calls per window, so an agent in a loop cannot hammer the registry through us."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class CallBudget:
    """At most ``count`` calls in each fixed window of ``window_s`` seconds (as the API's limits count)."""

    def __init__(self, count: int, window_s: float, clock: Callable[[], float] = time.monotonic):
        self.count, self.window_s, self._clock = count, window_s, clock
        self._window_start, self._used = clock(), 0
        self._lock = threading.Lock()

    def take(self) -> float | None:
        """Count one call: ``None`` when allowed, else the seconds until the window ends."""
        with self._lock:
            now = self._clock()
            if now - self._window_start >= self.window_s:
                self._window_start, self._used = now, 0
            if self._used >= self.count:
                return self.window_s - (now - self._window_start)
            self._used += 1
            return None
