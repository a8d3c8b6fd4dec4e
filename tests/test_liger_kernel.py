"""The Liger-Kernel adapter: sweeps as workloads and runs, on real rows of the bundled snapshot."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import shutil
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Environment, Implementation, Protocol, Run, Workload, WorkloadCase
from kernelindex.ingest import github
from kernelindex.ingest.github import GitHubRaw
from kernelindex.ingest.http import Fetcher
from kernelindex.ingest.liger_kernel import OWNER, REPO, LigerKernel, SweepError
from kernelindex.ingest.liger_kernel.sweeps import ordered_cases
from kernelindex.ingest.sources import ingest
from kernelindex.settings import Settings
from kernelindex.store.batch import Batch
from tests.liger_slice import BUNDLED, COMMIT, SCRIPT, data_file, make_slice
from tests.servers import github_serving, serving, transport_app

MAIN = "benchmark/data/all_benchmark_data.csv"
CUTILE = "benchmark/data/all_benchmark_data_cutile.csv"
CUTEDSL = "benchmark/data/all_benchmark_data_cutedsl.csv"
CE_V = "cross_entropy/full/V/"
JSD_V = "jsd/full/V/"
CE_BT = "cross_entropy/full/BT/"
CE_MODELS = "cross_entropy/full/model_config/"


@pytest.fixture
def liger_slice(tmp_path: Path) -> Path:
    return make_slice(tmp_path / "liger-slice")


def adapter_on(root: Path, transport: httpx.BaseTransport | None = None) -> LigerKernel:
    client = httpx.Client(
        transport=transport or github.snapshot_transport(root, OWNER, REPO), base_url=github.SNAPSHOT_RAW
    )
    return LigerKernel(GitHubRaw(Fetcher(client, retries=0), OWNER, REPO), "main")


def mapped(adapter: LigerKernel) -> dict[str, Batch]:
    """Every unit's batch, keyed by the unit's readable prefix (``kernel/mode/x_name/``)."""
    units = adapter.discover().units
    return {unit.rsplit("/", 1)[0] + "/": adapter.map(unit, adapter.fetch(unit)) for unit in units}


def csv_rows(root: Path, path: str, **match: str) -> list[dict[str, str]]:
    with data_file(root, path).open(newline="") as file:
        return [row for row in csv.DictReader(file) if all(row[key] == value for key, value in match.items())]


def run_of(batch: Batch, provider: str, when: str | None = None) -> dict[str, Any]:
    manifests = [record.manifest.to_json() for record in batch.runs]
    found = [
        m
        for m in manifests
        if m["spec"]["sourceNative"]["metrics"]["kernel_provider"] == provider
        and (when is None or m["spec"]["sourceNative"]["metrics"]["timestamp"] == when)
    ]
    assert len(found) == 1, [m["metadata"]["name"] for m in found]
    return found[0]


def edit(root: Path, path: str, change: Callable[[list[str]], list[str]]) -> None:
    """Rewrite the data file's lines (header first) through ``change``."""
    file = data_file(root, path)
    file.write_text("".join(change(file.read_text().splitlines(keepends=True))))


def with_field(line: str, index: int, value: str) -> str:
    """The CSV line with field ``index`` replaced by ``value``."""
    fields = next(csv.reader([line]))
    fields[index] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(fields)
    return out.getvalue()


def line_of(root: Path, path: str, *parts: str) -> int:
    """The 0-based index of the first line of ``path`` holding every one of ``parts``."""
    lines = data_file(root, path).read_text().splitlines()
    return next(index for index, line in enumerate(lines) if all(part in line for part in parts))


# --- Mapping real rows ---------------------------------------------------------------


