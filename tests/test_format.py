"""How figures are written: significant figures, one unit per column, ratios and digests."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelindex.figures import (
    DATASHEET,
    FIGURES,
    MEASURED_CEILINGS,
    SOL_EXECBENCH,
    figures_markdown,
    latency,
    latency_column,
    latency_unit,
    percent,
    ratio,
    share,
    share_label,
    share_of_bound,
    significant,
    sol_score,
    source_figures,
    source_score,
)
from kernelindex.web.format import improvement, short_digest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0044, "0.00440"), (4.4, "4.40"), (44, "44.0"), (440, "440"), (9.996, "10.0"), (0.5123, "0.512"), (0, "0")],
)
def test_significant_keeps_three_figures_in_plain_notation(value, text):
    assert significant(value) == text


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (850, "850 ns"),
        (25_913, "25.91 µs"),
        (209_838, "209.8 µs"),
        (2_760_000, "2.760 ms"),
        (999_999, "1.000 ms"),
        (1_200_000, "1.200 ms"),
        (3_600_000_000, "3.600 s"),
    ],
)
def test_a_latency_alone_has_four_significant_figures_in_the_unit_that_suits_it(ns, text):
    assert latency(ns) == text


def test_a_latency_is_never_written_finer_than_a_nanosecond():
    assert latency(7) == "7 ns" and latency(999) == "999 ns"
    assert latency_column([7, 12]).texts == ["7 ns", "12 ns"]


def test_a_column_of_latencies_shares_one_unit_chosen_from_its_values():
    assert latency_unit([4_400, 2_000_000, 1_500_000]) == "ms"
    column = latency_column([4_400, 2_000_000, None, 1_500_000])
    assert column.unit == "ms"
    assert column.texts == ["0.004400 ms", "2.000 ms", "–", "1.500 ms"]
    assert column.numbers == ["0.004400", "2.000", "–", "1.500"]
    # The page that read "2760 µs", "2.76 ms" and "0.726 ms": one unit for all three.
    assert latency_column([2_760_000, 2_760_000, 726_000]).texts == ["2.760 ms", "2.760 ms", "0.7260 ms"]
    assert latency_column([4_400, 25_913, 209_838]).texts == ["4.400 µs", "25.91 µs", "209.8 µs"]
    assert {text.split()[1] for text in latency_column([850, 25_913, 2_760_000, 9e9]).texts} == {"ms"}


def test_a_column_may_be_given_the_unit_of_the_longer_column_it_is_a_page_of():
    assert latency_column([209_838], unit="ms").texts == ["0.2098 ms"]


def test_a_source_figure_is_never_written_more_precisely_than_published():
    assert source_figures(0.0044) == 2 and source_figures(0.123456) == 4 and source_figures(1e-05) == 1
    assert latency_column([4_400.0, 5_000.0], [source_figures(0.0044), 4]).texts == ["4.4 µs", "5.000 µs"]


@pytest.mark.parametrize(
    ("value", "text"),
    [(87.4, "87.4 %"), (4.46, "4.5 %"), (1.0, "1.0 %"), (0.54, "0.5 %"), (0.05, "0.05 %"), (0.0071, "0.007 %")],
)
def test_a_share_below_one_percent_is_written_as_such_never_as_zero(value, text):
    assert percent(value) == text
    assert percent(value) != "0 %"


def test_a_share_needs_a_known_bound_and_names_it():
    assert share_of_bound(1_160, 25_913) == pytest.approx(4.4765, rel=1e-4)
    assert share_of_bound(None, 25_913) is None and share_of_bound(0, 25_913) is None
    assert share_of_bound(1_160, 0) is None
    found = share(1_160, 25_913, SOL_EXECBENCH)
    assert found is not None and found.text == "4.5 %"
    assert found.label == "% of SOL bound (SOL-ExecBench T_SOL)"
    assert share_label(DATASHEET) == "% of SOL bound (datasheet)"
    assert share_label(MEASURED_CEILINGS) == "% of measured ceilings"
    assert share(None, 25_913, DATASHEET) is None


def test_a_source_score_keeps_its_own_name_and_is_no_percentage():
    assert sol_score(0.874123) == "SOL score 0.874"
    assert sol_score(None) is None
    assert source_score(0.805502) == "0.806"
    assert "%" not in (sol_score(0.874) or "")


def test_every_figure_kind_is_defined_with_a_label_unit_and_type_and_documented():
    assert [kind.label for kind in FIGURES] == [
        "Latency",
        "SOL score",
        "% of SOL bound",
        "× reference",
        "vs #1",
        "cases faster",
        "Interval",
        "Rank",
    ]
    assert all(kind.number_type in {"integer", "number"} and kind.definition for kind in FIGURES)
    assert len({kind.anchor for kind in FIGURES}) == len(FIGURES)


def test_docs_figures_md_is_the_text_the_code_defines():
    # docs/FIGURES.md is what figures_markdown() writes; rewrite it with that function when a figure changes.
    assert (REPO / "docs" / "FIGURES.md").read_text(encoding="utf-8") == figures_markdown()
    for kind in FIGURES:
        assert f'<a id="{kind.anchor}"></a>' in figures_markdown()


def test_every_ratio_has_three_significant_figures_and_a_gain_never_reads_as_none():
    assert [ratio(value) for value in (1.0, 1.0066, 12.34, 123.4, 0.5123)] == [
        "1.00×",
        "1.01×",
        "12.3×",
        "123×",
        "0.512×",
    ]
    assert improvement(1.0703) == "1.07× faster"
    assert improvement(1.003) == "0.3 % faster"


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
