"""Reading aiter's tuned-kernel tables: one CSV file at a time into checked rows.

A table is one schema family, told by its columns: fused MoE (``token``, ``model_dim``, …),
batched GEMM (a batch column ``B`` or ``b``) or GEMM (``M``, ``N``, ``K``). Each row is the
autotuner's winner for one shape on one GPU: the shape (the workload), the GPU (``gfx`` and
``cu_num``), the winning library and kernel (the implementation), the kernel's own settings and
the time ``us``. A row that cannot be used is skipped with a reason and named in a warning; a
file that cannot be used at all (not text, a required column missing) is a ``FileError``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation

from kernelindex.figure_gate import Refusals, Refused, bounded, latency_ns, spread
from kernelindex.ingest.bounds import Bounds

CONFIGS = "aiter/configs/"
# Line numbers a warning names for one reason in one table; the others are counted.
NAMED_LINES = 20
MODEL_CONFIGS = f"{CONFIGS}model_configs/"

GEMM, BATCHED_GEMM, FUSED_MOE = "gemm", "batched_gemm", "fused_moe"
# The shape of each family, in order; the integer columns of all of them.
SHAPE_COLUMNS = {
    GEMM: ("M", "N", "K"),
    BATCHED_GEMM: ("B", "M", "N", "K"),
    FUSED_MOE: ("token", "model_dim", "inter_dim", "expert", "topk"),
}
# Columns beside the shape that change what is computed (data types, quantization, layout): part
# of the workload. Optional for GEMM (only some tables have them), required for fused MoE.
GEMM_KIND_COLUMNS = ("q_dtype_w", "bias", "dtype", "outdtype", "scaleAB", "bpreshuffle")
MOE_KIND_COLUMNS = ("act_type", "dtype", "q_dtype_a", "q_dtype_w", "q_type", "use_g1u1", "doweight_stage1")
INTEGER_COLUMNS = frozenset({"M", "N", "K", "B", "token", "model_dim", "inter_dim", "expert", "topk"})
GPU_COLUMNS = ("gfx", "cu_num")
TIME_COLUMN = "us"
# Who won: the library and kernel of a GEMM, the stage-1 + stage-2 kernel pair of a fused MoE.
LIBRARY_COLUMN = "libtype"
KERNEL_COLUMNS = {GEMM: ("kernelName",), BATCHED_GEMM: ("kernelName",), FUSED_MOE: ("kernelName1", "kernelName2")}
# What the tuner derived or checked beside the time: kept with the run, never ranked.
FIGURE_COLUMNS = ("tflops", "bw", "errRatio", "err_ratio", "us1", "us2", "err1", "err2")
# The winning kernel's own settings (tile sizes, split-K, the tuner's kernel index): kept with the run.
SETTING_COLUMNS = frozenset(
    {
        "kernelId", "solidx", "splitK", "block_m", "ksplit", "run_1stage", "xbf16", "flat", "_tag",
        "max_m", "tile_m", "tile_n", "tile_k", "tile_m2", "tile_n2", "tile_k2", "m_warp", "n_warp",
        "m_warp2", "n_warp2", "num_buffers", "num_buffer_stage2", "split_k1", "split_k2",
        "grouped_persistent_m", "persistent_workers", "wave_specialized_tdm", "tdm_as_in_prologue",
        "cluster_n", "waves_per_tensor_tdm", "next_stage_prefetch",
    }
)  # fmt: skip
# File-name words that say the data types and quantization scheme of a GEMM table, in the order
# they are written; the other words of a model table's name (less the table words) name the model.
SCHEME_WORDS = ("bf16", "a8w8", "a4w4", "blockscale", "bpreshuffle", "mxscale")
TABLE_WORDS = frozenset(
    {*SCHEME_WORDS, "tuned", "gemm", "fmoe", "batched", "grouped", "asm", "fp8", "fp4", "fp8fp4", "mxfp8",
     "ptpc", "i4", "a8w4", "a16w4"}
)  # fmt: skip
# One model written several ways in file names, as one ``model:`` tag.
MODEL_ALIASES = {
    "ds-v3": "dsv3",
    "mm2.5": "minimax-m2.5",
    "minimax-m2-5": "minimax-m2.5",
    "minimax-m25": "minimax-m2.5",
    "qwen3.5-397b": "qwen3-5-397b",
}
SKIP_REASONS = {
    "missing_time": "no time (us is empty)",
    "bad_time": "the time (us) is not a number",
    "no_positive_time": "the time (us) is not a positive finite number of microseconds that rounds to at least 1 ns",
    "bad_shape": "a shape column is not a whole number",
    "bad_cu_num": "cu_num is not a whole number",
    "malformed_row": "the row has a different number of fields than the header",
    "too_wide": "the row is wider than the characters a row may have (KERNELINDEX_INGEST_MAX_ROW_CHARS)",
    "unmapped_schema": "the table's schema (an operation without M, N, K or token columns) is not modelled",
    "no_time_column": "the table has no time column (us): shapes waiting to be tuned",
}


class FileError(Exception):
    """A table that cannot be read at all; none of its rows is used."""


@dataclass(frozen=True)
class LastChange:
    """The commit that last changed a table: the best known time of its figures."""

    sha: str
    committed_at: datetime


@dataclass(frozen=True)
class WorkloadKey:
    """One operation at one exact shape, data types and quantization scheme."""

    family: str
    scheme: str  # from a GEMM table's file name ("a8w8_blockscale"); "" for fused MoE
    shape: tuple[tuple[str, int | str], ...]  # shape, then kind columns, in table order

    @property
    def identity(self) -> str:
        """Every column that makes the workload, as written: ``gemm/a8w8/M=1,N=2048,K=3072,q_dtype_w=…``."""
        values = ",".join(f"{name}={value}" for name, value in self.shape)
        return f"{self.family}/{self.scheme or '-'}/{values}"

    @property
    def hash8(self) -> str:
        return hashlib.sha256(self.identity.encode()).hexdigest()[:8]

    @property
    def external_id(self) -> str:
        """The family and sizes to read, the identity's digest to tell apart (at most 64 characters):
        ``gemm/1x2048x3072/1f2e3d4c5b6a``."""
        sizes = "x".join(str(value) for _, value in self.shape if isinstance(value, int))
        digest = hashlib.sha256(self.identity.encode()).hexdigest()[:12]
        return f"{self.family}/{sizes[: 64 - len(self.family) - 14]}/{digest}"

    def value(self, name: str) -> int | str | None:
        return next((value for key, value in self.shape if key == name), None)


@dataclass(frozen=True)
class TunedRow:
    """One winner: its workload, GPU, library and kernels, settings, time and figures."""

    path: str
    line: int
    last_change: LastChange
    model: str | None
    workload: WorkloadKey
    gfx: str | None
    cu_num: int | None
    library: str | None
    kernels: tuple[str, ...]
    us_text: str
    ns: int
    settings: tuple[tuple[str, str], ...]
    figures: tuple[tuple[str, str], ...]


@dataclass
class TableReading:
    rows: list[TunedRow] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    drift: set[str] = field(default_factory=set)
    refused: Refusals = field(default_factory=Refusals)
    rows_read: int = 0


def family_of(columns: list[str]) -> str | None:
    """The schema family a header (its shape columns in upper case) belongs to, or ``None`` for
    one not modelled."""
    names = set(columns)
    if "token" in names:
        return FUSED_MOE
    if {"M", "N", "K"} <= names:
        return BATCHED_GEMM if "B" in names else GEMM
    return None


def scheme_of(path: str) -> str:
    """``a8w8_blockscale`` from ``…/a8w8_blockscale_tuned_gemm_ds_v3.csv``."""
    words = set(_stem(path).split("_"))
    return "_".join(word for word in SCHEME_WORDS if word in words)


def model_of(path: str) -> str | None:
    """The model a ``model_configs/`` table was tuned for (``dsv3``), from its file name."""
    if not path.startswith(MODEL_CONFIGS):
        return None
    words = [word for word in _stem(path).split("_") if word not in TABLE_WORDS]
    name = re.sub(r"[^a-z0-9.]+", "-", "_".join(words).lower()).strip("-.")
    return MODEL_ALIASES.get(name, name) or None


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".csv")


def _canonical(column: str) -> str:
    """The batched tables write the shape in lower case (``b, m, n, k``) in one file."""
    return column.upper() if column in ("b", "m", "n", "k") else column


def _whole(text: str) -> int | None:
    return int(text) if re.fullmatch(r"-?\d+", text.strip()) else None


# The columns beside the time that the manifest keeps as numbers, and their bounds; the others
# (err1: "6.2%") are kept as text.
NUMERIC_FIGURES = {"tflops": 1e9, "bw": 1e9, "errRatio": 1.0, "err_ratio": 1.0}
TIME_FIGURES = ("us1", "us2")


def _time_ns(text: str) -> tuple[int | None, str | None]:
    """Microseconds as written to whole nanoseconds through the figure gate (exact decimal
    arithmetic), or a skip reason: empty, or a number of zero or less. Any other value that is not
    a time between 1 ns and an hour raises ``Refused``."""
    cell = text.strip()
    if not cell:
        return None, "missing_time"
    try:
        if Decimal(cell) <= 0:
            return None, "no_positive_time"
    except InvalidOperation:
        pass  # the gate names what it is
    return latency_ns(TIME_COLUMN, cell, "us", text=True), None


def _check_figures(values: dict[str, str]) -> None:
    """``Refused`` for a figure column beside the time that holds no figure of its kind."""
    for column, high in NUMERIC_FIGURES.items():
        if values.get(column, "").strip():
            bounded(column, values[column], 0, high, text=True)
    for column in TIME_FIGURES:
        if values.get(column, "").strip():
            spread(column, values[column], "us", text=True)


def read_table(path: str, body: bytes, last_change: LastChange, url: str, bounds: Bounds | None = None) -> TableReading:
    """Every row of one table, checked; ``FileError`` if the table cannot be read at all (a header
    of more columns than ``bounds`` allow included). A row wider than they allow is skipped."""
    bounds = bounds or Bounds()
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise FileError(f"{path}: not UTF-8 text") from None
    if "\x00" in text:
        raise FileError(f"{path}: not a CSV table (it holds NUL)")
    try:
        records = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise FileError(f"{path}: not readable as CSV ({exc})") from None
    if not records or not records[0]:
        raise FileError(f"{path}: empty, no header")
    if len(records[0]) > bounds.max_csv_columns:
        raise FileError(
            f"{path}: too large: the header has {len(records[0])} columns, more than the {bounds.max_csv_columns} "
            "a table may have (KERNELINDEX_INGEST_MAX_CSV_COLUMNS); not read: check the upstream"
        )
    header = [_canonical(column.strip()) for column in records[0]]
    reading = TableReading()
    body_rows = [(number, fields) for number, fields in enumerate(records[1:], start=2) if fields]
    reading.rows_read = len(body_rows)
    family = family_of(header)
    skipped_lines: dict[str, list[int]] = defaultdict(list)
    if TIME_COLUMN not in header:
        skipped_lines["no_time_column"] = [number for number, _ in body_rows]
    elif family is None:
        skipped_lines["unmapped_schema"] = [number for number, _ in body_rows]
    else:
        required = SHAPE_COLUMNS[family] + (MOE_KIND_COLUMNS if family == FUSED_MOE else ())
        if missing := [column for column in required if column not in header]:
            raise FileError(f"{path}: a {family.replace('_', ' ')} table without the column(s) {', '.join(missing)}")
        known = {
            *required, *GEMM_KIND_COLUMNS, *GPU_COLUMNS, TIME_COLUMN, LIBRARY_COLUMN,
            *KERNEL_COLUMNS[family], *FIGURE_COLUMNS, *SETTING_COLUMNS,
        }  # fmt: skip
        reading.drift |= {f"aiter table column {column}" for column in header if column not in known}
        table = _Table(path, family, header, last_change)
        for number, fields in body_rows:
            reason: str | None
            if sum(map(len, fields)) > bounds.max_row_chars:
                row, reason = None, "too_wide"
            else:
                try:
                    row, reason = table.row(number, fields)
                except Refused as refused:
                    reading.refused.add(f"{path}:{number}", refused)
                    continue
            if row is None:
                assert reason is not None
                skipped_lines[reason].append(number)
            else:
                reading.rows.append(row)
    for reason, lines in skipped_lines.items():
        reading.skipped[reason] += len(lines)
        shown = ", ".join(str(line) for line in lines[:NAMED_LINES])
        shown += f" and {len(lines) - NAMED_LINES} more" if len(lines) > NAMED_LINES else ""
        reading.warnings.append(f"{url}: row(s) {shown} skipped: {SKIP_REASONS[reason]}")
    return reading


class _Table:
    """One table's header, read once, and how it turns a row into a ``TunedRow``."""

    def __init__(self, path: str, family: str, header: list[str], last_change: LastChange):
        self.path, self.family, self.header, self.last_change = path, family, header, last_change
        self.scheme = scheme_of(path) if family != FUSED_MOE else ""
        self.model = model_of(path)
        kind = GEMM_KIND_COLUMNS if family != FUSED_MOE else MOE_KIND_COLUMNS
        self.shape_columns = SHAPE_COLUMNS[family] + tuple(column for column in kind if column in header)
        self.kernel_columns = tuple(column for column in KERNEL_COLUMNS[family] if column in header)
        known = {*self.shape_columns, *GPU_COLUMNS, TIME_COLUMN, LIBRARY_COLUMN, *self.kernel_columns}
        self.figure_columns = tuple(column for column in header if column in FIGURE_COLUMNS)
        self.setting_columns = tuple(
            column for column in header if column not in known and column not in FIGURE_COLUMNS
        )

    def row(self, line: int, fields: list[str]) -> tuple[TunedRow | None, str | None]:
        if len(fields) != len(self.header):
            return None, "malformed_row"
        values = dict(zip(self.header, fields, strict=True))
        shape: list[tuple[str, int | str]] = []
        for column in self.shape_columns:
            text = values[column].strip()
            if column in INTEGER_COLUMNS:
                # Kept as written, negative too: a grouped MoE table writes topk -1.
                number = _whole(text)
                if number is None:
                    return None, "bad_shape"
                shape.append((column, number))
            else:
                shape.append((column, text))
        cu_num = None
        if (cu_text := values.get("cu_num", "").strip()) != "":
            cu_num = _whole(cu_text)
            if cu_num is None or cu_num <= 0:
                return None, "bad_cu_num"
        ns, reason = _time_ns(values[TIME_COLUMN])
        if ns is None:
            return None, reason
        _check_figures(values)
        return (
            TunedRow(
                path=self.path,
                line=line,
                last_change=self.last_change,
                model=self.model,
                workload=WorkloadKey(self.family, self.scheme, tuple(shape)),
                gfx=values.get("gfx", "").strip() or None,
                cu_num=cu_num,
                library=values.get(LIBRARY_COLUMN, "").strip() or None,
                kernels=tuple(values[column].strip() for column in self.kernel_columns),
                us_text=values[TIME_COLUMN].strip(),
                ns=ns,
                settings=tuple((column, values[column].strip()) for column in self.setting_columns),
                figures=tuple((column, values[column].strip()) for column in self.figure_columns),
            ),
            None,
        )
