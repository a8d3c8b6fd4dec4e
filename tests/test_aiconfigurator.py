"""The AIConfigurator adapter: Parquet tables as sweep workloads, on real rows of the bundled slice
and on small tables written here, each family of trouble reported and never half-written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import func, select

from kernelindex.db.regression_tables import RegressionNoise, VersionRegression
from kernelindex.db.tables import Environment, Implementation, IngestionReport, Run, Workload
from kernelindex.ingest.aiconfigurator import SYSTEMS
from kernelindex.ingest.sources import SOURCES, ingest
from kernelindex.settings import Settings

BUNDLED = SOURCES["aiconfigurator"].bundled
SLICE_ROWS = 33_125
DSV3 = {
    "moe_dtype": "fp8_block",
    "hidden_size": 7168,
    "inter_size": 2048,
    "topk": 8,
    "num_experts": 256,
    "distribution": "balanced",
}


def run_ingest(db: Any, **options: str) -> Any:
    return ingest(db.sessions, Settings(database_url=db.url), "aiconfigurator", options=options)


def moe_rows(framework: str, version: str, kernel: str, latencies: dict[int, float], **config: Any) -> list[dict]:
    base = {"op_name": "moe", **DSV3, "moe_tp_size": 1, "moe_ep_size": 8, **config}
    return [
        {
            "framework": framework,
            "version": version,
            "device": "NVIDIA H200",
            "kernel_source": kernel,
            **base,
            "num_tokens": tokens,
            "latency": latency,
        }
        for tokens, latency in latencies.items()
    ]


def write_table(root: Path, relative: str, rows: list[dict] | pa.Table) -> Path:
    path = root / "data" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows), path)
    return path


@pytest.fixture
def tables(tmp_path: Path) -> Path:
    """Two frameworks' MoE tables on the H200, and a GEMM table on the B200."""
    root = tmp_path / "aic"
    write_table(
        root,
        "h200_sxm/moe/vllm/0.24.0/moe_perf.parquet",
        moe_rows("VLLM", "0.24.0", "vllm_fused_moe", {1: 0.05, 4096: 0.4}),
    )
    write_table(
        root,
        "h200_sxm/moe/sglang/0.5.14/moe_perf.parquet",
        moe_rows("SGLang", "0.5.14", "sglang_fused_moe_triton", {1: 0.06, 2048: 0.3, 4096: 0.5}),
    )
    write_table(
        root,
        "b200_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.parquet",
        [
            {
                "framework": "TRTLLM",
                "version": "1.3.0rc20",
                "device": "NVIDIA B200",
                "op_name": "gemm",
                "kernel_source": "torch.nn.functional.linear",
                "gemm_dtype": "bfloat16",
                "m": m,
                "n": 4096,
                "k": 4096.0,  # a whole float is the count it names: one case with the integer
                "latency": 0.01 * m,
            }
            for m in (1, 2, 8)
        ],
    )
    return root


def test_a_workload_is_a_table_at_one_configuration_over_its_sweep(db: Any, tables: Path) -> None:
    summary = run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    assert summary.status == "succeeded", summary.errors
    assert summary.counts["rows"] == {"read": 8, "mapped": 8, "not_mapped": 0}
    with db.sessions() as session:
        workloads = {w.title: w for w in session.scalars(select(Workload))}
        assert set(workloads) == {
            "MoE layer fp8_block: hidden 7168, inter 2048, top-8 of 256 experts, TP 1, EP 8, balanced",
            "GEMM bfloat16 N=4096 K=4096",
        }
        moe = next(w for w in workloads.values() if w.title.startswith("MoE"))
        assert moe.case_count == 3  # 1, 2048 and 4096 tokens: the union of both sweeps
        runs = session.scalars(select(Run).where(Run.workload_id == moe.id)).all()
        titles = {session.get(Implementation, run.implementation_id).name for run in runs}
        assert len(runs) == 2 and len(titles) == 2
        # One comparison group for both frameworks on the H200: they rank side by side.
        assert len({run.comparison_key for run in runs}) == 1
        vllm = next(run for run in runs if '"framework":"vLLM"' in run.manifest_json)
        by_case = {
            r["caseIndex"]: r["latencyNs"]["mean"] for r in json.loads(vllm.manifest_json)["spec"]["caseResults"]
        }
        assert by_case == {0: 50_000, 2: 400_000}  # it did not measure 2048 tokens
        gemm = next(w for w in workloads.values() if w.title.startswith("GEMM"))
        assert gemm.case_count == 3
        assert "k" in json.loads(gemm.manifest_json)["spec"]["definition"]["axes"]
        gpus = set(session.scalars(select(Environment.gpu_product)))
        assert gpus == {"NVIDIA H200", "NVIDIA B200"}


