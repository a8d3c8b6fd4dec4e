"""``POST /api/v1/reruns``: an operator uploads one signed rerun bundle with an API key of the
``reruns`` scope.

The body is the bundle, up to ``MAX_BUNDLE_UPLOAD_BYTES`` (413 beyond, from ``BodyLimit``). The
checks are the importer's (``ingest.rerun_upload``, which the app hands over as
``app.state.rerun_uploader``: the web layer does not import the ingest layer); a refusal is
problem JSON (RFC 9457) whose ``check`` member names the check that failed, and writes nothing.
A stored bundle is answered 201 with its run's permalinks and the evidence derived so far.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.accounts.ratelimit import LIMITS
from kernelindex.store.accounts import User
from kernelindex.store.reruns import agreements_of_run
from kernelindex.store.run_queries import find_run
from kernelindex.store.runner_keys import BUNDLE_SCHEMA, Uploaded, UploadRefused
from kernelindex.web.auth import WRONG_SCOPE, bearer_key_holder
from kernelindex.web.deps import RawBody, SessionDep
from kernelindex.web.errors import TITLES
from kernelindex.web.request_guard import MAX_BUNDLE_UPLOAD_BYTES

router = APIRouter()
SCOPE = "reruns"
# Checks a stored bundle: the store's own session, the bundle's bytes and the uploading account.
Uploader = Callable[[Session, bytes, User], Uploaded]
TITLES_BY_STATUS = TITLES | {401: "Unauthorized", 409: "Conflict", 422: "Unprocessable content"}


class UploadProblem(BaseModel):
    """RFC 9457 problem details, with the check that refused the bundle."""

    type: str = Field(examples=["about:blank"])
    title: str = Field(examples=["Forbidden"])
    status: int = Field(examples=[403])
    detail: str
    check: str = Field(examples=["runner-key-account"], description="the check that refused the upload")


class UploadedRerun(BaseModel):
    bundle_id: str = Field(serialization_alias="bundleId")
    run: str
    url: str
    json_url: str = Field(serialization_alias="jsonUrl")
    api_url: str = Field(serialization_alias="apiUrl")
    bundle_url: str = Field(serialization_alias="bundleUrl")
    key_id: str = Field(serialization_alias="keyId")
    operator: str
    evidence: str
    reproduced_by: list[str] = Field(serialization_alias="reproducedBy")
    replicated_by: list[str] = Field(serialization_alias="replicatedBy")


def refusal(status: int, check: str, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    document = UploadProblem(
        type="about:blank", title=TITLES_BY_STATUS.get(status, "Error"), status=status, detail=detail, check=check
    )
    return JSONResponse(
        document.model_dump(), status_code=status, media_type="application/problem+json", headers=headers
    )


def _key_holder(request: Request, session: Session) -> User | JSONResponse:
    """The owner of the request's Bearer key if it is unrevoked and has the ``reruns`` scope, else the refusal."""
    user = bearer_key_holder(request, session, SCOPE)
    if user == WRONG_SCOPE:
        return refusal(403, "api-key-scope", f"This API key has no {SCOPE} scope; create one that has.")
    if not isinstance(user, User):
        return refusal(
            401,
            "api-key",
            f"Send an unrevoked API key with the {SCOPE} scope as 'Authorization: Bearer ki_…'.",
            {"WWW-Authenticate": "Bearer"},
        )
    return user


@router.post(
    urls.api_reruns(),
    status_code=201,
    response_model=UploadedRerun,
    tags=["reruns"],
    summary="Upload a signed rerun bundle (API key with the reruns scope, as a Bearer token)",
    operation_id="uploadRerun",
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": f"One bundle as the runner wrote it, at most {MAX_BUNDLE_UPLOAD_BYTES} bytes.",
            "content": {"application/json": {"schema": BUNDLE_SCHEMA}},
        }
    },
    responses={
        "4XX": {
            "description": "Problem details (RFC 9457) whose check member names the check that failed: 400 "
            "bundle-json, 401 api-key, 403 api-key-scope or runner-key-approved, runner-key-account, "
            "runner-key-revoked, 409 replay, re-signed or bundle-id, 413 body-size, 422 signature, payload, "
            "protocol, figures, claims or workload, 429 rate-limit. Nothing is written.",
            "content": {"application/problem+json": {"schema": UploadProblem.model_json_schema()}},
        }
    },
)
def upload_rerun(request: Request, raw: RawBody, session: SessionDep) -> Response:
    # A plain function: the checks recompute every figure of the bundle (CPU) and the write waits on
    # the database, in the threadpool.
    user = _key_holder(request, session)
    if isinstance(user, Response):
        return user
    limit = LIMITS["rerun_upload"]
    if not request.app.state.rate_limiter.allow(limit, f"user:{user.id}"):
        return refusal(429, "rate-limit", limit.message, {"Retry-After": str(limit.window_s)})
    uploader: Uploader = request.app.state.rerun_uploader
    try:
        uploaded = uploader(session, raw, user)
        session.commit()
    except UploadRefused as exc:
        session.rollback()
        return refusal(exc.status, exc.check, exc.detail)
    except IntegrityError:
        # The same bundle, uploaded at the same moment, was stored first.
        session.rollback()
        return refusal(409, "replay", "This bundle was stored by another upload at the same moment.")
    return JSONResponse(_created(session, uploaded), status_code=201)


def _created(session: Session, uploaded: Uploaded) -> dict[str, Any]:
    run = find_run(session, uploaded.run_name)
    assert run is not None  # committed just now
    agreements = agreements_of_run(session, run)
    page = urls.run(run.name)
    created = UploadedRerun(
        bundle_id=uploaded.bundle_id,
        run=run.name,
        url=page,
        json_url=urls.json_twin(page),
        api_url=urls.api_run(run.name),
        bundle_url=urls.rerun_bundle(uploaded.bundle_id),
        key_id=uploaded.key_id,
        operator=uploaded.operator,
        evidence=str(run.evidence),
        reproduced_by=agreements.reproduced_by,
        replicated_by=agreements.replicated_by,
    )
    return created.model_dump(by_alias=True)
