"""Issue 36, finding 1: a branch cannot plant build results into the maintainer's cache.

git writes ignored files when it switches branches: a branch that force-adds files under
`.rootcause-cache/` (where earlier versions kept their records) puts them into the maintainer's
tree, and a record checked only by a SHA-256 of its own body is forged by anyone. The store
(`rootcause.cache`) therefore lives in the user's own cache folder, keyed by the project's path,
and nothing under the project folder is read as a record. These tests replay the attack with git:
build; in a clone, forge well-formed page records (their hashes right) and commit them on a
branch, force-added; check that branch out in the first tree; build; the forged page is not
published, and the site is the one a cold build makes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import files_of

from rootcause import cache
from rootcause.site.builder import build, site_files

PLANTED = b"<p>PLANTED BY A PULL REQUEST</p>"
GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")   # Debian's git is in the image


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    return subprocess.run([GIT, *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def forged(record: bytes) -> bytes:
    """A page record rewritten to carry other HTML, its SHA-256 right."""
    body = record.split(b"\n", 1)[1].replace(b"<main", PLANTED + b"<main", 1)
    assert PLANTED in body
    return cache.RECORD_MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def plant(where: Path, records: Path) -> int:
    """Forge every page record of `records` into `where` (a folder of the attacker's tree)."""
    where.mkdir(parents=True, exist_ok=True)
    for record in records.iterdir():
        (where / record.name).write_bytes(forged(record.read_bytes()))
    return len(list(where.iterdir()))


def test_a_branch_cannot_plant_pages(small_project: Path, tmp_path: Path, monkeypatch):
    victim = small_project
    (victim / ".gitignore").write_text("/site/\n/.rootcause-cache/\n/.site.lock\n")
    git(victim, "init", "-q", "-b", "main")
    git(victim, "add", "-A")
    git(victim, "commit", "-q", "-m", "project")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "victim-cache"))
    build(victim, progress=False)

    # the attacker, on their own machine: same code, so the same page keys
    attacker = tmp_path / "attacker"
    git(tmp_path, "clone", "-q", str(victim), str(attacker))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "attacker-cache"))
    build(attacker, progress=False)
    pages = cache.project_folder(attacker) / "build-pages"
    # wherever a record could be looked for in the tree: the old layout, and the store's own names
    assert plant(attacker / ".rootcause-cache" / "build-pages", pages) > 3
    plant(attacker / ".rootcause-cache" / "projects" / pages.parent.name / "build-pages", pages)
    entry = next((attacker / "entries").glob("*.yaml"))   # and an edit, so that the victim builds again
    entry.write_text(entry.read_text(encoding="utf-8").replace("\ntitle: ", "\ntitle: Edited ", 1), encoding="utf-8")
    git(attacker, "checkout", "-q", "-b", "innocent-fix")
    git(attacker, "add", "-f", ".rootcause-cache")
    git(attacker, "commit", "-q", "-am", "fix a title")

    # the maintainer checks the pull request out and builds it
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "victim-cache"))
    git(victim, "fetch", "-q", str(attacker), "innocent-fix:innocent-fix")
    git(victim, "checkout", "-q", "innocent-fix")
    assert list((victim / ".rootcause-cache" / "build-pages").iterdir())   # git put them there
    result = build(victim, progress=False)
    assert result.checked == 1 and result.rendered < result.pages   # the maintainer's own records used
    site = files_of(victim / "site")
    assert not any(PLANTED in body for body in site.values())
    assert site == site_files(victim)


def test_the_store_is_outside_the_project(small_project: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "own"))
    before = {p.name for p in small_project.iterdir()}
    build(small_project, progress=False)
    assert {p.name for p in small_project.iterdir()} - before <= {"site", ".site.lock"}
    store = cache.project_folder(small_project)
    assert store is not None and tmp_path / "own" in store.parents
    assert (store / "build-pages").is_dir() and (store / "build-entries").is_dir()
    assert os.stat(store).st_mode & 0o077 == 0


def test_records_in_the_store_are_what_a_build_trusts(small_project: Path, tmp_path: Path, monkeypatch):
    """The other side of the boundary: the same forged records, in the user's own store, are
    read (they are well formed). Where a record lives, not its hash, is what keeps it out."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "own"))
    build(small_project, progress=False)
    pages = cache.project_folder(small_project) / "build-pages"
    for record in pages.iterdir():
        record.write_bytes(forged(record.read_bytes()))
    shutil.rmtree(small_project / "site")
    result = build(small_project, progress=False)
    assert result.rendered < result.pages
    assert any(PLANTED in body for body in files_of(small_project / "site").values())


def test_without_a_folder_of_ones_own_there_is_no_cache(small_project: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    monkeypatch.setenv("HOME", "relative")
    result = build(small_project, progress=False)
    assert result.pages > 1 and result.rendered == result.pages
    assert files_of(small_project / "site") == site_files(small_project)


def test_a_store_open_to_others_is_not_used(small_project: Path, tmp_path: Path, monkeypatch):
    home = tmp_path / "shared"
    (home / "rootcause" / "projects").mkdir(parents=True)
    os.chmod(home / "rootcause" / "projects", 0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    assert cache.project_folder(small_project) is None
    build(small_project, progress=False)
    assert files_of(small_project / "site") == site_files(small_project)
