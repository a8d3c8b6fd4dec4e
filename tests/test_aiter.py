"""The aiter adapter: tuned-table rows as workloads and runs, on real rows of the bundled snapshot."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from kernelindex import urls
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Environment, Run, Workload
from kernelindex.gpus import amd_gpu_class, gpu_slug
from kernelindex.ingest import github
from kernelindex.ingest.aiter import OWNER, REPO, Aiter
from kernelindex.ingest.github import GitHubApi, GitHubRaw
from kernelindex.ingest.http import Fetcher
from kernelindex.ingest.sources import ingest
from kernelindex.settings import Settings
from kernelindex.store.batch import Batch
from tests.aiter_slice import (
    ASM,
    BATCHED,
    BF16_DSV3,
    BLOCKSCALE,
    BLOCKSCALE_GLM,
    BUNDLED,
    COMMIT,
    FMOE,
    FMOE_DSV4,
    GDN,
    ROWS,
    data_file,
    make_slice,
)
from tests.pages import page, text
from tests.servers import github_serving, serving, transport_app

SHARED_GEMM = "gemm/a8w8_blockscale/M=1,N=3072,K=6144"
SHARED_GEMM_TITLE = "GEMM 1×3072×6144, a8w8 blockscale"
# Skipped in the slice: a bf16 row timed 0, a fused MoE row one field short, three gated-delta-net rows.
SLICE_SKIPPED = {"no_positive_time": 1, "malformed_row": 1, "unmapped_schema": 3}
SLICE_RUNS = ROWS - sum(SLICE_SKIPPED.values())


@pytest.fixture
def aiter_slice(tmp_path: Path) -> Path:
    return make_slice(tmp_path / "aiter-slice")


def adapter_on(root: Path) -> Aiter:
    transport = github.snapshot_transport(root, OWNER, REPO)
    api = httpx.Client(transport=transport, base_url=github.SNAPSHOT_API)
    raw = httpx.Client(transport=transport, base_url=github.SNAPSHOT_RAW)
    return Aiter(
        GitHubApi(Fetcher(api, retries=0), OWNER, REPO), GitHubRaw(Fetcher(raw, retries=0), OWNER, REPO), "snapshot"
    )


def mapped(adapter: Aiter) -> dict[str, Batch]:
    """Every unit's batch, keyed by its workload's identity as the tables write it."""
    batches = (adapter.map(unit, adapter.fetch(unit)) for unit in adapter.discover().units)
    return {identity_of(batch): batch for batch in batches}


def identity_of(batch: Batch) -> str:
    native = batch.workload.spec.source_native
    assert native is not None and native.metrics is not None
    return str(native.metrics["identity"])


def manifests(batch: Batch) -> list[dict[str, Any]]:
    return [record.manifest.to_json() for record in batch.runs]


def products(batch: Batch) -> set[str]:
    return {environment.spec.hardware.product for environment in batch.environments}


def edit(root: Path, path: str, line: int, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in the slice table's ``line`` (the header is line 1)."""
    file = data_file(root, path)
    lines = file.read_text().splitlines(keepends=True)
    assert old in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    file.write_text("".join(lines))


# --- The schema families, mapped ------------------------------------------------------------