def test_each_framework_version_is_an_implementation_of_its_own(db: Any, tables: Path) -> None:
    run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    with db.sessions() as session:
        titles = set(session.scalars(select(Implementation.name)))
        manifests = [json.loads(text) for text in session.scalars(select(Implementation.manifest_json))]
    assert {m["metadata"]["title"] for m in manifests} == {
        "vLLM 0.24.0 · vllm_fused_moe",
        "SGLang 0.5.14 · sglang_fused_moe_triton",
        "TensorRT-LLM 1.3.0rc20 · torch.nn.functional.linear",
    }
    assert len(titles) == 3


def test_the_case_figures_are_the_rows_latencies(db: Any, tables: Path) -> None:
    run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    with db.sessions() as session:
        run = session.scalars(select(Run).where(Run.name.like("aic-moe-%"))).all()
        sglang = next(r for r in run if "SGLang" in r.manifest_json)
        spec = json.loads(sglang.manifest_json)["spec"]
    assert [r["latencyNs"]["mean"] for r in spec["caseResults"]] == [60_000, 300_000, 500_000]
    assert spec["timing"]["primaryStatistic"] == "geomean"
    assert spec["sourceNative"]["metrics"]["framework"] == "SGLang"
    assert spec["sourceNative"]["metrics"]["cases_measured"] == 3


def test_a_second_ingest_of_the_same_files_writes_nothing(db: Any, tables: Path) -> None:
    first = run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    second = run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    assert first.wrote_records and not second.wrote_records
    assert second.counts["rows"] == {"unchanged": 8}
    assert second.counts["units"] == {"listed": 0}


def test_a_newer_version_adds_only_what_changed(db: Any, tables: Path) -> None:
    run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    write_table(
        tables,
        "h200_sxm/moe/vllm/0.26.0/moe_perf.parquet",
        moe_rows("VLLM", "0.26.0", "vllm_fused_moe", {1: 0.05, 4096: 0.45}),
    )
    summary = run_ingest(db, data_dir=str(tables), data_version="0.13.0")
    assert summary.status == "succeeded", summary.errors
    assert summary.counts["added"] == {"implementation": 1, "run": 1}
    assert summary.counts["rows"]["read"] == 2 and summary.counts["rows"]["unchanged"] == 8
    with db.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Run).where(Run.missing_since.is_not(None))) == 0


def test_rows_without_a_latency_are_skipped_and_named(db: Any, tables: Path) -> None:
    rows = moe_rows("VLLM", "0.22.0", "vllm_fused_moe", {1: 0.05, 8: -1.0, 16: 0.07})
    rows.append({**rows[0], "num_tokens": 32, "latency": None})
    write_table(tables, "h200_sxm/moe/vllm/0.22.0/moe_perf.parquet", rows)
    summary = run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    assert summary.status == "succeeded"
    assert summary.counts["skipped"]["latency_missing_or_not_positive"] == 2
    assert any(
        "h200_sxm/moe/vllm/0.22.0/moe_perf.parquet: 2 rows without a positive latency" in e for e in summary.errors
    )
    assert summary.counts["rows"]["read"] == summary.counts["rows"]["mapped"] + summary.counts["rows"]["not_mapped"]


