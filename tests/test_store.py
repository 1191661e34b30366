"""The project's store (`rootcause.cache`): records by key, whole or a miss, in a folder of the
user's own that nothing in the project can write."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from rootcause import cache


@pytest.fixture
def store(tmp_path: Path, monkeypatch) -> cache.RecordStore:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    return cache.RecordStore(tmp_path / "project", "build-pages")


def test_a_record_comes_back_as_it_was_put(store: cache.RecordStore):
    assert store.get("a" * 32) is None
    assert store.put("a" * 32, b"body")
    assert store.get("a" * 32) == b"body"
    assert store.folder is not None and store.folder.parent.parent.name == "projects"


@pytest.mark.parametrize("damage", ["flipped", "cut short", "longer", "empty", "another format", "link", "folder"])
def test_a_record_that_is_not_whole_is_a_miss(store: cache.RecordStore, damage: str, tmp_path: Path):
    store.put("b" * 32, b"the body of a record")
    path = store.folder / ("b" * 32)
    data = path.read_bytes()
    if damage == "flipped":
        path.write_bytes(data[:-3] + bytes([data[-3] ^ 1]) + data[-2:])
    elif damage == "cut short":
        path.write_bytes(data[:-1])
    elif damage == "longer":
        path.write_bytes(data + b"x")
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "another format":
        path.write_bytes(data.replace(b"record 1", b"record 2", 1))
    elif damage == "link":   # a whole record, but reached through a link: never followed
        (tmp_path / "elsewhere").write_bytes(data)
        path.unlink()
        path.symlink_to(tmp_path / "elsewhere")
    else:
        path.unlink()
        path.mkdir()
    assert store.get("b" * 32) is None


def test_a_put_over_a_link_replaces_the_link_not_its_target(store: cache.RecordStore, tmp_path: Path):
    target = tmp_path / "target"
    target.write_bytes(b"precious")
    (store.folder / ("c" * 32)).symlink_to(target)
    assert store.put("c" * 32, b"new")
    assert target.read_bytes() == b"precious" and store.get("c" * 32) == b"new"


def test_keys_and_kinds_are_names_never_paths(store: cache.RecordStore, tmp_path: Path):
    for key in ("../" + "a" * 32, "A" * 32, "short", "a" * 32 + "/x"):
        with pytest.raises(ValueError):
            store.get(key)
    with pytest.raises(ValueError):
        cache.RecordStore(tmp_path, "../pages")


def test_prune_keeps_what_this_store_used(store: cache.RecordStore, tmp_path: Path):
    for key in ("d" * 32, "e" * 32):
        store.put(key, key.encode())
    again = cache.RecordStore(tmp_path / "project", "build-pages")
    assert again.get("d" * 32) == b"d" * 32
    assert again.prune() == 1
    assert sorted(p.name for p in again.folder.iterdir()) == ["d" * 32]


def test_records_used_by_other_processes_are_kept_for_idle_days(store: cache.RecordStore, tmp_path: Path):
    """A store with `idle_days` keeps what another process (a forked render worker) read or put
    within that many days, though this one never asked for it, and removes what nobody used."""
    project = tmp_path / "project"
    worker = cache.RecordStore(project, "build-code", idle_days=7)
    for key in ("a" * 40, "b" * 40, "c" * 40):
        worker.put(key, key.encode())
    folder = worker.folder
    day, now = cache.DAY, os.path.getmtime(folder / ("a" * 40))
    os.utime(folder / ("b" * 40), (now - 8 * day, now - 8 * day))     # nobody used it this week
    os.utime(folder / ("c" * 40), (now - 2 * day, now - 2 * day))     # read two days ago ...
    assert cache.RecordStore(project, "build-code", idle_days=7).get("c" * 40) == b"c" * 40
    assert os.path.getmtime(folder / ("c" * 40)) > now - day          # ... and that read set its time
    assert cache.RecordStore(project, "build-code", idle_days=7).prune() == 1
    assert sorted(p.name for p in folder.iterdir()) == ["a" * 40, "c" * 40]
    assert cache.RecordStore(project, "build-code").prune() == 2   # without idle_days: one build's worth


def test_projects_have_stores_of_their_own(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    one, other = cache.project_folder(tmp_path / "one"), cache.project_folder(tmp_path / "other")
    assert one is not None and other is not None and one != other
    (tmp_path / "link").symlink_to(tmp_path / "one")
    assert cache.project_folder(tmp_path / "link") == one   # by the real path


def test_a_record_body_is_checked_against_its_sha256(store: cache.RecordStore):
    store.put("f" * 32, b"x" * 1000)
    data = (store.folder / ("f" * 32)).read_bytes()
    assert data == cache.RECORD_MAGIC + hashlib.sha256(b"x" * 1000).hexdigest().encode() + b"\n" + b"x" * 1000


def _age(path: Path, days: float) -> None:
    then = os.stat(path).st_mtime - days * cache.DAY
    os.utime(path, (then, then))


def test_sweep_removes_the_stores_of_projects_gone_or_idle_and_keeps_the_rest(tmp_path: Path, monkeypatch):
    """Every folder ever built in gets a store (clones in temporary folders, benchmark sites), so
    a user's cache grew by a gigabyte a day of such builds; sweep keeps what a live project uses."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    live, gone, idle = (tmp_path / name for name in ("live", "gone", "idle"))
    stores = {}
    for project in (live, gone, idle):
        project.mkdir()
        store = cache.RecordStore(project, "build-pages")
        assert store.put("c" * 32, b"page")
        stores[project.name] = store.folder.parent
        assert (store.folder.parent / cache.ROOT_MARK).read_bytes() == os.fsencode(os.path.realpath(project))
    gone.rmdir()
    _age(stores["idle"] / cache.ROOT_MARK, cache.STALE_DAYS + 1)
    _age(stores["live"] / cache.ROOT_MARK, cache.STALE_DAYS - 1)
    old_templates = tmp_path / "home" / "rootcause" / "templates-plain-x"
    old_templates.mkdir()
    _age(old_templates, cache.STALE_DAYS + 1)

    assert cache.sweep() == 3
    assert stores["live"].is_dir() and not stores["gone"].exists() and not stores["idle"].exists()
    assert not old_templates.exists()
    assert cache.RecordStore(live, "build-pages").get("c" * 32) == b"page"

    # at most once a day: a store gone since is left for the next day's sweep
    live_store = stores["live"]
    live.rmdir()
    assert cache.sweep() == 0 and live_store.is_dir()
    assert cache.sweep(now=os.stat(live_store.parent / cache.SWEPT_MARK).st_mtime + cache.DAY + 1) == 1
    assert not live_store.exists()


def test_a_store_used_again_has_its_mark_renewed(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    store = cache.RecordStore(tmp_path, "build-pages")
    mark = store.folder.parent / cache.ROOT_MARK
    _age(mark, cache.STALE_DAYS + 1)
    cache.RecordStore(tmp_path, "build-pages")
    assert os.stat(mark).st_mtime > os.path.getmtime(tmp_path) - cache.DAY
    assert cache.sweep() == 0