def test_one_gemm_shape_tuned_on_two_gpu_classes_is_one_workload_with_two_runs(aiter_slice):
    batch = mapped(adapter_on(aiter_slice))[SHARED_GEMM]

    workload = batch.workload.to_json()
    assert workload["metadata"]["title"] == SHARED_GEMM_TITLE
    assert workload["spec"]["sourceNative"]["externalId"].startswith("gemm/1x3072x6144/")
    assert workload["spec"]["cases"] == [{"axes": {"M": 1, "N": 3072, "K": 6144}}]
    assert workload["spec"]["tags"] == ["model:glm5-1", "op:gemm", "scheme:a8w8", "scheme:blockscale"]
    assert "no runner-up was recorded" in workload["spec"]["definition"]["description"]
    assert products(batch) == {
        "AMD Instinct MI350X/MI355X class: gfx950, 256 CUs",
        "AMD Instinct MI300X class: gfx942, 304 CUs",
    }
    by_file = {run["spec"]["sourceNative"]["benchmark"]: run for run in manifests(batch)}
    general, glm = by_file[BLOCKSCALE], by_file[BLOCKSCALE_GLM]
    # 6.5486 us, to whole nanoseconds.
    assert general["spec"]["timing"] == {"latencyNs": {"mean": 6549}, "primaryStatistic": "mean"}
    metrics = general["spec"]["sourceNative"]["metrics"]
    assert (metrics["libtype"], metrics["splitK"], metrics["kernelId"], metrics["errRatio"]) == ("ck", 3, 7, 0.0007)
    # The slice keeps row 1296 of the table alone: its line there is 2.
    assert metrics["line"] == 2 and metrics["us"] == "6.5486" and metrics["gfx"] == "gfx950"
    assert metrics["kernelName"].startswith("a8w8_blockscale_1x128x128_256x16x128x256")
    # The commit that last changed each table dates its figures.
    assert general["spec"]["observedAt"] == "2026-05-05T18:58:37Z"
    assert glm["spec"]["observedAt"] == "2026-07-08T13:29:53Z"
    assert glm["spec"]["sourceNative"]["metrics"]["model"] == "glm5-1"
    # One kernel won on both GPUs: one implementation, its library stated.
    (implementation,) = batch.implementations
    assert implementation.spec.runtime == "Composable Kernel"
    assert implementation.spec.revision == metrics["kernelName"]


def test_batched_gemm_keeps_its_batch_in_the_shape(aiter_slice):
    batches = mapped(adapter_on(aiter_slice))
    batch = batches["batched_gemm/a8w8/B=16,M=32,N=1280,K=8192"]
    assert batch.workload.metadata.title == "Batched GEMM 16×32×1280×8192 (B×M×N×K), a8w8"
    assert "op:batched-gemm" in batch.workload.spec.tags
    assert products(batch) == {"AMD Instinct MI300X class: gfx942, 304 CUs"}
    (run,) = manifests(batch)
    assert run["spec"]["timing"]["latencyNs"] == {"mean": 68982}
    assert "batched_gemm/a8w8/B=16,M=64,N=1280,K=8192" in batches


def test_a_fused_moe_run_is_its_kernel_pair_with_each_stage_time(aiter_slice):
    moe = {key: batch for key, batch in mapped(adapter_on(aiter_slice)).items() if key.startswith("fused_moe/")}
    # tuned_fmoe.csv's two rows differ only in doweight_stage1: two workloads.
    without_gfx = [batch for batch in moe.values() if batch.runs[0].manifest.spec.source_native.benchmark == FMOE]
    assert len(without_gfx) == 2
    weighted = next(batch for batch in without_gfx if "routing weight in stage 1" in batch.workload.metadata.title)
    assert weighted.workload.metadata.title == (
        "Fused MoE, 4 tokens, model 2304, inter 1536, 8 experts, topk 2, Gelu, bfloat16 "
        "(per_Token, a float8_e4m3fnuz, w float8_e4m3fnuz), routing weight in stage 1"
    )
    assert "op:fused-moe" in weighted.workload.spec.tags and "dtype:float8_e4m3fnuz" in weighted.workload.spec.tags
    # No gfx column: the GPU is what is known of it, never a guessed product.
    assert products(weighted) == {"AMD GPU, gfx unknown, 80 CUs"}
    (run,) = manifests(weighted)
    metrics = run["spec"]["sourceNative"]["metrics"]
    assert (metrics["us1"], metrics["us2"], metrics["us"]) == (17.8008, 14.5115, "32.3123")
    assert (metrics["err1"], metrics["err2"], metrics["block_m"]) == ("0.0%", "0.0%", 32)
    assert metrics["gfx"] == "not recorded" and metrics["cu_num"] == 80
    (implementation,) = weighted.implementations
    assert implementation.spec.revision == (
        "_ZN5aiter56fmoe_stage1_bf16_pertokenFp8_doweight_g1u1_32x64_4tg_pf3E + "
        "moe_ck2stages_gemm2_256x32x64x128_1x4_MulABScaleExpertWeight_v1_Nswizzle0_Quant2_MulRoutedWeight0_F8_F8_B16"
    )
    with_gfx = [batch for batch in moe.values() if batch.runs[0].manifest.spec.source_native.benchmark == FMOE_DSV4]
    assert [products(batch) for batch in with_gfx] == [{"AMD Instinct MI350X/MI355X class: gfx950, 256 CUs"}]
    assert "model:dsv4" in with_gfx[0].workload.spec.tags


