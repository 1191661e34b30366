"""The built site in a real browser: Debian's Chromium, driven by Playwright, against a local server
that sends the strict Content-Security-Policy a self-hoster would use.

What a reader does is checked end to end: read an entry in light and dark mode, search an error
message and open the result by keyboard, share a search address, paste a multi-rank log or open
a .gz file on the diagnose page, copy a command; and that a page without JavaScript still shows
every section. Every test fails on a console error, a CSP violation, a failed request, or any
request to a host other than the local server. Screenshots go to tests/artifacts/ (git-ignored).
"""

from __future__ import annotations

import gzip
import contextlib
import re
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from conftest import needs

from browser_helpers import (ARTIFACTS, COPIED_ENTRY, CSP, PythonDiagnosis, fixture_server, fixture_site,
                             signature_data)

pytestmark = needs("browser")

ENTRY = f"entries/{COPIED_ENTRY}/"
HOSTILE = Path(__file__).resolve().parent.parent / "hostile"
TIMEOUT = 10_000  # ms, for anything the page does asynchronously


# -- fixtures --------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def server(tmp_path_factory):
    with fixture_server(tmp_path_factory) as running:
        yield running


class Recorder:
    """Everything a context does that a test must see: requests, console errors, page errors, CSP."""

    def __init__(self, context, origin: str):
        self.origin = origin
        self.requests: list[str] = []
        self.problems: list[str] = []
        context.on("request", lambda request: self.requests.append(request.url))
        context.on("console", self._console)
        context.on("weberror", lambda error: self.problems.append(f"page error: {error.error}"))
        context.on("requestfailed", self._failed)
        context.on("response", self._response)

    def _console(self, message):
        if message.type in ("error", "warning") or "Content Security Policy" in message.text:
            self.problems.append(f"console {message.type}: {message.text}")

    def _failed(self, request):
        if request.failure != "net::ERR_ABORTED":  # a navigation cancels what the old page still fetched
            self.problems.append(f"request failed: {request.url} ({request.failure})")

    def _response(self, response):
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status}: {response.url}")

    def foreign(self) -> list[str]:
        return [url for url in self.requests if not url.startswith(self.origin + "/")]

    def check(self):
        assert not self.problems, self.problems
        assert not self.foreign(), f"requests left the site: {self.foreign()}"


@pytest.fixture
def open_context(browser, server):
    """Make a browser context that records everything; every one is checked when the test ends."""
    made = []

    def make(**options):
        context = browser.new_context(**{"viewport": {"width": 1280, "height": 900}, **options})
        context.set_default_timeout(TIMEOUT)
        recorder = Recorder(context, server.origin)
        if options.get("java_script_enabled", True):
            # a CSP violation is an error even when the browser does not print it
            context.add_init_script("document.addEventListener('securitypolicyviolation', function (e) {"
                                    " console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI); });")
        made.append((context, recorder))
        return context, recorder

    yield make
    for context, recorder in made:
        context.close()
    for _context, recorder in made:
        recorder.check()


def shot(page, name: str):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def scheme(page) -> str:
    return page.locator("body").get_attribute("data-md-color-scheme")


def test_the_harness_sees_csp_violations_and_foreign_requests(open_context, server):
    """The checks every test relies on: an inline script, a foreign image and a foreign fetch are caught."""
    context, recorder = open_context()
    page = context.new_page()
    page.goto(server.url(ENTRY))
    assert recorder.problems == []
    page.evaluate("""() => {
        const s = document.createElement('script'); s.textContent = 'window.inline = 1'; document.body.appendChild(s);
        const i = document.createElement('img');
        i.src = 'https://example.invalid/pixel.png';
        document.body.appendChild(i);
        fetch('https://example.invalid/beacon').catch(() => {});
    }""")
    def violations():
        return [p for p in recorder.problems if "CSP violation" in p or "Content Security Policy" in p]

    for _ in range(100):
        if len(violations()) >= 3:
            break
        page.wait_for_timeout(50)
    assert page.evaluate("() => window.inline") is None
    violations = violations()
    assert any("script-src" in p for p in violations), recorder.problems
    assert any("img-src" in p for p in violations), recorder.problems
    assert any("connect-src" in p or "default-src" in p for p in violations), recorder.problems
    assert "https://example.invalid/pixel.png" in recorder.foreign()
    recorder.problems.clear()  # expected here; every other test must end with none
    recorder.requests.clear()


def site_pages(site) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if p.name != "404.html")


def test_pages_of_every_kind_load_cleanly(open_context, server, tmp_path_factory):
    """No console error, CSP violation, failed or foreign request on any kind of page (hub pages of
    one kind share a template: two of each are enough)."""
    pages, per_kind = [], {}
    for path in site_pages(fixture_site(tmp_path_factory)):
        kind = path.split("/")[0] if path.count("/") == 2 and not path.startswith("entries/") else path
        per_kind[kind] = per_kind.get(kind, 0) + 1
        if per_kind[kind] <= 2:
            pages.append(path)
    assert len(pages) >= 15
    context, _recorder = open_context()
    page = context.new_page()
    for path in pages:
        page.goto(server.url(path.removesuffix("index.html")))
        assert page.locator("h1").count() == 1, path


def page_of_each_kind(site) -> list[str]:
    """Two pages of each kind (hub pages of one kind share a template), as in the test above."""
    pages, per_kind = [], {}
    for path in site_pages(site):
        kind = path.split("/")[0] if path.count("/") == 2 and not path.startswith("entries/") else path
        per_kind[kind] = per_kind.get(kind, 0) + 1
        if per_kind[kind] <= 2:
            pages.append(path)
    return pages


@pytest.fixture(scope="session")
def meta_only_server(tmp_path_factory):
    """The same site, served with no Content-Security-Policy header: only the pages' <meta>."""
    with fixture_server(tmp_path_factory, csp=None) as running:
        yield running


def test_every_kind_of_page_is_held_to_its_own_meta_policy_and_satisfies_it(browser, meta_only_server,
                                                                           tmp_path_factory):
    """A self-hoster who sets no header still gets the policy: each page carries it in a <meta>
    that the browser enforces (an inline style attribute, an inline script and a foreign image
    added to the page are all blocked), and no page, the 404 page included, violates it."""
    server = meta_only_server
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT)
    recorder = Recorder(context, server.origin)
    context.add_init_script("document.addEventListener('securitypolicyviolation', function (e) {"
                            " console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI); });")
    try:
        page = context.new_page()
        paths = page_of_each_kind(fixture_site(tmp_path_factory)) + ["no/such/page/"]
        assert "coverage/index.html" in paths and "contributing/index.html" in paths  # bars, aligned table
        for path in paths:
            response = page.goto(server.url(path.removesuffix("index.html")))
            assert "content-security-policy" not in response.headers
            policy = page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
            if path == "no/such/page/":   # its one inline script is allowed by hash, nothing wider
                assert re.fullmatch(re.escape(CSP).replace("script\\-src\\ 'self'", "script\\-src\\ 'self'\\ 'sha256-[A-Za-z0-9+/=]+'"),
                                    policy), policy
            else:
                assert policy == CSP, path
            assert page.locator("h1").count() == 1, path
        assert sorted(recorder.problems) == sorted([
            "HTTP 404: " + server.url("no/such/page/"),
            "console error: Failed to load resource: the server responded with a status of 404 (Not Found)"])
        recorder.problems.clear()
        page.evaluate("""() => {
            document.body.insertAdjacentHTML('beforeend', '<p id="rc-styled" style="color: rgb(255, 0, 0)">x</p>');
            const s = document.createElement('script'); s.textContent = 'window.inline = 1'; document.body.appendChild(s);
            const i = document.createElement('img'); i.src = 'https://example.invalid/pixel.png'; document.body.appendChild(i);
        }""")
        for _ in range(100):
            if len(recorder.problems) >= 3:
                break
            page.wait_for_timeout(50)
        assert page.evaluate("() => window.inline") is None
        assert page.evaluate("() => getComputedStyle(document.getElementById('rc-styled')).color") != "rgb(255, 0, 0)"
        seen = " ".join(recorder.problems)
        for directive in ("style-src", "script-src", "img-src"):
            assert f"CSP violation: {directive}" in seen, recorder.problems
        recorder.problems.clear()
        recorder.requests.clear()
    finally:
        context.close()
    recorder.check()


