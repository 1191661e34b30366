"""Compiled templates kept in the user's cache folder (`rootcause.site.template_cache`): loaded
instead of compiled, never trusted when damaged, made from other source or kept where others
can write, and never kept in the project."""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
import pytest

from rootcause.config import load_config
from rootcause.site.render import Page, Renderer
from rootcause.site.stamps import collect_assets
from rootcause.site.template_cache import bytecode_cache


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch) -> Path:
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


@pytest.fixture
def compiles(monkeypatch) -> list[str]:
    """The names of the templates jinja2 compiles from source."""
    names: list[str] = []
    real = jinja2.Environment.compile

    def spy(self, source, name=None, filename=None, raw=False, defer_init=False):
        names.append(name)
        return real(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(jinja2.Environment, "compile", spy)
    return names


def renderer(project: Path, keep_compiled: bool = True) -> Renderer:
    config = load_config(project)[0]
    return Renderer(config, project, collect_assets(project, config)[0], keep_compiled=keep_compiled)


def search_page(renderer: Renderer) -> bytes:
    base = renderer.config.base_url
    return renderer.render(Page("search/index.html", "search.html", "Search", "Search error messages.",
                                {"canonical": base + "search/"}))


def kept_files(home: Path, kind: str = "plain") -> list[Path]:
    return sorted(home.glob(f"rootcause/templates-{kind}-*/*.cache"))


def test_a_second_renderer_loads_what_the_first_compiled(small_project: Path, cache_home: Path, compiles: list):
    first = search_page(renderer(small_project))
    assert "search.html" in compiles and "base.html" in compiles
    assert len(kept_files(cache_home)) == len(set(compiles))
    folder = kept_files(cache_home)[0].parent
    assert folder.stat().st_mode & 0o777 == 0o700
    compiles.clear()
    assert search_page(renderer(small_project)) == first
    assert compiles == []
    # nothing of it in the project
    assert not [p for p in small_project.rglob("*.cache")]


def test_without_keep_compiled_nothing_is_read_or_kept(small_project: Path, cache_home: Path, compiles: list):
    plain = renderer(small_project, keep_compiled=False)
    assert plain.env.bytecode_cache is None
    search_page(plain)
    assert kept_files(cache_home) == [] and "search.html" in compiles


def test_a_damaged_file_is_compiled_again(small_project: Path, cache_home: Path, compiles: list):
    first = search_page(renderer(small_project))
    for path in kept_files(cache_home):
        data = path.read_bytes()
        path.write_bytes(data[:len(data) // 2])   # cut short
    compiles.clear()
    assert search_page(renderer(small_project)) == first
    assert "search.html" in compiles
    for path in kept_files(cache_home):
        path.write_bytes(b"not what jinja2 writes")
    compiles.clear()
    assert search_page(renderer(small_project)) == first
    assert "search.html" in compiles


def test_a_changed_template_is_never_served_from_the_old_code(small_project: Path, cache_home: Path):
    search_page(renderer(small_project))
    theme = small_project / "mytheme" / "templates"
    theme.mkdir(parents=True)
    from rootcause.site.render import theme_folder

    source = (theme_folder() / "templates" / "search.html").read_text(encoding="utf-8")
    (theme / "search.html").write_text(source.replace("{% block content %}", "{% block content %}<p>edited</p>", 1),
                                       encoding="utf-8")
    site_yml = small_project / "site.yml"
    site_yml.write_text(site_yml.read_text(encoding="utf-8") + "theme: mytheme\n", encoding="utf-8")
    assert b"<p>edited</p>" in search_page(renderer(small_project))
    # the sandboxed environment of a site with a theme keeps its code apart
    assert kept_files(cache_home, "sandboxed") and kept_files(cache_home, "plain")
    (theme / "search.html").write_text(source.replace("{% block content %}", "{% block content %}<p>again</p>", 1),
                                       encoding="utf-8")
    page = search_page(renderer(small_project))
    assert b"<p>again</p>" in page and b"<p>edited</p>" not in page


def test_a_folder_others_can_write_is_not_used(cache_home: Path):
    assert bytecode_cache(sandboxed=False) is not None
    folder = next(cache_home.glob("rootcause/templates-plain-*"))
    folder.chmod(0o777)
    assert bytecode_cache(sandboxed=False) is None
    folder.chmod(0o700)
    assert bytecode_cache(sandboxed=False) is not None


def test_no_folder_of_ones_own_means_no_cache(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")   # the XDG spec: ignored, and so no cache here
    monkeypatch.setenv("HOME", "relative")
    assert bytecode_cache(sandboxed=False) is None
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert bytecode_cache(sandboxed=False) is None
    # the folder itself a symbolic link (to a folder closed to others): not used
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "first"))
    name = Path(bytecode_cache(sandboxed=False).directory).name
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "second" / "rootcause").mkdir(parents=True)
    os.symlink(elsewhere, tmp_path / "second" / "rootcause" / name)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "second"))
    assert bytecode_cache(sandboxed=False) is None


def test_builds_keep_them_and_a_cacheless_one_does_not(small_project: Path, tmp_path: Path, monkeypatch):
    import shutil

    from rootcause.site.builder import build, site_files

    from conftest import files_of

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cacheless"))
    site = site_files(small_project)   # the build cache off: compiled afresh, nothing kept
    assert kept_files(tmp_path / "cacheless") == []
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "forced"))
    forced = build(small_project, progress=False, force=True)
    assert forced.pages > 1 and len(kept_files(tmp_path / "forced")) >= 10   # every template a page is made with
    assert files_of(small_project / "site") == site
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "used"))
    shutil.rmtree(small_project / "site")
    build(small_project, progress=False)
    assert len(kept_files(tmp_path / "used")) >= 10
    assert files_of(small_project / "site") == site
