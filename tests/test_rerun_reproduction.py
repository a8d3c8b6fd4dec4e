"""Reproduction means another physical GPU: a rerun that agrees on the same GPU (another lease or key)
is only "repeated on the same GPU" and leaves both "KernelIndex verified"; one on another GPU reproduces
them. The run page and its JSON twin name the runs (``reproducedBy``, ``repeatedOnSameGpu``)."""

from __future__ import annotations

from datetime import UTC, datetime

from bs4 import BeautifulSoup
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import select

from kernelindex.db.tables import Run
from kernelindex.ingest.reruns import read_bundle
from kernelindex.ingest.reruns.importer import import_bundle
from tests.rerun_bundles import approved, make_payload, operator, signed

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def test_the_same_gpu_again_repeats_and_another_gpu_reproduces(loaded_db, client) -> None:
    first, second = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    keys = approved(first, second)
    lab = operator("lab-a")
    names = []

    def add(data: bytes) -> None:
        with loaded_db.sessions.begin() as session:
            names.append(import_bundle(session, read_bundle(data, keys), NOW, lab).run_name)

    add(signed(make_payload(version=2, base_ns=120_000, session_id="a" * 32), first))
    # The same GPU (GPU-aaaa) under another key, in another lease: a repetition.
    add(signed(make_payload(version=2, base_ns=120_500, session_id="b" * 32), second))
    with loaded_db.sessions() as session:
        evidence = {r.name: r.evidence for r in session.scalars(select(Run).where(Run.name.in_(names)))}
    assert set(evidence.values()) == {"verified"}
    twin = client.get(f"/runs/{names[0]}.json").json()
    assert twin["reproducedBy"] == [] and twin["repeatedOnSameGpu"] == [names[1]]
    page = BeautifulSoup(client.get(f"/runs/{names[0]}").text, "html.parser")
    assert "Repeated on the same GPU" in page.select_one("#repeated").get_text() and not page.select("#reproduced-by")

    # Another GPU (GPU-bbbb) of the same operator: all three reproduce each other.
    add(signed(make_payload(version=2, base_ns=121_000, gpu_uuid="GPU-bbbb", session_id="c" * 32), first))
    with loaded_db.sessions() as session:
        evidence = {r.name: r.evidence for r in session.scalars(select(Run).where(Run.name.in_(names)))}
    assert set(evidence.values()) == {"reproduced"}
    twin = client.get(f"/runs/{names[0]}.json").json()
    assert twin["reproducedBy"] == [names[2]] and twin["repeatedOnSameGpu"] == [names[1]]
    assert sorted(client.get(f"/runs/{names[2]}.json").json()["reproducedBy"]) == sorted(names[:2])
    page = BeautifulSoup(client.get(f"/runs/{names[0]}").text, "html.parser")
    assert page.select_one(f'#reproduced-by a[href="/runs/{names[2]}"]') is not None
    # A reported run has no reruns to agree with.
    with loaded_db.sessions() as session:
        reported = session.scalar(select(Run.name).where(Run.evidence == "reported").limit(1))
    assert client.get(f"/runs/{reported}.json").json()["reproducedBy"] == []


def test_importing_again_relabels_runs_stored_under_an_older_rule(loaded_db, tmp_path) -> None:
    from kernelindex.ingest.reruns.importer import import_bundle_files
    from tests.rerun_bundles import approved_keys

    key = Ed25519PrivateKey.generate()
    files = []
    for session_id in ("a", "b"):  # one GPU, two leases
        path = tmp_path / f"{session_id}.json"
        path.write_bytes(signed(make_payload(version=2, session_id=session_id * 32), key))
        files.append(path)
    keys = approved_keys(**{"lab-a": (key,)})
    assert all(r.error is None for r in import_bundle_files(loaded_db.sessions, files, keys))
    with loaded_db.sessions.begin() as session:
        runs = session.scalars(select(Run).where(Run.evidence == "verified", Run.name.like("rerun-%"))).all()
        assert len(runs) == 2
        for run in runs:
            run.evidence = "reproduced"  # as the rule before read two leases of one GPU
    again = import_bundle_files(loaded_db.sessions, files, keys)
    assert all(r.outcome is not None and r.outcome.already_imported for r in again)
    with loaded_db.sessions() as session:
        names = [r.outcome.run_name for r in again if r.outcome is not None]
        assert set(session.scalars(select(Run.evidence).where(Run.name.in_(names))).all()) == {"verified"}
