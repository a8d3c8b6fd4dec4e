"""The KernelBench adapter: mapping real rows, ingesting a real slice on both backends, live mode
through real local hosts, and every kind of bad upstream input reported per file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from kernelindex.db import migrate
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Environment, Implementation, IngestionReport, Protocol, Run, Workload
from kernelindex.ingest import github
from kernelindex.ingest.github import git_blob_sha
from kernelindex.ingest.kernelbench import KernelBench, open_source
from kernelindex.ingest.kernelbench.files import readable_name
from kernelindex.ingest.kernelbench.manifests import workload_name
from kernelindex.ingest.reading import Reading
from kernelindex.ingest.runner import IngestSummary
from kernelindex.ingest.sources import SOURCES, ingest
from kernelindex.paths import BUNDLED_DATA
from kernelindex.settings import Settings
from kernelindex.store.search import search
from kernelindex.uncertainty import Uncertainty
from tests.kernelbench_slice import (
    BABEL,
    EARLY,
    LATE,
    NOT_MEASURED,
    PROBLEM_MISSING,
    TIMED_ENTRIES,
    WORKLOADS,
    make_slice,
)
from tests.servers import serving, transport_app
from tests.test_ingest_snapshot import store_state

A100 = "results/timing/A100_modal/baseline_time_torch.json"
BABEL_FILE = "results/timing/L40S_babel/baseline_time_torch.json"
H100 = "results/timing/H100_Modal/baseline_time_torch.json"
RELU = "KernelBench/level1/19_ReLU.py"
EARLY_RELU_SHA256 = "1b0829ac7344b3231074f25a134063e9eb73db33918624ad03f936f82e5794ea"
EARLY_RELU_ID = "level1/19@1b0829ac7344b323"


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    return make_slice(tmp_path)


def run_ingest(db, root: Path, **options: str | None) -> IngestSummary:  # type: ignore[no-untyped-def]
    settings = Settings(database_url=db.url, github_token=None)
    if options:
        return ingest(db.sessions, settings, "kernelbench", options=options, sleep=lambda _: None)
    return ingest(db.sessions, settings, "kernelbench", snapshot=root, sleep=lambda _: None)


def adapter(root: Path) -> KernelBench:
    opened = open_source(Reading(Settings(database_url="sqlite://"), root, {}, sleep=lambda _: None))
    assert isinstance(opened.adapter, KernelBench)
    return opened.adapter


def runs_by_file(db) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Stored runs per (timing file at commit)."""
    counts: dict[str, int] = {}
    with db.sessions() as session:
        for text in session.scalars(select(Run.manifest_json)):
            metrics = json.loads(text)["spec"]["sourceNative"]["metrics"]
            key = f"{metrics['file']}@{metrics['commit'][:7]}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def stored_runs(db) -> dict[str, tuple[str, int]]:  # type: ignore[no-untyped-def]
    with db.sessions() as session:
        return {
            name: (digest, latency)
            for name, digest, latency in session.execute(select(Run.name, Run.digest, Run.latency_ns))
        }


def edit_timing_file(root: Path, commit: str, path: str, change: Callable[[dict[str, Any]], None]) -> None:
    file = root / "files" / commit / path
    data = json.loads(file.read_text())
    change(data)
    file.write_text(json.dumps(data))


def misbehave(monkeypatch: pytest.MonkeyPatch, host: str, path_part: str, answer: httpx.Response) -> list[str]:
    """Serve the snapshot, but answer ``answer`` for requests to ``host`` whose path holds ``path_part``."""
    real = github.snapshot_transport
    hits: list[str] = []

    def transport(root: Path, owner: str, repo: str) -> httpx.MockTransport:
        inner = real(root, owner, repo)

        def handle(request: httpx.Request) -> httpx.Response:
            if request.url.host == httpx.URL(host).host and path_part in request.url.path:
                hits.append(request.url.path)
                return httpx.Response(answer.status_code, content=answer.content)
            return inner.handle_request(request)

        return httpx.MockTransport(handle)

    monkeypatch.setattr(github, "snapshot_transport", transport)
    return hits


# --- Mapping -------------------------------------------------------------------------


