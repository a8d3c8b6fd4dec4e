"""How long a write committed through one engine takes to reach another worker's listener.

    .venv/bin/python bench/version_lag.py [--database-url URL] [--writes 50]

Needs a PostgreSQL database migrated to the head revision (by default a scratch database is
created on postgresql://postgres@127.0.0.1:5432 and dropped). A ``VersionReader`` listens
on its own engine, as a web worker does; each write (one scope marked changed, committed
through a second engine) is timed from its commit until the reader knows of it. Also prints
the cost of one in-memory read, which is all a cached request pays for the version check.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).parent))
from common import load_average

from kernelindex.db import migrate
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.store.version import VersionReader, mark_changed, run_scope, workload_scope

SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432"


def measure(url: str, writes: int) -> None:
    reader_engine, writer_engine = make_engine(url), make_engine(url)
    reader = VersionReader(make_sessionmaker(reader_engine))
    reader.read()
    while not reader.in_memory():
        time.sleep(0.01)
    writer = make_sessionmaker(writer_engine)
    scope = workload_scope(1)
    lags = []
    for _ in range(writes):
        seq, _ = reader.read([scope])
        with writer.begin() as session:
            mark_changed(session, scope)
        committed = time.perf_counter()
        while (found := reader.read([scope])) is None or found[1][scope] <= seq:
            time.sleep(0.0002)
        lags.append((time.perf_counter() - committed) * 1000)
    print(
        f"commit → known by the listener, {writes} writes: median {statistics.median(lags):.2f} ms "
        f"(min {min(lags):.2f}, max {max(lags):.2f})"
    )
    reads = 100_000
    started = time.perf_counter()
    for _ in range(reads):
        reader.read([run_scope(2), workload_scope(1)])
    print(f"one in-memory read of two scopes: {(time.perf_counter() - started) / reads * 1e6:.2f} µs")
    print(load_average())
    reader.close()
    reader_engine.dispose()
    writer_engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", help="a migrated PostgreSQL database (default: a scratch one)")
    parser.add_argument("--writes", type=int, default=50)
    args = parser.parse_args()
    if args.database_url:
        measure(args.database_url, args.writes)
        return
    admin = create_engine(f"{SERVER}/postgres", isolation_level="AUTOCOMMIT")
    name = f"kernelindex_bench_lag_{uuid.uuid4().hex[:8]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = f"{SERVER}/{name}"
        migrate.upgrade(url)
        measure(url, args.writes)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    main()
