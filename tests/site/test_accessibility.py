"""Accessibility in a real browser (Debian's Chromium through Playwright): axe-core finds no WCAG 2.2
AA violation on any kind of page, in the light scheme, the dark one the system asks for, and the
dark one chosen with the palette toggle; keyboard focus is visible on everything Tab reaches;
controls are at least 24 × 24 px; every table is styled, and no page is wider than a 390 px phone.

axe-core is vendored in tests/vendor/ (scripts/vendor_axe.py, pinned in scripts/axe-core.lock.json)
and injected with `add_script_tag`, so these contexts bypass the pages' Content-Security-Policy
(tests/site/test_browser.py holds every page to it). A failure lists, for each violation, the
rule, the element and axe's one-line help.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import needs
from browser_helpers import COPIED_ENTRY, fixture_server, fixture_site, own_site, own_site_problem, SiteServer, base_path

pytestmark = needs("browser")

AXE = Path(__file__).resolve().parent.parent / "vendor" / "axe.min.js"
#: WCAG 2.0, 2.1 and 2.2, levels A and AA (axe's rule tags; target-size is tagged wcag22aa)
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
TIMEOUT = 10_000
ENTRY = f"entries/{COPIED_ENTRY}/"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
SCHEMES = ["light", "dark", "dark by the toggle"]

#: one page of each kind in the fixture site
PAGES = {
    "home": "",
    "entry page": ENTRY,
    "entries index": "entries/",
    "system hub": "systems/pytorch/",
    "category page": "categories/memory/",
    "tag page": "tags/oom/",
    "coverage page": "coverage/",
    "frequency page": "frequency/",
    "content page": "about/",
    "search page": "search/?q=out%20of%20memory",
    "diagnose page": "diagnose/",
    "404 page": "entries/cuda-out-of-memory-old-name/",
}

CASCADE = ("[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 2 has a total capacity "
           "of 79.15 GiB of which 1.21 GiB is free.\n"
           "[rank0]:[E1104 03:22:09.552318040 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
           "timeout: WorkNCCL(SeqNum=20585, OpType=ALLREDUCE, NumelIn=46797824, NumelOut=46797824, Timeout(ms)=600000) "
           "ran for 600071 milliseconds before timing out.\n")


# -- helpers ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with fixture_server(tmp_path_factory) as running:
        yield running


@pytest.fixture
def new_page(browser):
    """A page in a fresh context (CSP bypassed so axe can be injected) that fails the test on a
    console error, an uncaught exception or a request to another host."""
    made = []

    def make(origin: str, scheme: str = "light", viewport: dict = DESKTOP, **options):
        context = browser.new_context(viewport=viewport, bypass_csp=True,
                                      color_scheme="dark" if scheme == "dark" else "light", **options)
        context.set_default_timeout(TIMEOUT)
        problems: list[str] = []
        context.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error"
                   and "404" not in m.text else None)
        context.on("weberror", lambda e: problems.append(f"page error: {e.error}"))
        context.on("request", lambda r: problems.append(f"foreign request: {r.url}")
                   if not r.url.startswith((origin + "/", "data:", "blob:")) else None)
        made.append((context, problems))
        page = context.new_page()
        page.rc_scheme = scheme  # type: ignore[attr-defined]
        return page

    yield make
    for context, problems in made:
        context.close()
        assert not problems, problems


def goto(page, url: str):
    page.goto(url)
    if page.rc_scheme == "dark by the toggle" and page.locator("html").get_attribute("data-rc-scheme") != "dark":
        toggle = page.locator("button.rc-palette")
        for _ in range(3):  # automatic → light → dark, remembered for the context's later pages
            if page.locator("html").get_attribute("data-rc-scheme") == "dark":
                break
            toggle.click()
        # the scheme's colours fade in (CSS transitions): axe reads computed colours, so a
        # loaded machine would otherwise measure a link half-way from the light colour
        page.wait_for_function("() => document.getAnimations().every(a => a.playState !== 'running')")
    expected = "default" if page.rc_scheme == "light" else "slate"
    assert page.locator("body").get_attribute("data-md-color-scheme") == expected


AXE_RUN = """([tags, scope]) => axe.run(scope ? {include: [scope]} : document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})
  .then(r => r.violations.flatMap(v => v.nodes.map(n =>
     `${v.id} (${v.impact}) at ${n.target.join(' ')}: ${v.help}` +
     (n.failureSummary ? ' — ' + n.failureSummary.replace(/\\s+/g, ' ').slice(0, 240) : ''))))"""


def violations(page, scope: str | None = None) -> list[str]:
    """axe's WCAG 2.2 AA violations on the page (or in the part `scope` selects), one line each."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate(AXE_RUN, [TAGS, scope])