def test_readable_names_and_workload_names():
    assert readable_name("19_ReLU.py") == "ReLU"
    assert readable_name("1_Square_matrix_multiplication_.py") == "Square matrix multiplication"
    assert readable_name("2_facebook-opt-1p3b_bs1_seq2047.py") == "facebook-opt-1p3b bs1 seq2047"


def test_discovery_of_the_slice(snapshot):
    kernelbench = adapter(snapshot)
    discovery = kernelbench.discover()
    assert discovery.complete
    assert len(discovery.units) == WORKLOADS
    assert discovery.skipped == {"not_measured": NOT_MEASURED, "problem_missing": PROBLEM_MISSING}
    # The file was read: the problem it timed but its commit does not hold is a warning, not a failure.
    assert discovery.errors == []
    assert discovery.warnings == [
        f"{BABEL_FILE} at {BABEL[:12]}: timed problem files that this commit does not hold, skipped: level5/4_llama2.py"
    ]
    assert sum(len(kernelbench.fetch(unit).measurements) for unit in discovery.units) == TIMED_ENTRIES
    # One content of 19_ReLU.py before the July 2025 revision (timed at 47f78d7 and df77b59), one after.
    relu = [unit for unit in discovery.units if unit.startswith("level1/19@")]
    assert relu == [EARLY_RELU_ID, "level1/19@cbbfc9409662168e"]
    early = kernelbench.fetch(EARLY_RELU_ID)
    assert [m.file.path for m in early.measurements] == [
        A100,
        "results/timing/L40S_modal/baseline_time_torch.json",
        BABEL_FILE,
    ]
    assert early.commit.sha == EARLY


def test_workload_of_a_real_problem(snapshot):
    kernelbench = adapter(snapshot)
    kernelbench.discover()
    batch = kernelbench.map(EARLY_RELU_ID, kernelbench.fetch(EARLY_RELU_ID))
    code = (snapshot / "files" / EARLY / RELU).read_text()
    assert batch.external_id == EARLY_RELU_ID
    assert batch.complete
    assert batch.workload.to_json() == {
        "apiVersion": "kernelindex.dev/v1alpha1",
        "kind": "WorkloadSuite",
        "metadata": {"name": "kernelbench-l1-19-relu-1b0829ac", "title": "ReLU"},
        "spec": {
            "definition": {
                "name": "19_ReLU",
                "description": "Simple model that performs a ReLU activation.",
                "axes": {"batch_size": {"type": "const", "value": 16}, "dim": {"type": "const", "value": 16384}},
                "inputs": {"x": {"dtype": "float32", "shape": [16, 16384]}},
                "outputs": {
                    "output": {
                        "dtype": "unknown",
                        "description": "What Model.forward returns: see the reference program.",
                    }
                },
                "reference": {
                    "path": RELU,
                    "url": f"https://github.com/ScalingIntelligence/KernelBench/blob/{EARLY}/{RELU}",
                    "sha256": EARLY_RELU_SHA256,
                    "language": "python",
                    "code": code,
                },
            },
            "collection": "KernelBench level 1",
            "tags": ["kernelbench", "level 1"],
            "cases": [{"axes": {"batch_size": 16, "dim": 16384}}],
            "sourceNative": {"source": "kernelbench", "externalId": RELU, "metrics": {"commit": EARLY}},
        },
    }