def test_rows_without_gfx_or_cu_count_say_what_is_unknown(aiter_slice):
    batch = mapped(adapter_on(aiter_slice))["gemm/a8w8/M=128,N=1280,K=8192,bias=True,outdtype=torch.bfloat16"]
    assert products(batch) == {"AMD GPU, gfx unknown, CU count unknown"}
    assert batch.workload.metadata.title == "GEMM 128×1280×8192, a8w8, out bfloat16, bias"
    (implementation,) = batch.implementations
    assert implementation.spec.runtime == "library not recorded"
    assert implementation.spec.revision == "kernel not named in the table"
    native = batch.runs[0].manifest.spec.source_native
    assert native is not None and native.benchmark == ASM and native.metrics["splitK"] == 0


@pytest.mark.parametrize(
    ("gfx", "cu_num", "product", "slug"),
    [
        ("gfx942", 304, "AMD Instinct MI300X class: gfx942, 304 CUs", "mi300x"),
        ("gfx942", 80, "AMD Instinct MI308X class: gfx942, 80 CUs", "mi308x"),
        ("gfx950", 256, "AMD Instinct MI350X/MI355X class: gfx950, 256 CUs", "mi350x-mi355x"),
        ("gfx1250", 256, "AMD gfx1250, 256 CUs (product not named)", "gfx1250-256cu"),
        (None, 304, "AMD GPU, gfx unknown, 304 CUs", "amd-gfx-unknown-304cu"),
        ("gfx950", None, "AMD GPU, gfx950, CU count unknown", "amd-gfx950-cu-unknown"),
        ("gfx942", 64, "AMD GPU, gfx942, 64 CUs", "amd-gfx942-64cu"),
    ],
)
def test_architecture_and_cu_count_name_a_class_and_nothing_is_guessed(gfx, cu_num, product, slug):
    gpu = amd_gpu_class(gfx, cu_num)
    assert (gpu.product, gpu.slug, gpu_slug("amd", gpu.product)) == (product, slug, slug)


def test_the_protocol_says_the_rows_are_winners_and_what_err_ratio_is(aiter_slice):
    batch = mapped(adapter_on(aiter_slice))[SHARED_GEMM]
    (protocol,) = batch.protocols
    measurement = protocol.spec.measurement
    assert (measurement.warmup_iterations, measurement.timed_iterations) == (2, 101)
    notes = protocol.spec.comparability.notes or ""
    assert "winner of aiter's autotuner" in notes and "no runner-up was recorded" in notes
    assert "share of output elements outside the tuner's tolerance" in notes


# --- Every row accounted for; bad input reported by file ------------------------------------


def test_every_row_is_a_run_or_skipped_by_reason_with_file_and_row_named(aiter_slice):
    adapter = adapter_on(aiter_slice)
    discovery = adapter.discover()
    runs = sum(len(adapter.map(unit, adapter.fetch(unit)).runs) for unit in discovery.units)

    assert dict(discovery.skipped) == SLICE_SKIPPED
    assert runs == SLICE_RUNS and runs + sum(discovery.skipped.values()) == ROWS
    assert discovery.errors == [] and discovery.complete
    raw = f"{github.SNAPSHOT_RAW}{OWNER}/{REPO}/{COMMIT}/"
    too_small = "the time (us) is not a positive finite number of microseconds that rounds to at least 1 ns"
    assert f"{raw}{BF16_DSV3}: row(s) 3 skipped: {too_small}" in discovery.warnings
    assert f"{raw}{FMOE_DSV4}: row(s) 3 skipped: the row has a different number of fields than the header" in (
        discovery.warnings
    )
    assert any(
        warning.startswith(f"{raw}{GDN}: row(s) 2, 3, 4 skipped: the table's schema") for warning in discovery.warnings
    )


def test_a_row_without_a_time_is_skipped_alone(aiter_slice):
    edit(aiter_slice, BATCHED, 2, ",68.9821,", ",,")
    adapter = adapter_on(aiter_slice)
    discovery = adapter.discover()

    assert discovery.skipped["missing_time"] == 1
    assert any(f"{BATCHED}: row(s) 2 skipped: no time (us is empty)" in warning for warning in discovery.warnings)
    identities = set(mapped(adapter))
    assert "batched_gemm/a8w8/B=16,M=32,N=1280,K=8192" not in identities
    assert "batched_gemm/a8w8/B=16,M=64,N=1280,K=8192" in identities


