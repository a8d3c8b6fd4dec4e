"""The bundled rerun dataset: real bundles measured on H200s and an H100, loaded by a fresh install."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

from kernelindex.db.tables import Run
from kernelindex.ingest.reruns.importer import (
    BUNDLED_KEYS_FILE,
    import_bundle_files,
    import_bundled_reruns,
    load_approved_keys,
)
from kernelindex.ingest.snapshot import SnapshotError
from kernelindex.ingest.sources import SOURCES, ingest
from kernelindex.paths import BUNDLED_RERUNS
from kernelindex.settings import Settings
from kernelindex.store import export
from kernelindex.verify import RUN_REFERENCES
from tests.rerun_bundles import ADAIN, CONV


def test_the_bundled_reruns_load_as_reproduced_never_replicated_runs(loaded_db, tmp_path: Path) -> None:
    # The KernelBench problems the reruns measured are workloads of the bundled KernelBench snapshot.
    settings = Settings(database_url=loaded_db.url, github_token=None)
    kernelbench = SOURCES["kernelbench"].bundled
    assert ingest(loaded_db.sessions, settings, "kernelbench", snapshot=kernelbench).status == "succeeded"
    results = import_bundled_reruns(loaded_db.sessions, BUNDLED_RERUNS)
    assert results and all(result.error is None for result in results), [r.error for r in results if r.error]
    with loaded_db.sessions() as session:
        reruns = session.scalars(select(Run).where(Run.evidence.in_(["verified", "reproduced", "replicated"]))).all()
        assert len(reruns) == len(list((BUNDLED_RERUNS / "bundles").glob("*.json")))
        gpus = Counter(run.environment.gpu_product for run in reruns)
        # KernelBench level 2 was also measured on an H100, where KernelBench's own figures were timed.
        assert set(gpus) == {"NVIDIA H200", "NVIDIA H100 80GB HBM3"}, gpus
        h100 = [run for run in reruns if "H100" in run.environment.gpu_product]
        assert {run.workload.name.split("-")[1] for run in h100} == {"l2"}
        assert {run.environment.gpu_slug for run in h100} == {"h100-sxm"}  # where KernelBench's H100 figures are
        # One operator ran every lease: agreement reproduces, it never replicates.
        assert "replicated" not in {run.evidence for run in reruns}
        by_protocol = Counter(run.protocol.name for run in reruns)
        assert by_protocol["kernelindex-rerun-v1"] == 17, by_protocol
        for slug in (ADAIN, CONV):
            runs = [run for run in reruns if run.workload.name == slug]
            for protocol in ("kernelindex-rerun-v1", "kernelindex-rerun-v2"):
                measured = {run.implementation.project for run in runs if run.protocol.name == protocol}
                assert len(measured) >= 3, (slug, protocol)
        # KernelBench problems, eager and compiled, several measured twice and agreeing.
        problems = Counter(
            (run.workload.name, run.implementation.name.split("-")[0])
            for run in reruns
            if run.workload.name.startswith("kernelbench-")
        )
        modes_by_problem = Counter(workload for workload, _ in problems)
        assert sum(1 for modes in modes_by_problem.values() if modes == 2) >= 100
        # Reproduced only where a second GPU agreed (lease 7 against lease 4, lease 5's ReLU); the two calls
        # of lease 4 measured one GPU twice, which only repeats.
        kernelbench = Counter(run.evidence for run in reruns if run.workload.name.startswith("kernelbench-"))
        assert 60 <= kernelbench["reproduced"] < kernelbench["verified"], kernelbench
    # The export holds every manifest a rerun names, among them the earlier revisions of
    # implementations measured again at a later revision (tests/test_export_whole.py verifies
    # every line; here, on the real bundles, only the references are looked up).
    with loaded_db.sessions() as session:
        exported = export.catalogue_export(session, tmp_path / "exports")
    lines = [json.loads(line) for line in gzip.decompress(exported.path.read_bytes()).splitlines()]
    present = {line["digest"] for line in lines}
    named = {
        line["manifest"]["spec"][field]
        for line in lines
        if line["manifest"]["kind"] == "BenchmarkRun"
        for field in RUN_REFERENCES
    }
    assert named - present == set()
    # Importing stored bundles again changes nothing. Every 16th file (v1 and v2, H200 and H100
    # among them): checking all 824 again would double the test's time for the same rule.
    files = sorted((BUNDLED_RERUNS / "bundles").glob("*.json"))[::16]
    approved = load_approved_keys(BUNDLED_RERUNS / BUNDLED_KEYS_FILE)
    again = import_bundle_files(loaded_db.sessions, files, approved)
    assert len(again) == len(files) >= 50
    assert all(result.outcome is not None and result.outcome.already_imported for result in again)
    with loaded_db.sessions() as session:
        stored = session.scalars(select(Run.name).where(Run.evidence.in_(["verified", "reproduced"]))).all()
        assert len(stored) == len(reruns)


def test_an_edited_bundled_dataset_is_refused_before_anything_is_read(loaded_db, tmp_path: Path) -> None:
    copy = tmp_path / "reruns"
    shutil.copytree(BUNDLED_RERUNS, copy)
    bundle = sorted((copy / "bundles").glob("*.json"))[0]
    bundle.write_bytes(bundle.read_bytes().replace(b'"passed"', b'"failed"', 1))
    with pytest.raises(SnapshotError, match="does not match"):
        import_bundled_reruns(loaded_db.sessions, copy)
