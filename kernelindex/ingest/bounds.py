"""The bounds every ingest runs within, whatever its upstream sends.

An upstream we do not control may answer forever, list without end, nest JSON a million deep,
send a header of a million columns or ask us to wait for days. Each ingest therefore has a
deadline for the whole run and caps on pages, listed entries, response bytes, JSON depth, CSV
columns and row width, and a memory ceiling. Hitting one is a ``BoundHit``: a sentence naming
the bound, its value and what to do, never a hang or a traceback. ``SECURITY.md`` ("Upstreams
we do not trust") lists each bound and its default; ``Settings`` and the command line set them.
"""

from __future__ import annotations

import os
import resource
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, BinaryIO

MIB = 1024 * 1024
DEFAULT_DEADLINE_S = 30 * 60.0
DEFAULT_MAX_PAGES = 1_000
DEFAULT_MAX_LISTED = 200_000
DEFAULT_MAX_BODY_BYTES = 50 * MIB
DEFAULT_MAX_JSON_DEPTH = 64
DEFAULT_MAX_CSV_COLUMNS = 256
DEFAULT_MAX_ROW_CHARS = 64 * 1024
DEFAULT_MAX_MEMORY_BYTES = 1024 * MIB
DEFAULT_MAX_WAIT_S = 30.0
# Report lines and schema-drift notes an ingest keeps (each cut to NOTE_CHARS): the report is
# public (/sources/...), and a million unknown columns must not make it megabytes.
MAX_NOTES = 200
NOTE_CHARS = 1_000


def configured_memory_bytes() -> int:
    """``KERNELINDEX_INGEST_MAX_MEMORY_MB`` where it is set to a whole number, else the default: an
    adapter made without settings (a library caller, a test worker) keeps the ceiling it names."""
    configured = os.environ.get("KERNELINDEX_INGEST_MAX_MEMORY_MB", "")
    return int(configured) * MIB if configured.isdigit() and int(configured) > 0 else DEFAULT_MAX_MEMORY_BYTES


@dataclass(frozen=True)
class Bounds:
    """The limits one ingest runs under (see the module docstring); the defaults are the documented ones."""

    deadline_s: float = DEFAULT_DEADLINE_S
    max_pages: int = DEFAULT_MAX_PAGES
    max_listed: int = DEFAULT_MAX_LISTED
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    max_csv_columns: int = DEFAULT_MAX_CSV_COLUMNS
    max_row_chars: int = DEFAULT_MAX_ROW_CHARS
    max_memory_bytes: int = field(default_factory=configured_memory_bytes)
    max_wait_s: float = DEFAULT_MAX_WAIT_S


class BoundHit(Exception):
    """A bound was reached. ``kind`` names the failure class ("deadline", "memory",
    "rate_limited", "too_large", "too_deep", "pages", "listed", "columns"); ``fatal`` ones stop
    the whole ingest (every later unit would meet them too), the others fail one unit or file."""

    FATAL = frozenset({"deadline", "memory", "rate_limited"})

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind

    @property
    def fatal(self) -> bool:
        return self.kind in self.FATAL