def test_runs_of_a_real_problem(snapshot):
    kernelbench = adapter(snapshot)
    kernelbench.discover()
    batch = kernelbench.map(EARLY_RELU_ID, kernelbench.fetch(EARLY_RELU_ID))
    blob = git_blob_sha((snapshot / "files" / EARLY / A100).read_bytes())
    run = next(record for record in batch.runs if record.environment.startswith("kernelbench-a100-modal"))
    # The entry as published: {"mean": 0.0298, "std": 0.00188, "min": 0.0287, "max": 0.041, ...}
    assert run.manifest.metadata.name == f"kernelbench-a100-modal-pytorch-eager-l1-19-{blob[:10]}"
    assert run.manifest.metadata.title == "PyTorch eager · 19_ReLU · NVIDIA A100 SXM4 40GB (A100_modal)"
    spec = run.manifest.to_json()["spec"]
    assert spec["timing"] == {"latencyNs": {"mean": 29800, "min": 28700, "max": 41000}, "primaryStatistic": "mean"}
    assert spec["observedAt"] == "2025-01-21T08:40:46Z"  # the commit time, 2025-01-21T00:40:46-08:00
    assert spec["status"] == "passed"
    assert spec["sourceNative"] == {
        "source": "kernelbench",
        "benchmark": "19_ReLU",
        "externalId": run.external_id,
        "metrics": {
            "std_ms": 0.00188,
            "num_trials": 100,
            "hardware": "NVIDIA A100-SXM4-40GB",
            "device": "cuda:0",
            "setup": "A100_modal",
            "mode": "torch",
            "commit": EARLY,
            "file": A100,
        },
    }
    assert run.external_id.startswith("level1/19/") and len(run.external_id) <= 64
    # Its interval: the mean ± 2 standard errors, 2 × 0.00188 ms / √100 = 376 ns.
    assert run.stored.uncertainty == Uncertainty("reported-std", 29800 - 376, 29800 + 376)
    # A100_modal ran on two GPUs (31_VisionAttention on an 80GB card): its environments name the GPU.
    assert run.environment == "kernelbench-a100-modal-a100-sxm4-40gb"
    assert spec["workloadDigest"] == batch.workload.digest
    environments = {e.metadata.name: e.to_json()["spec"] for e in batch.environments}
    assert environments["kernelbench-a100-modal-a100-sxm4-40gb"] == {
        "hardware": {"vendor": "nvidia", "product": "NVIDIA A100 SXM4 40GB", "architecture": "sm_80"},
        "software": {"libraries": {}},
        "provider": "A100_modal",
    }
    assert environments["kernelbench-l40s-babel"]["provider"] == "L40S_babel"
    assert [i.metadata.name for i in batch.implementations] == ["pytorch-eager"]
    assert batch.implementations[0].to_json()["spec"] == {
        "project": {"name": "PyTorch", "url": "https://pytorch.org/"},
        "revision": "eager",
        "language": "Python",
        "license": "BSD-3-Clause",
        "source": {"available": True, "url": "https://github.com/pytorch/pytorch"},
    }
    measurement = batch.protocols[0].to_json()["spec"]["measurement"]
    assert measurement == {
        "timer": "cuda_events_wall_clock",
        "primaryStatistic": "mean",
        "warmupIterations": 3,
        "timedIterations": 1,
        "trials": 100,
        "l2Flush": False,
    }


def test_compile_modes_are_implementations_and_level4_names_its_model(snapshot):
    kernelbench = adapter(snapshot)
    units = kernelbench.discover().units
    late_relu = kernelbench.map("level1/19@cbbfc9409662168e", kernelbench.fetch("level1/19@cbbfc9409662168e"))
    revisions = {i.metadata.name: i.spec.revision for i in late_relu.implementations}
    assert revisions == {
        "pytorch-eager": "eager",
        "torch-compile-inductor-default": 'torch.compile(backend="inductor", mode="default")',
    }
    opt = next(unit for unit in units if unit.startswith("level4/2@"))
    workload = kernelbench.map(opt, kernelbench.fetch(opt)).workload
    assert workload.spec.origin_model == "facebook/opt-1.3b"
    assert workload.spec.collection == "KernelBench level 4"
    assert workload.spec.definition.inputs["x"].dtype == "int64"
    assert workload.metadata.name.startswith("kernelbench-l4-2-facebook-opt-1p3b-bs1-seq2047-")


def test_a_long_problem_name_still_makes_a_valid_name(snapshot):
    kernelbench = adapter(snapshot)
    kernelbench.discover()
    problem = kernelbench.fetch(EARLY_RELU_ID)
    problem.file_name = "19_" + "Very_long_words_" * 30 + ".py"
    name = workload_name(problem)
    assert len(name) <= 200 and name.endswith("-1b0829ac") and "--" not in name


# --- Ingesting the slice ---------------------------------------------------------------


