"""``kernelindex export`` / ``kernelindex import``: the whole store round-trips SQLite →
PostgreSQL → SQLite with every row and digest identical; a truncated, damaged or tampered
file, or one that fails while loading, writes nothing. Every file carries an HMAC under the
operator's key; a forger who holds that key still cannot change what pages rank and show,
because those columns are derived again from the manifests and the audit log."""

from __future__ import annotations

import gzip
import hashlib
import hmac
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from kernelindex.app import create_app
from kernelindex.cli import main
from kernelindex.db import migrate
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Attestation, ManifestVersion, Run, User
from kernelindex.ingest.reruns.importer import import_bundled_reruns
from kernelindex.ingest.runner import run_ingest
from kernelindex.settings import Settings
from kernelindex.store import accounts, attestations, moderation
from kernelindex.store.version import MAX_LAG_S
from tests.catalogue import catalogue_fingerprint
from tests.factories import PASSWORD
from tests.rerun_bundles import v1_reruns
from tests.test_tallies import assert_exact
from tests.upstream import FakeUpstream

# One worker runs them all, so that the backup below is made once.
pytestmark = pytest.mark.xdist_group("backup")


KEY = "test backup key, not a secret"
OTHER_KEY = "another operator's backup key"


def cli(*args: str, key: str | None = KEY) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env={"KERNELINDEX_BACKUP_KEY": key})
    return result.exit_code, " ".join(result.output.split())


def export(url: str, path: Path) -> list[bytes]:
    code, output = cli("export", str(path), "--database-url", url)
    assert code == 0, output
    return gzip.decompress(path.read_bytes()).splitlines(keepends=True)


def body(lines: list[bytes]) -> list[bytes]:
    """The rows of a backup: all but the header (it has the time of writing) and the trailer."""
    return lines[1:-1]


def community(url: str) -> None:
    """Everything a store holds beyond an ingest: accounts, API keys, attestations (one
    hidden), reports (one resolved), a withdrawal, a release on review, the audit log, and
    record history."""
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    upstream = FakeUpstream()
    upstream.submission(40)["sol_score"] = 0.5  # a new digest for one run; the old one stays in its history
    run_ingest(upstream.adapter(), sessions, origin="fake upstream")
    with sessions.begin() as session:
        ada = accounts.create_user(session, "ada", PASSWORD)
        grace = accounts.create_user(session, "grace", PASSWORD, maintainer=True)
        accounts.create_api_key(session, ada, "laptop", ["attest"])
        runs = session.scalars(select(Run).order_by(Run.id).limit(3)).all()
        kept = attestations.add_attestation(session, ada, runs[0], {"type": "reproduced", "body": "Same on my B200."})
        hidden = attestations.add_attestation(
            session, ada, runs[1], {"type": "environment_note", "body": "Spam <b>here</b>."}
        )
        report = attestations.add_report(session, runs[2], "wrong_result", "Numbers look off.", None)
        attestations.add_report(session, runs[0], "other", 'Ünïcode ✓ and "quotes".', ada)
        session.flush()
        moderation.hide_attestation(session, grace, hidden.name, "spam")
        moderation.resolve_report(session, grace, report.id, "checked", dismissed=False)
        moderation.withdraw_run(session, grace, runs[2].name, "duplicate upload")
        moderation.release_run(session, grace, "sol-submission-33453", "bound checked")
        assert kept.name
    # Controlled reruns: signed bundles, their results and case-scoped runs.
    assert all(result.error is None for result in import_bundled_reruns(sessions, v1_reruns()))
    engine.dispose()


@pytest.fixture
def source_url(sqlite_loaded_template: Path, tmp_path: Path) -> str:
    path = tmp_path / "source.db"
    shutil.copy(sqlite_loaded_template, path)
    url = f"sqlite:///{path}"
    community(url)
    return url


def count(url: str, table: Any) -> int:
    engine = make_engine(url)
    try:
        with make_sessionmaker(engine)() as session:
            return session.scalar(select(func.count()).select_from(table)) or 0
    finally:
        engine.dispose()