@pytest.mark.parametrize(
    ("latencies", "reason", "named"),
    [
        ([0.05, 1e308, 0.07], "out_of_range", "row 2: refused: latency is 1e+308, outside 1 ns to 1 hour"),
        ([0.05, float("nan"), float("inf")], "not_finite", "row 2 and 1 more: refused: latency is nan, not a finite"),
        (pa.array(["0.05", "0.06", "0.07"]), "wrong_type", "refused: the column latency holds string, not numbers"),
    ],
)
def test_a_latency_that_is_no_time_is_refused_and_earlier_figures_kept(
    db: Any, tables: Path, latencies: Any, reason: str, named: str
) -> None:
    relative = "h200_sxm/moe/vllm/0.24.0/moe_perf.parquet"
    run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    with db.sessions() as session:
        before = sorted(session.execute(select(Run.name, Run.digest)).all())
    rows = moe_rows("VLLM", "0.24.0", "vllm_fused_moe", {1: 0.05, 8: 0.06, 16: 0.07})
    table = pa.Table.from_pylist(rows)
    column = latencies if isinstance(latencies, pa.Array) else pa.array(latencies, pa.float64())
    write_table(tables, relative, table.set_column(table.column_names.index("latency"), "latency", column))
    summary = run_ingest(db, data_dir=str(tables), data_version="0.12.0")

    refused = summary.counts["refused"]
    assert list(refused) == [reason] and refused[reason] == (
        3 if reason == "wrong_type" else 1 + (reason == "not_finite")
    )
    assert any(line.startswith(f"warning: {relative}") and named in line for line in summary.errors), summary.errors
    assert summary.counts["rows"]["read"] == summary.counts["rows"]["mapped"] + summary.counts["rows"]["not_mapped"]
    with db.sessions() as session:
        after = dict(session.execute(select(Run.name, Run.digest)).all())
        latencies_ns = [
            result["latencyNs"]["mean"]
            for manifest in session.scalars(select(Run.manifest_json))
            for result in json.loads(manifest)["spec"]["caseResults"]
        ]
    assert all(0 < value <= 3_600 * 10**9 for value in latencies_ns)
    # The SGLang run, in a file the bad one does not touch, is as it was.
    assert {name: digest for name, digest in before if "sglang" in name}.items() <= after.items()


def test_a_device_that_contradicts_its_folder_is_reported_not_relabelled(db: Any, tables: Path) -> None:
    rows = moe_rows("VLLM", "0.22.0", "vllm_fused_moe", {1: 0.05, 8: 0.06})
    rows[1]["device"] = "NVIDIA H100"
    write_table(tables, "h200_sxm/moe/vllm/0.22.0/moe_perf.parquet", rows)
    summary = run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    assert summary.counts["skipped"]["device_contradicts_folder"] == 1
    assert any("'NVIDIA H100', not the folder's NVIDIA H200" in line for line in summary.errors)
    with db.sessions() as session:
        assert "NVIDIA H100" not in set(session.scalars(select(Environment.gpu_product)))


def test_a_table_the_adapter_cannot_map_is_counted_not_dropped(db: Any, tables: Path) -> None:
    write_table(
        tables,
        "h200_sxm/comm/trtllm/1.3.0rc20/wideep_deepep_ll_perf.parquet",
        [
            {
                "framework": "TRTLLM",
                "version": "1.3.0rc20",
                "device": "NVIDIA H200",
                "op_name": "deepep",
                "kernel_source": "deepep",
                "num_token": 8,
                "dispatch_avg_t_us": 3.0,
                "combine_avg_t_us": 4.0,
            }
        ],
    )
    # A missing column (no kernel_source) is a schema of its own, reported the same way.
    write_table(
        tables,
        "h200_sxm/gemm/vllm/0.24.0/gemm_perf.parquet",
        [
            {
                "framework": "VLLM",
                "version": "0.24.0",
                "device": "NVIDIA H200",
                "op_name": "gemm",
                "m": 1,
                "n": 2,
                "k": 3,
                "gemm_dtype": "fp8",
                "latency": 0.01,
            }
        ],
    )
    summary = run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    assert summary.status == "succeeded"
    assert summary.counts["skipped"]["unmapped_schema.wideep_deepep_ll_perf"] == 1
    assert summary.counts["skipped"]["unmapped_schema.gemm_perf"] == 1
    assert summary.counts["rows"] == {"read": 10, "mapped": 8, "not_mapped": 2}
    assert any("no latency column (its times are per phase" in line for line in summary.errors)
    assert any("no kernel_source column" in line for line in summary.errors)


