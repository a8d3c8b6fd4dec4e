"""Debian's Chromium (/usr/bin/chromium) driven by Playwright, for the browser tests; no browser is downloaded.

``launched()`` skips the test when Chromium or Playwright is missing; with
``KERNELINDEX_TEST_REQUIRE_ALL=1`` (CI) a skipped test fails the run (tests/conftest.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("KERNELINDEX_TEST_CHROMIUM", "/usr/bin/chromium"))
# Flags for a closed network: no background connections, no updates, no sync.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def launched() -> Iterator[Any]:
    """A headless Chromium (a Playwright ``Browser``), closed on exit."""
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
