"""Ingests against upstreams that answer wrongly on purpose (SECURITY.md, "Upstreams we do not
trust"): each bound is met, reported in one sentence with a distinct exit status, within its time
(and, where it applies, memory) bound, and the figures an earlier good ingest stored are served
unchanged. Caps are configured small so that each test takes seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import create_engine, select

from kernelindex.cli import main
from kernelindex.db.tables import IngestionReport, Run
from kernelindex.ingest.runner import run_ingest
from tests.hostile_upstream import (
    deep_json,
    endless_submissions,
    hostile_upstream,
    huge_body,
    many_kernels,
    rate_limited,
    slow_drip,
)
from tests.upstream import FakeUpstream

# Kernels of the fake upstream (tests/upstream.py), in the order the ingest reads them.
FIRST, SECOND, THIRD = 39, 40, 62


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELINDEX_HTTP_RETRIES", "1")
    monkeypatch.setenv("KERNELINDEX_HTTP_TIMEOUT_S", "5")


def ingest(api: str, database_url: str, *options: str) -> tuple[Result, float]:
    started = time.monotonic()
    result = CliRunner().invoke(
        main, ["ingest", "sol-execbench", "--base-url", api, "--database-url", database_url, *options]
    )
    return result, time.monotonic() - started


def figures(database_url: str) -> dict[str | None, tuple[object, ...]]:
    """Every stored run's figures and state, by upstream id."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                select(
                    Run.external_id,
                    Run.latency_ns,
                    Run.sol_score,
                    Run.status,
                    Run.missing_since,
                    Run.upstream_withdrawn,
                    Run.workload_id,
                )
            )
            return {row[0]: tuple(row[1:]) for row in rows}
    finally:
        engine.dispose()


def last_report(database_url: str) -> tuple[str, list[str], list[str]]:
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            report = connection.execute(
                select(IngestionReport.status, IngestionReport.errors, IngestionReport.drift)
                .order_by(IngestionReport.id.desc())
                .limit(1)
            ).one()
            return report[0], list(report[1] or []), list(report[2] or [])
    finally:
        engine.dispose()


def one_line(output: str) -> str:
    return " ".join(output.split())


@pytest.fixture
def stored(database_url: str) -> dict[str | None, tuple[object, ...]]:
    """The store after a good ingest of the fake upstream: its figures."""
    with hostile_upstream() as upstream:
        result, _ = ingest(f"{upstream.url}/api", database_url)
    assert result.exit_code == 0, result.output
    good = figures(database_url)
    assert len(good) >= 10
    return good


def assert_a_sentence(result: Result, *parts: str) -> None:
    text = one_line(result.output)
    assert "Traceback" not in result.output
    for part in parts:
        assert part in text, (part, result.output[-3000:])


def test_a_slow_drip_meets_the_ingest_deadline(database_url, stored):
    with hostile_upstream() as upstream:
        upstream.route(f"/api/kernels/{SECOND}", slow_drip(pause_s=0.1))
        result, seconds = ingest(f"{upstream.url}/api", database_url, "--deadline", "2")
    assert result.exit_code == 1  # the first kernel was read: some units failed
    assert_a_sentence(result, "partial", "the ingest's deadline of 2 s passed", "run it again")
    assert seconds < 8
    status, errors, _ = last_report(database_url)
    assert status == "partial" and any(line.startswith("stopped: ") for line in errors)
    assert figures(database_url) == stored  # nothing marked missing, nothing changed


def test_retry_after_999999_stops_at_once_naming_the_reset_time(database_url, stored):
    with hostile_upstream() as upstream:
        upstream.route(
            "/api/submissions", lambda path, query: rate_limited("999999") if query["kernel_id"] == "40" else None
        )
        result, seconds = ingest(f"{upstream.url}/api", database_url)
    assert result.exit_code == 1  # the first kernel was read
    assert_a_sentence(
        result, "kernel 40", "rate-limited by the upstream until", "UTC; run the ingest again after that time"
    )
    assert seconds < 5  # no wait of 999999 s, nor of the 30 s cap, nor one per kernel
    assert f"/api/kernels/{THIRD}" not in upstream.requests  # the ingest stopped there
    assert figures(database_url) == stored


def test_a_total_that_keeps_moving_stops_at_the_page_cap(database_url, stored, monkeypatch):
    monkeypatch.setenv("KERNELINDEX_INGEST_MAX_PAGES", "5")
    with hostile_upstream() as upstream:
        upstream.route("/api/submissions", endless_submissions(FIRST))
        result, seconds = ingest(f"{upstream.url}/api", database_url)
    assert result.exit_code == 1
    assert_a_sentence(result, f"kernel {FIRST}", "more than 5 pages (KERNELINDEX_INGEST_MAX_PAGES)", "stopped there")
    assert seconds < 10
    pages = [path for path in upstream.requests if path.endswith("/submissions")]
    assert len(pages) <= 5 + 2 * 2  # five for the endless kernel, the others' own
    assert figures(database_url) == stored


def test_a_total_that_keeps_moving_stops_at_the_cap_on_entries(database_url, stored, monkeypatch):
    monkeypatch.setenv("KERNELINDEX_INGEST_MAX_LISTED", "250")
    with hostile_upstream() as upstream:
        upstream.route("/api/submissions", endless_submissions(FIRST))
        result, _ = ingest(f"{upstream.url}/api", database_url)
    assert result.exit_code == 1
    assert_a_sentence(result, "more than 250 submissions (KERNELINDEX_INGEST_MAX_LISTED)")
    assert figures(database_url) == stored