def test_an_unreadable_file_is_named_and_the_others_are_kept(db: Any, tables: Path) -> None:
    broken = tables / "data/h200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"PAR1 not really")
    summary = run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    assert summary.status == "partial"
    assert any(
        "h200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet: not a readable Parquet table" in e for e in summary.errors
    )
    with db.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Workload)) == 2
        assert session.scalar(select(func.count()).select_from(Run)) == 3
    # It was not recorded as stored: once fixed, it is read.
    write_table(
        tables,
        "h200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet",
        moe_rows("TRTLLM", "1.3.0rc20", "moe_torch_flow_cutlass", {1: 0.04}),
    )
    again = run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    assert again.status == "succeeded" and again.counts["added"]["run"] == 1


def test_the_bundled_slice_holds_every_system_and_the_deepseek_layer(db: Any) -> None:
    summary = ingest(db.sessions, Settings(database_url=db.url), "aiconfigurator", snapshot=BUNDLED)
    assert summary.status == "succeeded", summary.errors
    assert summary.counts["rows"]["read"] == SLICE_ROWS
    assert summary.counts["rows"]["mapped"] + summary.counts["rows"]["not_mapped"] == SLICE_ROWS
    with db.sessions() as session:
        products = set(session.scalars(select(Environment.gpu_product)))
        assert products == {system.gpu.product for system in SYSTEMS.values()}
        report = session.scalars(select(IngestionReport)).one()
        assert report.read_from == "bundled" and (report.snapshot_scope or "").startswith(
            "partial: 33,125 of the 12,586,413"
        )
        layers = [
            w
            for w in session.scalars(select(Workload).where(Workload.title.like("MoE layer fp8_block: hidden 7168%")))
            if "top-8 of 256 experts" in w.title and "balanced" in w.title
        ]
        # One workload per parallelism setting.
        assert len(layers) == len({w.title for w in layers}) >= 4
        ep8 = next(w for w in layers if w.title.endswith("TP 1, EP 8, balanced"))
        frameworks = {
            json.loads(text)["spec"]["sourceNative"]["metrics"]["framework"]
            for text, product in session.execute(
                select(Run.manifest_json, Environment.gpu_product)
                .join(Environment, Run.environment_id == Environment.id)
                .where(Run.workload_id == ep8.id)
            )
            if product == "NVIDIA H200"
        }
    assert frameworks == {"TensorRT-LLM", "SGLang", "vLLM"}


def test_the_slice_names_the_package_version_it_was_cut_from(db: Any, tmp_path: Path) -> None:
    copy = shutil.copytree(BUNDLED, tmp_path / "slice")
    (copy / "MANIFEST.sha256").unlink()
    summary = run_ingest(db, data_dir=str(copy))
    with db.sessions() as session:
        report = session.get(IngestionReport, summary.report_id)
        assert report is not None and report.origin.startswith("aiconfigurator-core 0.12.0 ")


def test_the_ingest_finds_version_regressions_in_what_it_wrote(db: Any, tables: Path) -> None:
    write_table(
        tables,
        "h200_sxm/moe/vllm/0.26.0/moe_perf.parquet",
        moe_rows("VLLM", "0.26.0", "vllm_fused_moe", {1: 0.05, 4096: 0.8}),  # twice as slow at 4096 tokens
    )
    summary = run_ingest(db, data_dir=str(tables), data_version="0.12.0")
    assert summary.counts["regressions"] == {"found": 1}
    with db.sessions() as session:
        found = session.execute(select(VersionRegression)).scalars().all()
    assert len(found) == 1
    # Nothing written, nothing recomputed.
    assert "regressions" not in run_ingest(db, data_dir=str(tables), data_version="0.12.0").counts


