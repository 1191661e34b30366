"""Issue 12: list pages (all entries, a system, a category, a tag) run over several pages once
they hold more than site.yml's `page_size` entries, so that at 10,000 entries no list page is
megabytes of HTML and a one-entry rebuild renders the one page of each list its card is on.

Built here from the bundled project with `page_size: 10`; the bundled site itself (under two hundred entries,
`page_size` 200 by default) has no list long enough to be cut.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from selectolax.lexbor import LexborHTMLParser

from conftest import copy_bundled_project, files_of

from rootcause.config import load_config
from rootcause.site.builder import build, site_files

SIZE = 10


def paged(project: Path, size: int = SIZE) -> Path:
    with open(project / "site.yml", "a", encoding="utf-8") as stream:
        stream.write(f"page_size: {size}\n")
    return project


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    project = paged(copy_bundled_project(tmp_path_factory.mktemp("paged") / "project"))
    build(project, progress=False)
    return project, files_of(project / "site")


def html(files: dict[str, bytes], path: str) -> LexborHTMLParser:
    return LexborHTMLParser(files[path].decode("utf-8"))


def card_ids(tree: LexborHTMLParser) -> list[str]:
    return [a.attrs["href"].rstrip("/").rsplit("/", 1)[-1] for a in tree.css(".rc-card__title")]


def test_the_entries_index_is_cut_into_pages_that_list_every_entry_once(site):
    project, files = site
    entries = sorted(p.stem for p in (project / "entries").glob("*.yaml"))
    count = -(-len(entries) // SIZE)
    pages = ["entries/index.html"] + [f"entries/page/{n}/index.html" for n in range(2, count + 1)]
    assert sorted(p for p in files if re.fullmatch(r"entries/(page/\d+/)?index\.html", p)) == sorted(pages)
    listed = []
    for number, path in enumerate(pages, 1):
        tree = html(files, path)
        ids = card_ids(tree)
        assert len(ids) == (SIZE if number < count else len(entries) - SIZE * (count - 1))
        listed += ids
        # the page says where it is, links its neighbours and is its own canonical address
        assert tree.css_first("title").text().startswith("All entries" if number == 1 else
                                                         f"All entries, page {number} of {count}")
        pager = tree.css_first("nav.rc-pager")
        assert pager.css_first("[aria-current=page]").text() == str(number)
        assert (pager.css_first("a[rel=prev]") is None) == (number == 1)
        assert (pager.css_first("a[rel=next]") is None) == (number == count)
        if number > 1:
            assert pager.css_first("a[rel=prev]").attrs["href"] == ("../../" if number == 2 else f"../{number - 1}/")
        canonical = tree.css_first("link[rel=canonical]").attrs["href"]
        assert canonical.endswith("entries/" if number == 1 else f"entries/page/{number}/")
        # the filter works on the cards of the page it is on: a cut list has none
        assert tree.css_first("form[data-filter]") is None
    assert sorted(listed) == entries and len(listed) == len(set(listed))
    sitemap = files["sitemap.xml"].decode()
    assert all(f"entries/page/{n}/</loc>" in sitemap for n in range(2, count + 1))


def test_the_first_page_keeps_the_severity_anchors_entry_pages_link_to(site):
    """An entry's severity badge links to entries/#severity-<key>: on the first page, every
    severity has that anchor, and the link beside it leads to the page where the severity begins."""
    project, files = site
    vocab = load_config(project)[0].vocabularies
    first = html(files, "entries/index.html")
    for key in vocab.severities:
        target = first.css_first(f"#severity-{key}")
        assert target is not None, key
        if target.tag == "a":   # a severity that begins on a later page: the anchor names that page
            page = target.attrs["href"].split("#")[0]
            begins = html(files, f"entries/{page}index.html")
            assert begins.css_first(f"section#severity-{key}") is not None
            assert not re.search(rf'data-severity="{key}"', files[_previous(page)].decode())


def _previous(page: str) -> str:
    number = int(page.split("/")[1])
    return "entries/index.html" if number == 2 else f"entries/page/{number - 1}/index.html"


def test_a_system_page_is_cut_in_phase_order_and_links_where_each_phase_begins(site):
    _project, files = site
    pages = sorted((p for p in files if re.fullmatch(r"systems/pytorch/(page/\d+/)?index\.html", p)),
                   key=lambda p: int(p.split("/")[3]) if "/page/" in p else 1)
    assert len(pages) > 2
    rows, navs = [], []
    for path in pages:
        tree = html(files, path)
        for tbody in tree.css("table.rc-hub tbody"):
            phase = tbody.css_first("tr.rc-hub__phase th").attrs["id"]
            rows += [(phase, a.attrs["href"]) for a in tbody.css("th[scope=row] a")]
        assert len(tree.css("th[scope=row] a")) <= SIZE
        navs.append({a.text().rsplit(" ", 1)[0].strip(): a.attrs["href"] for a in tree.css("nav.rc-phases a")})
    phases = [phase for phase, _href in rows]
    assert phases == sorted(phases, key=phases.index)   # each phase's rows together, in one run
    first = navs[0]
    for label, href in first.items():
        page, anchor = href.split("#")
        target = "systems/pytorch/" + page + "index.html" if page else pages[0]
        assert html(files, target).css_first(f"#{anchor}") is not None, (label, href)


def test_lists_shorter_than_a_page_render_as_before(site):
    """A tag with few entries: no pager, no page number in its title."""
    _project, files = site
    counts = {p: len(card_ids(html(files, p))) for p in files if re.fullmatch(r"tags/[^/]+/index\.html", p)}
    short = next(p for p, n in counts.items() if 0 < n < SIZE)
    tree = html(files, short)
    assert tree.css_first("nav.rc-pager") is None and not any(p.startswith(short[:-len("index.html")] + "page/")
                                                               for p in files)


def test_a_memoised_rebuild_removes_and_adds_a_lists_last_page(tmp_path: Path):
    """With the page size one less than the longest tag list, that list's second page holds one
    card. Taking the tag off one entry does away with the page; putting it back brings it back.
    Both rebuilds check one entry again, delete or write the page (a deleted page leaves no
    empty folder) and leave exactly what a cold build does."""
    project = copy_bundled_project(tmp_path / "project")
    entries = {p: p.read_text(encoding="utf-8") for p in sorted((project / "entries").glob("*.yaml"))}
    tagged: dict[str, list[Path]] = {}
    for path, text in entries.items():
        listed = re.search(r"(?m)^tags: \[(.*)\]$", text)   # (tags are optional)
        for tag in (listed.group(1).split(",") if listed else []):
            tagged.setdefault(tag.strip(), []).append(path)
    tag, holders = max(tagged.items(), key=lambda item: len(item[1]))
    assert len(holders) > 10
    paged(project, len(holders) - 1)
    build(project, progress=False)
    site = project / "site"
    last = site / "tags" / tag / "page" / "2"
    assert len(card_ids(LexborHTMLParser((last / "index.html").read_text(encoding="utf-8")))) == 1
    path = holders[0]
    text = entries[path]
    line = re.search(r"(?m)^tags: \[(.*)\]$", text)
    others = [t.strip() for t in line.group(1).split(",") if t.strip() != tag]
    spare = next(t for t in sorted(tagged) if t != tag and t not in others)
    path.write_text(text.replace(line.group(0), "tags: [" + ", ".join(others + [spare]) + "]", 1), encoding="utf-8")
    result = build(project, progress=False)
    assert result.checked == 1
    assert files_of(site) == site_files(project)
    assert not last.exists() and not last.parent.exists()
    path.write_text(text, encoding="utf-8")
    result = build(project, progress=False)
    assert result.checked == 1
    assert files_of(site) == site_files(project)
    assert (last / "index.html").is_file()
