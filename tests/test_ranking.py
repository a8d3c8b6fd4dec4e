"""Ranking rules of PRODUCT.md §5: comparison groups, eligibility, ranks, records, figures."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelindex.manifests import sha256_digest
from kernelindex.manifests.digest import comparison_key
from kernelindex.ranking import (
    FALLBACK_NOISE,
    RunFacts,
    VersionPoint,
    default_group,
    fastest_reported,
    geometric_mean,
    ineligibility_reasons,
    is_faster_than_bound,
    noise_estimate,
    noise_factor,
    rank_at_case,
    rank_group,
    rank_implementation_bests,
    rank_implementations,
    record_history,
    sorted_versions,
    version_key,
    version_regressions,
    worst_version_slowdown,
)

WORKLOAD = "sha256:b902ef8dd87d37e4d5583fc20ac0fce3b7dd9b9f00ca84d7bddb153303559449"
PROTOCOL_V1_0 = "sha256:2964c5c4ed9cb0dcdc0f74674035bc71bf5e66620939e38441060f76434ed3e5"
PROTOCOL_V1_1 = "sha256:" + "11" * 32
B200 = "sha256:5296c820e166474e590abb1beaf7728cdfe0a4bde9bf55f8966a40f4f5401621"
H100 = "sha256:" + "ab" * 32

KEY_B200 = comparison_key(WORKLOAD, PROTOCOL_V1_0, B200)
KEY_H100 = comparison_key(WORKLOAD, PROTOCOL_V1_0, H100)
KEY_V1_1 = comparison_key(WORKLOAD, PROTOCOL_V1_1, B200)

T0 = datetime(2026, 7, 1, tzinfo=UTC)


def run(name: str, latency_ns: int, day: int = 0, key: str = KEY_B200, **flags: Any) -> RunFacts:
    return RunFacts(
        name=name,
        comparison_key=key,
        latency_ns=latency_ns,
        observed_at=T0 + timedelta(days=day),
        **flags,
    )


def table(ranked: list[Any]) -> list[tuple[str, int]]:
    return [(item.run.name, item.rank) for item in ranked]


# --- rank_group ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("latencies", "expected"),
    [
        pytest.param({"a": 100}, [("a", 1)], id="single"),
        pytest.param({"a": 300, "b": 100, "c": 200}, [("b", 1), ("c", 2), ("a", 3)], id="ascending"),
        pytest.param({"a": 100, "b": 100, "c": 200}, [("a", 1), ("b", 1), ("c", 3)], id="tie-for-first"),
        pytest.param(
            {"a": 100, "b": 200, "c": 200, "d": 300},
            [("a", 1), ("b", 2), ("c", 2), ("d", 4)],
            id="tie-in-middle",
        ),
        pytest.param({"a": 100, "b": 200, "c": 200}, [("a", 1), ("b", 2), ("c", 2)], id="tie-for-last"),
        pytest.param({"c": 5, "a": 5, "b": 5}, [("a", 1), ("b", 1), ("c", 1)], id="all-equal"),
        pytest.param(
            {"a": 1, "b": 1, "c": 2, "d": 2, "e": 3},
            [("a", 1), ("b", 1), ("c", 3), ("d", 3), ("e", 5)],
            id="two-ties",
        ),
    ],
)
def test_rank_group_ranks_ascending_with_shared_ranks(
    latencies: dict[str, int], expected: list[tuple[str, int]]
) -> None:
    runs = [run(name, latency) for name, latency in latencies.items()]
    assert table(rank_group(runs)) == expected
    # The rank says how many runs are strictly faster.
    for item in rank_group(runs):
        assert item.rank == 1 + sum(other.latency_ns < item.run.latency_ns for other in runs)


def test_rank_group_order_does_not_depend_on_input_order() -> None:
    runs = [run("b", 200), run("c", 100), run("a", 200), run("d", 150)]
    expected = table(rank_group(runs))
    assert expected == [("c", 1), ("d", 2), ("a", 3), ("b", 3)]
    assert table(rank_group(reversed(runs))) == expected
    assert table(rank_group(sorted(runs, key=lambda r: r.name))) == expected


@pytest.mark.parametrize(
    ("latencies", "expected_vs_best"),
    [
        pytest.param([100], [1.0], id="single"),
        pytest.param([200, 100, 250], [1.0, 2.0, 2.5], id="ratios"),
        pytest.param([209838, 209838, 419676], [1.0, 1.0, 2.0], id="tie-for-first"),
        pytest.param([3, 4], [1.0, 4 / 3], id="non-terminating"),
    ],
)
def test_rank_group_vs_best_is_latency_over_best(latencies: list[int], expected_vs_best: list[float]) -> None:
    runs = [run(f"r{i}", latency) for i, latency in enumerate(latencies)]
    ranked = rank_group(runs)
    assert [item.vs_best for item in ranked] == pytest.approx(expected_vs_best)
    assert ranked[0].vs_best == 1.0
    assert ranked[0].rank == 1


def test_rank_group_of_nothing_is_empty() -> None:
    assert rank_group([]) == []


def test_rank_group_accepts_a_generator() -> None:
    ranked = rank_group(run(name, latency) for name, latency in [("a", 2), ("b", 1)])
    assert table(ranked) == [("b", 1), ("a", 2)]


# --- eligibility --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        pytest.param({}, [], id="eligible"),
        pytest.param({"status": "failed"}, ["did not pass correctness (status failed)"], id="failed"),
        pytest.param({"status": "error"}, ["did not pass correctness (status error)"], id="error"),
        pytest.param({"withdrawn": True}, ["withdrawn by a maintainer"], id="withdrawn"),
        pytest.param({"upstream_withdrawn": True}, ["disqualified by the source"], id="upstream-withdrawn"),
        pytest.param(
            {"held_for_review": True},
            ["held for review: faster than the suite's speed-of-light bound"],
            id="held-for-review",
        ),
        pytest.param(
            {"status": "failed", "withdrawn": True},
            ["did not pass correctness (status failed)", "withdrawn by a maintainer"],
            id="failed-and-withdrawn",
        ),
        pytest.param(
            {"status": "error", "withdrawn": True, "upstream_withdrawn": True, "held_for_review": True},
            [
                "did not pass correctness (status error)",
                "withdrawn by a maintainer",
                "disqualified by the source",
                "held for review: faster than the suite's speed-of-light bound",
            ],
            id="everything",
        ),
    ],
)
def test_ineligibility_reasons_lists_every_reason(flags: dict[str, Any], expected: list[str]) -> None:
    assert ineligibility_reasons(run("a", 100, **flags)) == expected


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param({"status": "failed"}, id="failed"),
        pytest.param({"status": "error"}, id="error"),
        pytest.param({"withdrawn": True}, id="withdrawn"),
        pytest.param({"upstream_withdrawn": True}, id="upstream-withdrawn"),
        pytest.param({"held_for_review": True}, id="held-for-review"),
    ],
)
def test_rank_group_excludes_ineligible_runs(flags: dict[str, Any]) -> None:
    runs = [run("fast-but-ineligible", 50, **flags), run("b", 200), run("a", 100)]
    ranked = rank_group(runs)
    assert table(ranked) == [("a", 1), ("b", 2)]
    # vs #1 is measured against the best *eligible* run.
    assert [item.vs_best for item in ranked] == [1.0, 2.0]


def test_rank_group_of_only_ineligible_runs_is_empty() -> None:
    runs = [run("a", 1, status="failed"), run("b", 2, withdrawn=True), run("c", 3, held_for_review=True)]
    assert rank_group(runs) == []


# --- comparison groups ----------------------------------------------------------------


@pytest.mark.parametrize("other_key", [KEY_H100, KEY_V1_1], ids=["other-gpu", "other-stack-version"])
def test_rank_group_refuses_runs_of_two_comparison_groups(other_key: str) -> None:
    runs = [run("a", 100), run("b", 200, key=other_key)]
    with pytest.raises(ValueError):
        rank_group(runs)


# --- record_history ---------------------------------------------------------------------

# Each run: (name, latency_ns, day observed, flags). Expected: [(name, improvement)].
RECORD_CASES = [
    pytest.param(
        [("a", 300, 0, {}), ("b", 200, 1, {}), ("c", 250, 2, {}), ("d", 100, 3, {})],
        [("a", None), ("b", 1.5), ("d", 2.0)],
        id="improvements",
    ),
    pytest.param(
        [("d", 100, 3, {}), ("c", 250, 2, {}), ("a", 300, 0, {}), ("b", 200, 1, {})],
        [("a", None), ("b", 1.5), ("d", 2.0)],
        id="given-out-of-order",
    ),
    pytest.param(
        [("a", 200, 0, {}), ("b", 200, 1, {})],
        [("a", None)],
        id="equal-latency-is-no-record",
    ),
    pytest.param(
        [("a", 100, 0, {}), ("b", 200, 1, {}), ("c", 150, 2, {})],
        [("a", None)],
        id="slower-later-runs",
    ),
    pytest.param(
        [("a", 200, 0, {}), ("b", 100, 1, {"withdrawn": True}), ("c", 150, 2, {})],
        [("a", None), ("c", 200 / 150)],
        id="faster-but-withdrawn",
    ),
    pytest.param(
        [("a", 200, 0, {}), ("b", 50, 1, {"status": "failed"}), ("c", 60, 2, {"held_for_review": True})],
        [("a", None)],
        id="faster-but-failed-or-held",
    ),
    pytest.param(
        [("a", 100, 0, {"upstream_withdrawn": True}), ("b", 200, 1, {})],
        [("b", None)],
        id="first-record-after-ineligible",
    ),
    pytest.param(
        [("a", 1000, 0, {}), ("b", 500, 1, {}), ("c", 250, 2, {}), ("d", 125, 3, {})],
        [("a", None), ("b", 2.0), ("c", 2.0), ("d", 2.0)],
        id="every-run-a-record",
    ),
    pytest.param([], [], id="empty"),
    pytest.param([("a", 1, 0, {"status": "failed"})], [], id="only-ineligible"),
]


@pytest.mark.parametrize(("runs", "expected"), RECORD_CASES)
def test_record_history_keeps_strictly_faster_eligible_runs(
    runs: list[tuple[str, int, int, dict[str, Any]]], expected: list[tuple[str, float | None]]
) -> None:
    facts = [run(name, latency, day, **flags) for name, latency, day, flags in runs]
    history = record_history(facts)
    assert [record.run.name for record in history] == [name for name, _ in expected]
    for record, (_, improvement) in zip(history, expected, strict=True):
        if improvement is None:
            assert record.improvement is None
        else:
            assert record.improvement == pytest.approx(improvement)


def test_record_history_links_each_record_to_the_one_it_broke() -> None:
    facts = [run("a", 300, 0), run("b", 200, 1), run("c", 100, 2)]
    history = record_history(facts)
    assert [record.previous for record in history] == [None, history[0].run, history[1].run]
    assert [record.run.observed_at for record in history] == sorted(r.observed_at for r in facts)
    # The last record is the current #1.
    assert history[-1].run == rank_group(facts)[0].run


def test_record_history_same_instant_keeps_the_faster_run() -> None:
    facts = [run("slow", 200, 0), run("fast", 100, 0)]
    assert [record.run.name for record in record_history(facts)] == ["fast"]


def test_record_history_refuses_several_groups() -> None:
    with pytest.raises(ValueError):
        record_history([run("a", 100), run("b", 50, key=KEY_H100)])


# --- comparison_key -----------------------------------------------------------------------


def test_comparison_key_is_deterministic() -> None:
    # Pinned: the key of the seed group must not change between processes or releases.
    seed_key = "sha256:8de78733143e68308a297708c873c549f37b2453c682051b1bc782b551897628"
    assert comparison_key(WORKLOAD, PROTOCOL_V1_0, B200) == seed_key
    assert len({KEY_B200, KEY_H100, KEY_V1_1}) == 3


@pytest.mark.parametrize(
    "digests",
    [
        pytest.param((WORKLOAD, PROTOCOL_V1_0, B200), id="seed"),
        pytest.param(("sha256:" + "0" * 64,) * 3, id="zeros"),
    ],
)
def test_comparison_key_is_a_sha256_digest_of_the_three_digests(digests: tuple[str, str, str]) -> None:
    key = comparison_key(*digests)
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", key)
    workload, protocol, environment = digests
    assert key == sha256_digest(
        {"workloadDigest": workload, "protocolDigest": protocol, "environmentDigest": environment}
    )


OTHER = "sha256:" + "f" * 64


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param((OTHER, PROTOCOL_V1_0, B200), id="workload"),
        pytest.param((WORKLOAD, OTHER, B200), id="protocol"),
        pytest.param((WORKLOAD, PROTOCOL_V1_0, OTHER), id="environment"),
        pytest.param((PROTOCOL_V1_0, WORKLOAD, B200), id="workload-and-protocol-swapped"),
        pytest.param((WORKLOAD, B200, PROTOCOL_V1_0), id="protocol-and-environment-swapped"),
    ],
)
def test_comparison_key_differs_when_any_digest_differs(changed: tuple[str, str, str]) -> None:
    assert comparison_key(*changed) != KEY_B200


def test_comparison_key_separates_gpus_and_stack_versions() -> None:
    assert len({KEY_B200, KEY_H100, KEY_V1_1}) == 3


# --- figures ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1, 100], 10.0),
        ([2, 8], 4.0),
        ([5], 5.0),
        ([3, 3, 3], 3.0),
        ([1, 10, 100], 10.0),
        ([0.5, 2], 1.0),
        ([0.805502, 0.805502], 0.805502),
        ([1e-300, 1e300], 1.0),  # no overflow or underflow of a running product
        ([4.049] * 235, 4.049),
    ],
)
def test_geometric_mean_of_known_values(values: list[float], expected: float) -> None:
    assert geometric_mean(values) == pytest.approx(expected, rel=1e-12)


def test_geometric_mean_is_at_most_the_arithmetic_mean() -> None:
    values = [0.2, 0.9, 1.7, 3.3]
    assert geometric_mean(values) < sum(values) / len(values)
    assert math.isclose(geometric_mean(values), math.prod(values) ** (1 / len(values)))


@pytest.mark.parametrize(
    "values",
    [[], [0], [1, 0], [-1], [2, -8], [0.0, 0.0]],
    ids=["empty", "zero", "contains-zero", "negative", "contains-negative", "zeros"],
)
def test_geometric_mean_rejects_empty_and_non_positive(values: list[float]) -> None:
    with pytest.raises(ValueError):
        geometric_mean(values)


@pytest.mark.parametrize(
    ("latency_ns", "bound_ms", "expected"),
    [
        (999_999, 1.0, True),
        (1_000_000, 1.0, False),
        (1_000_001, 1.0, False),
        (1, 1.0, True),
        (209_838, 0.209838, False),  # exactly at the bound is not faster
        (209_837, 0.209838, True),
        (209_839, 0.209838, False),
        (150_000, 0.2, True),
        (250_000, 0.2, False),
        (10**12, 2e6, True),
        (999_999, None, False),
        (1, None, False),
    ],
)
def test_is_faster_than_bound_compares_ns_against_ms(latency_ns: int, bound_ms: float | None, expected: bool) -> None:
    assert is_faster_than_bound(latency_ns, bound_ms) is expected


@pytest.mark.parametrize(
    ("latency_ns", "bound_ms"),
    [(1_002, 0.001002), (246, 0.000246), (8_388_604, 8.388604)],
)
def test_is_faster_than_bound_latency_equal_to_bound_is_not_faster(latency_ns: int, bound_ms: float) -> None:
    assert is_faster_than_bound(latency_ns, bound_ms) is False


# --- the leaderboard's headline, default group and best per implementation ----------


def test_the_headline_is_the_fastest_eligible_run_over_every_group():
    runs = [
        run("b200", 200, key=KEY_B200),
        run("h100-withdrawn", 50, key=KEY_H100, withdrawn=True),
        run("h100", 150, key=KEY_H100),
        run("v1.1-tie-b", 150, key=KEY_V1_1),
    ]
    assert fastest_reported(runs).name == "h100"  # 150 ns twice: the name breaks the tie
    assert fastest_reported([run("held", 10, held_for_review=True)]) is None
    assert fastest_reported([]) is None


def test_a_leaderboard_opens_on_the_group_of_its_headline():
    runs = [run(f"b200-{i}", 300 + i, key=KEY_B200) for i in range(5)] + [run("h100", 100, key=KEY_H100)]
    assert default_group(runs) == KEY_H100  # one run, but the fastest: the headline's group wins
    # Nothing eligible: the group with the most runs, then the newest.
    ineligible = [run("a", 1, key=KEY_B200, status="failed"), run("b", 1, 3, key=KEY_H100, status="failed")]
    assert default_group(ineligible) == KEY_H100
    assert default_group([*ineligible, run("c", 1, key=KEY_B200, status="failed")]) == KEY_B200
    assert default_group([]) is None


def test_implementation_bests_keep_each_projects_fastest_run_and_count_its_ranked_runs():
    ranked = rank_group(
        [
            run("triton-1", 120, implementation="triton"),
            run("eager-1", 400, implementation="eager"),
            run("triton-2", 100, implementation="triton"),
            run("eager-2", 410, implementation="eager"),
            run("compile", 390, implementation="compile"),
            run("triton-failed", 50, implementation="triton", status="failed"),
        ]
    )
    lines = rank_implementations(ranked)
    assert [(entry.run.name, entry.rank, runs) for entry, runs in lines] == [
        ("triton-2", 1, 2),
        ("compile", 2, 1),
        ("eager-1", 3, 2),
    ]


def test_implementation_bests_from_each_revisions_best_rank_as_from_every_run():
    """A database gives each revision's fastest run and its count: the lines are those of every run."""
    runs = [
        run("triton-a-1", 120, implementation="triton"),
        run("triton-a-2", 130, implementation="triton"),
        run("triton-b-1", 100, implementation="triton"),
        run("eager-1", 400, implementation="eager"),
        run("eager-2", 400, implementation="eager"),
    ]
    revision_bests = [(runs[0], 2), (runs[2], 1), (runs[3], 2)]
    assert rank_implementation_bests(revision_bests) == rank_implementations(rank_group(runs))


