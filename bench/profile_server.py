"""Where a served request spends its time: py-spy on a pinned server under wrk.

    .venv/bin/python bench/profile_server.py --database-url URL [--seconds 10] [--loop h11] PATH

Starts one uvicorn worker on CPU 0, loads ``PATH`` with wrk on CPU 1 for ``--seconds``,
samples the server with py-spy meanwhile (``pip install py-spy``), and prints the share
of samples in each function (own time) and under each of a few telling callers (total time).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import free_port, load_average, server, uvicorn_argv, wrk

WATCH = [
    "VersionReader.read",
    "ResponseCache.__call__",
    "SecurityHeaders.__call__",
    "RequestGuard.__call__",
    "BodyLimit.__call__",
    "SessionMiddleware.__call__",
    "RequestResponseCycle.run_asgi",
    "H11Protocol.data_received",
    "HttpToolsProtocol.data_received",
    "run_until_complete",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--loop", default="h11")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("path")
    args = parser.parse_args()
    port = free_port()
    argv = uvicorn_argv("kernelindex.app:create_app", port, args.loop, factory=True)
    env = {"KERNELINDEX_DATABASE_URL": args.database_url}
    with tempfile.TemporaryDirectory() as folder, server(argv, port, env, ready_path="/robots.txt") as base:
        pid = subprocess.run(["pgrep", "-f", f"uvicorn.*port {port}"], capture_output=True, text=True).stdout.split()[0]
        wrk(base + args.path, 2)  # warm
        raw = Path(folder) / "profile.txt"
        spy = [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", pid, "--format", "raw"]
        spy += ["--duration", str(args.seconds - 2), "-o", str(raw)]
        done: list[subprocess.CompletedProcess[str]] = []
        sampler = threading.Thread(target=lambda: done.append(subprocess.run(spy, capture_output=True, text=True)))
        sampler.start()
        rate, notes = wrk(base + args.path, args.seconds)
        sampler.join()
        if not raw.exists():
            raise SystemExit(f"py-spy failed: {done[0].stderr if done else ''}")
        text = raw.read_text()
    own: Counter[str] = Counter()
    under: Counter[str] = Counter()
    total = 0
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [frame.split(" (")[0] for frame in stack.split(";")]
        samples = int(count)
        total += samples
        own[frames[-1]] += samples
        for name in set(frames):
            if name in WATCH:
                under[name] += samples
    print(f"{args.path}: {rate:.0f} req/s under py-spy {notes}; {total} samples; {load_average()}")
    print("total time under:")
    for name, count in under.most_common():
        print(f"  {100 * count / total:5.1f}%  {name}")
    print("own time:")
    for name, count in own.most_common(args.top):
        print(f"  {100 * count / total:5.1f}%  {name}")


if __name__ == "__main__":
    main()