def test_every_link_to_the_site_resolves(server, tmp_path_factory):
    """Every <a>, <link> and <script> address of every page (relative or absolute) names a file."""
    from urllib.parse import urljoin

    from selectolax.lexbor import LexborHTMLParser as HTMLParser

    site = fixture_site(tmp_path_factory)
    broken = []
    for path in site_pages(site) + ["404.html"]:
        tree = HTMLParser((site / path).read_text(encoding="utf-8"))
        here = server.url(path.removesuffix("index.html"))
        for node in tree.css("a[href], link[href], script[src], [data-search], [data-worker], [data-matcher]"):
            for attribute in ("href", "src", "data-search", "data-worker", "data-matcher"):
                value = node.attributes.get(attribute)
                if not value or value.startswith(("#", "mailto:")):
                    continue
                target = urljoin(here, value).split("#", 1)[0].split("?", 1)[0]
                if not target.startswith(server.url()):
                    assert not target.startswith(server.origin), f"{path}: {value} leaves the site's sub-path"
                    continue
                local = site / target[len(server.url()):]
                if not (local.is_file() or (local / "index.html").is_file()):
                    broken.append((path, value))
    assert not broken, broken[:10]


def test_missing_page_shows_the_404_page_with_its_styles_at_any_depth(open_context, server):
    context, recorder = open_context()
    page = context.new_page()
    response = page.goto(server.url("entries/renamed-long-ago/and/deeper/"))
    assert response.status == 404
    assert page.locator("h1").inner_text() == "Page not found"
    assert page.locator(".rc-header").evaluate("e => getComputedStyle(e).position") in ("sticky", "fixed", "relative")
    page.locator("#rc-q").fill("CUDA out of memory")
    page.locator("#rc-results a.rc-result").first.wait_for()
    page.locator("#rc-results a.rc-result").first.click()
    page.wait_for_url(server.url("entries/cuda-out-of-memory/"))
    # the one expected 404 is the page itself; every asset and search file it needed was found
    expected = ["HTTP 404: " + server.url("entries/renamed-long-ago/and/deeper/"),
                "console error: Failed to load resource: the server responded with a status of 404 (Not Found)"]
    assert sorted(recorder.problems) == sorted(expected)
    recorder.problems.clear()


# -- (1) an entry page, light and dark -------------------------------------------------------------
@pytest.mark.parametrize("colour, expected", [("light", "default"), ("dark", "slate")])
def test_entry_page_follows_the_system_colour_scheme(open_context, server, colour, expected):
    context, recorder = open_context(color_scheme=colour)
    page = context.new_page()
    response = page.goto(server.url(ENTRY))
    assert response.headers["content-security-policy"] == CSP
    assert page.locator("h1").inner_text().startswith("ZeRO-3 weights saved")
    assert scheme(page) == expected
    assert page.locator("html").get_attribute("data-rc-scheme") == "auto"
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    dark_background = sum(int(v) for v in re.findall(r"\d+", background)[:3]) < 3 * 128
    assert dark_background == (colour == "dark"), background
    shot(page, f"entry-{colour}.png")
    assert recorder.requests[0] == server.url(ENTRY)
    assert all(urlsplit(url).hostname == "127.0.0.1" for url in recorder.requests)


def test_dark_scheme_is_set_before_the_deferred_script_runs(open_context, server):
    """palette.js (in <head>) promises no flash of the light palette: the body must be dark even if
    site.js (deferred, after the whole page is parsed) never ran."""
    context, recorder = open_context(color_scheme="dark")
    context.route("**/assets/site.*.js", lambda route: route.abort())
    page = context.new_page()
    page.goto(server.url(ENTRY))
    assert scheme(page) == "slate"
    recorder.problems = [p for p in recorder.problems if "/assets/site." not in p and "ERR_FAILED" not in p]


def test_palette_toggle_cycles_auto_light_dark_and_is_remembered(open_context, server):
    context, _recorder = open_context(color_scheme="dark")
    page = context.new_page()
    page.goto(server.url(ENTRY))
    toggle = page.locator(".rc-palette")
    assert toggle.is_visible()
    seen = []
    for _ in range(3):
        toggle.click()
        choice = page.locator("html").get_attribute("data-rc-scheme")
        seen.append((choice, scheme(page), toggle.get_attribute("aria-label")))
    assert seen == [("light", "default", "Colour scheme: light (change)"),
                    ("dark", "slate", "Colour scheme: dark (change)"),
                    ("auto", "slate", "Colour scheme: automatic (change)")]
    toggle.click()  # light, stored
    page.reload()
    assert scheme(page) == "default"  # the stored choice beats the system's dark scheme
    assert page.locator("html").get_attribute("data-rc-dark") == "0"
    toggle.click()
    toggle.click()  # auto again: now the system scheme counts, and its changes are followed
    page.emulate_media(color_scheme="light")
    page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'default'")
    page.emulate_media(color_scheme="dark")
    page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'slate'")
    shot(page, "entry-dark-toggled.png")


# -- (2) search ------------------------------------------------------------------------------------
#: a real message of the failure, with other parameter names and shapes than the entry's example
ZERO3_MESSAGE = ("RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM: size mismatch for "
                 "model.layers.31.self_attn.q_proj.weight: copying a param with shape torch.Size([0]) from checkpoint, "
                 "the shape in current model is torch.Size([4096, 4096]).")


def results_of(page, container: str) -> list[str]:
    return [href.rstrip("/").rsplit("/", 1)[-1] for href in
            page.locator(f"{container} a.rc-result").evaluate_all("els => els.map(e => e.getAttribute('href'))")]


def test_header_search_finds_the_entry_for_a_pasted_message(open_context, server):
    context, recorder = open_context()
    page = context.new_page()
    page.goto(server.url(ENTRY))
    box = page.locator("#rc-q")
    box.fill(ZERO3_MESSAGE)
    page.locator("#rc-results a.rc-result").first.wait_for()
    assert page.locator("#rc-results").is_visible()
    assert results_of(page, "#rc-results")[0] == COPIED_ENTRY
    assert box.get_attribute("aria-expanded") == "true"
    # the index is sharded: only the manifest, a few token shards and one doc shard were fetched
    fetched = [url for url in recorder.requests if "/search/" in url]
    assert any("manifest.json" in url for url in fetched)
    assert any("/search/t/" in url for url in fetched) and any("/search/d/" in url for url in fetched)
    assert not any("signatures.json" in url for url in fetched)
    shot(page, "search-dropdown.png")


@pytest.mark.parametrize("query, expected", [
    ("OutOfMemoryError", "cuda-out-of-memory"),                 # camelCase split: out of memory
    ("expandable segments", "cuda-out-of-memory"),              # parts of expandable_segments
    ("ChildFailedError SIGKILL received by PID 41", "torchrun-child-killed-sigkill"),
    ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=BROADCAST, NumelIn=1, NumelOut=1, "
     "Timeout(ms)=1800000) ran for 1800231 milliseconds before timing out.", "nccl-watchdog-collective-timeout"),
    ("dataloader worker pid(s) 99 exited", "dataloader-worker-exited-unexpectedly"),
])
def test_typed_queries_rank_the_right_entry_first(open_context, server, query, expected):
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url(""))
    page.locator("#rc-q").press_sequentially(query, delay=0)
    page.wait_for_function("(id) => { const a = document.querySelector('#rc-results a.rc-result');"
                           " return a && a.getAttribute('href').includes(id) }", arg=expected)
    assert results_of(page, "#rc-results")[0] == expected


def test_keyboard_arrow_down_and_enter_open_the_entry(open_context, server):
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url(""))
    box = page.locator("#rc-q")
    box.fill("zero_pp_rank_0 torch.Size([0]) from checkpoint")
    page.locator("#rc-results a.rc-result").first.wait_for()
    first = results_of(page, "#rc-results")[0]
    assert first == COPIED_ENTRY
    box.press("ArrowDown")
    assert page.locator("#rc-results a.rc-result").first.get_attribute("aria-selected") == "true"
    assert box.get_attribute("aria-activedescendant") == "rc-q-r0"
    box.press("Escape")
    assert page.locator("#rc-results").is_hidden()
    box.fill("size mismatch copying a param with shape torch.Size([0])")
    page.locator("#rc-results a.rc-result").first.wait_for()
    box.press("ArrowDown")
    with page.expect_navigation():
        box.press("Enter")
    assert page.url == server.url(ENTRY)
    assert page.locator("h1").inner_text().startswith("ZeRO-3 weights saved")


