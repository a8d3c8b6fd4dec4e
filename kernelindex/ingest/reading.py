"""What a source's opener is given and what it returns: the adapter on a snapshot or live upstream."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from kernelindex.ingest.bounds import MIB, Bounds, Budget
from kernelindex.ingest.http import Fetcher
from kernelindex.ingest.runner import Adapter
from kernelindex.ingest.snapshot import observed_at
from kernelindex.settings import Settings

USER_AGENT = "KernelIndex ingest (+https://kernelindex.dev)"
Sleep = Callable[[float], None]


@dataclass
class Opened:
    """An adapter ready to run, where it reads from (for the report) and the clients to close."""

    adapter: Adapter[Any]
    origin: str
    observed_at: datetime | None
    clients: list[httpx.Client] = field(default_factory=list)


@dataclass(frozen=True)
class Reading:
    """What an opener is given: the settings, a snapshot folder or ``None`` for the live
    upstream, the source's own options (``None`` = its default), and how to make a fetcher."""

    settings: Settings
    snapshot: Path | None
    options: Mapping[str, str | None]
    sleep: Sleep | None = None
    # The ingest's bounds and deadline, shared by every fetcher it makes.
    budget: Budget = field(default_factory=Budget)

    def fetcher(self, client: httpx.Client) -> Fetcher:
        retries = self.settings.http_retries
        if self.sleep:
            return Fetcher(client, retries=retries, sleep=self.sleep, budget=self.budget)
        return Fetcher(client, retries=retries, budget=self.budget)

    def client(self, base_url: str, headers: Mapping[str, str] | None = None) -> httpx.Client:
        """A client for the live upstream at ``base_url``."""
        return httpx.Client(
            base_url=base_url.rstrip("/") + "/",
            timeout=self.settings.http_timeout_s,
            headers={"User-Agent": USER_AGENT, **(headers or {})},
            follow_redirects=True,
        )

    def snapshot_origin(self) -> tuple[str, datetime | None]:
        assert self.snapshot is not None
        # The folder name only: a server path is nobody else's business.
        return f"snapshot {self.snapshot.resolve().name}", observed_at(self.snapshot)


def bounds_of(settings: Settings) -> Bounds:
    """The bounds ``settings`` give an ingest."""
    return Bounds(
        deadline_s=settings.ingest_deadline_s,
        max_pages=settings.ingest_max_pages,
        max_listed=settings.ingest_max_listed,
        max_body_bytes=settings.ingest_max_body_bytes,
        max_json_depth=settings.ingest_max_json_depth,
        max_csv_columns=settings.ingest_max_csv_columns,
        max_row_chars=settings.ingest_max_row_chars,
        max_memory_bytes=settings.ingest_max_memory_mb * MIB,
        max_wait_s=settings.http_max_wait_s,
    )
