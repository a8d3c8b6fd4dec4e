"""Build a synthetic catalogue of any size, in SQLite or PostgreSQL (PRODUCT.md §10).

    .venv/bin/python bench/synthetic_catalog.py --database-url URL \\
        --runs 1000000 --workloads 10000 --attestations 50000 [--seed 1]

The database is emptied first (a SQLite file is replaced; a PostgreSQL database is
downgraded to nothing and migrated again). Then:

- workloads, implementations, environments and protocols are written through the store's
  ingest path (``apply_batch``), so the search index is built as in production. The
  workloads are variants of the 235 bundled SOL-ExecBench kernels (see
  ``search_suggest.py``), each with three implementations; ten environments (five GPUs
  × evaluation stacks v1.0 and v1.1) and the two protocols;
- runs go through the store's bulk path (``kernelindex.store.bulk``): runs per workload
  follow a Zipf law (a few workloads with thousands of runs, a long tail with a handful),
  GPUs and stacks are skewed towards B200 and v1.1, latencies are log-normal around a
  multiple of the workload's SOL bound and improve over two years of observation dates,
  so each comparison group has a record history; a few percent are disqualified upstream,
  and the rare run faster than the bound is held for review;
- attestations by a pool of accounts on runs chosen with the same skew.

Every manifest is the JSON the site serves, with its RFC 8785 digest: a sample of them is
validated by the Pydantic models and must come out byte-identical, so ``kernelindex
verify`` accepts what the site then serves. Prints the time of each phase.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from kernelindex.accounts.passwords import hash_password
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Attestation as AttestationRow
from kernelindex.db.tables import (
    Environment,
    Implementation,
    ManifestVersion,
    Protocol,
    Run,
    Source,
    User,
    Workload,
)
from kernelindex.ingest.sol_execbench import environment_manifest, protocol_manifest
from kernelindex.manifests import Attestation, BenchmarkRun, sha256_digest
from kernelindex.manifests.digest import comparison_key
from kernelindex.store.bulk import insert_rows, version_rows
from kernelindex.store.ingest import apply_batch, ensure_source
from kernelindex.store.manifests import manifest_text
from kernelindex.store.version import LISTS, confine_writes, workload_scope

sys.path.insert(0, str(Path(__file__).parent))
from common import empty_store
from search_suggest import GPUS, SOURCE, batches

GPU_WEIGHTS = [0.55, 0.2, 0.1, 0.1, 0.05]  # B200, H100, H200, GB200, A100
STACKS = [("v1.1", 0.7), ("v1.0", 0.3)]
ZIPF = 0.6
START = datetime(2024, 9, 1, tzinfo=UTC)
SPAN_S = 2 * 365 * 86400
CHUNK = 20_000
USERS = 1000
BODIES = [
    "Reproduced on our cluster within noise.",
    "Could not reproduce: our numbers are about 8% slower with the same stack.",
    "Measured with driver 570; the timing matches the published figure.",
    "Regression after the stack upgrade: the kernel is slower than this result.",
]
ATTESTATION_TYPES = ["reproduced", "could_not_reproduce", "environment_note", "regression_observed"]


def runs_per_workload(runs: int, workloads: int, rng: random.Random) -> list[int]:
    """Zipf-distributed counts (at least one each) that add up to ``runs``, in random workload order."""
    weights = [1 / (rank**ZIPF) for rank in range(1, workloads + 1)]
    total = sum(weights)
    counts = [max(1, int(runs * w / total)) for w in weights]
    counts[0] += runs - sum(counts)
    rng.shuffle(counts)
    return counts


class Picker:
    """Weighted choice by bisection over cumulative weights (``random.choices`` per call is slow)."""

    def __init__(self, items: list[Any], weights: list[float], rng: random.Random):
        self.items, self.rng = items, rng
        self.cumulative = list(accumulate(weights))

    def __call__(self) -> Any:
        at = bisect.bisect(self.cumulative, self.rng.random() * self.cumulative[-1])
        return self.items[min(at, len(self.items) - 1)]


def build_catalogue(url: str, runs: int, workloads: int, attestations: int, seed: int) -> dict[str, float]:
    timings: dict[str, float] = {}
    rng = random.Random(seed)
    started = time.perf_counter()
    empty_store(url)
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    now = datetime.now(UTC)

    # 1. Workloads and everything runs refer to, through the store's ingest path.
    start = time.perf_counter()
    made = batches(workloads, seed=seed)
    made[0].protocols = [protocol_manifest(stack) for stack, _ in STACKS]
    made[0].environments = [environment_manifest(gpu, stack) for gpu in GPUS for stack, _ in STACKS]
    for first in range(0, len(made), 500):
        with sessions.begin() as session:
            source = ensure_source(session, SOURCE)
            source.last_observed_at = now
            for batch in made[first : first + 500]:
                apply_batch(session, source, batch, now)
    timings["workloads (store path)"] = time.perf_counter() - start

    # 2. Runs, through the bulk path.
    start = time.perf_counter()
    with sessions() as session:
        source_id = session.scalar(select(Source.id).where(Source.slug == SOURCE.slug))
        work = session.execute(
            select(Workload.id, Workload.name, Workload.digest, Workload.sol_aggregate_ms).order_by(Workload.id)
        ).all()
        implementations = session.execute(
            select(Implementation.id, Implementation.digest, Implementation.project).order_by(Implementation.id)
        ).all()
        environments = {row.name: row for row in session.execute(select(Environment)).scalars()}
        protocols = {row.name: row for row in session.execute(select(Protocol)).scalars()}
    kernel_names = {b.workload.metadata.name: b.workload.spec.definition.name for b in made}
    groups = []  # (environment, protocol, gpu) with its weight
    for gpu, gpu_weight in zip(GPUS, GPU_WEIGHTS, strict=True):
        for stack, stack_weight in STACKS:
            environment = environments[environment_manifest(gpu, stack).metadata.name]
            protocol = protocols[protocol_manifest(stack).metadata.name]
            groups.append(((environment, protocol, gpu, stack), gpu_weight * stack_weight))
    pick_group = Picker([g for g, _ in groups], [w for _, w in groups], rng)
    # Projects submit unevenly too: a Pareto weight per implementation.
    pick_implementation = Picker(implementations, [rng.paretovariate(1.2) for _ in implementations], rng)
    counts = runs_per_workload(runs, len(work), rng)
    attested = sorted(rng.sample(range(runs), min(attestations, runs)))
    attested_digests: dict[int, str] = {}
    sample_every = max(1, runs // 200)

    def run_rows() -> Any:
        index = 0
        for (workload_id, slug, workload_digest, bound_ms), count in zip(work, counts, strict=True):
            base_ms = (bound_ms or 0.05) * math.exp(rng.gauss(1.2, 0.5))
            for _ in range(count):
                environment, protocol, gpu, _stack = pick_group()
                implementation = pick_implementation()
                t = rng.random()
                # Whole milliseconds, never zero: the form Pydantic serialises ("…:43.454Z").
                millis = rng.randrange(1, 1000)
                observed = START + timedelta(seconds=int(t * SPAN_S), milliseconds=millis)
                latency_ms = base_ms * math.exp(rng.gauss(0, 0.35)) * (1.5 - 0.6 * t)
                latency_ns = max(1000, round(latency_ms * 1_000_000))
                latency_ms = latency_ns / 1_000_000
                sol_score = round(min(1.0, (bound_ms or latency_ms * 0.3) / latency_ms), 6)
                total = 2 + (index % 30)
                disqualified = rng.random() < 0.01
                name = f"synth-run-{index + 1}"
                native: dict[str, Any] = {
                    "source": "bench-synthetic",
                    "benchmark": kernel_names[slug],
                    "externalId": str(index + 1),
                    "metrics": {
                        "sol_score": sol_score,
                        "latency_ms": latency_ms,
                        "avg_speedup": round(rng.lognormvariate(0.7, 0.5), 3),
                        "fast_1_count": rng.randint(0, total),
                        "fast_1_total": total,
                    },
                }
                if disqualified:
                    native["disqualification"] = {"reason": "reward hack suspected by the source"}
                spec = {
                    "status": "passed",
                    "timing": {"latencyNs": {"mean": latency_ns}, "primaryStatistic": "mean"},
                    "observedAt": observed.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis:03d}Z",
                    "sourceNative": native,
                    "protocolDigest": protocol.digest,
                    "workloadDigest": workload_digest,
                    "environmentDigest": environment.digest,
                    "implementationDigest": implementation.digest,
                }
                manifest = {
                    "apiVersion": "kernelindex.dev/v1alpha1",
                    "kind": "BenchmarkRun",
                    "metadata": {"name": name, "title": f"{implementation.project} · {kernel_names[slug]} · {gpu}"},
                    "spec": spec,
                }
                text = json.dumps(manifest, ensure_ascii=False, separators=(",", ":"))
                digest = sha256_digest({"apiVersion": manifest["apiVersion"], "kind": "BenchmarkRun", "spec": spec})
                if index % sample_every == 0:
                    model = BenchmarkRun.model_validate(manifest)
                    assert model.digest == digest and manifest_text(model) == text, (name, manifest_text(model), text)
                yield {
                    "name": name,
                    "digest": digest,
                    "manifest_json": text,
                    "created_at": now,
                    "updated_at": now,
                    "source_id": source_id,
                    "external_id": str(index + 1),
                    "workload_id": workload_id,
                    "implementation_id": implementation.id,
                    "protocol_id": protocol.id,
                    "environment_id": environment.id,
                    "comparison_key": comparison_key(workload_digest, protocol.digest, environment.digest),
                    "status": "passed",
                    "evidence": "reported",
                    "primary_statistic": "mean",
                    "latency_ns": latency_ns,
                    "sol_score": sol_score,
                    "observed_at": observed,
                    "upstream_withdrawn": disqualified,
                    "upstream_withdrawn_reason": "reward hack suspected by the source" if disqualified else None,
                    "held_for_review": bool(bound_ms) and latency_ms < bound_ms,
                    "withdrawn_at": None,
                    "withdrawn_reason": None,
                    "missing_since": None,
                    "last_seen_at": None,
                }
                index += 1

    attested_set = set(attested)
    chunk: list[dict[str, Any]] = []
    written = 0

    def flush() -> None:
        nonlocal written
        with sessions.begin() as session:
            # Only these workloads' pages and tallies change: the commit recounts them, not every one.
            confine_writes(session, *map(workload_scope, sorted({row["workload_id"] for row in chunk})), LISTS)
            insert_rows(session, Run, chunk)
            insert_rows(session, ManifestVersion, version_rows("BenchmarkRun", chunk, now))
        written += len(chunk)
        chunk.clear()

    for number, row in enumerate(run_rows()):
        if number in attested_set:
            attested_digests[number] = row["digest"]
        chunk.append(row)
        if len(chunk) >= CHUNK:
            flush()
            print(f"  {written} runs", file=sys.stderr, end="\r")
    if chunk:
        flush()
    timings[f"{written} runs (bulk path)"] = time.perf_counter() - start

    # 3. Accounts and attestations.
    start = time.perf_counter()
    password_hash = hash_password(f"synthetic-{rng.random()}")
    with sessions.begin() as session:
        insert_rows(
            session,
            User,
            [
                {"handle": f"synth{n:04d}", "password_hash": password_hash, "is_maintainer": False, "created_at": now}
                for n in range(USERS)
            ],
        )
    with sessions() as session:
        users = session.execute(select(User.id, User.handle).where(User.handle.like("synth%"))).all()
        first_run_id = session.scalar(select(func.min(Run.id)))
    rows = []
    for count, number in enumerate(attested):
        user = users[count % len(users)] if rng.random() < 0.5 else rng.choice(users)
        created = START + timedelta(seconds=rng.randrange(SPAN_S), microseconds=rng.randrange(1000) * 1000)
        kind = rng.choice(ATTESTATION_TYPES)
        name = f"att-synth-run-{number + 1}-{count:06d}"
        manifest = Attestation.model_validate(
            {
                "apiVersion": "kernelindex.dev/v1alpha1",
                "kind": "Attestation",
                "metadata": {"name": name},
                "spec": {
                    "runDigest": attested_digests[number],
                    "type": kind,
                    "body": rng.choice(BODIES),
                    "bodyFormat": "plain",
                    "author": {"handle": user.handle},
                    "createdAt": created,
                },
            }
        )
        rows.append(
            {
                "name": name,
                "digest": manifest.digest,
                "manifest_json": manifest_text(manifest),
                "created_at": created,
                "updated_at": created,
                # Runs were inserted in order, one id each, from the first.
                "run_id": first_run_id + number,
                "user_id": user.id,
                "type": kind,
                "state": "published",
                "hidden_reason": None,
            }
        )
    for first in range(0, len(rows), CHUNK):
        with sessions.begin() as session:
            part = rows[first : first + CHUNK]
            insert_rows(session, AttestationRow, part)
            insert_rows(session, ManifestVersion, version_rows("Attestation", part, now))
    timings[f"{len(rows)} attestations (bulk path)"] = time.perf_counter() - start

    # 4. Statistics for the planner, as autovacuum or ANALYZE would gather soon after a load.
    start = time.perf_counter()
    if url.startswith("sqlite"):
        with engine.connect() as connection:
            connection.exec_driver_sql("ANALYZE")
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    else:
        autocommit = make_engine(url, isolation_level="AUTOCOMMIT")
        with autocommit.connect() as connection:
            connection.exec_driver_sql("VACUUM ANALYZE")
        autocommit.dispose()
    timings["analyze"] = time.perf_counter() - start
    engine.dispose()
    timings["total"] = time.perf_counter() - started
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True, help="the store to fill (it is emptied first!)")
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--attestations", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.workloads < 1 or args.runs < args.workloads:
        parser.error("give at least one workload and at least one run per workload")
    timings = build_catalogue(args.database_url, args.runs, args.workloads, args.attestations, args.seed)
    for label, seconds in timings.items():
        print(f"{label}: {seconds:.1f} s")


if __name__ == "__main__":
    main()