def test_enter_without_a_selection_opens_the_search_page(open_context, server):
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url(ENTRY))
    box = page.locator("#rc-q")
    box.fill("CUDA out of memory. Tried to allocate 20.00 MiB")
    with page.expect_navigation():
        box.press("Enter")
    assert page.url.startswith(server.url("search/?q="))
    page.locator("#rc-page-results a.rc-result").first.wait_for()
    assert results_of(page, "#rc-page-results")[0] == "cuda-out-of-memory"


def test_search_page_address_is_shareable(open_context, server):
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url("search/?q=" + quote(ZERO3_MESSAGE)))
    page.locator("#rc-page-results a.rc-result").first.wait_for()
    assert page.locator("#rc-page-q").input_value() == ZERO3_MESSAGE
    assert results_of(page, "#rc-page-results")[0] == COPIED_ENTRY
    shot(page, "search-page.png")
    # typing there rewrites the address, so it can be copied and shared: once typing pauses, not
    # once per key (each rewrite is a same-document navigation that refetches the favicon)
    page.evaluate("""() => { window.__rewrites = 0; const replace = history.replaceState.bind(history);
                             history.replaceState = (...a) => { window.__rewrites += 1; return replace(...a); }; }""")
    page.locator("#rc-page-q").fill("")
    page.locator("#rc-page-q").press_sequentially("NCCL watchdog timeout", delay=0)
    page.wait_for_function("() => location.search.includes('watchdog')")
    assert page.evaluate("window.__rewrites") <= 5, "the address was rewritten on (nearly) every key"
    assert "q=NCCL+watchdog+timeout" in page.url or "q=NCCL%20watchdog%20timeout" in page.url
    page.locator("#rc-page-results a.rc-result").first.wait_for()
    page.wait_for_function("() => document.querySelector('#rc-page-results a.rc-result')"
                           ".getAttribute('href').includes('nccl-watchdog')")
    shared = context.new_page()
    shared.goto(page.url)
    shared.locator("#rc-page-results a.rc-result").first.wait_for()
    assert results_of(shared, "#rc-page-results")[0] == "nccl-watchdog-collective-timeout"


def test_search_page_loads_its_index_before_the_first_key(open_context, server):
    """The search page is for searching: search.js and the manifest are fetched with the page,
    so the first key does not wait for them."""
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url("search/"))
    page.wait_for_function("() => window.RootcauseSearch !== undefined")
    page.wait_for_function("() => performance.getEntriesByType('resource').some(r => r.name.includes('manifest'))")
    assert page.locator("#rc-page-q").input_value() == ""


def test_search_page_shows_its_best_hit_before_the_rest_of_the_page_arrives(open_context, server):
    """The list is replaced as soon as the best hit's row is in; the other rows follow, best first,
    with aria-busy on the list until the whole page is there."""
    context, _recorder = open_context()
    page = context.new_page()
    held, asked = [], []

    def hold_all_but_the_first(route):
        asked.append(route.request.url)
        if len(asked) == 1:
            route.continue_()
        else:
            held.append(route)

    page.goto(server.url("search/"))
    page.wait_for_function("() => window.RootcauseSearch !== undefined")
    page.route("**/search/d/*.json*", hold_all_but_the_first)
    page.locator("#rc-page-q").fill("process")   # four of the fixture's five entries, in all three doc shards
    page.locator("#rc-page-results a.rc-result").first.wait_for()
    # the rows of the other hits are still held: the list is marked busy and shows only the first
    assert page.locator("#rc-page-results").get_attribute("aria-busy") == "true"
    partial = results_of(page, "#rc-page-results")
    assert 1 <= len(partial) < 4
    for _ in range(400):   # release what is held (the handler runs while Playwright waits)
        while held:
            held.pop().continue_()
        if page.locator("#rc-page-results").get_attribute("aria-busy") == "false":
            break
        page.wait_for_timeout(25)
    assert len(asked) > 1
    whole = results_of(page, "#rc-page-results")
    assert len(whole) == 4 and whole[:len(partial)] == partial   # added below, never reordered


def test_home_page_search_lists_results_under_the_box(open_context, server):
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url(""))
    page.locator("#rc-home-q").press_sequentially("NCCL_WATCHDOG timeout", delay=0)
    page.locator("#rc-home-results a.rc-result").first.wait_for()
    assert results_of(page, "#rc-home-results")[0] == "nccl-watchdog-collective-timeout"


def test_search_without_match_says_so(open_context, server):
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url("search/?q=" + quote("qwertyuiop zxcvbnm")))
    page.locator("#rc-page-results .rc-result--none").wait_for()


# -- (3) diagnose ----------------------------------------------------------------------------------
OOM_RANK2 = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 2 has a total capacity of "
             "79.15 GiB of which 2.01 GiB is free. Including non-PyTorch memory, this process has 77.13 GiB memory in "
             "use. Of the allocated memory 74.40 GiB is allocated by PyTorch, and 1.10 GiB is reserved by PyTorch but "
             "unallocated.")


def cascade_log() -> str:
    lines = ["[rank0]: step 1200 | loss 2.113 | lr 3.0e-04", "[rank2]: step 1200 | loss 2.120 | lr 3.0e-04",
             "[rank2]: Traceback (most recent call last):", '[rank2]:   File "/workspace/train.py", line 181, in main',
             "[rank2]:     loss.backward()", "[rank2]: " + OOM_RANK2]
    for rank in (0, 1, 3):
        lines.append(f"[rank{rank}]:[E1104 03:22:09.552318040 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
                     f"collective operation timeout: WorkNCCL(SeqNum=20585, OpType=ALLREDUCE, NumelIn=46797824, "
                     f"NumelOut=46797824, Timeout(ms)=600000) ran for 600071 milliseconds before timing out.")
    return "\n".join(lines) + "\n"


def signature_requests(recorder) -> list[str]:
    return [url for url in recorder.requests if url.split("?")[0].endswith("/search/signatures.json")]


def open_diagnose(open_context, server):
    """The diagnose page, its worker started the way a reader starts it: by focusing the box. Until
    then nothing of the matcher is fetched (the signatures are ~100 KB on the real site)."""
    context, recorder = open_context()
    page = context.new_page()
    page.goto(server.url("diagnose/"), wait_until="load")
    page.wait_for_timeout(200)
    assert signature_requests(recorder) == [], "the signatures were fetched before the box was used"
    page.locator("#rc-log").focus()
    # a worker's requests are not in the page's performance timeline: wait until it has asked
    for _ in range(100):
        if signature_requests(recorder):
            break
        page.wait_for_timeout(50)
    else:
        raise AssertionError("the diagnose worker never requested the signatures")
    return page, recorder


def wait_for_report(page):
    page.locator("#rc-report p.rc-muted").first.wait_for()
    page.wait_for_function("() => document.getElementById('rc-status').textContent === ''")


def test_diagnose_puts_the_cause_first_and_names_the_first_failing_rank(open_context, server):
    page, recorder = open_diagnose(open_context, server)
    page.locator("#rc-log").fill(cascade_log())
    before = len(recorder.requests)
    page.locator("#rc-diagnose button[type=submit]").click()
    wait_for_report(page)
    findings = page.locator("#rc-report .rc-finding")
    assert findings.count() == 2
    first = findings.nth(0)
    assert "rc-finding--first" in first.get_attribute("class")
    assert first.locator("h2 a").get_attribute("href").endswith("entries/cuda-out-of-memory/")
    assert first.locator("p.rc-finding__meta").inner_text() == ("cause · Likely: a specific message of this entry "
                                                                "matched · rank 2")
    assert "[rank 2]" in first.locator("pre.rc-lines").inner_text()
    # how to confirm the cause on this machine comes before the fix
    text = first.inner_text()
    assert "nvidia-smi" in first.locator("pre.rc-check").inner_text()
    assert text.index("Confirm:") < text.index("Then fix:")
    second = findings.nth(1)
    assert second.locator("h2 a").get_attribute("href").endswith("entries/nccl-watchdog-collective-timeout/")
    assert "consequence of a failure elsewhere" in second.inner_text()
    # the report leads with one sentence: what failed first, where, what the others show
    headline = page.locator("#rc-report > *").first
    assert "rc-headline" in headline.get_attribute("class")
    assert headline.text_content() == ("Rank 2 failed first: CUDA out of memory. Tried to allocate ...: the GPU ran out "
                                     "of memory. Rank 0, rank 1 and rank 3 then show consequences of it.")
    assert page.evaluate("getComputedStyle(document.querySelector('.rc-headline__first')).fontWeight") == "700"
    assert page.locator("#rc-report .rc-scanned").inner_text().startswith("Scanned 9 lines")
    shot(page, "diagnose.png")
    new = recorder.requests[before:]
    assert all(not url.startswith(server.origin + "/") or "/search/signatures.json" in url for url in new), new
    assert not recorder.foreign()
    # the worker fetched this site's own signature file, nothing else
    assert any("/search/signatures.json" in url for url in recorder.requests)


