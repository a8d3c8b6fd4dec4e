"""Which cases a workload page shows: all of them, or one window of a long sweep.

A sweep of thousands of cases (AIConfigurator's attention tables sweep batch and sequence
length together: up to 3,440 cases) would make its page megabytes of chart, tables and case
list, and its first render take as long as all of them. The page shows ``CASES_PER_PAGE`` at a
time, ``?cases=N`` choosing the window; without it, the window holding the chosen case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kernelindex.web.errors import BadRequest
from kernelindex.web.pages import Part

CASES_PER_PAGE = 200


@dataclass(frozen=True)
class CaseWindow:
    page: int  # 1-based
    page_count: int
    start: int  # the first case shown (0-based position)
    stop: int  # one past the last case shown
    total: int

    @property
    def whole(self) -> bool:
        return self.page_count == 1

    @property
    def positions(self) -> range:
        """The 0-based positions of the cases shown."""
        return range(self.start, self.stop)


def case_window(total: int, page_value: str | None, chosen_case: int | None) -> CaseWindow:
    """The window ``?cases=`` asks for (``BadRequest`` past the last one), or the one holding
    ``chosen_case``, or the first."""
    page_count = max(1, -(-total // CASES_PER_PAGE))
    if page_value is None or page_value == "":
        page = 1 if chosen_case is None else min(chosen_case // CASES_PER_PAGE, page_count - 1) + 1
    elif page_value.isascii() and page_value.isdigit() and len(page_value) <= 6 and 1 <= int(page_value) <= page_count:
        page = int(page_value)
    else:
        pages = "1" if page_count == 1 else f"1 to {page_count}"
        raise BadRequest(
            f"cases must be a page of this workload's cases, {pages} ({CASES_PER_PAGE} cases a page); "
            f"got {page_value[:40]!r}."
        )
    start = (page - 1) * CASES_PER_PAGE
    return CaseWindow(page, page_count, start, min(total, start + CASES_PER_PAGE), total)


class CasePager(Part):
    """The links between windows: "cases 201–400 of 3,440"."""

    first: int  # 1-based, as the case table numbers them
    last: int
    total: int
    page: int
    page_count: int
    sweep_previous_url: str | None
    sweep_next_url: str | None
    table_previous_url: str | None
    table_next_url: str | None


def case_pager(window: CaseWindow, url: Callable[[int, str], str]) -> CasePager:
    """``url(page, section)`` builds the address of another window, opened at ``section``."""
    previous = window.page - 1 if window.page > 1 else None
    following = window.page + 1 if window.page < window.page_count else None
    return CasePager(
        first=window.start + 1,
        last=window.stop,
        total=window.total,
        page=window.page,
        page_count=window.page_count,
        sweep_previous_url=url(previous, "#sweep") if previous else None,
        sweep_next_url=url(following, "#sweep") if following else None,
        table_previous_url=url(previous, "#cases") if previous else None,
        table_next_url=url(following, "#cases") if following else None,
    )
