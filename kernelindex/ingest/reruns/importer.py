"""Importing rerun bundles: the approved runner keys, one transaction per bundle, and the
bundled dataset a fresh install loads.

``import_bundle`` files a verified bundle under the registry's workload it names: a bundle
imported before writes nothing, one whose cases differ from the workload's is refused,
and anything else is mapped (``reruns.map_bundle``) and written through the store.

Approved keys come from configuration only (``KERNELINDEX_RUNNER_KEYS_FILE`` or the CLI's
``--keys``); there is no default key. The bundled dataset is the one exception: its own
folder lists the public keys of the runs that produced it, and its files are checked
against its ``MANIFEST.sha256`` before anything is read, as the bundled snapshot is.

The bundled bundles' signatures and figures are checked in full once, when the dataset is
built (``write_checked_list``), not on every first start: ``checked.json`` lists each file
that passed with its sha256 and the key that signed it, and is itself pinned by
``MANIFEST.sha256``. A first start reads a listed file (its bytes matching the listed
sha256) without recomputing its figures, and checks any other file in full; a test checks
every bundle again and requires the list to be what that gives.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.ingest.reruns import VerifiedBundle, map_bundle, read_bundle
from kernelindex.ingest.snapshot import verify_checksums
from kernelindex.rerun.bundle import BundleError, key_id
from kernelindex.rerun.cases import Case, cases_sha256
from kernelindex.store.batch import ReadFrom
from kernelindex.store.ingest import ensure_source, finish_report, start_report
from kernelindex.store.reruns import (
    RERUN_SOURCE,
    RerunWorkload,
    derive_rerun_evidence,
    record_operator,
    rerun_workload,
    stored_bundle,
    write_rerun,
)

BUNDLED_KEYS_FILE = "runner-keys.json"
CHECKED_FILE = "checked.json"
# Bundles are checked in worker processes from this many files on (below it, starting the workers
# costs more than it saves), by at most this many workers, this many bundles at a time (one batch
# ahead of the one being written).
PARALLEL_FROM = 64
MAX_VERIFY_WORKERS = 8
VERIFY_BATCH = 64
# Verified bundles written per transaction: every commit recounts the tallies of the workloads
# written and bumps the page versions, so once per group rather than once per bundle; and the
# group's rows are flushed together, a multi-row INSERT per table (for the 824 bundled bundles,
# 32 a group took 0.3 to 0.7 s more CPU than 128).
WRITE_GROUP = 128
IMPORTED = ReadFrom("import")


class KeysError(ValueError):
    """The approved-keys file cannot be used; the message says why."""


@dataclass(frozen=True)
class ImportOutcome:
    bundle_id: str
    run_name: str | None
    implementation: str
    workload: str
    latency_ns: int | None
    already_imported: bool
    group_key: str | None = None  # the comparison group of the run (derived again after an import)


@dataclass(frozen=True)
class BundleResult:
    path: str
    outcome: ImportOutcome | None = None
    error: str | None = None


@dataclass(frozen=True)
class Operator:
    """Who runs a runner key, as a maintainer approved it: reruns by two operators can be independent."""

    id: str
    name: str
    approved_by: str


@dataclass(frozen=True)
class ApprovedKeys:
    """The approved runner keys: ``{keyId: publicKey}`` for the signature check, and the operator of
    each key whose entry states one (a key without one never counts as independent of another)."""

    public_keys: dict[str, str]
    operators: dict[str, Operator]


def load_approved_keys(path: Path) -> ApprovedKeys:
    """``{"keys": [{"keyId", "publicKey", "label"?, "operator"?: {"id", "name", "approvedBy"}}, …]}``,
    each id checked against its key. Files written before operators existed are read as they are."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise KeysError(f"cannot read the approved runner keys at {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise KeysError(f"{path} is not JSON: {exc}") from exc
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise KeysError(f'{path} must be {{"keys": [{{"keyId": …, "publicKey": …}}, …]}}')
    approved: dict[str, str] = {}
    operators: dict[str, Operator] = {}
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("publicKey"), str):
            raise KeysError(f"{path}: key {number} has no publicKey")
        try:
            raw = base64.b64decode(entry["publicKey"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise KeysError(f"{path}: key {number}'s publicKey is not base64") from exc
        if len(raw) != 32 or key_id(raw) != entry.get("keyId"):
            raise KeysError(f"{path}: key {number}'s keyId does not belong to its 32-byte Ed25519 public key")
        approved[entry["keyId"]] = entry["publicKey"]
        if "operator" in entry:
            operators[entry["keyId"]] = _operator(path, number, entry["operator"])
    return ApprovedKeys(approved, operators)


def _operator(path: Path, number: int, value: object) -> Operator:
    fields = ("id", "name", "approvedBy")
    if not isinstance(value, dict) or not all(
        isinstance(value.get(field), str) and 0 < len(value[field].strip()) <= 200 for field in fields
    ):
        raise KeysError(f'{path}: key {number}\'s operator must be {{"id", "name", "approvedBy"}}, each text')
    return Operator(value["id"].strip(), value["name"].strip(), value["approvedBy"].strip())


def import_bundle(
    session: Session,
    bundle: VerifiedBundle,
    now: datetime,
    operator: Operator | None = None,
    *,
    derive: bool = True,
) -> ImportOutcome:
    """Store one verified bundle signed by a key of ``operator`` (None: not stated); importing the
    same bundle again writes nothing, unless it was stored before its key's operator was stated.
    ``derive`` False leaves the evidence of the new run's group to the caller."""
    payload = bundle.payload
    outcome = ImportOutcome(
        payload.bundle_id,
        None,
        payload.implementation.name,
        payload.workload.slug,
        payload.suite.latency_ns,
        already_imported=False,
    )
    existing = stored_bundle(session, payload.bundle_id)
    if existing is not None:
        if existing.file_sha256 != bundle.file_sha256:
            raise BundleError(f"bundle {payload.bundle_id} was imported before with different content")
        if operator is not None:
            record_operator(session, payload.bundle_id, operator.id)
        # Its group is derived again with the new ones: a rule changed since keeps no stale label.
        return replace(outcome, run_name=existing.run_name, already_imported=True, group_key=existing.group_key)

    workload = rerun_workload(session, payload.workload.slug)
    if workload is None:
        raise BundleError(
            f"bundle {payload.bundle_id} measured {payload.workload.slug}, a workload not in this registry"
        )
    measured = payload.workload.fixture_sha256
    if measured is not None and workload.reference_sha256 is not None and measured != workload.reference_sha256:
        raise BundleError(
            f"bundle {payload.bundle_id} measured a program (sha256 {measured[:12]}…) other than {workload.name}'s "
            f"reference program ({workload.reference_sha256[:12]}…)"
        )
    if cases_sha256(_cases_as_measured(workload, measured is not None)) != payload.workload.cases_sha256:
        raise BundleError(
            f"bundle {payload.bundle_id} measured a suite of {payload.workload.case_count} cases that differs from "
            f"the registry's {workload.name} ({workload.digest}); it cannot be filed under that workload"
        )
    record = map_bundle(bundle, workload.digest, operator.id if operator else None)
    run = write_rerun(session, record, workload, now, derive=derive)
    return replace(outcome, run_name=run.name, group_key=run.comparison_key)


def _cases_as_measured(workload: RerunWorkload, program: bool) -> list[Case]:
    """The workload's cases as the runner lists them: for a program file (its content already matched),
    only the integer constants are axes, so a float constant such as a scaling factor is left out."""
    if not program:
        return workload.cases
    return [Case(case.index, {k: v for k, v in case.axes.items() if type(v) is int}) for case in workload.cases]


Progress = Callable[[str, int, int], None]  # (what was just done, how many done, how many in all)


def import_bundle_files(
    sessions: sessionmaker[Session],
    paths: Iterable[Path],
    approved: ApprovedKeys,
    origin: str | None = None,
    *,
    checked: dict[Path, CheckedFile] | None = None,
    progress: Progress | None = None,
) -> list[BundleResult]:
    """Import the files, a refused bundle leaving no row behind (``_write_group``). The import
    is recorded as an ingestion report of the reruns source (``origin`` says what was read), each
    refused file named in its errors. ``checked``: files checked in full before (``CheckedFile``);
    ``progress`` is told of each bundle written."""
    paths = list(paths)
    origin = origin or f"{len(paths)} bundle file{'' if len(paths) == 1 else 's'}"
    with sessions.begin() as session:
        report_id = start_report(session, ensure_source(session, RERUN_SOURCE), origin, datetime.now(UTC), IMPORTED).id
    results = _import_each(sessions, paths, approved, checked or {}, progress)
    with sessions.begin() as session:
        # Once per comparison group rather than once per bundle: hundreds of bundles share a few groups.
        groups = {r.outcome.group_key for r in results if r.outcome is not None and r.outcome.group_key}
        derive_rerun_evidence(session, *sorted(groups))
        _finish(session, report_id, results)
    return results


def _finish(session: Session, report_id: int, results: list[BundleResult]) -> None:
    added = sum(1 for r in results if r.outcome is not None and not r.outcome.already_imported)
    unchanged = sum(1 for r in results if r.outcome is not None and r.outcome.already_imported)
    # The file's name only: the report is public, and a server's folders are nobody else's business.
    errors = [f"{Path(r.path).name}: {r.error}" for r in results if r.error is not None]
    imported = added + unchanged
    status = "succeeded" if not errors else "partial" if imported else "failed"
    counts = {
        "added": {"run": added},
        "unchanged": {"run": unchanged},
        "units": {"listed": len(results), "ingested": imported, "failed": len(errors)},
    }
    finish_report(session, report_id, status, datetime.now(UTC), counts, errors, [])


def _import_each(
    sessions: sessionmaker[Session],
    paths: list[Path],
    approved: ApprovedKeys,
    checked: dict[Path, CheckedFile],
    progress: Progress | None,
) -> list[BundleResult]:
    results: list[BundleResult] = []
    group: list[tuple[Path, VerifiedBundle | str]] = []

    def write() -> None:
        nonlocal results, group
        results += _write_group(sessions, group, approved)
        group = []
        if progress is not None:
            progress(Path(results[-1].path).name, len(results), len(paths))

    if progress is not None:
        progress("", 0, len(paths))
    for verified in _verified(paths, approved.public_keys, checked):
        group.append(verified)
        if len(group) == WRITE_GROUP:
            write()
    if group:
        write()
    return results


def _write_group(
    sessions: sessionmaker[Session], group: list[tuple[Path, VerifiedBundle | str]], approved: ApprovedKeys
) -> list[BundleResult]:
    """Write verified bundles in one transaction; if any is refused, the transaction is rolled back
    and each is written in a transaction of its own, so that a refused bundle leaves no row behind
    and the others are kept. (Not a savepoint each: a savepoint's release runs the commit hooks,
    which recount the tallies and bump the page versions, as a commit does.)"""
    try:
        # No flush before each query: the group's rows are written together at the commit. A bundle
        # repeated within the group is then caught by the database's unique keys, and the group is
        # written again one bundle at a time.
        with sessions.begin() as session, session.no_autoflush:
            return [_write(session, path, verified, approved) for path, verified in group]
    except (BundleError, IntegrityError):
        return [_write_alone(sessions, path, verified, approved) for path, verified in group]


def _write(session: Session, path: Path, verified: VerifiedBundle | str, approved: ApprovedKeys) -> BundleResult:
    if isinstance(verified, str):
        return BundleResult(str(path), error=verified)
    operator = approved.operators.get(verified.key_id)
    return BundleResult(str(path), outcome=import_bundle(session, verified, datetime.now(UTC), operator, derive=False))


def _write_alone(
    sessions: sessionmaker[Session], path: Path, verified: VerifiedBundle | str, approved: ApprovedKeys
) -> BundleResult:
    try:
        with sessions.begin() as session:
            return _write(session, path, verified, approved)
    except BundleError as exc:
        return BundleResult(str(path), error=str(exc))
    except IntegrityError:
        # Another import stored the same bundle at the same moment; it is there once.
        return BundleResult(str(path), error="imported concurrently by another process; run again")


def _verified(
    paths: list[Path], public_keys: dict[str, str], checked: dict[Path, CheckedFile] | None = None
) -> Iterator[tuple[Path, VerifiedBundle | str]]:
    """Each path with its verified bundle or why it was refused, in order. Checking a bundle (its
    signature, every figure, each case's bootstrap interval) is CPU work that needs no store, so many
    bundles are checked by a pool of processes, a batch at a time to keep memory bounded. A file
    checked before (``checked``) is only read, here: a tenth of the work, less than a worker costs."""
    checked = checked or {}
    workers = min(os.cpu_count() or 1, MAX_VERIFY_WORKERS)
    unchecked = sum(1 for path in paths if path not in checked)
    if unchecked < PARALLEL_FROM or workers < 2:
        for path in paths:
            yield path, _verify_file(path, public_keys, checked.get(path))
        return
    batches = [paths[start : start + VERIFY_BATCH] for start in range(0, len(paths), VERIFY_BATCH)]

    def known(number: int) -> list[CheckedFile | None]:
        return [checked.get(path) for path in batches[number]]

    done = 0
    try:
        # spawn: nothing of this process (an open store, its threads) is copied into the workers.
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            checking = pool.map(_verify_file, batches[0], itertools.repeat(public_keys), known(0), chunksize=8)
            for number, batch in enumerate(batches):
                results = list(checking)
                if number + 1 < len(batches):
                    # The workers check the next batch while the caller writes this one.
                    checking = pool.map(
                        _verify_file, batches[number + 1], itertools.repeat(public_keys), known(number + 1), chunksize=8
                    )
                yield from zip(batch, results, strict=True)
                done += len(batch)
    except (BrokenProcessPool, OSError):
        # Workers that cannot start (a main module a new process cannot import, no processes allowed):
        # the rest is checked here, one after another.
        for path in paths[done:]:
            yield path, _verify_file(path, public_keys, checked.get(path))


def _verify_file(path: Path, public_keys: dict[str, str], checked: CheckedFile | None = None) -> VerifiedBundle | str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"cannot read it: {exc.strerror}"
    try:
        if checked is not None and hashlib.sha256(data).hexdigest() == checked.sha256:
            return read_bundle(data, public_keys, checked_key=checked.key_id)
        return read_bundle(data, public_keys)
    except BundleError as exc:
        return str(exc)


@dataclass(frozen=True)
class CheckedFile:
    """A bundle file that passed every check of ``read_bundle``: its bytes' sha256 and its signing key."""

    sha256: str
    key_id: str


def check_bundle_files(paths: list[Path], public_keys: dict[str, str]) -> dict[Path, CheckedFile | str]:
    """Check each file in full (its signature and every figure): what ``checked.json`` records for
    it, or why it was refused."""
    found: dict[Path, CheckedFile | str] = {}
    for path, verified in _verified(paths, public_keys):
        found[path] = verified if isinstance(verified, str) else CheckedFile(verified.file_sha256, verified.key_id)
    return found


def checked_list_text(root: Path, checked: dict[Path, CheckedFile]) -> str:
    """``checked.json`` for the dataset at ``root``: files by their path under it, in order."""
    files = {
        path.relative_to(root).as_posix(): {"sha256": found.sha256, "keyId": found.key_id}
        for path, found in sorted(checked.items())
    }
    document = {
        "about": "Bundles whose signature and figures passed every check of the importer when this "
        "dataset was built; a first start does not recompute them (kernelindex/ingest/reruns/importer.py).",
        "files": files,
    }
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def read_checked_list(root: Path) -> dict[Path, CheckedFile]:
    """The files ``checked.json`` lists, by path; empty when the dataset has none (or a malformed one:
    then every file is checked in full, as it would be without the list)."""
    try:
        document = json.loads((root / CHECKED_FILE).read_text(encoding="utf-8"))
        return {
            root / name: CheckedFile(str(entry["sha256"]), str(entry["keyId"]))
            for name, entry in document["files"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def write_checked_list(root: Path) -> int:
    """Check every bundle of the dataset at ``root`` in full, and write ``checked.json`` and its line in
    ``MANIFEST.sha256``; returns how many files passed (a refused file is left out, and checked again
    on every start, where it is refused again)."""
    approved = load_approved_keys(root / BUNDLED_KEYS_FILE)
    found = check_bundle_files(sorted((root / "bundles").glob("*.json")), approved.public_keys)
    passed = {path: result for path, result in found.items() if isinstance(result, CheckedFile)}
    text = checked_list_text(root, passed)
    (root / CHECKED_FILE).write_text(text, encoding="utf-8")
    listing = root / "MANIFEST.sha256"
    lines = [line for line in listing.read_text().splitlines() if line and not line.endswith(f"  {CHECKED_FILE}")]
    lines.append(f"{hashlib.sha256(text.encode()).hexdigest()}  {CHECKED_FILE}")
    listing.write_text("\n".join(lines) + "\n")
    return len(passed)


def import_bundled_reruns(
    sessions: sessionmaker[Session], root: Path, progress: Progress | None = None
) -> list[BundleResult]:
    """Load the bundled rerun dataset (checksummed folder with its own runner keys), reading the files
    its ``checked.json`` lists without recomputing their figures."""
    verify_checksums(root)
    approved = load_approved_keys(root / BUNDLED_KEYS_FILE)
    files = sorted((root / "bundles").glob("*.json"))
    return import_bundle_files(
        sessions,
        files,
        approved,
        origin=f"bundled reruns ({len(files)} bundles)",
        checked=read_checked_list(root),
        progress=progress,
    )
