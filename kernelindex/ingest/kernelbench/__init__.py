"""The KernelBench adapter: every baseline timing file in the repository's history.

KernelBench (ScalingIntelligence/KernelBench) publishes the time of its PyTorch reference
programs on many GPUs and in several execution modes as JSON files under ``results/timing``,
and revises the problem files over time. The history is read through GitHub's REST API (every
branch, the commits that touched ``results/timing``, the file tree of each) and the files
through the raw host, from a recorded snapshot or live, by the same code:

- a timing file is read once per content (git blob), at the first commit that holds it; a
  changed file later is a new measurement, and both are kept;
- its figures measured the problem files of that same commit: one workload per problem file
  *content* (external id ``level1/19@<sha256[:16]>``), so a revised problem is a new workload;
- each usable entry is one run; ``null`` entries, unknown GPU names and problems missing from
  the commit are counted and reported (a warning naming them, per file), never stored; a file
  that cannot be read or is not as published is an error, and nothing of it is stored.

The problem files are read while discovering, not per unit: a workload's external id is made
from its content's sha256, and the runner compares the listed units with the stored external
ids to mark what disappeared upstream, so the units must be those ids.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from functools import partial

from pydantic import ValidationError

from kernelindex.gpus import Gpu, gpu_for_device_name
from kernelindex.ingest import github
from kernelindex.ingest.github import Commit, GitHubApi, GitHubRaw, git_blob_sha
from kernelindex.ingest.http import UpstreamError, decode_json
from kernelindex.ingest.kernelbench.files import (
    MODES,
    RETIRED_SETUP,
    TIMING_FILE,
    TIMING_FOLDER,
    Measurement,
    Mode,
    Problem,
    TimingEntry,
    TimingFile,
    TimingFileError,
    non_positive_time,
    parse_timing_file,
    problem_external_id,
    problem_path,
    timing_figures,
)
from kernelindex.ingest.kernelbench.manifests import (
    environment_manifest,
    implementation_manifest,
    protocol_manifest,
    run_external_id,
    run_manifest,
    workload_manifest,
)
from kernelindex.ingest.kernelbench.problem_shapes import ProblemFacts, ProblemNotReadable, read_problem
from kernelindex.ingest.reading import Opened, Reading
from kernelindex.ingest.runner import Discovery
from kernelindex.ingest.values import first_error
from kernelindex.manifests import BenchmarkProtocol, ExecutionEnvironment, Implementation
from kernelindex.store.batch import Batch, RunRecord, SourceInfo, UnitFailure

OWNER, REPO = "ScalingIntelligence", "KernelBench"
COPYRIGHT = (
    "Copyright (c) 2023 Anne Ouyang, Simon Guo, Azalia Mirhoseini, Scaling Intelligence Lab, Stanford University"
)
SOURCE = SourceInfo(
    slug="kernelbench",
    name="KernelBench",
    url="https://github.com/ScalingIntelligence/KernelBench",
    description=(
        "Stanford Scaling Intelligence Lab's benchmark of PyTorch reference programs (single operators, "
        "fused operator sequences, whole architectures and Hugging Face models), with the baseline times "
        "its authors published for each program on many GPUs, in eager mode and under torch.compile."
    ),
    licence=(
        f"MIT License, {COPYRIGHT}. The problem files and baseline timings are redistributed under its "
        "terms, with this copyright notice."
    ),
    attribution=f"Data: KernelBench baseline timings, {COPYRIGHT}, MIT License.",
    gpu_naming=(
        'the device name PyTorch reported, as each timing file records it (hardware, such as "NVIDIA H100 80GB HBM3")'
    ),
)
MAX_CODE_CHARS = 200_000


class ProblemError(UnitFailure):
    """One problem file could not be mapped; the runner reports it and goes on."""


class SharedManifests:
    """The protocol, environments and implementations many workloads share, each built (and its
    digest computed) once per ingest rather than once per workload."""

    def __init__(self) -> None:
        self.protocols: dict[int, BenchmarkProtocol] = {}
        self.environments: dict[tuple[str, str, bool], ExecutionEnvironment] = {}
        self.implementations: dict[str, Implementation] = {}

    def protocol(self, trials: int) -> BenchmarkProtocol:
        if trials not in self.protocols:
            self.protocols[trials] = protocol_manifest(trials)
        return self.protocols[trials]

    def environment(self, setup: str, gpu: Gpu, several_gpus: bool) -> ExecutionEnvironment:
        key = (setup, gpu.slug, several_gpus)
        if key not in self.environments:
            self.environments[key] = environment_manifest(setup, gpu, several_gpus)
        return self.environments[key]

    def implementation(self, mode: Mode) -> Implementation:
        if mode.key not in self.implementations:
            self.implementations[mode.key] = implementation_manifest(mode)
        return self.implementations[mode.key]


class KernelBench:
    """Reads the repository's timing history through ``GitHubApi`` and ``GitHubRaw``."""

    source = SOURCE

    def __init__(self, api: GitHubApi, raw: GitHubRaw):
        self.api, self.raw = api, raw
        self.drift: set[str] = set()
        self.problems: dict[str, Problem] = {}
        # False when a timing file or a commit's tree could not be read: then no stored run is
        # marked missing upstream for not being listed.
        self.timings_complete = True
        self.setup_gpus: dict[str, set[str]] = defaultdict(set)
        self.shared = SharedManifests()

    # --- discover ------------------------------------------------------------------

    def discover(self) -> Discovery:
        """Every problem content that has usable figures (``UpstreamError`` if the history cannot be listed)."""
        discovery = Discovery(units=[])
        self.problems, self.timings_complete = {}, True
        self.setup_gpus.clear()
        commits = self._history()
        trees = self._trees(commits, discovery)
        first_holder: dict[tuple[str, str], Commit] = {}
        for commit in commits:
            for path, blob in trees.get(commit.sha, {}).items():
                first_holder.setdefault((path, blob), commit)
        measured: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
        for file in self._timing_files(commits, trees, discovery):
            for measurement, blob in self._measurements(file, trees[file.commit.sha], discovery):
                measured[problem_path(measurement.level, measurement.problem), blob].append(measurement)
        for (path, blob), measurements in measured.items():
            self._add_problem(path, blob, first_holder[path, blob], measurements, discovery)
        self.problems = dict(sorted(self.problems.items(), key=lambda item: _unit_order(item[1])))
        discovery.units = list(self.problems)
        discovery.complete = discovery.complete and self.timings_complete
        return discovery

    def _history(self) -> list[Commit]:
        """The commits of every branch that touched the timing folder, each once, oldest first.

        Every branch, not only the default one: a side branch can hold timing files that the
        default branch never merged."""
        commits: dict[str, Commit] = {}
        for _, head in self.api.branches():
            for commit in self.api.commits(TIMING_FOLDER, head):
                commits.setdefault(commit.sha, commit)
        return sorted(commits.values(), key=lambda commit: (commit.committed_at, commit.sha))

    def _trees(self, commits: list[Commit], discovery: Discovery) -> dict[str, dict[str, str]]:
        trees: dict[str, dict[str, str]] = {}
        for commit in commits:
            try:
                trees[commit.sha] = self.api.tree(commit.sha)
            except UpstreamError as exc:
                _stop_at_a_fatal_bound(exc)
                self.timings_complete = False
                discovery.errors.append(f"commit {commit.sha[:12]}: its file tree could not be read ({exc})")
        return trees

    def _timing_files(
        self, commits: list[Commit], trees: dict[str, dict[str, str]], discovery: Discovery
    ) -> list[TimingFile]:
        """Each timing file version (path, content) at the first commit that holds it."""
        seen: set[tuple[str, str]] = set()
        files: list[TimingFile] = []
        for commit in commits:
            for path, blob in sorted(trees.get(commit.sha, {}).items()):
                match = TIMING_FILE.fullmatch(path)
                if match is None or match["setup"] == RETIRED_SETUP or (path, blob) in seen:
                    continue
                seen.add((path, blob))
                mode = MODES.get(match["mode"])
                if not path.isprintable():
                    # A setup's name becomes a provider, a title and part of names.
                    discovery.errors.append(
                        f"{path!r} at {commit.sha[:12]}: the folder name holds control characters; the file was skipped"
                    )
                elif mode is None:
                    discovery.errors.append(
                        f"{path} at {commit.sha[:12]}: unknown mode {match['mode']!r}; the file was skipped"
                    )
                else:
                    files.append(TimingFile(path, match["setup"], mode, blob, commit))
        return files

    def _measurements(
        self, file: TimingFile, tree: dict[str, str], discovery: Discovery
    ) -> list[tuple[Measurement, str]]:
        """The usable entries of one timing file with their problem file's blob; what is not
        usable is counted, and named in one warning per file and reason (the file itself was
        read, so it has not failed)."""
        entries = self._read_timing_file(file, discovery)
        if entries is None:
            return []
        usable: list[tuple[Measurement, str]] = []
        unknown_gpus: Counter[str] = Counter()
        missing: list[str] = []
        out_of_range: list[str] = []
        for (level, name), entry in entries.items():
            if entry is None:
                discovery.skipped["not_measured"] += 1
                continue
            self.drift |= {f"timing entry.{extra}" for extra in entry.model_extra or {}}
            gpu = gpu_for_device_name(entry.hardware)
            blob = tree.get(problem_path(level, name))
            if gpu is None:
                discovery.skipped["unknown_gpu"] += 1
                unknown_gpus[entry.hardware] += 1
            elif non_positive_time(entry):
                discovery.skipped["latency_out_of_range"] += 1
                out_of_range.append(f"{level}/{name}")
            elif discovery.refused.admit(f"{file.label()}: {level}/{name}", partial(timing_figures, entry)) is None:
                continue  # refused by the figure gate, and named
            elif blob is None:
                discovery.skipped["problem_missing"] += 1
                missing.append(f"{level}/{name}")
            else:
                self.setup_gpus[file.setup].add(gpu.slug)
                usable.append((Measurement(file, level, name, entry, gpu), blob))
        if unknown_gpus:
            names = ", ".join(f"{name!r} ({count})" for name, count in sorted(unknown_gpus.items()))
            discovery.warnings.append(f"{file.label()}: unknown GPU name(s) {names}; those entries were skipped")
        if out_of_range:
            discovery.warnings.append(
                f"{file.label()}: times that are zero, negative or too large, skipped: {', '.join(out_of_range)}"
            )
        if missing:
            discovery.warnings.append(
                f"{file.label()}: timed problem files that this commit does not hold, skipped: {', '.join(missing)}"
            )
        return usable

    def _read_timing_file(
        self, file: TimingFile, discovery: Discovery
    ) -> dict[tuple[str, str], TimingEntry | None] | None:
        """The parsed file, or ``None`` after reporting why it cannot be used."""
        url = self.raw.url(file.commit.sha, file.path)
        try:
            body = self.raw.file(file.commit.sha, file.path)
            if git_blob_sha(body) != file.blob:
                raise UpstreamError(f"{url}: the raw host served other content than the tree lists")
            return parse_timing_file(decode_json(body, url, self.raw.fetcher.budget.bounds.max_json_depth))
        except UpstreamError as exc:
            _stop_at_a_fatal_bound(exc)
            reason = f"{file.label()}: {exc}"
        except TimingFileError as exc:
            reason = f"{file.label()}: {url}: not a timing file as published ({exc})"
        except (ArithmeticError, RecursionError) as exc:
            reason = f"{file.label()}: {url}: a value out of range or nested too deep ({type(exc).__name__})"
        self.timings_complete = False
        discovery.errors.append(f"{reason}; nothing from this file was stored")
        return None

    def _add_problem(
        self, path: str, blob: str, commit: Commit, measurements: list[Measurement], discovery: Discovery
    ) -> None:
        """Read one problem file (at the first commit that holds this content) and file its measurements."""
        label, url = f"{path} at {commit.sha[:12]}", self.raw.url(commit.sha, path)
        try:
            content = self.raw.file(commit.sha, path)
            if git_blob_sha(content) != blob:
                raise UpstreamError(f"{url}: the raw host served other content than the tree lists")
        except UpstreamError as exc:
            _stop_at_a_fatal_bound(exc)
            discovery.complete = False
            discovery.skipped["problem_unreadable"] += len(measurements)
            discovery.errors.append(
                f"{label}: {exc}; the {len(measurements)} figure(s) of this problem were not stored"
            )
            return
        first = measurements[0]
        sha256 = hashlib.sha256(content).hexdigest()
        external_id = problem_external_id(first.level, first.problem, sha256)
        # The same content under another name is the same workload; the first name read names it.
        problem = self.problems.setdefault(
            external_id, Problem(external_id, first.level, first.problem, commit, content, sha256)
        )
        problem.measurements.extend(measurements)

    # --- fetch and map -------------------------------------------------------------

    def fetch(self, unit: str) -> Problem:
        """The problem and its measurements, as discovery read them (see the module docstring)."""
        try:
            return self.problems[unit]
        except KeyError:
            raise ProblemError(f"problem {unit}: not listed by this ingest") from None

    def map(self, unit: str, fetched: Problem) -> Batch:
        """The workload of one problem content and one run per measurement; raises ``ProblemError``."""
        problem = fetched
        label = f"{problem.path} ({problem.sha256[:8]}): {self.raw.url(problem.commit.sha, problem.path)}"
        code, facts, warnings = _reference(problem, label)
        try:
            workload = workload_manifest(problem, code, facts, self.raw)
        except ValidationError as exc:
            raise ProblemError(f"{label}: cannot be mapped ({first_error(exc)})") from None
        batch = Batch(
            unit=f"{problem.path} ({problem.external_id})",
            workload=workload,
            external_id=problem.external_id,
            warnings=warnings,
            complete=self.timings_complete,
        )
        protocols: dict[int, BenchmarkProtocol] = {}
        environments: dict[tuple[str, str], ExecutionEnvironment] = {}
        implementations: dict[str, Implementation] = {}
        for measurement in problem.measurements:
            file, gpu, trials = measurement.file, measurement.gpu, measurement.entry.num_trials
            protocol = protocols[trials] = self.shared.protocol(trials)
            environment = environments[file.setup, gpu.slug] = self.shared.environment(
                file.setup, gpu, several_gpus=len(self.setup_gpus[file.setup]) > 1
            )
            implementation = implementations[file.mode.key] = self.shared.implementation(file.mode)
            digests = {
                "protocolDigest": protocol.digest,
                "workloadDigest": workload.digest,
                "environmentDigest": environment.digest,
                "implementationDigest": implementation.digest,
            }
            try:
                manifest = run_manifest(measurement, problem.stem, digests)
            except ValidationError as exc:
                batch.skipped["invalid"] += 1
                batch.warnings.append(f"{file.label()}: {measurement.problem}: {first_error(exc)}")
                continue
            batch.runs.append(
                RunRecord(
                    manifest=manifest,
                    implementation=implementation.metadata.name,
                    protocol=protocol.metadata.name,
                    environment=environment.metadata.name,
                    external_id=run_external_id(measurement),
                )
            )
        batch.protocols = list(protocols.values())
        batch.environments = list(environments.values())
        batch.implementations = list(implementations.values())
        return batch


