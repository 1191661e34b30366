#!/usr/bin/env python3
"""Take the README's screenshots again: the built site in Debian's Chromium, through Playwright.

    python scripts/screenshots.py            # builds the bundled entries into a temporary folder

Writes three PNGs to docs/: an entry page on a 1280 px desktop, the same page on a 390 px phone,
and the diagnose page's report after a real multi-rank log (bench/real_logs/runs/, a torchrun run
made on CPU with gloo) is pasted into it. Each is one screen (not the whole page), at a device
pixel ratio of 1, so the files stay small. Nothing downloads a browser: the Chromium on the PATH
(`chromium`) is used, and the test harness's local server serves the site under its sub-path.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

#: the entry shown (a real entry with a posted log, highlighted code and affected versions)
ENTRY = "zero3-state-dict-saved-without-gathering"
#: the log pasted into the diagnose page: a real two-rank run (its .yaml says how it was made)
LOG = REPO / "bench" / "real_logs" / "runs" / "ddp_unused_parameters.log"
SHOTS = {
    "entry-desktop.png": {"width": 1280, "height": 860},
    "entry-phone.png": {"width": 390, "height": 844},
    "diagnose-report.png": {"width": 1280, "height": 860},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs", help="folder for the PNGs (default docs/)")
    parser.add_argument("--scheme", choices=["light", "dark"], default="light")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("Debian's chromium is not on the PATH (apt-get install chromium); no browser is downloaded")
    from playwright.sync_api import sync_playwright

    from browser_helpers import CHROMIUM_ARGS, SiteServer, base_path, build_project

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        site = build_project(REPO, Path(tmp) / "site")
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        with SiteServer(site, base_path(REPO)) as server:
            for name, viewport in SHOTS.items():
                context = browser.new_context(viewport=viewport, device_scale_factor=1, color_scheme=args.scheme)
                page = context.new_page()
                if name.startswith("entry"):
                    page.goto(server.url(f"entries/{ENTRY}/"))
                else:
                    page.goto(server.url("diagnose/"))
                    page.locator("#rc-log").fill(LOG.read_text(encoding="utf-8"))
                    page.locator("#rc-diagnose button[type=submit]").click()
                    page.locator("#rc-report .rc-finding").first.wait_for(timeout=30_000)
                    page.wait_for_function("() => document.getElementById('rc-status').textContent === ''")
                    # the report, not the box the log was pasted into
                    page.evaluate("() => window.scrollTo(0, document.getElementById('rc-report').getBoundingClientRect().top"
                                  " + window.scrollY - 90)")
                page.wait_for_timeout(200)
                path = args.out / name
                page.screenshot(path=str(path))
                print(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}: {path.stat().st_size // 1024} KB",
                      file=sys.stderr)
                context.close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
