"""Issue 12: with many pages, forked render workers write the pages they render into the staging
folder themselves and send back only each file's hash (`SiteWriter.put` / `record`). The bundled
site has fewer pages than it takes to start workers, so these tests lower the threshold."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO, copy_bundled_project, files_of

from rootcause.errors import RootcauseError
from rootcause.site import builder
from rootcause.site.builder import build, site_files
from rootcause.site.write import file_digest, read_manifest


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setattr(builder, "PARALLEL_PAGES", 20)
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
    assert not again.in_place and again.reused == len(site) and again.written == 0
    assert files_of(project / "site") == site


def test_a_template_error_in_a_worker_keeps_the_last_site(project: Path):
    build(project, progress=False)
    before = files_of(project / "site")
    theme = project / "mytheme" / "templates"
    theme.mkdir(parents=True)
    text = (REPO / "theme" / "templates" / "entry.html").read_text(encoding="utf-8")
    # one page fails, not the first of its template (that one is rendered before the workers start)
    broken = '{% if page.path == "entries/nccl-watchdog-collective-timeout/index.html" %}{{ no_such_value.x }}{% endif %}'
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
