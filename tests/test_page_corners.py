"""Corners a reader trips on, checked in a real browser: one search box on a phone, the
error page in the layout, account forms styled like the site's other forms."""

from __future__ import annotations

import pytest

from kernelindex.app import create_app
from kernelindex.settings import Settings
from tests.servers import serving
from tests.test_browser import browser  # noqa: F401  (the fixture)

pytestmark = pytest.mark.browser


@pytest.fixture
def site(committed_catalogue_url):  # type: ignore[no-untyped-def]
    with serving(create_app(Settings(database_url=committed_catalogue_url))) as base:
        yield base


def visible_search_boxes(page) -> int:  # type: ignore[no-untyped-def]
    return sum(box.is_visible() for box in page.locator('input[type="search"]').all())


@pytest.mark.parametrize("path", ["/", "/search?q=conv2d"])
def test_a_phone_shows_one_search_box_on_a_page_with_its_own(browser, site, path):  # noqa: F811
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(f"{site}{path}")
    assert visible_search_boxes(page) == 1
    assert not page.locator("#site-search").is_visible()  # the page's own box, with its label, stays
    page.set_viewport_size({"width": 1400, "height": 900})
    assert page.locator("#site-search").is_visible()


def test_a_phone_keeps_the_header_search_where_the_page_has_none(browser, site):  # noqa: F811
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(f"{site}/gpus")
    assert visible_search_boxes(page) == 1 and page.locator("#site-search").is_visible()


@pytest.mark.parametrize("width", [390, 1400])
def test_the_not_found_page_is_left_aligned_like_every_page(browser, site, width):  # noqa: F811
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(f"{site}/workloads")
    expected = page.locator("main h1").bounding_box()
    response = page.goto(f"{site}/workloads/no-such-workload")
    assert response is not None and response.status == 404
    heading = page.locator("main h1").bounding_box()
    assert expected and heading and heading["x"] == expected["x"]


STYLE = (
    "e => { const s = getComputedStyle(e);"
    " return [s.borderTopStyle, s.borderTopColor, s.backgroundColor, s.borderRadius, s.paddingLeft]; }"
)


@pytest.mark.parametrize("path", ["/signup", "/signin"])
def test_password_fields_look_like_the_other_fields(browser, site, path):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{site}{path}")
    handle, password = page.locator("#f-handle"), page.locator("#f-password")
    assert handle.evaluate(STYLE) == password.evaluate(STYLE)
    assert password.evaluate(STYLE)[0] == "solid"
    assert handle.bounding_box()["width"] == password.bounding_box()["width"]