def test_implementations_are_ranked_among_themselves_and_equal_bests_share_a_rank():
    ranked = rank_group(
        [
            run("triton-1", 120, implementation="triton"),
            run("triton-2", 100, implementation="triton"),
            run("cuda", 100, implementation="cuda"),
            run("eager-1", 400, implementation="eager"),
            run("eager-2", 410, implementation="eager"),
        ]
    )
    lines = rank_implementations(ranked)
    assert [(entry.run.name, entry.rank, entry.vs_best, runs) for entry, runs in lines] == [
        ("cuda", 1, 1.0, 1),
        ("triton-2", 1, 1.0, 2),
        ("eager-1", 3, 4.0, 2),
    ]
    assert rank_implementations([]) == []


# --- versions, cases and regressions -------------------------------------------------------


def test_versions_order_as_releases_do():
    shuffled = ["1.3.0", "0.5.16", "1.3.0rc20", "0.5.10", "0.5.6.post2", "1.3.0rc10", "0.5.6"]
    assert sorted_versions(shuffled) == ["0.5.6", "0.5.6.post2", "0.5.10", "0.5.16", "1.3.0rc10", "1.3.0rc20", "1.3.0"]


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("0.5.6.post2", "0.5.10"),
        ("0.5.10", "0.5.16"),
        ("1.3.0rc10", "1.3.0rc20"),
        ("1.3.0rc20", "1.3.0"),
        ("1.3.0.dev1", "1.3.0a1"),
        ("0.9.9", "v0.10.0"),
        ("0.20.0", "0.20.1.dev3+g20dc1ca"),
    ],
)
def test_version_key_says_which_is_newer(older, newer):
    older_key, newer_key = version_key(older), version_key(newer)
    assert older_key is not None and newer_key is not None and older_key < newer_key