def test_round_trip_sqlite_to_postgresql_and_back_keeps_every_row_and_digest(source_url, postgres, tmp_path):
    original = export(source_url, tmp_path / "sqlite.ki.gz")
    header = json.loads(original[0])
    assert header["tables"]["attestation"] == 2 and header["tables"]["report"] == 2
    assert header["tables"]["user_account"] == 2 and header["tables"]["api_key"] == 1
    assert header["tables"]["rerun_bundle"] == 17 and header["tables"]["rerun_case"] == 17 * 16
    assert count(source_url, ManifestVersion) > count(source_url, Run)  # history is there

    pg_url = postgres.create("restored")
    code, output = cli("import", str(tmp_path / "sqlite.ki.gz"), "--database-url", pg_url)
    assert code == 0, output
    assert f"Imported {sum(header['tables'].values())} rows" in output
    from_pg = export(pg_url, tmp_path / "postgresql.ki.gz")
    assert body(from_pg) == body(original)

    back_url = f"sqlite:///{tmp_path / 'back.db'}"
    code, output = cli("import", str(tmp_path / "postgresql.ki.gz"), "--database-url", back_url)
    assert code == 0, output
    assert body(export(back_url, tmp_path / "back.ki.gz")) == body(original)

    expected = catalogue_fingerprint(source_url)
    assert catalogue_fingerprint(pg_url) == expected == catalogue_fingerprint(back_url)
    for url in (pg_url, back_url):  # the workload tallies, left out of the file, were counted again
        restored = make_engine(url)
        assert_exact(make_sessionmaker(restored))
        restored.dispose()
    # The restored store is a working one: ids carry on after the imported rows, passwords still work.
    engine = make_engine(pg_url)
    with make_sessionmaker(engine).begin() as session:
        assert accounts.authenticate(session, "ada", PASSWORD) is not None
        newcomer = accounts.create_user(session, "linus", PASSWORD)
        run = session.scalars(select(Run).order_by(Run.id.desc())).first()
        attestations.add_attestation(session, newcomer, run, {"type": "reproduced", "body": "Here too."})
        assert session.scalar(select(func.count()).select_from(User)) == 3
        assert session.scalar(select(func.count()).select_from(Attestation)) == 3
    engine.dispose()


# --- Refusals: each on both backends, and each leaves the store as it was -------------------


def rewrite(path: Path, change: Callable[[list[bytes]], list[bytes]], reseal: bool, key: str | None = KEY) -> None:
    """Change the rows of a backup; ``reseal`` recomputes the trailer as a forger would: its
    checksum, and its HMAC under ``key`` (the operator's own when the forger holds it; None
    keeps the old HMAC, as a forger without the key must)."""
    lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    rows = change(lines[:-1])
    if reseal:
        content = b"".join(rows)
        trailer = json.loads(lines[-1])
        trailer.update(lines=len(rows), sha256=hashlib.sha256(content).hexdigest())
        if key is not None:
            trailer["hmac"] = hmac.new(key.encode(), content, hashlib.sha256).hexdigest()
        rows = [*rows, json.dumps(trailer).encode() + b"\n"]
    else:
        rows = [*rows, lines[-1]]
    path.write_bytes(gzip.compress(b"".join(rows)))


def edit_first(
    table: str, edit: Callable[[dict[str, Any]], None], where: Callable[[dict[str, Any]], bool] = lambda row: True
) -> Callable[[list[bytes]], list[bytes]]:
    def change(lines: list[bytes]) -> list[bytes]:
        for index, line in enumerate(lines):
            value = json.loads(line)
            if value.get("table") == table and where(value["row"]):
                edit(value["row"])
                lines[index] = json.dumps(value).encode() + b"\n"
                return lines
        raise AssertionError(f"no {table} row")

    return change


def faster(row: dict[str, Any]) -> None:
    row["latency_ns"] = 1


def forged_manifest(row: dict[str, Any]) -> None:
    manifest = json.loads(row["manifest_json"])
    manifest["spec"]["measurement"] = {"forged": True}
    row["manifest_json"] = json.dumps(manifest)


def duplicate_last_run(lines: list[bytes]) -> list[bytes]:
    """A file that passes every check but cannot be loaded: a run's id twice (with its
    count raised in the header). Loading fails part-way, after thousands of rows."""
    last_run = max(i for i, line in enumerate(lines) if json.loads(line).get("table") == "run")
    header = json.loads(lines[0])
    header["tables"]["run"] += 1
    return [json.dumps(header).encode() + b"\n", *lines[1 : last_run + 1], lines[last_run], *lines[last_run + 1 :]]


def cut_gzip(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])


CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "gzip-cut-short": (cut_gzip, "truncated or is not a gzip file"),
    "lines-cut-at-the-end": (
        lambda p: p.write_bytes(gzip.compress(b"".join(gzip.decompress(p.read_bytes()).splitlines(True)[:-50]))),
        "no end line: the file is truncated",
    ),
    "not-gzip": (lambda p: p.write_bytes(b"DROP TABLE run;\n"), "not a gzip file"),
    "row-changed": (lambda p: rewrite(p, edit_first("run", faster), reseal=False), "HMAC does not match"),
    "maintainer-flag-resealed-without-the-key": (
        lambda p: rewrite(p, edit_first("user_account", lambda row: row.update(is_maintainer=True)), True, key=None),
        "HMAC does not match",
    ),
    "signed-with-another-key": (
        lambda p: rewrite(p, lambda lines: lines, reseal=True, key=OTHER_KEY),
        "written with another backup key",
    ),
    "manifest-forged-and-resealed": (
        lambda p: rewrite(p, edit_first("run", forged_manifest), reseal=True),
        "does not match its digest",
    ),
    "unknown-column-resealed": (
        lambda p: rewrite(p, edit_first("user_account", lambda row: row.update(is_admin=True)), reseal=True),
        "user_account has no column is_admin",
    ),
    "fails-while-loading": (lambda p: rewrite(p, duplicate_last_run, reseal=True), "nothing was written"),
}

# A forger who holds the key: each edit resealed (checksum and HMAC) is still refused, naming
# the record, because the column is derived again from its manifest or the audit log.
FORGERIES: dict[str, tuple[str, Callable[[dict[str, Any]], None], Callable[[dict[str, Any]], bool], str]] = {
    "run-1-ns": ("run", faster, lambda row: True, "latency_ns is 1 in the file, but"),
    "run-replicated": (
        "run",
        lambda row: row.update(evidence="replicated"),
        lambda row: True,
        "evidence is 'replicated' in the file, but 'reported' according to its rerun bundles",
    ),
    "rerun-replicated": (
        "run",
        lambda row: row.update(evidence="replicated"),
        lambda row: row["evidence"] == "verified",
        "evidence is 'replicated' in the file, but 'verified' according to its rerun bundles",
    ),
    "run-status": (
        "run",
        lambda row: row.update(status="failed"),
        lambda row: row["status"] == "passed",
        "status is 'failed' in the file, but 'passed' according to its manifest",
    ),
    "run-moved-group": (
        "run",
        lambda row: row.update(comparison_key="sha256:" + "0" * 64),
        lambda row: True,
        "comparison_key",
    ),
    "run-withdrawal-dropped": (
        "run",
        lambda row: row.update(withdrawn_at=None, withdrawn_reason=None),
        lambda row: row["withdrawn_at"] is not None,
        "withdrawn_at is None in the file, but 'withdrawn' according to its audit log",
    ),
    "run-release-forged": (
        "run",
        lambda row: row.update(held_for_review=False, review_state="released", review_note="forged"),
        lambda row: row["held_for_review"] is True,
        "review_state is 'released' in the file, but None according to its audit log",
    ),
    "run-release-dropped": (
        "run",
        lambda row: row.update(held_for_review=True, review_state=None, review_note=None, reviewed_at=None),
        lambda row: row["review_state"] == "released",
        "review_state is None in the file, but 'released' according to its audit log",
    ),
    "attestation-unhidden": (
        "attestation",
        lambda row: row.update(state="published", hidden_reason=None),
        lambda row: row["state"] == "hidden",
        "state is 'published' in the file, but 'hidden' according to its audit log",
    ),
    "attestation-hidden": (
        "attestation",
        lambda row: row.update(state="hidden", hidden_reason="forged"),
        lambda row: row["state"] == "published",
        "state is 'hidden' in the file, but 'published' according to its audit log",
    ),
}


