"""A `.rootcause-cache/` that arrives with the project's files (committed by a pull request, say)
is never read: its records could hold pages, entries or an index that a build would take as its
own. Only a cache folder whose token this user's own folder lists (`cache._own_cache_folder`)
is used; anything else is moved aside, removed and made again."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from conftest import files_of

from rootcause import cache
from rootcause.site.builder import build, site_files

PLANTED = b"<p>PLANTED BY A PULL REQUEST</p>"


def forge_pages(project: Path) -> int:
    """Rewrite every page record as a well-formed record (its SHA-256 right) of other HTML."""
    forged = 0
    for path in (project / cache.CACHE_FOLDER / "build-pages").iterdir():
        body = path.read_bytes().split(b"\n", 1)[1].replace(b"<main", PLANTED + b"<main", 1)
        path.write_bytes(cache.RECORD_MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        forged += 1
    return forged


def test_records_made_elsewhere_are_never_used(small_project: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "attacker"))
    build(small_project, progress=False)
    token = (small_project / cache.CACHE_FOLDER / cache.OWNER).read_text().strip()
    assert forge_pages(small_project) > 3
    shutil.rmtree(small_project / "site")
    # the same files checked out on another machine (another user's cache folder)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "victim"))
    result = build(small_project, progress=False)
    assert result.rendered == result.pages   # nothing came from the planted records
    site = files_of(small_project / "site")
    assert not any(PLANTED in body for body in site.values())
    assert site == site_files(small_project)
    made = (small_project / cache.CACHE_FOLDER / cache.OWNER).read_text().strip()
    assert made != token and (tmp_path / "victim" / "rootcause" / "projects" / made).is_file()
    assert not list(small_project.glob(f"{cache.CACHE_FOLDER}.*"))   # the planted folder is gone


def test_the_check_is_what_stands_between_them(small_project: Path, tmp_path: Path, monkeypatch):
    """The same forged records in this user's own cache folder are read (they are well formed):
    the owner's token, not the records' hashes, is what keeps a planted folder out."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "own"))
    build(small_project, progress=False)
    forge_pages(small_project)
    shutil.rmtree(small_project / "site")
    result = build(small_project, progress=False)
    assert result.rendered < result.pages
    assert any(PLANTED in body for body in files_of(small_project / "site").values())


def test_a_project_copied_by_its_user_keeps_its_cache(small_project: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "own"))
    build(small_project, progress=False)
    copy = tmp_path / "copy"
    shutil.copytree(small_project, copy, ignore=shutil.ignore_patterns("site"))
    result = build(copy, progress=False)
    assert result.checked == 0 and result.rendered == 0   # every entry and page from the copied records
    assert files_of(copy / "site") == files_of(small_project / "site")


def test_without_a_folder_of_ones_own_there_is_no_cache(small_project: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    monkeypatch.setenv("HOME", "relative")
    result = build(small_project, progress=False)
    assert result.pages > 1 and not (small_project / cache.CACHE_FOLDER).exists()
    assert files_of(small_project / "site") == site_files(small_project)


def test_a_file_in_the_cache_folders_place_is_left_alone(small_project: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "own"))
    (small_project / cache.CACHE_FOLDER).write_bytes(b"not a folder")
    build(small_project, progress=False)
    assert (small_project / cache.CACHE_FOLDER).read_bytes() == b"not a folder"
    assert files_of(small_project / "site") == site_files(small_project)
