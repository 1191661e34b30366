"""The inputs a project's checks read, and their freshness: stat keys (the cheap test), content
hashes (the slow one), and the version of the package's own code (part of every cache key).

A record made from inputs is *fresh* when one digest of every input's name, size, modification
and change time, inode and type equals the one stored; only when that differs (a checkout, a
`touch`, a copied project) are the files whose stat changed read and hashed, and the record is
fresh when every hash is the stored one and no input was added or removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
CODE = "<code>/"  # prefix of the package's own files among the inputs (a project path never starts with '<')
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def stat_key(path: Path | str, taken: dict | None = None) -> tuple | None:
    """What the cheap freshness test compares for one file (never through a symbolic link);
    a folder by its type alone (its times change whenever anything in it does). `taken`: the
    stat keys of a walk made a moment before, by path, used instead of another call."""
    if taken:
        key = taken.get(os.fspath(path))
        if key is not None:
            return key
    try:
        return key_of(os.lstat(path))
    except OSError:
        return None


def key_of(st: os.stat_result) -> tuple:
    """`stat_key` of an `os.lstat` result."""
    if stat.S_ISDIR(st.st_mode):
        return (st.st_mode,)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


#: a folder whose modification time is at least this old when it is listed is listed again
#: only when that time changes (a file system stamps folders with a coarse clock: a name added a
#: moment after a listing can leave the folder's time as it was)
SETTLED_NS = 2_000_000_000
_LISTED: dict[tuple[str, str], tuple[tuple, list[str]]] = {}


def listing(folder: str, suffix: str = "") -> list[str]:
    """The names in `folder` ending with `suffix`, sorted: what `entries/*.yaml` and a
    healthy-log folder's `*` give (links and special files included, for the loader to refuse).
    The names of a settled folder are kept (`SETTLED_NS`) by its stat key and modification and
    change times, and not listed again while those stay: `serve` tests its inputs once a second
    and each build lists them again (a new list each time: the caller may change it)."""
    try:
        st = os.stat(folder)
        mark = (st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    except OSError:
        mark = None
    if mark is not None:
        known = _LISTED.get((folder, suffix))
        if known is not None and known[0] == mark:
            return list(known[1])
    try:
        with os.scandir(folder) as found:
            names = sorted(e.name for e in found if e.name.endswith(suffix))
    except OSError:
        return []
    if mark is not None and time.time_ns() - max(mark[0], mark[1]) > SETTLED_NS:
        _LISTED[(folder, suffix)] = (mark, names)
        return list(names)
    return names


_CODE: list[str] = []


def code_files() -> list[str]:
    """The package's Python source and the matching rules it reads as data (`shared.json`),
    relative to it: the version of the code, as far as a cache is concerned (listed once per
    process)."""
    if not _CODE or _CODE[0] != str(PACKAGE):
        found = []
        for folder, subfolders, files in os.walk(PACKAGE):
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
            found += [os.path.relpath(os.path.join(folder, name), PACKAGE).replace(os.sep, "/")
                      for name in sorted(files) if name.endswith(".py") or name == "shared.json"]
        _CODE[:] = [str(PACKAGE), *found]
    return _CODE[1:]


def input_folders(config) -> list[list[str]]:
    """The folders besides `entries/` whose files a project's checks read, as [name, suffix]:
    the healthy logs (every file) and the study tables (`*.tsv`), where site.yml names them."""
    folders = []
    if getattr(config, "healthy_logs", None):
        folders.append([config.healthy_logs, ""])
    if getattr(config, "study", None):
        folders.append([config.study, ".tsv"])
    return folders


@dataclass
class Inputs:
    """The files a project's checks depend on, by name, with their stat keys: site.yml,
    `entries/` and its `*.yaml`, the `folders` (`input_folders`) and their files, and the
    package's source. Names are relative to the project, or `<code>/...` for the package."""

    root: Path
    folders: list[list[str]]
    stats: dict[str, tuple | None] = field(default_factory=dict)

    @classmethod
    def take(cls, root: Path, folders: list[list[str]], known: dict[str, tuple | None] | None = None,
             taken: dict | None = None) -> Inputs:
        """Stat every input now; `known` holds stat keys already taken (earlier, before a file was
        read); `taken`, stat keys by path from a walk made just before (see `stat_key`)."""
        inputs = cls(root, [list(f) for f in folders])
        stats = inputs.stats
        base = os.fspath(root)
        stats["site.yml"] = stat_key(f"{base}/site.yml", taken)
        walked = taken.get if taken else None
        for folder, suffix in [["entries", ".yaml"], *inputs.folders]:
            where = f"{base}/{folder}"
            stats[folder + "/"] = stat_key(where)
            for name in listing(where, suffix):
                path = f"{where}/{name}"
                key = walked(path) if walked is not None else None
                stats[f"{folder}/{name}"] = key if key is not None else stat_key(path)
        package = os.fspath(PACKAGE)
        for name in code_files():
            stats[CODE + name] = stat_key(f"{package}/{name}", taken)
        for name, key in (known or {}).items():
            if name in stats:
                stats[name] = key
        return inputs

    def path(self, name: str) -> Path:
        return PACKAGE / name[len(CODE):] if name.startswith(CODE) else self.root / name

    def digest(self) -> str:
        text = repr((self.folders, list(self.stats.items())))
        return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()

    def hashes(self, previous: dict[str, list] | None = None, read: list[str] | None = None) -> dict[str, str | None]:
        """name → SHA-256 of the file's bytes (None for a folder, a missing or an unreadable file).
        `previous` ({name: [stat key, hash]}, from an earlier cache file) spares reading the files
        whose stat key is unchanged; `read` gets the names of the files read and hashed."""
        previous = previous or {}
        result = {}
        for name, key in self.stats.items():
            old = previous.get(name)
            if old is not None and key is not None and list(key) == old[0]:
                result[name] = old[1]
            elif key is None or len(key) == 1:
                result[name] = None
            else:
                result[name] = file_hash(self.path(name))
                if read is not None:
                    read.append(name)
        return result

    def unchanged(self, names: list[str]) -> bool:
        """Do these inputs still have the stat keys taken?"""
        return all(stat_key(self.path(name)) == self.stats[name] for name in names)

    def record(self, hashes: dict[str, str | None]) -> dict[str, list]:
        """{name: [stat key, hash]}: what a cache file stores of its inputs."""
        return {name: [list(key) if key is not None else None, hashes[name]] for name, key in self.stats.items()}


