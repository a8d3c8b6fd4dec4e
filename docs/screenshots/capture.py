"""Screenshot every key page kind at a phone and a desktop width.

Run against a served registry (the README's first command) to see what a reader sees:

    .venv/bin/python docs/screenshots/capture.py http://127.0.0.1:8000 docs/screenshots/after

It drives Debian's Chromium (/usr/bin/chromium) through Playwright and writes one full-page
PNG per page and width, named `<page>-<width>.png`.
"""

import argparse
from pathlib import Path

from playwright.sync_api import sync_playwright

PAGES = {
    "home": "/",
    "leaderboard": "/workloads/l1-040-conv2d-residual-block",
    "run": "/runs/sol-submission-36270",
    "gpu": "/gpus/h200",
    "compare": "/compare?run=sol-submission-36270&run=sol-submission-36339",
}
WIDTHS = (390, 1400)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        for width in WIDTHS:
            page = browser.new_page(viewport={"width": width, "height": 900})
            for name, path in PAGES.items():
                page.goto(args.base_url.rstrip("/") + path)
                page.screenshot(path=args.out_dir / f"{name}-{width}.png", full_page=True)
            page.close()
        browser.close()


if __name__ == "__main__":
    main()
