"""A guard for "read, then render": records every SQL statement that runs while a page's template (or
its JSON twin) is being written (``kernelindex.web.rendering``), for the tests that visit every kind of
page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import event, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session

from kernelindex.web.rendering import RENDERING, rendering_page
from tests.factories import sign_in


class SqlWhileRendering:
    """Listens on ``bind`` (an engine, or the connection a test's sessions use): statements run while a
    page renders are kept in ``during``; the others are counted in ``outside``."""

    def __init__(self, bind: Engine | Connection) -> None:
        self.bind = bind
        self.during: list[str] = []
        self.outside = 0

    def _record(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        template = rendering_page()
        if template is None:
            self.outside += 1
        else:
            self.during.append(f"{template}: {' '.join(statement.split())[:160]}")

    def __enter__(self) -> SqlWhileRendering:
        event.listen(self.bind, "before_cursor_execute", self._record)
        # The hook sees what runs while something renders: a probe through the same bind.
        token = RENDERING.set("probe.html")
        try:
            with Session(self.bind) as session:
                session.execute(text("SELECT 1"))
        finally:
            RENDERING.reset(token)
        assert self.during == ["probe.html: SELECT 1"], self.during
        self.during.clear()
        return self

    def __exit__(self, *exc: object) -> None:
        event.remove(self.bind, "before_cursor_execute", self._record)

    def check(self, visited: Sequence[str]) -> None:
        assert self.outside > len(visited) // 2, "the pages did not read the store through this bind"
        assert not self.during, "SQL ran while a page rendered:\n" + "\n".join(self.during[:20])


def visit_every_kind(
    client: TestClient, kinds: Sequence[tuple[str, bool, int | None]], handle: str, passphrase: str
) -> list[str]:
    """GET each (path, signed in, expected status or None for any) page and, where it names one in its
    ``Link`` header, its JSON twin; signs in as ``handle`` before the first signed-in page. The paths
    visited, twins included."""
    visited = []
    for path, signed_in, status in sorted(kinds, key=lambda kind: kind[1]):
        if signed_in and not client.cookies:
            sign_in(client, handle, passphrase)
        response = client.get(path)
        assert status is None or response.status_code == status, (path, response.status_code)
        visited.append(path)
        twin = response.headers.get("link", "").partition(">")[0].removeprefix("<")
        if twin:
            assert status is None or client.get(twin).status_code == status, twin
            visited.append(twin)
    return visited
