"""Reading served pages in tests: the parsed HTML of a page that must answer 200, and a node's
text with its whitespace folded as a reader sees it."""

from __future__ import annotations

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient


def page(client: TestClient, path: str) -> BeautifulSoup:
    response = client.get(path)
    assert response.status_code == 200, response.text
    return BeautifulSoup(response.text, "html.parser")


def text(node) -> str:  # type: ignore[no-untyped-def]
    return " ".join(node.get_text(" ", strip=True).split())
