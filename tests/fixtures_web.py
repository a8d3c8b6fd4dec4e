"""The app under test (a pytest plugin that tests/conftest.py loads).

- ``client``: a browser of the app over ``loaded_db`` (the bundled catalogue).
- ``empty_client``: the same over ``db`` (an empty store).
- ``make_app(store, **settings)``: the app over a store with other ``Settings``, for tests
  that need a secret key, a response cache off, or several browsers of one app.

Every app built here caches its export in the test's own folder (``export_dir``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from kernelindex.app import create_app
from kernelindex.settings import Settings

if TYPE_CHECKING:
    from tests.conftest import StoreUnderTest

MakeApp = Callable[..., FastAPI]


@pytest.fixture
def export_dir(tmp_path: Path) -> Path:
    return tmp_path / "exports"


@pytest.fixture
def make_app(export_dir: Path) -> MakeApp:
    def make(store: StoreUnderTest, **settings: Any) -> FastAPI:
        """The app over ``store``'s sessions; ``settings`` are ``Settings`` fields to set."""
        # The test client asks for http://testserver: that is the site's public origin here.
        values = {"database_url": store.url, "export_dir": export_dir, "public_url": "http://testserver", **settings}
        return create_app(Settings(**values), sessions=store.sessions)

    return make


@pytest.fixture
def client(make_app: MakeApp, loaded_db: StoreUnderTest) -> Iterator[TestClient]:
    with TestClient(make_app(loaded_db)) as client:
        yield client


@pytest.fixture
def empty_client(make_app: MakeApp, db: StoreUnderTest) -> Iterator[TestClient]:
    with TestClient(make_app(db)) as client:
        yield client
