"""Attestation permalinks, and adding one through the API with an ``attest`` key."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, ClassVar, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel

from kernelindex import urls
from kernelindex.accounts.ratelimit import LIMITS
from kernelindex.accounts.text import control_character_problem
from kernelindex.store.attestations import SubmissionError, add_attestation, attestation_by_name
from kernelindex.web.api import Problem
from kernelindex.web.auth import AttestKeyHolder
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
def attestation(request: Request, name: str, session: SessionDep) -> Response:
    found = attestation_by_name(session, name)
    if found is None:
        raise NotFound(f"No attestation is named {name!r}.")
    view, run = found
    hidden = view.state == "hidden"
    part = attestation_part(view)
    context = AttestationPage(
        attestation=part.model_copy(update={"body_html": "", "evidence_url": None}) if hidden else part,
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
    type: Literal["reproduced", "could_not_reproduce", "environment_note", "regression_observed"]
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
            "description": "Problem details (RFC 9457): 400 invalid body, 401 no usable key, 404 unknown run, "
            "413 body over 64 KiB, 429 over the daily limit.",
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
    run = find_run(session, name)
    try:
        body = NewAttestation.model_validate_json(raw)
    except ValidationError as exc:
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False))
        raise BadRequest(f"The attestation is not valid: {details}") from None
    if not request.app.state.rate_limiter.allow(LIMITS["attest"], f"user:{user.id}"):
        return problem(429, LIMITS["attest"].message)
    try:
        row = add_attestation(session, user, run, body.model_dump(exclude_none=True))
        session.commit()
    except SubmissionError as exc:
        session.rollback()
        raise BadRequest(str(exc)) from None
    created = CreatedAttestation(
        name=row.name,
        url=urls.attestation(row.name),
        digest=row.digest,
        created_at=row.created_at,
        manifest=json.loads(row.manifest_json),
    )
    return JSONResponse(created.model_dump(mode="json", by_alias=True), status_code=201)