def test_diagnose_runs_on_paste(open_context, server):
    page, _recorder = open_diagnose(open_context, server)
    textarea = page.locator("#rc-log")
    textarea.fill("[rank5]: " + OOM_RANK2)
    textarea.dispatch_event("paste")
    wait_for_report(page)
    assert page.locator("#rc-report .rc-headline").inner_text().startswith("Rank 5 failed first: CUDA out of memory")


def test_diagnose_fetches_nothing_of_the_matcher_until_the_box_is_used(open_context, server):
    """The signatures (~100 KB on the real site), the matcher and the worker load on the first focus
    of the box (or a paste, a drop, a file chosen), once; never with the page."""
    context, recorder = open_context()
    page = context.new_page()
    page.goto(server.url("diagnose/"), wait_until="load")
    page.wait_for_timeout(300)
    matcher_parts = ("signatures.json", "matcher", "re2js", "diagnose-worker")
    assert not [u for u in recorder.requests if any(part in u for part in matcher_parts)], recorder.requests
    page.locator("#rc-log").focus()
    for _ in range(100):
        if signature_requests(recorder):
            break
        page.wait_for_timeout(50)
    assert len(signature_requests(recorder)) == 1
    page.locator("#rc-log").blur()
    page.locator("#rc-log").focus()
    page.locator("#rc-log").fill(cascade_log())
    page.locator("#rc-diagnose button[type=submit]").click()
    wait_for_report(page)
    assert page.locator("#rc-report .rc-finding").count() == 2
    assert len(signature_requests(recorder)) == 1
    # a paste into a page whose box was never focused starts the worker too
    other = context.new_page()
    before = len(signature_requests(recorder))
    other.goto(server.url("diagnose/"), wait_until="load")
    other.locator("#rc-log").evaluate("""(box, text) => {
        const data = new DataTransfer();
        data.setData("text/plain", text);
        box.dispatchEvent(new ClipboardEvent("paste", {clipboardData: data, bubbles: true, cancelable: true}));
    }""", "[rank0]: step 1 loss 2.0\n" * 1000 + "[rank5]: " + OOM_RANK2 + "\n")  # long: the page takes it over
    other.wait_for_selector(".rc-finding")
    assert len(signature_requests(recorder)) == before + 1


CONFIDENCE_RANK = {"Strong match": 3, "Likely": 2, "Weak": 1, "A result of the failure above, not a second cause": 0}


def test_diagnose_report_leads_with_the_first_failure_in_the_strongest_type(open_context, server):
    """What failed first is the report's first sentence, in the largest and boldest type on the page,
    and names its entry as a link; confidence is in words, and a consequence never reads surer than
    the cause listed above it (it says it follows from it, and links to it)."""
    page, _recorder = open_diagnose(open_context, server)
    page.locator("#rc-log").fill(cascade_log())
    page.locator("#rc-diagnose button[type=submit]").click()
    wait_for_report(page)
    assert "rc-headline" in page.locator("#rc-report > *").first.get_attribute("class")
    lead = page.locator("#rc-report .rc-headline__first")
    assert lead.inner_text().startswith("Rank 2 failed first: CUDA out of memory")
    assert lead.locator("a").get_attribute("href").endswith("entries/cuda-out-of-memory/")
    assert page.locator("#rc-report .rc-headline__then").inner_text() == ("Rank 0, rank 1 and rank 3 then show "
                                                                           "consequences of it.")
    styles = page.evaluate("""() => {
        const lead = document.querySelector('.rc-headline__first');
        const size = e => parseFloat(getComputedStyle(e).fontSize);
        const weight = e => parseInt(getComputedStyle(e).fontWeight, 10);
        const texts = [...document.querySelectorAll('main article *')].filter(e => e !== lead && !lead.contains(e)
            && e.checkVisibility() && [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()));
        return {size: size(lead), weight: weight(lead), color: getComputedStyle(lead).color,
                others: texts.map(e => [e.tagName + '.' + e.className, size(e), weight(e)]),
                muted: getComputedStyle(document.querySelector('.rc-finding__meta')).color};
    }""")
    assert styles["weight"] >= 700
    assert all(size <= styles["size"] and weight <= styles["weight"] for _name, size, weight in styles["others"]), \
        [o for o in styles["others"] if o[1] > styles["size"] or o[2] > styles["weight"]]
    assert styles["color"] != styles["muted"]
    findings = page.locator("#rc-report .rc-finding")
    words = findings.locator(".rc-confidence").all_inner_texts()
    assert words == ["Likely: a specific message of this entry matched",
                     "A result of the failure above, not a second cause"]
    roles = findings.locator(".rc-role").all_inner_texts()
    levels = [CONFIDENCE_RANK[w.split(":")[0]] for w in words]
    for i, role in enumerate(roles):
        if role == "cause":
            assert all(levels[i] >= levels[j] for j in range(i + 1, len(roles)) if roles[j] != "cause"), words
    follows = findings.nth(1).locator(".rc-follows a")
    assert follows.get_attribute("href").endswith("entries/cuda-out-of-memory/")


def test_diagnose_reads_a_gzip_file_without_any_request(open_context, server):
    page, recorder = open_diagnose(open_context, server)
    page.locator("#rc-log").fill("warm-up: no failure here")
    page.locator("#rc-diagnose button[type=submit]").click()
    page.locator("#rc-report .admonition.note").wait_for()  # "No failure found."
    log = ("[rank0]: step 1 loss 9.1\n" * 2000 + "\n".join([
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", "=" * 60, "pretrain.py FAILED",
        "-" * 60, "Root Cause (first observed failure):", "[0]:", "  time      : 2025-02-01_08:00:00",
        "  host      : dgx-a100-11", "  rank      : 6 (local_rank: 6)", "  exitcode  : -9 (pid: 90210)",
        "  error_file: <N/A>", "  traceback : Signal 9 (SIGKILL) received by PID 90210", "=" * 60]) + "\n")
    before = len(recorder.requests)
    page.locator("#rc-file").set_input_files(files=[{"name": "train.log.gz", "mimeType": "application/gzip",
                                                      "buffer": gzip.compress(log.encode())}])
    page.wait_for_function("() => document.querySelector('#rc-report .rc-finding') !== null")
    wait_for_report(page)
    assert page.locator("#rc-report .rc-scanned").inner_text().startswith("Scanned 2,013 lines of train.log.gz in ")
    first = page.locator("#rc-report .rc-finding").first
    assert first.locator("h2 a").get_attribute("href").endswith("entries/torchrun-child-killed-sigkill/")
    assert "Strong match: the log prints this entry's own error message" in first.inner_text()
    assert page.locator("#rc-report .rc-headline").inner_text().startswith("Rank 6 on dgx-a100-11 failed first")
    assert "Diagnosed train.log.gz" in page.locator("#rc-log").get_attribute("placeholder")
    assert recorder.requests[before:] == [], "diagnosing a file made a request"


def test_diagnose_accepts_a_file_dropped_on_the_box(open_context, server):
    page, recorder = open_diagnose(open_context, server)
    payload = gzip.compress(cascade_log().encode())
    transfer = page.evaluate_handle("""(bytes) => {
        const transfer = new DataTransfer();
        transfer.items.add(new File([new Uint8Array(bytes)], 'node-3.log.gz', {type: 'application/gzip'}));
        return transfer;
    }""", list(payload))
    before = len(recorder.requests)
    page.dispatch_event("#rc-diagnose", "dragover", {"dataTransfer": transfer})
    assert "rc-dragging" in page.locator("#rc-diagnose").get_attribute("class")
    page.dispatch_event("#rc-diagnose", "drop", {"dataTransfer": transfer})
    page.wait_for_function("() => document.querySelector('#rc-report .rc-scanned') !== null")
    assert "rc-dragging" not in page.locator("#rc-diagnose").get_attribute("class")
    assert page.locator("#rc-report .rc-scanned").inner_text().startswith("Scanned 9 lines of node-3.log.gz")
    assert page.locator("#rc-report .rc-headline").inner_text().startswith("Rank 2 failed first")
    assert page.locator("#rc-report .rc-first-detail").inner_text().startswith("Line 6: torch.OutOfMemoryError")
    assert recorder.requests[before:] == [], recorder.requests


