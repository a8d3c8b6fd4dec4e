"""Read, then render, on both databases: every kind of page of the bundled catalogue (``loaded_db``),
and its JSON twin, runs no SQL while its template is written. The pages of sources the bundled
catalogue lacks answer 404, itself a page; ``test_page_kinds`` checks them all with every source, on
SQLite."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from kernelindex.store.accounts import create_user
from tests.conftest import StoreUnderTest
from tests.render_sql import SqlWhileRendering, visit_every_kind
from tests.test_page_kinds import PAGE_KINDS

MAINTAINER, PASSPHRASE = "maintainer", "a maintainer passphrase"


def test_no_sql_runs_while_a_page_renders_on_either_database(make_app: Any, loaded_db: StoreUnderTest) -> None:
    with loaded_db.sessions.begin() as session:
        create_user(session, MAINTAINER, PASSPHRASE, maintainer=True)
    bind = loaded_db.sessions.kw["bind"]
    with SqlWhileRendering(bind) as recorder, TestClient(make_app(loaded_db)) as client:
        visited = visit_every_kind(client, [(k.path, k.signed_in, None) for k in PAGE_KINDS], MAINTAINER, PASSPHRASE)
    recorder.check(visited)
