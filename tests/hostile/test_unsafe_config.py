"""Issue 9, item 9: configuration that would let a site load from elsewhere or run code is refused.

`url: https://host//evil.example/` made the 404 page (which links from the site's root path)
load its scripts from `//evil.example/`; a `theme:` folder outside the project was accepted, and
its templates could run shell commands during the build.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import copy_bundled_project, run_cli

HOSTILE = Path(__file__).resolve().parent
TIMEOUT = 60


def site_files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


@pytest.mark.parametrize("url", ["https://host//evil.example/", "https://host/a//b/", "https://host/a/../b/",
                                 "https://host/?next=//evil.example/", "https://user@host/", "https://host/a\\b/"])
def test_a_site_url_whose_path_is_not_plain_is_refused(small_project: Path, url: str):
    site_yml = small_project / "site.yml"
    text = site_yml.read_text()
    line = text[:text.index("\nurl: ")].count("\n") + 2
    site_yml.write_text(text.replace("\nurl: https://rootcause.github.io/rootcause/\n", f"\nurl: {url}\n"))
    result = run_cli("--root", str(small_project), "build", timeout=TIMEOUT)
    assert result.returncode == 1
    assert f"site.yml:{line}:6: error[E015]: url: '{url}' is not a plain site address" in result.stderr.decode()
    assert not (small_project / "site").exists()


def test_the_404_page_links_only_under_the_sites_own_path():
    from rootcause.config import SiteConfig

    def base(url: str) -> str:
        return SiteConfig.model_construct(url=url).base_path

    assert base("https://owner.github.io/rootcause/") == "/rootcause/"
    assert base("https://example.org") == "/"
    assert base("https://example.org/a/b") == "/a/b/"
    assert base("https://host//evil.example/") == "/evil.example/"  # never "//": not another host


def test_a_theme_template_cannot_run_commands(small_project: Path):
    assert run_cli("--root", str(small_project), "build", "-q", timeout=TIMEOUT).returncode == 0
    before = site_files(small_project / "site")
    shutil.copytree(HOSTILE / "theme-popen", small_project / "theme-popen")
    site_yml = small_project / "site.yml"
    site_yml.write_text(site_yml.read_text() + "theme: theme-popen\n")
    result = run_cli("--root", str(small_project), "build", timeout=TIMEOUT)
    assert result.returncode == 1
    assert result.stderr.decode().startswith(
        "theme-popen/templates/404.html:6:1: error[E041]: the template reached outside the sandbox: access to "
        "attribute '__init__' of ")
    assert list(small_project.rglob("*.pwned")) == [] and list(Path.cwd().glob("*.pwned")) == []
    assert site_files(small_project / "site") == before


def test_with_a_theme_folder_every_template_renders_in_the_sandbox(tmp_path: Path):
    """A site with a theme folder renders all its templates, the bundled ones too, in the sandbox;
    they need nothing it refuses, and the site is byte for byte the one built without a theme
    folder (where only the bundled templates run, outside the sandbox). On the bundled entries,
    so that every branch of the templates is taken."""
    from jinja2.sandbox import SandboxedEnvironment

    from rootcause.config import load_config
    from rootcause.site.builder import build
    from rootcause.site.render import Renderer

    project = copy_bundled_project(tmp_path / "project")
    config, _ = load_config(project)
    assert not isinstance(Renderer(config, project, {}).env, SandboxedEnvironment)
    plain = build(project, progress=False, out=tmp_path / "plain")
    (project / "mytheme" / "templates").mkdir(parents=True)
    site_yml = project / "site.yml"
    site_yml.write_text(site_yml.read_text() + "theme: mytheme\n")
    config, _ = load_config(project)
    assert isinstance(Renderer(config, project, {}).env, SandboxedEnvironment)
    themed = build(project, progress=False, out=tmp_path / "themed")
    assert themed.pages == plain.pages > 10 and (tmp_path / "themed" / "coverage" / "index.html").is_file()
    assert site_files(tmp_path / "themed") == site_files(tmp_path / "plain")