def test_diagnose_reads_a_multi_member_gzip_file_as_the_command_line_does(open_context, server):
    """`cat day1.log.gz day2.log.gz > all.log.gz` (or pigz -i) makes several gzip members in one
    file; Python's gzip module reads them all, so the browser must too."""
    page, _recorder = open_diagnose(open_context, server)
    first = gzip.compress(b"[rank0]: step 1 loss 9.1\n" * 10)
    second = gzip.compress(("[rank4]: " + OOM_RANK2 + "\n").encode())
    page.locator("#rc-file").set_input_files(files=[{"name": "all.log.gz", "mimeType": "application/gzip",
                                                      "buffer": first + second}])
    page.wait_for_function("() => document.querySelector('#rc-report .rc-muted') !== null"
                           " || document.getElementById('rc-status').textContent.startsWith('Could not')")
    assert page.locator("#rc-status").inner_text() == ""
    assert page.locator("#rc-report .rc-scanned").inner_text().startswith("Scanned 11 lines of all.log.gz")
    assert page.locator("#rc-report .rc-headline").inner_text().startswith("Rank 4 failed first")
    assert page.locator("#rc-report .rc-first-detail").inner_text().startswith("Line 11: ")


WORKER_REPORT = """async ([bytes, gz]) => {
    const form = document.getElementById('rc-diagnose');
    const url = new URL(form.dataset.worker, document.baseURI);
    url.searchParams.set('re2js', new URL(form.dataset.re2js, document.baseURI).href);
    url.searchParams.set('matcher', new URL(form.dataset.matcher, document.baseURI).href);
    url.searchParams.set('signatures', new URL(form.dataset.signatures, document.baseURI).href);
    const worker = new Worker(url.href);
    const buffer = new Uint8Array(bytes).buffer;
    try {
        return await new Promise((resolve, reject) => {
            worker.onmessage = (e) => {
                if (e.data.type === 'report') resolve(e.data.report);
                else if (e.data.type === 'error') reject(new Error(e.data.message));
            };
            worker.postMessage({type: 'run', id: 1, buffer, gzip: gz, top: 5}, [buffer]);
        });
    } finally { worker.terminate(); }
}"""


def files_for_parity() -> dict[str, bytes]:
    cascade = cascade_log().encode()
    false_cut = gzip.compress(b"noise \x1f\x8b\x08 stored verbatim at level 0\n" * 3, compresslevel=0)
    return {
        "cascade.log": cascade,
        "cascade-crlf.log": cascade.replace(b"\n", b"\r\n"),
        "cascade.log.gz": gzip.compress(cascade),
        "three-members.log.gz": b"".join(gzip.compress(part) for part in (cascade[:200], cascade[200:900],
                                                                           cascade[900:])),
        "false-cut.log.gz": false_cut + gzip.compress(("[rank4]: " + OOM_RANK2 + "\n").encode()),
        "invalid-utf8.log": b"[rank1]: \xff\xfe caf\xc3 " + OOM_RANK2.encode() + b"\n[rank0]: \xe2\x82 ok\n",
        "no-final-newline.log": cascade.rstrip(b"\n"),
        # Python keeps a byte-order mark as text (U+FEFF before the first prefix): so must the browser
        "byte-order-mark.log": b"\xef\xbb\xbf" + cascade,
        # zero bytes between and after members are padding, which Python's gzip module skips
        "padded-members.log.gz": gzip.compress(cascade[:300]) + b"\0" + gzip.compress(cascade[300:700]) +
                                 b"\0" * 40 + gzip.compress(cascade[700:]) + b"\0" * 5,
    }


@pytest.mark.parametrize("name", list(files_for_parity()))
def test_browser_report_of_a_file_equals_the_command_line_report(open_context, server, tmp_path_factory, tmp_path,
                                                                 name):
    """What the page's worker reports for a file (read, gunzipped, decoded in the browser) is what
    `rootcause diagnose --site` reports for the same file."""
    payload = files_for_parity()[name]
    path = tmp_path / name
    path.write_bytes(payload)
    python = PythonDiagnosis(signature_data(fixture_site(tmp_path_factory))).report_files([path], 5)
    page, _recorder = open_diagnose(open_context, server)
    browser = page.evaluate(WORKER_REPORT, [list(payload), payload[:2] == b"\x1f\x8b"])
    assert browser == python
    assert python["results"], "the file should contain a known failure"


def test_diagnose_reports_nothing_found(open_context, server):
    page, _recorder = open_diagnose(open_context, server)
    page.locator("#rc-log").fill("[rank0]: step 1 loss 2.0\n[rank1]: step 1 loss 2.0\n")
    page.locator("#rc-diagnose button[type=submit]").click()
    page.locator("#rc-report .admonition.note").wait_for()
    assert page.locator("#rc-report .rc-headline").inner_text() == "No failure found."


# -- (4) without JavaScript ------------------------------------------------------------------------
ENTRY_SECTIONS = ["quick-answer", "signatures", "symptoms", "root-cause", "misdiagnosis", "confirm", "fix",
                  "prevention", "examples", "affected", "faq", "related", "references"]


def test_entry_page_reads_fully_without_javascript(open_context, server):
    context, recorder = open_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(server.url(ENTRY))
    for section in ENTRY_SECTIONS:
        locator = page.locator(f"section#{section}")
        assert locator.is_visible(), section
        assert locator.inner_text().strip(), section
    assert page.locator("#fix code").first.is_visible()
    assert page.locator("#faq details[open]").count() == 1
    assert page.locator("html").get_attribute("class") == "no-js"
    # what needs JavaScript stays out of the way
    assert page.locator(".rc-palette").is_hidden()
    assert page.locator("[data-copy]").first.is_hidden()
    # the header search still works as a form: it leads to the search page
    assert page.locator("form.rc-search").get_attribute("action").endswith("search/")
    shot(page, "entry-nojs.png")
    # pages that only work with JavaScript say so, and point at what works without it
    page.goto(server.url("diagnose/"))
    assert "The diagnosis runs in your browser and needs JavaScript" in page.locator("body").inner_text()
    page.goto(server.url("search/?q=oom"))
    assert "Search runs in your browser and needs JavaScript" in page.locator("body").inner_text()
    assert not any(url.endswith(".js") for url in recorder.requests), "scripts were fetched with JavaScript off"


def test_without_javascript_the_diagnose_form_sends_nothing(open_context, server):
    """Without JavaScript the form is not offered at all, and its textarea has no name to submit."""
    context, recorder = open_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(server.url("diagnose/"))
    assert not page.locator("#rc-diagnose").is_visible()
    assert page.locator("#rc-log").get_attribute("name") is None
    page.locator("#rc-log").evaluate("box => { box.value = '[rank0]: HF_TOKEN=hf_secret123 CUDA out of memory'; }")
    page.locator("#rc-diagnose").evaluate("form => form.requestSubmit()")
    page.wait_for_load_state()
    assert not [url for url in recorder.requests if "secret123" in url], recorder.requests


# -- (5) copy buttons ------------------------------------------------------------------------------
def test_copy_buttons_appear_and_copy_the_code(open_context, server):
    context, _recorder = open_context()
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.origin)
    page = context.new_page()
    page.goto(server.url(ENTRY))
    buttons = page.locator("[data-copy]")
    assert buttons.count() >= 3
    assert all(buttons.nth(i).is_visible() for i in range(buttons.count()))
    command = page.locator("#fix .rc-code").first
    expected = command.locator("code").text_content()
    assert expected.startswith("python <checkpoint_dir>/zero_to_fp32.py")
    command.locator("[data-copy]").click()
    page.wait_for_function("() => document.querySelector('#fix [data-copy]').classList.contains('rc-copied')")
    assert page.evaluate("navigator.clipboard.readText()") == expected
    assert command.locator("[data-copy]").get_attribute("title") == "Copied"
    signature = page.locator("#signature-1 .rc-code")
    signature.locator("[data-copy]").click()
    page.wait_for_function("() => document.querySelector('#signature-1 [data-copy]').classList.contains('rc-copied')")
    assert page.evaluate("navigator.clipboard.readText()") == signature.locator("code").text_content()
    assert page.evaluate("navigator.clipboard.readText()").startswith("size mismatch for {name}")


