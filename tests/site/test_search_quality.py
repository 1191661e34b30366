"""Search for short queries (issues 11 and 35): aliases, the normalisation shared by the index and
the browser, every entry with all the words listed before those with some (no cut-off), the word
being typed completed, highlighting, titles without Markdown, the combobox's roles.

Python and JavaScript must read a query the same way (tokens, pairs, the name term of an alias);
the repository's own site must put the right entry first for the queries readers type (in
Chromium, and for the whole query set of bench/search_queries.tsv under Node); the header box is
an ARIA combobox over a listbox of options.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from browser_helpers import SiteServer, base_path, own_site, own_site_problem
from conftest import REPO, SEED_ENTRY, run_cli, needs

NODE = shutil.which("node")
CHROMIUM = shutil.which("chromium")
TIMEOUT = 10_000

#: inputs whose reading matters for short queries: hyphen and underscore joins, case, plurals,
#: stop words, camelCase, pasted lines
NORMALISATION_CASES = [
    "ZeRO-3", "zero-3", "zero_3", "zero3", "Zero3", "ZERO3", "ZeRO stage 3", "ZeRO-2 and ZeRO-3 checkpoints",
    "zero3 state dict", "ZeRO-3 checkpoint empty", "ds_zero_3_config", "stage3_gather_16bit_weights_on_model_save",
    "sm_120", "SM89", "cuda-12.1", "llama-2-7b", "zero-33", "zero-1234", "a-1", "-3", "x-1y", "fsdp2 FSDP-2",
    "OOM", "oom", "CUDA OOM", "OutOfMemoryError", "torch.OutOfMemoryError", "IOError", "NaN loss", "nan", "NaNs",
    "hang", "hangs", "Hanging", "EADDRINUSE", "errno: 98 - Address already in use", "NCCL timeout",
    "NCCL_SOCKET_IFNAME", "why does my training hang after 100 steps", "how what why when", "the of and",
    "segfault in NCCL", "NCCL segfault", "TP/PP mismatch", "state_dict()", "model.state_dict", "_orig_mod.",
    "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered", "entries queries",
    "Größe naïve café", "", "   ", "---", "__init__",
]

NODE_SCRIPT = """
const path = require("path");
const S = require(path.join(process.argv[1], "theme", "assets", "search.js"));
const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(cases.map((t) => [S.tokens(t), S.terms(t), S.nameKey(t)])));
"""


@needs("node")
def test_python_and_javascript_normalise_queries_alike():
    from rootcause.text import name_key, terms, tokens

    done = subprocess.run([NODE, "-e", NODE_SCRIPT, str(REPO)], input=json.dumps(NORMALISATION_CASES),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    javascript = json.loads(done.stdout)
    python = [[tokens(t), terms(t), name_key(t)] for t in NORMALISATION_CASES]
    mismatches = [(text, py, js) for text, py, js in zip(NORMALISATION_CASES, python, javascript, strict=True)
                  if py != js]
    assert not mismatches, mismatches


def test_the_normalisation_joins_case_and_hyphens_the_way_readers_type():
    from rootcause.text import name_key, tokens

    assert name_key("ZeRO-3") == name_key("zero-3") == name_key("zero_3") == name_key("zero3") == name_key("Zero3")
    assert "zero3" in tokens("ZeRO-3 checkpoint empty")
    assert name_key("segfault in NCCL") == name_key("NCCL segfault")
    assert tokens("how does the OOM happen") == ["oom", "happen"]
    assert tokens("how what why when") == [] and name_key("the of and") is None
    assert "ze" not in tokens("ZeRO") and "memory" in tokens("OutOfMemoryError")
    assert tokens("hangs") == tokens("hang")


# -- the schema field ---------------------------------------------------------------------------------
def test_a_bad_alias_is_a_positioned_error(small_project: Path):
    entry = small_project / "entries" / SEED_ENTRY.name
    text = entry.read_text(encoding="utf-8")
    text, n = re.subn(r"(?m)^aliases: .*$", 'aliases: ["OOM", "the of", "' + "x" * 70 + '", "ZeRO-3", "zero_3"]', text)
    assert n == 1
    entry.write_text(text, encoding="utf-8")
    result = run_cli("--root", str(small_project), "check", timeout=60)
    assert result.returncode == 1
    lines = [line for line in result.stdout.decode().splitlines() if "E054" in line]
    line_no = text.splitlines().index(next(l for l in text.splitlines() if l.startswith("aliases:"))) + 1
    assert len(lines) == 2, lines
    assert all(line.startswith(f"entries/{SEED_ENTRY.name}:{line_no}:") for line in lines), lines
    assert "no searchable word" in lines[0] and "too long" in lines[1]
    # once those are fixed, the repeat ("ZeRO-3" and "zero_3" are the same name to search) is reported
    entry.write_text(re.sub(r"(?m)^aliases: .*$", 'aliases: ["ZeRO-3", "zero_3"]', text), encoding="utf-8")
    result = run_cli("--root", str(small_project), "check", timeout=60)
    assert result.returncode == 1
    assert "error[E054]: aliases: aliases 'ZeRO-3' and 'zero_3' are searched as the same words" in result.stdout.decode()


def test_aliases_are_in_the_schema_and_on_the_entry_page():
    schema = json.loads((REPO / "entry.schema.json").read_text(encoding="utf-8"))
    assert schema["properties"]["aliases"]["items"]["type"] == "string"
    assert "aliases" in (REPO / "content" / "writing-entries.md").read_text(encoding="utf-8")


# -- the repository's own site ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def own(tmp_path_factory) -> Path:
    site = own_site(tmp_path_factory)
    if site is None:
        pytest.skip("the repository's entries do not pass `python build.py check` yet:\n" + own_site_problem())
    return site


@needs("node")
def test_the_query_set_ranks_the_right_entry_first(own, tmp_path):
    """bench/search_queries.tsv through the shipped search.js (as bench/search_quality.py runs it)."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from search_quality import ours, read_queries, scores
    finally:
        sys.path.remove(str(REPO / "bench"))
    rows = read_queries()
    assert len(rows) >= 80
    results = ours(own, [q["query"] for q in rows], tmp_path)
    got = scores(rows, results)
    assert got["mrr"] >= 0.95 and got["top1"] >= 0.93, [(q["query"], r) for q, r in zip(rows, got["ranks"]) if r != 1]
    # every pasted line puts its entry first
    pasted = [(q["query"], r) for q, r in zip(rows, got["ranks"]) if q["kind"] == "error"]
    assert pasted and all(r == 1 for _q, r in pasted), [p for p in pasted if p[1] != 1]
    # short queries list every relevant entry among the first ten (no cut-off hides them)
    browse = [i for i, q in enumerate(rows) if q["kind"] == "browse"]
    assert len(browse) >= 40
    recall = scores([rows[i] for i in browse], [results[i] for i in browse])["recall"]
    assert recall >= 0.95, [(rows[i]["query"], got["recalls"][i]) for i in browse if got["recalls"][i] < 1]


