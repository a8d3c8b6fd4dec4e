"""The catalogue export, robots.txt and the sitemap."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from kernelindex.db.tables import Attestation, Environment, Implementation, Protocol, Run, User, Workload
from kernelindex.manifests import Implementation as ImplementationManifest
from kernelindex.store import export
from kernelindex.store.manifests import put
from kernelindex.verify import verify_document
from kernelindex.web import exports as web_exports
from tests.factories import attestation_manifest

EXPORT = "/exports/catalog.jsonl.gz"
SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
TABLES = {
    "WorkloadSuite": Workload,
    "Implementation": Implementation,
    "BenchmarkProtocol": Protocol,
    "ExecutionEnvironment": Environment,
    "BenchmarkRun": Run,
    "Attestation": Attestation,
}


def lines_of(response) -> list[dict]:
    return [json.loads(line) for line in gzip.decompress(response.content).decode().splitlines()]


def exported_files(directory):
    return sorted(path.name for path in directory.glob("catalog-*.jsonl.gz*"))


def add_implementation(sessions, name: str) -> str:
    manifest = ImplementationManifest.model_validate(
        {
            "apiVersion": "kernelindex.dev/v1alpha1",
            "kind": "Implementation",
            "metadata": {"name": name, "title": "Test project"},
            "spec": {"project": {"name": "Test project"}, "revision": "r1", "source": {"available": False}},
        }
    )
    columns = {
        "project": "Test project",
        "project_slug": "test-project",
        "revision": "r1",
        "runtime": None,
        "license": None,
        "source_available": False,
        "has_install_recipe": False,
    }
    with sessions() as session:
        put(session, Implementation, manifest, columns, None, datetime.now(UTC))
        session.commit()
    return manifest.digest


def test_export_holds_every_manifest_and_each_line_verifies(client, loaded_db):
    response = client.get(EXPORT)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/gzip"
    assert response.headers["content-disposition"] == 'attachment; filename="catalog.jsonl.gz"'
    assert "content-encoding" not in response.headers  # the gzip file itself, not a compressed transfer
    lines = lines_of(response)
    assert all(set(line) == {"digest", "manifest"} for line in lines)
    checks = verify_document(lines)
    assert len(checks) == len(lines)
    assert all(check.ok for check in checks), [check for check in checks if not check.ok][:3]
    # Each line also verifies on its own.
    assert all(check.ok for line in lines[:50] for check in verify_document(line))
    kinds = [line["manifest"]["kind"] for line in lines]
    with loaded_db.sessions() as session:
        counts = {kind: session.scalar(select(func.count()).select_from(table)) for kind, table in TABLES.items()}
        run_names = session.scalars(select(Run.name).order_by(Run.id)).all()
    assert {kind: kinds.count(kind) for kind in TABLES} == counts
    assert counts["BenchmarkRun"] == 708 and counts["WorkloadSuite"] == 235
    # A stable order: kind by kind, then in the order the records were created.
    assert kinds == sorted(kinds, key=list(TABLES).index)
    assert [line["manifest"]["metadata"]["name"] for line in lines if line["manifest"]["kind"] == "BenchmarkRun"] == [
        *run_names
    ]


def test_export_sha256_matches_the_bytes(client):
    response = client.get(EXPORT)
    sha256 = hashlib.sha256(response.content).hexdigest()
    assert response.headers["etag"] == f'"{sha256}"'
    assert response.headers["x-checksum-sha256"] == sha256
    assert (
        response.headers["repr-digest"]
        == f"sha-256=:{base64.b64encode(hashlib.sha256(response.content).digest()).decode()}:"
    )
    assert response.headers["content-length"] == str(len(response.content))
    checksum = client.get(f"{EXPORT}.sha256")
    assert checksum.status_code == 200
    assert checksum.headers["content-type"] == "text/plain; charset=utf-8"
    assert checksum.text == f"{sha256}  catalog.jsonl.gz\n"  # the format sha256sum -c reads


def test_export_answers_head_and_conditional_get(client):
    full = client.get(EXPORT)
    head = client.head(EXPORT)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["etag"] == full.headers["etag"]
    assert head.headers["content-length"] == str(len(full.content))
    again = client.get(EXPORT, headers={"If-None-Match": full.headers["etag"]})
    assert again.status_code == 304
    assert again.content == b""
    part = client.get(EXPORT, headers={"Range": "bytes=0-1"})
    assert part.status_code == 206
    assert part.content == b"\x1f\x8b"  # gzip magic


def test_second_request_reuses_the_cached_file(client, export_dir, monkeypatch):
    first = client.get(EXPORT)
    [gz] = export_dir.glob("catalog-*.jsonl.gz")
    stat = gz.stat()

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the export was rebuilt although the catalogue did not change")

    monkeypatch.setattr(export, "_write", no_rebuild)
    second = client.get(EXPORT)
    assert second.content == first.content
    assert client.get(f"{EXPORT}.sha256").status_code == 200
    assert gz.stat().st_mtime_ns == stat.st_mtime_ns and gz.stat().st_ino == stat.st_ino
    assert exported_files(export_dir) == [gz.name, gz.name + ".sha256"]


def test_rebuilding_an_unchanged_catalogue_gives_the_same_bytes(client, export_dir):
    first = client.get(EXPORT)
    for path in export_dir.iterdir():
        path.unlink()
    assert client.get(EXPORT).content == first.content


def test_a_change_to_the_catalogue_makes_a_new_export(client, loaded_db, export_dir):
    before = client.get(EXPORT)
    old_files = exported_files(export_dir)
    digest = add_implementation(loaded_db.sessions, "test-implementation-added")
    after = client.get(EXPORT)
    assert after.status_code == 200
    assert after.headers["etag"] != before.headers["etag"]
    lines = lines_of(after)
    assert len(lines) == len(lines_of(before)) + 1
    added = [line for line in lines if line["manifest"]["metadata"]["name"] == "test-implementation-added"]
    assert [line["digest"] for line in added] == [digest]
    assert all(check.ok for check in verify_document(lines))
    assert client.get(f"{EXPORT}.sha256").text.split()[0] == hashlib.sha256(after.content).hexdigest()
    # The previous export is kept for responses still reading it; older ones are pruned.
    files = exported_files(export_dir)
    assert len(files) == 4 and set(old_files) < set(files)
    add_implementation(loaded_db.sessions, "test-implementation-added-again")
    client.get(EXPORT)
    assert len(exported_files(export_dir)) == 4
    assert not set(old_files) & set(exported_files(export_dir))


def add_attestations(sessions) -> dict[str, str]:
    """A published and a hidden attestation of run 16893; returns their digests by state."""
    now = datetime(2026, 8, 20, tzinfo=UTC)
    digests = {}
    with sessions() as session:
        run = session.scalar(select(Run).where(Run.name == "sol-submission-16893"))
        user = User(handle="reader", password_hash="x", is_maintainer=False, created_at=now)
        session.add(user)
        session.flush()
        for state in ("published", "hidden"):
            body = f"Reproduced within 2% ({state})."
            manifest = attestation_manifest(run, f"attestation-{state}", "reader", body, now)
            columns = {"run_id": run.id, "user_id": user.id, "type": "reproduced", "state": state}
            put(session, Attestation, manifest, columns, None, now)
            digests[state] = manifest.digest
        session.commit()
    return digests


def test_export_holds_published_attestations_only(client, loaded_db):
    before = lines_of(client.get(EXPORT))
    digests = add_attestations(loaded_db.sessions)
    lines = lines_of(client.get(EXPORT))
    attestations = [line for line in lines if line["manifest"]["kind"] == "Attestation"]
    assert [line["digest"] for line in attestations] == [digests["published"]]
    assert lines[: len(before)] == before  # attestations are the last kind: the lines before are unchanged
    assert all(check.ok for check in verify_document(lines))
    # Hiding the published one (moderation) takes it out of the next export.
    with loaded_db.sessions() as session:
        session.scalars(select(Attestation).where(Attestation.state == "published")).one().state = "hidden"
        session.commit()
    assert lines_of(client.get(EXPORT)) == before


def test_an_export_is_never_published_while_the_catalogue_changes(client, export_dir, monkeypatch):
    states = iter(range(1_000))
    monkeypatch.setattr(export, "catalogue_state", lambda session: f"{next(states):024x}")
    response = client.get(EXPORT)
    assert response.status_code == 503
    assert response.headers["retry-after"] == "60"
    assert response.headers["content-type"] == "application/problem+json"
    assert exported_files(export_dir) == []
    assert not list(export_dir.glob(".catalog-*.tmp"))


# --- robots.txt and the sitemap ----------------------------------------------------------


def test_robots_allows_pages_and_points_at_the_sitemap(client):
    response = client.get("/robots.txt")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    lines = response.text.splitlines()
    assert lines[0] == "User-agent: *"
    assert "Sitemap: http://testserver/sitemap.xml" in lines
    assert "Allow: /" in lines
    disallowed = [line.removeprefix("Disallow: ") for line in lines if line.startswith("Disallow:")]
    assert "/api/" in disallowed and "/search" in disallowed
    assert not any(path in ("/", "/workloads", "/runs/") for path in disallowed)
    for line in lines:
        assert line == "" or line.split(":", 1)[0] in {"User-agent", "Allow", "Disallow", "Sitemap"}


def urls_of(body: bytes) -> list[str]:
    root = ET.fromstring(body)
    assert root.tag == f"{SITEMAP}urlset"
    for url in root:
        assert url.tag == f"{SITEMAP}url"
        assert {child.tag for child in url} <= {f"{SITEMAP}loc", f"{SITEMAP}lastmod"}
        lastmod = url.findtext(f"{SITEMAP}lastmod")
        if lastmod:
            assert datetime.fromisoformat(lastmod).tzinfo is not None
    return [url.findtext(f"{SITEMAP}loc") for url in root]


def test_sitemap_lists_every_page_worth_indexing(client, loaded_db):
    response = client.get("/sitemap.xml")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/xml"
    assert response.content.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    urls = urls_of(response.content)
    assert len(urls) == len(set(urls))
    assert all(url.startswith("http://testserver/") for url in urls)
    base = "http://testserver"
    for path in (
        "/",
        "/workloads",
        "/records",
        "/workloads/l1-040-conv2d-residual-block",
        "/runs/sol-submission-16893",
        "/gpus/b200",
        "/models/nafnet",
        "/implementations/geometric",
        "/sources/sol-execbench",
    ):
        assert base + path in urls, path
    with loaded_db.sessions() as session:
        implementations = len(set(session.scalars(select(Implementation.project_slug))))
    assert sum("/runs/" in url for url in urls) == 708
    assert sum("/workloads/" in url for url in urls) == 235
    assert sum("/implementations/" in url for url in urls) == implementations
    root = ET.fromstring(response.content)
    run = next(u for u in root if u.findtext(f"{SITEMAP}loc") == base + "/runs/sol-submission-16893")
    assert run.findtext(f"{SITEMAP}lastmod") == "2026-08-15T02:11:00Z"


def test_a_large_sitemap_becomes_an_index_of_parts(loaded_db, make_app, monkeypatch):
    # The limit changes between requests, which only a restart does in production: no response cache.
    client = TestClient(make_app(loaded_db, response_cache_mb=0))
    whole = urls_of(client.get("/sitemap.xml").content)
    monkeypatch.setattr(web_exports, "SITEMAP_LIMIT", 200)
    response = client.get("/sitemap.xml")
    assert response.status_code == 200
    root = ET.fromstring(response.content)
    assert root.tag == f"{SITEMAP}sitemapindex"
    parts = [entry.findtext(f"{SITEMAP}loc") for entry in root.findall(f"{SITEMAP}sitemap")]
    count = -(-len(whole) // 200)
    assert parts == [f"http://testserver/sitemaps/{n}.xml" for n in range(1, count + 1)]
    joined = []
    for url in parts:
        part = urls_of(client.get(url.removeprefix("http://testserver")).content)
        assert 0 < len(part) <= 200
        joined += part
    assert joined == whole
    assert client.get(f"/sitemaps/{count + 1}.xml").status_code == 404
    assert client.get("/sitemaps/0.xml").status_code == 404
    assert client.get("/sitemaps/one.xml").status_code == 404


def test_sitemap_answers_a_conditional_get(client):
    first = client.get("/sitemap.xml")
    assert client.get("/sitemap.xml", headers={"If-None-Match": first.headers["etag"]}).status_code == 304
