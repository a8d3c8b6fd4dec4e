"""Live registries for the client, the query commands and the MCP server: the app under uvicorn on
127.0.0.1, over the bundled SOL-ExecBench catalogue or the AIConfigurator sweep of
tests/test_aiconfigurator_pages.py (its ``catalogue`` fixture, imported beside these)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.servers import serving

if TYPE_CHECKING:
    from tests.conftest import StoreUnderTest
    from tests.fixtures_web import MakeApp


@pytest.fixture
def sol_registry(make_app: MakeApp, loaded_db: StoreUnderTest) -> Iterator[str]:
    """The bundled catalogue served; the app shares the test's sessions, so a rolled-back
    PostgreSQL transaction is what the server reads too."""
    with serving(make_app(loaded_db)) as base:
        yield base


@pytest.fixture
def aic_registry(make_app: MakeApp, catalogue: Any) -> Iterator[str]:
    with serving(make_app(catalogue)) as base:
        yield base
