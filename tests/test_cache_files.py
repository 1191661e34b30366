"""Cache files whose large sections are shared (`.rootcause-cache/sections/<SHA-256>`): a later
file refers to an unchanged section instead of writing it again, a damaged, missing or swapped
shared section is a miss and never trusted, and sections no file names are pruned, but never
from under a reader that has the file open."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from cache_helpers import flip_byte, sections

from rootcause import cache

KIND = "rootcause test cache"
BIG = bytes(range(256)) * 1024            # 256 KiB: stored shared
SMALL = b'{"a": 1}'                        # stored in the file itself


def _write(root: Path, **values) -> bool:
    return cache.write_cache(root, "test-file", KIND, {"format": 1}, values, per_record=("records",))


def _read(root: Path) -> cache.CacheFile | None:
    return cache.read_cache(root, "test-file", KIND)


def _shared(root: Path) -> Path:
    return root / cache.CACHE_FOLDER / cache.SHARED


def test_large_sections_are_shared_and_read_back(tmp_path: Path):
    assert _write(tmp_path, small=SMALL, big=BIG, records=BIG[::-1])
    layout = {item[0]: item for item in sections(tmp_path / cache.CACHE_FOLDER / "test-file")}
    assert len(layout["small"]) == 3 and layout["big"][3:] == ["shared"]
    assert (_shared(tmp_path) / hashlib.sha256(BIG).hexdigest()).read_bytes() == BIG
    read = _read(tmp_path)
    assert (read.section("small"), read.section("big"), read.section("records")) == (SMALL, BIG, BIG[::-1])
    assert read.verify()
    read.close()


def test_a_kept_section_is_neither_written_nor_hashed_again(tmp_path: Path, monkeypatch):
    assert _write(tmp_path, small=SMALL, big=BIG, records=BIG[::-1])
    shared = _shared(tmp_path) / hashlib.sha256(BIG).hexdigest()
    inode = shared.stat().st_ino
    old = _read(tmp_path)
    hashed = []
    real = hashlib.sha256
    monkeypatch.setattr(cache.hashlib, "sha256", lambda data=b"": hashed.append(len(data)) or real(data))
    assert _write(tmp_path, small=old.kept("small"), big=old.kept("big"), records=b"new records" * 10000)
    old.close()
    assert hashed == [len(b"new records" * 10000)]    # only the new section was hashed
    assert shared.stat().st_ino == inode             # and the kept one not written again
    read = _read(tmp_path)
    assert (read.section("small"), read.section("big")) == (SMALL, BIG)
    read.close()


def test_a_closed_file_is_not_kept_from(tmp_path: Path):
    assert _write(tmp_path, small=SMALL, big=BIG)
    old = _read(tmp_path)
    kept = old.kept("small")
    old.close()   # its descriptor may be another file's by now
    assert not _write(tmp_path, small=kept, big=BIG)
    assert _read(tmp_path).section("small") == SMALL   # the last whole file is still there


@pytest.mark.parametrize("how", ["flipped byte", "missing", "cut short", "longer", "a link", "folder a link"])
def test_a_damaged_shared_section_is_never_trusted(tmp_path: Path, how: str):
    assert _write(tmp_path, small=SMALL, big=BIG)
    path = tmp_path / cache.CACHE_FOLDER / "test-file"
    shared = _shared(tmp_path) / hashlib.sha256(BIG).hexdigest()
    if how == "flipped byte":
        assert flip_byte(path, "big") == shared
        read = _read(tmp_path)
        assert read.section("small") == SMALL and read.section("big") is None and not read.verify()
        return
    if how == "missing":
        shared.unlink()
    elif how == "cut short":
        shared.write_bytes(BIG[:-1])
    elif how == "longer":
        shared.write_bytes(BIG + b"x")
    elif how == "a link":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.write_bytes(BIG)
        shared.unlink()
        shared.symlink_to(elsewhere)
    elif how == "folder a link":
        moved = tmp_path / "moved"
        _shared(tmp_path).rename(moved)
        _shared(tmp_path).symlink_to(moved)
    assert _read(tmp_path) is None


def test_unnamed_shared_sections_are_pruned_but_not_from_an_open_reader(tmp_path: Path, monkeypatch):
    other = BIG[::-1]
    assert _write(tmp_path, small=SMALL, big=BIG)
    reader = _read(tmp_path)
    shared = _shared(tmp_path) / hashlib.sha256(BIG).hexdigest()
    assert _write(tmp_path, small=SMALL, big=other)
    assert shared.exists()   # unnamed now, but younger than PRUNE_AFTER_S: a writer may name it yet
    old = shared.stat().st_mtime - cache.PRUNE_AFTER_S - 5
    os.utime(shared, (old, old))
    stale_temporary = _shared(tmp_path) / ".leftover.tmp"
    stale_temporary.write_bytes(b"x")
    os.utime(stale_temporary, (old, old))
    assert _write(tmp_path, small=SMALL, big=other)
    assert not shared.exists() and not stale_temporary.exists()
    assert (_shared(tmp_path) / hashlib.sha256(other).hexdigest()).exists()   # named: kept
    assert reader.section("big") == BIG   # the reader opened it with the file
    reader.close()
    assert _read(tmp_path).section("big") == other


def test_a_kept_shared_section_is_not_pruned_by_another_writer(tmp_path: Path):
    """Keeping a section marks it used now: a writer that prunes while another one, which kept the
    section, has not yet renamed its file into place leaves the section for that file."""
    assert _write(tmp_path, small=SMALL, big=BIG)
    shared = _shared(tmp_path) / hashlib.sha256(BIG).hexdigest()
    old = shared.stat().st_mtime - cache.PRUNE_AFTER_S - 5
    os.utime(shared, (old, old))
    reader = _read(tmp_path)
    assert _write(tmp_path, small=SMALL, big=reader.kept("big"))   # kept: marked as used now
    reader.close()
    assert _write(tmp_path, small=SMALL, big=BIG[::-1])   # no file names it, and it is pruned later, not now
    assert shared.exists()


def test_a_linked_sections_folder_is_neither_written_nor_pruned_through(tmp_path: Path):
    """A `sections` link planted in the cache folder (by a pull request that commits it, say)
    leads nowhere: large sections are then stored in the file itself, and nothing where the
    link points is read, written or deleted."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    precious = elsewhere / ("0" * 64)
    precious.write_bytes(b"not a cache")
    old = precious.stat().st_mtime - cache.PRUNE_AFTER_S - 5
    os.utime(precious, (old, old))
    assert cache._real_folder(tmp_path / cache.CACHE_FOLDER, create=True)   # this user's cache folder
    _shared(tmp_path).symlink_to(elsewhere)
    assert _write(tmp_path, small=SMALL, big=BIG)
    assert all(len(item) == 3 for item in sections(tmp_path / cache.CACHE_FOLDER / "test-file"))
    assert _read(tmp_path).section("big") == BIG
    assert sorted(p.name for p in elsewhere.iterdir()) == [precious.name] and precious.read_bytes() == b"not a cache"


