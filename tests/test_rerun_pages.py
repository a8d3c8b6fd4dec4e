"""Controlled reruns in the browser's view: the H200 group on the leaderboard with its badges,
the run page's per-case table, chart, signature and source, the protocol page, the signed
bundle and the measured source, and the bounds beside the source's T_SOL."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest
import rfc8785
from bs4 import BeautifulSoup
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from fastapi.testclient import TestClient

from kernelindex.ingest.reruns import read_bundle
from kernelindex.ingest.reruns.importer import import_bundle
from kernelindex.rerun.implementations import REGISTRY
from kernelindex.verify import verify_document
from tests.rerun_bundles import ADAIN, approved, make_payload, operator, signed

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def reruns(loaded_db):
    """Two independent agreeing reruns of the Triton kernel (two operators), one of eager, and one
    held for review."""
    first, second = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    keys = approved(first, second)
    by = [operator("lab-a"), operator("lab-b"), operator("lab-a"), operator("lab-a")]
    bundles = [
        signed(make_payload(base_ns=120_000), first),
        signed(make_payload(base_ns=121_000, gpu_uuid="GPU-bbbb", session_id="b" * 32), second),
        signed(make_payload(implementation="kernelindex-039-eager", base_ns=400_000, session_id="c" * 32), first),
        signed(make_payload(implementation="kernelindex-039-compile", base_ns=20_000, session_id="d" * 32), first),
    ]
    names = []
    for data, who in zip(bundles, by, strict=True):
        with loaded_db.sessions.begin() as session:
            names.append(import_bundle(session, read_bundle(data, keys), NOW, who).run_name)
    return names, bundles


def html(client: TestClient, path: str) -> BeautifulSoup:
    response = client.get(path)
    assert response.status_code == 200, response.text
    return BeautifulSoup(response.text, "html.parser")


def test_the_leaderboard_gains_an_h200_group_with_evidence_badges(client, reruns) -> None:
    names, _ = reruns
    page = html(client, f"/workloads/{ADAIN}")
    records = page.select_one("#records").get_text(" ", strip=True)
    assert "NVIDIA H200" in records and "KernelIndex rerun protocol v1" in records
    assert "Not measured on NVIDIA H200" not in records
    assert "each is a comparison group of its own, listed side by side and never ranked" in records
    twin = client.get(f"/workloads/{ADAIN}.json").json()
    h200 = next(group for group in twin["groups"] if "H200" in group["label"])
    board = client.get(
        f"/workloads/{ADAIN}.json", params={"group": h200["key"].removeprefix("sha256:")[:16], "runs": "all"}
    ).json()
    ranked = {row["name"]: row for row in board["ranked"]}
    assert [ranked[name]["evidence"] for name in names[:3]] == ["replicated", "replicated", "verified"]
    assert ranked[names[0]]["rank"] == 1 and ranked[names[2]]["rank"] == 3
    held = {row["name"]: row for row in board["ineligible"]}
    assert "faster than" in " ".join(held[names[3]]["reasons"])
    shown = html(client, f"/workloads/{ADAIN}?group={h200['key'].removeprefix('sha256:')[:16]}")
    assert "Controlled rerun comparison" in shown.select_one("#leaderboard").get_text()
    headers = [th.get_text(" ", strip=True) for th in shown.select("table.ranked thead th")]
    # The share names its bound; no source score column where no run has one.
    assert "% of SOL bound (datasheet)" in headers and "SOL score" not in headers
    assert not any(header in {"% SOL", "% of SOL", "% of speed of light"} for header in headers)
    share = client.get(f"/runs/{names[0]}.json").json()["rerun"]["percentOfSolBound"]
    row_share = ranked[names[0]]["shareOfBound"]
    assert row_share["bound"] == "datasheet" and ranked[names[0]]["solScore"] is None
    # The ranked table takes the exact share, the run page the share of the rounded bound: within a point.
    assert abs(row_share["percent"] - float(share.removesuffix(" %"))) <= 1
    badges = [badge.get_text(strip=True) for badge in shown.select("#leaderboard .badge")]
    assert "Independently replicated" in badges and "KernelIndex verified" in badges


def test_the_cases_table_shows_the_h200_bound_beside_t_sol(client, reruns) -> None:
    page = html(client, f"/workloads/{ADAIN}")
    table = page.select_one("table.cases")
    headers = [th.get_text(strip=True) for th in table.select("thead th")]
    assert headers[-3:] == ["TSOL", "NVIDIA H200 speed of light", "NVIDIA H200 achievable"]
    first = [td.get_text(strip=True) for td in table.select("tbody tr")[0].select("td")]
    # Case 0: 8 x 32 x 480 x 640 float32; 12 bytes an element must move, at the H200's datasheet
    # 4.8 TB/s (the speed of light) and at the test's measured 4.2 TB/s (achievable).
    assert first[-2:] == ["196.6 µs", "224.7 µs"]
    data = client.get(f"/workloads/{ADAIN}.json").json()
    case = data["cases"][0]
    assert (case["rerunSolBoundNs"], case["rerunAchievableBoundNs"]) == (196_609, 224_695)
    sources = page.select_one("#sources").get_text(" ", strip=True)
    assert "KernelIndex controlled reruns" in sources


def test_the_run_page_shows_cases_chart_signature_and_source(client, reruns) -> None:
    names, bundles = reruns
    page = html(client, f"/runs/{names[0]}")
    section = page.select_one("#rerun")
    rows = section.select("table tbody tr")
    assert len(rows) == 16
    cells = [td.get_text(strip=True) for td in rows[0].select("td")]
    # Case 0: samples 120,000 + 7 i + trial ns (median 120,172.5); 943,720,832 bytes at the H200's datasheet
    # 4.8 TB/s (speed of light) and at the test copy rate of 4.2 TB/s (achievable).
    case = client.get(f"/runs/{names[0]}.json").json()["rerun"]["cases"][0]
    assert case["medianNs"] == 120_172 and case["solBoundNs"] == 196_609 and case["achievableBoundNs"] == 224_695
    assert cells[0] == "0" and cells[2] == "120.2 µs"
    assert cells[5:9] == ["196.6 µs", "163.6 %", "224.7 µs", "187.0 %"]
    headers = [th.get_text(strip=True) for th in section.select("table thead th")]
    assert headers[5:9] == ["speed of light", "% of SOL bound (datasheet)", "achievable", "% of measured ceilings"]
    # Every latency of the per-case table in one unit.
    units = {
        word
        for row in rows
        for td in row.select("td")[2:5]
        for word in td.get_text(" ").split()
        if word in {"ns", "µs", "ms", "s"}
    }
    assert units == {"µs"}
    assert len(section.select("svg .box")) == 16 and len(section.select("svg .bound")) == 16
    assert len(section.select("svg .achievable")) == 16
    signature = json.loads(bundles[0])["signature"]
    text = section.get_text(" ", strip=True)
    assert signature["keyId"] in text and signature["value"] in text
    assert "lab-a , as a maintainer approved for this key" in text
    assert page.select_one("#measurement .badge").get_text(strip=True) == "Independently replicated"
    assert "16/16 cases passed" in page.select_one("#correctness").get_text()
    links = {a["href"] for a in page.select("#artifacts a, #rerun a")}
    assert "/reruns/sources/kernelindex-039-triton.py" in links and "/protocols/kernelindex-rerun-v1" in links
    held = html(client, f"/runs/{names[3]}").select_one(".banner").get_text()
    assert "below its speed-of-light bound on this GPU" in held


def test_the_run_page_reads_in_words_and_draws_each_case_against_its_bound(client, reruns) -> None:
    names, bundles = reruns
    page = html(client, f"/runs/{names[0]}")
    assert page.select_one("h1").get_text(strip=True) == (
        "kernelindex-039-triton (Triton) · Adaptive instance normalization 2d backward · NVIDIA H200"
    )
    assert page.select_one(".hero-figure").get_text(" ", strip=True).endswith("geometric mean of case medians")
    measurements = page.select_one("#measurements")
    facts = {
        dt.find(string=True, recursive=False).strip(): (dt.select_one(".native"), dt.find_next_sibling("dd"))
        for dt in measurements.select("dl.facts dt")
    }
    native, value = facts["Runner key"]
    assert native.get_text(strip=True) == "runner_key_id"
    assert value.get_text(strip=True) == json.loads(bundles[0])["signature"]["keyId"]  # no JSON quotes
    assert facts["% of SOL bound (datasheet)"][0].get_text(strip=True) == "percent_of_sol_bound"
    assert facts["% of measured ceilings"][0].get_text(strip=True) == "percent_of_achievable_bound"
    svg = measurements.select_one("figure.chart.cases svg")
    assert svg["role"] == "img" and svg.select_one("title").get_text() == "% of SOL bound (datasheet) per case"
    assert len(svg.select("rect.bar")) == 16
    rows = measurements.select("table.cases-table tbody tr")
    shares = [row.select_one("td").get_text(strip=True) for row in rows]
    # Case 0's speed of light of 196.6 µs against its median of 120.2 µs, as the rerun table says.
    assert len(rows) == 16 and shares[0] == "163.6 %"
    assert shares == [text.get_text() for text in svg.select("text.value")]
    assert page.select_one("p.dates").get_text(" ", strip=True).startswith("Measured 2026-")
    upstream = page.select_one("p.dates a.upstream")
    assert upstream["href"] == client.get(f"/runs/{names[0]}.json").json()["rerun"]["bundleUrl"]


def test_the_signed_bundle_is_served_as_imported_and_verifies_without_kernelindex(client, reruns) -> None:
    names, bundles = reruns
    run = client.get(f"/runs/{names[0]}.json").json()
    response = client.get(f"/reruns/bundles/{run['rerun']['bundleId']}.json")
    assert response.status_code == 200 and response.content == bundles[0]
    assert "immutable" in response.headers["cache-control"]
    document = response.json()
    public = Ed25519PublicKey.from_public_bytes(base64.b64decode(document["signature"]["publicKey"]))
    public.verify(base64.b64decode(document["signature"]["value"]), rfc8785.dumps(document["payload"]))
    assert hashlib.sha256(response.content).hexdigest() == run["rerun"]["bundleSha256"]
    assert client.get("/reruns/bundles/" + "0" * 32 + ".json").status_code == 404
    assert client.get("/reruns/bundles/nope.json").status_code == 404


def test_case_manifests_are_served_by_digest_and_verify(client, reruns) -> None:
    names, _ = reruns
    run = client.get(f"/runs/{names[0]}.json").json()
    case = run["rerun"]["cases"][5]
    manifest = client.get(case["manifestUrl"] + ".json").json()
    assert manifest["spec"]["caseIndex"] == 5
    assert all(check.ok for check in verify_document(manifest, expected_digest=case["manifestUrl"].split("/")[-1]))
    page = html(client, case["manifestUrl"])
    assert page.find("a", string="the record")["href"] == f"/runs/{names[0]}#rerun"


def test_the_protocol_page_states_every_rule(client, reruns) -> None:
    page = html(client, "/protocols/kernelindex-rerun-v1")
    rules = page.select_one("#rules").get_text(" ", strip=True)
    for words in ("CUDA events", "10 warm-up", "50 timed iterations", "3 trials", "flushed", "float64", "0.001",
                  "99.9%", "geometric mean", "speed of light", "datasheet", "achievable", "Ed25519",
                  "within 5%", "within 10%", "Reproduced by KernelIndex", "different operator",
                  "refuses the whole bundle"):  # fmt: skip
        assert words in rules, words
    assert client.get("/protocols/kernelindex-rerun-v1.json").json()["runCount"] == 4
    assert client.get("/protocols/sol-execbench-leaderboard-v1-1").status_code == 200
    assert client.get("/protocols/nothing").status_code == 404


def test_the_v2_protocol_page_states_every_rule_before_any_bundle_uses_it(client) -> None:
    page = html(client, "/protocols/kernelindex-rerun-v2")
    assert page.find("h1").get_text(strip=True) == "KernelIndex rerun protocol v2"
    rules = page.select_one("#rules").get_text(" ", strip=True)
    for words in ("blocking kernel", "pinned host memory", "releasing the GPU", "1,000,000 polls", "cuda_graph_replay",
                  "10 warm-up calls under exactly these conditions", "last timed call of every trial", "bootstrap",
                  "1000 resamples", "noise gate", "10%", "torch.manual_seed(20261202)", "default device", "0.01",
                  "nvidia-smi", "Ed25519", "within 5%"):  # fmt: skip
        assert words in rules, words
    twin = client.get("/protocols/kernelindex-rerun-v2.json").json()
    assert twin["runCount"] == 0 and twin["manifest"]["spec"]["harness"]["version"] == "2"
    assert twin["digest"] != client.get("/protocols/kernelindex-rerun-v1.json").json()["digest"]
    assert client.get("/protocols/kernelindex-rerun-v3").status_code == 404


def test_the_measured_source_is_served_with_its_digest(client) -> None:
    response = client.get("/reruns/sources/kernelindex-040-triton.py")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    assert response.headers["x-source-sha256"] == REGISTRY["kernelindex-040-triton"].source_sha256()
    assert hashlib.sha256(response.content).hexdigest() == response.headers["x-source-sha256"]
    assert client.get("/reruns/sources/..%2Fsettings.py").status_code == 404
    assert client.get("/reruns/sources/nothing.py").status_code == 404


def test_the_implementation_page_lists_rerun_revisions_as_revisions(client, reruns) -> None:
    data = client.get("/implementations/kernelindex-triton.json").json()
    groups = data["revisionsBySource"]
    assert [group["unit"] for group in groups] == ["revision"]
    labels = [r["revision"] for r in groups[0]["revisions"]]
    assert labels and all(label.startswith("rerun-") and "+sha256." in label for label in labels)
    # The two agreeing reruns measured one revision of the source: one label, not two.
    assert sum(r["runs"] for r in groups[0]["revisions"]) == data["runCount"] >= 2
    assert len(labels) < data["runCount"]
    section = html(client, "/implementations/kernelindex-triton").select_one("#revisions")
    assert section.select_one("h2").get_text() == "Revisions"
    text = section.get_text(" ", strip=True)
    assert "submission" not in text.lower() and f"{len(labels)} revision" in text
    assert [code.get_text() for code in section.select("li code")] == labels


def test_the_matrix_holds_one_line_per_implementation_across_its_revisions(client, reruns) -> None:
    # ac4k's submissions 16893 (stack v1.0) and 20275 (stack v1.1) are two revisions of one implementation.
    lines = client.get(f"/workloads/{ADAIN}.json").json()["crossGpu"]["implementations"]
    titles = [line["implementationTitle"] for line in lines]
    assert titles.count("ac4k") == 1 and len(titles) == len(set(titles))
    ac4k = next(line for line in lines if line["implementationTitle"] == "ac4k")
    assert ac4k["bestByGpu"]["b200"]["run"] == "sol-submission-20275"


def test_a_v1_group_is_labelled_superseded_once_the_workload_has_v2_reruns(client, loaded_db) -> None:
    key = Ed25519PrivateKey.generate()
    for version, session_id in ((1, "e" * 32), (2, "f" * 32)):
        data = signed(make_payload(version=version, session_id=session_id), key)
        with loaded_db.sessions.begin() as session:
            import_bundle(session, read_bundle(data, approved(key)), NOW, operator("lab-a"))
    twin = client.get(f"/workloads/{ADAIN}.json").json()
    superseded = {group["protocol"]: group["supersededBy"] for group in twin["groups"] if "H200" in group["label"]}
    assert superseded == {
        "KernelIndex rerun protocol v1": "KernelIndex rerun protocol v2",
        "KernelIndex rerun protocol v2": None,
    }
    records = html(client, f"/workloads/{ADAIN}").select_one("#records").get_text(" ", strip=True)
    assert "KernelIndex rerun protocol v1 · superseded by KernelIndex rerun protocol v2" in records


# --- Credit: a rerun is the registry's run, not the workload's source's ------------------------


def test_the_gpu_pages_credit_the_reruns_to_the_registry_not_to_the_workloads_source(client, reruns) -> None:
    names, _ = reruns
    gpu = client.get("/gpus/h200.json").json()["gpu"]
    assert [(p["source"], p["runs"]) for p in gpu["byProducer"]] == [("kernelindex-reruns", len(names))]
    assert gpu["runs"] == len(names)
    # The workload measured is SOL-ExecBench's: its coverage says so, with no run credited to it.
    sol = next(c for c in gpu["bySource"] if c["source"] == "sol-execbench")
    assert sol["workloads"] == 1 and "runs" not in sol
    page = html(client, "/gpus/h200")
    producers = page.select_one("ul.by-producer").get_text(" ", strip=True)
    assert producers.startswith(f"KernelIndex controlled reruns {len(names)} runs")
    assert "SOL-ExecBench" not in producers and "gpu_type" not in producers  # nor SOL's naming of GPUs
    listing = html(client, "/gpus").select_one("table.gpu-coverage").get_text(" ", strip=True)
    assert f"KernelIndex controlled reruns {len(names)} runs" in listing
    api = client.get("/api/v1/gpus/h200").json()
    assert [(p["source"], p["runs"]) for p in api["byProducer"]] == [("kernelindex-reruns", len(names))]


def test_the_reruns_list_their_workloads_and_filter_a_gpu_page_by_producer(client, reruns) -> None:
    listed = client.get("/workloads.json?source=kernelindex-reruns").json()
    assert [w["slug"] for w in listed["workloads"]] == [ADAIN]
    assert [w["slug"] for w in client.get("/api/v1/workloads?source=kernelindex-reruns").json()["items"]] == [ADAIN]
    sources = client.get("/sources.json").json()["sources"]
    linked = next(s for s in sources if s["slug"] == "kernelindex-reruns")["workloadsUrl"]
    assert [w["slug"] for w in client.get(linked.replace("/workloads", "/workloads.json", 1)).json()["workloads"]] == [
        ADAIN
    ]
    by_reruns = client.get("/gpus/h200.json?source=kernelindex-reruns").json()
    assert [(t["label"], t["count"]) for t in by_reruns["tabs"]] == [("Measured", 1), ("Not measured", 0)]
    # SOL-ExecBench published no H200 figure: filtered by it, nothing was measured there.
    by_sol = client.get("/gpus/h200.json?source=sol-execbench").json()
    assert by_sol["tabs"][0]["count"] == 0 and by_sol["tabs"][1]["count"] > 0


def test_a_search_naming_the_h200_opens_the_workload_on_its_h200_group(client, reruns) -> None:
    data = client.get("/search.json?q=adaptive+instance+normalization+backward+h200").json()
    first = data["groups"][0]["hits"][0]
    assert first["slug"] == ADAIN and "?group=" in first["url"]
    opened = client.get(first["url"].replace(ADAIN, ADAIN + ".json", 1)).json()
    assert opened["selectedGroup"]["gpu"] == "NVIDIA H200"


def test_a_case_whose_blocking_figure_exceeds_graph_replay_is_flagged(client, loaded_db) -> None:
    """A bundle measured with --graph-check: case 0's replay is a third faster (the host set part of
    its figure), case 1's agrees, case 2's graph could not be captured; a bundle without the check
    shows no such section."""
    key = Ed25519PrivateKey.generate()
    payload = make_payload(version=2, session_id="e" * 32)
    for index, case in enumerate(payload["cases"][:3]):
        median = case["timing"]["medianNs"]
        replay: dict[str, Any] = {"method": "cuda_graph_replay", "passedNoiseGate": True, "timedCallsCorrect": True}
        if index == 2:
            replay = {"method": "cuda_graph_replay", "error": "RuntimeError: operation not permitted when capturing"}
        else:
            replay["samplesNs"] = [[median * 2 // 3 if index == 0 else median] * 50 for _ in range(3)]
        case["measurement"]["graphReplay"] = replay
    with loaded_db.sessions.begin() as session:
        name = import_bundle(session, read_bundle(signed(payload, key), approved(key)), NOW, operator("lab-a")).run_name

    rows = html(client, f"/runs/{name}").select("tr.flagged")
    assert len(rows) == 1 and "50% above graph replay (bound 10%)" in rows[0].get_text()
    checks = client.get(f"/runs/{name}.json").json()["rerun"]["graphChecks"]
    assert [(c["index"], c["state"], c["flagged"]) for c in checks] == [
        (0, "host-bound", True),
        (1, "agrees", False),
        (2, "not-captured", False),
    ]
    assert checks[0]["ratio"] == pytest.approx(1.5, rel=1e-3) and checks[0]["bound"] == 0.1

    plain = make_payload(version=2, session_id="f" * 32, gpu_uuid="GPU-cccc")
    with loaded_db.sessions.begin() as session:
        other = import_bundle(session, read_bundle(signed(plain, key), approved(key)), NOW, operator("lab-a")).run_name
    assert client.get(f"/runs/{other}.json").json()["rerun"]["graphChecks"] == []
    assert "graph replay" not in html(client, f"/runs/{other}").get_text()
