"""Ingests against upstreams that answer wrongly on purpose (SECURITY.md, "Upstreams we do not
trust"): each bound is met, reported in one sentence with a distinct exit status, within its time
(and, where it applies, memory) bound, and the figures an earlier good ingest stored are served
unchanged. Caps are configured small so that each test takes seconds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from sqlalchemy import create_engine, select

import kernelindex.ingest.aiter.rows
from kernelindex.cli import main
from kernelindex.db.tables import Implementation, IngestionReport, Run
from kernelindex.ingest.aiconfigurator import AIConfigurator
from kernelindex.ingest.bounds import Bounds, NotARegularFile, read_regular
from kernelindex.ingest.github import GitHubRaw
from kernelindex.ingest.http import Fetcher
from kernelindex.ingest.kernelbench.problem_shapes import READ_SECONDS, ProblemNotReadable, read_problem
from kernelindex.ingest.liger_kernel import LigerKernel, rows
from kernelindex.ingest.reading import bounds_of
from kernelindex.ingest.runner import run_ingest
from kernelindex.settings import Settings
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


# The peak is read from VmHWM, which starts afresh with the new program: getrusage's ru_maxrss
# keeps the forking parent's peak across exec, and a test worker's is far above the ceiling.
MEMORY_PROBE = """
import re, sys
from kernelindex.cli import main
try:
    main(sys.argv[1:])
finally:
    with open("/proc/self/status") as status:
        peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", status.read())[1]) // 1024
    print(f"peak-rss-mib {peak}", file=sys.stderr)
