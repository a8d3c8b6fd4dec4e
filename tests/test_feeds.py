"""The Atom feeds of new records: valid RFC 4287, matching the record history."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import pytest

from kernelindex.store.records import catalogue_records, find_workload, workload_records
from kernelindex.web.feeds import ATOM, Feed, FeedEntry, atom_feed
from kernelindex.web.format import improvement_factor

A = f"{{{ATOM}}}"
CONV2D = "l1-040-conv2d-residual-block"


def parse_time(text: str) -> datetime:
    assert text.endswith("Z"), text  # RFC 3339, in UTC
    return datetime.fromisoformat(text)


def check_atom(body: bytes) -> ET.Element:
    """Parse a feed and check what RFC 4287 requires of a feed and of each entry."""
    assert body.startswith(b'<?xml version="1.0" encoding="utf-8"?>')
    feed = ET.fromstring(body)
    assert feed.tag == f"{A}feed"
    for name in ("id", "title", "updated"):
        assert len(feed.findall(f"{A}{name}")) == 1, name
        assert feed.findtext(f"{A}{name}")
    parse_time(feed.findtext(f"{A}updated"))
    assert feed.findtext(f"{A}author/{A}name") == "KernelIndex"
    links = {link.get("rel"): link for link in feed.findall(f"{A}link")}
    assert set(links) == {"self", "alternate"}
    assert links["self"].get("type") == "application/atom+xml"
    ids = []
    for entry in feed.findall(f"{A}entry"):
        for name in ("id", "title", "updated", "summary"):
            assert len(entry.findall(f"{A}{name}")) == 1, name
            assert entry.findtext(f"{A}{name}")
        parse_time(entry.findtext(f"{A}updated"))
        [link] = entry.findall(f"{A}link")
        assert link.get("rel") == "alternate" and link.get("href").startswith("http://testserver/runs/")
        assert entry.find(f"{A}summary").get("type") == "text"
        ids.append(entry.findtext(f"{A}id"))
    assert len(set(ids)) == len(ids)
    # Nothing outside the Atom namespace.
    assert all(element.tag.startswith(A) for element in feed.iter())
    return feed


def test_catalogue_feed_is_valid_atom_listing_the_newest_records(client, loaded_db):
    response = client.get("/records.atom")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/atom+xml"
    assert response.headers["cache-control"].startswith("public")
    feed = check_atom(response.content)
    assert feed.findtext(f"{A}id") == "tag:kernelindex.dev,2026:records"
    links = {link.get("rel"): link.get("href") for link in feed.findall(f"{A}link")}
    assert links == {"self": "http://testserver/records.atom", "alternate": "http://testserver/records"}
    with loaded_db.sessions() as session:
        records = catalogue_records(session, limit=50)
    entries = feed.findall(f"{A}entry")
    assert [e.findtext(f"{A}id") for e in entries] == [
        f"tag:kernelindex.dev,2026:records/{r.run_name}" for r in records
    ]
    assert [parse_time(e.findtext(f"{A}updated")) for e in entries] == [r.observed_at for r in records]
    assert [e.find(f"{A}link").get("href") for e in entries] == [
        f"http://testserver/runs/{r.run_name}" for r in records
    ]
    assert parse_time(feed.findtext(f"{A}updated")) == records[0].observed_at


def test_workload_feed_lists_every_record_of_the_workload(client, loaded_db):
    response = client.get(f"/workloads/{CONV2D}/records.atom")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/atom+xml"
    feed = check_atom(response.content)
    assert feed.findtext(f"{A}id") == f"tag:kernelindex.dev,2026:workloads/{CONV2D}/records"
    assert feed.findtext(f"{A}title") == "KernelIndex: records for Conv2d residual block"
    links = {link.get("rel"): link.get("href") for link in feed.findall(f"{A}link")}
    assert links == {
        "self": f"http://testserver/workloads/{CONV2D}/records.atom",
        "alternate": f"http://testserver/workloads/{CONV2D}",
    }
    with loaded_db.sessions() as session:
        records = workload_records(session, find_workload(session, CONV2D).id)
    entries = feed.findall(f"{A}entry")
    assert [(e.findtext(f"{A}id"), e.findtext(f"{A}title"), e.findtext(f"{A}summary")) for e in entries] == [
        (
            "tag:kernelindex.dev,2026:records/sol-submission-36270",
            "Conv2d residual block on NVIDIA B200 · stack v1.1: Geometric, 25.91 µs",
            "Geometric set a new record for Conv2d residual block (l1-040-conv2d-residual-block) on "
            "NVIDIA B200 · stack v1.1: 25.91 µs, 1.07× faster than sol-submission-36257 (27.74 µs); "
            "run sol-submission-36270.",
        ),
        (
            "tag:kernelindex.dev,2026:records/sol-submission-36257",
            "Conv2d residual block on NVIDIA B200 · stack v1.1: Geometric, 27.74 µs",
            "Geometric set the first record for Conv2d residual block (l1-040-conv2d-residual-block) on "
            "NVIDIA B200 · stack v1.1: 27.74 µs, run sol-submission-36257.",
        ),
    ]
    assert [r.run_name for r in records] == ["sol-submission-36270", "sol-submission-36257"]
    assert [parse_time(e.findtext(f"{A}updated")) for e in entries] == [r.observed_at for r in records]
    assert feed.findtext(f"{A}updated") == "2026-08-12T12:38:20.914000Z"


def test_workload_without_records_has_a_valid_empty_feed(client):
    # Every run of 062 is held for review: no records, but still a valid feed.
    feed = check_atom(client.get("/workloads/l1-062-kv-cache-update-with-rope-backward/records.atom").content)
    assert feed.findall(f"{A}entry") == []


def test_unknown_workload_feed_is_a_404_problem(client):
    response = client.get("/workloads/l1-999-nothing/records.atom")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json() == {
        "type": "about:blank",
        "title": "Not found",
        "status": 404,
        "detail": "No workload is named 'l1-999-nothing'.",
    }


@pytest.mark.parametrize("path", ["/records.atom", f"/workloads/{CONV2D}/records.atom"])
def test_feeds_answer_a_conditional_get(client, path):
    first = client.get(path)
    etag = first.headers["etag"]
    assert etag.startswith('"')
    again = client.get(path, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.headers["etag"] == etag
    assert again.content == b""
    assert client.get(path, headers={"If-None-Match": '"something-else"'}).status_code == 200


def test_atom_feed_escapes_text_and_drops_characters_xml_cannot_carry():
    when = datetime(2026, 8, 12, 12, 0, tzinfo=UTC)
    body = atom_feed(
        Feed(
            id="tag:example.org,2026:feed",
            title='Kernels <fast> & "correct"',
            subtitle="control \x01 characters \ufffe removed",
            updated=when,
            self_url="https://example.org/feed.atom?a=1&b=2",
            alternate_url="https://example.org/",
            author="A & B",
            entries=[
                FeedEntry(
                    id="tag:example.org,2026:1",
                    title="</title><script>",
                    updated=when,
                    link="https://example.org/runs/1",
                    summary="5 < 6 & 7 > 3",
                )
            ],
        )
    )
    feed = ET.fromstring(body)
    assert feed.findtext(f"{A}title") == 'Kernels <fast> & "correct"'
    assert feed.findtext(f"{A}subtitle") == "control \ufffd characters \ufffd removed"
    assert feed.find(f"{A}link").get("href") == "https://example.org/feed.atom?a=1&b=2"
    assert feed.findtext(f"{A}entry/{A}title") == "</title><script>"
    assert feed.findtext(f"{A}entry/{A}summary") == "5 < 6 & 7 > 3"
    assert b"<script>" not in body


def test_atom_feed_refuses_naive_times():
    with pytest.raises(ValueError, match="time zone"):
        atom_feed(
            Feed(
                id="tag:example.org,2026:feed",
                title="t",
                subtitle="s",
                updated=datetime(2026, 1, 1),
                self_url="https://example.org/a",
                alternate_url="https://example.org/",
                author="a",
                entries=[],
            )
        )


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.2281, "1.23×"), (2.0, "2.00×"), (12.34, "12.3×"), (1.0049, "0.5 %"), (1.00049, "0.05 %"), (1.003, "0.3 %")],
)
def test_improvement_factor_shows_small_gains_without_reading_as_none(value, text):
    assert improvement_factor(value) == text