def resident_bytes() -> int:
    """This process's resident memory now (Linux), else its peak so far."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class Budget:
    """One ingest's bounds and its deadline, measured on the monotonic clock (shared by the
    processes an ingest forks). ``stopped`` holds the first fatal bound met, so the runner stops
    listing further units once one is."""

    def __init__(
        self,
        bounds: Bounds | None = None,
        clock: Callable[[], float] = time.monotonic,
        memory: Callable[[], int] = resident_bytes,
    ):
        self.bounds = bounds or Bounds()
        self.clock = clock
        self.memory = memory
        self.ends = clock() + self.bounds.deadline_s
        self.stopped: BoundHit | None = None

    def remaining(self) -> float:
        return self.ends - self.clock()

    def hit(self, kind: str, message: str) -> BoundHit:
        """The ``BoundHit`` to raise; a fatal one is kept as the reason the ingest stopped."""
        found = BoundHit(kind, message)
        if found.fatal and self.stopped is None:
            self.stopped = found
        return found

    def check(self, where: str) -> None:
        """Raise ``BoundHit`` if the deadline has passed or memory is over the ceiling (``where``:
        what was being read)."""
        if self.remaining() <= 0:
            raise self.hit("deadline", deadline_sentence(where, self.bounds.deadline_s))
        if (used := self.memory()) > self.bounds.max_memory_bytes:
            raise self.hit(
                "memory",
                f"{where}: the ingest holds {used // MIB} MiB, over its ceiling of "
                f"{self.bounds.max_memory_bytes // MIB} MiB (KERNELINDEX_INGEST_MAX_MEMORY_MB); it stopped there: "
                "check what the upstream sends",
            )

    def rate_limited(self, where: str, reset: datetime) -> BoundHit:
        """The upstream asks us to wait until ``reset``, longer than one wait may last or past the deadline."""
        return self.hit(
            "rate_limited",
            f"{where}: rate-limited by the upstream until {reset:%Y-%m-%d %H:%M:%S} UTC; "
            "run the ingest again after that time",
        )


def deadline_sentence(where: str, deadline_s: float) -> str:
    return (
        f"{where}: the ingest's deadline of {deadline_s:g} s passed (KERNELINDEX_INGEST_DEADLINE_S or --deadline); "
        "run it again, or give it more time"
    )


def reset_time(now: datetime, retry_after: str | None, rate_reset: str | None) -> datetime | None:
    """When an upstream says it will answer again: ``Retry-After`` (seconds or an HTTP date) or
    GitHub's ``X-RateLimit-Reset`` (seconds since the epoch); ``None`` if it says nothing usable."""
    if retry_after is not None:
        text = retry_after.strip()
        if text.isdigit():
            seconds = min(int(text), 10**9)
            return now + timedelta(seconds=seconds)
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            when = None
        if when is not None:
            return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
    if rate_reset is not None and rate_reset.strip().isdigit():
        try:
            return datetime.fromtimestamp(min(int(rate_reset.strip()), 10**11), UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def json_depth_over(value: Any, limit: int) -> bool:
    """Whether decoded JSON nests deeper than ``limit`` containers, found without recursion
    (each container is visited once; the walk stops at the first one past the limit)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def shorten(text: str, limit: int = NOTE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def kept_notes(notes: list[str], limit: int = MAX_NOTES, what: str = "lines") -> list[str]:
    """At most ``limit`` notes, each shortened, and one line saying how many more there were."""
    kept = [shorten(note) for note in notes[:limit]]
    if len(notes) > limit:
        kept.append(f"… and {len(notes) - limit} more {what}, not kept")
    return kept


# --- Files from a folder we were given ----------------------------------------------


class NotARegularFile(Exception):
    """A path under a given folder that is not a regular file inside it."""


def open_regular(path: Path, root: Path) -> BinaryIO:
    """``path`` opened for reading, if it is a regular file whose real path lies inside ``root``:
    a link pointing out of the folder, a device, a FIFO or a socket raises ``NotARegularFile``
    before a byte is read (the open never blocks: ``O_NONBLOCK``, and ``O_NOFOLLOW`` on the
    resolved path, so nothing swapped in after the check is followed)."""
    real = path.resolve()
    if not real.is_relative_to(root.resolve()):
        raise NotARegularFile(f"{path.name}: a link pointing outside the folder given; not read")
    try:
        descriptor = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise NotARegularFile(f"{path.name}: cannot be opened ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise NotARegularFile(f"{path.name}: not a regular file (a device, FIFO or socket); not read")
    return os.fdopen(descriptor, "rb")


def regular_file_problem(path: Path, root: Path) -> str | None:
    """Why ``path`` may not be read as a file of ``root`` (see ``open_regular``), or ``None``."""
    try:
        open_regular(path, root).close()
    except NotARegularFile as exc:
        return str(exc)
    return None


def read_regular(path: Path, root: Path, limit: int = DEFAULT_MAX_BODY_BYTES) -> bytes:
    """The bytes of a regular file inside ``root``, at most ``limit`` of them (``NotARegularFile`` otherwise)."""
    with open_regular(path, root) as handle:
        body = handle.read(limit + 1)
    if len(body) > limit:
        raise NotARegularFile(f"{path.name}: larger than {limit} bytes; not read")
    return body