def test_a_huge_paste_goes_to_the_worker_without_filling_the_box(open_context, server):
    """Laying out megabytes in the textarea froze the page for seconds: the box shows an excerpt."""
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url("diagnose/"))
    noise = "".join(f"[rank{i % 4}]: step {i} loss 2.31\n" for i in range(60_000))
    text = noise + "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    page.locator("#rc-log").evaluate("""(box, text) => {
        const data = new DataTransfer();
        data.setData("text/plain", text);
        box.dispatchEvent(new ClipboardEvent("paste", {clipboardData: data, bubbles: true, cancelable: true}));
    }""", text)
    page.wait_for_selector(".rc-finding")
    shown = page.locator("#rc-log").input_value()
    assert len(shown) < 25_000 and "characters pasted; all are diagnosed" in shown
    assert "cuda-out-of-memory" in page.locator(".rc-finding h2 a").first.get_attribute("href")
    page.locator("#rc-diagnose button[type=submit]").click()  # diagnosing again uses the whole paste
    page.wait_for_function("() => document.querySelector('#rc-status').textContent === ''")
    assert "cuda-out-of-memory" in page.locator(".rc-finding h2 a").first.get_attribute("href")



# -- logs of any size: the worker streams a file (issue 9, item 5) ----------------------------------
WORKER_FILE_REPORT = """async () => {
    // the file the page was given, read again by a worker of its own, whose messages are kept
    const file = document.getElementById('rc-file').files[0];
    const form = document.getElementById('rc-diagnose');
    const url = new URL(form.dataset.worker, document.baseURI);
    for (const key of ['re2js', 'matcher', 'signatures'])
        url.searchParams.set(key, new URL(form.dataset[key], document.baseURI).href);
    const worker = new Worker(url.href);
    const progress = [];
    try {
        return await new Promise((resolve, reject) => {
            worker.onmessage = (e) => {
                if (e.data.type === 'progress') progress.push([e.data.bytes, e.data.total]);
                else if (e.data.type === 'report') resolve({report: e.data.report, unread: e.data.unread, progress});
                else if (e.data.type === 'error') reject(new Error(e.data.message));
            };
            worker.postMessage({type: 'run', id: 1, file, top: 5});
        });
    } finally { worker.terminate(); }
}"""

WATCH_STATUS = """() => {
    window.__statuses = [];
    const status = document.getElementById('rc-status');
    new MutationObserver(() => window.__statuses.push(status.textContent))
        .observe(status, {childList: true, characterData: true, subtree: true});
}"""


def big_log(megabytes: int) -> bytes:
    """Training noise from 8 ranks, then rank 2's out-of-memory error and the others' watchdogs."""
    line = "[rank{}]: step {} | loss 2.3{:03d} | lr 3.0e-04 | tokens/s 41213 | grad_norm 0.9{:03d}\n"
    noise = "".join(line.format(i % 8, i, i % 997, i % 991) for i in range(20_000)).encode()
    body = noise * (megabytes * (1 << 20) // len(noise))
    return body + cascade_log().encode()


def choose_file(page, path):
    page.evaluate(WATCH_STATUS)
    page.locator("#rc-file").set_input_files(str(path))


@pytest.mark.parametrize("name", ["big.log", "big.log.gz"])
def test_a_log_of_64_mb_is_streamed_and_its_failure_near_the_end_found(open_context, server, tmp_path_factory,
                                                                        tmp_path, name):
    """A 560 MB log was read into one string (more than a JavaScript string holds: "Scanned 0
    lines"), a large .gz into one buffer ("Failed to fetch"). The worker now reads any file in
    chunks, through DecompressionStream for .gz and a streaming TextDecoder, feeding the matcher
    as it goes, and reports progress by bytes. Its report equals the command line's."""
    data = big_log(64)
    path = tmp_path / name
    path.write_bytes(gzip.compress(data, compresslevel=1) if name.endswith(".gz") else data)
    python = PythonDiagnosis(signature_data(fixture_site(tmp_path_factory))).report_files([path], 5)
    assert python["first_failure"]["line"] > 800_000 and python["results"][0]["entry"] == "cuda-out-of-memory"
    page, _recorder = open_diagnose(open_context, server)
    choose_file(page, path)
    page.locator("#rc-report .rc-scanned").wait_for(timeout=120_000)
    lines = python["lines_scanned"]
    assert page.locator("#rc-report .rc-scanned").inner_text().startswith(f"Scanned {lines:,} lines of {name} in ")
    assert page.locator("#rc-report .rc-headline").inner_text().startswith("Rank 2 failed first: CUDA out of memory")
    assert page.locator("#rc-report .rc-unread").count() == 0
    statuses = page.evaluate("() => window.__statuses")
    assert any(re.match(rf"Scanning… \d+% of {re.escape(name)} \([\d.,]+ MB of [\d.,]+ MB\)", t) for t in statuses), statuses
    browser = page.evaluate(WORKER_FILE_REPORT)
    assert browser["unread"] is None
    assert browser["report"] == python
    sizes = [bytes_read for bytes_read, _total in browser["progress"]]
    assert len(sizes) >= 8 and sizes == sorted(sizes) and browser["progress"][-1][1] == path.stat().st_size


def test_what_cannot_be_read_is_said_plainly_and_the_rest_is_reported(open_context, server, tmp_path):
    """A .gz that is corrupt (or cut short) after its first part: the page says how far it read and
    why, and reports what it read; the command line refuses such a file outright (exit 2)."""
    good = gzip.compress(cascade_log().encode())
    corrupt = good + (HOSTILE / "corrupt-deflate.log.gz").read_bytes() + gzip.compress(b"[rank0]: step 2\n")
    truncated = gzip.compress(cascade_log().encode() + b"[rank0]: step 2 loss 9.1\n" * 50_000)
    truncated = truncated[: len(truncated) // 2]
    hostile = (HOSTILE / "corrupt-deflate.log.gz").read_bytes()
    for name, payload, why, at in (("corrupt.log.gz", corrupt, f"the gzip data is not valid after byte {len(good)} ",
                                    len(good)),
                                   ("truncated.log.gz", truncated, "the file ends inside a gzip member",
                                    len(truncated)),
                                   ("corrupt-deflate.log.gz", hostile, "the gzip data is not valid after byte 0 ", 0)):
        path = tmp_path / name
        path.write_bytes(payload)
        page, _recorder = open_diagnose(open_context, server)
        choose_file(page, path)
        page.locator("#rc-report .rc-unread").wait_for()
        warning = page.locator("#rc-report > *").first
        assert "rc-unread" in warning.get_attribute("class")
        text = warning.inner_text()
        assert text.startswith(f"Not all of {name} was read: {why}"), text
        assert text.endswith(f" lines read up to byte {at:,} of {len(payload):,}."), text
        if name != "corrupt-deflate.log.gz":
            assert page.locator("#rc-report .rc-headline").inner_text().startswith("Rank 2 failed first")
        browser = page.evaluate(WORKER_FILE_REPORT)
        assert browser["unread"]["total"] == len(payload) and browser["unread"]["reason"].startswith(why)
        assert browser["unread"]["at"] == at


# -- entry-page navigation: contents, permalinks, jump line, type sizes, focus ----------------------
def test_entry_contents_sit_beside_the_text_and_stay_in_view_on_a_wide_screen(open_context, server):
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url(ENTRY))
    toc = page.locator("nav.rc-toc")
    links = toc.locator("a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    sections = page.locator("article > section[id]").evaluate_all("s => s.map(e => '#' + e.id)")
    assert links == [s for s in sections if s != "#quick-answer"]
    box, text = toc.bounding_box(), page.locator("#root-cause").bounding_box()
    assert box["x"] > text["x"] + text["width"]          # beside the text, not above it
    page.locator("#references").scroll_into_view_if_needed()
    moved = toc.bounding_box()
    assert 0 <= moved["y"] < 200                          # sticky: still at the top of the view
    toc.locator("a[href='#fix']").click()
    assert page.evaluate("location.hash") == "#fix"
    assert abs(page.locator("#fix").bounding_box()["y"]) < 150


def test_entry_contents_are_one_compact_block_on_a_phone_after_the_quick_answer(open_context, server):
    context, _recorder = open_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(server.url(ENTRY))
    toc, quick = page.locator("nav.rc-toc").bounding_box(), page.locator("#quick-answer").bounding_box()
    assert toc["y"] > quick["y"] + quick["height"] - 1 and toc["height"] < 160
    assert page.locator(".rc-title").is_visible()         # the site name is not hidden on a phone
    header = page.locator(".rc-header").bounding_box()
    assert header["height"] <= 82, header                 # one row of tabs, scrolled sideways if needed
    shot(page, "entry-phone.png")


def test_every_section_heading_has_a_permalink_and_the_quick_answer_is_body_size(open_context, server):
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url(ENTRY))
    for section in page.locator("article > section[id] > h2").all():
        link = section.locator("a.headerlink")
        section_id = section.evaluate("h => h.parentElement.id")
        assert link.get_attribute("href") == f"#{section_id}"
    quick = page.locator("#quick-answer > p:not(.admonition-title)").first.evaluate("p => parseFloat(getComputedStyle(p).fontSize)")
    body = page.locator("#root-cause > p").first.evaluate("p => parseFloat(getComputedStyle(p).fontSize)")
    assert quick >= body
    jump = page.locator("#quick-answer .rc-jump a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert "#fix" in jump and set(jump) <= {"#confirm", "#fix", "#prevention"}
    width = page.locator("#root-cause > p").first.evaluate(
        "p => p.getBoundingClientRect().width / parseFloat(getComputedStyle(p).fontSize)")
    assert width < 48   # about 80 characters


def test_keyboard_focus_is_visible_on_header_buttons_and_summaries(open_context, server):
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url(ENTRY))
    for selector in (".rc-repo", "details.rc-example > summary"):
        page.locator(selector).first.focus()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")
        style = page.locator(selector).first.evaluate("e => getComputedStyle(e).outlineStyle + ' ' + getComputedStyle(e).outlineWidth")
        assert style.startswith("solid") and not style.endswith(" 0px"), (selector, style)


def test_the_entries_index_filters_by_system_category_severity_and_phase(open_context, server):
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url("entries/"))
    total = page.locator(".rc-card").count()
    assert page.locator("form.rc-filter").is_visible()
    page.select_option("select[name=severity]", "critical")
    visible = page.locator(".rc-card:visible")
    assert 0 < visible.count() < total
    assert set(visible.evaluate_all("cs => cs.map(c => c.dataset.severity)")) == {"critical"}
    assert page.locator(".rc-filter__count").inner_text() == f"{visible.count()} of {total} entries"
    page.select_option("select[name=severity]", "")
    assert page.locator(".rc-card:visible").count() == total


