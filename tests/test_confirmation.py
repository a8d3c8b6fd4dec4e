"""Confirming reported KernelBench figures by reruns on the same program, mode and GPU model: the rules
(ranking), the store's answer, the run page and its JSON twin's ``confirmation``, and ``/discrepancies``.

The reruns are real H100 bundles (level 2 problem 1, a convolution, strict v2, lease 8) and H200 bundles
(level 1 problem 19, ReLU), re-timed and re-signed with a test key: figures scaled so that the test says
what each should be against KernelBench's published H100 figures (4.35 ms and 4.28 ms eager, 4.35 ms compiled).
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient
from sqlalchemy import select

from kernelindex.db.tables import Run
from kernelindex.ingest.reruns import read_bundle
from kernelindex.ingest.reruns.importer import import_bundle
from kernelindex.ingest.sources import ingest
from kernelindex.paths import BUNDLED_RERUNS
from kernelindex.ranking import CONFIRMED, CONTRADICTED, confirmation_bound, confirmation_state, settings_neutral
from kernelindex.rerun import protocol_faithful, protocol_v2, stats
from kernelindex.rerun.payload import suite_record
from kernelindex.settings import Settings
from kernelindex.store.confirmation import confirmation_of_run, contradicted_figures, spread_bound
from tests.conftest import StoreUnderTest
from tests.kernelbench_slice import make_slice
from tests.rerun_bundles import approved, signed

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
CONV = "kernelbench-l2-1-conv2d-relu-biasadd-45ee3a3d"
RELU = "kernelbench-l1-19-relu-cbbfc940"
H100_SETUP = "kernelbench-h100-modal"


def test_the_rules() -> None:
    assert settings_neutral("return torch.relu(x)") and not settings_neutral("self.conv = nn.Conv2d(3, 8, 3)")
    assert not settings_neutral("nn.ConvTranspose3d") and not settings_neutral("self.rnn = nn.LSTM(8, 8)")
    assert not settings_neutral("x = nn.GRU(4, 4)") and settings_neutral("nn.GroupNorm(2, 4)")
    assert confirmation_bound([0.01, 0.0568], 0.1) == pytest.approx(0.1136)
    assert confirmation_bound([], 0.1) == 0.1
    assert confirmation_state(105, 100, 0.1) == (CONFIRMED, 1.05)
    assert confirmation_state(100, 111, 0.1)[0] == CONTRADICTED
    assert confirmation_state(100, 109, 0.1)[0] == CONFIRMED  # symmetric: the larger over the smaller
    with pytest.raises(ValueError):
        confirmation_state(0, 1, 0.1)


def _payload(slug: str, mode: str, gpu: str) -> dict[str, Any]:
    for path in sorted((BUNDLED_RERUNS / "bundles").glob(f"{slug}--{mode}--*.json")):
        payload: dict[str, Any] = json.loads(path.read_bytes())["payload"]
        if gpu in payload["environment"]["gpu"]["name"]:
            return payload
    raise AssertionError(f"no shipped {gpu} bundle of {slug} {mode}")


def _h100_environment() -> tuple[dict[str, Any], dict[str, Any]]:
    h100 = _payload(CONV, "pytorch-eager", "H100")
    return h100["environment"], h100["ceilings"]


def _retimed(
    payload: dict[str, Any], median_ns: int, session: str, *, faithful: bool = False, h100: bool = True
) -> dict[str, Any]:
    """The payload with every sample scaled so that its median is about ``median_ns``, as another session."""
    result = copy.deepcopy(payload)
    if h100:
        result["environment"], result["ceilings"] = _h100_environment()
    case = result["cases"][0]
    scale = median_ns / case["timing"]["medianNs"]
    samples = [[round(s * scale) for s in trial] for trial in case["timing"]["samplesNs"]]
    timing = stats.summarize_case(samples)
    pooled = [s for trial in samples for s in trial]
    timing["medianIntervalNs"] = list(
        stats.bootstrap_median_interval(
            pooled,
            resamples=protocol_v2.BOOTSTRAP_RESAMPLES,
            confidence=protocol_v2.BOOTSTRAP_CONFIDENCE,
            seed=protocol_v2.SEED + case["index"],
        )
    )
    timing["medianIntervalConfidence"] = protocol_v2.BOOTSTRAP_CONFIDENCE
    case["timing"] = timing
    result["suite"] = suite_record(result["cases"], 1)
    result["sessionId"] = session * 32
    result["bundleId"] = (session + "0") * 16
    if faithful:
        result["protocol"] = protocol_faithful.protocol_spec()
        result["bundleId"] = (session + "f") * 16
        case["measurement"]["settings"] = dict(protocol_faithful.SETTINGS)
    return result


@pytest.fixture
def kernelbench_db(db: StoreUnderTest, tmp_path: Path) -> StoreUnderTest:
    settings = Settings(database_url=db.url, github_token=None)
    summary = ingest(db.sessions, settings, "kernelbench", snapshot=make_slice(tmp_path), sleep=lambda _: None)
    assert summary.status == "succeeded", summary.errors
    return db


def _import(store: StoreUnderTest, *payloads: dict[str, Any]) -> list[str]:
    key = Ed25519PrivateKey.generate()
    names = []
    for payload in payloads:
        with store.sessions.begin() as session:
            names.append(import_bundle(session, read_bundle(signed(payload, key), approved(key)), NOW).run_name)
    return names


def _reported(store: StoreUnderTest, slug: str, mode: str) -> Run:
    with store.sessions() as session:
        run = session.scalars(
            select(Run).where(Run.name.like(f"kernelbench-h100-modal-{mode}-%")).join(Run.workload)
        ).all()
        found = [r for r in run if r.workload.name == slug]
        assert len(found) == 1, [r.name for r in run]
        return found[0]


def _confirmation(store: StoreUnderTest, run_name: str) -> Any:
    with store.sessions() as session:
        run = session.scalar(select(Run).where(Run.name == run_name))
        assert run is not None
        return confirmation_of_run(session, run)


def test_a_strict_rerun_of_a_convolution_does_not_check_the_source(kernelbench_db: StoreUnderTest) -> None:
    reported = _reported(kernelbench_db, CONV, "pytorch-eager")
    assert _confirmation(kernelbench_db, reported.name).state == "unchecked"
    _import(kernelbench_db, _payload(CONV, "pytorch-eager", "H100"))  # strict v2, 9.46 ms: TF32 off
    found = _confirmation(kernelbench_db, reported.name)
    assert found.state == "unchecked" and found.by_runs == () and found.ratio is None
    assert "TF32" in found.reason and "training mode" in found.reason

    faithful = _import(kernelbench_db, _retimed(_payload(CONV, "pytorch-eager", "H100"), 4_400_000, "b", faithful=True))
    found = _confirmation(kernelbench_db, reported.name)
    assert (found.state, found.by_runs, found.checked_under) == (
        "confirmed",
        tuple(faithful),
        "kernelindex-rerun-kernelbench-faithful-v1",
    )
    assert found.ratio == pytest.approx(4_350_000 / found.rerun_ns) and found.bound == protocol_v2.NOISE_BOUND
    with kernelbench_db.sessions() as session:  # a rerun has no confirmation of its own
        rerun = session.scalar(select(Run).where(Run.name == faithful[0]))
        assert rerun is not None and confirmation_of_run(session, rerun) is None


def test_strict_reruns_check_a_program_without_convolutions_and_contradictions_are_listed(
    kernelbench_db: StoreUnderTest, client_for: Any
) -> None:
    eager, compiled = (
        _reported(kernelbench_db, RELU, "pytorch-eager"),
        _reported(kernelbench_db, RELU, "torch-compile-inductor-default"),
    )
    relu_eager = _payload(RELU, "pytorch-eager", "H200")
    relu_compiled = _payload(RELU, "torch-compile-inductor-default", "H200")
    # Two sessions of eager 2 % apart: the bound becomes twice that.
    names = _import(
        kernelbench_db,
        _retimed(relu_eager, 4_300_000, "c"),
        _retimed(relu_eager, 4_386_000, "d"),
        _retimed(relu_compiled, 2_000_000, "e"),
    )
    with kernelbench_db.sessions() as session:
        bound = spread_bound(session)
    assert bound.pairs == 1 and bound.bound == pytest.approx(2 * (4_386_000 / 4_300_000 - 1), rel=1e-3)
    confirmed = _confirmation(kernelbench_db, eager.name)
    assert confirmed.state == "confirmed" and set(confirmed.by_runs) == set(names[:2])
    assert confirmed.checked_under == "kernelindex-rerun-v2" and "do not differ" in confirmed.reason
    contradicted = _confirmation(kernelbench_db, compiled.name)
    assert contradicted.state == "contradicted" and contradicted.ratio == pytest.approx(4.35 / 2.0, rel=1e-3)

    with kernelbench_db.sessions() as session:
        listed, agreeing, _ = contradicted_figures(session)
    assert [c.run_name for c in listed] == [compiled.name] and [c.run_name for c in agreeing] == [eager.name]

    client = client_for(kernelbench_db)
    run_json = client.get(f"/runs/{compiled.name}.json").json()["confirmation"]
    assert run_json["state"] == "contradicted" and run_json["byRuns"] == [names[2]]
    assert run_json["ratio"] == pytest.approx(2.175, rel=1e-3) and run_json["bound"] == pytest.approx(bound.bound)
    page = BeautifulSoup(client.get(f"/runs/{compiled.name}").text, "html.parser")
    section = page.select_one("#confirmation").get_text(" ", strip=True)
    assert "contradicted" in section and "4.350 ms" in section and "twice the largest spread" in section
    assert page.select_one(f'#confirmation a[href="/runs/{names[2]}"]') is not None
    twin = client.get("/discrepancies.json").json()
    assert twin["contradictedCount"] == 1 and twin["confirmedCount"] == 1
    assert [row["run"] for row in twin["rows"]] == [compiled.name] and twin["rows"][0]["byRuns"][0]["name"] == names[2]
    listing = BeautifulSoup(client.get("/discrepancies").text, "html.parser")
    assert listing.find("a", href=f"/runs/{compiled.name}") is not None
    rerun_json = client.get(f"/runs/{names[0]}.json")
    assert rerun_json.status_code == 200, rerun_json.text[:300]
    assert rerun_json.json()["confirmation"] is None  # a rerun

    # The leaderboard marks both reported figures where they are ranked, and no other row.
    groups = client.get(f"/workloads/{RELU}.json").json()["groups"]
    reported_group = next(g for g in groups if not g["controlledRerun"] and "H100" in g["label"])
    key = reported_group["key"].removeprefix("sha256:")[:16]
    rows = client.get(f"/workloads/{RELU}.json", params={"group": key, "runs": "all"}).json()["ranked"]
    marks = {row["name"]: row["confirmation"] for row in rows}
    assert marks[eager.name] == "confirmed" and marks[compiled.name] == "contradicted"
    assert {state for name, state in marks.items() if name not in {eager.name, compiled.name}} <= {None, "unchecked"}
    shown = BeautifulSoup(client.get(f"/workloads/{RELU}?group={key}&runs=all").text, "html.parser")
    badges = [b.get_text() for b in shown.select("table.ranked .badge.confirmation-confirmed")]
    assert badges == ["Confirmed by rerun"] and len(shown.select("table.ranked .confirmation-contradicted")) == 1


def test_the_largest_departure_comes_first(kernelbench_db: StoreUnderTest) -> None:
    _import(
        kernelbench_db,
        _retimed(_payload(RELU, "pytorch-eager", "H200"), 3_000_000, "a"),
        _retimed(_payload(RELU, "torch-compile-inductor-default", "H200"), 9_000_000, "b"),
    )
    with kernelbench_db.sessions() as session:
        listed, _, bound = contradicted_figures(session)
    assert bound.largest_spread is None and "noise gate" in bound.rule
    assert [c.mode for c in listed] == ["torch-compile-inductor-default", "pytorch-eager"]
    assert listed[0].departure > listed[1].departure


@pytest.fixture
def client_for(make_app: Any) -> Any:
    clients: list[TestClient] = []

    def make(store: StoreUnderTest) -> TestClient:
        client = TestClient(make_app(store))
        clients.append(client.__enter__())
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)
