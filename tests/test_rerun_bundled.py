"""The bundled rerun dataset: real bundles measured on an H200, loaded by a fresh install."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

from kernelindex.db.tables import Run
from kernelindex.ingest.rerun_import import import_bundled_reruns
from kernelindex.ingest.snapshot import SnapshotError
from kernelindex.paths import BUNDLED_RERUNS
from tests.rerun_bundles import ADAIN, CONV


def test_the_bundled_reruns_load_as_reproduced_never_replicated_h200_runs(loaded_db) -> None:
    results = import_bundled_reruns(loaded_db.sessions, BUNDLED_RERUNS)
    assert results and all(result.error is None for result in results), [r.error for r in results if r.error]
    with loaded_db.sessions() as session:
        reruns = session.scalars(select(Run).where(Run.evidence.in_(["verified", "reproduced", "replicated"]))).all()
        assert len(reruns) == 17
        assert {run.environment.gpu_product for run in reruns} == {"NVIDIA H200"}
        # One operator ran all three leases: agreement reproduces, it never replicates.
        evidence = {(run.implementation.name, run.latency_ns): run.evidence for run in reruns}
        assert "replicated" not in evidence.values()
        by_level = Counter(evidence.values())
        assert by_level["reproduced"] >= 6 and by_level["verified"] >= 1, by_level
        for slug in (ADAIN, CONV):
            runs = [run for run in reruns if run.workload.name == slug]
            assert len({run.implementation.project for run in runs}) >= 3, slug
    again = import_bundled_reruns(loaded_db.sessions, BUNDLED_RERUNS)
    assert all(result.outcome is not None and result.outcome.already_imported for result in again)


def test_an_edited_bundled_dataset_is_refused_before_anything_is_read(loaded_db, tmp_path: Path) -> None:
    copy = tmp_path / "reruns"
    shutil.copytree(BUNDLED_RERUNS, copy)
    bundle = sorted((copy / "bundles").glob("*.json"))[0]
    bundle.write_bytes(bundle.read_bytes().replace(b'"passed"', b'"failed"', 1))
    with pytest.raises(SnapshotError, match="does not match"):
        import_bundled_reruns(loaded_db.sessions, copy)