#: words being typed: the last one is a prefix ("nccl tim"), or no word at all ("cuda o": "o" is no token)
TYPED = ["nccl tim", "cuda o", "dataloader wor", "fsdp state d", "zero", "ds_to_univ", "deepsp", "meta tensor",
         "error", "nccl error", "ZeRO-3 check", "torch.cuda.OutOfMem"]


@needs("node")
@pytest.mark.parametrize("prefix", [False, True], ids=["whole words", "last word typed"])
def test_python_and_browser_search_agree(own, prefix, tmp_path):
    """The same hits, scores and order on both sides, for every query of the bench's set (short
    words, phrases, pasted lines) and words being typed, up to 20 results (past the partial matches)."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from search_quality import read_queries
    finally:
        sys.path.remove(str(REPO / "bench"))
    from rootcause.site.search import SearchIndex

    queries = [q["query"] for q in read_queries()] + TYPED
    script = """
const fs = require("fs"), path = require("path");
const { Index } = require(path.join(process.argv[1], "theme", "assets", "search.js"));
const job = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const index = new Index("search/", "search/manifest.json",
  (url) => Promise.resolve(JSON.parse(fs.readFileSync(path.join(process.argv[2], url.split("?")[0]), "utf8"))));
Promise.all(job.queries.map((q) => index.query(q, 20, job.prefix)))
  .then((lists) => process.stdout.write(JSON.stringify(lists.map((l) => l.map((h) =>
    [h.id, h.score, h.matched, h.allWords])))));