def test_a_workload_is_one_sweep_definition_with_the_swept_values_as_cases(liger_slice):
    batches = mapped(adapter_on(liger_slice))
    assert sorted(batches) == sorted([CE_V, JSD_V, CE_BT, CE_MODELS])
    workload = batches[CE_V].workload.to_json()
    spec = workload["spec"]

    assert workload["metadata"]["name"].startswith("liger-cross-entropy-full-v-")
    assert len(workload["metadata"]["name"].rsplit("-", 1)[1]) == 8
    assert workload["metadata"]["title"] == "Cross entropy, forward and backward, over vocab size (B=8, T=2048)"
    assert spec["collection"] == "Liger-Kernel"
    assert spec["tags"] == ["cross_entropy", "full"]
    assert [case["axes"] for case in spec["cases"]] == [{"V": v} for v in (4096, 8192, 16384, 32768, 65536, 131072)]
    assert spec["definition"]["axes"] == {
        "V": {"type": "var", "description": "vocab size"},
        "B": {"type": "const", "value": 8},
        "T": {"type": "const", "value": 2048},
    }
    assert spec["definition"]["inputs"] == {}
    assert spec["definition"]["outputs"]["output"]["dtype"] == "unknown"
    assert "benchmark/scripts/benchmark_cross_entropy.py" in spec["definition"]["description"]
    script = data_file(liger_slice, SCRIPT).read_bytes()
    assert spec["definition"]["reference"] == {
        "path": SCRIPT,
        "url": f"https://github.com/linkedin/Liger-Kernel/blob/main/{SCRIPT}",
        "sha256": hashlib.sha256(script).hexdigest(),
        "language": "python",
        "code": script.decode(),
    }
    external_id = spec["sourceNative"]["externalId"]
    assert batches[CE_V].external_id == external_id and len(external_id) <= 64
    assert external_id.startswith(CE_V)


def test_a_run_is_one_sweep_with_per_case_latencies_and_their_geometric_mean(liger_slice):
    batch = mapped(adapter_on(liger_slice))[CE_V]
    run = run_of(batch, "liger")
    rows = csv_rows(liger_slice, MAIN, kernel_name="cross_entropy", kernel_provider="liger", metric_name="speed")
    rows = [row for row in rows if row["kernel_operation_mode"] == "full" and row["x_name"] == "V"]
    medians = [863744, 1462272, 2745456, 5403264, 11925024, 25222879]  # the published ms, as ns

    assert [round(Decimal(row["y_value_50"]) * 1_000_000) for row in rows] == medians
    assert [result["latencyNs"]["median"] for result in run["spec"]["caseResults"]] == medians
    assert run["spec"]["caseResults"][0] == {
        "caseIndex": 0,
        "latencyNs": {"median": 863744, "p20": 860768, "p80": 867098},
        "metrics": {"peak_memory_mb": 256.32861328125},
    }
    geomean = math.exp(sum(math.log(m) for m in medians) / len(medians))
    assert run["spec"]["timing"] == {"latencyNs": {"geomean": round(geomean)}, "primaryStatistic": "geomean"}
    assert round(geomean) == 4_218_483
    assert run["spec"]["observedAt"] == "2024-09-03T15:31:41Z"
    assert run["spec"]["status"] == "passed"
    native = run["spec"]["sourceNative"]
    assert native["source"] == "liger-kernel" and native["benchmark"] == "cross_entropy"
    assert native["metrics"] == {
        "liger_version": "0.2.1",
        "kernel_provider": "liger",
        "gpu_name": "NVIDIA A100-SXM4-80GB",
        "timestamp": "2024-09-03 15:31:41",
        "cases_measured": 6,
        "cases_total": 6,
        "file": MAIN,
        "memory_observed_at": "2024-09-03T15:31:42Z",
    }
    assert run["metadata"]["name"] == (f"{batch.workload.metadata.name}-liger-a100-sxm4-80gb-v0.2.1-20240903-153141")
    record = next(r for r in batch.runs if r.manifest.metadata.name == run["metadata"]["name"])
    assert record.external_id == native["externalId"] and len(record.external_id) <= 64
    assert (record.implementation, record.environment, record.protocol) == (
        "liger-kernel-liger",
        "liger-kernel-a100-sxm4-80gb-v0.2.1",
        "liger-kernel-benchmark",
    )


