"""A small real slice of the bundled aiter snapshot, for any test that needs aiter data.

``make_slice(root)`` writes a snapshot folder the adapter reads exactly like the bundled one:
``refs.json`` (the recorded object, its file list cut to the tables kept), ``snapshot.json``,
``LICENSE`` and the kept tables holding only the rows listed below (verbatim, header first).
The rows cover every schema family and the traps of the tables:

- GEMM 1×3072×6144 a8w8 blockscale, tuned on the MI350X/MI355X class (general table) and on the
  MI300X class (the GLM-5.1 model table): one workload, two GPUs, one ``model:`` tag;
- batched GEMM (``a8w8_tuned_batched_gemm.csv``, MI300X class), two shapes;
- fused MoE without a ``gfx`` column (``tuned_fmoe.csv``, 80 CUs: "gfx unknown, 80 CUs"),
  two rows of one shape that differ in ``doweight_stage1`` (two workloads);
- fused MoE with ``gfx`` (DeepSeek V4 table) and a row one field short (skipped, named);
- bf16 GEMM (DeepSeek V3 table): an MI308X-class row and a gfx1250 row timed 0 (skipped);
- ``asm_a8w8_gemm.csv``: neither ``gfx`` nor ``cu_num``;
- gated delta net (``qwen3_5_35b_chunk_gdn_h_opt_tuned.csv``): an unmapped schema.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernelindex.paths import BUNDLED_DATA

BUNDLED = BUNDLED_DATA / "aiter"
REFS = json.loads((BUNDLED / "refs.json").read_text())
COMMIT = REFS["commit"]
CONFIGS = "aiter/configs/"
BLOCKSCALE = f"{CONFIGS}a8w8_blockscale_tuned_gemm.csv"
BLOCKSCALE_GLM = f"{CONFIGS}model_configs/a8w8_blockscale_tuned_gemm_glm5_1.csv"
BATCHED = f"{CONFIGS}a8w8_tuned_batched_gemm.csv"
FMOE = f"{CONFIGS}tuned_fmoe.csv"
FMOE_DSV4 = f"{CONFIGS}model_configs/dsv4_fp8fp4_tuned_fmoe.csv"
BF16_DSV3 = f"{CONFIGS}model_configs/dsv3_bf16_tuned_gemm.csv"
ASM = f"{CONFIGS}asm_a8w8_gemm.csv"
GDN = f"{CONFIGS}model_configs/qwen3_5_35b_chunk_gdn_h_opt_tuned.csv"
# Line numbers as an editor shows them (the header is line 1).
LINES = {
    BLOCKSCALE: [1296],
    BLOCKSCALE_GLM: [569],
    BATCHED: [2, 3],
    FMOE: [2, 3],
    FMOE_DSV4: [8, 9],
    BF16_DSV3: [63, 64],
    ASM: [2],
    GDN: [2, 3, 4],
}
ROWS = sum(len(lines) for lines in LINES.values())


def data_file(root: Path, path: str) -> Path:
    return root / "files" / COMMIT / path


def make_slice(root: Path, lines: dict[str, list[int]] | None = None) -> Path:
    """Write the slice into ``root`` (created if need be) and return ``root``."""
    kept = lines or LINES
    for path, numbers in kept.items():
        # One record a line: the recorded tables have no quoted line breaks.
        header, *rows = data_file(BUNDLED, path).read_text().splitlines(keepends=True)
        target = data_file(root, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(header + "".join(rows[number - 2] for number in numbers))
    refs = {**REFS, "files": [entry for entry in REFS["files"] if entry["path"] in kept]}
    (root / "refs.json").write_text(json.dumps(refs, indent=1))
    for name in ("snapshot.json", "LICENSE"):
        shutil.copyfile(BUNDLED / name, root / name)
    return root
