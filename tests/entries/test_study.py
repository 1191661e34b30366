"""The frequency study: its tables load clean, bad rows are positioned, and the site shows it."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from conftest import REPO, make_project, run_cli
from rootcause.config import load_config
from rootcause.entries.study import UNCLASSIFIED, gaps, load_study, tally
from rootcause.site.builder import build
from rootcause.site.render import CHART_BARS


def bundled_study():
    config, problems = load_config(REPO)
    assert config is not None and not problems
    return load_study(REPO, config)


def test_the_bundled_study_is_clean_and_large_enough():
    reports, problems = bundled_study()
    assert problems == []
    assert len(reports) >= 300, len(reports)
    assert len({r.url for r in reports}) == len(reports)   # one row per thread
    # sampled across the trackers the study names, not from one
    repos = Counter(r.label.split("#")[0] for r in reports)
    for repo in ("pytorch/pytorch", "huggingface/transformers", "huggingface/accelerate", "huggingface/peft",
                 "huggingface/trl", "Lightning-AI/pytorch-lightning"):
        assert repos[repo] >= 10, (repo, repos[repo])


def test_tally_orders_classes_by_count_and_keeps_unclassified_last():
    reports, _ = bundled_study()
    overall = tally(reports)[""]
    counts = [c.count for c in overall if c.failure not in UNCLASSIFIED]
    assert counts == sorted(counts, reverse=True)
    assert sum(c.count for c in overall) == len(reports)
    tail = [c.failure for c in overall if c.failure in UNCLASSIFIED]
    assert [c.failure for c in overall][-len(tail):] == tail if tail else True


def test_gaps_are_the_classes_reported_three_times_without_an_entry(tmp_path: Path):
    reports, _ = bundled_study()
    counts = Counter(r.failure for r in reports)
    entry_ids = {p.stem for p in (REPO / "entries").glob("*.yaml")}
    found = dict(gaps(reports, entry_ids))
    for failure, n in counts.items():
        expected = n >= 3 and failure not in entry_ids and failure not in UNCLASSIFIED
        assert (failure in found) == expected, failure
        if expected:
            assert found[failure] == n


def test_a_bad_row_is_reported_with_file_line_and_column(tmp_path: Path):
    project = make_project(tmp_path / "p")
    (project / "site.yml").write_text((project / "site.yml").read_text() + "study: study\n")
    (project / "study").mkdir()
    (project / "study" / "t.tsv").write_text(
        "url\tsystem\tquery\tclass\tsummary\n"
        "https://github.com/pytorch/pytorch/issues/1\tpytorch\tq\tcuda-out-of-memory\tOOM in backward.\n"
        "https://github.com/pytorch/pytorch/issues/2\tpytorhc\tq\tcuda-out-of-memory\tOOM again.\n")
    result = run_cli("--root", str(project), "check")
    assert result.returncode == 1
    out = result.stdout.decode()
    assert "study/t.tsv:3:45: error[E046]: system 'pytorhc' is not in site.yml's systems" in out
    assert "Traceback" not in (out + result.stderr.decode())


def test_a_study_table_that_is_a_symbolic_link_is_refused(tmp_path: Path):
    project = make_project(tmp_path / "p")
    (project / "site.yml").write_text((project / "site.yml").read_text() + "study: study\n")
    (project / "study").mkdir()
    (project / "study" / "t.tsv").symlink_to("/etc/passwd")
    result = run_cli("--root", str(project), "check")
    assert result.returncode == 1
    out = result.stdout.decode()
    assert "study/t.tsv:1:1: error[E008]" in out and "root:" not in out


@pytest.fixture(scope="module")
def bundled_site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundled") / "site"
    build(REPO, out=out, progress=False)
    return out


@pytest.fixture(scope="module")
def fixture_project_site(tmp_path_factory) -> Path:
    """Five entries and the whole study: most classes reported have no entry there."""
    from browser_helpers import build_project, write_project

    base = tmp_path_factory.mktemp("fixture")
    return build_project(write_project(base / "project"), base / "site")


def test_the_frequency_page_counts_links_and_names_the_covering_entry(bundled_site: Path):
    page = HTMLParser((bundled_site / "frequency" / "index.html").read_text(encoding="utf-8"))
    reports, _ = bundled_study()
    assert f"{len(reports)} public issue threads" in page.css_first("p.rc-lead").text()
    tables = page.css("table.rc-frequency")
    assert tables, "no frequency table"
    overall = tally(reports)[""]
    first_row = tables[0].css("tbody tr")[0]
    assert first_row.css("td")[1].text().strip() == str(overall[0].count)
    entry_ids = {p.stem for p in (REPO / "entries").glob("*.yaml")}
    for row, counted in zip(tables[0].css("tbody tr"), overall):
        link = row.css_first("td a")
        if counted.failure in entry_ids:
            assert link.attributes["href"] == f"../entries/{counted.failure}/"
        elif counted.failure not in UNCLASSIFIED:
            assert "no entry yet" in row.css("td")[0].text()
        # every example link is one of the class's own threads
        threads = {r.url for r in counted.reports}
        assert {a.attributes["href"] for a in row.css("td")[2].css("a")} <= threads
    systems = {h.attributes["id"] for h in page.css("h2") if h.attributes.get("id", "").startswith("system-")}
    assert {f"system-{r.system}" for r in reports} == systems


def chart_of(site: Path):
    """The frequency page's picture, its class bars as (failure, count, covered), and its share bar."""
    page = HTMLParser((site / "frequency" / "index.html").read_text(encoding="utf-8"))
    svg = page.css_first("figure.rc-chart > svg")
    assert svg is not None, "no picture on the frequency page"
    bars = []
    for row in svg.css("svg.rc-bars__row"):
        rect = row.css_first("rect")
        kinds = set(rect.attributes["class"].split()) & {"rc-chart__bar--covered", "rc-chart__bar--gap"}
        assert len(kinds) == 1, rect.attributes
        bars.append((row.attributes["data-failure"], int(row.css_first("text.rc-bars__count").text()),
                     kinds == {"rc-chart__bar--covered"}, float(rect.attributes["width"].rstrip("%"))))
    return page, svg, bars


