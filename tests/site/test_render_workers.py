"""Issue 12: with many pages, forked render workers write the pages they render into the staging
folder themselves and send back only each file's hash (`SiteWriter.put` / `record`). The bundled
site has fewer pages than it takes to start workers, so these tests lower the threshold."""

from __future__ import annotations

import json
import os
from concurrent.futures import Future
from pathlib import Path

import pytest

from conftest import REPO, copy_bundled_project, files_of

from rootcause.errors import RootcauseError
from rootcause.site import page_workers
from rootcause.site.builder import build, site_files
from rootcause.site.write import file_digest, read_manifest


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setattr(page_workers, "PARALLEL_PAGES", 20)
    project = copy_bundled_project(tmp_path / "project")
    return project


def test_pages_written_by_workers_are_the_site_and_its_state(project: Path):
    result = build(project, progress=False, force=True)
    site = files_of(project / "site")
    assert site == site_files(project)   # the same pages rendered in workers and sent back whole
    state = read_manifest(project / "site", project)["files"]
    assert state == {path: file_digest(data) for path, data in site.items()}
    assert result.written == len(site) and result.reused == 0
    # a full build over the last one links every unchanged page from it, in the workers too
    (project / "site.yml").write_text((project / "site.yml").read_text() + "\n# edited\n")
    again = build(project, progress=False)
    assert again.reused == len(site) and again.written == 0
    assert files_of(project / "site") == site


# the workers are given every entry page, in chunks of 20 by id, and start with the first; the
# build's own process renders the other pages, then the chunks no worker has started, from the
# last: with the worker slowed down, the last entry's page is rendered here, the second's there
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: every page is rendered by the build's own process")
@pytest.mark.parametrize("here", [True, False])
def test_a_template_error_where_a_page_is_rendered_keeps_the_last_site(project: Path, here: bool,
                                                                          monkeypatch, tmp_path: Path):
    import time

    from rootcause.entries import catalog
    from rootcause.site.render import Renderer

    log = tmp_path / "rendered-by.txt"
    parent, real_render, real_from_record = os.getpid(), Renderer.render, catalog.from_record
    slowed: list = []

    def render(self, page):   # forked workers inherit it: each appends its process id
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {page.path}\n")
        return real_render(self, page)

    def from_record(body, config):   # a worker's first entry: 3 s
        if os.getpid() != parent and not slowed:
            slowed.append(time.sleep(3))
        return real_from_record(body, config)

    monkeypatch.setattr(Renderer, "render", render)
    monkeypatch.setattr(catalog, "from_record", from_record)
    monkeypatch.setattr(page_workers, "CHUNK", 20)   # (a pool hands out two chunks at once: those are not taken back)
    ids = sorted(p.stem for p in (project / "entries").glob("*.yaml"))
    failing = ids[-1] if here else ids[1]
    build(project, progress=False)
    by = dict(reversed(line.split(" ", 1)) for line in log.read_text(encoding="utf-8").splitlines())
    assert len(set(by.values())) >= 2   # this process and at least one worker
    assert (by[f"entries/{failing}/index.html"] == str(os.getpid())) == here
    before = files_of(project / "site")
    theme = project / "mytheme" / "templates"
    theme.mkdir(parents=True)
    text = (REPO / "theme" / "templates" / "entry.html").read_text(encoding="utf-8")
    # one page fails, not the first of its template (that one is rendered before the workers start)
    broken = '{% if page.path == "entries/' + failing + '/index.html" %}{{ no_such_value.x }}{% endif %}'
    (theme / "entry.html").write_text(text.replace("{% block content %}", "{% block content %}" + broken, 1),
                                      encoding="utf-8")
    (project / "site.yml").write_text((project / "site.yml").read_text() + "\ntheme: mytheme\n")
    with pytest.raises(RootcauseError) as caught:
        build(project, progress=False)
    assert "mytheme/templates/entry.html:" in str(caught.value) and "no_such_value" in str(caught.value)
    assert files_of(project / "site") == before
    assert not list(project.glob(".site.staging-*"))


