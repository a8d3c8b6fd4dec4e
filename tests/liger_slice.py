"""A small real slice of the bundled Liger-Kernel snapshot, for any test that needs Liger data.

``make_slice(root)`` writes a snapshot folder the adapter reads exactly like the bundled one:
``refs.json`` and ``snapshot.json`` as recorded, the three data files holding only the rows
of four workloads (verbatim, in file order), and one benchmark script. The four workloads
cover three GPUs and six providers, memory rows, a provider measured twice on one GPU (two
sweeps, each with its own memory sweep), a workload whose rows span two files, text values
of the swept axis (``model_config``), and kernels with and without a script:

- ``cross_entropy`` / ``full`` / ``V``: A100 80GB, Liger-Kernel 0.2.1, ``liger`` and
  ``huggingface``, six cases, memory; has ``benchmark_cross_entropy.py``;
- ``jsd`` / ``full`` / ``V``: H100 PCIe, 0.3.1, ``liger`` and ``torch``, six cases, memory;
  no script in the slice;
- ``cross_entropy`` / ``full`` / ``BT``: B200, 0.8.0, rows in the cuTile and CuTe DSL files,
  ``liger_triton`` and ``torch`` measured in both (two sweeps each), four cases, memory;
- ``cross_entropy`` / ``full`` / ``model_config``: B200, 0.8.0, seven model names, memory.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from kernelindex.ingest.github import snapshot_refs
from kernelindex.ingest.liger_kernel.rows import DATA_FILES
from kernelindex.paths import BUNDLED_DATA

BUNDLED = BUNDLED_DATA / "liger-kernel"
COMMIT = snapshot_refs(BUNDLED)[-1]["commit"]
SCRIPT = "benchmark/scripts/benchmark_cross_entropy.py"
# (kernel_name, kernel_operation_mode, x_name) of the workloads kept.
SWEEPS = {
    ("cross_entropy", "full", "V"),
    ("jsd", "full", "V"),
    ("cross_entropy", "full", "BT"),
    ("cross_entropy", "full", "model_config"),
}


def _kept(line: str) -> bool:
    fields = next(csv.reader([line]))
    return (fields[0], fields[2], fields[5]) in SWEEPS


def make_slice(root: Path) -> Path:
    """Write the slice into ``root`` (created if need be) and return ``root``."""
    source, target = BUNDLED / "files" / COMMIT, root / "files" / COMMIT
    for path in DATA_FILES:
        # One record a line: the recorded files have no quoted line breaks.
        header, *rows = (source / path).read_text().splitlines(keepends=True)
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_text(header + "".join(row for row in rows if _kept(row)))
    (target / SCRIPT).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / SCRIPT, target / SCRIPT)
    ref = {**snapshot_refs(BUNDLED)[-1], "files": [*DATA_FILES, SCRIPT]}
    (root / "refs.json").write_text(json.dumps([ref], indent=1))
    for name in ("snapshot.json", "LICENSE"):
        shutil.copyfile(BUNDLED / name, root / name)
    return root


def data_file(root: Path, path: str) -> Path:
    """Where the slice at ``root`` keeps the data file ``path`` (to edit it in a test)."""
    return root / "files" / COMMIT / path