def assert_no_violations(page, what: str, scope: str | None = None):
    found = violations(page, scope)
    assert not found, f"{what}: {len(found)} axe violation(s)\n" + "\n".join(found)


# -- axe on every kind of page ---------------------------------------------------------------------
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("kind", list(PAGES))
def test_no_axe_violation_on_any_kind_of_page(new_page, server, kind, scheme):
    page = new_page(server.origin, scheme)
    goto(page, server.url(PAGES[kind]))
    if kind == "search page":
        page.locator("#rc-page-results .rc-result").first.wait_for()
    if kind == "404 page":
        page.locator("#rc-suggest a").first.wait_for()
    assert_no_violations(page, f"{kind} ({scheme})")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_no_axe_violation_on_the_diagnose_report(new_page, server, scheme):
    page = new_page(server.origin, scheme)
    goto(page, server.url("diagnose/"))
    page.locator("#rc-log").fill(CASCADE)
    page.locator("#rc-diagnose button[type=submit]").click()
    page.locator("#rc-report .rc-finding").first.wait_for()
    page.wait_for_function("() => document.getElementById('rc-status').textContent === ''")
    assert_no_violations(page, f"diagnose report ({scheme})")
    page.locator("#rc-log").fill("nothing in this log matches any signature\n")
    page.locator("#rc-diagnose button[type=submit]").click()
    page.wait_for_function("() => !document.querySelector('#rc-report .rc-finding')")
    assert_no_violations(page, f"diagnose report without a finding ({scheme})")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_axe_violation_in_the_header_search_dropdown(new_page, server, scheme):
    """The header with its dropdown open (combobox, listbox, options). The page under the dropdown
    is checked with it closed by the tests above: while it is open, what it covers cannot be used."""
    page = new_page(server.origin, scheme)
    goto(page, server.url(ENTRY))
    page.locator("#rc-q").fill("out of memory")
    page.locator("#rc-results .rc-result").first.wait_for()
    page.keyboard.press("ArrowDown")
    assert page.locator("#rc-q").get_attribute("aria-expanded") == "true"
    assert_no_violations(page, f"header search with results ({scheme})", ".rc-header")
    page.locator("#rc-q").fill("qwertyuiop")
    page.locator(".rc-search__results .rc-result--none").wait_for()   # outside the listbox: it holds options only
    assert_no_violations(page, f"header search without results ({scheme})", ".rc-header")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("kind", ["entry page", "system hub", "coverage page", "frequency page", "entries index",
                                  "diagnose page"])
def test_no_axe_violation_on_a_phone(new_page, server, kind, scheme):
    page = new_page(server.origin, scheme, viewport=PHONE)
    goto(page, server.url(PAGES[kind]))
    assert_no_violations(page, f"{kind} on a phone ({scheme})")


@pytest.fixture(scope="module")
def own_server(tmp_path_factory):
    """The repository's own entries: real content (highlighted code, affected versions, the
    frequency page from the study), served under the configured sub-path."""
    site = own_site(tmp_path_factory)
    if site is None:
        pytest.skip("the repository's entries do not check: " + own_site_problem())
    from conftest import REPO

    with SiteServer(site, base_path(REPO)) as running:
        running.site = site  # type: ignore[attr-defined]
        yield running


def own_entries_with(site: Path, needle: str, count: int) -> list[str]:
    """The first `count` entry pages (by name) whose HTML contains `needle`."""
    pages = sorted(p for p in (site / "entries").glob("*/index.html") if needle in p.read_text(encoding="utf-8"))
    return [p.parent.relative_to(site).as_posix() + "/" for p in pages[:count]]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_axe_violation_on_the_frequency_page_and_real_entries(new_page, own_server, scheme):
    paths = ["frequency/", "contributing/", "writing-entries/"]
    paths += own_entries_with(own_server.site, 'id="affected"', 1) + own_entries_with(own_server.site, 'class="nb"', 1)
    page = new_page(own_server.origin, scheme)
    found = []
    for path in paths:
        goto(page, own_server.url(path))
        found += [f"{path}: {v}" for v in violations(page)]
    assert not found, f"{len(found)} axe violation(s) ({scheme})\n" + "\n".join(found)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_axe_violation_on_the_frequency_page_filtered(new_page, server, scheme):
    """With the filter in use: the form's controls, its count, and tables and headings hidden."""
    page = new_page(server.origin, scheme)
    goto(page, server.url("frequency/"))
    page.locator("form[data-row-filter] input[name=q]").fill("nccl")
    page.select_option("form[data-row-filter] select[name=entry]", "no")
    assert page.locator(".rc-rows:not([hidden])").count() >= 1
    assert_no_violations(page, f"frequency page filtered ({scheme})")


