"""Issue 12: the memoised results in the project's store never change what a build writes.

After each kind of edit, a build that uses the cache writes exactly the bytes of a cold build
(`site_files`, which reads no cache) of the same input, and re-does only what the edit touches.
A cache file that is damaged (flipped byte, cut short, bad JSON behind a good hash) or made by
other code is rebuilt, never trusted. The deployed folder holds no build state.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from cache_helpers import copy_store, store_of
from conftest import REPO, copy_bundled_project, files_of

from rootcause.site import builder
from rootcause.site.builder import build, site_files


@pytest.fixture(scope="module")
def warm(tmp_path_factory) -> Path:
    """A copy of the bundled project (entries, content, healthy logs, study, and a theme folder
    overriding one template), built once so that its cache is full."""
    project = copy_bundled_project(tmp_path_factory.mktemp("warm") / "project")
    (project / "site.yml").write_text((REPO / "site.yml").read_text(encoding="utf-8") + "theme: mytheme\n",
                                      encoding="utf-8")
    templates = project / "mytheme" / "templates"
    templates.mkdir(parents=True)
    from rootcause.site.render import theme_folder

    shutil.copy(theme_folder() / "templates" / "page.html", templates / "page.html")
    result = build(project, progress=False)
    assert result.checked == result.entries and result.rendered == result.pages
    return project


@pytest.fixture
def project(warm: Path, tmp_path: Path) -> Path:
    """The warm project copied with its store (the copy's output starts empty: its state is
    keyed by the output's path)."""
    copy = tmp_path / "project"
    shutil.copytree(warm, copy, symlinks=True, ignore=shutil.ignore_patterns("site"))
    copy_store(warm, copy)
    return copy


def rebuild_matches_cold(project: Path):
    result = build(project, progress=False)
    out = project / "site"
    assert files_of(out) == site_files(project)
    return result


def entry(project: Path, entry_id: str) -> Path:
    return project / "entries" / f"{entry_id}.yaml"


def incoming(project: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in (project / "entries").glob("*.yaml"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip().startswith("- id: "):
                target = line.split("- id: ", 1)[1].strip()
                counts[target] = counts.get(target, 0) + 1
    return counts


def lonely_entry(project: Path) -> str:
    """An entry no other entry links to."""
    linked = incoming(project)
    return next(p.stem for p in sorted((project / "entries").glob("*.yaml")) if p.stem not in linked)


def test_an_unchanged_project_copied_with_its_cache_checks_and_renders_nothing(project: Path):
    result = rebuild_matches_cold(project)
    assert (result.checked, result.rendered) == (0, 0)
    assert not (project / "site" / ".rootcause-build.json").exists()   # the state is in the store
    assert list((store_of(project) / "build-state").iterdir())
    again = project / "again"
    build(project, out=again, progress=False, force=True)
    assert files_of(again) == files_of(project / "site")


def test_entry_text(project: Path):
    target = entry(project, lonely_entry(project))
    text = target.read_text(encoding="utf-8")
    start = text.index("\ntitle: ") + len("\ntitle: ")
    start += text[start] in "'\""     # inside a quoted title
    target.write_text(text[:start] + "Edited " + text[start:], encoding="utf-8")
    result = rebuild_matches_cold(project)
    assert result.checked == 1
    assert 1 <= result.rendered < result.pages // 2
    assert b"Edited " in (project / "site" / "entries" / target.stem / "index.html").read_bytes()


def test_entry_id_renamed(project: Path):
    old = lonely_entry(project)
    new = old + "-renamed"
    text = entry(project, old).read_text(encoding="utf-8")
    entry(project, new).write_text(text.replace(f"\nid: {old}\n", f"\nid: {new}\n", 1), encoding="utf-8")
    entry(project, old).unlink()
    result = rebuild_matches_cold(project)
    assert result.checked == 1
    assert result.rendered < result.pages // 2
    assert (project / "site" / "entries" / new / "index.html").is_file()
    assert not (project / "site" / "entries" / old).exists()


def test_related_link_added(project: Path):
    source, target = sorted(p.stem for p in (project / "entries").glob("*.yaml"))[:2]
    path = entry(project, source)
    text = path.read_text(encoding="utf-8")
    assert f"- id: {target}\n" not in text
    text = text.replace("\nrelated:\n", f"\nrelated:\n  - id: {target}\n    relation: see-also\n", 1)
    path.write_text(text, encoding="utf-8")
    result = rebuild_matches_cold(project)
    assert result.checked == 1
    assert 2 <= result.rendered < result.pages // 2     # the entry's page and the target's (its backlink)


def test_site_yml(project: Path):
    config = project / "site.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("\ntitle: rootcause\n", "\ntitle: rootcause edited\n", 1),
                      encoding="utf-8")
    result = rebuild_matches_cold(project)
    assert result.checked == result.entries and result.rendered == result.pages


def test_template(project: Path):
    template = project / "mytheme" / "templates" / "page.html"
    text = template.read_text(encoding="utf-8")
    template.write_text(text.replace("{% endblock %}", "<p>edited template</p>{% endblock %}", 1), encoding="utf-8")
    result = rebuild_matches_cold(project)
    assert result.checked == 0
    assert result.rendered == result.pages   # the stamp of every page holds the site's templates
    assert b"<p>edited template</p>" in (project / "site" / "about" / "index.html").read_bytes()


def test_content_page(project: Path):
    page = project / "content" / "about.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nOne more sentence.\n", encoding="utf-8")
    result = rebuild_matches_cold(project)
    assert result.checked == 0
    assert result.rendered <= 3      # the page itself (and nothing that does not show it)
    assert b"One more sentence." in (project / "site" / "about" / "index.html").read_bytes()


def test_deleted_entry(project: Path):
    gone = lonely_entry(project)
    entry(project, gone).unlink()
    result = rebuild_matches_cold(project)
    assert result.checked == 0
    assert not (project / "site" / "entries" / gone).exists()


def test_damaged_cache_files_are_rebuilt_not_trusted(project: Path):
    cache = store_of(project)
    records = sorted((cache / "build-entries").iterdir())
    pages = sorted((cache / "build-pages").iterdir())
    flipped = bytearray(records[0].read_bytes())
    flipped[-5] ^= 0x20
    records[0].write_bytes(bytes(flipped))
    records[1].write_bytes(records[1].read_bytes()[:100])          # cut short
    body = b'{"problems": [], "entry": {"id": 5}'                   # bad JSON behind a right hash
    import hashlib
    records[2].write_bytes(b"rootcause-record 1 " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    records[3].write_bytes(b"\x80\x04\x95 not a record at all")     # another format (a pickle's first bytes)
    page = bytearray(pages[0].read_bytes())
    page[-3] ^= 0x01
    pages[0].write_bytes(bytes(page))
    pages[1].write_bytes(b"")
    for state in (cache / "build-state").iterdir():
        state.write_bytes(b"rootcause-cache 1\n{not json\n")
    result = rebuild_matches_cold(project)
    assert result.checked == 4
    assert result.rendered >= 2
    # rewritten whole: the next build takes everything from the cache
    again = build(project, progress=False, force=False)
    assert again.up_to_date or (again.checked, again.rendered) == (0, 0)


def test_a_forced_build_rewrites_only_the_records_whose_bytes_differ(project: Path, tmp_path: Path):
    """`--force` checks and renders everything again; a record that already holds the bytes it
    would write is left in place (same inode), a damaged one is replaced, and a record planted
    as a symbolic link is replaced by a file without writing through the link."""
    records = sorted((store_of(project) / "build-entries").iterdir())
    before = {p.name: p.stat().st_ino for p in records}
    damaged, planted = records[0], records[1]
    flipped = bytearray(damaged.read_bytes())
    flipped[-5] ^= 0x20
    damaged.write_bytes(bytes(flipped))
    outside = tmp_path / "outside.txt"
    outside.write_bytes(planted.read_bytes())
    planted.unlink()
    planted.symlink_to(outside)
    result = build(project, progress=False, force=True)
    assert result.checked == result.entries and result.rendered == result.pages
    after = {p.name: p.stat().st_ino for p in records}
    assert after == {**before, damaged.name: after[damaged.name], planted.name: after[planted.name]}
    assert after[damaged.name] != before[damaged.name] and damaged.read_bytes() != bytes(flipped)
    assert not planted.is_symlink() and planted.read_bytes() == outside.read_bytes()
    assert files_of(project / "site") == site_files(project)
    (project / "entries" / f"{lonely_entry(project)}.yaml").touch()   # a rebuild then reads every record
    again = build(project, progress=False)
    assert again.checked == 0 and again.rendered == 0


def test_a_cache_from_another_code_version_is_not_used(project: Path, monkeypatch):
    monkeypatch.setattr(builder, "build_version", lambda: "another version of the code")
    result = rebuild_matches_cold(project)
    assert result.checked == result.entries and result.rendered == result.pages
    entries_now = {p.name for p in (store_of(project) / "build-entries").iterdir()}
    assert len(entries_now) == result.entries    # the other version's records were pruned


def test_timings_table(project: Path):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "rootcause", "--root", str(project), "build", "-q", "--timings",
                             "--force"], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    rows = {}
    for line in result.stderr.splitlines():
        cells = line.split()
        if len(cells) >= 4 and cells[0] in ("load", "validate", "cross-check", "render", "index", "write", "total"):
            rows[cells[0]] = cells[1:4]
    assert set(rows) == {"load", "validate", "cross-check", "render", "index", "write", "total"}
    for name, (wall, cpu, peak) in rows.items():
        assert float(wall) >= 0 and float(cpu) >= 0, name
        if peak != "-":
            assert float(peak) > 0
    assert float(rows["total"][2]) > 10   # MB: the build's process tree holds at least the interpreter
    assert sum(float(rows[n][0]) for n in rows if n != "total") <= float(rows["total"][0]) + 0.05
    assert "built " in result.stdout
    json.dumps(rows)


def test_the_memory_sampler_paces_itself_and_is_left_out_of_the_cpu_figures(monkeypatch):
    """A sample that costs 10 ms of CPU (a process of gigabytes: `smaps_rollup` walks its page
    tables) is taken every 90 ms, not every 20, and its CPU time is not the stage's."""
    import time as clock

    from rootcause import timings as timings_module

    samples = []

    def costly(root=None):
        samples.append(clock.perf_counter())
        end = clock.thread_time() + 0.01
        while clock.thread_time() < end:
            pass
        return 1024

    monkeypatch.setattr(timings_module, "tree_memory_kb", costly)
    timings = timings_module.Timings()
    with timings.stage("render"):
        clock.sleep(0.6)
    stage = timings.stages["render"]
    taken = samples[1:-1]   # the thread's (the first and last are taken as the stage starts and ends)
    gaps = [b - a for a, b in zip(taken, taken[1:])]
    assert len(samples) >= 4 and min(gaps) >= 0.08, gaps
    assert timings._sampled_cpu >= 0.01 * (len(samples) - 2)
    assert stage.cpu < 0.01 * (len(samples) - 2), (stage.cpu, len(samples))
    assert stage.peak_kb == 1024


def test_pages_rendered_again_take_their_highlighted_code_from_the_cache(project: Path, monkeypatch):
    """Every page is rendered again after a template edit, but its code blocks come from the
    build cache: no Pygments lexer is built, and the site is the one a cold build makes. A
    damaged record is made again."""
    from rootcause.site import highlight

    highlight.highlight.cache_clear()   # this process may have highlighted these blocks already
    build(project, progress=False, force=True)
    records = sorted((store_of(project) / "build-code").iterdir())
    assert len(records) > 50
    flip = bytearray(records[0].read_bytes())
    flip[-2] ^= 0x01
    records[0].write_bytes(bytes(flip))
    built, lexer = [], highlight._lexer
    monkeypatch.setattr(highlight, "_lexer", lambda language: built.append(language) or lexer(language))
    highlight.highlight.cache_clear()
    template = project / "mytheme" / "templates" / "page.html"
    template.write_text(template.read_text(encoding="utf-8").replace("{% endblock %}", "<p>e</p>{% endblock %}", 1),
                        encoding="utf-8")
    result = build(project, progress=False)
    assert result.rendered == result.pages
    assert len(built) == 1   # the damaged block's language, for it alone
    assert records[0].read_bytes() != bytes(flip)   # made again and put back
    monkeypatch.undo()
    highlight.highlight.cache_clear()
    assert files_of(project / "site") == site_files(project)


def test_highlighted_code_outlives_changes_to_the_rest_of_the_code(project: Path, monkeypatch):
    """The highlighted blocks are keyed by the highlighter's version, not the whole code's: after
    a change elsewhere in the package (another build version: every entry checked and every page
    rendered again) no lexer is built, and the store gains no second set of records; a change to
    the highlighter highlights every block again."""
    from rootcause.site import highlight

    highlight.highlight.cache_clear()
    build(project, progress=False, force=True)
    store = store_of(project) / "build-code"
    before = sorted(p.name for p in store.iterdir())
    built, lexer = [], highlight._lexer
    monkeypatch.setattr(highlight, "_lexer", lambda language: built.append(language) or lexer(language))
    monkeypatch.setattr(builder, "build_version", lambda: "another version of the code")
    (project / "site.yml").write_text((project / "site.yml").read_text(encoding="utf-8") + "\n", encoding="utf-8")
    highlight.highlight.cache_clear()
    result = build(project, progress=False)
    assert result.rendered == result.pages and result.checked == result.entries
    assert built == []
    assert sorted(p.name for p in store.iterdir()) == before

    monkeypatch.setattr(highlight, "highlighter_version", lambda: "another highlighter")
    monkeypatch.setattr(builder, "build_version", lambda: "a third version of the code")
    (project / "site.yml").write_text((project / "site.yml").read_text(encoding="utf-8") + "\n", encoding="utf-8")
    highlight.highlight.cache_clear()
    build(project, progress=False)
    assert len(built) >= 2 and len(list(store.iterdir())) > len(before)
    monkeypatch.undo()
    highlight.highlight.cache_clear()
    assert files_of(project / "site") == site_files(project)