def test_an_ingest_that_writes_most_of_the_source_estimates_the_noise_again(db: Any, tmp_path: Path) -> None:
    root = tmp_path / "growing"

    def repeated(ep_size: int, spread: float) -> list[dict]:
        points = range(1, 41)
        first = moe_rows("VLLM", "0.24.0", "vllm_fused_moe", {tokens: 0.1 for tokens in points}, moe_ep_size=ep_size)
        again = moe_rows(
            "VLLM", "0.24.0", "vllm_fused_moe", {tokens: 0.1 * (1 + spread) for tokens in points}, moe_ep_size=ep_size
        )
        return first + again

    write_table(root, "h200_sxm/moe/vllm/0.24.0/moe_perf.parquet", repeated(8, 0.02))
    run_ingest(db, data_dir=str(root), data_version="0.12.0")
    # Two new workloads beside the first: most of the source is new, so its noise is estimated again.
    write_table(
        root, "h200_sxm/moe/vllm/0.24.0/moe_perf.parquet", repeated(8, 0.02) + repeated(4, 0.04) + repeated(2, 0.04)
    )
    summary = run_ingest(db, data_dir=str(root), data_version="0.12.0")
    assert summary.counts["added"]["workload"] == 2
    with db.sessions() as session:
        noise = session.scalars(select(RegressionNoise)).one()
        spreads = session.execute(select(Run.latency_ns, Run.spread_kind, Run.spread_low_ns, Run.spread_high_ns)).all()
    assert noise.pairs == 120 and abs(noise.bound - 0.04) < 1e-9
    assert noise.basis == "repeats"
    # Estimated from repeats, the noise bounds every figure that has no interval of its own: ± 4 %.
    assert len(spreads) == 3
    for latency, kind, low, high in spreads:
        assert kind == "source-noise"
        assert abs(low - latency * 0.96) <= 2 and abs(high - latency * 1.04) <= 2 and low <= latency * 0.96
    # One new workload beside three: the stored estimate stands.
    write_table(
        root,
        "h200_sxm/moe/vllm/0.24.0/moe_perf.parquet",
        repeated(8, 0.02) + repeated(4, 0.04) + repeated(2, 0.04) + repeated(1, 0.5),
    )
    run_ingest(db, data_dir=str(root), data_version="0.12.0")
    with db.sessions() as session:
        noise = session.scalars(select(RegressionNoise)).one()
        kinds = session.scalars(select(Run.spread_kind)).all()
    assert noise.pairs == 120
    # The new workload's runs take the stored estimate too.
    assert kinds == ["source-noise"] * 4


def test_a_point_measured_twice_keeps_its_repeat_and_sets_the_noise(db: Any, tmp_path: Path) -> None:
    root = tmp_path / "repeats"
    first = moe_rows("VLLM", "0.24.0", "vllm_fused_moe", {tokens: 0.1 for tokens in range(1, 41)})
    again = moe_rows("VLLM", "0.24.0", "vllm_fused_moe", {tokens: 0.102 for tokens in range(1, 41)})
    write_table(root, "h200_sxm/moe/vllm/0.24.0/moe_perf.parquet", first + again)
    summary = run_ingest(db, data_dir=str(root), data_version="0.12.0")
    assert summary.counts["anomalies"] == {"repeated_points_first_kept": 40}
    with db.sessions() as session:
        spec = json.loads(session.scalars(select(Run.manifest_json)).one())["spec"]
        noise = session.scalars(select(RegressionNoise)).one()
    assert spec["caseResults"][0] == {
        "caseIndex": 0,
        "latencyNs": {"mean": 100_000},
        "metrics": {"repeated_latency_ns": 102_000},
    }
    assert noise.estimated and noise.pairs == 40 and abs(noise.bound - 0.02) < 1e-9
    assert "40 cases the source measured twice" in noise.method