def test_a_version_not_written_as_a_release_cannot_be_ordered():
    assert version_key("main") is None and version_key("1.2.3-some branch") is None
    assert version_key("1.3") == version_key("1.3.0")
    assert sorted_versions(["main", "0.2", "0.10"]) == ["0.2", "0.10", "main"]


def test_a_case_ranks_the_runs_that_measured_it_and_lists_the_others():
    runs = [run("a", 100), run("b", 50), run("c", 70), run("d", 10, withdrawn=True)]
    ranking = rank_at_case(runs, {"a": 30, "b": 60, "d": 5})
    assert [(entry.run.name, entry.rank, entry.run.latency_ns) for entry in ranking.ranked] == [
        ("a", 1, 30),
        ("b", 2, 60),
    ]
    assert ranking.ranked[1].vs_best == 2.0
    assert [facts.name for facts in ranking.not_measured] == ["c"]  # d is not eligible


def point(version: str, latency_ns: int) -> VersionPoint:
    return VersionPoint(run=f"run-{version}", version=version, latency_ns=latency_ns)


def test_a_version_is_a_regression_against_the_fastest_older_one_beyond_the_noise():
    points = [point("0.20.0", 100), point("0.22.0", 90), point("0.24.0", 117), point("0.23.0", 93), point("main", 500)]
    found = version_regressions(points, noise=0.05)
    assert [(r.newer.version, r.older.version, round(r.slowdown, 3)) for r in found] == [("0.24.0", "0.22.0", 0.3)]