def test_memory_goes_beside_the_speed_sweep_nearest_in_time(liger_slice):
    batch = mapped(adapter_on(liger_slice))[CE_BT]
    # liger_triton was measured twice on the B200 (once for each file), memory a second after each.
    first = run_of(batch, "liger_triton", "2026-06-16 06:43:17")
    second = run_of(batch, "liger_triton", "2026-07-05 21:00:35")
    assert first["spec"]["sourceNative"]["metrics"]["memory_observed_at"] == "2026-06-16T06:43:18Z"
    assert second["spec"]["sourceNative"]["metrics"]["memory_observed_at"] == "2026-07-05T21:00:36Z"
    assert first["spec"]["sourceNative"]["metrics"]["file"] == CUTILE
    assert second["spec"]["sourceNative"]["metrics"]["file"] == CUTEDSL
    for run, path in ((first, CUTILE), (second, CUTEDSL)):
        memory = csv_rows(liger_slice, path, kernel_provider="liger_triton", metric_name="memory", x_name="BT")
        assert [result["metrics"] for result in run["spec"]["caseResults"]] == [
            {"peak_memory_mb": float(row["y_value_50"])} for row in memory
        ]
    # Every memory row of the slice is beside a speed sweep: none is skipped.
    assert not any(b.skipped for b in mapped(adapter_on(liger_slice)).values())


def test_a_workload_spanning_two_files_has_the_runs_of_both(liger_slice):
    batch = mapped(adapter_on(liger_slice))[CE_BT]
    providers = sorted(r.manifest.to_json()["spec"]["sourceNative"]["metrics"]["kernel_provider"] for r in batch.runs)
    assert providers == ["liger_cutedsl", "liger_cutile", "liger_triton", "liger_triton", "torch", "torch"]
    assert [case.axes["BT"] for case in batch.workload.spec.cases] == [1024, 2048, 4096, 8192]


def test_text_values_of_the_swept_axis_keep_the_order_first_seen(liger_slice):
    workload = mapped(adapter_on(liger_slice))[CE_MODELS].workload
    assert [case.axes["model_config"] for case in workload.spec.cases] == [
        "llama_2_7b",
        "llama_3_8b",
        "qwen2.5_7b",
        "qwen2.5_14b",
        "qwen2.5_72b",
        "deepseek_v2_lite",
        "deepseek_v3",
    ]
    assert workload.spec.definition.axes["model_config"].description == "model configuration"


def test_numbers_sort_ascending_and_text_follows_in_first_seen_order():
    assert ordered_cases([64, "b", 8.5, "a", 8, "b", 64]) == [8, 8.5, 64, "b", "a"]


def test_a_kernel_without_a_script_of_its_name_has_no_reference(liger_slice):
    definition = mapped(adapter_on(liger_slice))[JSD_V].workload.spec.definition
    assert definition.reference is None
    assert "no script named benchmark/scripts/benchmark_jsd.py" in definition.description


def test_settings_of_the_configuration_go_into_every_case(tmp_path):
    """dtype and hidden_act are not numbers: fixed for the sweep, shown in every case."""
    root = make_slice(tmp_path / "slice")
    rows = (BUNDLED / "files" / COMMIT / MAIN).read_text().splitlines()
    swiglu = [line for line in rows if line.startswith("swiglu,liger,forward,speed,ms,T,")]
    edit(root, MAIN, lambda lines: [*lines, *(line + "\n" for line in swiglu)])
    batch = mapped(adapter_on(root))["swiglu/forward/T/"]
    axes = batch.workload.spec.definition.axes
    assert axes["dtype"].type == "var" and "torch.bfloat16" in (axes["dtype"].description or "")
    assert axes["hidden_size"].type == "const" and axes["hidden_size"].value == 4096
    assert {case.axes["dtype"] for case in batch.workload.spec.cases} == {"torch.bfloat16"}
    assert {case.axes["hidden_act"] for case in batch.workload.spec.cases} == {"silu"}