def test_ingest_slice_stores_every_timed_entry_and_reports_the_rest(db, snapshot):
    summary = run_ingest(db, snapshot)
    # The level 5 problem the commit does not hold is named in a warning; no file failed.
    assert summary.status == "succeeded"
    assert summary.errors == [
        f"warning: {BABEL_FILE} at {BABEL[:12]}: timed problem files that this commit does not hold, skipped: "
        "level5/4_llama2.py"
    ]
    assert "files" not in summary.counts
    assert summary.counts["added"] == {
        "environment": 5,
        "implementation": 2,
        "protocol": 1,
        "run": TIMED_ENTRIES,
        "workload": WORKLOADS,
    }
    assert summary.counts["skipped"] == {"not_measured": 1, "problem_missing": 1}
    assert summary.counts["units"] == {"listed": WORKLOADS, "ingested": WORKLOADS}
    with db.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Run)) == TIMED_ENTRIES
        workloads = dict(session.execute(select(Workload.external_id, Workload.collection)).all())
        assert workloads[EARLY_RELU_ID] == "KernelBench level 1"
        assert not any(external_id.startswith("level5/") for external_id in workloads)
        gpus = session.scalars(select(Environment.gpu_slug).distinct()).all()
        assert sorted(gpus) == ["a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm", "l40s"]
        relu_runs = session.scalars(
            select(Run.latency_ns).join(Workload).where(Workload.external_id == EARLY_RELU_ID).order_by(Run.latency_ns)
        ).all()
        assert relu_runs == [25100, 28300, 29800]  # published means: L40S babel, L40S modal, A100 40GB
        assert session.scalar(select(Protocol.family)) == "kernelbench_baseline"
        assert sorted(session.scalars(select(Implementation.name))) == [
            "pytorch-eager",
            "torch-compile-inductor-default",
        ]


def test_ingest_slice_twice_writes_nothing_the_second_time(db, snapshot):
    first = run_ingest(db, snapshot)
    with db.sessions() as session:
        before = store_state(session)
    second = run_ingest(db, snapshot)
    with db.sessions() as session:
        after = store_state(session)
    assert first.wrote_records and not second.wrote_records
    assert "added" not in second.counts and "updated" not in second.counts
    assert second.counts["unchanged"]["run"] == TIMED_ENTRIES
    assert after == before


def test_live_mode_through_local_hosts_stores_what_the_snapshot_stores(db, snapshot):
    transport = github.snapshot_transport(snapshot, "ScalingIntelligence", "KernelBench")
    seen: dict[str, list[str | None]] = {"api": [], "raw": []}

    def recording(role: str, host: str) -> Any:
        app = transport_app(transport, host)

        async def record(scope: dict[str, Any], receive: Any, send: Any) -> None:
            headers = dict(scope["headers"])
            authorization = headers.get(b"authorization")
            seen[role].append(authorization.decode() if authorization else None)
            await app(scope, receive, send)

        return record

    api_host, raw_host = httpx.URL(github.SNAPSHOT_API).host, httpx.URL(github.SNAPSHOT_RAW).host
    with serving(recording("api", api_host)) as api_url, serving(recording("raw", raw_host)) as raw_url:
        settings = Settings(database_url=db.url, github_token="test-token")
        live = ingest(db.sessions, settings, "kernelbench", options={"api_url": api_url, "raw_url": raw_url})
    assert live.counts["added"]["run"] == TIMED_ENTRIES
    assert seen["api"] and set(seen["api"]) == {"Bearer test-token"}
    assert seen["raw"] and set(seen["raw"]) == {None}  # the token never goes to the raw host
    with db.sessions() as session:
        report = session.get_one(IngestionReport, live.report_id)
        assert report.origin == f"{api_url}/repos/ScalingIntelligence/KernelBench"
    # The snapshot, read after the live hosts, finds every record identical: same names, same digests.
    from_snapshot = run_ingest(db, snapshot)
    assert "added" not in from_snapshot.counts and "updated" not in from_snapshot.counts
    assert from_snapshot.counts["unchanged"]["workload"] == WORKLOADS


