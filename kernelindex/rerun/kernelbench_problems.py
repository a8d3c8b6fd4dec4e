"""KernelBench problems as the runner measures them: which files, their names, and the progress of a run
(no torch here).

The problem files are the bundled snapshot's (`fixtures/kernelbench/`), at the newest commit that
`refs.json` lists; levels 1-3 only (level 4 downloads pretrained models by name). Each problem's
workload name is the registry's own (`kernelbench-l<level>-<number>-<words>-<sha256[:8]>`), so the
importer files a bundle under the workload its content defines.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = REPO_ROOT / "fixtures" / "kernelbench"
LEVELS = (1, 2, 3)
MODES = ("eager", "compile")
PROBLEM_FILE = re.compile(r"(?P<number>[0-9]{1,6})_(?P<words>[A-Za-z0-9_.-]+)\.py")
MAX_NAME = 200
# The protocol of a progress file that names none (files written before protocols were named there).
STRICT_PROTOCOL = "kernelindex-rerun-v2"


class ProblemError(ValueError):
    """The snapshot or a requested problem cannot be found."""


@dataclass(frozen=True)
class Problem:
    level: int
    file_name: str
    commit: str
    path: Path  # the file on disk
    sha256: str

    @property
    def key(self) -> str:
        """`level1/19_ReLU.py`: how the command line and the progress file name a problem."""
        return f"level{self.level}/{self.file_name}"

    @property
    def number(self) -> int:
        return int(self.file_name.split("_", 1)[0])

    @property
    def source_path(self) -> str:
        """The path inside the upstream repository."""
        return f"KernelBench/level{self.level}/{self.file_name}"

    @property
    def shown_path(self) -> str:
        """The file, relative to the repository when it lies inside it."""
        try:
            return str(self.path.resolve().relative_to(REPO_ROOT))
        except ValueError:
            return str(self.path)

    @property
    def slug(self) -> str:
        return workload_name(self.level, self.file_name, self.sha256)


def readable_name(file_name: str) -> str:
    """`19_ReLU.py` -> `ReLU`; `1_Square_matrix_multiplication_.py` -> `Square matrix multiplication`."""
    words = PROBLEM_FILE.fullmatch(file_name)
    text = words["words"] if words else file_name.removesuffix(".py")
    return " ".join(text.replace("_", " ").split()) or file_name


def workload_name(level: int, file_name: str, sha256: str) -> str:
    """The registry's name of a problem's content (the KernelBench ingest names workloads the same way)."""
    suffix = f"-{sha256[:8]}"
    words = re.sub(r"[^a-z0-9]+", "-", readable_name(file_name).lower()).strip("-") or "unknown"
    head = f"kernelbench-l{level}-{int(file_name.split('_', 1)[0])}-{words}"
    return head[: MAX_NAME - len(suffix)].rstrip("-") + suffix


def newest_commit(root: Path = DEFAULT_ROOT) -> str:
    try:
        refs = json.loads((root / "refs.json").read_text(encoding="utf-8"))
        return str(refs[-1]["commit"])
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise ProblemError(f"cannot read the newest commit from {root / 'refs.json'}: {exc}") from exc


def list_problems(root: Path = DEFAULT_ROOT, levels: tuple[int, ...] = LEVELS) -> list[Problem]:
    """Every problem of `levels` at the newest commit, by level then number."""
    commit = newest_commit(root)
    found = []
    for level in levels:
        folder = root / "files" / commit / "KernelBench" / f"level{level}"
        if not folder.is_dir():
            raise ProblemError(f"no level {level} problems at {folder}")
        for path in folder.glob("*.py"):
            if PROBLEM_FILE.fullmatch(path.name):
                sha = hashlib.sha256(path.read_bytes()).hexdigest()
                found.append(Problem(level, path.name, commit, path, sha))
    return sorted(found, key=lambda p: (p.level, p.number, p.file_name))


def matching_problems(problems: list[Problem], pattern: str | None) -> list[Problem]:
    """The problems whose key (`level1/54_conv_standard_3D...py`) the regular expression `pattern` finds,
    ignoring case, in listing order; all when `pattern` is None."""
    if pattern is None:
        return problems
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ProblemError(f"--match {pattern!r} is not a regular expression: {exc}") from exc
    return [p for p in problems if compiled.search(p.key)]


def select_problems(problems: list[Problem], keys: list[str] | None) -> list[Problem]:
    """The problems named by `keys` (`level1/19_ReLU.py`), in listing order; all when `keys` is None."""
    if not keys:
        return problems
    known = {p.key: p for p in problems}
    unknown = sorted(set(keys) - set(known))
    if unknown:
        raise ProblemError(f"unknown problem(s): {', '.join(unknown)} (name them as level1/19_ReLU.py)")
    wanted = set(keys)
    return [p for p in problems if p.key in wanted]


class Progress:
    """Which (problem, mode) pairs a run has finished, in `<out>/progress.json`, so a later call over the
    same output folder continues where the last one stopped.

    A pair is marked started before it is measured and done after its bundle is written. A pair found
    started but not done was cut off (the process was killed, or the machine hung on it): it is recorded
    as interrupted and not tried again, so one problem that never finishes cannot eat every later call.

    The file names the protocol its pairs were measured under (a file without one is strict v2's): a run
    under another protocol refuses it, since its pairs are not done under that protocol.
    """

    def __init__(self, path: Path, protocol: str = STRICT_PROTOCOL) -> None:
        self.path = path
        self.state: dict[str, Any] = {"done": {}, "started": {}, "protocol": protocol}
        if path.exists():
            try:
                self.state = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise ProblemError(f"{path} is not a progress file: {exc}") from exc
        recorded = self.state.get("protocol", STRICT_PROTOCOL)
        if recorded != protocol:
            raise ProblemError(f"{path} records a run under {recorded}, not {protocol}: measure into another folder")
        self.state["protocol"] = protocol
        for key in list(self.state["started"]):
            self.state["done"][key] = {"status": "interrupted", "startedAt": self.state["started"].pop(key)}
        self._write()

    @staticmethod
    def key(problem: Problem, mode: str) -> str:
        return f"{problem.key}::{mode}"

    def is_done(self, problem: Problem, mode: str) -> bool:
        return self.key(problem, mode) in self.state["done"]

    def start(self, problem: Problem, mode: str, at: str) -> None:
        self.state["started"][self.key(problem, mode)] = at
        self._write()

    def finish(self, problem: Problem, mode: str, record: dict[str, Any]) -> None:
        key = self.key(problem, mode)
        self.state["started"].pop(key, None)
        self.state["done"][key] = record
        self._write()

    def _write(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)