def test_providers_are_implementations_and_each_gpu_release_an_environment(liger_slice):
    batches = mapped(adapter_on(liger_slice))
    implementations = {i.metadata.name: i.spec for b in batches.values() for i in b.implementations}
    liger, hf, cutedsl = (
        implementations["liger-kernel-liger"],
        implementations["liger-kernel-huggingface"],
        implementations["liger-kernel-liger-cutedsl"],
    )
    assert (liger.project.name, liger.revision, liger.runtime, liger.license) == (
        "Liger-Kernel",
        "liger",
        "Triton",
        "BSD-2-Clause",
    )
    assert str(liger.project.url) == "https://github.com/linkedin/Liger-Kernel"
    assert (hf.project.name, hf.revision) == ("Hugging Face Transformers", "huggingface")
    assert (cutedsl.project.name, cutedsl.runtime) == ("Liger-Kernel", "CuTe DSL")
    assert implementations["liger-kernel-torch"].project.name == "PyTorch"
    environments = {e.metadata.name: e.spec for b in batches.values() for e in b.environments}
    assert sorted(environments) == [
        "liger-kernel-a100-sxm4-80gb-v0.2.1",
        "liger-kernel-b200-v0.8.0",
        "liger-kernel-h100-pcie-v0.3.1",
    ]
    b200 = environments["liger-kernel-b200-v0.8.0"]
    assert (b200.hardware.product, b200.hardware.architecture) == ("NVIDIA B200", "sm_100")
    assert b200.software.libraries == {"liger_kernel": "0.8.0"}
    protocol = batches[CE_V].protocols[0]
    assert protocol.metadata.name == "liger-kernel-benchmark"
    assert protocol.spec.comparability.family == "liger_kernel_benchmark"
    assert protocol.spec.measurement.primary_statistic == "geomean"
    notes = protocol.spec.comparability.notes or ""
    assert "geometric mean" in notes and "read as UTC" in notes and "never ranked as a time" in notes


def test_runs_of_one_group_that_measured_different_cases_say_k_of_n(liger_slice):
    """Like with like: a sweep missing a case is flagged, and its run keeps the counts."""
    gone = line_of(liger_slice, MAIN, "cross_entropy,huggingface,full,speed,ms,V,", ",131072,")
    edit(liger_slice, MAIN, lambda lines: [line for index, line in enumerate(lines) if index != gone])
    batch = mapped(adapter_on(liger_slice))[CE_V]
    assert batch.anomalies == {"case_set_differs": 1}
    assert any("measured different cases (5 or 6 of 6)" in warning for warning in batch.warnings)
    short = run_of(batch, "huggingface")["spec"]
    assert (short["sourceNative"]["metrics"]["cases_measured"], short["sourceNative"]["metrics"]["cases_total"]) == (
        5,
        6,
    )
    assert [result["caseIndex"] for result in short["caseResults"]] == [0, 1, 2, 3, 4]
    # Its memory row for the case it did not time has no sweep to stand beside.
    assert batch.skipped == {"memory_without_speed_run": 1}


def test_a_repeated_row_keeps_the_first_reading(liger_slice):
    before = mapped(adapter_on(liger_slice))[CE_V]
    repeat = line_of(liger_slice, MAIN, "cross_entropy,liger,full,speed,ms,V,", ",4096,")
    edit(liger_slice, MAIN, lambda lines: [*lines, lines[repeat].replace(",0.8637440204620361,", ",9.5,")])
    after = mapped(adapter_on(liger_slice))[CE_V]
    assert after.anomalies == {"duplicate_row": 1}
    assert [r.manifest.digest for r in after.runs] == [r.manifest.digest for r in before.runs]


def test_two_providers_that_would_share_a_name_fail_their_workload_alone(liger_slice):
    lines = data_file(liger_slice, MAIN).read_text().splitlines(keepends=True)
    renamed = [with_field(line, 1, "Torch") for line in lines if line.startswith("jsd,torch,")]
    edit(liger_slice, MAIN, lambda lines: [*lines, *renamed])
    adapter = adapter_on(liger_slice)
    unit = next(unit for unit in adapter.discover().units if unit.startswith(JSD_V))
    with pytest.raises(SweepError, match=f"^{unit}: Torch and torch map to one manifest name, liger-kernel-torch$"):
        adapter.map(unit, adapter.fetch(unit))


# --- Ingesting into the store ---------------------------------------------------------

TABLES = (Workload, WorkloadCase, Implementation, Protocol, Environment, Run)


