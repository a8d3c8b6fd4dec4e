"""The catalogue export is whole: after each kind of ingest and a rerun import, every line of
``/exports/catalog.jsonl.gz`` verifies and every digest an exported manifest names is in it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import select

from kernelindex.db.tables import Attestation, Run, User
from kernelindex.ingest.reruns.importer import import_bundle_files
from kernelindex.ingest.sources import SOURCES, ingest
from kernelindex.manifests import BenchmarkRun
from kernelindex.settings import Settings
from kernelindex.store import export
from kernelindex.store.manifests import put
from kernelindex.verify import REFERENCES, load_document, verify_document
from tests import aiter_slice, kernelbench_slice, liger_slice
from tests.factories import attestation_manifest
from tests.rerun_bundles import approved_keys, make_payload, signed


def whole_export(sessions: Any, directory: Path) -> list[dict[str, Any]]:
    """The export's lines, after checking that each verifies (``kernelindex verify``'s function)
    and that every digest a line's manifest names is the digest of another line."""
    with sessions() as session:
        exported = export.catalogue_export(session, directory)
        counts = export.exported_counts(session)
    document = load_document(exported.path.read_bytes())
    lines: list[dict[str, Any]] = document.value
    checks = verify_document(lines, lines=document.lines)
    assert len(checks) == len(lines) == sum(counts.values())
    failed = [check for check in checks if not check.ok]
    assert not failed, (len(failed), failed[:3])
    present = {line["digest"] for line in lines}
    named = [
        (line["manifest"]["metadata"]["name"], field, line["manifest"]["spec"][field])
        for line in lines
        for field in REFERENCES.get(line["manifest"]["kind"], {})
    ]
    assert named
    missing = [reference for reference in named if reference[2] not in present]
    assert not missing, missing[:3]
    return lines


def rerun_file(folder: Path, key: Ed25519PrivateKey, revision: str, session_id: str) -> Path:
    """A signed bundle of one implementation, at ``revision`` of the runner's code."""
    payload = make_payload(session_id=session_id)
    payload["implementation"]["revision"] = revision
    path = folder / f"{revision}.json"
    path.write_bytes(signed(payload, key))
    return path


def test_the_export_is_whole_after_every_kind_of_ingest_and_a_rerun_import(loaded_db, tmp_path):
    exports = tmp_path / "exports"
    settings = Settings(database_url=loaded_db.url, github_token=None)
    whole_export(loaded_db.sessions, exports)  # SOL-ExecBench, as loaded
    snapshots = {
        "kernelbench": kernelbench_slice.make_slice(tmp_path / "kernelbench"),
        "liger-kernel": liger_slice.make_slice(tmp_path / "liger"),
        "aiter": aiter_slice.make_slice(tmp_path / "aiter"),
        "aiconfigurator": SOURCES["aiconfigurator"].bundled,
    }
    for slug, snapshot in snapshots.items():
        summary = ingest(loaded_db.sessions, settings, slug, snapshot=snapshot)
        assert summary.status == "succeeded", (slug, summary.errors)
        whole_export(loaded_db.sessions, exports)

    # The same implementation measured at two revisions of the runner: its record moves to the
    # second, and the first run still names the first (what the bundled reruns do 225 times).
    key = Ed25519PrivateKey.generate()
    folder = tmp_path / "bundles"
    folder.mkdir()
    files = [rerun_file(folder, key, revision, session) for revision, session in (("r1", "a" * 32), ("r2", "b" * 32))]
    results = import_bundle_files(loaded_db.sessions, files, approved_keys(lab=(key,)))
    assert all(result.error is None for result in results), [result.error for result in results]
    lines = whole_export(loaded_db.sessions, exports)
    revisions = [
        line["manifest"]["spec"]["revision"]
        for line in lines
        if line["manifest"]["kind"] == "Implementation" and "revision" in line["manifest"]["spec"]
    ]
    assert {"r1", "r2"} <= set(revisions)

    # A published attestation names a run whose manifest an upstream correction then changed.
    now = datetime(2026, 12, 7, tzinfo=UTC)
    with loaded_db.sessions() as session:
        run = session.scalar(select(Run).where(Run.name == "sol-submission-16893"))
        user = User(handle="reader", password_hash="x", is_maintainer=False, created_at=now)
        session.add(user)
        session.flush()
        manifest = attestation_manifest(run, "attestation-1", "reader", "Reproduced within 2 %.", now)
        columns = {"run_id": run.id, "user_id": user.id, "type": "reproduced", "state": "published"}
        put(session, Attestation, manifest, columns, None, now)
        attested = run.digest
        corrected = json.loads(run.manifest_json)
        corrected["spec"]["timing"]["latencyNs"]["mean"] += 1
        put(session, Run, BenchmarkRun.model_validate(corrected), {}, run, now)
        session.commit()
    lines = whole_export(loaded_db.sessions, exports)
    assert attested in {line["digest"] for line in lines if line["manifest"]["kind"] == "BenchmarkRun"}


def test_verify_names_an_attestation_whose_run_is_missing(loaded_db, tmp_path):
    now = datetime(2026, 12, 7, tzinfo=UTC)
    with loaded_db.sessions() as session:
        run = session.scalar(select(Run).where(Run.name == "sol-submission-16893"))
        manifest = attestation_manifest(run, "attestation-1", "reader", "Reproduced within 2 %.", now)
        document = [
            {"digest": run.digest, "manifest": json.loads(run.manifest_json)},
            {"digest": manifest.digest, "manifest": json.loads(manifest.text)},
        ]
    assert all(check.ok for check in verify_document(document))
    document[0]["manifest"]["spec"]["timing"]["latencyNs"]["mean"] += 1
    del document[0]["digest"]  # a bare manifest: another run than the one attested
    failed = [check for check in verify_document(document) if not check.ok]
    assert [check.kind for check in failed] == ["Attestation"]
    assert "runDigest" in failed[0].message
