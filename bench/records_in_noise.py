"""How many records (a new #1 of a comparison group) each source has under the strict rule (any faster
figure) and under the noise rule (a figure faster beyond both intervals, ``ranking.record_history``).

    .venv/bin/python bench/records_in_noise.py --database-url sqlite:///kernelindex.db [--load]

``--load`` first loads an empty store as a first start does (migrations, every bundled source, the
bundled reruns). The first 300 groups are also checked against the store's SQL form of the rule
(``store.standings.record_setters``), and the catalogue's record list is counted.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import replace
from typing import Any

from sqlalchemy import select

from kernelindex.db import migrate
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Run, Source
from kernelindex.ingest.reruns.importer import import_bundled_reruns
from kernelindex.ingest.sources import SOURCES, ingest
from kernelindex.paths import BUNDLED_RERUNS
from kernelindex.ranking import record_history
from kernelindex.settings import Settings
from kernelindex.store.reads import eligible
from kernelindex.store.records import _facts, catalogue_records
from kernelindex.store.standings import Scope, record_setters

CHECKED_IN_SQL = 300


def load(url: str) -> None:
    migrate.upgrade(url)
    sessions = make_sessionmaker(make_engine(url))
    for slug, source in SOURCES.items():
        summary = ingest(sessions, Settings(database_url=url), slug, snapshot=source.bundled)
        print(f"loaded {slug}: {summary.status}", flush=True)
    import_bundled_reruns(sessions, BUNDLED_RERUNS, lambda *_: None)


def count(url: str) -> None:
    sessions = make_sessionmaker(make_engine(url))
    with sessions() as session:
        columns = (Run.name, Run.workload_id, Run.comparison_key, Run.latency_ns, Run.observed_at)
        spreads = (Run.spread_kind, Run.spread_low_ns, Run.spread_high_ns, Source.slug)
        rows = session.execute(select(*columns, *spreads).join(Source, Source.id == Run.source_id).where(eligible()))
        groups: dict[tuple[str, int, str], list[Any]] = defaultdict(list)
        for row in rows:
            groups[(row.slug, row.workload_id, row.comparison_key)].append(_facts(row))
        strict: dict[str, int] = defaultdict(int)
        noise: dict[str, int] = defaultdict(int)
        sizes: dict[str, int] = defaultdict(int)
        for checked, ((slug, workload_id, key), facts) in enumerate(groups.items()):
            found = record_history(facts)
            strict[slug] += len(record_history([replace(f, uncertainty=None) for f in facts]))
            noise[slug] += len(found)
            sizes[slug] += 1
            if checked < CHECKED_IN_SQL:
                in_sql = [setter.name for setter in record_setters(session, Scope(workload_id), key)]
                assert in_sql == [entry.run.name for entry in found], (slug, key)
        print(f"{'source':22} {'groups':>7} {'strict':>7} {'noise':>7} {'removed':>8}")
        for slug in sorted(strict):
            removed = strict[slug] - noise[slug]
            print(f"{slug:22} {sizes[slug]:7} {strict[slug]:7} {noise[slug]:7} {removed:8}")
        total_strict, total_noise = sum(strict.values()), sum(noise.values())
        print(f"{'total':22} {'':7} {total_strict:7} {total_noise:7} {total_strict - total_noise:8}")
        print(f"catalogue records (the /records query): {len(catalogue_records(session, limit=1_000_000))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--load", action="store_true", help="load an empty store as a first start does")
    args = parser.parse_args()
    if args.load:
        load(args.database_url)
    count(args.database_url)


if __name__ == "__main__":
    main()