def store_state(sessions) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Row counts, every record's name, digest and modification time, and what is marked missing."""
    with sessions() as session:
        state: dict[str, object] = {
            table.__tablename__: session.scalar(select(func.count()).select_from(table)) for table in TABLES
        }
        for table in (Workload, Implementation, Protocol, Environment, Run):
            state[f"{table.__tablename__}.rows"] = sorted(
                session.execute(select(table.name, table.digest, table.updated_at)).all()
            )
        for marked in (Workload, Run):
            state[f"{marked.__tablename__}.missing"] = sorted(
                session.scalars(select(marked.name).where(marked.missing_since.is_not(None))).all()
            )
    return state


def _served(root: Path, fail: Callable[[httpx.Request], int | None] | None = None):  # type: ignore[no-untyped-def]
    """The slice served as GitHub's raw host on 127.0.0.1; ``fail`` may answer a request with a status."""
    snapshot = github.snapshot_transport(root, OWNER, REPO)

    def handle(request: httpx.Request) -> httpx.Response:
        status = fail(request) if fail else None
        return httpx.Response(status) if status else snapshot.handle_request(request)

    return serving(transport_app(httpx.MockTransport(handle), httpx.URL(github.SNAPSHOT_RAW).host))


def test_snapshot_ingest_stores_the_slice_and_a_second_ingest_writes_nothing(db, liger_slice):
    settings = Settings(database_url=db.url)
    first = ingest(db.sessions, settings, "liger-kernel", snapshot=liger_slice)
    before = store_state(db.sessions)
    second = ingest(db.sessions, settings, "liger-kernel", snapshot=liger_slice)

    assert first.status == second.status == "succeeded", first.errors
    assert first.counts["added"] == {"environment": 3, "implementation": 6, "protocol": 1, "run": 13, "workload": 4}
    assert first.errors == []
    assert not second.wrote_records
    assert second.counts["unchanged"]["run"] == 13 and second.counts["unchanged"]["workload"] == 4
    assert store_state(db.sessions) == before
    with db.sessions() as session:
        workload = session.scalars(select(Workload).where(Workload.external_id.startswith(CE_V))).one()
        assert workload.collection == "Liger-Kernel" and workload.case_count == 6
        run = session.scalars(select(Run).where(Run.name.like("%-liger-a100-sxm4-80gb-v0.2.1-%"))).one()
        assert run.latency_ns == 4_218_483 and run.primary_statistic == "geomean"
        assert run.environment.name == "liger-kernel-a100-sxm4-80gb-v0.2.1"


def test_live_ingest_through_a_real_raw_host_gives_the_same_store(db, liger_slice):
    settings = Settings(database_url=db.url)
    assert ingest(db.sessions, settings, "liger-kernel", snapshot=liger_slice).status == "succeeded"
    before = store_state(db.sessions)
    with github_serving(liger_slice, OWNER, REPO) as (_, raw_url):
        live = ingest(db.sessions, settings, "liger-kernel", options={"raw_url": raw_url, "ref": None})
    assert live.status == "succeeded", live.errors
    assert live.counts["units"] == {"listed": 4, "ingested": 4}
    assert not live.wrote_records
    assert store_state(db.sessions) == before


# --- Bad input: reported by file, never half-written ------------------------------------


def test_a_row_with_no_figure_is_refused_and_named_by_file_and_line(db, liger_slice):
    bad = line_of(liger_slice, MAIN, "jsd,torch,full,speed,ms,V,", ",4096,")
    edit(
        liger_slice,
        MAIN,
        lambda lines: [with_field(line, 8, "abc") if i == bad else line for i, line in enumerate(lines)],
    )
    summary = ingest(db.sessions, Settings(database_url=db.url), "liger-kernel", snapshot=liger_slice)

    assert summary.status == "succeeded"
    assert summary.counts["skipped"] == {"memory_without_speed_run": 1}
    assert summary.counts["refused"] == {"wrong_type": 1}
    # The torch sweep now lacks a case the liger sweep has: not like with like.
    assert summary.counts["anomalies"] == {"case_set_differs": 1}
    assert f"warning: {MAIN}:{bad + 1}: refused: y_value_50 is 'abc', not a number" in summary.errors
    with db.sessions() as session:
        run = session.scalars(select(Run).where(Run.name.like("liger-jsd-full-v-%-torch-h100-pcie-%"))).one()
        metrics = json.loads(run.manifest_json)["spec"]["sourceNative"]["metrics"]
        assert (metrics["cases_measured"], metrics["cases_total"]) == (5, 6)
        assert session.scalar(select(func.count()).select_from(Run)) == 13


