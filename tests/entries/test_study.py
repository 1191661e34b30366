"""The frequency study: its tables load clean, bad rows are positioned, and the site shows it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser as HTMLParser

from conftest import REPO, make_project, run_cli
from rootcause.config import load_config
from rootcause.entries.study import UNCLASSIFIED, gaps, load_study, tally
from rootcause.site.builder import build


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


def test_the_frequency_page_counts_links_and_names_the_covering_entry(tmp_path: Path):
    out = tmp_path / "site"
    build(REPO, out=out, progress=False)
    page = HTMLParser((out / "frequency" / "index.html").read_text(encoding="utf-8"))
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
