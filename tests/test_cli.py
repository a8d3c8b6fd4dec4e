"""The command line, run as a user runs it."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from kernelindex.app import create_app
from kernelindex.cli import main
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Workload
from kernelindex.paths import BUNDLED_SNAPSHOT
from kernelindex.settings import Settings
from tests import aiter_slice, kernelbench_slice, liger_slice
from tests.servers import free_port, github_serving_repos, serving, snapshot_api

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["serve"],
        ["db"],
        ["db", "upgrade"],
        ["db", "check"],
        ["ingest"],
        ["ingest", "sol-execbench"],
        ["ingest", "kernelbench"],
        ["ingest", "liger-kernel"],
        ["ingest", "aiter"],
        ["ingest", "all"],
        ["verify"],
    ],
)
def test_every_command_has_help(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.output


def test_db_upgrade_then_check_agree(database_url):
    assert invoke("db", "upgrade", "--database-url", database_url).exit_code == 0
    result = invoke("db", "check", "--database-url", database_url)
    assert result.exit_code == 0
    assert "agree" in result.output


def test_db_upgrade_reports_an_unusable_url_without_a_traceback():
    result = invoke("db", "upgrade", "--database-url", "nosuchdriver://x")
    assert result.exit_code == 1
    assert "could not migrate" in result.output
    assert "Traceback" not in result.output


def test_ingest_snapshot_twice_reports_unchanged_the_second_time(database_url):
    args = ["ingest", "sol-execbench", "--snapshot", str(BUNDLED_SNAPSHOT), "--database-url", database_url]
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    assert "succeeded" in first.output
    second = invoke(*args)
    assert second.exit_code == 0
    lines = {" ".join(line.replace("│", " ").split()) for line in second.output.splitlines()}
    assert {"unchanged run 708", "unchanged workload 235", "unchanged implementation 708"} <= lines
    assert not any(line.startswith(("added ", "updated ")) for line in lines)


def test_ingest_refuses_a_tampered_snapshot(tmp_path):
    snapshot = tmp_path / "snapshot"
    shutil.copytree(BUNDLED_SNAPSHOT, snapshot)
    detail = snapshot / "api" / "kernels" / "40.json"
    original = detail.read_text()
    detail.write_text(original.replace("residual", "residuals", 1))
    assert detail.read_text() != original
    result = invoke(
        "ingest", "sol-execbench", "--snapshot", str(snapshot), "--database-url", f"sqlite:///{tmp_path}/s.db"
    )
    assert result.exit_code == 2  # nothing could be read
    assert "checksum does not match" in result.output


def test_ingest_takes_base_url_or_snapshot_not_both(tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "ingest",
            "sol-execbench",
            "--base-url",
            "http://127.0.0.1:1/api",
            "--snapshot",
            str(BUNDLED_SNAPSHOT),
        ],
    )
    assert result.exit_code == 2
    assert "not both" in result.output


def test_ingest_live_api_over_http(tmp_path):
    url = f"sqlite:///{tmp_path}/live.db"
    with serving(snapshot_api(BUNDLED_SNAPSHOT)) as upstream:
        result = invoke("ingest", "sol-execbench", "--base-url", f"{upstream}/api", "--database-url", url)
    assert result.exit_code == 0, result.output
    assert "succeeded" in result.output
    lines = {" ".join(line.replace("│", " ").split()) for line in result.output.splitlines()}
    assert {"added run 708", "added workload 235"} <= lines


def test_ingest_all_reads_every_source_live_and_a_second_run_writes_nothing(tmp_path, monkeypatch):
    """`ingest all` (the cron job) against local servers speaking the SOL-ExecBench API and
    GitHub's two interfaces, holding real slices of the KernelBench, Liger-Kernel and aiter snapshots."""
    kernelbench = kernelbench_slice.make_slice(tmp_path / "kernelbench")
    liger = liger_slice.make_slice(tmp_path / "liger")
    aiter = aiter_slice.make_slice(tmp_path / "aiter")
    url = f"sqlite:///{tmp_path}/all.db"
    repos = [
        (kernelbench, "ScalingIntelligence", "KernelBench"),
        (liger, "linkedin", "Liger-Kernel"),
        (aiter, "ROCm", "aiter"),
    ]
    with serving(snapshot_api(BUNDLED_SNAPSHOT)) as sol, github_serving_repos(repos) as (api_url, raw_url):
        monkeypatch.setenv("KERNELINDEX_SOL_EXECBENCH_URL", f"{sol}/api")
        monkeypatch.setenv("KERNELINDEX_GITHUB_API_URL", api_url)
        monkeypatch.setenv("KERNELINDEX_GITHUB_RAW_URL", raw_url)
        first = invoke("ingest", "all", "--database-url", url)
        second = invoke("ingest", "all", "--database-url", url)
    assert first.exit_code == 0, first.output
    assert first.output.count("succeeded") == 4
    for name in ("NVIDIA SOL-ExecBench", "KernelBench", "Liger-Kernel", "aiter"):
        assert name in first.output
    # Its live upstream is a package this install does not have: said, and not a failure.
    assert "AIConfigurator skipped" in first.output
    assert second.exit_code == 0, second.output
    assert " added " not in second.output.replace("│", " ") and " updated " not in second.output.replace("│", " ")
    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        sources = {workload.source.slug for workload in session.scalars(select(Workload))}
    engine.dispose()
    assert sources == {"sol-execbench", "kernelbench", "liger-kernel", "aiter"}