@pytest.mark.parametrize(
    ("field", "value", "reason", "message"),
    [
        (11, '{"B": 8', "malformed_row", "extra_benchmark_config_str: Value error, Expecting ',' delimiter"),
        (11, "[8, 2048]", "malformed_row", "extra_benchmark_config_str: Value error, expected a JSON object"),
        (11, '{"B": 1e999999}', "malformed_row", "extra_benchmark_config_str: Value error, 1e999999 is not a finite"),
        (13, "yesterday", "malformed_row", "timestamp: Value error, Invalid isoformat string"),
        (0, "cross entropy", "malformed_row", "kernel_name: String should match pattern"),
        (7, "", "malformed_row", "x_value: Value error, empty"),
        (2, "full\x00", "malformed_row", "Value error, a field holds control characters"),
        (3, "throughput", "unknown_metric", None),
        (4, "s", "unknown_metric", None),
    ],
)
def test_a_row_that_cannot_be_used_is_skipped_by_reason(liger_slice, field, value, reason, message):
    bad = line_of(liger_slice, MAIN, "cross_entropy,liger,full,speed,ms,V,", ",4096,")
    edit(
        liger_slice,
        MAIN,
        lambda lines: [with_field(line, field, value) if i == bad else line for i, line in enumerate(lines)],
    )
    discovery = adapter_on(liger_slice).discover()

    assert discovery.skipped == {reason: 1}
    assert discovery.errors == [] and discovery.complete
    named = [warning for warning in discovery.warnings if warning.startswith(f"{MAIN}:{bad + 1}: ")]
    if message is None:
        assert discovery.warnings == []
    else:
        assert len(named) == 1 and message in named[0], discovery.warnings


@pytest.mark.parametrize(
    ("field", "value", "reason", "sentence"),
    [
        (8, "fast", "wrong_type", "y_value_50 is 'fast', not a number"),
        (8, "true", "wrong_type", "y_value_50 is 'true', not a number"),
        (9, "0", "out_of_range", "y_value_20 is 0, outside 1 ns to 1 hour"),
        (10, "nan", "not_finite", "y_value_80 is 'nan', not a finite number"),
        (8, "0.0000001", "out_of_range", "y_value_50 is 1E-7, outside 1 ns to 1 hour"),
        (8, "1e999999", "out_of_range", "y_value_50 is 1E+999999, outside 1 ns to 1 hour"),
        (9, "1e308", "out_of_range", "y_value_20 is 1E+308, outside 1 ns to 1 hour"),
    ],
)
def test_a_row_whose_figure_is_no_time_is_refused_alone(liger_slice, field, value, reason, sentence):
    bad = line_of(liger_slice, MAIN, "cross_entropy,liger,full,speed,ms,V,", ",4096,")
    edit(
        liger_slice,
        MAIN,
        lambda lines: [with_field(line, field, value) if i == bad else line for i, line in enumerate(lines)],
    )
    discovery = adapter_on(liger_slice).discover()

    assert discovery.refused.counts == {reason: 1} and discovery.skipped == {}
    assert discovery.errors == [] and discovery.complete
    named = discovery.refused.lines()
    assert len(named) == 1 and named[0].startswith(f"{MAIN}:{bad + 1}: refused: {sentence}"), named