"""
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"queries": queries, "prefix": prefix}), encoding="utf-8")
    done = subprocess.run([NODE, "-e", script, str(REPO), str(own), str(job)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    index = SearchIndex.from_folder(own)
    python = [[[h["id"], h["score"], h["matched"], h["all_words"]] for h in index.query(q, 20, prefix=prefix)]
              for q in queries]
    # (rounded as Python rounds: the same float rounds alike)
    javascript = [[[i, round(score, 3), matched, whole] for i, score, matched, whole in hits]
                  for hits in json.loads(done.stdout)]
    assert [(q, py, js) for q, py, js in zip(queries, python, javascript, strict=True) if py != js] == []
    assert sum(len(hits) for hits in python) > 10 * len(queries)   # the comparison reached past the first hits


@needs("node")
def test_every_token_is_in_the_shard_its_key_names(own):
    """Shards are ranges of tokens named by where they start; the manifest writes their keys
    front-coded, and both readers decode them alike."""
    from rootcause.site.search import MANIFEST, SHARD_BYTES, decode_keys, encode_keys, shard_key, shard_path

    manifest = json.loads((own / MANIFEST).read_text(encoding="utf-8"))
    keys = decode_keys(manifest["shards"])
    assert keys == sorted(keys) and len(keys) > 50 and encode_keys(keys) == manifest["shards"]
    assert decode_keys(encode_keys(["nc", "nca", "ncab", "o", "~3+zero"])) == ["nc", "nca", "ncab", "o", "~3+zero"]
    for key in keys:
        body = (own / shard_path(key)).read_bytes()
        shard = json.loads(body)
        assert len(body) <= SHARD_BYTES or len(shard) == 1   # a token's postings are never cut
        assert all(shard_key(keys, token) == key for token in shard), key
    done = subprocess.run([NODE, "-e", "const S = require(process.argv[1]); process.stdout.write(JSON.stringify("
                           "S.decodeKeys(require('fs').readFileSync(0, 'utf8'))))",
                           str(REPO / "theme" / "assets" / "search.js")], input=manifest["shards"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == keys


def test_entries_with_every_word_come_before_those_with_some(own):
    """No cut-off: every entry that has all the words is listed, best first, then those with some."""
    from rootcause.site.search import SearchIndex

    index = SearchIndex.from_folder(own)
    hits = index.query("nccl timeout", 40)
    ids = [h["id"] for h in hits]
    assert ids[0] == "nccl-watchdog-collective-timeout"
    assert {"distributed-init-hang", "distributed-hang-mid-training", "flight-recorder-read-dump"} <= set(ids[:10])
    whole = [h["all_words"] for h in hits]
    assert whole == sorted(whole, reverse=True) and whole[0] and not whole[-1]   # all words, then some
    assert "torchrun-rendezvous-timeout" in ids   # a timeout without NCCL: among those with some words
    # a word the index does not have is not required; a word in most entries ("error") is a stop word
    assert index.query("nccl error")[0]["id"] in {"nccl-internal-error", "nccl-invalid-usage", "nccl-unhandled-cuda-error",
                                                  "nccl-unhandled-system-error", "nccl-remote-process-or-network-error"}
    assert [h["id"] for h in index.query("EADDRINUSE", 40)] == ["torchrun-address-already-in-use"]


def test_the_word_being_typed_is_completed(own):
    from rootcause.site.search import SearchIndex

    index = SearchIndex.from_folder(own)
    # whole words: "tim" is no word of any entry, so it is not required and finds nothing
    assert [h["id"] for h in index.query("nccl tim")] == [h["id"] for h in index.query("nccl")]
    assert index.query("nccl tim", prefix=True)[0]["id"] == "nccl-watchdog-collective-timeout"
    assert index.query("dataloader wor", prefix=True)[0]["id"].startswith("dataloader-worker")
    # a space after the word: it is typed out, and the next one is not begun
    assert [h["id"] for h in index.query("cuda o", prefix=True)] == [h["id"] for h in index.query("cuda", prefix=False)]


pytestmark_browser = needs("browser")


@pytest.fixture(scope="module")
def own_server(own):
    with SiteServer(own, base_path(REPO)) as running:
        yield running


@pytest.fixture
def page(browser, own_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT)
    errors: list[str] = []
    context.on("weberror", lambda error: errors.append(str(error.error)))
    context.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page = context.new_page()
    page.goto(own_server.url("entries/"))
    yield page
    context.close()
    assert not errors, errors


def header_results(page, query: str) -> list[str]:
    box = page.locator("#rc-q")
    box.fill("")
    page.wait_for_function("() => document.querySelector('.rc-search__results').hidden")
    box.fill(query)
    page.wait_for_function("() => !document.querySelector('.rc-search__results').hidden")
    # the best hit shows first, the rest as their rows arrive: read the list once it is whole
    page.wait_for_function("() => document.querySelector('#rc-results').getAttribute('aria-busy') === 'false'")
    return [href.rstrip("/").rsplit("/", 1)[-1] for href in
            page.locator("#rc-results a.rc-result").evaluate_all("els => els.map(e => e.getAttribute('href'))")]


@pytestmark_browser
@pytest.mark.parametrize("query, expected", [
    ("OOM", "cuda-out-of-memory"),
    ("zero3 state dict", "zero3-state-dict-saved-without-gathering"),
    ("ZeRO-3 checkpoint empty", "zero3-state-dict-saved-without-gathering"),
    ("EADDRINUSE", "torchrun-address-already-in-use"),
    ("nan loss", "loss-nan-fp16-overflow"),
    ("NCCL timeout", "nccl-watchdog-collective-timeout"),
])
def test_short_queries_put_the_main_entry_first(page, query, expected):
    found = header_results(page, query)
    assert found and found[0] == expected, found


@pytestmark_browser
def test_short_queries_list_every_matching_entry(page):
    assert header_results(page, "EADDRINUSE") == ["torchrun-address-already-in-use"]   # the one entry with it
    found = header_results(page, "nccl timeout")   # the dropdown's 8, every one with both words
    assert found[0] == "nccl-watchdog-collective-timeout" and len(found) == 8
    assert {"distributed-init-hang", "distributed-hang-mid-training"} <= set(found)


@pytestmark_browser
def test_a_query_of_stop_words_alone_shows_no_results(page, own_server):
    assert header_results(page, "how to do the") == []
    assert page.locator("#rc-results").is_hidden()  # an empty listbox is not shown
    assert "No entry matches" in page.locator(".rc-search__results .rc-result--none").inner_text()
    page.goto(own_server.url("search/?q=" + quote("what is the")))
    page.locator("#rc-page-results .rc-result--none").wait_for()
    assert page.locator("#rc-page-results a.rc-result").count() == 0


@pytestmark_browser
def test_matched_words_are_highlighted_and_markup_is_not_parsed(page):
    header_results(page, "zero3 state dict")
    first = page.locator("#rc-results a.rc-result").first
    marks = first.locator("mark").all_inner_texts()
    assert "ZeRO-3" in marks, marks
    assert any("state" in m for m in marks), marks
    # a query holding markup is text: it is neither rendered nor run
    found = header_results(page, "<b>CUDA out of memory</b> <img src=x onerror=alert(1)>")
    assert found[0] == "cuda-out-of-memory"
    assert page.locator(".rc-search__results img, .rc-search__results b").count() == 0
    assert "memory" in page.locator("#rc-results a.rc-result").first.locator("mark").all_inner_texts()
    # the word being typed is marked where it starts a word: "tim" in "timeout"
    header_results(page, "nccl tim")
    marks = page.locator("#rc-results a.rc-result").first.locator(".rc-result__title mark").all_inner_texts()
    assert "NCCL" in marks and "timeout" in marks, marks


@pytestmark_browser
def test_a_title_with_backticks_renders_as_code_without_them(page):
    found = header_results(page, "accelerate launch ignores the config")
    assert found[0] == "accelerate-config-silently-ignored"
    title = page.locator("#rc-results a.rc-result").first.locator(".rc-result__title")
    assert "`" not in title.inner_text()
    assert title.locator("code").first.inner_text() == "accelerate launch"


@pytestmark_browser
def test_the_header_box_is_a_combobox_over_a_listbox_of_options(page, own_server):
    box = page.locator("#rc-q")
    assert box.get_attribute("role") == "combobox"
    assert box.get_attribute("aria-controls") == "rc-results"
    assert box.get_attribute("aria-expanded") == "false"
    header_results(page, "NCCL timeout")
    assert box.get_attribute("aria-expanded") == "true"
    assert page.locator("#rc-results").get_attribute("role") == "listbox"
    options = page.locator("#rc-results > *")
    assert options.count() >= 1
    assert all(o.get_attribute("role") == "option" and o.get_attribute("aria-selected") == "false"
               for o in options.all())
    assert box.get_attribute("aria-activedescendant") is None
    box.press("ArrowDown")
    first = options.first
    assert first.get_attribute("aria-selected") == "true"
    assert box.get_attribute("aria-activedescendant") == first.get_attribute("id")
    box.press("ArrowUp")  # wraps round to the last option
    assert options.last.get_attribute("aria-selected") == "true"
    box.press("Escape")
    assert box.get_attribute("aria-expanded") == "false" and box.get_attribute("aria-activedescendant") is None
    assert page.locator("#rc-results").is_hidden()
    # reopened, nothing is still marked as chosen: closing clears the class and aria-selected
    box.press("ArrowDown")
    assert box.get_attribute("aria-expanded") == "true"
    assert page.locator("#rc-results .rc-active").count() == 1   # the one ArrowDown chose, no stale one
    box.press("Escape")
    assert page.locator("#rc-results .rc-active").count() == 0
    assert page.locator('#rc-results [aria-selected="true"]').count() == 0
    # the "all results" link leads to the search page with the query
    header_results(page, "NCCL timeout")
    link = page.locator(".rc-search__all")
    assert link.get_attribute("href").endswith("search/?q=NCCL%20timeout")
    with page.expect_navigation():
        link.click()
    page.locator("#rc-page-results a.rc-result").first.wait_for()
    assert page.locator("#rc-page-q").input_value() == "NCCL timeout"
    # the page's list is plain links, not options outside a listbox
    assert page.locator("#rc-page-results [role=option]").count() == 0
    box = page.locator("#rc-q")
    header_results(page, "EADDRINUSE")
    box.press("ArrowDown")
    with page.expect_navigation():
        box.press("Enter")
    assert page.url.endswith("entries/torchrun-address-already-in-use/")
