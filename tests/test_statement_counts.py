"""List pages run a number of SQL statements that does not grow with the rows they show.

Each page is asked twice, once showing many rows and once showing few; a query per row
(a lazy-loaded relationship in a loop, a lookup per record) makes the first count grow
with the rows, and the test fails. The response cache is off, so every request reaches
the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, event

# A page may run a few statements more when it has rows to show (e.g. the figures of the
# rows it lists), never one per row: the pairs below differ by ten rows or more.
SLACK = 3
CEILING = 40


@pytest.fixture
def client(make_app, loaded_db):
    with TestClient(make_app(loaded_db, response_cache_mb=0)) as client:
        yield client


@contextmanager
def counted() -> Iterator[list[str]]:
    statements: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    event.listen(Engine, "before_cursor_execute", count)
    try:
        yield statements
    finally:
        event.remove(Engine, "before_cursor_execute", count)


def statements_for(client: TestClient, path: str) -> int:
    client.get(path)  # warm: the first request of an app reads its secret and versions once
    with counted() as statements:
        response = client.get(path)
    assert response.status_code == 200, (path, response.text[:300])
    return len(statements)


def rows_in(client: TestClient, path: str, key: str) -> int:
    value = client.get(path).json()
    for part in key.split("."):
        value = value[part]
    return len(value)


# (page showing many rows, the same page showing few, where its rows are in the JSON twin)
PAIRS = [
    ("/workloads.json", "/workloads.json?q=conv2d", "workloads"),
    ("/workloads", "/workloads?q=conv2d", None),
    ("/index.json", None, None),
    ("/records.json", "/records.json?before=2026-05-01T00:00:00Z", "records"),
    ("/records", "/records?before=2026-05-01T00:00:00Z", None),
    ("/records.atom", None, None),
    ("/gpus/b200.json", "/gpus/b200.json?page=5", "workloads"),
    ("/gpus/h100-sxm.json", None, None),
    ("/gpus.json", None, None),
    ("/implementations/geometric.json", "/implementations/abhinav-gorrepati.json", "workloads"),
    ("/api/v1/implementations/geometric?limit=100", "/api/v1/implementations/geometric?limit=3", "workloadResults"),
    ("/models/nafnet.json", None, None),
    ("/sources/sol-execbench.json", None, None),
    ("/search.json?q=norm", "/search.json?q=conv2d", None),
    ("/workloads/l1-039-adaptive-instance-normalization-2d-backward.json", None, None),
    ("/api/v1/workloads?limit=100", "/api/v1/workloads?limit=3", "items"),
    ("/api/v1/runs?limit=100", "/api/v1/runs?limit=3", "items"),
    ("/api/v1/implementations?limit=100", "/api/v1/implementations?limit=3", "items"),
    ("/api/v1/gpus/b200", "/api/v1/gpus/h200", None),
    ("/api/v1/gpus/b200/workloads?limit=100", "/api/v1/gpus/b200/workloads?limit=3", "items"),
    ("/sources.json", None, None),
    ("/api/v1/sources", None, None),
    ("/api/v1/models/nafnet", None, None),
    ("/api/v1/sources/sol-execbench", None, None),
]


@pytest.mark.parametrize(("many", "few", "rows"), PAIRS, ids=[pair[0] for pair in PAIRS])
def test_statements_do_not_grow_with_the_rows_shown(client, many, few, rows):
    count = statements_for(client, many)
    assert count <= CEILING, f"{many} ran {count} statements"
    if few is not None:
        if rows is not None:
            assert rows_in(client, many, rows) >= rows_in(client, few, rows) + 10, "the pair must differ by rows"
        fewer = statements_for(client, few)
        assert count <= fewer + SLACK, f"{many} ran {count} statements, {few} ran {fewer}"
