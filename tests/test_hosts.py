"""The Host header is not the site's: absolute URLs come from ``KERNELINDEX_PUBLIC_URL``, other
hosts are refused, and no request header reaches a body the response cache keeps."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import select

from kernelindex.app import create_app
from kernelindex.db.tables import Run, Workload
from kernelindex.settings import Settings, served_at

PUBLIC = "https://kernelindex.example"
EVIL = "evil.example"


@pytest.fixture
def site(make_app, loaded_db) -> Iterator[tuple[TestClient, list[str]]]:  # type: ignore[no-untyped-def]
    """A browser of the app at its public origin (response cache on), and pages that write absolute URLs."""
    with loaded_db.sessions() as session:
        run = session.scalars(select(Run.name).order_by(Run.id)).first()
        workload = session.scalars(select(Workload.name).order_by(Workload.id)).first()
        digest = session.scalars(select(Run.digest).order_by(Run.id)).first()
    paths = [
        "/",
        "/workloads",
        f"/workloads/{workload}",
        f"/runs/{run}",
        f"/runs/{run}.json",
        f"/runs/{run}/cite.bib",
        f"/workloads/{workload}/cite.txt",
        f"/manifests/{digest}",
        "/records.atom",
        f"/workloads/{workload}/records.atom",
        "/sitemap.xml",
        "/robots.txt",
    ]
    with TestClient(make_app(loaded_db, public_url=PUBLIC), base_url=PUBLIC) as client:
        yield client, paths


def test_hosts_forged_host_is_refused_and_never_reaches_a_cached_page(site):
    client, paths = site
    for path in paths:
        for _ in range(4):
            evil = client.get(path, headers={"Host": EVIL})
            assert evil.status_code == 400, path
            assert EVIL not in evil.text
        page = client.get(path)
        assert page.status_code == 200, path
        assert EVIL not in page.text, path
    assert PUBLIC + "/runs/" in client.get(paths[3]).text


def test_hosts_trusted_alternate_host_still_writes_the_public_url(site):
    client, paths = site
    for path in paths:
        local = client.get(path, headers={"Host": "localhost:8000"})
        assert local.status_code == 200, path
        assert "localhost" not in local.text, path
        # The cache may answer the public host with what the local one made: the same bytes.
        assert client.get(path).content == local.content, path
    page = BeautifulSoup(client.get(paths[3], headers={"Host": "127.0.0.1"}).text, "html.parser")
    assert page.select_one('meta[property="og:url"]')["content"] == PUBLIC + paths[3]
    assert page.select_one('link[rel="canonical"]')["href"] == PUBLIC + paths[3]
    assert client.get("/robots.txt", headers={"Host": "localhost"}).text.endswith(f"Sitemap: {PUBLIC}/sitemap.xml\n")


@pytest.mark.parametrize(
    "header",
    [
        "X-Forwarded-Host",
        "X-Forwarded-Proto",
        "Forwarded",
        "X-Forwarded-Port",
        "Referer",
        "User-Agent",
        "Accept-Language",
    ],
)
def test_hosts_no_request_header_enters_a_cached_body(site, header):
    client, paths = site
    marker = "marker.evil.example"
    value = {"Forwarded": f"host={marker};proto=gopher", "X-Forwarded-Proto": "gopher"}.get(header, marker)
    for path in paths:
        client.get(path, headers={header: value})
        later = client.get(path)
        assert marker not in later.text and "gopher" not in later.text, path


def test_hosts_own_assets_are_linked_by_path(site):
    client, _ = site
    page = BeautifulSoup(client.get("/", headers={"Host": "localhost"}).text, "html.parser")
    assets = [page.select_one('link[rel="stylesheet"]')["href"], page.select_one('link[rel="icon"]')["href"]]
    assets.append(page.select_one("script[src]")["src"])
    assert all(asset.startswith("/static/") for asset in assets), assets


def test_hosts_trusted_list_comes_from_the_public_url():
    settings = Settings(public_url="https://kernelindex.example:8443/")
    assert settings.public_url == "https://kernelindex.example:8443"
    assert settings.trusted_hosts == ["kernelindex.example", "localhost", "127.0.0.1"]
    assert Settings().trusted_hosts == ["127.0.0.1", "localhost"]


@pytest.mark.parametrize(
    "value", ["kernelindex.example", "ftp://kernelindex.example", "https://k.example/sub", "https://"]
)
def test_hosts_public_url_must_be_an_origin(value):
    with pytest.raises(ValidationError):
        Settings(public_url=value)


# --- A server started on another port, with no public URL configured -------------------------


def test_hosts_the_served_port_is_the_origin_when_no_public_url_is_set(monkeypatch) -> None:
    monkeypatch.delenv("KERNELINDEX_PUBLIC_URL", raising=False)
    assert served_at(Settings(), "127.0.0.1", 8011).public_url == "http://127.0.0.1:8011"
    # A wildcard address names no host to open: links go to the machine itself.
    assert served_at(Settings(), "0.0.0.0", 9000).public_url == "http://127.0.0.1:9000"
    assert served_at(Settings(), "::1", 9000).public_url == "http://[::1]:9000"
    # Configured, the public URL wins, whatever the port; even the default's own value.
    monkeypatch.setenv("KERNELINDEX_PUBLIC_URL", "https://kernelindex.example")
    assert served_at(Settings(), "127.0.0.1", 8011).public_url == "https://kernelindex.example"
    monkeypatch.setenv("KERNELINDEX_PUBLIC_URL", "http://127.0.0.1:8000")
    assert served_at(Settings(), "127.0.0.1", 8011).public_url == "http://127.0.0.1:8000"


def test_hosts_a_server_on_port_8011_writes_its_links_there(monkeypatch, loaded_db, export_dir) -> None:
    """``kernelindex serve --port 8011`` builds its app on ``served_at``: canonical links, citations,
    feeds and the sitemap name :8011."""
    monkeypatch.delenv("KERNELINDEX_PUBLIC_URL", raising=False)
    origin = "http://127.0.0.1:8011"
    settings = served_at(Settings(database_url=loaded_db.url, export_dir=export_dir), "127.0.0.1", 8011)
    with loaded_db.sessions() as session:
        run = session.scalars(select(Run.name).order_by(Run.id)).first()
    with TestClient(create_app(settings, sessions=loaded_db.sessions), base_url=origin) as client:
        page = BeautifulSoup(client.get(f"/runs/{run}").text, "html.parser")
        assert page.select_one('link[rel="canonical"]')["href"] == f"{origin}/runs/{run}"
        assert f"{origin}/runs/{run}" in client.get(f"/runs/{run}/cite.bib").text
        feed = client.get("/records.atom").text
        assert f"{origin}/" in feed and ":8000" not in feed
        assert f"<loc>{origin}/" in client.get("/sitemap.xml").text
        assert ":8000" not in client.get(f"/runs/{run}/cite.bib").text