def test_where_sections_cannot_be_shared_safely_they_stay_in_the_file(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(cache, "CAN_SHARE", False)
    assert _write(tmp_path, small=SMALL, big=BIG)
    assert all(len(item) == 3 for item in sections(tmp_path / cache.CACHE_FOLDER / "test-file"))
    assert _read(tmp_path).section("big") == BIG
    monkeypatch.setattr(cache, "CAN_SHARE", True)
    assert _write(tmp_path, small=SMALL, big=BIG)   # shared, then read by a system that cannot
    monkeypatch.setattr(cache, "CAN_SHARE", False)
    assert _read(tmp_path) is None   # a miss, never an error


def test_patched_buckets_are_the_buckets_of_the_patched_records():
    records = {f"key-{n}": f"record {n}".encode() * (n % 5 + 1) for n in range(200)}
    bodies, places = cache.bucketed(records, 7, b"\n")
    new = {"key-3": b"changed", "key-999": b"added"}
    gone = {"key-10", "key-11"}
    patched, patched_places = cache.patch_buckets(places, bodies.get, new, gone, 7, b"\n")
    expected = {key: body for key, body in {**records, **new}.items() if key not in gone}
    all_bodies, all_places = cache.bucketed(expected, 7, b"\n")
    touched = {cache.bucket(key, 7) for key in (*new, *gone)}
    assert patched == {k: all_bodies[k] for k in touched} and patched_places == all_places
    damaged = dict(bodies)
    k, offset, _length, _crc = places["key-4"]
    damaged[k] = damaged[k][:offset] + b"X" + damaged[k][offset + 1:]
    neighbour = next(key for key in records if cache.bucket(key, 7) == k and key != "key-4")
    with pytest.raises(ValueError):   # a record kept in a touched bucket is checked
        cache.patch_buckets(places, damaged.get, {neighbour: b"y"}, set(), 7, b"\n")


def test_a_record_is_read_back_from_its_place_and_refused_when_it_does_not_fit():
    records = {f"key-{n}": f"record {n}".encode() * (n % 3 + 1) for n in range(50)}
    bodies, places = cache.bucketed(records, 4, b"\n")
    assert {key: cache.record_at(bodies[place[0]], place) for key, place in places.items()} == records
    k, offset, length, crc = places["key-7"]
    body = bodies[k]
    assert cache.record_at(body[:offset] + b"X" + body[offset + 1:], places["key-7"]) is None   # its CRC-32
    assert cache.record_at(body[:offset + length - 1], places["key-7"]) is None                 # cut short
    assert cache.record_at(None, places["key-7"]) is None                                       # no body


def test_records_used_by_other_processes_are_kept_for_idle_days(tmp_path: Path):
    """A store with `idle_days` keeps what another process (a forked render worker) read or put
    within that many days, though this one never asked for it, and removes what nobody used."""
    (tmp_path / "site.yml").write_text("title: t\n", encoding="utf-8")
    worker = cache.RecordStore(tmp_path, "build-code", idle_days=7)
    for key in ("a" * 40, "b" * 40, "c" * 40):
        worker.put(key, key.encode())
    folder = worker.folder
    day, now = cache.DAY, os.path.getmtime(folder / ("a" * 40))
    os.utime(folder / ("b" * 40), (now - 8 * day, now - 8 * day))     # nobody used it this week
    os.utime(folder / ("c" * 40), (now - 2 * day, now - 2 * day))     # read two days ago ...
    assert cache.RecordStore(tmp_path, "build-code", idle_days=7).get("c" * 40) == b"c" * 40
    assert os.path.getmtime(folder / ("c" * 40)) > now - day          # ... and that read set its time
    main = cache.RecordStore(tmp_path, "build-code", idle_days=7)
    assert main.prune() == 1
    assert sorted(p.name for p in folder.iterdir()) == ["a" * 40, "c" * 40]
    # without idle_days, what this store did not use goes, however recent
    assert cache.RecordStore(tmp_path, "build-code").prune() == 2


def test_a_section_written_again_while_pruning_stays(tmp_path: Path):
    """Sections are content-addressed, so a build may write one again (a value it had two edits
    ago) while another process prunes, and name it in a state file the pruner has not read. A
    rebuild at 10,000 entries lost its state this way once in a few dozen edits, and the next
    build was a full one. The pruner reads the cache files before it lists the sections, and
    removes a section only if it is still the file it listed."""
    assert _write(tmp_path, small=SMALL, big=BIG)
    assert _write(tmp_path, small=SMALL, big=BIG[::-1])   # BIG is no longer named
    section = _shared(tmp_path) / hashlib.sha256(BIG).hexdigest()
    old = section.stat().st_mtime - cache.PRUNE_AFTER_S - 5
    os.utime(section, (old, old))
    folder = tmp_path / cache.CACHE_FOLDER
    named = cache._named_sections(folder)
    assert section.name not in named
    shared = os.open(_shared(tmp_path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        listed = [(e.name, e.stat(follow_symlinks=False)) for e in os.scandir(_shared(tmp_path))]
        # between the listing and the removal, another build writes BIG again and names it
        assert cache.write_cache(tmp_path, "test-file", KIND, {"format": 1}, {"small": SMALL, "big": BIG},
                                 per_record=("records",), prune=False)
        cache._remove_unnamed(shared, listed, named, time.time() - cache.PRUNE_AFTER_S)
    finally:
        os.close(shared)
    assert _read(tmp_path).section("big") == BIG
    # listed as it still is, unnamed and old: removed
    os.utime(section, (old, old))
    assert _write(tmp_path, small=SMALL, big=BIG[::-1])
    assert not section.exists()