def test_a_row_with_fewer_fields_than_the_header_is_malformed(liger_slice):
    bad = line_of(liger_slice, MAIN, "cross_entropy,liger,full,speed,ms,V,", ",4096,")
    edit(
        liger_slice,
        MAIN,
        lambda lines: [line.rsplit(",", 2)[0] + "\n" if i == bad else line for i, line in enumerate(lines)],
    )
    discovery = adapter_on(liger_slice).discover()
    assert discovery.skipped == {"malformed_row": 1}
    assert discovery.warnings == [
        f"{MAIN}:{bad + 1}: no value for timestamp, liger_version (fewer fields than the header)"
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"kernel_name,x\n\xff\xfe\n", f"{CUTILE}: not UTF-8 text (invalid start byte at byte 14)"),
        (
            b"kernel_name,kernel_provider\ncross_entropy,liger\n",
            f"{CUTILE}: the header lacks the column(s) kernel_operation_mode",
        ),
    ],
)
def test_an_unreadable_file_is_one_error_and_the_others_go_on(liger_slice, content, message):
    data_file(liger_slice, CUTILE).write_bytes(content)
    discovery = adapter_on(liger_slice).discover()
    assert len(discovery.errors) == 1 and discovery.errors[0].startswith(message)
    assert discovery.errors[0].endswith(f" ({github.SNAPSHOT_RAW}{OWNER}/{REPO}/main/{CUTILE})")
    assert not discovery.complete
    assert len(discovery.units) == 4  # the other two files still hold every workload


def test_an_unknown_gpu_is_skipped_with_one_line_for_its_file(db, liger_slice):
    edit(liger_slice, MAIN, lambda lines: [line.replace("NVIDIA H100 PCIe", "NVIDIA H999") for line in lines])
    summary = ingest(db.sessions, Settings(database_url=db.url), "liger-kernel", snapshot=liger_slice)

    rows = len(csv_rows(liger_slice, MAIN, gpu_name="NVIDIA H999"))
    assert rows == 24
    assert summary.status == "succeeded"
    assert summary.counts["skipped"] == {"unknown_gpu": rows}
    assert [e for e in summary.errors if "H999" in e] == [
        f"warning: {MAIN}: {rows} row(s) measured on 'NVIDIA H999', a GPU not in the registry's GPU table, were skipped"
    ]
    with db.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Workload)) == 3  # jsd was measured only there
        assert not session.scalars(select(Environment).where(Environment.name.like("%h100-pcie%"))).all()


def test_a_missing_file_fails_alone_and_marks_nothing_missing(db, liger_slice):
    settings = Settings(database_url=db.url)
    assert ingest(db.sessions, settings, "liger-kernel", snapshot=liger_slice).status == "succeeded"
    before = store_state(db.sessions)
    data_file(liger_slice, CUTEDSL).unlink()
    summary = ingest(db.sessions, settings, "liger-kernel", snapshot=liger_slice)

    assert summary.status == "partial"
    assert summary.counts["files"] == {"failed": 1}
    assert [e for e in summary.errors if not e.startswith("warning")] == [
        f"{github.SNAPSHOT_RAW}{OWNER}/{REPO}/main/{CUTEDSL}: HTTP 404 after 1 attempt(s)"
    ]
    assert summary.counts["units"] == {"listed": 3, "ingested": 3}
    # The runs and the workload only that file held are neither changed nor marked missing.
    flags = summary.counts["flags"]
    assert isinstance(flags, dict) and flags.get("missing_upstream", 0) == flags.get("missing_workloads", 0) == 0
    assert not summary.wrote_records
    assert store_state(db.sessions) == before


def test_a_file_the_raw_host_fails_on_is_reported_and_the_others_go_on(db, liger_slice):
    def fail(request: httpx.Request) -> int | None:
        return 500 if request.url.path.endswith(CUTILE) else None

    with _served(liger_slice, fail) as raw_url:
        summary = ingest(
            db.sessions,
            Settings(database_url=db.url, http_retries=1),
            "liger-kernel",
            options={"raw_url": raw_url},
            sleep=lambda _: None,
        )
    assert summary.status == "partial"
    assert [e for e in summary.errors if CUTILE in e] == [
        f"{raw_url}/{OWNER}/{REPO}/main/{CUTILE}: HTTP 500 after 2 attempt(s)"
    ]
    with db.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Workload)) == 4
        files = {
            json.loads(text)["spec"]["sourceNative"]["metrics"]["file"]
            for text in session.scalars(select(Run.manifest_json))
        }
        assert files == {MAIN, CUTEDSL}