def test_a_revised_timing_file_is_a_new_measurement_and_an_unchanged_one_is_read_once(db, snapshot):
    # At 1f8d20f the repository still holds A100_modal's file unchanged, and a corrected L40S_modal one.
    for path in (A100, "results/timing/L40S_modal/baseline_time_torch.json"):
        (snapshot / "files" / LATE / path).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / "files" / LATE / path).write_bytes((snapshot / "files" / EARLY / path).read_bytes())
    edit_timing_file(
        snapshot,
        LATE,
        "results/timing/L40S_modal/baseline_time_torch.json",
        lambda data: data["level1"]["19_ReLU.py"].update(mean=0.0161),
    )
    summary = run_ingest(db, snapshot)
    counts = runs_by_file(db)
    assert f"{A100}@{LATE[:7]}" not in counts  # same content: the figures of 47f78d7, read once
    # The corrected file measured 1f8d20f's (revised) problems: three entries, three runs, kept beside the first.
    assert counts["results/timing/L40S_modal/baseline_time_torch.json@47f78d7"] == 3
    assert counts["results/timing/L40S_modal/baseline_time_torch.json@1f8d20f"] == 3
    assert summary.counts["added"]["run"] == TIMED_ENTRIES + 3


def test_another_trial_count_is_another_protocol(db, snapshot):
    edit_timing_file(snapshot, LATE, H100, lambda data: data["level1"]["19_ReLU.py"].update(num_trials=50))
    run_ingest(db, snapshot)
    with db.sessions() as session:
        protocols = {
            p.name: json.loads(p.manifest_json)["spec"]["measurement"]["trials"]
            for p in session.scalars(select(Protocol))
        }
    assert protocols == {"kernelbench-baseline-timing": 100, "kernelbench-baseline-timing-50-trials": 50}


# --- Bad input, reported per file, never half-written -----------------------------------


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param(b'{"level1": {"19_ReLU.py": ', "not valid JSON", id="truncated"),
        pytest.param(b'{"level1": {"19_ReLU.py": {"mean": NaN}}}', "not valid JSON", id="nan-literal"),
        pytest.param(b"[1, 2, 3]", "expected an object of levels", id="a-list"),
        pytest.param(b'{"leve11": {}}', "is not a level", id="not-a-level"),
        pytest.param(b'{"level1": {"../secrets.py": null}}', "is not a problem file name", id="odd-problem-name"),
    ],
)
def test_a_timing_file_that_is_not_as_published_is_refused_whole(db, snapshot, body, reason):
    (snapshot / "files" / LATE / H100).write_bytes(body)
    summary = run_ingest(db, snapshot)
    assert summary.status == "partial"
    failed = [line for line in summary.errors if H100 in line]
    assert len(failed) == 1 and reason in failed[0] and LATE[:12] in failed[0]
    assert f"{github.SNAPSHOT_RAW}ScalingIntelligence/KernelBench/{LATE}/{H100}: " in failed[0]
    assert "nothing from this file was stored" in failed[0]
    counts = runs_by_file(db)
    assert f"{H100}@{LATE[:7]}" not in counts
    assert counts[f"{A100}@{EARLY[:7]}"] == 6


def test_a_failed_timing_file_marks_nothing_missing_upstream(db, snapshot):
    run_ingest(db, snapshot)
    (snapshot / "files" / LATE / H100).write_bytes(b"not json")
    summary = run_ingest(db, snapshot)
    assert summary.status == "partial"
    assert summary.counts["flags"].get("missing_upstream", 0) == 0
    with db.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Run).where(Run.missing_since.is_not(None))) == 0


def test_unknown_gpu_names_are_skipped_and_named_once_per_file(db, snapshot):
    def rename(data: dict[str, Any]) -> None:
        data["level1"]["19_ReLU.py"]["hardware"] = "NVIDIA H800"
        data["level1"]["13_Matmul_for_symmetric_matrices.py"]["hardware"] = "NVIDIA H800"

    edit_timing_file(snapshot, LATE, H100, rename)
    summary = run_ingest(db, snapshot)
    assert summary.counts["skipped"]["unknown_gpu"] == 2
    named = [line for line in summary.errors if "NVIDIA H800" in line]
    assert named == [
        f"warning: {H100} at {LATE[:12]}: unknown GPU name(s) 'NVIDIA H800' (2); those entries were skipped"
    ]
    assert summary.status == "succeeded"
    assert runs_by_file(db)[f"{H100}@{LATE[:7]}"] == 4  # the file's other entries are stored