@pytest.mark.parametrize(
    ("old", "value", "reason", "sentence"),
    [
        (",68.9821,", "abc", "wrong_type", "us is 'abc', not a number"),
        (",68.9821,", "NaN", "not_finite", "us is 'NaN', not a finite number"),
        (",68.9821,", "1e999999", "out_of_range", "us is 1E+999999, outside 1 ns to 1 hour"),
        (",68.9821,", "true", "wrong_type", "us is 'true', not a number"),
    ],
)
def test_a_time_that_is_no_figure_refuses_its_row_alone(aiter_slice, old, value, reason, sentence):
    edit(aiter_slice, BATCHED, 2, old, f",{value},")
    adapter = adapter_on(aiter_slice)
    discovery = adapter.discover()

    assert discovery.refused.counts == {reason: 1}
    named = [line for line in discovery.refused.lines() if line.startswith(f"{BATCHED}:2: refused: ")]
    assert len(named) == 1 and sentence in named[0], discovery.refused.lines()
    identities = set(mapped(adapter))
    assert "batched_gemm/a8w8/B=16,M=32,N=1280,K=8192" not in identities
    assert "batched_gemm/a8w8/B=16,M=64,N=1280,K=8192" in identities


def test_a_table_without_a_time_column_is_counted_as_shapes_waiting_to_be_tuned(aiter_slice):
    edit(aiter_slice, BATCHED, 1, ",us,", ",time,")
    discovery = adapter_on(aiter_slice).discover()

    assert discovery.skipped["no_time_column"] == 2 and discovery.errors == []
    assert any(f"{BATCHED}: row(s) 2, 3 skipped: the table has no time column" in line for line in discovery.warnings)


def test_a_table_without_a_required_column_is_one_error_and_none_of_its_rows_is_used(aiter_slice):
    edit(aiter_slice, FMOE, 1, ",q_type,", ",quant,")
    adapter = adapter_on(aiter_slice)
    discovery = adapter.discover()

    (error,) = discovery.errors
    assert error.startswith(f"{FMOE}: a fused moe table without the column(s) q_type")
    assert not discovery.complete
    assert not any(batch.runs[0].manifest.spec.source_native.benchmark == FMOE for batch in mapped(adapter).values())


@pytest.mark.parametrize("content", [b"\xff\xfe\x00M,N", b""])
def test_an_unreadable_table_is_one_error_and_the_others_go_on(aiter_slice, content):
    data_file(aiter_slice, BATCHED).write_bytes(content)
    adapter = adapter_on(aiter_slice)
    discovery = adapter.discover()

    (error,) = discovery.errors
    assert error.startswith(BATCHED) and f"{OWNER}/{REPO}/{COMMIT}/{BATCHED}" in error
    assert not any(unit.startswith("batched_gemm/") for unit in discovery.units)
    assert SHARED_GEMM in mapped(adapter)


# --- Into the store ----------------------------------------------------------------------------


def store_state(sessions) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    with sessions() as session:
        return {
            "workloads": sorted(session.execute(select(Workload.name, Workload.digest, Workload.updated_at)).all()),
            "runs": sorted(session.execute(select(Run.name, Run.digest, Run.updated_at)).all()),
        }


def test_snapshot_ingest_stores_the_slice_and_a_second_ingest_writes_nothing(db, aiter_slice):
    settings = Settings(database_url=db.url)
    first = ingest(db.sessions, settings, "aiter", snapshot=aiter_slice)
    before = store_state(db.sessions)
    second = ingest(db.sessions, settings, "aiter", snapshot=aiter_slice)

    assert first.status == second.status == "succeeded", first.errors
    assert first.counts["skipped"] == SLICE_SKIPPED
    assert first.counts["submissions"]["stored"] + sum(SLICE_SKIPPED.values()) == ROWS
    assert first.counts["added"]["run"] == SLICE_RUNS
    assert not second.wrote_records
    assert store_state(db.sessions) == before
    with db.sessions() as session:
        gpus = set(session.scalars(select(Environment.gpu_slug)))
        assert gpus == {"mi300x", "mi308x", "mi350x-mi355x", "amd-gfx-unknown-80cu", "amd-gfx-unknown-cu-unknown"}
        run = session.scalars(select(Run).where(Run.environment.has(Environment.gpu_slug == "mi300x"))).first()
        assert run is not None and run.primary_statistic == "mean"
        # Rows read, each written as a run or skipped with a reason: none half-written.
        assert session.scalar(select(func.count()).select_from(Run)) == SLICE_RUNS


