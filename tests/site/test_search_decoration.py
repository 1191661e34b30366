"""A pasted log line is searched without its decoration (ANSI colours, carriage returns, an issue's
`> ` quote), in Python (`SearchIndex`, used by diagnose) and in the browser (search.js), alike."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import REPO, needs

NODE = shutil.which("node")
PLAIN = "RuntimeError: CUDA error: an illegal memory access was encountered"
DECORATED = "> \x1b[1;31m" + PLAIN + "\x1b[0m\r"

SCRIPT = """
const fs = require("fs"), path = require("path");
const { Index } = require(path.join(process.argv[1], "theme", "assets", "search.js"));
const site = process.argv[2];
const index = new Index("search/", "search/manifest.json",
  (url) => Promise.resolve(JSON.parse(fs.readFileSync(path.join(site, url.split("?")[0]), "utf8"))));
Promise.all(JSON.parse(process.argv[3]).map((q) => index.query(q, 5)))
  .then((lists) => process.stdout.write(JSON.stringify(lists.map((l) => l.map((h) => [h.id, h.score, h.matched])))));
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from rootcause.site.builder import build

    out = tmp_path_factory.mktemp("search-site") / "site"
    build(REPO, out=out, progress=False)
    return out


def test_python_search_ignores_decoration(site):
    from rootcause.site.search import SearchIndex

    index = SearchIndex.from_folder(site)
    plain, decorated = index.query(PLAIN, 5), index.query(DECORATED, 5)
    assert plain and plain[0]["id"] == "cuda-illegal-memory-access"
    assert decorated == plain


@needs("node")
def test_browser_search_ignores_decoration_and_scores_as_python(site):
    from rootcause.site.search import SearchIndex

    done = subprocess.run([NODE, "-e", SCRIPT, str(REPO), str(site), json.dumps([PLAIN, DECORATED])],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    plain, decorated = json.loads(done.stdout)
    assert decorated == plain
    python = [[h["id"], h["score"], h["matched"]] for h in SearchIndex.from_folder(site).query(PLAIN, 5)]
    assert [h[0] for h in plain] == [h[0] for h in python]
    assert [round(h[1], 3) for h in plain] == [h[1] for h in python]