def test_ingest_unreachable_api_fails_clearly(tmp_path):
    port = free_port()  # nothing listens there
    result = invoke(
        "ingest",
        "sol-execbench",
        "--base-url",
        f"http://127.0.0.1:{port}/api",
        "--database-url",
        f"sqlite:///{tmp_path}/u.db",
    )
    assert result.exit_code == 2  # nothing could be read
    assert "failed" in result.output and "connection failed" in result.output


@pytest.fixture
def permalink(client, tmp_path) -> Path:
    body = client.get("/runs/sol-submission-16893.json").json()
    path = tmp_path / "run.json"
    path.write_text(json.dumps(body))
    return path


def block(data: dict, role: str) -> dict:
    return next(b for b in data["manifests"] if b["role"] == role)


def test_verify_file_accepts_a_served_permalink(permalink):
    result = invoke("verify", str(permalink))
    assert result.exit_code == 0, result.output
    assert "5 of 5 manifests verified" in result.output


def test_verify_file_catches_a_changed_figure(permalink):
    data = json.loads(permalink.read_text())
    block(data, "run")["manifest"]["spec"]["timing"]["latencyNs"]["mean"] = 109838
    permalink.write_text(json.dumps(data))
    result = invoke("verify", str(permalink))
    assert result.exit_code == 1
    assert "FAIL BenchmarkRun sol-submission-16893" in result.output
    assert "claimed" in result.output


def test_verify_catches_a_run_pointing_at_another_protocol(permalink):
    data = json.loads(permalink.read_text())
    protocol = block(data, "protocol")
    protocol["manifest"]["spec"]["harness"]["version"] = "v9"
    del protocol["digest"]  # a bare manifest whose digest is recomputed, no longer the one the run names
    permalink.write_text(json.dumps(data))
    result = invoke("verify", str(permalink))
    assert result.exit_code == 1
    assert "protocolDigest" in result.output


@pytest.mark.parametrize(("content", "message"), [("not json at all", "not JSON"), ('{"a": 1}', "holds no manifest")])
def test_verify_explains_unusable_input(tmp_path, content, message):
    path = tmp_path / "x.json"
    path.write_text(content)
    result = invoke("verify", str(path))
    assert result.exit_code in (1, 2)
    assert message in result.output


@pytest.fixture
def catalogue_export(client, tmp_path) -> Path:
    """The site's own catalogue export, saved as a reader downloads it."""
    response = client.get("/exports/catalog.jsonl.gz")
    assert response.status_code == 200
    path = tmp_path / "catalog.jsonl.gz"
    path.write_bytes(response.content)
    return path


def test_verify_accepts_the_catalogue_export(catalogue_export):
    lines = gzip.decompress(catalogue_export.read_bytes()).decode().splitlines()
    result = invoke("verify", str(catalogue_export))
    assert result.exit_code == 0, result.output[-2000:]
    assert f"{len(lines)} of {len(lines)} manifests verified" in result.output
    assert "ok   line 1: " in result.output


def test_verify_names_the_line_of_a_tampered_manifest_in_the_export(catalogue_export):
    lines = gzip.decompress(catalogue_export.read_bytes()).decode().splitlines()
    number, tampered = next(
        (number, json.loads(line))
        for number, line in enumerate(lines, start=1)
        if json.loads(line)["manifest"]["kind"] == "BenchmarkRun" and number > 1
    )
    tampered["manifest"]["spec"]["timing"]["latencyNs"]["mean"] = 1
    lines[number - 1] = json.dumps(tampered)
    catalogue_export.write_bytes(gzip.compress("\n".join(lines).encode()))
    result = invoke("verify", str(catalogue_export))
    assert result.exit_code == 1
    failed = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    name = tampered["manifest"]["metadata"]["name"]
    assert len(failed) == 1 and failed[0].startswith(f"FAIL line {number}: BenchmarkRun {name} ")
    assert f"claimed {tampered['digest']}, recomputed" in failed[0]
    assert f"{len(lines) - 1} of {len(lines)} manifests verified" in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"a": 1}\n{"b": \n', "line 2: Expecting value"),
        (gzip.compress(b"x" * 100, mtime=0)[:20], "damaged gzip file"),
    ],
    ids=["json-lines", "gzip"],
)
def test_verify_says_where_an_unreadable_file_breaks(tmp_path, content, message):
    path = tmp_path / "broken.jsonl.gz"
    path.write_bytes(content)
    result = invoke("verify", str(path))
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_verify_missing_file_is_a_clear_error():
    result = invoke("verify", "/no/such/file.json")
    assert result.exit_code == 2
    assert "No such file" in result.output


def test_verify_url_from_a_running_server(loaded_db, make_app):
    # A rolled-back PostgreSQL transaction is not visible to a server thread's own engine.
    app = create_app(Settings(database_url=loaded_db.url)) if loaded_db.backend == "sqlite" else make_app(loaded_db)
    with serving(app) as base:
        result = invoke("verify", f"{base}/runs/sol-submission-16893.json")
    assert result.exit_code == 0, result.output
    assert "5 of 5 manifests verified" in result.output
