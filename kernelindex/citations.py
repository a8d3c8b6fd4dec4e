"""Citations of a record (PRODUCT.md §8): BibTeX, RIS, CSL-JSON and a plain-text line.

Each holds the title, the source and its external id, the permalink, the digest and the
access date, so a reader of the paper can fetch exactly the record that was cited and
check it with ``kernelindex verify``. The renderers are pure: a ``CitableRecord`` in, text
out; the web layer decides what a record is (a run, a leaderboard as of a date).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class CitableRecord:
    key: str  # a stable citation key, e.g. the run's name
    title: str
    author: str  # who made what is cited (an implementation's project), or who compiled it
    source: str  # e.g. "NVIDIA SOL-ExecBench"
    external_id: str | None  # the source's own id, worded as the source words it ("submission 16893")
    permalink: str
    digest: str
    issued: date  # when the record was observed (a run) or the date it is cited as of (a leaderboard)
    accessed: date
    note: str | None = None  # what else the citation pins down, in a sentence or two
    digest_label: str = "Digest"  # what the digest is of, when that is not the record itself

    @property
    def source_line(self) -> str:
        return self.source + (f", {self.external_id}" if self.external_id else "")

    @property
    def full_note(self) -> str:
        return f"{self.digest_label} {self.digest}." + (f" {self.note}" if self.note else "")


# Media types of the four formats, keyed by the suffix after ``cite.`` in the URL.
FORMATS = {
    "bib": "application/x-bibtex; charset=utf-8",
    "ris": "application/x-research-info-systems; charset=utf-8",
    "csl.json": "application/vnd.citationstyles.csl+json",
    "txt": "text/plain; charset=utf-8",
}
FORMAT_LABELS = {"bib": "BibTeX", "ris": "RIS", "csl.json": "CSL-JSON", "txt": "Plain text"}

_BIBTEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    # Not ``\{`` and ``\}``: BibTeX counts every brace, escaped or not, so an unbalanced one
    # in a name would end (or swallow) the field; these commands hold no brace of their own.
    "{": r"\textbraceleft{}",
    "}": r"\textbraceright{}",
    "%": r"\%",
    "&": r"\&",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}",
}


def _one_line(value: str) -> str:
    return " ".join(value.split())


def run_title(implementation: str, workload: str, gpu: str) -> str:
    """A run's title as a reader cites it: "Geometric on Conv2d residual block (NVIDIA B200)"."""
    return f"{_one_line(implementation)} on {_one_line(workload)} ({_one_line(gpu)})"


def _bibtex_text(value: str) -> str:
    """``value`` as BibTeX/LaTeX text: every special character a command or escaped, so the only
    braces in it are the balanced ``{}`` that end a command, and BibTeX and biber parse any value."""
    return "".join(_BIBTEX_SPECIALS.get(char, char) for char in _one_line(value))


def _bibtex_key(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9:_-]", "-", value)


def bibtex(record: CitableRecord) -> str:
    """A ``@misc`` entry; the extra braces keep the title and author as published (no case change,
    no splitting of a project name into given and family names)."""
    fields = [
        ("title", "{" + _bibtex_text(record.title) + "}"),
        ("author", "{" + _bibtex_text(record.author) + "}"),
        ("howpublished", _bibtex_text(f"KernelIndex, from {record.source_line}")),
        ("year", str(record.issued.year)),
        ("url", record.permalink),
        ("urldate", record.accessed.isoformat()),
        ("note", _bibtex_text(f"{record.full_note} Accessed {record.accessed.isoformat()}.")),
    ]
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@misc{{{_bibtex_key('kernelindex:' + record.key)},\n{body}\n}}\n"


def ris(record: CitableRecord) -> str:
    """A RIS record of type DATA (dataset), one ``TAG  - value`` a line, CRLF line ends, ending with ``ER``."""
    lines = [
        ("TY", "DATA"),
        ("TI", _one_line(record.title)),
        ("AU", _one_line(record.author)),
        ("PY", str(record.issued.year)),
        ("DA", record.issued.strftime("%Y/%m/%d")),
        ("DB", "KernelIndex"),
        ("PB", _one_line(record.source)),
        *([("AN", _one_line(record.external_id))] if record.external_id else []),
        ("UR", record.permalink),
        ("Y2", record.accessed.strftime("%Y/%m/%d")),
        ("N1", f"{record.digest_label} {record.digest}"),
        *([("N1", _one_line(record.note))] if record.note else []),
        ("ID", record.key),
        ("ER", ""),
    ]
    return "".join(f"{tag}  - {value}\r\n" for tag, value in lines)


def _date_parts(value: date) -> dict[str, list[list[int]]]:
    return {"date-parts": [[value.year, value.month, value.day]]}


def csl_json(record: CitableRecord) -> str:
    """A CSL-JSON array with one item of type ``dataset`` (valid against the CSL data schema v1.0)."""
    item = {
        "id": record.key,
        "type": "dataset",
        "title": record.title,
        "author": [{"literal": record.author}],
        "publisher": "KernelIndex",
        "source": record.source,
        "URL": record.permalink,
        "issued": _date_parts(record.issued),
        "accessed": _date_parts(record.accessed),
        "note": record.full_note,
    }
    if record.external_id:
        item["number"] = record.external_id
    return json.dumps([item], ensure_ascii=False, indent=2) + "\n"


def plain_text(record: CitableRecord) -> str:
    """One line a reader can paste: author, title, source, permalink, digest, access date."""
    note = f" {record.note}" if record.note else ""
    return (
        f"{record.author}. “{_one_line(record.title)}.” {record.source_line}. KernelIndex, {record.issued.year}. "
        f"{record.permalink} ({record.digest}).{note} Accessed {record.accessed.isoformat()}.\n"
    )


RENDERERS = {"bib": bibtex, "ris": ris, "csl.json": csl_json, "txt": plain_text}
