"""How figures are written: significant figures, one unit per column, ratios and digests."""

from __future__ import annotations

import pytest

from kernelindex.web.format import (
    improvement,
    latency,
    latency_column,
    latency_unit,
    ratio,
    short_digest,
    significant,
    source_figures,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0044, "0.00440"), (4.4, "4.40"), (44, "44.0"), (440, "440"), (9.996, "10.0"), (0.5123, "0.512"), (0, "0")],
)
def test_significant_keeps_three_figures_in_plain_notation(value, text):
    assert significant(value) == text


@pytest.mark.parametrize(
    ("ns", "text"),
    [(850, "850 ns"), (25_913, "25.9 µs"), (209_838, "210 µs"), (999_999, "1.00 ms"), (1_200_000, "1.20 ms")],
)
def test_a_latency_alone_takes_the_unit_that_suits_it(ns, text):
    assert latency(ns) == text


def test_a_column_of_latencies_shares_one_unit_chosen_by_its_median():
    assert latency_unit([4_400, 2_000_000, 1_500_000]) == "ms"
    assert latency_column([4_400, 2_000_000, None, 1_500_000]) == ["0.00440 ms", "2.00 ms", "–", "1.50 ms"]
    assert latency_column([4_400, 25_913, 209_838]) == ["4.40 µs", "25.9 µs", "210 µs"]


def test_a_source_figure_is_never_written_more_precisely_than_published():
    assert source_figures(0.0044) == 2 and source_figures(0.123456) == 3 and source_figures(1e-05) == 1
    assert latency_column([4_400.0, 5_000.0], [source_figures(0.0044), 3]) == ["4.4 µs", "5.00 µs"]


def test_every_ratio_has_three_significant_figures_and_a_gain_never_reads_as_none():
    assert [ratio(value) for value in (1.0, 1.0066, 12.34, 123.4, 0.5123)] == [
        "1.00×",
        "1.01×",
        "12.3×",
        "123×",
        "0.512×",
    ]
    assert improvement(1.0703) == "1.07× faster"
    assert improvement(1.003) == "0.3% faster"


@pytest.mark.parametrize(
    ("digest", "text"),
    [
        ("sha256:" + "ab" * 32, "sha256:abababababab…"),
        ("cd" * 32, "cdcdcdcdcdcd…"),
        ("ed25519:" + "0123456789abcdef", "ed25519:0123456789ab…"),
        ("sha256:abc", "sha256:abc"),
    ],
)
def test_a_digest_is_shortened_to_twelve_hex_characters_whatever_its_prefix(digest, text):
    assert short_digest(digest) == text
