"""The Liger-Kernel adapter: the benchmark results the project publishes in its repository.

Reads the three CSV files under ``benchmark/data/`` at a ref from GitHub's raw-file host (or
a recorded snapshot served as that host) and maps them to manifests:

- (``kernel_name``, ``kernel_operation_mode``, ``x_name``, fixed configuration) → one
  ``WorkloadSuite`` per sweep definition, its cases the values of the swept axis, its
  reference the script ``benchmark/scripts/benchmark_<kernel_name>.py`` when there is one;
- ``kernel_provider`` → ``Implementation``; GPU + ``liger_version`` → ``ExecutionEnvironment``;
- each measured sweep → ``BenchmarkRun`` (per-case latencies, their geometric mean, and the
  peak memory of the nearest memory sweep beside them).

The rows are read once, in ``discover``; a unit (one workload) is then only its script away.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import httpx
from pydantic import ValidationError

from kernelindex.ingest import github
from kernelindex.ingest.github import GitHubRaw
from kernelindex.ingest.http import UpstreamError
from kernelindex.ingest.liger_kernel.manifests import (
    Script,
    environment_manifest,
    implementation_manifest,
    protocol_manifest,
    run_external_id,
    run_manifest,
    run_name,
    workload_manifest,
)
from kernelindex.ingest.liger_kernel.rows import DATA_FILES, FileError, Measurement, WorkloadKey, read_file
from kernelindex.ingest.liger_kernel.sweeps import arrange
from kernelindex.ingest.pipeline import failure_line
from kernelindex.ingest.reading import Opened, Reading
from kernelindex.ingest.runner import Discovery
from kernelindex.ingest.values import first_error
from kernelindex.store.batch import Batch, RunRecord, SourceInfo, UnitFailure

OWNER, REPO = "linkedin", "Liger-Kernel"
DEFAULT_REF = "main"
COPYRIGHT = "Copyright 2024 LinkedIn Corporation"
SOURCE = SourceInfo(
    slug="liger-kernel",
    name="Liger-Kernel",
    url="https://github.com/linkedin/Liger-Kernel",
    description=(
        "Liger-Kernel, LinkedIn's open-source Triton kernels for LLM training (cross entropy, RMSNorm, "
        "SwiGLU, RoPE and more), publishes its benchmark results in its repository: each kernel swept over "
        "one input dimension and timed with triton.testing.do_bench beside Hugging Face, PyTorch and other "
        "implementations, on the GPUs its maintainers used, release by release."
    ),
    licence=(
        f"BSD 2-Clause License, {COPYRIGHT}. All Rights Reserved. The benchmark data and scripts are redistributed "
        "with this copyright notice and licence; the bundled snapshot keeps the LICENSE file beside them."
    ),
    attribution=f"Data: Liger-Kernel benchmark results, {COPYRIGHT}, BSD 2-Clause License.",
    gpu_naming="the gpu_name column of the benchmark data: the device name PyTorch reported",
)


class SweepError(UnitFailure):
    """One workload could not be read or mapped; the ingest reports it and goes on with the others."""


@dataclass
class WorkloadReading:
    """One workload's rows (from every data file) and its benchmark script, if the source has one."""

    key: WorkloadKey
    rows: list[Measurement]
    script: Script | None