def file_hash(path: Path) -> str | None:
    """SHA-256 of a regular file's bytes, read without following a symbolic link or blocking."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def content_key(record: dict[str, list]) -> str:
    """One hash of every input's name and content: the identity of what a cache file was made from."""
    text = json.dumps(sorted((name, value[1]) for name, value in record.items()), separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def still_fresh(recorded: dict[str, list], now: Inputs) -> bool:
    """The slower half of the freshness test: the same inputs, and every file whose stat key
    changed still has the content it had."""
    if list(recorded) != list(now.stats):
        return False
    for name, key in now.stats.items():
        old_key, old_hash = recorded[name]
        if key is not None and old_key is not None and list(key) == old_key:
            continue
        # appeared, vanished, a folder (compared by type alone) changed, or no content to compare
        if key is None or old_key is None or len(key) == 1 or len(old_key) == 1 or old_hash is None:
            return False
        if file_hash(now.path(name)) != old_hash:
            return False
    return True


def code_version(extra: tuple = ()) -> str:
    """One hash of the package's source (every `.py` under it, by content) and of `extra` (the
    versions of libraries whose output a cache holds): a cache made by other code is another cache."""
    digest = hashlib.sha256(repr(extra).encode("utf-8", "surrogateescape"))
    package = os.fspath(PACKAGE)
    for name in code_files():
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
        digest.update((file_hash(Path(f"{package}/{name}")) or "-").encode() + b"\n")
    return digest.hexdigest()