# -- focus, target sizes ---------------------------------------------------------------------------
FOCUS_STYLE = """() => {
  let e = document.activeElement;
  if (e && e.matches('.rc-file input')) e = e.closest('.rc-file');  // the visible control of a file input
  if (!e || e === document.body) return null;
  const s = getComputedStyle(e);
  return {what: e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\\s+/).join('.') : '')
                + (e.id ? '#' + e.id : ''), style: s.outlineStyle, width: parseFloat(s.outlineWidth),
          visible: !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length)};
}"""


@pytest.mark.parametrize("kind", ["entry page", "entries index", "diagnose page", "coverage page", "search page"])
def test_every_stop_of_the_tab_key_shows_a_focus_outline(new_page, server, kind):
    """Tab through the page from the top: every element that takes focus (header buttons, search
    input, tabs, summaries, links, selects, copy buttons, scrolling tables) draws an outline at
    least 2 px wide (Material's CSS hides it unless its own script marks keyboard focus)."""
    page = new_page(server.origin, "light")
    goto(page, server.url(PAGES[kind]))
    page.locator(".md-skip").focus()   # start at the top (the search page focuses its box on load)
    seen, bad = [], []
    for _ in range(60):
        info = page.evaluate(FOCUS_STYLE)
        if info is None or info["what"] in seen[:1]:
            break
        seen.append(info["what"])
        if info["visible"] and (info["style"] == "none" or info["width"] < 2):
            bad.append(info)
        page.keyboard.press("Tab")
    assert len(seen) >= 8, seen
    assert not bad, bad
    if kind == "entry page":
        assert any(s.startswith("summary") for s in seen) and any("rc-palette" in s for s in seen), seen


def test_a_summary_and_a_header_button_focused_by_tab_have_an_outline_in_the_dark_scheme(new_page, server):
    page = new_page(server.origin, "dark")
    goto(page, server.url(ENTRY))
    for selector in ("button.rc-palette", "details.rc-example > summary", "#rc-q"):
        page.locator(selector).first.focus()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")
        assert page.evaluate("s => document.activeElement === document.querySelector(s)", selector), selector
        style, width = page.locator(selector).first.evaluate(
            "e => [getComputedStyle(e).outlineStyle, parseFloat(getComputedStyle(e).outlineWidth)]")
        assert style != "none" and width >= 2, (selector, style, width)


TARGETS = {  # selector → the page it is on
    ".rc-header .md-header__button": ENTRY, "button.rc-palette": ENTRY, ".rc-tabs a": ENTRY,
    "nav.rc-toc a": ENTRY, "button.rc-copy": ENTRY, "form.rc-filter select": "entries/",
}


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_controls_are_at_least_24_px_square(new_page, server, viewport):
    page = new_page(server.origin, "light", viewport=viewport)
    small = []
    for selector, path in TARGETS.items():
        goto(page, server.url(path))
        boxes = page.locator(selector).evaluate_all(
            "es => es.filter(e => e.getClientRects().length).map(e => [e.textContent.trim().slice(0, 20) || e.getAttribute('aria-label'),"
            " e.getBoundingClientRect().width, e.getBoundingClientRect().height])")
        assert boxes, selector
        small += [(selector, *box) for box in boxes if box[1] < 24 or box[2] < 24]
    assert not small, small


