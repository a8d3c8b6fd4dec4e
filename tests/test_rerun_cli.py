"""`kernelindex rerun import` as a maintainer runs it: keys only from configuration, a clear
refusal for every bad bundle, and a non-zero exit when anything was refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import func, select

from kernelindex.cli import main
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Run
from tests.rerun_bundles import make_payload, signed, write_keys_file


def invoke(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def _verified_runs(url: str) -> int:
    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        count = session.scalar(select(func.count()).select_from(Run).where(Run.evidence == "verified")) or 0
    engine.dispose()
    return count


def test_rerun_import_needs_configured_keys(tmp_path: Path, key, committed_catalogue_url: str) -> None:
    bundle = tmp_path / "bundle.json"
    bundle.write_bytes(signed(make_payload(), key))
    result = invoke("rerun", "import", str(bundle), "--database-url", committed_catalogue_url)
    assert result.exit_code == 2 and "No approved runner keys" in result.output
    assert _verified_runs(committed_catalogue_url) == 0


def test_rerun_import_stores_good_bundles_and_refuses_the_rest(tmp_path: Path, key, committed_catalogue_url) -> None:
    keys = write_keys_file(tmp_path / "keys.json", key)
    good, again, tampered = tmp_path / "good.json", tmp_path / "again.json", tmp_path / "tampered.json"
    good.write_bytes(signed(make_payload(), key))
    again.write_bytes(good.read_bytes())
    document = json.loads(good.read_bytes())
    document["payload"]["cases"][0]["timing"]["samplesNs"][0][0] = 1
    tampered.write_text(json.dumps(document))
    env = {"KERNELINDEX_RUNNER_KEYS_FILE": str(keys)}
    result = invoke("rerun", "import", str(good), str(tampered), "--database-url", committed_catalogue_url, env=env)
    assert result.exit_code == 1
    assert "imported" in result.output and "kernelindex-039-triton" in result.output
    assert "refused" in result.output and "bad signature" in result.output
    assert _verified_runs(committed_catalogue_url) == 1
    result = invoke("rerun", "import", str(again), "--database-url", committed_catalogue_url, env=env)
    assert result.exit_code == 0 and "already imported" in result.output
    assert _verified_runs(committed_catalogue_url) == 1


def test_rerun_import_refuses_a_bad_keys_file(tmp_path: Path, key, committed_catalogue_url) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text('{"keys": [{"keyId": "ed25519:00", "publicKey": "AAAA"}]}')
    bundle = tmp_path / "bundle.json"
    bundle.write_bytes(signed(make_payload(), key))
    result = invoke("rerun", "import", str(bundle), "--keys", str(keys), "--database-url", committed_catalogue_url)
    assert result.exit_code == 2 and "Keys refused" in result.output
