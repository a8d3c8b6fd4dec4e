"""Load: a page mix at 64 connections for 60 s, with a stream of attestations alongside.

    .venv/bin/python bench/load.py --database-url postgresql+psycopg://…/catalogue \\
        [--seconds 60] [--connections 64] [--workers 2] [--accounts 100] [--per-account 12] \\
        [--warm-seconds 20] [--reingest-submissions 5000]

Not part of CI. Serves the store (the 1M-run synthetic catalogue, ``synthetic_catalog.py``)
with ``--workers`` uvicorn workers on 127.0.0.1, and drives it with wrk (a Lua script
picking a random path per request) over a mix of leaderboards of every size, run pages
and their JSON, search, per-workload Atom feeds, workload lists and the JSON API.

At the same time ``--accounts`` accounts, created with an API key each (scope
``attest``) before the run, post attestations to random runs through
``POST /api/v1/runs/{name}/attestations`` (Bearer key), each at most ``--per-account``
times (under the daily limit), from as many threads. Afterwards every accepted
attestation (201) must be stored exactly once, under its name, with the digest the API
returned, and that digest must be the one recomputed from the stored manifest; and the
accounts must own no attestation that was not accepted.

And a quarter of the way in, the store re-ingests SOL-ExecBench from a local upstream
(``ingest_upstream.py``'s, on 127.0.0.1) that has grown by ``--reingest-submissions`` new
submissions since the last pull: new runs in its 235 workloads, some new implementations, so
those leaderboards and every list page are rendered again while the load goes on. The
store's first pull of that source (the bundled snapshot) is made before, if it has none.

Each path is first requested in turn (the slowest of these first renders are printed), then
the mix is run for ``--warm-seconds`` without measuring, so that every worker has rendered
every path, as on a site that has been serving its readers. Then it prints wrk's throughput,
latency percentiles, errors and non-2xx/3xx count, the re-ingest's report and the
attestation check. Writes accounts, keys, attestations (new handles each run) and the
re-ingest's runs (new submission ids each run).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from urllib.parse import quote_plus

import httpx
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).parent))
from common import free_port, load_average, server, uvicorn_argv

from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Attestation, Run, Source, User, Workload
from kernelindex.manifests import parse_manifest
from kernelindex.store import accounts

CLI = str(Path(sys.executable).parent / "kernelindex")
LUA = """
local paths = {%s}
math.randomseed(os.time())
request = function()
  return wrk.format("GET", paths[math.random(#paths)])
end
"""


def paths(url: str, count: int) -> list[str]:
    """A mix of what readers ask for, from the catalogue itself."""
    engine = make_engine(url)
    rng = random.Random(5)
    with make_sessionmaker(engine)() as session:
        sizes = session.execute(select(Run.workload_id, func.count()).group_by(Run.workload_id)).all()
        sizes.sort(key=lambda row: row[1])
        picked = [sizes[int(len(sizes) * q)][0] for q in (0.1, 0.5, 0.9, 0.99)] + [sizes[-1][0]]
        picked += [row[0] for row in rng.sample(sizes, 20)]
        slugs = list(session.scalars(select(Workload.name).where(Workload.id.in_(picked))))
        top = session.scalar(select(func.max(Run.id)))
        runs = list(session.scalars(select(Run.name).where(Run.id.in_([rng.randrange(1, top) for _ in range(40)]))))
    engine.dispose()
    mix = []
    for slug in slugs:
        mix += [f"/workloads/{slug}", f"/workloads/{slug}.json", f"/workloads/{slug}/records.atom"]
    for name in runs:
        mix += [f"/runs/{name}", f"/runs/{name}.json", f"/api/v1/runs/{name}"]
    # Encoded: a space in a request line is not HTTP (uvicorn answers 400 before the app).
    mix += [f"/search?q={quote_plus(q)}" for q in ("attention", "fp8 gemm", "layer norm", "softmax", "conv2d residual")]
    mix += [f"/search/suggestions.json?q={quote_plus(q)}" for q in ("att", "gem", "lay", "rms", "moe e")]
    mix += [
        "/workloads",
        "/workloads?collection=L2",
        "/api/v1/workloads",
        "/api/v1/runs",
        "/api/v1/runs?sort=-observed",
    ]
    mix += ["/gpus", "/api/v1/gpus", f"/compare?run={runs[0]}&run={runs[1]}"]
    return mix[:count] if count else mix


def make_accounts(url: str, count: int) -> tuple[list[tuple[str, str]], list[str]]:
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    made = []
    tag = uuid.uuid4().hex[:6]
    with sessions.begin() as session:
        for n in range(count):
            user = accounts.create_user(session, f"load{tag}{n:03d}", f"load password {tag} {n}")
            _, secret = accounts.create_api_key(session, user, "load test", ["attest"])
            made.append((user.handle, secret))
    with sessions() as session:
        top = session.scalar(select(func.max(Run.id)))
        rng = random.Random(9)
        runs = list(session.scalars(select(Run.name).where(Run.id.in_([rng.randrange(1, top) for _ in range(500)]))))
    engine.dispose()
    return made, runs


def attest(base: str, secret: str, runs: list[str], times: int, until: float, accepted: list, failed: list) -> None:
    rng = random.Random(secret)
    headers = {"Authorization": f"Bearer {secret}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        for n in range(times):
            if time.monotonic() > until:
                return
            run = rng.choice(runs)
            body = {"type": rng.choice(["reproduced", "environment_note"]), "body": f"Load test note {n} {secret[-6:]}"}
            try:
                response = client.post(f"/api/v1/runs/{run}/attestations", json=body)
            except httpx.HTTPError as exc:
                failed.append(f"{type(exc).__name__}")
                continue
            if response.status_code == 201:
                accepted.append(response.json())
            else:
                failed.append(f"{response.status_code}")
            time.sleep(rng.uniform(0.5, 3.0))


def check(url: str, handles: list[str], accepted: list[dict]) -> list[str]:
    problems = []
    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        users = session.scalars(select(User.id).where(User.handle.in_(handles))).all()
        stored = session.scalars(select(Attestation).where(Attestation.user_id.in_(users))).all()
    engine.dispose()
    by_name: dict[str, list[Attestation]] = {}
    for row in stored:
        by_name.setdefault(row.name, []).append(row)
    for item in accepted:
        rows = by_name.get(item["name"], [])
        if len(rows) != 1:
            problems.append(f"{item['name']}: stored {len(rows)} times")
            continue
        row = rows[0]
        recomputed = parse_manifest(json.loads(row.manifest_json)).digest
        if not (row.digest == item["digest"] == recomputed):
            problems.append(f"{item['name']}: digests {row.digest} / {item['digest']} / {recomputed}")
    extra = set(by_name) - {item["name"] for item in accepted}
    if extra:
        # A POST whose response the client gave up on (a timeout) may still have committed.
        print(f"{len(extra)} stored attestations whose response the client did not receive (timeouts)")
    return problems


def upstream(submissions: int, first_id: int) -> AbstractContextManager[str]:
    """A local SOL-ExecBench upstream of ``submissions`` submissions numbered from ``first_id``,
    its kernels renamed apart from the synthetic catalogue's workloads (which took the real names)."""
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", "ingest_upstream:app", "--factory", "--port", str(port)]
    argv += ["--app-dir", str(Path(__file__).parent), "--log-level", "warning"]
    env = {"BENCH_SUBMISSIONS": str(submissions), "BENCH_FIRST_ID": str(first_id), "BENCH_NAME_SUFFIX": "_live"}
    return server(argv, port, env, "/api/kernels", cpus="0,1")


def pull(url: str, base: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    command = [CLI, "ingest", "sol-execbench", "--base-url", f"{base}/api", "--database-url", url]
    done = subprocess.run(command, capture_output=True, text=True)
    return time.perf_counter() - start, done


def first_pull(url: str, submissions: int) -> None:
    """The store's earlier pull of SOL-ExecBench, if it has none yet."""
    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        pulled = session.scalar(select(func.count(Workload.id)).join(Source).where(Source.slug == "sol-execbench"))
    engine.dispose()
    if not pulled:
        with upstream(submissions, 1_000_000) as base:
            seconds, done = pull(url, base)
        if done.returncode:
            raise SystemExit(f"the first pull of sol-execbench failed:\n{done.stdout}{done.stderr}")
        print(f"first pull of sol-execbench ({submissions} submissions): {seconds:.1f} s", flush=True)


def reingest(url: str, base: str, after: float, report: dict) -> None:
    """Pull SOL-ExecBench again ``after`` seconds from now, while the load runs."""
    time.sleep(after)
    seconds, done = pull(url, base)
    report.update(started=after, seconds=seconds, rc=done.returncode, out=(done.stdout + done.stderr)[-800:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--accounts", type=int, default=100)
    parser.add_argument("--per-account", type=int, default=12)
    parser.add_argument("--warm-seconds", type=int, default=20)
    parser.add_argument("--reingest-submissions", type=int, default=5000)
    args = parser.parse_args()
    first_pull(args.database_url, args.reingest_submissions)
    mix = paths(args.database_url, 0)
    made, runs = make_accounts(args.database_url, args.accounts)
    print(f"{len(mix)} paths in the mix; {len(made)} accounts with keys; {load_average()}", flush=True)
    port = free_port()
    argv = uvicorn_argv("kernelindex.app:create_app", port, "uvloop", workers=args.workers, factory=True)
    env = {"KERNELINDEX_DATABASE_URL": args.database_url}
    # Two workers on both CPUs, beside wrk and the attestation threads: a whole small host under load.
    with (
        tempfile.TemporaryDirectory() as folder,
        server(argv, port, env, "/robots.txt", cpus="0,1") as base,
        # New submission ids for every run: the upstream has grown since the last pull.
        upstream(args.reingest_submissions, int(time.time()) * 100) as grown,
    ):
        # Each path once, in turn: its first render, as its first reader meets it.
        timings = []
        with httpx.Client(base_url=base, timeout=300) as client:
            for path in mix:
                start = time.perf_counter()
                status = client.get(path).status_code
                timings.append((time.perf_counter() - start, path, status))
        cold = sorted(timings, reverse=True)[:6]
        print("slowest while warming: " + ", ".join(f"{path} {seconds:.2f} s" for seconds, path, _ in cold))
        bad = sorted({(path, status) for _, path, status in timings if status >= 400})
        print(f"non-2xx while warming: {bad or 'none'}; {load_average()}", flush=True)
        script = Path(folder) / "mix.lua"
        script.write_text(LUA % ", ".join(json.dumps(p) for p in mix))
        command = ["wrk", "-t", "2", "-c", str(args.connections), "--timeout", "30s", "-s", str(script), base]
        if args.warm_seconds:
            # wrk's connections reach every worker, so each renders what it has not yet.
            subprocess.run([*command, "-d", f"{args.warm_seconds}s"], capture_output=True, check=True)
            print(f"warmed by {args.warm_seconds} s of the mix; {load_average()}", flush=True)
        accepted: list[dict] = []
        failed: list[str] = []
        until = time.monotonic() + args.seconds
        threads = [
            threading.Thread(target=attest, args=(base, secret, runs, args.per_account, until, accepted, failed))
            for _, secret in made
        ]
        report: dict = {}
        if args.reingest_submissions:
            after = args.seconds / 4
            threads.append(threading.Thread(target=reingest, args=(args.database_url, grown, after, report)))
        for thread in threads:
            thread.start()
        out = subprocess.run(
            [*command, "-d", f"{args.seconds}s", "--latency"], capture_output=True, text=True, check=True
        ).stdout
        for thread in threads:
            thread.join()
    print(out)
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:.*", out)
    print(f"non-2xx/3xx: {non_2xx.group(1) if non_2xx else 0}; socket errors: {errors.group(0) if errors else 'none'}")
    if report:
        print(f"re-ingest of {args.reingest_submissions} new submissions: started at {report['started']:.0f} s, ")
        print(f"took {report['seconds']:.1f} s, exit status {report['rc']}:\n{report['out']}")
    print(f"attestations: {len(accepted)} accepted (201), {len(failed)} not: {sorted(set(failed))}")
    problems = check(args.database_url, [handle for handle, _ in made], accepted)
    print("stored exactly once, digests checked: " + ("yes" if not problems else f"NO: {problems[:10]}"))
    print(load_average())


if __name__ == "__main__":
    main()
