"""Live registries for the client, the query commands and the MCP server: the app under uvicorn on
127.0.0.1, over the bundled SOL-ExecBench catalogue, the bundled AIConfigurator slice, or the
small AIConfigurator sweep of tests/test_aiconfigurator_pages.py (its ``catalogue`` fixture,
imported beside these)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from kernelindex.ingest.sources import SOURCES, ingest
from kernelindex.settings import Settings
from tests.servers import serving

if TYPE_CHECKING:
    from tests.conftest import StoreUnderTest
    from tests.fixtures_web import MakeApp


# The DeepSeek-V3 MoE layer (fp8_block, EP 8) of the bundled AIConfigurator slice: on the H200 at
# num_tokens=4096 (case 22), TensorRT-LLM 1.3.0rc20's cutlass kernel is fastest, 725,787 ns.
MOE_LAYER = "aic-moe-c9871ce8a622e8b8"
FASTEST_AT_4096 = ("TensorRT-LLM 1.3.0rc20 · moe_torch_flow_cutlass", 725_787)


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


@pytest.fixture
def aic_bundled_registry(make_app: MakeApp, db: StoreUnderTest) -> Iterator[str]:
    """The bundled AIConfigurator slice (33,125 measurements), ingested as a first start does, served."""
    bundled = SOURCES["aiconfigurator"].bundled
    summary = ingest(db.sessions, Settings(database_url=db.url), "aiconfigurator", snapshot=bundled)
    assert summary.status == "succeeded", summary.errors
    with serving(make_app(db)) as base:
        yield base