"""


def test_the_memory_ceiling_holds_against_pages_that_never_end(database_url, stored, tmp_path):
    """Pages of 4 MB that never end and a total always ahead, with page and entry caps far off:
    only the memory ceiling can stop it, in a process of its own whose peak is measured."""
    ceiling_mib = 250
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
            [
                *(sys.executable, "-c", MEMORY_PROBE, "ingest", "sol-execbench"),
                *("--base-url", f"{upstream.url}/api", "--database-url", database_url),
            ],
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
    assert peak < ceiling_mib + 60  # one page past the ceiling at most, decoded
    assert seconds < 200
    assert figures(database_url) == stored


def test_the_ingest_commands_say_their_bounds_in_settings_and_help(monkeypatch):
    monkeypatch.delenv("KERNELINDEX_INGEST_MAX_MEMORY_MB", raising=False)  # raised for test workers (conftest)
    settings = Settings()
    assert bounds_of(settings) == Bounds()  # the settings' defaults are the documented ones
    assert settings.ingest_deadline_s == 1800 and settings.ingest_max_memory_mb == 1024
    assert settings.ingest_max_body_bytes == 50 * 1024 * 1024 and settings.http_max_wait_s == 30
    assert "SECURITY.md" in CliRunner().invoke(main, ["ingest", "--help"]).output


# --- A data folder we were given ---------------------------------------------------------------

AIC_DATA = Path(__file__).resolve().parent.parent / "fixtures" / "aiconfigurator" / "data" / "h200_sxm"


def _table(data: Path, folder: str) -> Path:
    target = data / "h200_sxm" / folder
    target.mkdir(parents=True)
    return target


@pytest.fixture
def hostile_data_dir(tmp_path: Path) -> Path:
    """One real table, and beside it a link to a real table outside the folder, a FIFO and a
    link to a device, each where a table is expected."""
    data = tmp_path / "given" / "data"
    good = _table(data, "gemm/trtllm/1.3.0rc20")
    for name in ("gemm_perf.parquet", "collection_meta.yaml"):
        shutil.copy(AIC_DATA / "gemm/trtllm/1.3.0rc20" / name, good / name)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(AIC_DATA / "gemm/sglang/0.5.14/gemm_perf.parquet", outside / "gemm_perf.parquet")
    (_table(data, "gemm/sglang/0.5.14") / "gemm_perf.parquet").symlink_to(outside / "gemm_perf.parquet")
    os.mkfifo(_table(data, "gemm/vllm/0.24.0") / "gemm_perf.parquet")
    (_table(data, "moe/trtllm/1.3.0rc20") / "moe_perf.parquet").symlink_to("/dev/zero")
    return data


def implementation_names(database_url: str) -> set[str]:
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            return set(connection.scalars(select(Implementation.name)))
    finally:
        engine.dispose()


def test_a_data_dir_is_read_only_as_regular_files_inside_it(database_url, hostile_data_dir):
    started = time.monotonic()
    result = CliRunner().invoke(
        main,
        [
            *("ingest", "aiconfigurator", "--data-dir", str(hostile_data_dir)),
            *("--data-version", "0.12.0", "--database-url", database_url),
        ],
    )
    seconds = time.monotonic() - started
    assert result.exit_code == 1, result.output[-3000:]  # the real table was read; three files were not
    assert_a_sentence(
        result,
        "h200_sxm/gemm/sglang/0.5.14/gemm_perf.parquet: a link pointing outside the folder given; not read",
        "h200_sxm/gemm/vllm/0.24.0/gemm_perf.parquet: not a regular file (a device, FIFO or socket); not read",
        "h200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet: a link pointing outside the folder given; not read",
    )
    assert seconds < 60  # the FIFO never blocked, /dev/zero was never read
    names = implementation_names(database_url)
    assert any("trtllm" in name.lower() for name in names)
    assert not any("sglang" in name.lower() or "vllm" in name.lower() for name in names)


def test_open_regular_refuses_before_reading(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "fine").write_bytes(b"ok")
    os.mkfifo(root / "fifo")
    (root / "out").symlink_to(tmp_path)
    (root / "device").symlink_to("/dev/null")
    (root / "inside").symlink_to(root / "fine")
    assert read_regular(root / "fine", root) == b"ok" and read_regular(root / "inside", root) == b"ok"
    for name, why in [("fifo", "not a regular file"), ("out", "pointing outside"), ("device", "pointing outside")]:
        with pytest.raises(NotARegularFile, match=why):
            read_regular(root / name, root)
    with pytest.raises(NotARegularFile, match="larger than 1 bytes"):
        read_regular(root / "fine", root, limit=1)


# --- Files whose shape is hostile -------------------------------------------------------------


def test_a_csv_header_of_a_million_columns_is_refused_in_a_sentence():
    header = ",".join(f"c{number}" for number in range(1_000_000)).encode()
    with pytest.raises(rows.FileError, match="too large: the header has 1000000 columns, more than the 256"):
        rows.read_file("benchmark/data/all_benchmark_data.csv", header + b"\n")
    last = kernelindex.ingest.aiter.rows.LastChange("0" * 40, datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(
        kernelindex.ingest.aiter.rows.FileError, match="the header has 1000000 columns, more than the 256"
    ):
        kernelindex.ingest.aiter.rows.read_table("aiter/configs/x.csv", header + b"\n", last, "http://raw/x.csv")


def test_a_row_wider_than_the_cap_is_skipped():
    header = ",".join(rows.COLUMNS).encode()
    row = b",".join([b"x" * 50] * len(rows.COLUMNS))
    reading = rows.read_file("f.csv", header + b"\n" + row + b"\n", Bounds(max_row_chars=100))
    assert reading.skipped["malformed_row"] == 1 and "wider than 100 characters" in reading.warnings[0]


def test_liger_config_json_nested_deep_is_a_malformed_row_not_a_traceback():
    header = ",".join(rows.COLUMNS).encode()
    columns = list(rows.COLUMNS)
    fields = [b"x"] * len(columns)
    fields[columns.index("extra_benchmark_config_str")] = b'"' + b"[" * 50_000 + b"]" * 50_000 + b'"'
    reading = rows.read_file("f.csv", header + b"\n" + b",".join(fields) + b"\n")
    assert reading.skipped["malformed_row"] == 1 and not reading.rows


def _chains(terms: int, lines: int) -> str:
    """Assignments of long sums, all returned: what made shape extraction super-linear."""
    body = "".join(f"x{line} = " + "+".join(["y"] * terms) + "\n" for line in range(lines))
    return body + "def get_inputs():\n    return [" + ", ".join(f"x{line}" for line in range(lines)) + "]\n"


def test_shape_extraction_of_a_195000_character_file_is_linear():
    source = _chains(200, 470)
    assert 190_000 < len(source) < 200_000
    started = time.monotonic()
    try:
        facts = read_problem(source)
    except ProblemNotReadable as exc:  # on a machine slow enough, the time limit answers instead
        assert "not read within" in str(exc)
    else:
        assert len(facts.inputs) == 470 and facts.inputs["x0"].dtype == "unknown"
    assert time.monotonic() - started < READ_SECONDS + 5
    # Files of one size, in sums eight times longer and eight times fewer, take about as long (they
    # took ten times longer when each enclosing sum was quoted as it was read).
    short, long = _chains(25, 128), _chains(200, 16)
    timings = []
    for text in (short, long, short, long):
        begun = time.perf_counter()
        read_problem(text)
        timings.append(time.perf_counter() - begun)
    assert min(timings[1], timings[3]) < 4 * min(timings[0], timings[2])


def test_shape_extraction_is_bounded_in_size_time_and_sequence_growth():
    with pytest.raises(ProblemNotReadable, match="too large to read"):
        read_problem("x = 1\n" * 40_000)
    with pytest.raises(ProblemNotReadable, match="not read within"):
        read_problem(_chains(50, 20), seconds=0.0)
    doubling = "a = (1, 2)\n" + "a = (*a, *a)\n" * 64 + "def get_inputs():\n    return [torch.randn(*a)]\n"
    started = time.monotonic()
    facts = read_problem(doubling)
    assert time.monotonic() - started < 2 and facts.inputs["input0"].shape is None


def test_a_snapshot_of_links_and_fifos_is_refused_in_a_sentence(tmp_path):
    github_snapshot = tmp_path / "kernelbench"
    github_snapshot.mkdir()
    (github_snapshot / "refs.json").symlink_to("/dev/zero")
    sol_snapshot = tmp_path / "sol"
    (sol_snapshot / "api").mkdir(parents=True)
    os.mkfifo(sol_snapshot / "api" / "kernels.json")
    database_url = f"sqlite:///{tmp_path / 'store.db'}"
    started = time.monotonic()
    kernelbench = CliRunner().invoke(
        main, ["ingest", "kernelbench", "--snapshot", str(github_snapshot), "--database-url", database_url]
    )
    sol = CliRunner().invoke(
        main, ["ingest", "sol-execbench", "--snapshot", str(sol_snapshot), "--database-url", database_url]
    )
    assert time.monotonic() - started < 30  # neither the FIFO nor the device was read
    assert (kernelbench.exit_code, sol.exit_code) == (2, 2)
    assert_a_sentence(kernelbench, "KernelBench stopped: malformed input", "refs.json: a link pointing outside")
    assert_a_sentence(sol, "Snapshot refused", "not a SOL-ExecBench snapshot")


@pytest.mark.parametrize(
    ("raised", "sentence"),
    [
        (RecursionError("maximum recursion depth exceeded"), "too deep: it nests values deeper than can be read"),
        (OverflowError("cannot convert float infinity to integer"), "a number out of range (OverflowError: cannot"),
        (TypeError("'bool' object is not iterable"), "a value of the wrong type or shape (TypeError"),
    ],
)
def test_a_failure_no_adapter_worded_is_one_line_of_a_finished_report(db, monkeypatch, raised, sentence):
    adapter = FakeUpstream().adapter()

    def discover() -> None:
        raise raised

    monkeypatch.setattr(adapter, "discover", discover)
    summary = run_ingest(adapter, db.sessions, origin="fake upstream")
    assert summary.status == "failed"
    assert len(summary.errors) == 1 and summary.errors[0].startswith("could not list NVIDIA SOL-ExecBench's units: ")
    assert sentence in summary.errors[0] and summary.errors[0].endswith("check the upstream")

    unit_adapter = FakeUpstream().adapter()

    def fetch(unit: str) -> None:
        raise raised

    monkeypatch.setattr(unit_adapter, "fetch", fetch)
    summary = run_ingest(unit_adapter, db.sessions, origin="fake upstream")
    assert summary.status == "failed" and len(summary.errors) == 3
    assert all(
        line.startswith(f"{unit}: ") and sentence in line
        for unit, line in zip(("39", "40", "62"), summary.errors, strict=True)
    )


def test_a_liger_value_of_1e999999_is_refused_in_a_sentence():
    columns = list(rows.COLUMNS)
    values = {column: "x" for column in columns} | {
        "metric_name": "speed",
        "metric_unit": "ms",
        "x_value": "1024",
        "y_value_50": "1e999999",
        "y_value_20": "1",
        "y_value_80": "2",
        "extra_benchmark_config_str": "{}",
        "timestamp": "2025-01-01 00:00:00",
        "gpu_name": "NVIDIA H100 80GB HBM3",
    }
    body = (",".join(columns) + "\n" + ",".join(values[column] for column in columns) + "\n").encode()
    client = httpx.Client(
        transport=httpx.MockTransport(lambda request: httpx.Response(200, content=body)), base_url="http://raw.test/"
    )
    adapter = LigerKernel(GitHubRaw(Fetcher(client, retries=0), "linkedin", "Liger-Kernel"), "main")
    discovery = adapter.discover()
    # The figure gate refuses the row where it stands; the rest of the file still goes on.
    assert discovery.complete and not discovery.errors
    lines = discovery.refused.lines()  # the one row, in each data file the transport serves it as
    assert len(lines) == len(rows.DATA_FILES) and discovery.refused.counts == {"out_of_range": len(lines)}
    assert all("y_value_50 is 1E+999999, outside 1 ns to 1 hour" in line for line in lines), lines


def test_a_bug_is_one_sentence_with_its_traceback_kept_in_a_file(tmp_path, monkeypatch):
    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr("kernelindex.ingest.sources.ingest", broken)
    result = CliRunner().invoke(
        main,
        [
            "ingest",
            "sol-execbench",
            "--base-url",
            "http://127.0.0.1:9/api",
            "--database-url",
            f"sqlite:///{tmp_path / 'store.db'}",
        ],
    )
    assert result.exit_code == 2
    assert_a_sentence(result, "NVIDIA SOL-ExecBench stopped: an unexpected error (KeyError: 'a bug')", "report it")
    details = Path(one_line(result.output).split("with the details in ", 1)[1].split()[0])
    try:
        assert "Traceback" in details.read_text() and "KeyError: 'a bug'" in details.read_text()
    finally:
        details.unlink()


def test_a_parquet_column_of_another_type_is_refused_and_the_rest_goes_on(tmp_path):
    data = tmp_path / "data"
    table = pq.read_table(AIC_DATA / "gemm/trtllm/1.3.0rc20/gemm_perf.parquet")
    latency = table.column_names.index("latency")
    wrong = table.set_column(latency, "latency", pa.array([[1.0]] * table.num_rows))
    pq.write_table(wrong, _table(data, "gemm/trtllm/1.3.0rc20") / "gemm_perf.parquet")
    good = _table(data, "gemm/sglang/0.5.14")
    shutil.copy(AIC_DATA / "gemm/sglang/0.5.14/gemm_perf.parquet", good / "gemm_perf.parquet")
    discovery = AIConfigurator(data, "0.12.0", datetime.now(UTC)).discover()
    # The figure gate refuses every row of the column, named by the file; the other file goes on.
    assert discovery.complete and not discovery.errors
    assert discovery.refused.counts == {"wrong_type": table.num_rows}
    assert all("h200_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.parquet" in line for line in discovery.refused.sentences)
    assert discovery.units  # the other file's workloads
