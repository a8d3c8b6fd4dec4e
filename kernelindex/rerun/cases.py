"""The suites: which fixture defines each workload, and its cases in their published order (no torch)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_FIXTURES = REPO_ROOT / "fixtures" / "sol-execbench" / "api" / "kernels"

# Workload slug -> SOL-ExecBench kernel id (the fixture is `<id>.json`).
WORKLOADS: dict[str, int] = {
    "l1-039-adaptive-instance-normalization-2d-backward": 39,
    "l1-040-conv2d-residual-block": 40,
}


class SuiteError(ValueError):
    """A fixture is missing or does not have the expected shape."""


@dataclass(frozen=True)
class Case:
    index: int
    axes: dict[str, int]


@dataclass(frozen=True)
class Suite:
    slug: str
    kernel_id: int
    source_name: str
    definition: dict[str, Any]
    cases: tuple[Case, ...]
    fixture_path: str
    fixture_sha256: str

    @property
    def cases_sha256(self) -> str:
        return cases_sha256(self.cases)

    @property
    def input_names(self) -> list[str]:
        return list(self.definition["inputs"])

    @property
    def output_names(self) -> list[str]:
        return list(self.definition["outputs"])

    def record(self) -> dict[str, Any]:
        """What a bundle says about the suite it measured."""
        return {
            "slug": self.slug,
            "source": "sol-execbench",
            "sourceKernelId": self.kernel_id,
            "sourceName": self.source_name,
            "fixturePath": self.fixture_path,
            "fixtureSha256": self.fixture_sha256,
            "casesSha256": self.cases_sha256,
            "caseCount": len(self.cases),
        }


def cases_sha256(cases: tuple[Case, ...] | list[Case]) -> str:
    """sha256 (hex) of the RFC 8785 canonical JSON of [{"index", "axes"}, ...] in suite order."""
    import rfc8785  # here, not at import: `--help` works where it is not installed yet

    listing: list[dict[str, int | dict[str, int]]] = [{"index": c.index, "axes": c.axes} for c in cases]
    return hashlib.sha256(rfc8785.dumps(listing)).hexdigest()


def load_suite(slug: str, fixtures: Path | str | None = None) -> Suite:
    """Read a workload's definition and cases from `<fixtures>/<kernel id>.json` (API shape `{"data": ...}`)."""
    if slug not in WORKLOADS:
        raise SuiteError(f"unknown workload {slug!r}; known: {', '.join(sorted(WORKLOADS))}")
    kernel_id = WORKLOADS[slug]
    root = Path(fixtures) if fixtures is not None else DEFAULT_FIXTURES
    path = root / f"{kernel_id}.json"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SuiteError(f"cannot read the fixture for {slug}: {path}: {exc.strerror}") from exc
    try:
        body = json.loads(raw)
        data = body["data"] if isinstance(body, dict) and "data" in body else body
        cases = tuple(
            Case(index=i, axes={k: int(v) for k, v in w["axes"].items()}) for i, w in enumerate(data["workloads"])
        )
        definition = {k: data[k] for k in ("axes", "inputs", "outputs", "description")}
        name = str(data["name"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SuiteError(f"fixture {path} is not a SOL-ExecBench kernel definition: {exc!r}") from exc
    if not cases:
        raise SuiteError(f"fixture {path} has no cases")
    try:
        shown = str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        shown = str(path)
    return Suite(
        slug=slug,
        kernel_id=kernel_id,
        source_name=name,
        definition=definition,
        cases=cases,
        fixture_path=shown,
        fixture_sha256=hashlib.sha256(raw).hexdigest(),
    )


def select_cases(suite: Suite, indices: list[int] | None) -> tuple[Case, ...]:
    """The chosen cases in suite order (all when `indices` is None); unknown indices raise SuiteError."""
    if indices is None:
        return suite.cases
    known = {c.index for c in suite.cases}
    missing = sorted(set(indices) - known)
    if missing:
        raise SuiteError(f"{suite.slug} has no case {missing} (cases are 0..{len(suite.cases) - 1})")
    wanted = set(indices)
    return tuple(c for c in suite.cases if c.index in wanted)
