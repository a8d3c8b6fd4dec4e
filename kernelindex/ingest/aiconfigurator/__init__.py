"""The AIConfigurator adapter: NVIDIA's measured kernel latencies for SGLang, TensorRT-LLM and vLLM.

Reads the Parquet tables of an installed ``aiconfigurator-core`` (``pip install
'kernelindex[aiconfigurator]'``) or of a folder (``--data-dir``: an unpacked wheel, a checkout of
the upstream repository, or the bundled slice). A unit is one workload (table × fixed
configuration, see ``aiconfigurator.manifests``), gathered from every system, framework and
version that measured it. Tables are surveyed once to list the units and count every row;
then each table's rows are read again, one table at a time, so memory holds one table's rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import pyarrow as pa
from pydantic import ValidationError

from kernelindex.gpus import (
    A100_80,
    ARC_PRO_B60,
    B200,
    B300,
    GB200,
    GB300,
    H100_SXM,
    H200,
    L40S,
    RTX_PRO_6000_SERVER,
)
from kernelindex.ingest.aiconfigurator.manifests import (
    environment_manifest,
    implementation_manifest,
    protocol_manifest,
    run_external_id,
    run_manifest,
    workload_manifest,
)
from kernelindex.ingest.aiconfigurator.rows import (
    PendingWorkload,
    System,
    TableError,
    WorkloadRows,
    check,
    group,
    read,
    read_rows,
    workload_keys,
)
from kernelindex.ingest.aiconfigurator.tables import (
    Collection,
    TableFile,
    by_table,
    file_sha256,
    find_data_dir,
    read_collection,
    read_datasheet,
    table_files,
)
from kernelindex.ingest.bounds import Budget, NotARegularFile, read_regular
from kernelindex.ingest.pipeline import failure_line
from kernelindex.ingest.reading import Opened, Reading
from kernelindex.ingest.runner import Discovery
from kernelindex.ingest.values import first_error
from kernelindex.manifests import ExecutionEnvironment, Implementation
from kernelindex.store.batch import Batch, RunRecord, SourceInfo, UnitFailure

PACKAGE = "aiconfigurator-core"
COPYRIGHT = "Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES"
SOURCE = SourceInfo(
    slug="aiconfigurator",
    name="AIConfigurator",
    url="https://github.com/ai-dynamo/aiconfigurator",
    description=(
        "AIConfigurator, NVIDIA Dynamo's serving configurator, ships measured per-operation kernel latencies: "
        "on each system NVIDIA times the kernels that SGLang, TensorRT-LLM and vLLM dispatch (GEMM, MoE, "
        "attention, MLA, sparse attention, communication and more) over grids of shapes, version by version, "
        "and publishes them as Parquet tables in the aiconfigurator-core package."
    ),
    licence=(
        f"Apache License 2.0, {COPYRIGHT}. The tables are redistributed under that licence; the bundled slice "
        "keeps the LICENSE file beside them."
    ),
    attribution=f"Data: AIConfigurator (aiconfigurator-core), {COPYRIGHT}, Apache-2.0.",
    gpu_naming=(
        'the system folder (such as h200_sxm), checked against the device string of every row (such as "NVIDIA '
        'H200"); a row naming another GPU is skipped, never relabelled'
    ),
    compares_versions=True,
)
# Each system folder's GPU, and every device string its rows may carry for it.
SYSTEMS = {
    "a100_sxm": System(A100_80, frozenset({"NVIDIA A100-SXM4-80GB"})),
    "h100_sxm": System(H100_SXM, frozenset({"NVIDIA H100 80GB HBM3", "NVIDIA H100"})),
    "h200_sxm": System(H200, frozenset({"NVIDIA H200"})),
    "b200_sxm": System(B200, frozenset({"NVIDIA B200"})),
    "b300_sxm": System(B300, frozenset({"NVIDIA B300 SXM6 AC"})),
    "gb200": System(GB200, frozenset({"NVIDIA GB200"})),
    "gb300": System(GB300, frozenset({"NVIDIA GB300"})),
    "l40s": System(L40S, frozenset({"NVIDIA L40S"})),
    "rtx_pro_6000_server": System(RTX_PRO_6000_SERVER, frozenset({"NVIDIA RTX PRO 6000 Blackwell Server Edition"})),
    # 0xe211 is the PCI device id of the Arc Pro B60: the name an older driver reported for it.
    "b60": System(ARC_PRO_B60, frozenset({"Intel(R) Arc(TM) Pro B60 Graphics", "Intel(R) Graphics [0xe211]"})),
}
# The package carries no dates: its release is the best known time of observation. PyPI lists
# 0.12.0 in September 2026; the day is not recorded here, so the first of the month.
RELEASED = {"0.12.0": datetime(2026, 9, 1, tzinfo=UTC)}


class WorkloadError(UnitFailure):
    """One workload could not be mapped; the ingest reports it and goes on."""


class AIConfigurator:
    source = SOURCE
    # fetch and map read only the tables discover listed (see kernelindex.ingest.pipeline).
    maps_in_parallel = True

    def __init__(self, data_dir: Path, version: str | None, observed_at: datetime, budget: Budget | None = None):
        self.data_dir = data_dir
        # The ingest's deadline and memory ceiling, checked before each file is read.
        self.budget = budget or Budget()
        self.version = version
        self.observed_at = observed_at
        self.drift: set[str] = set()
        self.known_files: Mapping[str, str] = {}
        self._tables: dict[str, list[TableFile]] = {}
        self._unit_table: dict[str, str] = {}
        self._family: dict[str, str] = {}
        self._collections: dict[Path, Collection] = {}
        self._loaded_table: str | None = None
        self._loaded: dict[str, PendingWorkload] = {}
        self._table_skipped: dict[str, Counter[str]] = {}

    def discover(self) -> Discovery:
        """Survey every table: count its rows (read, mapped, skipped by reason, not mapped) and
        list its workloads. A file stored unchanged by an earlier ingest (``known_files``) is not
        read; a table with a changed file is read whole, to rebuild the workloads it touches.
        A file that cannot be read is one error line."""
        discovery = Discovery(units=[])
        units: dict[str, str] = {}
        found, refused = table_files(self.data_dir)
        discovery.errors += refused
        for table, files in by_table(found):
            digests = {file.relative: file_sha256(file.path) for file in files}
            changed = [file for file in files if self.known_files.get(file.relative) != digests[file.relative]]
            for file in files:
                if file not in changed:
                    discovery.rows["unchanged"] += read_rows(file)
            unreadable = set()
            for file in changed:
                self.budget.check(f"{PACKAGE} data: {file.relative}")
                try:
                    counted = self._survey(file, discovery, units)
                except (TypeError, ArithmeticError, RecursionError, pa.ArrowException) as exc:
                    # A column of another type than its name says, a value out of range: the file fails alone.
                    discovery.errors.append(failure_line(file.relative, exc))
                    counted = None
                if counted is None:
                    unreadable.add(file.relative)
                else:
                    discovery.files[file.relative] = (digests[file.relative], counted)
            if changed:
                self._tables[table] = [file for file in files if file.relative not in unreadable]
                self._family[table] = files[0].family
        for system in sorted({file.system for file in found} & SYSTEMS.keys()):
            if (sheet := read_datasheet(self.data_dir, system)) is not None:
                discovery.datasheets[SYSTEMS[system].gpu.slug] = sheet
        discovery.complete = not discovery.errors and not discovery.rows["unchanged"]
        self._unit_table = units
        discovery.units = sorted(units, key=lambda unit: (units[unit], unit))
        return discovery

    def _survey(self, file: TableFile, discovery: Discovery, units: dict[str, str]) -> int | None:
        """Count one file's rows into ``discovery`` and list its workloads in ``units``; its row
        count, or ``None`` when it cannot be read."""
        try:
            data = read(file)
            self._collection(file)
        except (TableError, ValueError) as exc:
            discovery.errors.append(str(exc))
            return None
        discovery.rows["read"] += data.num_rows
        system = SYSTEMS.get(file.system)
        if system is None:
            discovery.rows["not_mapped"] += data.num_rows
            discovery.skipped["unknown_system"] += data.num_rows
            discovery.warnings.append(f"{file.relative}: {data.num_rows} rows of an unknown system folder")
            return data.num_rows
        checked = check(file, system, data)
        if checked.schema.unmapped:
            discovery.rows["not_mapped"] += data.num_rows
            discovery.skipped[f"unmapped_schema.{file.table}"] += data.num_rows
            discovery.warnings.append(f"{file.relative}: {data.num_rows} rows not mapped: {checked.schema.unmapped}")
            return data.num_rows
        discovery.skipped.update(checked.skipped)
        discovery.refused.update(checked.refused)
        discovery.rows["not_mapped"] += checked.refused.total
        discovery.rows["not_mapped"] += sum(checked.skipped.values())
        discovery.warnings += checked.warnings
        discovery.rows["mapped"] += checked.table.num_rows
        for key in workload_keys(file, checked):
            units[key.external_id] = file.table
        return data.num_rows

    def fetch(self, unit: str) -> WorkloadRows:
        table = self._unit_table[unit]
        if table != self._loaded_table:
            self._load(table)
        pending = self._loaded.pop(unit, None)
        if pending is None:
            raise WorkloadError(f"{unit}: its rows could not be read again from {table}")
        return pending.rows()

    def _load(self, table: str) -> None:
        """Read every file of ``table`` and group its rows (the previous table's are let go)."""
        self._loaded, self._loaded_table = {}, table
        for file in self._tables[table]:
            system = SYSTEMS.get(file.system)
            if system is None:
                continue  # reported when surveyed
            try:
                data = read(file)
            except TableError as exc:
                raise WorkloadError(str(exc)) from None
            checked = check(file, system, data)
            if not checked.schema.unmapped:
                group(file, checked, self._loaded)

    def _collection(self, file: TableFile) -> Collection:
        if file.folder not in self._collections:
            self._collections[file.folder] = read_collection(file.folder)
        return self._collections[file.folder]

    def map(self, unit: str, fetched: WorkloadRows) -> Batch:
        key = fetched.key
        cases = sorted({point for run in fetched.runs.values() for point in run.points}, key=_order)
        positions = {point: index for index, point in enumerate(cases)}
        family = self._family.get(key.table, "")
        try:
            workload = workload_manifest(key, family, fetched.swept, cases)
        except ValidationError as exc:
            raise WorkloadError(f"{unit}: cannot be mapped ({first_error(exc, whole='manifest')})") from None
        protocol = protocol_manifest()
        batch = Batch(
            unit=unit,
            workload=workload,
            external_id=unit,
            protocols=[protocol],
            complete=True,
        )
        environments: dict[str, ExecutionEnvironment] = {}
        implementations: dict[tuple[str, str, str], Implementation] = {}
        for run_key, rows in sorted(fetched.runs.items(), key=lambda item: _run_order(item[0])):
            gpu = SYSTEMS[run_key.system].gpu
            environment = environments.setdefault(gpu.slug, environment_manifest(gpu))
            implementation = implementations.setdefault(
                (run_key.framework, run_key.version, run_key.kernel),
                implementation_manifest(run_key.framework, run_key.version, run_key.kernel),
            )
            if rows.duplicates:
                batch.anomalies["repeated_points_first_kept"] += rows.duplicates
            provenance = self._provenance(rows.files)
            try:
                manifest = run_manifest(
                    key,
                    run_key,
                    rows,
                    gpu,
                    positions,
                    provenance,
                    self.observed_at,
                    {
                        "protocolDigest": protocol.digest,
                        "workloadDigest": workload.digest,
                        "environmentDigest": environment.digest,
                        "implementationDigest": implementation.digest,
                    },
                )
            except ValidationError as exc:
                batch.skipped["invalid"] += len(rows.points)
                batch.warnings.append(f"{unit}: a run of {run_key.kernel} cannot be mapped ({first_error(exc)})")
                continue
            batch.runs.append(
                RunRecord(
                    manifest=manifest,
                    implementation=implementation.metadata.name,
                    protocol=protocol.metadata.name,
                    environment=environment.metadata.name,
                    external_id=run_external_id(key, run_key),
                )
            )
        batch.environments = list(environments.values())
        batch.implementations = list(implementations.values())
        return batch

    def _provenance(self, files: Iterable[str]) -> str:
        kinds = set()
        for relative in files:
            collection = self._collections.get((self.data_dir / relative).parent)
            kinds.add(collection.provenance if collection else "not recorded")
        return ", ".join(sorted(kinds))


def _order(point: tuple[object, ...]) -> tuple[tuple[int, float | str], ...]:
    """Numbers by value, before anything else (a missing value, a word)."""
    return tuple((0, value) if isinstance(value, int | float) else (1, str(value)) for value in point)


def _run_order(key: object) -> str:
    return repr(key)


def package_version(data_dir: Path) -> str | None:
    """The aiconfigurator-core version of ``data_dir``: a slice's ``PACKAGE_VERSION`` file, an
    unpacked wheel's ``dist-info`` folder, or the installed package's."""
    named = data_dir.parent / "PACKAGE_VERSION"
    if named.exists():
        try:
            return read_regular(named, data_dir.parent, 1024).decode("utf-8").strip() or None
        except (NotARegularFile, UnicodeDecodeError):
            return None
    for info in data_dir.parent.parent.parent.glob("aiconfigurator_core-*.dist-info"):
        return info.name.removeprefix("aiconfigurator_core-").removesuffix(".dist-info")
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return None


def open_source(reading: Reading) -> Opened:
    """The adapter on ``--data-dir`` (or a snapshot folder holding one), else on the installed package."""
    given = reading.options.get("data_dir")
    folder = Path(given) if given else reading.snapshot
    data_dir = find_data_dir(folder)
    version = reading.options.get("data_version") or package_version(data_dir)
    if reading.snapshot is not None and not given:
        origin, observed = reading.snapshot_origin()
    else:
        origin, observed = f"{PACKAGE} {version or '(version unknown)'} at {data_dir.name}", None
    observed = observed or RELEASED.get(version or "") or datetime.now(UTC)
    return Opened(AIConfigurator(data_dir, version, observed, reading.budget), origin, observed, [])