def test_a_huge_body_is_cut_at_the_cap(database_url, stored, monkeypatch):
    monkeypatch.setenv("KERNELINDEX_INGEST_MAX_BODY_BYTES", "200000")
    with hostile_upstream() as upstream:
        upstream.route(f"/api/kernels/{SECOND}", huge_body(300 * 1024 * 1024))
        result, seconds = ingest(f"{upstream.url}/api", database_url)
    assert result.exit_code == 1
    assert_a_sentence(result, f"kernel {SECOND}", "the response is larger than 200000 bytes; not read")
    assert seconds < 10
    assert figures(database_url) == stored


def test_json_nested_100000_deep_is_one_sentence(database_url, stored):
    with hostile_upstream() as upstream:
        upstream.route(f"/api/kernels/{SECOND}", deep_json(100_000))
        upstream.route("/api/submissions", lambda path, query: deep_json(50) if query["kernel_id"] == "62" else None)
        result, _ = ingest(f"{upstream.url}/api", database_url)
    assert result.exit_code == 1
    assert_a_sentence(
        result,
        f"kernel {SECOND}",
        "nests JSON deeper than 64 levels; not read: check the upstream",
        f"kernel {THIRD}",
    )
    assert figures(database_url) == stored


def test_a_listing_of_more_kernels_than_the_cap_reads_nothing(database_url, stored, monkeypatch):
    monkeypatch.setenv("KERNELINDEX_INGEST_MAX_LISTED", "1000")
    with hostile_upstream() as upstream:
        upstream.route("/api/kernels", lambda path, query: many_kernels(100_000) if path == "/api/kernels" else None)
        result, seconds = ingest(f"{upstream.url}/api", database_url)
    assert result.exit_code == 2  # nothing could be read
    assert_a_sentence(result, "lists 100000 kernels, more than the 1000 an ingest reads", "nothing was read")
    assert seconds < 15
    assert not any(path.startswith("/api/kernels/") for path in upstream.requests)
    assert figures(database_url) == stored


def test_an_unreachable_listing_and_a_partial_one_exit_differently(database_url, stored):
    with hostile_upstream() as upstream:
        upstream.route("/api/kernels", lambda path, query: deep_json(10) if path == "/api/kernels" else None)
        nothing, _ = ingest(f"{upstream.url}/api", database_url)
        upstream.clear()
        upstream.route(f"/api/kernels/{FIRST}", deep_json(10))
        some, _ = ingest(f"{upstream.url}/api", database_url)
        upstream.clear()
        everything, _ = ingest(f"{upstream.url}/api", database_url)
    assert (nothing.exit_code, some.exit_code, everything.exit_code) == (2, 1, 0)
    assert_a_sentence(nothing, "could not list NVIDIA SOL-ExecBench's units")
    assert "--deadline" in CliRunner().invoke(main, ["ingest", "sol-execbench", "--help"]).output
    help_text = one_line(CliRunner().invoke(main, ["ingest", "--help"]).output)
    assert "1 some units (or sources) failed" in help_text and "2 nothing could be read" in help_text
    assert figures(database_url) == stored


def test_schema_drift_notes_and_error_lines_are_capped(db):
    upstream = FakeUpstream()
    adapter = upstream.adapter()
    adapter.drift = {f"kernel.column_{number}" for number in range(100_000)}
    summary = run_ingest(adapter, db.sessions, origin="fake upstream")
    assert len(summary.drift) == 201 and summary.drift[-1] == "… and 99800 more unknown upstream fields, not kept"
    with db.sessions() as session:
        report = session.get(IngestionReport, summary.report_id)
        assert report is not None and len(report.drift) == 201


MEMORY_PROBE = """
import resource, sys
from kernelindex.cli import main
try:
    main(sys.argv[1:])
finally:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"peak-rss-mib {peak}", file=sys.stderr)
"""


def test_the_memory_ceiling_holds_against_pages_that_never_end(database_url, stored, tmp_path):
    """Pages of 4 MB that never end and a total always ahead, with page and entry caps far off:
    only the memory ceiling can stop it, in a process of its own whose peak is measured."""
    ceiling_mib = 400
    env = {
        **os.environ,
        "KERNELINDEX_INGEST_MAX_MEMORY_MB": str(ceiling_mib),
        "KERNELINDEX_INGEST_MAX_PAGES": "100000",
        "KERNELINDEX_INGEST_MAX_LISTED": "100000000",
        "KERNELINDEX_HTTP_RETRIES": "0",
    }
    with hostile_upstream() as upstream:
        upstream.route("/api/submissions", endless_submissions(FIRST, per_page_bytes=4 * 1024 * 1024))
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", MEMORY_PROBE, "ingest", "sol-execbench", "--base-url", f"{upstream.url}/api"]
            + ["--database-url", database_url],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        seconds = time.monotonic() - started
    assert done.returncode in (1, 2), done.stderr[-3000:]
    text = one_line(done.stderr)
    assert "Traceback" not in done.stderr
    assert f"over its ceiling of {ceiling_mib} MiB (KERNELINDEX_INGEST_MAX_MEMORY_MB)" in text, text[-3000:]
    peak = int(text.rsplit("peak-rss-mib ", 1)[1].split()[0])
    assert peak < ceiling_mib + 100  # one page past the ceiling at most, decoded
    assert seconds < 200
    assert figures(database_url) == stored


def test_the_ingest_commands_say_their_bounds_in_settings_and_help():
    from kernelindex.settings import Settings

    settings = Settings()
    assert settings.ingest_deadline_s == 1800 and settings.ingest_max_memory_mb == 1024
    assert settings.ingest_max_body_bytes == 50 * 1024 * 1024 and settings.http_max_wait_s == 30
    assert "SECURITY.md" in CliRunner().invoke(main, ["ingest", "--help"]).output