def expected_bars(site: Path, reports) -> list[tuple[str, int, bool]]:
    """The classes reported most (at most CHART_BARS, never cutting a tie), whether each has a page."""
    classified = [c for c in tally(reports)[""] if c.failure not in UNCLASSIFIED]
    drawn = [c for c in classified[:CHART_BARS]
             if len(classified) <= CHART_BARS or c.count > classified[CHART_BARS].count]
    return [(c.failure, c.count, (site / "entries" / c.failure / "index.html").is_file()) for c in drawn]


def test_the_frequency_page_opens_with_a_picture_of_the_classes_reported_most(bundled_site: Path):
    """Inline SVG drawn by the build, before the first table: one bar per class with the study's
    count, lengths proportional to it, a named image whose title and description say what it shows."""
    page, svg, bars = chart_of(bundled_site)
    reports, _ = bundled_study()
    assert [(f, n, covered) for f, n, covered, _w in bars] == expected_bars(bundled_site, reports)
    assert len(bars) >= 10
    longest = bars[0][1]
    for failure, count, _covered, width in bars:
        assert abs(width - 88 * count / longest) < 0.01, failure
    # accessible: an image named by its title and described; the tables below are the data
    assert svg.attributes["role"] == "img"
    ids = svg.attributes["aria-labelledby"].split()
    assert [svg.css_first(f"#{i}").tag for i in ids] == ["title", "desc"]
    desc = svg.css_first("desc").text()
    classified = [r for r in reports if r.failure not in UNCLASSIFIED]
    covered = sum(1 for r in classified if (bundled_site / "entries" / r.failure).is_dir())
    assert f"Of the {len(classified)} threads that show their failure, {covered} " in desc
    assert f"from {bars[0][0]} ({bars[0][1]} threads)" in desc
    # the share bar: every thread that shows its failure, the covered part filled
    share = svg.css("rect.rc-chart__bar--covered")[0]
    assert abs(float(share.attributes["width"].rstrip("%")) - 100 * covered / len(classified)) < 0.01
    html = page.html
    assert html.index("<svg") < html.index('<table class="rc-frequency">')
    assert "<script" not in html.split("<svg", 1)[1].split("</figure>")[0] and " style=" not in html


def test_a_class_without_an_entry_is_drawn_hatched(fixture_project_site: Path):
    """The fixture project has five entries and the whole study: the classes reported most are
    mostly without an entry there, and each bar says which (a pattern, not only a colour)."""
    _page, svg, bars = chart_of(fixture_project_site)
    reports, _ = bundled_study()
    assert [(f, n, covered) for f, n, covered, _w in bars] == expected_bars(fixture_project_site, reports)
    assert {covered for _f, _n, covered, _w in bars} == {True, False}
    for row in svg.css("svg.rc-bars__row"):
        rect = row.css_first("rect")
        gap = "rc-chart__bar--gap" in rect.attributes["class"]
        assert (rect.attributes.get("fill") == "url(#rc-hatch)") == gap
    assert svg.css_first("pattern#rc-hatch") is not None


def test_every_page_links_to_the_frequency_page_in_the_header_and_the_home_page_leads_there(bundled_site: Path):
    target = (bundled_site / "frequency").resolve()
    for path in bundled_site.rglob("*.html"):
        tabs = HTMLParser(path.read_text(encoding="utf-8")).css_first("nav.rc-tabs")
        assert tabs is not None, path
        tab = [a for a in tabs.css("a") if a.text() == "What people hit"]
        assert len(tab) == 1, path
        href = tab[0].attributes["href"]
        if path.name == "404.html":
            assert href.endswith("/frequency/") and href.startswith("/"), href
        else:
            assert (path.parent / href).resolve() == target, (path, href)
    home = HTMLParser((bundled_site / "index.html").read_text(encoding="utf-8"))
    links = [a for a in home.css("article a") if a.attributes["href"] == "frequency/"]
    assert links and "What people hit" in links[0].text()
    current = HTMLParser((bundled_site / "frequency" / "index.html").read_text(encoding="utf-8"))
    assert current.css_first("nav.rc-tabs a[aria-current=page]").text() == "What people hit"


def test_without_a_study_there_is_no_frequency_page_and_no_link_to_one(tmp_path: Path):
    project = make_project(tmp_path / "p")   # site.yml without `study:`
    out = tmp_path / "site"
    build(project, out=out, progress=False)
    assert not (out / "frequency").exists()
    for path in out.rglob("*.html"):
        assert not re.search(r'href="[^"]*frequency/"', path.read_text(encoding="utf-8")), path