def _stop_at_a_fatal_bound(exc: UpstreamError) -> None:
    """Re-raise ``exc`` if it met the ingest's deadline or a rate limit: every later file would too."""
    if exc.bound is not None and exc.bound.fatal:
        raise exc


def _reference(problem: Problem, label: str) -> tuple[str, ProblemFacts, list[str]]:
    """The problem file's text and what it declares; raises ``ProblemError`` (naming the file as
    ``label`` does) if it cannot be kept."""
    try:
        code = problem.content.decode("utf-8")
    except UnicodeDecodeError:
        raise ProblemError(f"{label}: not UTF-8 text") from None
    if not code.strip() or "\x00" in code or len(code) > MAX_CODE_CHARS:
        raise ProblemError(f"{label}: empty, holding NUL characters, or longer than {MAX_CODE_CHARS} characters")
    try:
        return code, read_problem(code), []
    except ProblemNotReadable as exc:
        return code, ProblemFacts(description=None), [f"{label}: {exc}; its constants and inputs are not listed"]


def _unit_order(problem: Problem) -> tuple[int, int, str, str]:
    return (problem.level_number, problem.number, problem.commit.committed_at.isoformat(), problem.sha256)


def open_source(reading: Reading) -> Opened:
    """The adapter on a recorded snapshot (both hosts served from its folder) or on GitHub
    (``--api-url``/``--raw-url`` options, else the settings; the token goes to the API only)."""
    hosts = github.open_hosts(reading, OWNER, REPO)
    origin = hosts.snapshot_origin or f"{hosts.api_url}/repos/{OWNER}/{REPO}"
    return Opened(KernelBench(hosts.api, hosts.raw), origin, hosts.observed_at, hosts.clients)
