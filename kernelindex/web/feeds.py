"""Atom feeds (RFC 4287) of record changes: pure functions from typed entries to bytes.

``atom_feed`` knows Atom and nothing of the registry; ``records_feed`` turns record
entries into a feed. Entry ids are ``tag:`` URIs (RFC 4151) naming the record-setting
run, so they stay the same whichever host serves the feed and in whichever feed (the
catalogue's or a workload's) the record appears.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from kernelindex import urls
from kernelindex.store.records import RecordEntry
from kernelindex.web.format import improvement_factor, latency

ATOM = "http://www.w3.org/2005/Atom"
TAG_AUTHORITY = "tag:kernelindex.dev,2026:"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class FeedEntry:
    id: str
    title: str
    updated: datetime
    link: str
    summary: str
    published: datetime | None = None


@dataclass(frozen=True)
class Feed:
    id: str
    title: str
    subtitle: str
    updated: datetime
    self_url: str
    alternate_url: str
    author: str
    entries: Sequence[FeedEntry]


def rfc3339(value: datetime) -> str:
    if value.tzinfo is None:
        raise ValueError("Atom dates need a time zone")
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


def _add(parent: ET.Element, tag: str, text: str | None = None, **attributes: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {key: _text(value) for key, value in attributes.items()})
    if text is not None:
        element.text = _text(text)
    return element


def atom_feed(feed: Feed) -> bytes:
    """The feed as a UTF-8 Atom document; the same input always gives the same bytes."""
    # Unprefixed names under a default namespace declared on the root, the way Atom is
    # usually written (ElementTree's own default_namespace refuses unqualified attributes).
    root = ET.Element("feed", {"xmlns": ATOM})
    _add(root, "id", feed.id)
    _add(root, "title", feed.title)
    _add(root, "subtitle", feed.subtitle)
    _add(root, "updated", rfc3339(feed.updated))
    author = _add(root, "author")
    _add(author, "name", feed.author)
    _add(root, "link", rel="self", type="application/atom+xml", href=feed.self_url)
    _add(root, "link", rel="alternate", type="text/html", href=feed.alternate_url)
    _add(root, "generator", "KernelIndex")
    for item in feed.entries:
        entry = _add(root, "entry")
        _add(entry, "id", item.id)
        _add(entry, "title", item.title)
        _add(entry, "updated", rfc3339(item.updated))
        if item.published is not None:
            _add(entry, "published", rfc3339(item.published))
        _add(entry, "link", rel="alternate", type="text/html", href=item.link)
        _add(entry, "summary", item.summary, type="text")
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode").encode()


def record_title(record: RecordEntry) -> str:
    return f"{record.workload_title} on {group_label(record)}: {record.implementation}, {latency(record.latency_ns)}"


def group_label(record: RecordEntry) -> str:
    """ "NVIDIA B200 · stack v1.1": the environment of the record's comparison group, as every page names it."""
    return record.environment_label


def improvement_text(record: RecordEntry) -> str:
    """ "1.07× faster than sol-submission-1 (27.7 µs)", or "first record" for a group's first."""
    if record.improvement is None or record.previous_run_name is None or record.previous_latency_ns is None:
        return "first record"
    return (
        f"{improvement_factor(record.improvement)} faster than {record.previous_run_name} "
        f"({latency(record.previous_latency_ns)})"
    )


def record_summary(record: RecordEntry) -> str:
    where = f"{record.workload_title} ({record.workload_slug}) on {group_label(record)}"
    if record.improvement is None:
        return (
            f"{record.implementation} set the first record for {where}: {latency(record.latency_ns)}, "
            f"run {record.run_name}."
        )
    return (
        f"{record.implementation} set a new record for {where}: {latency(record.latency_ns)}, "
        f"{improvement_text(record)}; run {record.run_name}."
    )


def records_feed(
    *,
    feed_id: str,
    title: str,
    subtitle: str,
    records: Sequence[RecordEntry],
    base_url: str,
    self_path: str,
    alternate_path: str,
    updated_if_empty: datetime = EPOCH,
) -> bytes:
    """An Atom feed of record changes; ``base_url`` (the public origin) makes links absolute."""
    entries = [
        FeedEntry(
            id=f"{TAG_AUTHORITY}records/{record.run_name}",
            title=record_title(record),
            updated=record.observed_at,
            published=record.observed_at,
            link=urls.absolute(base_url, urls.run(record.run_name)),
            summary=record_summary(record),
        )
        for record in records
    ]
    return atom_feed(
        Feed(
            id=feed_id,
            title=title,
            subtitle=subtitle,
            updated=max((record.observed_at for record in records), default=updated_if_empty),
            self_url=urls.absolute(base_url, self_path),
            alternate_url=urls.absolute(base_url, alternate_path),
            author="KernelIndex",
            entries=entries,
        )
    )
