"""Citations of a record (PRODUCT.md §8): BibTeX, RIS, CSL-JSON and a plain-text line.

Each holds the title, the source and its external id, the permalink, the digest and the
access date, so a reader of the paper can fetch exactly the record that was cited and
check it with ``kernelindex verify``.
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
    author: str  # who made what is cited (an implementation's project), or the source
    source: str  # e.g. "NVIDIA SOL-ExecBench"
    external_id: str | None
    permalink: str
    digest: str
    issued: date  # when the record was observed
    accessed: date


FORMATS = {
    "bib": "application/x-bibtex; charset=utf-8",
    "ris": "application/x-research-info-systems; charset=utf-8",
    "csl.json": "application/vnd.citationstyles.csl+json",
    "txt": "text/plain; charset=utf-8",
}

_BIBTEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "%": r"\%",
    "&": r"\&",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}",
}


def _bibtex_text(value: str) -> str:
    return "".join(_BIBTEX_SPECIALS.get(char, char) for char in value)


def _bibtex_key(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9:_-]", "-", value)


def bibtex(record: CitableRecord) -> str:
    """A ``@misc`` entry; braces keep the title's capitalisation as published."""
    source = record.source + (f", {record.external_id}" if record.external_id else "")
    fields = [
        ("title", "{" + _bibtex_text(record.title) + "}"),
        ("author", "{" + _bibtex_text(record.author) + "}"),
        ("howpublished", _bibtex_text(f"KernelIndex record of {source}")),
        ("year", str(record.issued.year)),
        ("url", record.permalink),
        ("urldate", record.accessed.isoformat()),
        ("note", _bibtex_text(f"Digest {record.digest}. Accessed {record.accessed.isoformat()}.")),
    ]
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@misc{{{_bibtex_key('kernelindex:' + record.key)},\n{body}\n}}\n"


def ris(record: CitableRecord) -> str:
    """A RIS record of type DATA (dataset), one tag a line, ending with ``ER``."""

    def clean(value: str) -> str:
        return " ".join(value.split())

    lines = [
        ("TY", "DATA"),
        ("TI", clean(record.title)),
        ("AU", clean(record.author)),
        ("PY", str(record.issued.year)),
        ("DA", record.issued.strftime("%Y/%m/%d")),
        ("DB", "KernelIndex"),
        ("PB", clean(record.source)),
        *([("AN", clean(record.external_id))] if record.external_id else []),
        ("UR", record.permalink),
        ("Y2", record.accessed.strftime("%Y/%m/%d")),
        ("N1", f"Digest {record.digest}"),
        ("ID", record.key),
        ("ER", ""),
    ]
    return "".join(f"{tag}  - {value}\r\n" for tag, value in lines)


def _date_parts(value: date) -> dict[str, list[list[int]]]:
    return {"date-parts": [[value.year, value.month, value.day]]}


def csl_json(record: CitableRecord) -> str:
    """A CSL-JSON array with one item of type ``dataset``."""
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
        "note": f"Digest {record.digest}",
    }
    if record.external_id:
        item["number"] = record.external_id
    return json.dumps([item], ensure_ascii=False, indent=2) + "\n"


def plain_text(record: CitableRecord) -> str:
    source = record.source + (f", {record.external_id}" if record.external_id else "")
    return (
        f"{record.author}. “{record.title}.” {source}. KernelIndex, {record.issued.year}. "
        f"{record.permalink} ({record.digest}). Accessed {record.accessed.isoformat()}.\n"
    )


RENDERERS = {"bib": bibtex, "ris": ris, "csl.json": csl_json, "txt": plain_text}
