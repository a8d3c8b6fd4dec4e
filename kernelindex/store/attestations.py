"""Attestations and reports: what people say about a run. Neither changes its evidence level."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kernelindex.db.tables import Attestation as AttestationRow
from kernelindex.db.tables import ManifestVersion, Report, Run, User
from kernelindex.manifests import API_VERSION, Attestation, ManifestError, parse_manifest
from kernelindex.manifests.kinds import AttestationSpec
from kernelindex.manifests.types import AttestationType
from kernelindex.store.manifests import attestation_manifest, manifest_document, manifest_text

REPORT_REASONS = {
    "wrong_result": "Wrong result",
    "reward_hack": "Suspected reward hack",
    "duplicate": "Duplicate",
    "licence": "Licence problem",
    "other": "Other",
}
DUPLICATE_WINDOW = timedelta(minutes=10)
# A stored attestation, as the API answers with it.
StoredAttestation = AttestationRow


class SubmissionError(ValueError):
    """Input that cannot be stored; ``problems`` maps form fields to messages."""

    def __init__(self, problems: dict[str, str]):
        self.problems = problems
        super().__init__("; ".join(f"{field}: {message}" for field, message in problems.items()))


FIELD_NAMES = {
    "spec.type": "type",
    "spec.body": "body",
    "spec.bodyFormat": "body_format",
    "spec.evidenceUrl": "evidence_url",
    "spec.measuredLatencyNs": "measured_latency_ns",
    "spec.environmentSummary": "environment_summary",
}


def _manifest(user: User, run: Run, fields: dict[str, Any], now: datetime) -> Attestation:
    spec: dict[str, Any] = {
        "runDigest": run.digest,
        "type": fields.get("type"),
        "body": fields.get("body"),
        "bodyFormat": fields.get("body_format") or "plain",
        "author": {"handle": user.handle},
        "createdAt": now,
    }
    for field, key in (
        ("evidence_url", "evidenceUrl"),
        ("measured_latency_ns", "measuredLatencyNs"),
        ("environment_summary", "environmentSummary"),
    ):
        if fields.get(field) not in (None, ""):
            spec[key] = fields[field]
    name = f"att-{run.name}-{secrets.token_hex(4)}"[:200]
    try:
        manifest = parse_manifest(
            {"apiVersion": API_VERSION, "kind": "Attestation", "metadata": {"name": name}, "spec": spec}
        )
    except ManifestError as exc:
        raise SubmissionError({FIELD_NAMES.get(path, "form"): message for path, message in exc.problems}) from None
    assert isinstance(manifest, Attestation)
    return manifest


def dedupe_key(type_: str, body: str) -> str:
    """What makes two statements the same for the double-submit guard: the type and the body,
    whitespace normalised."""
    return hashlib.sha256(f"{type_}\n{' '.join(body.split())}".encode()).hexdigest()


def _statement(spec: AttestationSpec) -> dict[str, Any]:
    """What a submission says: its spec without what each submission sets afresh (time, author)."""
    return spec.model_dump(exclude={"created_at", "author"})


def add_attestation(
    session: Session, user: User, run: Run, fields: dict[str, Any], idempotency_key: str | None = None
) -> AttestationRow:
    """Validate ``fields`` as an Attestation of ``run`` by ``user`` and store it.

    Raises ``SubmissionError`` naming the fields at fault, or for a repeat of the same
    statement within ten minutes (a double submit). The repeat is refused by a unique key in
    the database, so parallel posts cannot both pass; the session must then be rolled back.
    """
    now = datetime.now(UTC)
    manifest = _manifest(user, run, fields, now)
    name = manifest.metadata.name
    key = dedupe_key(manifest.spec.type, manifest.spec.body)
    # A statement older than the window no longer holds its key: the same words may be said again.
    session.execute(
        update(AttestationRow)
        .where(
            AttestationRow.user_id == user.id,
            AttestationRow.run_id == run.id,
            AttestationRow.dedupe_key == key,
            AttestationRow.created_at <= now - DUPLICATE_WINDOW,
        )
        .values(dedupe_key=None)
        .execution_options(synchronize_session=False)
    )
    text = manifest_text(manifest)
    row = AttestationRow(
        name=name,
        digest=manifest.digest,
        manifest_json=text,
        run_id=run.id,
        user_id=user.id,
        type=manifest.spec.type,
        state="published",
        dedupe_key=key,
        idempotency_key=idempotency_key,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    session.add(
        ManifestVersion(kind="Attestation", name=name, digest=manifest.digest, manifest_json=text, recorded_at=now)
    )
    try:
        session.flush()
    except IntegrityError:
        raise SubmissionError({"form": "You just added this same attestation; it is listed below."}) from None
    return row


def attestation_by_idempotency_key(session: Session, user: User, key: str) -> AttestationRow | None:
    """The attestation ``user`` posted with this ``Idempotency-Key``, if any."""
    return session.scalar(
        select(AttestationRow).where(AttestationRow.user_id == user.id, AttestationRow.idempotency_key == key)
    )


def same_submission(row: AttestationRow, user: User, run: Run, fields: dict[str, Any]) -> bool:
    """Whether ``fields`` on ``run`` say what ``row`` says (a retry), time and author aside."""
    if row.run_id != run.id:
        return False
    try:
        again = _manifest(user, run, fields, row.created_at)
    except SubmissionError:
        return False
    return _statement(again.spec) == _statement(attestation_manifest(row).spec)


@dataclass(frozen=True)
class AttestationView:
    name: str
    digest: str
    type: AttestationType
    author: str
    created_at: datetime
    body: str
    body_format: str
    evidence_url: str | None
    measured_latency_ns: int | None
    environment_summary: str | None
    state: str
    hidden_reason: str | None
    manifest: dict[str, Any]


def _view(row: AttestationRow) -> AttestationView:
    spec = attestation_manifest(row).spec
    return AttestationView(
        name=row.name,
        digest=row.digest,
        type=row.type,
        author=spec.author.handle,
        created_at=row.created_at,
        body=spec.body,
        body_format=spec.body_format,
        evidence_url=str(spec.evidence_url) if spec.evidence_url else None,
        measured_latency_ns=spec.measured_latency_ns,
        environment_summary=spec.environment_summary,
        state=row.state,
        hidden_reason=row.hidden_reason,
        manifest=manifest_document(row),
    )


def attestations_of_run(session: Session, run_id: int) -> list[AttestationView]:
    """Published attestations of a run, newest first."""
    rows = session.scalars(
        select(AttestationRow)
        .where(AttestationRow.run_id == run_id, AttestationRow.state == "published")
        .order_by(AttestationRow.created_at.desc(), AttestationRow.id.desc())
    )
    return [_view(row) for row in rows]


def attestation_by_name(session: Session, name: str) -> tuple[AttestationView, Run] | None:
    row = session.scalar(select(AttestationRow).where(AttestationRow.name == name))
    if row is None:
        return None
    return _view(row), session.get_one(Run, row.run_id)


def attestations_by_user(session: Session, user: User) -> list[tuple[AttestationView, str]]:
    rows = session.execute(
        select(AttestationRow, Run.name)
        .join(Run, Run.id == AttestationRow.run_id)
        .where(AttestationRow.user_id == user.id)
        .order_by(AttestationRow.created_at.desc())
    ).all()
    return [(_view(row), run_name) for row, run_name in rows]


def add_report(session: Session, run: Run, reason: str, body: str, user: User | None) -> Report:
    problems = {}
    if reason not in REPORT_REASONS:
        problems["reason"] = f"Choose one of: {', '.join(REPORT_REASONS.values())}."
    body = body.strip()
    if not 1 <= len(body) <= 2000:
        problems["report_body"] = "Say what is wrong in 1 to 2,000 characters."
    if problems:
        raise SubmissionError(problems)
    report = Report(
        run_id=run.id,
        user_id=user.id if user else None,
        reason=reason,
        body=body,
        state="open",
        created_at=datetime.now(UTC),
    )
    session.add(report)
    session.flush()
    return report
