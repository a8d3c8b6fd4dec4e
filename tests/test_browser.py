"""A reader's path through the registry in a real browser (Playwright driving Debian's Chromium).

home → search "conv2d" → its leaderboard → (via the origin model) a leaderboard with two
comparison groups → switch group → a run → its JSON → compare two runs.
Screenshots of every step go to a folder the test prints.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelindex.app import create_app
from kernelindex.settings import Settings
from tests.chromium import launched
from tests.servers import serving

PROJECT_ROOT = Path(__file__).resolve().parents[1]

# One worker runs the whole module, so that Chromium starts once for every test and backend.
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.fixture(scope="module")
def browser():
    with launched() as browser:
        yield browser


@pytest.fixture
def screenshots(request: pytest.FixtureRequest) -> Path:
    folder = PROJECT_ROOT / "test-artifacts" / "screenshots" / request.node.name.replace("/", "_")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots: {folder}")
    return folder


def test_reader_path_from_home_to_a_comparison(browser, committed_catalogue_url, screenshots):
    app = create_app(Settings(database_url=committed_catalogue_url))
    with serving(app) as base:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        errors: list[str] = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)

        page.goto(f"{base}/")
        assert page.title().startswith("KernelIndex")
        page.screenshot(path=screenshots / "1-home.png", full_page=True)

        page.fill("#site-search", "conv2d")
        page.press("#site-search", "Enter")
        page.wait_for_url("**/search?q=conv2d")
        page.screenshot(path=screenshots / "2-search.png", full_page=True)

        page.click('main a[href="/workloads/l1-040-conv2d-residual-block"]')
        page.wait_for_url("**/workloads/l1-040-conv2d-residual-block")
        assert page.locator("h1").inner_text() == "Conv2d residual block"
        # One row per implementation (Geometric's three submissions), every run a click away.
        assert page.locator("table.ranked tbody tr").count() == 1
        row_height = page.locator("table.ranked tbody tr").first.bounding_box()["height"]
        assert 32 <= row_height <= 36, row_height
        page.click('nav.run-modes a:has-text("All runs")')
        page.wait_for_url("**/workloads/l1-040-conv2d-residual-block?runs=all*")
        assert page.locator("table.ranked tbody tr").count() == 3
        page.screenshot(path=screenshots / "3-leaderboard-040.png", full_page=True)

        # No conv2d workload has two comparison groups in the bundled data; NAFNet's 039 does.
        page.click('#overview a[href="/models/nafnet"]')
        page.click('a[href="/workloads/l1-039-adaptive-instance-normalization-2d-backward"]')
        assert page.locator('nav.groups a[aria-current="page"]').inner_text().startswith("NVIDIA B200 · stack v1.1")
        page.click('nav.groups a:has-text("stack v1.0")')
        assert page.locator('nav.groups a[aria-current="page"]').inner_text().startswith("NVIDIA B200 · stack v1.0")
        first = page.locator("table.ranked tbody tr").first
        assert "ac4k" in first.inner_text() and "209.8 µs" in first.inner_text()
        page.screenshot(path=screenshots / "4-leaderboard-039-v1.0.png", full_page=True)

        first.locator('a:has-text("Run detail")').click()
        page.wait_for_url("**/runs/sol-submission-16893")
        assert "209.8 µs" in page.locator("#measurement").inner_text()
        page.screenshot(path=screenshots / "5-run.png", full_page=True)

        with page.expect_navigation():
            page.click('footer a:has-text("This page as JSON")')
        assert page.url.endswith("/runs/sol-submission-16893.json")
        data = json.loads(page.locator("body").inner_text())
        assert data["latencyNs"] == 209838 and data["name"] == "sol-submission-16893"

        page.goto(f"{base}/workloads/l1-039-adaptive-instance-normalization-2d-backward")
        boxes = page.locator('table.ranked input[type="checkbox"][name="run"]')
        boxes.nth(0).check()
        boxes.nth(1).check()
        page.click('button:has-text("Compare selected runs")')
        page.wait_for_url("**/compare?run=*")
        body = page.locator("main").inner_text()
        assert "sol-submission-30122" in body and "sol-submission-20275" in body
        page.screenshot(path=screenshots / "6-compare.png", full_page=True)

        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{base}/workloads/l1-039-adaptive-instance-normalization-2d-backward")
        page.screenshot(path=screenshots / "7-leaderboard-phone.png", full_page=True)
        page.emulate_media(color_scheme="dark")
        page.goto(f"{base}/runs/sol-submission-16893")
        page.screenshot(path=screenshots / "8-run-dark-phone.png", full_page=True)
        assert not [e for e in errors if "Content Security Policy" in e], errors


def test_search_suggestions_appear_as_you_type(browser, committed_catalogue_url, screenshots):
    app = create_app(Settings(database_url=committed_catalogue_url))
    with serving(app) as base:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{base}/")
        page.type("#site-search", "conv2d res", delay=30)
        suggestion = page.locator('ul.suggestions a[href="/workloads/l1-040-conv2d-residual-block"]')
        suggestion.wait_for(timeout=5000)
        page.screenshot(path=screenshots / "suggestions.png")
        suggestion.click()
        page.wait_for_url("**/workloads/l1-040-conv2d-residual-block")
        assert page.locator("h1").inner_text() == "Conv2d residual block"


def test_community_path_from_sign_up_to_a_withdrawal(browser, committed_catalogue_url, screenshots):
    from kernelindex.db.engine import make_engine, make_sessionmaker
    from kernelindex.store.accounts import create_user

    engine = make_engine(committed_catalogue_url)
    with make_sessionmaker(engine).begin() as session:
        create_user(session, "mod", "maintainer passphrase", maintainer=True)
    engine.dispose()
    run, board = "sol-submission-36270", "/workloads/l1-040-conv2d-residual-block"
    app = create_app(Settings(database_url=committed_catalogue_url))
    with serving(app) as base:
        reader = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
        reader.goto(f"{base}/signup")
        reader.fill("#f-handle", "reader1")
        reader.fill("#f-password", "a long enough password")
        reader.fill("#f-confirm", "a long enough password")
        reader.click('button:has-text("Create account")')
        reader.wait_for_url("**/account")
        reader.click('button:has-text("Sign out")')
        reader.goto(f"{base}/signin")
        reader.fill("#f-handle", "reader1")
        reader.fill("#f-password", "a long enough password")
        reader.click('main button:has-text("Sign in")')
        reader.wait_for_url("**/account")

        reader.goto(f"{base}/runs/{run}")
        reader.select_option("#f-type", "could_not_reproduce")
        reader.fill("#f-body", "Measured **2x slower** on my B200.")
        reader.select_option("#f-body_format", "markdown")
        reader.click('button:has-text("Add attestation")')
        reader.wait_for_url(f"**/runs/{run}#attestations")
        listed = reader.locator("#attestations article").first
        assert "Could not reproduce" in listed.inner_text() and "reader1" in listed.inner_text()
        assert listed.locator("strong", has_text="2x slower").count() == 1
        reader.screenshot(path=screenshots / "1-attested.png", full_page=True)

        reader.select_option("#f-reason", "reward_hack")
        reader.fill("#f-report_body", "Faster than any other run by a wide margin.")
        reader.click('button:has-text("Send report")')
        assert "in the maintainers' queue" in reader.locator("#report").inner_text()

        moderator = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
        moderator.goto(f"{base}/signin?next=/admin")
        moderator.fill("#f-handle", "mod")
        moderator.fill("#f-password", "maintainer passphrase")
        moderator.click('main button:has-text("Sign in")')
        moderator.wait_for_url("**/admin")
        assert run in moderator.locator("main").inner_text()
        moderator.screenshot(path=screenshots / "2-admin-queue.png", full_page=True)
        moderator.goto(f"{base}/admin?run={run}")
        withdraw = moderator.locator(f'form[action="/admin/runs/{run}/withdraw"]')
        withdraw.locator('input[name="reason"]').fill("Timing harness bypassed")
        with moderator.expect_navigation():
            withdraw.locator("button").click()
        assert run in moderator.locator("#withdrawn").inner_text(), moderator.locator("main").inner_text()[:2000]

        reader.goto(f"{base}/runs/{run}")
        banner = reader.locator(".banner").first.inner_text()
        assert "Withdrawn on" in banner and "Timing harness bypassed" in banner
        reader.screenshot(path=screenshots / "3-withdrawn-run.png", full_page=True)
        reader.goto(f"{base}{board}")
        first = reader.locator("table.ranked tbody tr").first.inner_text()
        assert "26.09 µs" in first  # sol-submission-36339 is #1 now
        assert "withdrawn by a maintainer" in reader.locator("table.ineligible").inner_text()
        reader.screenshot(path=screenshots / "4-leaderboard-after.png", full_page=True)