def test_live_ingest_through_real_hosts_gives_the_same_store(db, aiter_slice):
    settings = Settings(database_url=db.url)
    assert ingest(db.sessions, settings, "aiter", snapshot=aiter_slice).status == "succeeded"
    before = store_state(db.sessions)
    with github_serving(aiter_slice, OWNER, REPO) as (api_url, raw_url):
        live = ingest(db.sessions, settings, "aiter", options={"api_url": api_url, "raw_url": raw_url, "ref": None})
    assert live.status == "succeeded", live.errors
    assert not live.wrote_records
    assert store_state(db.sessions) == before


def test_a_table_the_raw_host_fails_on_is_reported_and_nothing_of_it_is_written(db, aiter_slice):
    snapshot = github.snapshot_transport(aiter_slice, OWNER, REPO)

    def handle(request: httpx.Request) -> httpx.Response:
        failing = request.url.host == httpx.URL(github.SNAPSHOT_RAW).host and request.url.path.endswith(BATCHED)
        return httpx.Response(503) if failing else snapshot.handle_request(request)

    transport = httpx.MockTransport(handle)
    api_host, raw_host = httpx.URL(github.SNAPSHOT_API).host, httpx.URL(github.SNAPSHOT_RAW).host
    with serving(transport_app(transport, api_host)) as api_url, serving(transport_app(transport, raw_host)) as raw_url:
        summary = ingest(
            db.sessions,
            Settings(database_url=db.url, http_retries=0),
            "aiter",
            options={"api_url": api_url, "raw_url": raw_url, "ref": COMMIT},
        )
    assert summary.status == "partial"
    assert any(BATCHED in error and "503" in error for error in summary.errors)
    with db.sessions() as session:
        assert not session.scalars(select(Workload).where(Workload.external_id.startswith("batched_gemm/"))).all()
        assert session.scalars(select(Workload).where(Workload.title == SHARED_GEMM_TITLE)).one()


def test_workload_and_gpu_pages_state_the_class_and_that_no_runner_up_was_recorded(db, aiter_slice, make_app):
    assert ingest(db.sessions, Settings(database_url=db.url), "aiter", snapshot=aiter_slice).status == "succeeded"
    with db.sessions() as session:
        name = session.scalars(select(Workload.name).where(Workload.title == SHARED_GEMM_TITLE)).one()
    with TestClient(make_app(db)) as client:
        workload = text(page(client, urls.workload(name)))
        gpu = text(page(client, urls.gpu("mi300x")))
        unknown = text(page(client, urls.gpu("amd-gfx-unknown-80cu")))
    assert SHARED_GEMM_TITLE in workload
    assert "MI300X class: gfx942, 304 CUs" in workload and "MI350X/MI355X class: gfx950, 256 CUs" in workload
    assert "no runner-up was recorded" in workload
    assert "MI300X class: gfx942, 304 CUs" in gpu
    assert "gfx unknown, 80 CUs" in unknown


# --- The whole bundled snapshot ------------------------------------------------------------------


@pytest.mark.slow
def test_the_bundled_snapshot_accounts_for_all_54035_rows(sqlite_empty_template, tmp_path):
    path = tmp_path / "store.db"
    shutil.copy(sqlite_empty_template, path)
    engine = make_engine(f"sqlite:///{path}")
    summary = ingest(make_sessionmaker(engine), Settings(database_url=f"sqlite:///{path}"), "aiter", snapshot=BUNDLED)
    engine.dispose()

    assert summary.status == "succeeded", summary.errors
    skipped = summary.counts["skipped"]
    assert skipped == {"malformed_row": 19, "no_positive_time": 256, "unmapped_schema": 368}
    assert summary.counts["submissions"]["stored"] == 53_392
    assert summary.counts["submissions"]["stored"] + sum(skipped.values()) == 54_035
    assert "warning: read 54035 rows from 85 of 85 tables at e4048607a535" in summary.errors
    assert summary.counts["added"]["workload"] == summary.counts["units"]["listed"]
