"""The aiter adapter: the tuned-kernel tables AMD publishes in its AI tensor engine for ROCm.

Lists the CSV tables under ``aiter/configs/`` at a ref (GitHub's tree API), reads each from the
raw-file host with the commit that last changed it (the best known time of its figures), and
maps every row, the tuner's winner for one shape on one GPU, to manifests:

- operation + exact shape + data types → one ``WorkloadSuite`` (one case), shared by every GPU
  and every table that lists the shape; the models whose tables list it are its ``model:`` tags;
- winning library + kernel (a fused MoE's stage-1 + stage-2 pair) → ``Implementation``;
- (``gfx``, ``cu_num``) → a GPU class (``kernelindex.gpus.amd_gpu_class``) → ``ExecutionEnvironment``;
- each row → ``BenchmarkRun``, its settings, figures and ``errRatio`` kept in ``sourceNative``.

The tables are read once, in ``discover``; a unit (one workload) is then its rows.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from pydantic import ValidationError

from kernelindex.gpus import Gpu, amd_gpu_class
from kernelindex.ingest import github
from kernelindex.ingest.aiter.manifests import (
    environment_manifest,
    implementation_manifest,
    protocol_manifest,
    run_external_id,
    run_identity,
    run_manifest,
    workload_manifest,
)
from kernelindex.ingest.aiter.rows import CONFIGS, FileError, LastChange, TunedRow, read_table
from kernelindex.ingest.github import GitHubApi, GitHubRaw
from kernelindex.ingest.http import UpstreamError
from kernelindex.ingest.pipeline import failure_line
from kernelindex.ingest.reading import Opened, Reading
from kernelindex.ingest.runner import Discovery
from kernelindex.ingest.values import first_error
from kernelindex.manifests import ExecutionEnvironment, Implementation
from kernelindex.store.batch import Batch, RunRecord, SourceInfo, UnitFailure

OWNER, REPO = "ROCm", "aiter"
DEFAULT_REF = "main"
COPYRIGHT = "Copyright © Advanced Micro Devices, Inc. All rights reserved."
SOURCE = SourceInfo(
    slug="aiter",
    name="aiter",
    url="https://github.com/ROCm/aiter",
    description=(
        "aiter, AMD's AI tensor engine for ROCm, ships many kernels for each operator (Composable Kernel, "
        "CK-tile, hand-written assembly, Triton, FlyDSL, hipBLASLt) and a tuner that times them for every "
        "shape a model needs. Its tuned tables keep the winner per shape and GPU: the kernel and its time. "
        "No runner-up is recorded."
    ),
    licence=(
        f"MIT License, {COPYRIGHT} The tuned tables are redistributed with this copyright notice and "
        "licence; the bundled snapshot keeps the LICENSE file beside them."
    ),
    attribution="Data: aiter tuned kernel tables, Copyright © Advanced Micro Devices, Inc., MIT License.",
    run_noun="tuned winners",
)


class WorkloadError(UnitFailure):
    """One workload could not be mapped; the ingest reports it and goes on with the others."""


class Aiter:
    """Reads the tuned tables at ``ref`` through ``GitHubApi`` and ``GitHubRaw``; one batch per workload."""

    source = SOURCE

    def __init__(self, api: GitHubApi, raw: GitHubRaw, ref: str):
        self.api, self.raw, self.ref = api, raw, ref
        self.drift: set[str] = set()
        self._rows: dict[str, list[TunedRow]] = {}
        self._complete = True

    def discover(self) -> Discovery:
        """Read and check every table; the units are the workloads with at least one usable row.

        A table that cannot be read is one error line naming it and makes the discovery
        incomplete; its rows are not used at all, and the other tables go on.
        """
        commit = self._commit()
        paths = sorted(
            path
            for path in self.api.tree(commit)
            if path.startswith(CONFIGS) and path.endswith(".csv") and "untuned" not in path.rsplit("/", 1)[-1]
        )
        discovery = Discovery(units=[])
        rows_read = 0
        by_workload: dict[str, list[TunedRow]] = defaultdict(list)
        for path in paths:
            url = self.raw.url(commit, path)
            try:
                body = self.raw.file(commit, path)
                changes = self.api.commits(path, commit)
                if not changes:
                    raise FileError(f"{path}: no commit of {commit[:12]}'s history changed it")
                last = LastChange(changes[0].sha, changes[0].committed_at)
                reading = read_table(path, body, last, url, self.raw.fetcher.budget.bounds)
            except UpstreamError as exc:
                if exc.bound is not None and exc.bound.fatal:
                    raise  # the deadline or a rate limit: every later file would meet it too
                discovery.errors.append(str(exc))  # it names the URL, which names the file
                continue
            except FileError as exc:
                discovery.errors.append(f"{exc} ({url})")
                continue
            except (ArithmeticError, RecursionError, TypeError) as exc:
                # A value no check expected (1e999999, nesting past the decoder's limit): the file fails alone.
                discovery.errors.append(failure_line(url, exc))
                continue
            rows_read += reading.rows_read
            discovery.skipped.update(reading.skipped)
            discovery.warnings += reading.warnings
            discovery.refused.update(reading.refused)
            self.drift |= reading.drift
            for row in reading.rows:
                by_workload[row.workload.external_id].append(row)
        discovery.warnings.append(
            f"read {rows_read} rows from {len(paths) - len(discovery.errors)} of {len(paths)} tables at {commit[:12]}"
        )
        discovery.complete = self._complete = not discovery.errors
        self._rows = dict(by_workload)
        discovery.units = sorted(self._rows)
        return discovery

    def _commit(self) -> str:
        """The ref as a commit: the newest commit on it that changed ``aiter/configs/``."""
        if re.fullmatch(r"[0-9a-f]{40}", self.ref):
            return self.ref
        changes = self.api.commits(CONFIGS.rstrip("/"), self.ref)
        if not changes:
            raise UpstreamError(f"{self.ref}: no commit changed {CONFIGS}")
        return changes[0].sha

    def fetch(self, unit: str) -> list[TunedRow]:
        return self._rows[unit]

    def map(self, unit: str, fetched: list[TunedRow]) -> Batch:
        """The workload, one run per row and what they refer to; raises ``WorkloadError``."""
        key = fetched[0].workload
        models = {row.model for row in fetched if row.model}
        try:
            workload = workload_manifest(key, models)
        except ValidationError as exc:
            raise WorkloadError(f"{unit}: cannot be mapped ({first_error(exc, whole='manifest')})") from None
        protocol = protocol_manifest()
        batch = Batch(
            unit=unit,
            workload=workload,
            external_id=unit,
            protocols=[protocol],
            # Rows of a table that could not be read are missing here: no stored run is missing upstream for it.
            complete=self._complete,
        )
        environments: dict[Gpu, ExecutionEnvironment] = {}
        implementations: dict[tuple[str | None, tuple[str, ...]], Implementation] = {}
        occurrences: Counter[str] = Counter()
        for row in fetched:
            gpu = amd_gpu_class(row.gfx, row.cu_num)
            environment = environments.setdefault(gpu, environment_manifest(gpu))
            implementation = implementations.setdefault(
                (row.library, row.kernels), implementation_manifest(row.library, row.kernels)
            )
            identity = repr(run_identity(row))
            occurrences[identity] += 1
            external_id = run_external_id(row, occurrences[identity])
            digests = {
                "protocolDigest": protocol.digest,
                "workloadDigest": workload.digest,
                "environmentDigest": environment.digest,
                "implementationDigest": implementation.digest,
            }
            try:
                manifest = run_manifest(row, gpu, external_id, digests)
            except ValidationError as exc:
                batch.skipped["invalid"] += 1
                batch.warnings.append(
                    f"{row.path} row {row.line}: cannot be mapped ({first_error(exc, whole='manifest')})"
                )
                continue
            batch.runs.append(
                RunRecord(
                    manifest=manifest,
                    implementation=implementation.metadata.name,
                    protocol=protocol.metadata.name,
                    environment=environment.metadata.name,
                    external_id=external_id,
                )
            )
        batch.environments = list(environments.values())
        batch.implementations = list(implementations.values())
        return batch


def open_source(reading: Reading) -> Opened:
    """The adapter on a recorded snapshot (both hosts served from its folder) or on GitHub
    (``--api-url``/``--raw-url`` options, else the settings; the token goes to the API only),
    at ``--ref`` (default ``main``)."""
    ref = reading.options.get("ref") or DEFAULT_REF
    hosts = github.open_hosts(reading, OWNER, REPO)
    origin = hosts.snapshot_origin or f"{hosts.raw_url}/{OWNER}/{REPO}/{ref}"
    return Opened(Aiter(hosts.api, hosts.raw, ref), origin, hosts.observed_at, hosts.clients)
