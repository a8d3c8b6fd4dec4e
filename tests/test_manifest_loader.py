"""Stored manifests read back as typed models (``store.manifests.load_manifest``), and the
enums of the registry's vocabulary: evidence levels, run statuses, attestation types."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.dialects import sqlite

from kernelindex.db.base import StrEnumColumn
from kernelindex.db.tables import Attestation as AttestationRow
from kernelindex.db.tables import Run
from kernelindex.manifests import KINDS, BenchmarkRun, ManifestError, WorkloadSuite
from kernelindex.manifests.types import AttestationType, EvidenceLevel, RunStatus
from kernelindex.ranking import RunFacts, ineligibility_reasons
from kernelindex.store import manifests as stored
from kernelindex.store.manifests import (
    StoredText,
    load_manifest,
    manifest_document,
    manifest_text,
    run_manifest,
    workload_manifest,
)
from tests.test_manifests import EXAMPLES


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    stored._parse.cache_clear()
    yield
    stored._parse.cache_clear()


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every call of the parser behind the loader, recorded."""
    calls: list[Any] = []
    real = stored.parse_manifest

    def counting(data: Any) -> Any:
        calls.append(data)
        return real(data)

    monkeypatch.setattr(stored, "parse_manifest", counting)
    return calls


def _stored(kind: str) -> StoredText:
    manifest = KINDS[kind].model_validate(EXAMPLES[kind]())
    return StoredText(manifest.digest, manifest_text(manifest))


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_load_manifest_returns_the_model_of_its_kind(kind: str) -> None:
    record = _stored(kind)
    manifest = load_manifest(record.digest, record.manifest_json)
    assert type(manifest) is KINDS[kind]
    assert manifest.digest == record.digest
    assert manifest_text(manifest) == record.manifest_json


def test_load_manifest_parses_each_digest_once(parses: list[Any]) -> None:
    record = _stored("BenchmarkRun")
    first = load_manifest(record.digest, record.manifest_json)
    # A new string of the same text, as a second query of the same row would read it.
    again = load_manifest(record.digest, "".join(record.manifest_json))
    assert again is first
    assert run_manifest(record) is first
    assert len(parses) == 1


def test_load_manifest_parses_same_digest_with_other_metadata_apart(parses: list[Any]) -> None:
    # The digest leaves metadata out, so it alone cannot name what the loader returns.
    record = _stored("BenchmarkRun")
    renamed = json.loads(record.manifest_json)
    renamed["metadata"]["title"] = "Another title"
    first = load_manifest(record.digest, record.manifest_json)
    other = load_manifest(record.digest, json.dumps(renamed))
    assert other.digest == first.digest
    assert first.metadata.title != other.metadata.title == "Another title"
    assert len(parses) == 2


def test_load_manifest_refuses_an_unknown_kind() -> None:
    document = json.loads(_stored("BenchmarkRun").manifest_json)
    document["kind"] = "BenchmarkRumour"
    with pytest.raises(ManifestError, match="kind: must be one of"):
        load_manifest("sha256:" + "0" * 64, json.dumps(document))


def test_typed_accessor_refuses_a_manifest_of_another_kind() -> None:
    record = _stored("BenchmarkRun")
    assert isinstance(run_manifest(record), BenchmarkRun)
    with pytest.raises(ManifestError, match=r"is a BenchmarkRun, not a WorkloadSuite"):
        workload_manifest(record)


def test_typed_accessor_reads_fields_as_attributes() -> None:
    record = _stored("WorkloadSuite")
    manifest = workload_manifest(record)
    assert isinstance(manifest, WorkloadSuite)
    assert manifest.spec.definition.name == json.loads(record.manifest_json)["spec"]["definition"]["name"]


def test_manifest_document_is_the_stored_json_fresh_each_time() -> None:
    record = _stored("BenchmarkRun")
    document = manifest_document(record)
    assert json.dumps(document, ensure_ascii=False, separators=(",", ":")) == record.manifest_json
    assert manifest_document(record) is not document


def test_loaded_runs_match_their_stored_manifests(loaded_db: Any) -> None:
    with loaded_db.sessions() as session:
        runs = session.scalars(select(Run).limit(20)).all()
        assert runs
        for run in runs:
            manifest = run_manifest(run)
            document = json.loads(run.manifest_json)
            assert manifest.to_json() == document
            assert manifest.spec.status == run.status == document["spec"]["status"]
            assert isinstance(run.status, RunStatus)
            assert isinstance(run.evidence, EvidenceLevel)


# --- Enums ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("enum", "wire"),
    [
        (EvidenceLevel, ["reported", "reproducible", "verified", "reproduced", "replicated"]),
        (RunStatus, ["passed", "failed", "error"]),
        (AttestationType, ["reproduced", "could_not_reproduce", "environment_note", "regression_observed"]),
    ],
)
def test_enum_values_are_the_wire_strings(enum: Any, wire: list[str]) -> None:
    assert [member.value for member in enum] == wire
    assert [str(member) for member in enum] == wire
    assert json.dumps(list(enum)) == json.dumps(wire)
    assert all(enum(value) == value for value in wire)


def test_manifest_enum_fields_serialise_as_their_values() -> None:
    manifest = BenchmarkRun.model_validate(EXAMPLES["BenchmarkRun"]())
    assert manifest.spec.status is RunStatus.PASSED
    assert manifest.to_json()["spec"]["status"] == "passed"
    assert type(manifest.to_json()["spec"]["status"]) is str


def test_ranking_names_a_status_by_its_value() -> None:
    facts = RunFacts(
        name="r", comparison_key="k", latency_ns=1, observed_at=datetime(2026, 1, 1), status=RunStatus.ERROR
    )
    assert ineligibility_reasons(facts) == ["did not pass correctness (status error)"]


@pytest.mark.parametrize("value", ["rumoured", "Reported", ""])
def test_enum_column_refuses_an_unknown_value(value: str) -> None:
    column = StrEnumColumn(EvidenceLevel, 16)
    dialect = sqlite.dialect()
    with pytest.raises(
        ValueError, match=r"is not a EvidenceLevel \(one of reported, reproducible, verified, reproduced, replicated\)"
    ):
        column.process_result_value(value, dialect)
    with pytest.raises(ValueError, match="is not a EvidenceLevel"):
        column.process_bind_param(value, dialect)
    assert column.process_result_value("verified", dialect) is EvidenceLevel.VERIFIED
    assert column.process_bind_param(EvidenceLevel.VERIFIED, dialect) == "verified"


def test_unknown_value_in_the_database_is_refused_when_read(loaded_db: Any) -> None:
    with loaded_db.sessions() as session:
        name = session.scalars(select(Run.name).limit(1)).one()
        session.execute(text("UPDATE run SET evidence = 'rumoured' WHERE name = :name"), {"name": name})
        assert session.scalars(select(Run.name).where(Run.name == name)).one() == name
        with pytest.raises(ValueError, match="'rumoured' is not a EvidenceLevel"):
            session.scalars(select(Run.evidence).where(Run.name == name)).one()


def test_attestation_type_column_reads_the_enum(loaded_db: Any) -> None:
    with loaded_db.sessions() as session:
        assert session.scalars(select(AttestationRow.type).where(AttestationRow.type == "reproduced")).all() == []