@pytest.fixture(scope="module")
def backup_file(tmp_path_factory: pytest.TempPathFactory, sqlite_loaded_template: Path) -> Path:
    folder = tmp_path_factory.mktemp("backup")
    shutil.copy(sqlite_loaded_template, folder / "source.db")
    community(f"sqlite:///{folder / 'source.db'}")
    export(f"sqlite:///{folder / 'source.db'}", folder / "good.ki.gz")
    return folder / "good.ki.gz"


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_damaged_or_tampered_backup_is_refused_and_writes_nothing(backup_file, database_url, tmp_path, corruption):
    damage, message = CORRUPTIONS[corruption]
    path = tmp_path / "damaged.ki.gz"
    shutil.copy(backup_file, path)
    damage(path)
    code, output = cli("import", str(path), "--database-url", database_url)
    assert code == 1, output
    assert "Not imported, nothing was written" in output and message in output
    assert "Traceback" not in output
    assert count(database_url, Run) == count(database_url, User) == 0


@pytest.mark.parametrize("forgery", FORGERIES)
def test_forged_columns_resealed_with_the_key_are_refused_and_write_nothing(
    backup_file, database_url, tmp_path, forgery
):
    table, edit, where, message = FORGERIES[forgery]
    path = tmp_path / "forged.ki.gz"
    shutil.copy(backup_file, path)
    rewrite(path, edit_first(table, edit, where), reseal=True)
    code, output = cli("import", str(path), "--database-url", database_url)
    assert code == 1, output
    assert "Not imported, nothing was written" in output and f"{table} " in output and message in output
    assert count(database_url, Run) == count(database_url, User) == 0


@pytest.mark.parametrize("command", ["export", "import"])
def test_export_and_import_refuse_to_run_without_a_key(backup_file, database_url, tmp_path, command):
    path = backup_file if command == "import" else tmp_path / "out.ki.gz"
    code, output = cli(command, str(path), "--database-url", database_url, key=None)
    assert code == 2 and "no backup key" in output and "KERNELINDEX_BACKUP_KEY" in output, output
    assert not (tmp_path / "out.ki.gz").exists()


def test_a_key_file_is_the_same_key(backup_file, database_url, tmp_path):
    key_file = tmp_path / "backup.key"
    key_file.write_text(KEY + "\n")
    code, output = cli(
        "import", str(backup_file), "--key-file", str(key_file), "--database-url", database_url, key=None
    )
    assert code == 0, output


def test_import_refuses_a_non_empty_store_unless_told_and_a_failed_replace_keeps_it(
    backup_file, database_url, tmp_path
):
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    run_ingest(FakeUpstream().adapter(), make_sessionmaker(engine), origin="fake upstream")
    engine.dispose()
    before = catalogue_fingerprint(database_url)

    code, output = cli("import", str(backup_file), "--database-url", database_url)
    assert code == 1 and "the store is not empty" in output and "--replace" in output
    broken = tmp_path / "broken.ki.gz"
    shutil.copy(backup_file, broken)
    rewrite(broken, duplicate_last_run, reseal=True)
    code, output = cli("import", str(broken), "--replace", "--database-url", database_url)
    assert code == 1 and "nothing was written" in output
    assert catalogue_fingerprint(database_url) == before

    code, output = cli("import", str(backup_file), "--replace", "--database-url", database_url)
    assert code == 0, output
    replaced = make_engine(database_url)
    assert_exact(make_sessionmaker(replaced))
    replaced.dispose()
    assert body(export(database_url, tmp_path / "again.ki.gz")) == body(
        gzip.decompress(backup_file.read_bytes()).splitlines(keepends=True)
    )


def test_a_restore_empties_the_caches_of_running_workers(backup_file, database_url) -> None:
    """A running site answers from its response cache; after a --replace restore, it answers with
    the restored catalogue, not the cached one: at once on SQLite, and on PostgreSQL as soon as the
    worker's listener has heard of the restore, never later than ``MAX_LAG_S``."""
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    run_ingest(FakeUpstream().adapter(), make_sessionmaker(engine), origin="fake upstream")
    engine.dispose()
    app = create_app(Settings(database_url=database_url, secret_key="restore", public_url="http://testserver"))
    with TestClient(app) as client:
        before = client.get("/index.json").json()["workloadCount"]
        assert client.get("/index.json").json()["workloadCount"] == before  # now served from the cache
        code, output = cli("import", str(backup_file), "--replace", "--database-url", database_url)
        assert code == 0, output
        # SQLite reads the versions on every request: no wait at all.
        deadline = time.monotonic() + (0 if database_url.startswith("sqlite") else MAX_LAG_S + 1)
        while (after := client.get("/index.json").json()["workloadCount"]) == before and time.monotonic() < deadline:
            time.sleep(0.05)
    assert before != after == 235