def test_a_script_the_raw_host_fails_on_fails_its_workloads_alone(db, liger_slice):
    def fail(request: httpx.Request) -> int | None:
        return 500 if request.url.path.endswith(SCRIPT) else None

    with _served(liger_slice, fail) as raw_url:
        summary = ingest(
            db.sessions,
            Settings(database_url=db.url, http_retries=0),
            "liger-kernel",
            options={"raw_url": raw_url},
        )
    assert summary.status == "partial"
    assert summary.counts["units"] == {"listed": 4, "ingested": 1, "failed": 3}
    # Each error names its workload, then the script and the URL that failed.
    units, reasons = zip(*(error.split(": ", 1) for error in summary.errors), strict=True)
    assert len(set(units)) == 3 and all(unit.startswith("cross_entropy/") for unit in units)
    assert (
        reasons
        == (f"{SCRIPT}: could not be read ({raw_url}/{OWNER}/{REPO}/main/{SCRIPT}: HTTP 500 after 1 attempt(s))",) * 3
    )
    with db.sessions() as session:
        # Nothing of the three cross-entropy workloads was written: not the workload, not one run.
        assert session.scalars(select(Workload.external_id)).all() == [mapped_jsd_id(liger_slice)]
        assert {run.workload.external_id for run in session.scalars(select(Run))} == {mapped_jsd_id(liger_slice)}


def mapped_jsd_id(root: Path) -> str:
    return next(unit for unit in adapter_on(root).discover().units if unit.startswith(JSD_V))


# --- The whole bundled snapshot ---------------------------------------------------------


def test_the_bundled_snapshot_maps_every_speed_row_and_attaches_memory(sqlite_empty_template, tmp_path):
    path = tmp_path / "store.db"
    shutil.copy(sqlite_empty_template, path)
    engine = make_engine(f"sqlite:///{path}")
    sessions = make_sessionmaker(engine)
    summary = ingest(sessions, Settings(database_url=f"sqlite:///{path}"), "liger-kernel", snapshot=BUNDLED)

    assert summary.status == "succeeded", summary.errors
    assert summary.errors == []
    # 185 (kernel, mode, x_name, configuration text) groups; three differ only in key order: 182 sweeps.
    assert summary.counts["units"] == {"listed": 182, "ingested": 182}
    # 528 (workload, GPU, provider, release) keys, 11 of them measured twice: 539 sweeps.
    assert summary.counts["added"] == {
        "environment": 23,
        "implementation": 19,
        "protocol": 1,
        "run": 539,
        "workload": 182,
    }
    # 1,228 memory rows: 8 of a sweep no speed row measured; every other one beside its sweep.
    assert summary.counts["skipped"] == {"memory_without_speed_run": 8}
    assert "anomalies" not in summary.counts
    with sessions() as session:
        results = [
            result
            for text in session.scalars(select(Run.manifest_json))
            for result in json.loads(text)["spec"]["caseResults"]
        ]
    assert len(results) == 2669  # every speed row
    assert sum("metrics" in result for result in results) == 1228 - 8
    engine.dispose()


def test_a_sweeps_interval_is_the_geometric_mean_of_its_cases_percentiles(liger_slice):
    batch = mapped(adapter_on(liger_slice))[CE_V]
    run = run_of(batch, "liger")
    record = next(r for r in batch.runs if r.manifest.metadata.name == run["metadata"]["name"])
    cases = [result["latencyNs"] for result in run["spec"]["caseResults"]]

    def geomean(values: list[int]) -> float:
        return math.exp(sum(math.log(v) for v in values) / len(values))

    found = record.stored.uncertainty
    assert found is not None and found.kind == "reported-percentiles"
    assert found.low_ns == math.floor(geomean([case["p20"] for case in cases]))
    assert found.high_ns == math.ceil(geomean([case["p80"] for case in cases]))
    assert found.low_ns < record.stored.latency_ns < found.high_ns
