"""Property-based fuzzing of the whole ``/api/v1`` OpenAPI document with schemathesis.

Every operation gets schema-valid requests and schema-breaking ones, signed in with an API
key so that writes get past authentication. Every response must not be a 5xx and must
conform to the document (status code, content type, headers, body schema); a
schema-breaking request must be refused with a 4xx. Schema-valid requests may still be
refused with a 400 (a cursor this API never issued, a run that does not exist): the
document cannot say which strings are cursors, and a clear 400 is the right answer.
"""

from __future__ import annotations

import os

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from sqlalchemy import func, select

from kernelindex.db.tables import Attestation, Run
from kernelindex.store import accounts
from tests.factories import PASSWORD

# The budget: requests per operation and mode. CI runs 25 (about 20 s a backend); set
# KERNELINDEX_FUZZ_EXAMPLES higher to search longer.
EXAMPLES = int(os.environ.get("KERNELINDEX_FUZZ_EXAMPLES", "25"))
CONFIG = {
    "checks": {
        "positive_data_acceptance": {"enabled": False},
        # 413 and 414: a body or an address too large to read is refused before any parsing.
        "negative_data_rejection": {"expected-statuses": ["400", "401", "404", "413", "414", "422", "429"]},
    }
}


def fuzz(operation, mode: GenerationMode, secret: str, path_parameters: dict[str, str]) -> int:  # type: ignore[no-untyped-def]
    """Run ``EXAMPLES`` requests of ``mode`` against ``operation``; returns how many were sent."""
    sent = 0

    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=path_parameters or None))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case):  # type: ignore[no-untyped-def]
        nonlocal sent
        sent += 1
        case.call_and_validate(headers={"Authorization": f"Bearer {secret}"})

    try:
        run()
    except Unsatisfiable:
        # A path parameter that may be any string: no request can break its schema.
        assert mode is GenerationMode.NEGATIVE
    return sent


def test_api_v1_conforms_and_never_fails_under_fuzzing(loaded_db, make_app):
    with loaded_db.sessions.begin() as session:
        user = accounts.create_user(session, "fuzzer", PASSWORD)
        _, secret = accounts.create_api_key(session, user, "fuzzing", ["attest", "reruns", "submissions:write"])
        run_name = session.scalars(select(Run.name).order_by(Run.id)).first()
    app = make_app(loaded_db, secret_key="fuzz")
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app, config=schemathesis.Config.from_dict(CONFIG))
    operations = [result.ok() for result in schema.get_all_operations()]
    operations = [operation for operation in operations if operation.path.startswith("/api/v1/")]
    failures, sent = [], 0
    for operation in operations:
        for mode in GenerationMode:
            try:
                # Writes go to a run that exists, so that their bodies are read and stored.
                pinned = {"name": run_name} if operation.method == "post" and mode is GenerationMode.POSITIVE else {}
                sent += fuzz(operation, mode, secret, pinned)
            except (Exception, BaseExceptionGroup) as exc:
                failures.append(f"{operation.label} ({mode.value}): {exc}")
    assert not failures, "\n\n".join(failures)
    with loaded_db.sessions() as session:
        stored = session.scalar(select(func.count()).select_from(Attestation).where(Attestation.user_id == user.id))
    assert stored, "no fuzzed attestation was valid: the write path was not exercised"
    assert len(operations) >= 15 and sent >= len(operations) * EXAMPLES
    print(f"\nschemathesis: {sent} requests over {len(operations)} operations of /api/v1, none failed; {stored} stored")