def test_the_entries_index_filters_by_system_and_phase_and_keeps_the_choice_in_the_address(open_context, server):
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url("entries/"))
    cards = page.locator(".rc-card")
    total = cards.count()
    attrs = cards.evaluate_all("cs => cs.map(c => [c.dataset.system.split(' '), c.dataset.phase])")
    expected = sum(1 for systems, phase in attrs if "pytorch" in systems and phase == "data-loading")
    assert 0 < expected < total
    # every control is labelled, reachable by keyboard and at least 24 px tall
    for select in page.locator("form.rc-filter select").all():
        assert select.evaluate("s => s.labels.length === 1 && s.labels[0].textContent.trim().length > 0")
        assert select.bounding_box()["height"] >= 24
    page.locator("form.rc-filter select[name=system]").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.name") == "category"
    page.select_option("select[name=system]", "pytorch")
    page.select_option("select[name=phase]", "data-loading")
    visible = page.locator(".rc-card:visible")
    assert visible.count() == expected
    for systems, phase in visible.evaluate_all("cs => cs.map(c => [c.dataset.system.split(' '), c.dataset.phase])"):
        assert "pytorch" in systems and phase == "data-loading"
    assert page.locator(".rc-filter__count").inner_text() == f"{expected} of {total} entries"
    assert "system=pytorch" in page.url and "phase=data-loading" in page.url
    # the address is the filtered view: opened again, it shows the same entries
    linked = context.new_page()
    linked.goto(page.url)
    assert linked.locator("select[name=phase]").input_value() == "data-loading"
    assert linked.locator(".rc-card:visible").count() == expected
    reset = linked.locator(".rc-filter__reset")
    assert reset.is_visible() and reset.bounding_box()["height"] >= 24
    reset.click()
    assert linked.locator(".rc-card:visible").count() == total
    assert "phase=" not in linked.url and reset.is_hidden()
    # an unknown value in the address is ignored, not an empty list
    linked.goto(server.url("entries/?system=nonesuch"))
    assert linked.locator(".rc-card:visible").count() == total


def test_the_entries_index_is_a_plain_list_by_severity_without_javascript(open_context, server, tmp_path_factory):
    context, _recorder = open_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(server.url("entries/"))
    assert not page.locator("form.rc-filter").is_visible()
    groups = page.locator("section.rc-severity-group").evaluate_all("s => s.map(e => e.id)")
    assert groups and all(g.startswith("severity-") for g in groups)
    # each entry once; every severity badge on an entry page points at an anchor that exists here
    ids = page.locator(".rc-card a.rc-card__title").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert len(ids) == len(set(ids))
    entries = [p for p in (fixture_site(tmp_path_factory) / "entries").iterdir() if (p / "index.html").is_file()]
    assert len(ids) == len(entries)
    # all of them, even when the address asks for a filtered view: without JS there is none
    page.goto(server.url("entries/?system=pytorch&phase=data-loading"))
    assert page.locator(".rc-card:visible").count() == len(ids)
    page.goto(server.url("entries/"))
    page.goto(server.url(ENTRY))
    href = page.locator("a.rc-badge--severity").get_attribute("href")
    assert href.split("#")[1] in groups


def test_the_frequency_tables_filter_by_words_and_by_whether_an_entry_explains_the_failure(open_context, server):
    """The fixture site has five entries and the whole study. Words typed narrow every table to the
    rows that hold them all (the class's name counts, though a covered row shows its entry's
    title); the select keeps rows with or without an entry; a table left empty goes with its heading."""
    context, _recorder = open_context()
    page = context.new_page()
    page.goto(server.url("frequency/"))
    form = page.locator("form[data-row-filter]")
    assert form.is_visible()
    rows = page.locator(".rc-rows tbody tr")
    total = rows.count()
    assert page.locator(".rc-rows:visible").count() > 2
    form.locator("input[name=q]").fill("cuda out-of-memory")   # the class cuda-out-of-memory, shown by its title
    visible = page.locator(".rc-rows tbody tr:visible")
    assert 0 < visible.count() < total
    assert set(visible.evaluate_all("rs => rs.map(r => r.dataset.failure)")) == {"cuda-out-of-memory"}
    assert form.locator("output").inner_text() == f"{visible.count()} of {total} rows"
    shown = page.locator(".rc-rows:visible")
    assert shown.count() == visible.count()   # each section left holds the one row
    assert all(s.locator("h2").is_visible() for s in shown.all())
    form.locator("input[name=q]").fill("")
    page.select_option("form[data-row-filter] select[name=entry]", "no")
    entries = set(visible.evaluate_all("rs => rs.map(r => r.dataset.entry)"))
    assert entries == {"no"} and 0 < visible.count() < total
    assert page.locator(".rc-rows tbody tr:visible a[href*='entries/']").count() == 0
    page.select_option("form[data-row-filter] select[name=entry]", "yes")
    assert set(visible.evaluate_all("rs => rs.map(r => r.dataset.entry)")) == {"yes"}
    form.locator("input[name=q]").fill("qwertyuiop")
    assert visible.count() == 0 and page.locator(".rc-rows:visible").count() == 0
    assert form.locator("output").inner_text() == f"0 of {total} rows"
    form.locator("input[name=q]").fill("")
    page.select_option("form[data-row-filter] select[name=entry]", "")
    assert visible.count() == total and form.locator("output").inner_text() == ""
    # the picture is drawn by the build: there without JavaScript, as every row is
    plain, _recorder = open_context(java_script_enabled=False)
    still = plain.new_page()
    still.goto(server.url("frequency/"))
    assert not still.locator("form[data-row-filter]").is_visible()
    assert still.locator(".rc-rows tbody tr:visible").count() == total
    assert still.locator("figure.rc-chart svg.rc-bars__row").count() >= 10


def test_a_dark_mode_reader_without_javascript_gets_the_dark_theme(open_context, server):
    context, _recorder = open_context(java_script_enabled=False, color_scheme="dark")
    page = context.new_page()
    page.goto(server.url(ENTRY))
    assert page.locator("html").get_attribute("class") == "no-js"
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert sum(int(v) for v in re.findall(r"\d+", background)[:3]) < 3 * 128, background
    light, _ = open_context(java_script_enabled=False, color_scheme="light")
    other = light.new_page()
    other.goto(server.url(ENTRY))
    background = other.evaluate("getComputedStyle(document.body).backgroundColor")
    assert sum(int(v) for v in re.findall(r"\d+", background)[:3]) > 3 * 200, background