def test_a_slowdown_within_the_noise_or_a_speed_up_is_no_regression():
    assert version_regressions([point("1.0", 100), point("1.1", 105)], noise=0.05) == []
    assert version_regressions([point("1.0", 100), point("1.1", 80)], noise=0.05) == []
    assert [r.newer.version for r in version_regressions([point("1.0", 100), point("1.1", 106)], 0.05)] == ["1.1"]


@settings(max_examples=300, deadline=None)
@given(
    points=st.lists(
        st.tuples(st.sampled_from(["0.9", "1.0", "1.0.post1", "1.1rc1", "1.1", "2.0", "main"]), st.integers(1, 400)),
        max_size=8,
    ),
    noise=st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.333]),
)
def test_the_worst_slowdown_says_exactly_whether_there_is_a_regression(points, noise):
    # The refresh reads a workload a second time only where its worst slowdown beats the bound.
    version_points = [VersionPoint(run=f"run-{i}", version=v, latency_ns=ns) for i, (v, ns) in enumerate(points)]
    worst = worst_version_slowdown(version_points)
    found = version_regressions(version_points, noise)
    assert bool(found) == (worst is not None and worst > noise_factor(noise))
    if found:
        assert max(r.newer.latency_ns / r.older.latency_ns for r in found) == pytest.approx(float(worst))


def test_the_noise_is_a_high_percentile_of_the_deviations_or_a_stated_bound():
    deviations = [index / 1000 for index in range(100)]  # 0.000 … 0.099
    estimate = noise_estimate(deviations)
    assert estimate.estimated and estimate.pairs == 100 and estimate.bound == 0.094
    few = noise_estimate([0.5] * 29)
    assert not few.estimated and few.bound == FALLBACK_NOISE and few.pairs == 29
