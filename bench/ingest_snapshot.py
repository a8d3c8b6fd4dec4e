"""Time the full ingest of a bundled snapshot and the unchanged re-ingest.

    .venv/bin/python bench/ingest_snapshot.py [--source SLUG] [--runs 5] [--database-url URL]

Each round starts from an empty, migrated store (a new SQLite file, or the given database
emptied by downgrading and upgrading its migrations), ingests the source's bundled snapshot
(default: sol-execbench), then ingests it again unchanged. Prints the median and min–max of
each, in seconds, and checks that the re-ingest wrote no record.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from kernelindex.db import migrate
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.ingest.sources import SOURCES, ingest
from kernelindex.settings import Settings


def one_round(url: str, slug: str) -> tuple[float, float]:
    if not url.startswith("sqlite"):
        migrate.downgrade(url, "base")
    migrate.upgrade(url)
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    settings = Settings(database_url=url)
    timings = []
    for _ in range(2):
        start = time.perf_counter()
        summary = ingest(sessions, settings, slug, snapshot=SOURCES[slug].bundled)
        timings.append(time.perf_counter() - start)
        assert summary.status == "succeeded", summary.errors
    assert not summary.wrote_records, "the unchanged re-ingest wrote records"
    engine.dispose()
    return timings[0], timings[1]


def describe(label: str, values: list[float]) -> str:
    median, low, high = statistics.median(values), min(values), max(values)
    return f"{label}: median {median:.3f} s (min {low:.3f}, max {high:.3f}, n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=sorted(SOURCES), default="sol-execbench")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--database-url", help="a PostgreSQL URL to use (it is emptied!); default: SQLite files")
    args = parser.parse_args()
    full, unchanged = [], []
    with tempfile.TemporaryDirectory() as folder:
        for round_number in range(args.runs):
            url = args.database_url or f"sqlite:///{Path(folder) / f'bench-{round_number}.db'}"
            first, second = one_round(url, args.source)
            full.append(first)
            unchanged.append(second)
    print(describe(f"{args.source}: full snapshot ingest", full))
    print(describe(f"{args.source}: unchanged re-ingest ", unchanged))


if __name__ == "__main__":
    main()