@contextlib.contextmanager
def fixture_site_at(browser, tmp_path_factory, where: str):
    """The fixture site served at a domain root or under its configured sub-path (GitHub Pages
    serves 404.html at any missing address; at a domain root, or under `rootcause serve`, the
    sub-path is not in the address): (server, base, page, recorder), the context closed after."""
    from browser_helpers import SiteServer, base_path, _built

    site = fixture_site(tmp_path_factory)
    base = "/" if where == "a domain root" else base_path(_built["project"])
    with SiteServer(site, base) as server:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(TIMEOUT)
        recorder = Recorder(context, server.origin)
        try:
            yield server, base, context.new_page(), recorder
        finally:
            context.close()


@pytest.mark.parametrize("where", ["a domain root", "the configured sub-path"])
def test_the_404_page_is_styled_and_suggests_entries_from_the_missing_address(browser, tmp_path_factory, where):
    with fixture_site_at(browser, tmp_path_factory, where) as (server, base, page, recorder):
        response = page.goto(server.url("entries/cuda-out-of-memory-old-name/"))
        assert response.status == 404
        assert page.locator(".rc-header").evaluate("e => getComputedStyle(e).position") == "sticky"  # styled
        suggestions = page.locator("#rc-suggest a")
        suggestions.first.wait_for()
        hrefs = suggestions.evaluate_all("as => as.map(a => a.getAttribute('href'))")
        assert hrefs[0] == f"{base}entries/cuda-out-of-memory/", hrefs
        suggestions.first.click()
        page.wait_for_url(server.url("entries/cuda-out-of-memory/"))
        assert page.locator("h1").inner_text().startswith("CUDA out of memory")
    # the only problem is the missing page itself: under either base the page asked only for files
    # that exist (its assets are added by its script under the path the site is really at)
    assert sorted(recorder.problems) == sorted([
        "HTTP 404: " + server.url("entries/cuda-out-of-memory-old-name/"),
        "console error: Failed to load resource: the server responded with a status of 404 (Not Found)"])
    assert not [url for url in recorder.requests if url.startswith(server.origin) and "/assets/" in url
                and not url.startswith(server.origin + base)], recorder.requests


@pytest.mark.parametrize("where", ["a domain root", "the configured sub-path"])
def test_the_404_page_suggests_nothing_for_an_address_no_entry_shares_a_word_with(browser, tmp_path_factory, where):
    with fixture_site_at(browser, tmp_path_factory, where) as (server, base, page, recorder):
        for missing, expected in [("no-such-page/", []), ("the/page/was/not/found.html", []),
                                  ("entries/worker-exited/", ["dataloader-worker-exited-unexpectedly"])]:
            assert page.goto(server.url(missing)).status == 404
            page.locator(".rc-palette").wait_for()   # the page's own script ran
            hrefs = page.locator("#rc-suggest a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
            assert [h.rstrip("/").rsplit("/", 1)[-1] for h in hrefs] == expected, (missing, hrefs)
            assert page.locator("#rc-suggestions").is_hidden() == (not expected)
    assert not [p for p in recorder.problems if not ("404" in p)], recorder.problems


@pytest.mark.parametrize("path, part", [("systems/pytorch/", "table.rc-compare"), ("entries/", "form.rc-filter")])
def test_the_hub_table_and_the_index_filters_fit_a_phone(open_context, server, path, part):
    """At 390 px the hub's comparison table stacks its rows and the filters wrap: the document never
    scrolls sideways."""
    context, _recorder = open_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(server.url(path))
    locator = page.locator(part)
    assert locator.is_visible()
    if part == "form.rc-filter":
        page.select_option("select[name=system]", "pytorch")
    box = locator.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
    shot(page, f"phone-{path.strip('/').replace('/', '-')}.png")


# -- a phone: code, the header, the tabs, related links (#35) ---------------------------------------
PHONE = {"width": 390, "height": 844}


def test_on_a_phone_code_keeps_identifiers_whole_and_scrolls_sideways(open_context, server):
    """A code block never breaks a line inside an identifier: each line stays whole and the block
    scrolls; one that overflows is a tab stop (a keyboard scrolls it) with a visible outline; the
    page itself never scrolls sideways."""
    context, _recorder = open_context(viewport=PHONE)
    page = context.new_page()
    page.goto(server.url(ENTRY))
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    page.wait_for_function("() => document.querySelectorAll('.md-typeset pre > code[data-rc-scroll]').length > 0")
    blocks = page.evaluate("""() => [...document.querySelectorAll('.md-typeset pre > code')].filter(c => c.offsetParent)
        .map(c => [getComputedStyle(c).whiteSpace, c.scrollWidth > c.clientWidth + 1, c.getAttribute('tabindex'),
                   c.getBoundingClientRect().right])""")
    assert blocks and all(space == "pre" for space, *_ in blocks), blocks
    assert any(over for _space, over, *_ in blocks)
    assert all(tab == "0" for _space, over, tab, _right in blocks if over), blocks
    assert all(right <= PHONE["width"] + 0.5 for *_, right in blocks), blocks
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
    box = page.locator(".md-typeset pre > code[data-rc-scroll]").first
    box.focus()
    assert box.evaluate("e => getComputedStyle(e).outlineStyle") == "solid"
    page.keyboard.press("ArrowRight")
    page.wait_for_function("e => e.scrollLeft > 0", arg=box.element_handle())


def test_on_a_phone_no_header_icon_is_cut_off_and_the_tabs_show_there_are_more(open_context, server):
    context, _recorder = open_context(viewport=PHONE)
    page = context.new_page()
    page.goto(server.url(ENTRY))
    page.locator(".rc-palette").wait_for()
    shown = page.evaluate("""() => [...document.querySelectorAll('.rc-header .md-header__button')].map(b => {
        const box = b.getBoundingClientRect(), icon = b.querySelector('.rc-icon, svg').getBoundingClientRect();
        return [b.className, box.left, box.right, icon.left, icon.right, getComputedStyle(b).overflow]; })""")
    for name, left, right, icon_left, icon_right, _overflow in shown:
        assert 0 <= left and right <= PHONE["width"], (name, left, right)
        assert left - 0.5 <= icon_left and icon_right <= right + 0.5, (name, left, right, icon_left, icon_right)
    # the fixture site has fewer section tabs than the encyclopedia: a small phone overflows them
    page = open_context(viewport={"width": 320, "height": 640})[0].new_page()
    page.goto(server.url(ENTRY))
    page.locator(".rc-palette").wait_for()
    tabs = page.locator(".rc-tabs")
    assert tabs.evaluate("t => t.scrollWidth > t.clientWidth")   # the case the hint is for
    page.wait_for_function("() => document.querySelector('.rc-tabs').classList.contains('rc-tabs--more')")
    assert "gradient" in tabs.evaluate("t => getComputedStyle(t).webkitMaskImage || getComputedStyle(t).maskImage")
    tabs.evaluate("t => { t.scrollLeft = t.scrollWidth; }")
    page.wait_for_function("() => !document.querySelector('.rc-tabs').classList.contains('rc-tabs--more')")
    assert tabs.evaluate("t => getComputedStyle(t).webkitMaskImage || getComputedStyle(t).maskImage") == "none"
    # at a desktop width every tab fits: no hint
    wide = open_context()[0].new_page()
    wide.goto(server.url(ENTRY))
    wide.locator(".rc-palette").wait_for()
    assert not wide.evaluate("() => document.querySelector('.rc-tabs').classList.contains('rc-tabs--more')")


def test_on_a_phone_related_links_stand_apart_from_their_label_and_each_other(open_context, server):
    context, _recorder = open_context(viewport=PHONE)
    page = context.new_page()
    page.goto(server.url("entries/cuda-out-of-memory/"))
    groups = page.evaluate("""() => [...document.querySelectorAll('.rc-related > li, .rc-references > li')].map(li => {
        const label = li.querySelector('.rc-relation');
        const labelBottom = label ? label.getBoundingClientRect().bottom
                                  : li.getBoundingClientRect().top + parseFloat(getComputedStyle(li, '::before').height);
        return [labelBottom, [...li.querySelectorAll('a')].map(a => [a.getClientRects()[0].top, a.getBoundingClientRect().bottom])]; })""")
    assert any(len(links) > 0 for _label, links in groups)
    for label_bottom, links in groups:
        for top, _bottom in links:
            assert top >= label_bottom - 0.5, (label_bottom, links)   # the first line of a link starts below its label
        for (_top, bottom), (next_top, _next_bottom) in zip(links, links[1:]):
            assert next_top >= bottom - 0.5, links                     # and the next link below the last