class LigerKernel:
    """Reads the data files at ``ref`` through ``GitHubRaw`` and yields one batch per workload."""

    source = SOURCE

    def __init__(self, raw: GitHubRaw, ref: str):
        self.raw = raw
        self.ref = ref
        self.drift: set[str] = set()
        self._rows: dict[str, list[Measurement]] = {}
        self._complete = True
        # By kernel name: a script is read once however many workloads it defines.
        self._scripts: dict[str, Script | SweepError | None] = {}

    def discover(self) -> Discovery:
        """Read and check every data file; the units are the workloads with at least one speed row.

        A file that cannot be read is one error line and makes the discovery incomplete; the
        other files go on.
        """
        discovery = Discovery(units=[])
        by_workload: dict[WorkloadKey, list[Measurement]] = defaultdict(list)
        for path in DATA_FILES:
            try:
                reading = read_file(path, self.raw.file(self.ref, path), self.raw.fetcher.budget.bounds)
            except UpstreamError as exc:
                if exc.bound is not None and exc.bound.fatal:
                    raise  # the deadline or a rate limit: every later file would meet it too
                discovery.errors.append(str(exc))  # it names the URL, which names the file
                continue
            except FileError as exc:
                discovery.errors.append(f"{exc} ({self.raw.url(self.ref, path)})")
                continue
            except (ArithmeticError, RecursionError, TypeError) as exc:
                # A value no check expected (1e999999, nesting past the decoder's limit): the file fails alone.
                discovery.errors.append(failure_line(self.raw.url(self.ref, path), exc))
                continue
            discovery.skipped.update(reading.skipped)
            discovery.warnings += reading.warnings
            discovery.refused.update(reading.refused)
            self.drift |= reading.drift
            for row in reading.rows:
                by_workload[row.workload].append(row)
        discovery.complete = self._complete = not discovery.errors
        for key, rows in by_workload.items():
            if any(row.metric == "speed" for row in rows):
                self._rows[key.external_id] = rows
            else:
                discovery.skipped["memory_without_speed_run"] += len(rows)
        discovery.units = sorted(self._rows)
        return discovery

    def fetch(self, unit: str) -> WorkloadReading:
        """The workload's rows and its script; raises ``SweepError`` when the script cannot be read."""
        rows = self._rows[unit]
        key = rows[0].workload
        try:
            script = self._script(key.kernel)
        except SweepError as exc:
            raise SweepError(f"{unit}: {exc}") from None
        return WorkloadReading(key, rows, script)

    def map(self, unit: str, fetched: WorkloadReading) -> Batch:
        """The workload, its runs and what they refer to; raises ``SweepError``."""
        key = fetched.key
        sweeps = arrange(unit, fetched.rows)
        try:
            workload = workload_manifest(key, sweeps, fetched.script)
        except ValidationError as exc:
            files = ", ".join(self.raw.url(self.ref, path) for path in sorted({row.file for row in fetched.rows}))
            raise SweepError(f"{unit}: {files}: cannot be mapped ({first_error(exc, whole='manifest')})") from None
        protocol = protocol_manifest()
        environments = {
            (run.gpu, run.key.version): environment_manifest(run.gpu, run.key.version) for run in sweeps.runs
        }
        implementations = {run.key.provider: implementation_manifest(run.key.provider) for run in sweeps.runs}
        _one_name_each(
            unit, ((f"{gpu.product} with {version}", env.metadata.name) for (gpu, version), env in environments.items())
        )
        _one_name_each(unit, ((provider, impl.metadata.name) for provider, impl in implementations.items()))
        _one_name_each(
            unit,
            (
                (f"{run.key.provider} on {run.key.gpu_name} at {run.key.timestamp}", run_name(key, run))
                for run in sweeps.runs
            ),
        )
        batch = Batch(
            unit=unit,
            workload=workload,
            external_id=unit,
            protocols=[protocol],
            environments=list(environments.values()),
            implementations=list(implementations.values()),
            skipped=sweeps.skipped,
            anomalies=sweeps.anomalies,
            warnings=sweeps.warnings,
            # Rows of a file that could not be read are missing here: no stored run is missing upstream for it.
            complete=self._complete,
        )
        for run in sweeps.runs:
            environment = environments[(run.gpu, run.key.version)]
            implementation = implementations[run.key.provider]
            digests = {
                "protocolDigest": protocol.digest,
                "workloadDigest": workload.digest,
                "environmentDigest": environment.digest,
                "implementationDigest": implementation.digest,
            }
            try:
                manifest = run_manifest(key, run, len(sweeps.cases), digests)
            except ValidationError as exc:
                batch.skipped["invalid"] += 1
                batch.warnings.append(
                    f"{unit}: a sweep of {run.key.provider} cannot be mapped ({first_error(exc, whole='manifest')})"
                )
                continue
            batch.runs.append(
                RunRecord(
                    manifest=manifest,
                    implementation=implementation.metadata.name,
                    protocol=protocol.metadata.name,
                    environment=environment.metadata.name,
                    external_id=run_external_id(key, run),
                )
            )
        return batch

    def _script(self, kernel: str) -> Script | None:
        if kernel not in self._scripts:
            self._scripts[kernel] = self._read_script(kernel)
        script = self._scripts[kernel]
        if isinstance(script, SweepError):
            raise script
        return script

    def _read_script(self, kernel: str) -> Script | SweepError | None:
        path = f"benchmark/scripts/benchmark_{kernel}.py"
        try:
            body = self.raw.file(self.ref, path)
        except UpstreamError as exc:
            # A 404 means there is no script of that name; any other failure leaves the workload unread.
            return None if exc.status == 404 else SweepError(f"{path}: could not be read ({exc})")
        url = self.raw.url(self.ref, path)
        try:
            code = body.decode("utf-8")
        except UnicodeDecodeError:
            return SweepError(f"{path}: {url}: not UTF-8 text")
        # PostgreSQL cannot store NUL in text, and no Python source holds one.
        if "\x00" in code or not code.strip():
            return SweepError(f"{path}: {url}: not a Python source file (empty or holding NUL)")
        return Script(path, self.raw.public_url(self.ref, path), hashlib.sha256(body).hexdigest(), code)


def _one_name_each(unit: str, names: Iterable[tuple[str, str]]) -> None:
    """Two source values that map to one manifest name (``a_b`` and ``a-b``) would overwrite each
    other's record: the workload fails with one plain line instead. ``names``: (value, name) pairs."""
    seen: dict[str, str] = {}
    for value, name in names:
        if seen.setdefault(name, value) != value:
            raise SweepError(f"{unit}: {seen[name]} and {value} map to one manifest name, {name}")


def open_source(reading: Reading) -> Opened:
    """The adapter on a recorded snapshot (served as the raw host) or on the live raw host
    (``--raw-url`` option, else ``KERNELINDEX_GITHUB_RAW_URL``), at ``--ref`` (default ``main``)."""
    ref = reading.options.get("ref") or DEFAULT_REF
    if reading.snapshot is not None:
        transport = github.snapshot_transport(reading.snapshot, OWNER, REPO)
        client = httpx.Client(transport=transport, base_url=github.SNAPSHOT_RAW)
        origin, observed = reading.snapshot_origin()
    else:
        url = (reading.options.get("raw_url") or reading.settings.github_raw_url).rstrip("/")
        client, origin, observed = reading.client(url), f"{url}/{OWNER}/{REPO}/{ref}", None
    return Opened(LigerKernel(GitHubRaw(reading.fetcher(client), OWNER, REPO), ref), origin, observed, [client])