# -- tables ----------------------------------------------------------------------------------------
TABLE_STYLE = """t => {
  const th = t.querySelector('thead th'), td = t.querySelector('tbody td');
  const s = getComputedStyle(t), h = getComputedStyle(th), d = getComputedStyle(td);
  return {header: h.backgroundColor, border: s.borderTopStyle + ' ' + s.borderTopWidth,
          padding: [d.paddingTop, d.paddingLeft].map(parseFloat), zebra: t.tBodies[0].rows.length < 2 ? null
          : getComputedStyle(t.tBodies[0].rows[1]).backgroundColor};
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_table_has_a_header_background_borders_and_padded_cells(new_page, server, scheme):
    page = new_page(server.origin, scheme)
    seen = set()
    for path in (ENTRY, "systems/pytorch/", "coverage/", "about/"):
        goto(page, server.url(path))
        for table in page.locator("article table").all():
            seen.update((table.get_attribute("class") or "").split() or ["(no class)"])
            style = table.evaluate(TABLE_STYLE)
            assert style["header"] not in ("rgba(0, 0, 0, 0)", "transparent"), (path, style)
            assert not style["border"].startswith("none"), (path, style)
            assert min(style["padding"]) > 0, (path, style)
            assert style["zebra"] in (None,) or style["zebra"] not in ("rgba(0, 0, 0, 0)", "transparent"), (path, style)
        numbers = page.locator("article td.rc-num").evaluate_all("ts => ts.map(t => getComputedStyle(t).textAlign)")
        assert set(numbers) <= {"right"}, (path, numbers)
    assert {"rc-compare", "rc-coverage", "rc-matrix", "(no class)"} <= seen, seen


@pytest.mark.parametrize("kind", list(PAGES))
def test_no_page_is_wider_than_a_phone(new_page, server, kind):
    """At 390 px the document never scrolls sideways: a wide table scrolls inside its own region,
    which takes keyboard focus and has a name."""
    page = new_page(server.origin, "light", viewport=PHONE)
    goto(page, server.url(PAGES[kind]))
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], (kind, width)
    for region in page.locator(".rc-table-scroll").all():
        assert region.get_attribute("tabindex") == "0" and region.get_attribute("role") == "region"
        assert region.get_attribute("aria-label")


def test_the_frequency_tables_are_styled_and_fit_a_phone(new_page, own_server):
    page = new_page(own_server.origin, "light", viewport=PHONE)
    for path in ("frequency/", "coverage/", "systems/pytorch/", *own_entries_with(own_server.site, 'id="affected"', 3)):
        goto(page, own_server.url(path))
        width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], (path, width)
        for table in page.locator("article table").all():
            style = table.evaluate(TABLE_STYLE)
            assert style["header"] not in ("rgba(0, 0, 0, 0)", "transparent") and min(style["padding"]) > 0, (path, style)
    goto(page, own_server.url("frequency/"))
    assert page.locator("table.rc-frequency td.rc-num").first.evaluate("t => getComputedStyle(t).textAlign") == "right"


@pytest.mark.parametrize("where", ["search page", "home"])
def test_no_axe_violation_while_a_result_is_chosen_with_the_arrow_keys(new_page, server, where):
    """The search page's and the home page's results are a plain list of links under the box (no
    listbox): moving through them with the arrow keys marks one without listbox-only attributes."""
    page = new_page(server.origin, "light")
    box = "#rc-page-q" if where == "search page" else "#rc-home-q"
    goto(page, server.url("search/" if where == "search page" else ""))
    page.locator(box).fill("out of memory")
    page.locator(".rc-page-results .rc-result").first.wait_for()
    page.locator(box).press("ArrowDown")
    page.locator(box).press("ArrowDown")
    assert page.locator(".rc-page-results .rc-result.rc-active").count() == 1
    assert_no_violations(page, f"{where} with a result chosen")


# -- lists cut into pages ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def paged_server(tmp_path_factory):
    """The repository's entries with `page_size: 10`: the entries index, system hubs and long tag
    lists run over several pages (`tests/site/test_pagination.py` checks what they hold)."""
    from browser_helpers import build_project
    from conftest import copy_bundled_project

    project = copy_bundled_project(tmp_path_factory.mktemp("rootcause-paged") / "project")
    with open(project / "site.yml", "a", encoding="utf-8") as stream:
        stream.write("page_size: 10\n")
    site = build_project(project, project / "site")
    with SiteServer(site, base_path(project)) as running:
        yield running


PAGED = ["entries/", "entries/page/2/", "systems/pytorch/page/2/", "categories/distributed/page/2/"]


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_paged_lists_have_no_axe_violation_and_fit_a_phone(new_page, paged_server, scheme, viewport):
    page = new_page(paged_server.origin, scheme, viewport=viewport)
    found, small = [], []
    for path in PAGED:
        goto(page, paged_server.url(path))
        assert page.locator("nav.rc-pager [aria-current=page]").count() == 1, path
        found += [f"{path}: {v}" for v in violations(page)]
        width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], (path, width)
        boxes = page.locator("nav.rc-pager a").evaluate_all(
            "es => es.map(e => [e.textContent.trim(), e.getBoundingClientRect().width, e.getBoundingClientRect().height])")
        small += [(path, *box) for box in boxes if box[1] < 24 or box[2] < 24]
    assert not found, f"{len(found)} axe violation(s) ({scheme})\n" + "\n".join(found)
    assert not small, small


def test_the_pager_and_the_severity_links_lead_where_they_say(new_page, paged_server):
    """Next, a page number and Previous go to those pages; on the first page, a severity that
    begins further on is reached through its anchor (what an entry page's badge links to)."""
    page = new_page(paged_server.origin)
    goto(page, paged_server.url("entries/"))
    page.locator("nav.rc-pager a[rel=next]").click()
    page.wait_for_url("**/entries/page/2/")
    assert page.locator("nav.rc-pager [aria-current=page]").text_content() == "2"
    page.locator("nav.rc-pager a[rel=prev]").click()
    page.wait_for_url("**/entries/")
    goto(page, paged_server.url("entries/#severity-low"))
    page.locator("#severity-low").click()
    page.wait_for_url("**/entries/page/*/#severity-low")
    assert page.locator("section#severity-low .rc-card").count() >= 1