def test_unknown_entry_fields_are_kept_aside_and_reported_as_drift(db, snapshot):
    edit_timing_file(snapshot, LATE, H100, lambda data: data["level1"]["19_ReLU.py"].update(median=0.0291))
    summary = run_ingest(db, snapshot)
    assert summary.status == "succeeded"
    assert summary.drift == ["timing entry.median"]
    assert runs_by_file(db)[f"{H100}@{LATE[:7]}"] == 6


def test_zero_or_negative_times_are_skipped(db, snapshot):
    edit_timing_file(snapshot, LATE, H100, lambda data: data["level1"]["19_ReLU.py"].update(min=0.0))
    summary = run_ingest(db, snapshot)
    assert summary.counts["skipped"]["latency_out_of_range"] == 1
    assert any("level1/19_ReLU.py" in line and "zero, negative" in line for line in summary.errors)
    assert runs_by_file(db)[f"{H100}@{LATE[:7]}"] == 5


@pytest.mark.parametrize(
    ("change", "reason", "sentence"),
    [
        ({"mean": 1e308}, "out_of_range", "mean is 1e+308, outside 1 ns to 1 hour"),
        ({"max": True}, "wrong_type", "max is true, a boolean, not a number"),
        ({"mean": "0.5"}, "wrong_type", "mean is the text '0.5', not a number"),
    ],
)
def test_an_entry_that_is_no_time_is_refused_alone(db, snapshot, change, reason, sentence):
    run_ingest(db, snapshot)
    before = stored_runs(db)
    edit_timing_file(snapshot, LATE, H100, lambda data: data["level1"]["19_ReLU.py"].update(change))
    summary = run_ingest(db, snapshot)
    assert summary.status == "succeeded"
    assert summary.counts["refused"] == {reason: 1}
    assert any(
        line.startswith(f"warning: {H100} at {LATE[:12]}: level1/19_ReLU.py: refused: {sentence}")
        for line in summary.errors
    )
    after = stored_runs(db)
    assert {name: after[name] for name in before} == before  # every stored figure as it was
    # The edited file is a new version of it: its other entries are stored, the refused one is not.
    added = set(after) - set(before)
    assert len(added) == 5 and not any("-l1-19-" in name for name in added)


def test_unknown_mode_and_retired_folder(db, snapshot):
    extra = snapshot / "files" / LATE / "results/timing/H100_Modal/baseline_time_torch_compile_tensorrt.json"
    extra.write_bytes((snapshot / "files" / LATE / H100).read_bytes())
    retired = snapshot / "files" / LATE / "results/timing/old/baseline_time_torch.json"
    retired.parent.mkdir(parents=True)
    retired.write_bytes(b"not even json")
    summary = run_ingest(db, snapshot)
    assert [line for line in summary.errors if "tensorrt" in line] == [
        f"results/timing/H100_Modal/baseline_time_torch_compile_tensorrt.json at {LATE[:12]}: "
        "unknown mode 'torch_compile_tensorrt'; the file was skipped"
    ]
    assert not any("results/timing/old" in line for line in summary.errors)
    assert summary.counts["added"]["run"] == TIMED_ENTRIES


def test_a_setup_folder_with_control_characters_is_skipped(db, snapshot):
    odd = snapshot / "files" / LATE / "results/timing/H100\tModal/baseline_time_torch.json"
    odd.parent.mkdir(parents=True)
    odd.write_bytes((snapshot / "files" / LATE / H100).read_bytes())
    summary = run_ingest(db, snapshot)
    assert [line for line in summary.errors if "control characters" in line] == [
        f"'results/timing/H100\\tModal/baseline_time_torch.json' at {LATE[:12]}: the folder name holds "
        "control characters; the file was skipped"
    ]
    assert summary.counts["added"]["run"] == TIMED_ENTRIES


@pytest.mark.parametrize("status", [404, 500])
def test_api_host_failing_to_list_branches_fails_the_ingest_and_writes_nothing(db, snapshot, monkeypatch, status):
    misbehave(monkeypatch, github.SNAPSHOT_API, "/branches", httpx.Response(status))
    summary = run_ingest(db, snapshot)
    assert summary.status == "failed"
    assert len(summary.errors) == 1 and f"HTTP {status}" in summary.errors[0]
    with db.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Workload)) == 0


