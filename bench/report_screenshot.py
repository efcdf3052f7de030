"""The README's picture of a load test report: docs/bench-report.png, from a real `tokenpace bench` result.

The report of RESULT.json (what `tokenpace bench` wrote) is rendered by web/report.py, opened from disk in
Debian's Chromium with the network off, and its top (header, table, sweep charts) saved as a PNG:

    uv run --group dev python bench/report_screenshot.py tokenpace-bench/RESULT.json [--out docs/bench-report.png]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from tokenpace.load.results import read_result
from tokenpace.web.report import render_report

CHROMIUM = "/usr/bin/chromium"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("result", type=Path, help="a result file `tokenpace bench` wrote")
    parser.add_argument("--out", type=Path, default=Path("docs/bench-report.png"))
    parser.add_argument("--height", type=int, default=1500, help="pixels of the page's top to keep")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        page_file = Path(folder) / "report.html"
        page_file.write_text(render_report(read_result(args.result)), encoding="utf-8")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_context(viewport={"width": 1200, "height": 900}, offline=True).new_page()
                page.goto(page_file.as_uri())
                height = min(args.height, int(page.evaluate("document.body.scrollHeight")))
                clip = {"x": 0, "y": 0, "width": 1200, "height": height}
                page.screenshot(path=str(args.out), clip=clip, full_page=True)  # type: ignore[arg-type]
            finally:
                browser.close()
    print(f"{args.out}: {args.out.stat().st_size / 1000:.0f} kB")


if __name__ == "__main__":
    main()