def test_two_outputs_of_one_path_leave_the_last_site_whole(tmp_path: Path):
    """The second file of a path is refused before anything is opened at it: the first may be a
    hard link to the last build's file, which writing through it would change in the live site."""
    from rootcause.site.write import SiteWriter

    out = tmp_path / "site"
    with SiteWriter(out) as writer:
        writer.add("a/index.html", b"first")
        previous = writer.commit()["files"]
    with pytest.raises(RootcauseError) as caught:
        with SiteWriter(out, previous=previous) as writer:
            writer.add("a/index.html", b"first")          # linked from the last build
            assert writer.reused == 1
            writer.add("a/index.html", b"second")
    assert caught.value.diagnostics[0].code == "E050"
    assert (out / "a" / "index.html").read_bytes() == b"first"
    assert not list(tmp_path.glob(".site.staging-*"))


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: every page is rendered by the build's own process")
def test_workers_forked_before_the_catalog_render_from_records_and_fall_back_here(project: Path, monkeypatch,
                                                                                   tmp_path: Path):
    """The workers of a build are forked before any entry is loaded (they share none of the
    catalog's memory) and read their entries from the build cache's records. An entry whose
    record a worker cannot read is rendered by the build's own process instead. Three cores give
    two workers, sent chunks of 20 pages: a worker makes its renderer once, not once a chunk.
    (The build's process takes back the chunks no worker has started once it has rendered the
    other pages; here it takes none.)"""
    from rootcause.entries import catalog, project as project_module
    from rootcause.site.render import Renderer

    log = tmp_path / "events.txt"
    parent = os.getpid()

    def note(text: str) -> None:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {text}\n")

    real_load, real_from_record, real_render = project_module.load_catalog, catalog.from_record, Renderer.render
    real_init, real_renderer = page_workers.EntryPageWorkers.__init__, Renderer.__init__

    def load_catalog(*args, **kwargs):
        note("load")
        return real_load(*args, **kwargs)

    def from_record(body, config):   # in a worker, the record of one entry cannot be read
        if os.getpid() != parent and json.loads(body)["entry"]["id"] == "nccl-watchdog-collective-timeout":
            raise ValueError("not an entry record: damaged")
        return real_from_record(body, config)

    def render(self, page):
        note(f"render {page.path}")
        return real_render(self, page)

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        note("forked")

    def renderer(self, *args, **kwargs):
        note("renderer")
        real_renderer(self, *args, **kwargs)

    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    monkeypatch.setattr(project_module, "load_catalog", load_catalog)
    monkeypatch.setattr(catalog, "from_record", from_record)
    monkeypatch.setattr(Renderer, "render", render)
    monkeypatch.setattr(page_workers.EntryPageWorkers, "__init__", init)
    monkeypatch.setattr(Renderer, "__init__", renderer)
    monkeypatch.setattr(page_workers, "CHUNK", 20)
    monkeypatch.setattr(Future, "cancel", lambda self: False)   # no chunk taken back: the workers render them all
    build(project, progress=False, force=True)
    events = [line.split(" ", 1) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [text for pid, text in events if pid == str(parent)][:2] == ["forked", "load"]
    by = {text.split(" ", 1)[1]: pid for pid, text in events if text.startswith("render ")}
    workers = set(by.values()) - {str(parent)}
    assert workers and all([pid for pid, text in events if text == "renderer"].count(w) == 1 for w in workers)
    entry_pages = [path for path in by if path.startswith("entries/") and path.count("/") == 2]
    by_workers = sum(by[path] in workers for path in entry_pages)
    # every entry page but the template check's (rendered first, here) and the one whose record
    # they cannot read, whatever the number of entries
    assert by_workers == len(entry_pages) - 2, (by_workers, len(entry_pages))
    assert by["entries/nccl-watchdog-collective-timeout/index.html"] == str(parent)   # fell back here
    assert all(by[path] == str(parent) for path in by if not path.startswith("entries/"))
    assert files_of(project / "site") == site_files(project)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: every page is rendered by the build's own process")
def test_a_render_worker_that_dies_leaves_its_pages_to_the_build(project: Path, monkeypatch, tmp_path: Path):
    """A worker killed in the middle of a chunk (by the kernel's out-of-memory killer, say) has
    written some of its pages: the build's process removes them and renders the chunk itself,
    and every later one; the site is whole. The same for the workers forked when rendering
    starts (`site_files` here), which used to wait for the dead one for ever."""
    from rootcause.site.render import Renderer

    parent, real_render, deaths = os.getpid(), Renderer.render, tmp_path / "deaths.txt"
    entry_pages_by = {}   # process id -> entry pages it rendered; a forked worker starts at none

    def render(self, page):
        data = real_render(self, page)
        if page.path.startswith("entries/") and page.path.count("/") == 2:
            pid = os.getpid()
            entry_pages_by[pid] = entry_pages_by.get(pid, 0) + 1
            if pid != parent and entry_pages_by[pid] == 2:   # after the chunk's first page was written
                with open(deaths, "a", encoding="utf-8") as out:
                    # the workers forked when rendering starts inherit the job they render
                    out.write("forked-with-the-pages\n" if page_workers._render_job else "forked-ahead\n")
                os._exit(9)
        return data

    monkeypatch.setattr(Renderer, "render", render)
    monkeypatch.setattr(page_workers, "CHUNK", 20)
    monkeypatch.setattr(Future, "cancel", lambda self: False)   # no chunk taken back: the workers meet that page
    result = build(project, progress=False, force=True)
    site = files_of(project / "site")
    assert result.written == len(site) and site == site_files(project)
    # a worker of each kind died (with more cores, another of a pool may die before it is shut down)
    assert set(deaths.read_text(encoding="utf-8").split()) == {"forked-ahead", "forked-with-the-pages"}
    assert read_manifest(project / "site", project)["files"] == {path: file_digest(data) for path, data in site.items()}