@pytest.mark.parametrize("status", [404, 500])
def test_api_host_failing_on_one_tree_skips_that_commit_only(db, snapshot, monkeypatch, status):
    hits = misbehave(monkeypatch, github.SNAPSHOT_API, f"/git/trees/{LATE}", httpx.Response(status))
    summary = run_ingest(db, snapshot)
    assert hits
    assert summary.status == "partial"
    about_late = [line for line in summary.errors if LATE[:12] in line]
    assert len(about_late) == 1 and about_late[0].startswith(f"commit {LATE[:12]}: its file tree could not be read")
    assert f"HTTP {status}" in about_late[0]
    counts = runs_by_file(db)
    assert not any(key.endswith(LATE[:7]) for key in counts)
    assert counts[f"{A100}@{EARLY[:7]}"] == 6


@pytest.mark.parametrize("status", [404, 500])
def test_raw_host_failing_on_a_timing_file_skips_that_file_only(db, snapshot, monkeypatch, status):
    misbehave(monkeypatch, github.SNAPSHOT_RAW, f"/{LATE}/{H100}", httpx.Response(status))
    summary = run_ingest(db, snapshot)
    assert summary.status == "partial"
    failed = [line for line in summary.errors if H100 in line]
    assert len(failed) == 1 and f"HTTP {status}" in failed[0] and LATE in failed[0]
    counts = runs_by_file(db)
    assert f"{H100}@{LATE[:7]}" not in counts
    assert counts[f"results/timing/H100_Modal/baseline_time_torch_compile_inductor_default.json@{LATE[:7]}"] == 2


@pytest.mark.parametrize("status", [404, 500])
def test_raw_host_failing_on_a_problem_file_skips_that_problem_only(db, snapshot, monkeypatch, status):
    misbehave(monkeypatch, github.SNAPSHOT_RAW, f"/{LATE}/{RELU}", httpx.Response(status))
    summary = run_ingest(db, snapshot)
    assert summary.status == "partial"
    failed = [line for line in summary.errors if RELU in line]
    assert len(failed) == 1 and f"HTTP {status}" in failed[0] and LATE in failed[0]
    # Eager and inductor-default timed the revised 19_ReLU.py at 1f8d20f: neither is stored.
    assert summary.counts["skipped"]["problem_unreadable"] == 2
    assert summary.counts["added"]["workload"] == WORKLOADS - 1
    assert summary.counts["added"]["run"] == TIMED_ENTRIES - 2
    with db.sessions() as session:
        assert session.scalars(select(Workload.external_id).where(Workload.external_id.like("level1/19@%"))).all() == [
            EARLY_RELU_ID
        ]


def test_an_unreadable_problem_file_marks_nothing_missing_upstream(db, snapshot, monkeypatch):
    run_ingest(db, snapshot)
    misbehave(monkeypatch, github.SNAPSHOT_RAW, f"/{LATE}/{RELU}", httpx.Response(404))
    summary = run_ingest(db, snapshot)
    assert summary.status == "partial"
    with db.sessions() as session:
        assert (
            session.scalar(select(func.count()).select_from(Workload).where(Workload.missing_since.is_not(None))) == 0
        )
        assert session.scalar(select(func.count()).select_from(Run).where(Run.missing_since.is_not(None))) == 0


def test_timing_content_that_differs_from_the_tree_is_refused(db, snapshot, monkeypatch):
    misbehave(monkeypatch, github.SNAPSHOT_RAW, f"/{LATE}/{H100}", httpx.Response(200, content=b"{}"))
    summary = run_ingest(db, snapshot)
    assert [line for line in summary.errors if H100 in line] == [
        f"{H100} at {LATE[:12]}: {github.SNAPSHOT_RAW}ScalingIntelligence/KernelBench/{LATE}/{H100}: the raw host "
        "served other content than the tree lists; nothing from this file was stored"
    ]
    assert f"{H100}@{LATE[:7]}" not in runs_by_file(db)


def test_problem_content_that_differs_from_the_tree_is_refused(db, snapshot, monkeypatch):
    real = (snapshot / "files" / LATE / RELU).read_bytes()
    misbehave(monkeypatch, github.SNAPSHOT_RAW, f"/{LATE}/{RELU}", httpx.Response(200, content=real + b"\n# edited"))
    summary = run_ingest(db, snapshot)
    assert any(RELU in line and "other content than the tree lists" in line for line in summary.errors)
    assert summary.counts["skipped"]["problem_unreadable"] == 2


