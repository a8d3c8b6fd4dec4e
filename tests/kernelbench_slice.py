"""A small, real slice of the bundled KernelBench snapshot, for tests that need KernelBench data.

Three commits, five timing files trimmed to a few problems each (the entries kept verbatim), the
problem files those entries timed (verbatim, from the same commits) and a ``refs.json`` in the
snapshot's form. What it holds, and what an ingest of it must find:

- 47f78d7 (2025-01-21): ``A100_modal`` (one setup, two GPUs: ``31_VisionAttention`` ran on an
  A100 80GB, the rest on an A100 40GB) and ``L40S_modal``, eager mode;
- df77b59 (2025-06-22): ``L40S_babel``, eager: the same level 1 and 2 problem contents as
  47f78d7, one level 4 problem, one level 5 problem this commit does not hold (``problem_missing``)
  and one ``null`` entry (``not_measured``);
- 1f8d20f (2025-12-31): ``H100_Modal`` eager and inductor-default, on the revised problem files.

``make_slice(root)`` writes it under ``root`` and returns the snapshot folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from kernelindex.paths import BUNDLED_DATA

BUNDLED = BUNDLED_DATA / "kernelbench"
EARLY, BABEL, LATE = (
    "47f78d7f22dc0dc84b5e7c9d3b022e5982ebf9be",
    "df77b598fbf02478a4648e3d848778e19cd9e138",
    "1f8d20fa06357a9c343f4508887b6da22f114752",
)
LEVELS_1_TO_3 = {
    "level1": ["19_ReLU.py", "13_Matmul_for_symmetric_matrices.py", "100_HingeLoss.py"],
    "level2": ["1_Conv2D_ReLU_BiasAdd.py"],
    "level3": ["31_VisionAttention.py", "1_MLP.py"],
}
SLICE: dict[str, dict[str, dict[str, list[str]]]] = {
    EARLY: {
        "results/timing/A100_modal/baseline_time_torch.json": LEVELS_1_TO_3,
        "results/timing/L40S_modal/baseline_time_torch.json": {
            "level1": ["19_ReLU.py", "13_Matmul_for_symmetric_matrices.py"],
            "level2": ["1_Conv2D_ReLU_BiasAdd.py"],
        },
    },
    BABEL: {
        "results/timing/L40S_babel/baseline_time_torch.json": {
            "level1": ["19_ReLU.py", "13_Matmul_for_symmetric_matrices.py"],
            "level2": ["1_Conv2D_ReLU_BiasAdd.py"],
            "level4": ["2_facebook-opt-1p3b_bs1_seq2047.py"],
            "level5": ["4_llama2.py", "5_s4.py"],
        },
    },
    LATE: {
        "results/timing/H100_Modal/baseline_time_torch.json": LEVELS_1_TO_3,
        "results/timing/H100_Modal/baseline_time_torch_compile_inductor_default.json": {
            "level1": ["19_ReLU.py", "100_HingeLoss.py"],
        },
    },
}
# What an ingest of the slice finds (checked against the bundled files by the tests that use it).
TIMED_ENTRIES = 6 + 3 + 4 + 6 + 2  # non-null entries whose problem file the commit holds
NOT_MEASURED = 1  # level5/5_s4.py
PROBLEM_MISSING = 1  # level5/4_llama2.py
# 19, 13, level2/1 shared by 47f78d7 and df77b59; 100, 31, 1_MLP at 47f78d7; level4/2 at df77b59;
# six revised contents at 1f8d20f.
WORKLOADS = 3 + 3 + 1 + 6


def make_slice(root: Path) -> Path:
    """Write the slice under ``root``; returns the snapshot folder (``refs.json``, ``files/``)."""
    folder = root / "kernelbench-slice"
    refs: list[dict[str, Any]] = []
    for ref in json.loads((BUNDLED / "refs.json").read_text()):
        if ref["commit"] not in SLICE:
            continue
        commit = ref["commit"]
        problems: set[str] = set()
        for path, kept in SLICE[commit].items():
            timing = json.loads((BUNDLED / "files" / commit / path).read_text())
            trimmed = {level: {name: timing[level][name] for name in names} for level, names in kept.items()}
            _write(folder / "files" / commit / path, json.dumps(trimmed, indent=1).encode())
            problems |= {f"KernelBench/{level}/{name}" for level, names in kept.items() for name in names}
        held = sorted(path for path in problems if (BUNDLED / "files" / commit / path).is_file())
        for path in held:
            _write(folder / "files" / commit / path, (BUNDLED / "files" / commit / path).read_bytes())
        refs.append({**ref, "timing_files": sorted(SLICE[commit]), "problem_files": held})
    _write(folder / "refs.json", json.dumps(refs, indent=1).encode())
    _write(folder / "snapshot.json", (BUNDLED / "snapshot.json").read_bytes())
    shutil.copy(BUNDLED / "LICENSE", folder / "LICENSE")
    return folder


def _write(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
