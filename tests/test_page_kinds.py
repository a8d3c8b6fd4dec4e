"""Every kind of page in a real browser, at a phone's width (390 px) and a laptop's (1280 px).

Each page is loaded once and checked for what a reader trips on:

- axe-core (the copy bundled in the axe-playwright-python wheel, injected into the page) finds
  no violation of impact "serious" or "critical": contrast, names of controls and links,
  landmarks, keyboard access to scrolling regions...;
- the page never scrolls sideways, and no element reaches past the window's right edge unless
  a box that scrolls by itself holds it (a wide table or chart scrolls inside its own
  ``.scroll`` box); both are checked on every page, not only where the page already overflows,
  since a box clipping its overflow would hide one from the first;
- no chart hides what it draws: every mark and label of an SVG lies inside the SVG's viewBox
  (the SVG clips anything outside it) and inside the window and every box around the SVG that
  scrolls or clips, as the page first shows it (a chart is whole without scrolling sideways).

A full-page screenshot of each page is kept in ``$KERNELINDEX_SCREENSHOTS`` if set; otherwise
only of a page that fails, in the test session's temporary folder (the path is printed): a
screenshot of a long page costs more than its checks. The pages marked ``dark`` are also
checked in the dark theme (``prefers-color-scheme: dark``), where contrast differs.

The catalogue holds every source: the bundled SOL-ExecBench, AIConfigurator and aiter (slice)
snapshots, real slices of the KernelBench and Liger-Kernel snapshots, and the bundled controlled
reruns of those workloads (SOL-ExecBench's and KernelBench's). The long names come with them:
"NVIDIA RTX PRO 6000 Blackwell Server Edition", AMD's GPU classes, kernel names of 40 characters. It is served by one
server and one Chromium for the whole module, on SQLite only: what is checked here is the
rendered page, which the backend does not change.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from kernelindex.app import create_app
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Workload
from kernelindex.ingest.reruns.importer import import_bundled_reruns
from kernelindex.ingest.sources import SOURCES, ingest
from kernelindex.paths import BUNDLED_RERUNS
from kernelindex.settings import Settings
from kernelindex.store.accounts import create_user
from tests import kernelbench_slice, liger_slice
from tests.chromium import launched
from tests.render_sql import SqlWhileRendering, visit_every_kind
from tests.servers import serving

# One worker runs the whole module, so the catalogue, the server and Chromium start once.
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("page_kinds")]

MAINTAINER, PASSPHRASE = "maintainer", "a maintainer passphrase"
WIDTHS = (390, 1280)
BLOCKING_IMPACTS = {"serious", "critical"}
LONG_IMPLEMENTATION = "vllm-vllm-fp8moe-flashinfer-trtllm-trtllmfp8expertsmonolithic"


@dataclass(frozen=True)
class PageKind:
    name: str
    path: str
    signed_in: bool = False
    dark: bool = False  # also checked in the dark theme
    tables_fit: bool = False  # at the widest width, every table fits without scrolling in its box
    status: int = 200


PAGE_KINDS = [
    PageKind("home", "/", dark=True),
    PageKind("home-on-a-gpu", "/?gpu=rtx-pro-6000-blackwell-server"),
    PageKind("workloads", "/workloads"),
    PageKind("workloads-on-a-gpu", "/workloads?gpu=h200"),
    PageKind("leaderboard-sol", "/workloads/l1-039-adaptive-instance-normalization-2d-backward", dark=True),
    PageKind("leaderboard-kernelbench", "/workloads/kernelbench-l1-19-relu-1b0829ac"),
    PageKind("leaderboard-kernelbench-reruns", "/workloads/kernelbench-l1-13-matmul-for-symmetric-matrices-5ee7c491"),
    PageKind("leaderboard-liger", "/workloads/liger-cross-entropy-full-bt-15df6776", dark=True),
    PageKind("leaderboard-aiconfigurator-moe", "/workloads/aic-moe-f4ef6e1c5d89ddc5", dark=True),
    PageKind("leaderboard-aiconfigurator-gemm", "/workloads/aic-gemm-7f08d9bdeef9cd1c"),
    PageKind("leaderboard-aiconfigurator-nccl", "/workloads/aic-nccl-074ca9e399bcd0a1"),
    PageKind("leaderboard-aiter", "/workloads/aiter-batched-gemm-a8w8-16x1024x1280x8192-998b2c5c"),
    PageKind("run-sol", "/runs/sol-submission-36270", dark=True),
    PageKind("run-kernelbench", "/runs/kernelbench-h100-modal-pytorch-eager-l1-19-e4caede183"),
    PageKind("run-liger", "/runs/liger-cross-entropy-full-bt-15df6776-liger-triton-b200-v0.8.0-20260705-210035"),
    PageKind("run-aiconfigurator", "/runs/aic-moe-rtx-pro-6000-server-0beb129d5c8743fd"),
    PageKind("run-aiter", "/runs/aiter-run-64fe6c0c36906b24"),
    PageKind("run-rerun", "/runs/rerun-3a9843b10b3a"),
    PageKind("gpus", "/gpus", tables_fit=True),
    PageKind("gpu", "/gpus/b200", tables_fit=True),
    PageKind("gpu-with-reruns", "/gpus/h200", tables_fit=True),
    PageKind("gpu-long-name", "/gpus/rtx-pro-6000-blackwell-server"),
    PageKind("compare", "/compare?run=sol-submission-36270&run=sol-submission-36339", dark=True),
    PageKind("search", "/search?q=conv2d"),
    PageKind("search-on-a-gpu", "/search?q=moe+7168+fp8+h200"),
    PageKind("records", "/records"),
    PageKind("regressions", "/regressions"),
    PageKind("sources", "/sources"),
    PageKind("source", "/sources/sol-execbench"),
    PageKind("source-aiconfigurator", "/sources/aiconfigurator"),
    PageKind("source-aiter", "/sources/aiter"),
    PageKind("model", "/models/nafnet"),
    PageKind("implementation", "/implementations/kernelindex-triton"),
    PageKind("implementation-long-name", f"/implementations/{LONG_IMPLEMENTATION}"),
    PageKind("protocol", "/protocols/kernelindex-rerun-v1"),
    PageKind("manifest", "/manifests/sha256:2bf653c77d46563eb83343b47dfe4fa0f0ac2777c01facd642bfa93ff4107d34"),
    PageKind("report", "/runs/sol-submission-36270/report"),
    PageKind("signin", "/signin"),
    PageKind("signup", "/signup"),
    PageKind("account", "/account", signed_in=True),
    PageKind("admin", "/admin", signed_in=True, dark=True),
    PageKind("not-found", "/workloads/no-such-workload", status=404),
]
CASES = [
    pytest.param(kind, width, scheme, id=f"{kind.name}-{width}-{scheme}")
    for kind in PAGE_KINDS
    for width in WIDTHS
    for scheme in ("light", "dark")
    if scheme == "light" or (kind.dark and width == WIDTHS[-1])
]

# The outermost elements that reach past the window's right edge without a scrolling (or
# clipping) box around them: what makes the page scroll sideways. An absolutely positioned
# element escapes every such box up to its containing block, its nearest positioned ancestor.
OVERFLOWING = """() => {
  const clipped = e => {
    const position = getComputedStyle(e).position;
    let escaping = position === 'absolute' || position === 'fixed';
    for (let box = e.parentElement; box && box !== document.body; box = box.parentElement) {
      const style = getComputedStyle(box);
      if (position === 'absolute' && style.position !== 'static') escaping = false;
      if (!escaping && style.overflowX !== 'visible') return true;
    }
    return false;
  };
  const edge = document.documentElement.clientWidth;
  const wide = [...document.body.querySelectorAll('*')]
    .filter(e => e.getBoundingClientRect().right > edge + 0.5 && !clipped(e));
  return wide.filter(e => !wide.includes(e.parentElement)).slice(0, 8).map(e => {
    const box = e.getBoundingClientRect();
    const name = e.tagName.toLowerCase() + [...e.classList].map(c => '.' + c).join('');
    return `${name} spans x=${Math.round(box.left)}..${Math.round(box.right)}`;
  });
}"""

# Marks and labels an SVG draws outside its visible area: its viewBox (the SVG clips anything
# outside it), the window's width and every box around it that scrolls or clips. Each with where
# it lies and the visible area, in CSS pixels from the area's top left corner.
CLIPPED_IN_CHARTS = """() => {
  const clipped = [];
  for (const svg of document.querySelectorAll('svg')) {
    if (svg.parentElement.closest('svg')) continue;
    const box = svg.getBoundingClientRect(), view = svg.viewBox.baseVal, matrix = svg.getScreenCTM();
    let area = box;
    if (view && view.width && matrix) {
      const from = new DOMPoint(view.x, view.y).matrixTransform(matrix);
      const to = new DOMPoint(view.x + view.width, view.y + view.height).matrixTransform(matrix);
      area = {left: Math.max(box.left, from.x), top: Math.max(box.top, from.y),
              right: Math.min(box.right, to.x), bottom: Math.min(box.bottom, to.y)};
    }
    area = {...area, left: Math.max(area.left, 0), right: Math.min(area.right, document.documentElement.clientWidth)};
    for (let around = svg.parentElement; around && around !== document.body; around = around.parentElement) {
      if (getComputedStyle(around).overflowX === 'visible') continue;
      const edge = around.getBoundingClientRect().left + around.clientLeft;
      area = {...area, left: Math.max(area.left, edge), right: Math.min(area.right, edge + around.clientWidth)};
    }
    for (const mark of svg.querySelectorAll('text, circle, rect, line, path, polygon, polyline, ellipse')) {
      const at = mark.getBoundingClientRect();
      if (at.width === 0 && at.height === 0) continue;
      if (at.left < area.left - 0.5 || at.right > area.right + 0.5
          || at.top < area.top - 0.5 || at.bottom > area.bottom + 0.5) {
        const text = (mark.textContent || '').trim().slice(0, 48);
        const name = `${mark.tagName}.${mark.getAttribute('class') || ''} "${text}"`;
        const x = v => Math.round(v - area.left), y = v => Math.round(v - area.top);
        clipped.push(`${name} at x=${x(at.left)}..${x(at.right)} y=${y(at.top)}..${y(at.bottom)} `
          + `of a chart ${x(area.right)}×${y(area.bottom)}`);
      }
    }
  }
  return clipped.slice(0, 8);
}"""


# Boxes around a table that scroll sideways: the table does not fit the page's width.
SCROLLING_TABLES = """() => [...document.querySelectorAll('.scroll')]
  .filter(box => box.querySelector('table') && box.scrollWidth > box.clientWidth + 1)
  .map(box => `a table (${(box.querySelector('caption, th') || box).textContent.trim().slice(0, 40)}) `
    + `needs ${box.scrollWidth} px in a box of ${box.clientWidth} px`)"""


def rerun_bundles(workloads: set[str]) -> Path:
    """The bundled reruns of ``workloads`` (bundles are named by their workload's slug) as a bundled
    folder of their own, its MANIFEST.sha256 rewritten."""
    folder = Path(tempfile.mkdtemp(prefix="kernelindex-page-kinds-reruns-"))
    atexit.register(shutil.rmtree, folder, True)
    (folder / "bundles").mkdir()
    shutil.copyfile(BUNDLED_RERUNS / "runner-keys.json", folder / "runner-keys.json")
    for path in sorted((BUNDLED_RERUNS / "bundles").glob("*.json")):
        if path.name.split("--")[0] in workloads:
            shutil.copyfile(path, folder / "bundles" / path.name)
    listing = [
        f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(folder).as_posix()}"
        for path in [folder / "runner-keys.json", *sorted((folder / "bundles").glob("*.json"))]
    ]
    (folder / "MANIFEST.sha256").write_text("\n".join(listing) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def catalogue(sqlite_loaded_template: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite store holding every source and a maintainer's account."""
    folder = tmp_path_factory.mktemp("page-kinds")
    shutil.copy(sqlite_loaded_template, folder / "catalogue.db")
    url = f"sqlite:///{folder / 'catalogue.db'}"
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    settings = Settings(database_url=url, github_token=None)
    for slug, snapshot in (
        ("kernelbench", kernelbench_slice.make_slice(folder / "kernelbench")),
        ("liger-kernel", liger_slice.make_slice(folder / "liger-kernel")),
        ("aiconfigurator", SOURCES["aiconfigurator"].bundled),
        ("aiter", SOURCES["aiter"].bundled),
    ):
        summary = ingest(sessions, settings, slug, snapshot=snapshot, sleep=lambda _: None)
        assert summary.status == "succeeded", summary.errors
    with sessions() as session:
        workloads = set(session.scalars(select(Workload.name)))
    results = import_bundled_reruns(sessions, rerun_bundles(workloads))
    assert len(results) > 17 and all(result.error is None for result in results)
    with sessions.begin() as session:
        create_user(session, MAINTAINER, PASSPHRASE, maintainer=True)
    engine.dispose()
    return url


@pytest.fixture(scope="module")
def site(catalogue: str) -> Iterator[str]:
    with serving(create_app(Settings(database_url=catalogue))) as base:
        yield base


@pytest.fixture(scope="module")
def axe_script() -> Path:
    """axe.min.js as the axe-playwright-python wheel ships it."""
    base = pytest.importorskip("axe_playwright_python.base")
    return Path(base.AXE_FILE_PATH)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched() as browser:
        yield browser


@pytest.fixture(scope="module")
def contexts(browser: Any, site: str, axe_script: Path) -> Iterator[dict[bool, Any]]:
    """Browser contexts by "signed in": a reader's, and a maintainer's signed in through the form.
    Every page they open has axe-core loaded (sent to the browser once, not once a page)."""
    reader, maintainer = browser.new_context(), browser.new_context()
    for context in (reader, maintainer):
        context.add_init_script(path=axe_script)
    page = maintainer.new_page()
    page.goto(f"{site}/signin")
    page.fill("#f-handle", MAINTAINER)
    page.fill("#f-password", PASSPHRASE)
    page.click('main button:has-text("Sign in")')
    page.wait_for_url("**/account")
    page.close()
    yield {False: reader, True: maintainer}
    reader.close()
    maintainer.close()


@dataclass(frozen=True)
class Screenshots:
    folder: Path
    every_page: bool  # else only of the pages that fail


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Screenshots:
    chosen = os.environ.get("KERNELINDEX_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots{'' if chosen else ' of the pages that fail'}: {folder}")
    return Screenshots(folder, every_page=bool(chosen))


def serious_violations(page: Any) -> list[str]:
    """axe-core's serious and critical violations on ``page``, one line per element."""
    violations = page.evaluate("axe.run(document, {resultTypes: ['violations']}).then(results => results.violations)")
    return [
        f"{violation['id']} ({violation['impact']}): {violation['help']}\n"
        f"    at {' '.join(map(str, node['target']))}: {node['html'][:160]}"
        for violation in violations
        if violation["impact"] in BLOCKING_IMPACTS
        for node in violation["nodes"]
    ]


@pytest.mark.parametrize(("kind", "width", "scheme"), CASES)
def test_page_kind_is_accessible_and_fits_the_width(
    kind: PageKind, width: int, scheme: str, site: str, contexts: dict[bool, Any], screenshots: Screenshots
) -> None:
    page = contexts[kind.signed_in].new_page()
    try:
        page.set_viewport_size({"width": width, "height": 900})
        page.emulate_media(color_scheme=scheme)
        response = page.goto(f"{site}{kind.path}")
        assert response is not None
        assert response.status == kind.status, page.url
        overflow = page.evaluate("Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)") - width
        problems = [f"the page is {overflow} px wider than the window"] if overflow > 0 else []
        problems += page.evaluate(OVERFLOWING)
        problems += page.evaluate(CLIPPED_IN_CHARTS)
        if kind.tables_fit and width == WIDTHS[-1]:
            problems += page.evaluate(SCROLLING_TABLES)
        problems += serious_violations(page)
        if problems or screenshots.every_page:
            page.screenshot(path=screenshots.folder / f"{kind.name}-{width}-{scheme}.png", full_page=True)
        assert not problems, f"{kind.path} at {width} px, {scheme}:\n" + "\n".join(problems)
    finally:
        page.close()


def test_no_sql_runs_while_any_kind_of_page_renders(catalogue: str, tmp_path: Path) -> None:
    """Every kind of page above, with every source, and its JSON twin: once the handler has read what
    the page shows, no SQL runs while the template (or the twin) is written. (``test_render_sql`` runs
    the same check on both databases over the bundled catalogue.)"""
    engine = make_engine(catalogue)
    sessions = make_sessionmaker(engine)
    with SqlWhileRendering(engine) as recorder:
        settings = Settings(database_url=catalogue, public_url="http://testserver", export_dir=tmp_path / "exports")
        with TestClient(create_app(settings, sessions=sessions)) as client:
            visited = visit_every_kind(
                client, [(k.path, k.signed_in, k.status) for k in PAGE_KINDS], MAINTAINER, PASSPHRASE
            )
    engine.dispose()
    recorder.check(visited)
