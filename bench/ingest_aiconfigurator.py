"""Time the whole AIConfigurator package's ingest and its unchanged re-ingest, with memory and size.

    .venv/bin/python bench/ingest_aiconfigurator.py --data-dir DIR [--database-url URL]

DIR is an aiconfigurator-core data folder (an unpacked wheel, or the installed package's
folder). The store is emptied first (a new SQLite file under /tmp, or the given database
downgraded and migrated again). Each ingest runs as the documented command,
``kernelindex ingest aiconfigurator --data-dir DIR``, in its own process: the figures are
its wall time, its peak memory, the database's size after it, and the rows the ingest report
accounts for. Peak memory is given twice: the peak resident set of its largest process (the
kernel's count, from wait4), and the peak proportional set size of the ingest and the mapping
process it forks, together (sampled twice a second; pages they share are counted once).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import create_engine, select, text

from kernelindex.db.tables import IngestionReport

sys.path.insert(0, str(Path(__file__).parent))
from common import empty_store, load_average


def size_mb(url: str) -> float:
    if url.startswith("sqlite"):
        path = Path(url.removeprefix("sqlite:///"))
        return sum(Path(f"{path}{s}").stat().st_size for s in ("", "-wal") if Path(f"{path}{s}").exists()) / 2**20
    engine = create_engine(url)
    with engine.connect() as connection:
        size = connection.scalar(text("select pg_database_size(current_database())"))
    engine.dispose()
    return float(size or 0) / 2**20


def tree_pss_mib(pid: int) -> float:
    """The proportional set size of ``pid`` and its children (the mapping process), in MiB: pages
    the two share after the fork are counted once, split between them."""
    total = 0
    for member in [pid, *_children(pid)]:
        try:
            rollup = Path(f"/proc/{member}/smaps_rollup").read_text()
        except OSError:
            continue  # ended between the listing and the read
        total += next(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:"))
    return total / 1024


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def ingest(url: str, data_dir: str) -> tuple[float, float, float, dict]:
    """One ingest in its own process: (wall s, peak RSS MiB of its largest process, peak PSS MiB of
    all its processes together, sampled twice a second, the report's counts)."""
    command = [str(Path(sys.executable).parent / "kernelindex"), "ingest", "aiconfigurator", "--data-dir", data_dir]
    start = time.perf_counter()
    process = subprocess.Popen(
        command, env={**os.environ, "KERNELINDEX_DATABASE_URL": url}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    peak_pss = 0.0
    while True:
        ended, status, usage = os.wait4(process.pid, os.WNOHANG)
        if ended:
            break
        peak_pss = max(peak_pss, tree_pss_mib(process.pid))
        time.sleep(0.5)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"the ingest failed: {process.stderr.read().decode()[-2000:] if process.stderr else ''}")
    engine = create_engine(url)
    with engine.connect() as connection:
        report = connection.execute(select(IngestionReport).order_by(IngestionReport.id.desc()).limit(1)).one()
    engine.dispose()
    return wall, usage.ru_maxrss / 1024, peak_pss, {"status": report.status, **report.counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--database-url", help="a PostgreSQL URL to use (it is emptied!); default: a SQLite file")
    args = parser.parse_args()
    url = args.database_url or "sqlite:////tmp/kernelindex-aiconfigurator-bench.db"
    backend = "SQLite" if url.startswith("sqlite") else "PostgreSQL"
    empty_store(url)
    print(f"{backend}, load average at start {load_average()}")
    for label in ("full ingest", "unchanged re-ingest"):
        wall, rss, pss, counts = ingest(url, args.data_dir)
        print(
            f"{label}: {wall:.1f} s, peak RSS {rss:.0f} MiB (largest process), "
            f"peak PSS {pss:.0f} MiB (all processes), database {size_mb(url):.0f} MiB"
        )
        print(f"  report: {json.dumps(counts, sort_keys=True)}")


if __name__ == "__main__":
    main()
