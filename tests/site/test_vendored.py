"""RE2JS, the browser's regular-expression engine, is vendored: the files in theme/assets/ are the
pinned release, and every built site serves them (with the licence) from its own assets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser as HTMLParser

from browser_helpers import fixture_site
from conftest import REPO

LOCK = REPO / "scripts" / "re2js.lock.json"


def test_the_vendored_files_are_the_pinned_release():
    """`scripts/vendor_re2js.py --check`, offline: each file's SHA-256 is the one pinned with the
    version and the registry's integrity hash (refreshing goes through the script, not by hand)."""
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "vendor_re2js.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lock = json.loads(LOCK.read_text(encoding="utf-8"))
    assert lock["package"] == "re2js" and lock["integrity"].startswith("sha512-")
    engine = (REPO / "theme" / "assets" / "re2js.js").read_text(encoding="utf-8")
    assert f"@version v{lock['version']}" in engine[:400] and "@license MIT" in engine[:400]
    assert "MIT License" in (REPO / "theme" / "assets" / "re2js-LICENSE.txt").read_text(encoding="utf-8")


def test_the_site_serves_re2js_and_its_licence_and_the_page_loads_it(tmp_path_factory):
    site = fixture_site(tmp_path_factory)
    assets = {p.name.split(".")[0]: p for p in (site / "assets").iterdir() if p.is_file()}
    assert assets["re2js"].read_bytes() == (REPO / "theme" / "assets" / "re2js.js").read_bytes()
    assert assets["re2js-LICENSE"].read_bytes() == (REPO / "theme" / "assets" / "re2js-LICENSE.txt").read_bytes()
    form = HTMLParser((site / "diagnose" / "index.html").read_text(encoding="utf-8")).css_first("#rc-diagnose")
    address = form.attributes["data-re2js"]
    assert Path(address).name == assets["re2js"].name and not address.startswith(("http:", "https:", "//"))


def test_the_vendored_axe_core_is_the_pinned_release_and_stays_out_of_the_site(tmp_path_factory):
    """axe-core, the accessibility checker of tests/site/test_accessibility.py, is a test
    dependency: `scripts/vendor_axe.py --check` passes offline, the file is the pinned version
    with its MPL-2.0 licence beside it, and no built page or asset carries it."""
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "vendor_axe.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lock = json.loads((REPO / "scripts" / "axe-core.lock.json").read_text(encoding="utf-8"))
    assert lock["package"] == "axe-core" and lock["integrity"].startswith("sha512-")
    assert set(lock["files"]) == {"tests/vendor/axe.min.js", "tests/vendor/axe-LICENSE.txt",
                                  "tests/vendor/axe-LICENSE-3RD-PARTY.txt"}
    head = (REPO / "tests" / "vendor" / "axe.min.js").read_text(encoding="utf-8")[:600]
    assert f"axe v{lock['version']}" in head and "Mozilla Public" in head
    assert "Mozilla Public License, version 2.0" in (REPO / "tests" / "vendor" / "axe-LICENSE.txt").read_text(encoding="utf-8")
    site = fixture_site(tmp_path_factory)
    assert not [p for p in (site / "assets").rglob("*") if "axe" in p.name.lower()]
