"""Attestation permalinks, and adding one through the API with an ``attest`` key."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, ClassVar, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel

from kernelindex import urls
from kernelindex.accounts.ratelimit import LIMITS
from kernelindex.accounts.text import control_character_problem
from kernelindex.manifests.types import AttestationTypeField
from kernelindex.store.accounts import User
from kernelindex.store.attestations import (
    StoredAttestation,
    SubmissionError,
    add_attestation,
    attestation_by_idempotency_key,
    attestation_by_name,
    same_submission,
)
from kernelindex.store.manifests import manifest_document
from kernelindex.store.run_queries import Run
from kernelindex.web.api import Problem
from kernelindex.web.auth import AttestKeyHolder, CurrentUser
from kernelindex.web.deps import RawBody, SessionDep
from kernelindex.web.errors import BadRequest, NotFound, problem
from kernelindex.web.pages import PageContext, page_route, render_page
from kernelindex.web.run_page import AttestationPart, attestation_part
from kernelindex.web.runs import find_run

router = APIRouter()


class AttestationPage(PageContext):
    template: ClassVar[str] = "attestation.html"

    attestation: AttestationPart
    run: str
    run_url: str
    hidden: bool
    hidden_reason: str | None
    # Withheld while hidden: moderation removes the words from every public view, not only the run page.
    manifest: dict[str, Any] | None


@page_route(router, "/attestations/{name}")
def attestation(request: Request, name: str, session: SessionDep, user: CurrentUser) -> Response:
    found = attestation_by_name(session, name)
    if found is None:
        raise NotFound(f"No attestation is named {name!r}.")
    view, run = found
    hidden = view.state == "hidden"
    part = attestation_part(view)
    if hidden:
        # The digest would let anyone fetch the words from a mirror: only a maintainer sees it.
        withheld = {"body_html": "", "evidence_url": None}
        part = part.model_copy(update=withheld if user and user.is_maintainer else {**withheld, "digest": ""})
    context = AttestationPage(
        attestation=part,
        run=run.name,
        run_url=urls.run(run.name),
        hidden=hidden,
        hidden_reason=view.hidden_reason,
        manifest=None if hidden else view.manifest,
    )
    return render_page(request, context)


class NewAttestation(BaseModel):
    """The body of ``POST /api/v1/runs/{name}/attestations``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="forbid")
    type: AttestationTypeField = Field(title="Type")
    body: str = Field(min_length=1, max_length=2000)
    body_format: Literal["plain", "markdown"] = "plain"
    evidence_url: str | None = Field(default=None, max_length=500)
    measured_latency_ns: int | None = None
    environment_summary: str | None = Field(default=None, max_length=500)

    @field_validator("body", "evidence_url", "environment_summary")
    @classmethod
    def _text(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and (problem := control_character_problem(value, info.field_name == "body")):
            raise ValueError(problem)
        return value


class CreatedAttestation(BaseModel):
    name: str
    url: str
    digest: str
    created_at: datetime
    manifest: dict[str, Any]


@router.post(
    "/api/v1/runs/{name}/attestations",
    status_code=201,
    response_model=CreatedAttestation,
    tags=["attestations"],
    summary="Add an attestation to a run (API key with the attest scope, as a Bearer token)",
    operation_id="createAttestation",
    # The body is read by hand (to answer a missing key before parsing it), so it is declared here.
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": NewAttestation.model_json_schema(by_alias=True)}},
        }
    },
    responses={
        "4XX": {
            "description": "Problem details (RFC 9457): 400 invalid body or a repeat of the same attestation, "
            "401 no usable key, 403 a read-only key, 404 unknown run, 413 body over 64 KiB, 422 an "
            "Idempotency-Key already used for a different attestation, 429 over the daily limit.",
            "content": {"application/problem+json": {"schema": Problem.model_json_schema()}},
        }
    },
)
def create_attestation(
    request: Request, name: str, raw: RawBody, user: AttestKeyHolder, session: SessionDep
) -> Response:
    # A plain function: the key, the rate limit and the write wait on the database, in the
    # threadpool, so that a wait for a connection or a lock never stalls the event loop.
    # The body is read first (``RawBody``), then the key checked (``AttestKeyHolder``, 401).
    # With an ``Idempotency-Key`` header, a retry is answered with the first 201 and writes nothing.
    run = find_run(session, name)
    key = _idempotency_key(request)
    try:
        body = NewAttestation.model_validate_json(raw)
    except ValidationError as exc:
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False))
        raise BadRequest(f"The attestation is not valid: {details}") from None
    fields = body.model_dump(exclude_none=True)
    if key is not None and (earlier := attestation_by_idempotency_key(session, user, key)) is not None:
        return _replay(earlier, user, run, fields)
    if not request.app.state.rate_limiter.allow(LIMITS["attest"], f"user:{user.id}"):
        return problem(429, LIMITS["attest"].message)
    try:
        row = add_attestation(session, user, run, fields, idempotency_key=key)
        session.commit()
    except SubmissionError as exc:
        session.rollback()
        # Refused as invalid: nothing was added, so nothing counts against the daily limit.
        request.app.state.rate_limiter.refund(LIMITS["attest"], f"user:{user.id}")
        # A parallel retry with the same key may have stored it first: answer as it did.
        if key is not None and (earlier := attestation_by_idempotency_key(session, user, key)) is not None:
            return _replay(earlier, user, run, fields)
        raise BadRequest(str(exc)) from None
    return _created(row)


IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,200}")


def _idempotency_key(request: Request) -> str | None:
    """The ``Idempotency-Key`` header: 1 to 200 visible ASCII characters, or None when absent."""
    value = request.headers.get("idempotency-key")
    if value is None:
        return None
    if not IDEMPOTENCY_KEY.fullmatch(value):
        raise BadRequest("An Idempotency-Key is 1 to 200 visible ASCII characters (a UUID is a good one).")
    return value


def _replay(earlier: StoredAttestation, user: User, run: Run, fields: dict[str, Any]) -> Response:
    """The first answer to this Idempotency-Key again, if this is the same attestation; else 422."""
    if not same_submission(earlier, user, run, fields):
        return problem(
            422,
            "This Idempotency-Key was already used for a different attestation; send a new key for a new attestation.",
        )
    return _created(earlier)


def _created(row: StoredAttestation) -> Response:
    created = CreatedAttestation(
        name=row.name,
        url=urls.attestation(row.name),
        digest=row.digest,
        created_at=row.created_at,
        manifest=manifest_document(row),
    )
    return JSONResponse(created.model_dump(mode="json", by_alias=True), status_code=201)
