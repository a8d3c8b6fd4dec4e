"""Measuring on a machine without the signing packages, signing elsewhere (no torch, no cryptography here).

A GPU machine that cannot install `cryptography` and `rfc8785` (a lent machine without a package index and
too little room to carry their wheels) can still measure: `kernelbench --unsigned` writes each payload as
`<name>.unsigned.json`, `{"format": UNSIGNED_FORMAT, "payload": {...}}`, and the operator signs the files
on their own machine with `python3 -m kernelindex.rerun sign --key KEYFILE FILES`, which writes the signed
bundle `<name>.json` beside each. The signature is the operator's statement either way: the key never
has to travel to the GPU machine. An unsigned file is never imported.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

UNSIGNED_FORMAT = "kernelindex-rerun-payload/v1"
SUFFIX = ".unsigned.json"


class UnsignedError(ValueError):
    """A file is not an unsigned payload this runner wrote; the message says why."""


def write_unsigned(payload: dict[str, Any], path: Path) -> Path:
    """Write `payload` unsigned as `path` with the `.unsigned.json` suffix (finite numbers only); the path."""
    target = path.with_name(path.name.removesuffix(".json") + SUFFIX)
    text = json.dumps({"format": UNSIGNED_FORMAT, "payload": payload}, indent=1, allow_nan=False)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, target)
    return target


def read_unsigned(path: Path) -> dict[str, Any]:
    """The payload of an unsigned file; UnsignedError if the file is not one."""
    if not path.name.endswith(SUFFIX):
        raise UnsignedError(f"{path.name} is not named *{SUFFIX}")
    try:
        document = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UnsignedError(f"{path.name} cannot be read as JSON: {exc}") from exc
    if not isinstance(document, dict) or document.get("format") != UNSIGNED_FORMAT:
        raise UnsignedError(f"{path.name} is not an unsigned payload ({UNSIGNED_FORMAT})")
    payload = document.get("payload")
    if not isinstance(payload, dict) or set(document) != {"format", "payload"}:
        raise UnsignedError(f"{path.name} must hold exactly a format and a payload object")
    return payload


def sign_files(paths: list[Path], private_key: Any) -> list[Path]:
    """Sign each unsigned file, writing `<name>.json` beside it (never over an existing file); the paths
    written. Needs `cryptography` and `rfc8785`, imported here only."""
    from kernelindex.rerun.bundle import sign_payload, write_bundle

    written = []
    for path in paths:
        payload = read_unsigned(path)
        target = path.with_name(path.name.removesuffix(SUFFIX) + ".json")
        if target.exists():
            raise UnsignedError(f"{target.name} exists already: a payload is signed once")
        write_bundle(sign_payload(payload, private_key), target)
        written.append(target)
    return written


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")  # json calls this for NaN and ±Infinity only
