"""KernelBench's published files as this registry reads them: timing files, problem files, modes.

A timing file is ``results/timing/<setup>/baseline_time_<mode>.json``:
``{"level1": {"19_ReLU.py": {"mean", "std", "min", "max", "num_trials", "hardware", "device"} | null}}``,
times in milliseconds. Its problems are the files ``KernelBench/<level>/<name>`` of the same commit.
The shapes are checked strictly: a file that deviates is refused whole, never half-read.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from kernelindex.figure_gate import latency_ns, spread
from kernelindex.gpus import Gpu
from kernelindex.ingest.github import Commit

TIMING_FOLDER = "results/timing"
TIMING_FILE = re.compile(r"results/timing/(?P<setup>[^/]+)/baseline_time_(?P<mode>[^/]+)\.json")
# Retired figures upstream keeps for the record; they are not published baselines.
RETIRED_SETUP = "old"
LEVEL = re.compile(r"level(?P<number>[1-9][0-9]{0,2})")
PROBLEM_FILE = re.compile(r"(?P<number>[0-9]{1,6})_(?P<words>[A-Za-z0-9_.-]+)\.py")


@dataclass(frozen=True)
class Mode:
    """How the reference program was run: eager PyTorch or one ``torch.compile`` configuration."""

    key: str
    implementation: str
    title: str
    revision: str


_INDUCTOR_OPTIONS = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
MODES = {
    mode.key: mode
    for mode in (
        Mode("torch", "pytorch-eager", "PyTorch eager", "eager"),
        *(
            Mode(
                f"torch_compile_inductor_{option}",
                f"torch-compile-inductor-{option}",
                f"PyTorch torch.compile, inductor {option}",
                f'torch.compile(backend="inductor", mode="{option}")',
            )
            for option in _INDUCTOR_OPTIONS
        ),
        # The cudagraphs backend takes no mode.
        Mode(
            "torch_compile_cudagraphs",
            "torch-compile-cudagraphs",
            "PyTorch torch.compile, cudagraphs",
            'torch.compile(backend="cudagraphs")',
        ),
    )
}

# One line of upstream text: no control characters (PostgreSQL cannot store NUL; the others have
# no place in a name).
Line = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]


class TimingEntry(BaseModel):
    """One problem's figures in a timing file. Types are strict; the figures (``mean``, ``std``,
    ``min``, ``max``, in ms) are taken as published and checked by the figure gate
    (``timing_figures``), so one entry that is not a time (``"0.5"``, ``true``, ``1e308``) is
    refused alone and the rest of its file is read. Unknown extra fields are kept aside and
    reported as drift."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    mean: Any
    std: Any
    min: Any
    max: Any
    num_trials: Annotated[int, Field(ge=1)]
    hardware: Line
    device: Line


def timing_figures(entry: TimingEntry) -> tuple[int, int, int]:
    """The entry's mean, min and max in ns; ``Refused`` for the first figure that is not a time in ms."""
    mean, low, high = (latency_ns(name, getattr(entry, name), "ms") for name in ("mean", "min", "max"))
    spread("std", entry.std, "ms")
    return mean, low, high


def non_positive_time(entry: TimingEntry) -> bool:
    """Whether a figure is a number of zero or less: no time at all, skipped as ever (not refused)."""
    return any(
        isinstance(value, int | float) and not isinstance(value, bool) and value <= 0
        for value in (entry.mean, entry.min, entry.max)
    )


class TimingFileError(ValueError):
    """A timing file that does not have the published shape."""


def parse_timing_file(data: Any) -> dict[tuple[str, str], TimingEntry | None]:
    """``(level, problem file name) → entry`` (``None``: not measured), in file order; raises
    ``TimingFileError`` naming the first thing that is not as published."""
    if not isinstance(data, dict):
        raise TimingFileError("expected an object of levels")
    entries: dict[tuple[str, str], TimingEntry | None] = {}
    for level, problems in data.items():
        if not LEVEL.fullmatch(level):
            raise TimingFileError(f"{level!r} is not a level (level1, level2, …)")
        if not isinstance(problems, dict):
            raise TimingFileError(f"{level}: expected an object of problems")
        numbers: set[str] = set()
        for name, entry in problems.items():
            match = PROBLEM_FILE.fullmatch(name)
            if match is None:
                raise TimingFileError(f"{level}: {name!r} is not a problem file name (<number>_<name>.py)")
            if match["number"] in numbers:
                # KernelBench names problems by number; two files with one number are ambiguous.
                raise TimingFileError(f"{level}: two problems numbered {match['number']}")
            numbers.add(match["number"])
            try:
                entries[level, name] = None if entry is None else TimingEntry.model_validate(entry)
            except ValidationError as exc:
                item = exc.errors(include_url=False)[0]
                where = ".".join(str(part) for part in item["loc"]) or "entry"
                raise TimingFileError(f"{level}/{name}: {where}: {item['msg']}") from None
    return entries


@dataclass(frozen=True)
class TimingFile:
    """One version of a timing file: its path, its content's git blob hash and the commit that
    first held that content (when its figures were published)."""

    path: str
    setup: str
    mode: Mode
    blob: str
    commit: Commit

    @property
    def key(self) -> str:
        """A short, stable key of this version (the same content in another folder is another file)."""
        return hashlib.sha256(f"{self.path}\0{self.blob}".encode()).hexdigest()[:16]

    def label(self) -> str:
        return f"{self.path} at {self.commit.sha[:12]}"


@dataclass(frozen=True)
class Measurement:
    """One usable entry of a timing file: a problem timed in one mode on one GPU."""

    file: TimingFile
    level: str
    problem: str
    entry: TimingEntry
    gpu: Gpu


@dataclass
class Problem:
    """One problem file's content (a workload) and every measurement of it."""

    external_id: str
    level: str
    file_name: str
    commit: Commit
    content: bytes
    sha256: str
    measurements: list[Measurement] = field(default_factory=list)

    @property
    def path(self) -> str:
        return problem_path(self.level, self.file_name)

    @property
    def level_number(self) -> int:
        return int(self.level.removeprefix("level"))

    @property
    def number(self) -> int:
        return int(self.file_name.split("_", 1)[0])

    @property
    def stem(self) -> str:
        return self.file_name.removesuffix(".py")


def problem_path(level: str, file_name: str) -> str:
    return f"KernelBench/{level}/{file_name}"


def problem_external_id(level: str, file_name: str, sha256: str) -> str:
    """``level1/19@<16 hex of the content's sha256>``: the revisions of one problem share the part
    before ``@`` (pages rely on this form)."""
    return f"{level}/{int(file_name.split('_', 1)[0])}@{sha256[:16]}"


def readable_name(file_name: str) -> str:
    """``19_ReLU.py`` → ``ReLU``; ``1_Square_matrix_multiplication_.py`` → ``Square matrix multiplication``."""
    words = PROBLEM_FILE.fullmatch(file_name)
    text = words["words"] if words else file_name.removesuffix(".py")
    return " ".join(text.replace("_", " ").split()) or file_name