def test_a_problem_file_that_cannot_be_kept_fails_its_unit_only(db, snapshot):
    (snapshot / "files" / LATE / RELU).write_bytes(b"\xff\xfe not utf-8")
    summary = run_ingest(db, snapshot)
    assert summary.counts["units"]["failed"] == 1
    assert any(RELU in line and "not UTF-8" in line for line in summary.errors)
    assert summary.counts["added"]["workload"] == WORKLOADS - 1


def test_a_problem_file_that_is_not_python_is_kept_without_inputs_and_a_warning(db, snapshot):
    (snapshot / "files" / LATE / RELU).write_text("def get_inputs(:\n")
    summary = run_ingest(db, snapshot)
    assert summary.counts["added"]["workload"] == WORKLOADS
    warned = [line for line in summary.errors if line.startswith("warning:") and RELU in line]
    assert len(warned) == 1 and "its constants and inputs are not listed" in warned[0]
    with db.sessions() as session:
        text = session.scalar(
            select(Workload.manifest_json).where(
                Workload.external_id.like("level1/19@%"), Workload.external_id != EARLY_RELU_ID
            )
        )
    definition = json.loads(text)["spec"]["definition"]
    assert definition["inputs"] == {} and definition["axes"] == {}
    assert definition["reference"]["code"] == "def get_inputs(:\n"


# --- The full bundled snapshot -----------------------------------------------------------


def test_full_bundled_snapshot(tmp_path):
    """Once, on SQLite: the figures of README.md (and the snapshot README's data facts) come out of a full ingest."""
    url = f"sqlite:///{tmp_path / 'kernelbench.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    summary = ingest(sessions, Settings(database_url=url), "kernelbench", snapshot=SOURCES["kernelbench"].bundled)
    assert SOURCES["kernelbench"].bundled == BUNDLED_DATA / "kernelbench"
    assert summary.counts["skipped"] == {"not_measured": 403, "problem_missing": 22}
    assert summary.counts["added"] == {
        "environment": 16,
        "implementation": 6,
        "protocol": 1,
        "run": 10_165 - 22,
        "workload": 521,
    }
    assert summary.status == "succeeded"
    assert len(summary.errors) == 2 and all(
        line.startswith("warning:") and "level5/" in line for line in summary.errors
    )
    with sessions() as session:
        assert len(session.scalars(select(Environment.gpu_slug).distinct()).all()) == 12
        per_workload = (
            select(Workload.external_id, func.count(func.distinct(Environment.gpu_slug)).label("gpus"))
            .join(Run, Run.workload_id == Workload.id)
            .join(Environment, Run.environment_id == Environment.id)
            .group_by(Workload.external_id)
        )
        gpus = dict(session.execute(per_workload).all())
    engine.dispose()
    assert gpus[EARLY_RELU_ID] >= 8
    assert sum(1 for count in gpus.values() if count >= 10) == 250


def test_the_ingest_marks_the_current_relu_and_titles_both_revisions_by_their_sizes(db, snapshot):
    run_ingest(db, snapshot)
    with db.sessions() as session:
        relu = {
            w.external_id: (w.title, w.superseded_by_id, w.id)
            for w in session.scalars(select(Workload).where(Workload.external_id.startswith("level1/19@")))
        }
        early, late = relu[EARLY_RELU_ID], relu["level1/19@cbbfc9409662168e"]
        # The July 2025 revision is the current one: the early one names it.
        assert (early[1], late[1]) == (late[2], None)
        assert early[0] != late[0] and early[0].startswith("ReLU (") and late[0].startswith("ReLU (")
        # Search shows and finds them by those titles, the current revision first.
        names = dict(
            session.execute(select(Workload.id, Workload.name).where(Workload.id.in_([early[2], late[2]]))).all()
        )
        found = [hit for hit in search(session, "relu", kinds={"workload"}).hits if hit.slug in names.values()]
        assert [(hit.slug, hit.title) for hit in found] == [(names[late[2]], late[0]), (names[early[2]], early[0])]
