"""Every figure says what it is: a source's score under its own name, a share only of a named, known
bound, latencies to four figures in one unit per column, and the page that defines them all."""

from __future__ import annotations

import math
import re

from bs4 import BeautifulSoup

from kernelindex import figures

L040 = "l1-040-conv2d-residual-block"
RUN_16893 = "sol-submission-16893"


def html(client, path: str) -> BeautifulSoup:  # type: ignore[no-untyped-def]
    response = client.get(path)
    assert response.status_code == 200, response.text
    return BeautifulSoup(response.text, "html.parser")


def text(node) -> str:  # type: ignore[no-untyped-def]
    return " ".join(node.get_text(" ", strip=True).split())


def no_share_without_a_bound(words: str) -> bool:
    """No "of SOL" but "of SOL bound (…)", which names its bound; never "– of" anything."""
    return not re.search(r"of SOL(?! bound \()", words) and "– of" not in words


def test_the_040_page_shows_geometrics_sol_score_under_its_own_name(client):
    page = html(client, f"/workloads/{L040}")
    hero = text(page.select_one("#fastest .hero-figure"))
    assert hero == "25.91 µs mean · SOL score 0.874 · 4.5 % of SOL bound (SOL-ExecBench T_SOL)"
    assert page.select_one("#fastest .hero-figure a")["href"] == "/figures#sol-score"
    assert "Geometric" in text(page.select_one("#fastest"))
    assert no_share_without_a_bound(text(page.select_one("main")))
    headings = [text(th) for th in page.select("table.ranked thead th")]
    assert headings[3:6] == ["Latency", "SOL score", "% of SOL bound (SOL-ExecBench T_SOL)"]
    assert "% SOL" not in headings and "% of SOL" not in headings
    row = [text(td) for td in page.select_one("table.ranked tbody tr").select("td")]
    assert row[2:7] == ["Geometric best of 3", "25.91 µs mean", "0.874", "4.5 %", "1.00×"]
    sorts = [text(option) for option in page.select("select[name=sort] option")]
    assert "Highest SOL score" in sorts and not any("% of SOL" in label for label in sorts)


def test_the_040_json_twin_gives_the_score_as_a_number_and_the_share_with_its_bound(client):
    data = client.get(f"/workloads/{L040}.json").json()
    fastest = data["fastest"]
    assert fastest["solScoreFigure"] == "SOL score 0.874"
    assert fastest["solScore"] == 0.873692 and isinstance(fastest["solScore"], float)
    assert "percentOfSol" not in fastest
    share = fastest["shareOfBound"]
    assert share["bound"] == "sol-execbench" and share["label"] == "% of SOL bound (SOL-ExecBench T_SOL)"
    # T_SOL is the geometric mean of the page's own per-case bounds; the share is it over the latency.
    bounds = [case["solLatencyMs"] for case in data["cases"]]
    t_sol_ns = 1e6 * math.prod(bounds) ** (1 / len(bounds))
    assert share["percent"] == round(100 * t_sol_ns / fastest["latencyNs"], 4)
    assert (data["scoreHeading"], data["shareHeading"]) == ("SOL score", "% of SOL bound (SOL-ExecBench T_SOL)")


def test_sol_score_is_a_number_in_the_run_json_the_leaderboard_json_and_the_api(client):
    run = client.get(f"/runs/{RUN_16893}.json").json()
    api = client.get(f"/api/v1/runs/{RUN_16893}").json()
    board = client.get(f"/workloads/{L040}.json?runs=all").json()
    values = [run["solScore"], api["solScore"], board["fastest"]["solScore"]]
    values += [row["solScore"] for row in board["ranked"]]
    assert all(type(value) is float for value in values), values
    assert run["solScore"] == api["solScore"] == 0.805502
    assert run["solScoreFigure"] == "SOL score 0.806"


def test_run_16893_shows_209_8_microseconds(client):
    page = html(client, f"/runs/{RUN_16893}")
    assert text(page.select_one(".hero-figure")).startswith("209.8 µs ")
    assert client.get(f"/runs/{RUN_16893}.json").json()["latency"] == "209.8 µs"
    assert "210 µs" not in text(page.select_one("main"))


def test_a_table_of_latencies_shares_one_unit(client):
    page = html(client, f"/workloads/{L040}?runs=all")
    units = {text(td).split()[1] for td in page.select("table.ranked tbody td:nth-of-type(4)")}
    assert units == {"µs"}
    cases = [[text(td) for td in tr.select("td")] for tr in page.select("table.cases tbody tr")]
    for column in (-2, -1):
        assert len({row[column].split(" ")[-1] for row in cases}) == 1


def test_home_and_the_workload_list_head_the_score_with_its_own_name(client):
    for path in ("/", "/workloads"):
        page = html(client, path)
        headings = [text(th) for th in page.select("thead th")]
        assert any(heading.endswith("SOL score") for heading in headings), (path, headings)
        assert not any("% SOL" in heading or "% of SOL" in heading for heading in headings), (path, headings)
        scores = [
            text(td)
            for td in page.select("tbody td.num")
            if re.fullmatch(r"0\.\d{3}", text(td)) or text(td).endswith("%")
        ]
        assert scores and not any(score.endswith("%") for score in scores), path


def test_the_figures_page_defines_every_kind_and_the_footer_links_it(client):
    page = html(client, "/figures")
    for kind in figures.FIGURES:
        section = page.select_one(f"section#{kind.anchor}")
        assert section is not None and kind.label in text(section.select_one("h2"))
        assert kind.definition in text(section)
        assert section.select_one(f'a[href="{kind.example}"]')
    assert client.get("/figures.json").json()["kinds"][1]["label"] == "SOL score"
    for path in ("/", f"/workloads/{L040}", f"/runs/{RUN_16893}"):
        footer = html(client, path).select_one("footer")
        assert footer.select_one('a[href="/figures"]'), path


def test_every_example_on_the_figures_page_is_a_page_of_the_bundled_data(client):
    for kind in figures.FIGURES:
        if kind.example.startswith("/runs/rerun-"):
            continue  # the bundled reruns are imported on a first start; this store holds the snapshot
        assert client.get(kind.example).status_code == 200, kind.example


def test_compare_heads_the_score_with_its_own_name_in_the_page_json_and_csv(client):
    names = ["sol-submission-36339", "sol-submission-36270"]
    query = "&".join(f"run={name}" for name in names)
    page = html(client, f"/compare?{query}")
    labels = [text(th).removesuffix(" differs") for th in page.select("table tbody th")]
    assert "SOL score" in labels and "% of SOL" not in labels
    data = client.get(f"/compare.json?{query}").json()["comparison"]
    fields = {field["key"]: field for field in data["fields"]}
    assert fields["solScore"]["display"] == ["0.873", "0.874"]
    assert fields["shareOfBound"]["display"] == ["4.4 % (SOL-ExecBench T_SOL)", "4.5 % (SOL-ExecBench T_SOL)"]
    csv_text = client.get(f"/compare.csv?{query}").text
    assert "solScore,SOL score,0.873128,0.873692" in csv_text
