"""The store: what a project keeps between processes, as records by key.

A record is bytes filed under a key (a hex digest of everything it was made from, or a fixed
name), with the SHA-256 of its body; `RecordStore.get` gives it back only when it is whole.
Checked entries, rendered pages, highlighted code, the last build's state and the diagnosis
index are all records of this one kind. Everything in the store only saves work: it can be made
again from the project's inputs, so a record missing, cut short, damaged or of another format is
a miss, never an error.

Where: `$XDG_CACHE_HOME/rootcause/projects/<hash of the project's real path>/<kind>/<key>`, in a
folder only this user can write, never inside the project. That is the trust boundary, not the
hash: git writes ignored files when it switches branches, so a branch that force-adds a file
under the project plants it in the maintainer's tree, and a record checked only against the
SHA-256 of its own body is forged by anyone (issue #36). Nothing under the project folder is
read as a record. Without a folder of the user's own (no home, a relative `XDG_CACHE_HOME`, a
folder open to others) nothing is cached and every build is a cold one.

Records are written under a temporary name and renamed into place, so a reader sees a whole old
record or a whole new one; none is read or written through a symbolic link.

Every project folder ever built in (a clone in a temporary folder, a benchmark's site) gets a
store, so stores are swept: `sweep()` removes the store of a project whose folder is gone or that
no build has used for `STALE_DAYS`, and template caches as idle, at most once a day.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import stat
import time
from pathlib import Path

RECORD_MAGIC = b"rootcause-record 1 "
MAX_RECORD_BYTES = 1 << 30
DAY = 86400.0
STALE_DAYS = 30
ROOT_MARK = "root"        # in a project's store: the real path of the project it belongs to
SWEPT_MARK = ".swept"     # in projects/: its time is when the stores were last swept
_KEY = re.compile(r"[0-9a-f]{16,128}")   # a hex digest: the file's name, never a path
_KIND = re.compile(r"[a-z][a-z0-9-]{0,40}")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def user_cache_folder(name: str) -> Path | None:
    """`$XDG_CACHE_HOME/rootcause/NAME` (`~/.cache/rootcause/NAME`), made if missing: a folder
    only this user can write, or None when there is none (no home, a relative XDG_CACHE_HOME,
    which the XDG spec says to ignore, another owner, open to others, a symbolic link)."""
    if not hasattr(os, "getuid"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None
    folder = os.path.join(base, "rootcause")
    parts = name.split("/")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        # every folder from rootcause's own down is this user's and writable by no one else:
        # another user who could write one of them could put a record in its place
        for depth, part in enumerate(["", *parts]):
            folder = os.path.join(folder, part) if part else folder
            if part and not os.path.lexists(folder):
                os.mkdir(folder, 0o700)
            st = os.lstat(folder)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or \
                    st.st_mode & (0o077 if depth == len(parts) else 0o022):
                return None
    except OSError:
        return None
    return Path(folder)


def project_folder(root: Path) -> Path | None:
    """The store of the project at `root` (by its real path: a copy elsewhere starts cold),
    marked with that path so that `sweep` can tell when the project is gone."""
    real = os.fsencode(os.path.realpath(root))
    ident = hashlib.blake2b(real, digest_size=12).hexdigest()
    folder = user_cache_folder(f"projects/{ident}")
    if folder is not None:
        mark = f"{os.fspath(folder)}/{ROOT_MARK}"
        times: list[float] = []
        if _read_file(mark, len(real), times) != real:
            _write_file(mark, real)
        else:
            _renew(mark, times[0])
    return folder


def mark_used(path: str | Path) -> None:
    """Set the time of a store's mark or folder to now when it is a day old, for `sweep`."""
    try:
        _renew(path, os.lstat(path).st_mtime)
    except OSError:
        pass


def _renew(path: str | Path, modified: float) -> None:
    """Set the time of a file last set at `modified` to now, once it is a day old (a record, a
    mark or a folder used again: `prune` and `sweep` keep what is used)."""
    if modified < time.time() - DAY:
        try:
            os.utime(path, follow_symlinks=False)
        except OSError:
            pass


def sweep(now: float | None = None) -> int:
    """Remove the stores of projects whose folder no longer exists or that no build has used for
    STALE_DAYS, and template caches idle as long; at most once a day. Returns how many."""
    now = time.time() if now is None else now
    projects = user_cache_folder("projects")
    if projects is None:
        return 0
    swept = f"{os.fspath(projects)}/{SWEPT_MARK}"
    try:
        if os.lstat(swept).st_mtime > now - DAY:
            return 0
    except OSError:
        pass
    _write_file(swept, b"")
    stale = now - STALE_DAYS * DAY
    removed = 0
    try:
        with os.scandir(projects) as found:
            stores = [e.path for e in found if _KEY.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
        with os.scandir(projects.parent) as found:
            templates = [e for e in found if e.name.startswith("templates-") and e.is_dir(follow_symlinks=False)]
    except OSError:
        return 0
    for store in stores:
        mark = f"{store}/{ROOT_MARK}"
        times: list[float] = []
        root = _read_file(mark, times=times)
        try:
            used = times[0] if times else os.lstat(store).st_mtime
        except OSError:
            continue
        if used < stale or (root is not None and not os.path.isdir(os.fsdecode(root))):
            shutil.rmtree(store, ignore_errors=True)
            removed += 1
    for folder in templates:
        if _idle(folder, STALE_DAYS):
            shutil.rmtree(folder.path, ignore_errors=True)
            removed += 1
    return removed


class RecordStore:
    """The records of one kind (`build-pages`, `diagnose-index`, ...) of a project's store.

    `get` and `put` note the keys used; `prune()` removes the records not used since the store
    was opened, so the kind holds one build's worth. With `idle_days`, for records that forked
    workers read and write and that a build may not need at all, a record a day old has its
    time set when used, and `prune()` keeps any record used within that many days. `read=False`
    (`build --force`) writes records without reading any; `enabled=False` does nothing."""

    def __init__(self, root: Path, kind: str, enabled: bool = True, read: bool = True,
                 idle_days: float | None = None):
        if not _KIND.fullmatch(kind):
            raise ValueError(f"not a record kind: {kind!r}")
        self.used: set[str] = set()
        self.read = read
        self.idle_days = idle_days
        self.hits = self.misses = 0
        base = project_folder(root) if enabled else None
        self.folder: Path = base / kind if base is not None else Path(os.devnull)
        self.enabled = base is not None and _real_folder(self.folder)

    def _file(self, key: str) -> str:
        if not _KEY.fullmatch(key):
            raise ValueError(f"not a record key: {key!r}")
        return f"{os.fspath(self.folder)}/{key}"

    def get(self, key: str) -> bytes | None:
        """The body filed under `key`, or None (a miss)."""
        self.used.add(key)
        if not self.enabled or not self.read:
            return None
        path = self._file(key)
        times: list[float] = []
        data = _read_file(path, times=times)
        head = len(RECORD_MAGIC) + 64 + 1
        if (data is None or len(data) < head or not data.startswith(RECORD_MAGIC) or data[head - 1:head] != b"\n"
                or hashlib.sha256(data[head:]).hexdigest().encode() != data[len(RECORD_MAGIC):head - 1]):
            self.misses += 1
            return None
        self.hits += 1
        self._touch(path, times)
        return data[head:]

    def put(self, key: str, body: bytes) -> bool:
        """File `body` under `key`; False when the store cannot hold it. A record already holding
        these exact bytes is left as it is (replacing a file costs several times reading it)."""
        self.used.add(key)
        if not self.enabled:
            return False
        target = self._file(key)
        record = RECORD_MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
        times: list[float] = []
        if _read_file(target, len(record), times) == record:
            self._touch(target, times)
            return True
        if not _write_file(target, record):
            self.enabled = False   # no space, no permission: go on without a cache
            return False
        return True

    def remove(self, key: str) -> None:
        """Delete one record (one found damaged, or stale); a missing one is no error."""
        if self.enabled:
            try:
                os.unlink(self._file(key))
            except OSError:
                pass

    def prune(self) -> int:
        """Remove the records (and leftover temporary files) not used since this store was opened."""
        if not self.enabled:
            return 0
        removed = 0
        try:
            with os.scandir(self.folder) as found:
                names = [e.name for e in found if e.name not in self.used and
                         (self.idle_days is None or _idle(e, self.idle_days))]
        except OSError:
            return 0
        for name in names:
            try:
                os.unlink(f"{os.fspath(self.folder)}/{name}")
                removed += 1
            except OSError:
                pass
        return removed

    def _touch(self, path: str, times: list[float]) -> None:
        """A record used again (`idle_days`): its time set when a day old."""
        if self.idle_days is not None and times:
            _renew(path, times[0])


def _idle(found: os.DirEntry, days: float) -> bool:
    """Was the record last used (its time set) more than `days` ago?"""
    try:
        return found.stat(follow_symlinks=False).st_mtime < time.time() - days * DAY
    except OSError:
        return True


def _read_file(path: str, size: int | None = None, times: list | None = None) -> bytes | None:
    """The bytes of a record file, or None when it is missing, not a regular file (a link is not
    followed), larger than a record can be or, with `size`, of another size. `times` gets the
    file's modification time."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_RECORD_BYTES or (size is not None and st.st_size != size):
            return None
        if times is not None:
            times.append(st.st_mtime)
        chunks, left = [], st.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _write_file(path: str, data: bytes) -> bool:
    """Write `data` under a temporary name beside `path` and rename it into place (a reader sees
    the whole old file or the whole new one); False when it cannot be written."""
    folder, name = os.path.split(path)
    temporary = f"{folder}/.{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) |
                     getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            with os.fdopen(fd, "wb") as stream:
                stream.write(data)
            os.replace(temporary, path)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise
    except OSError:
        return False
    return True


def _real_folder(folder: Path) -> bool:
    """A real folder (not a symbolic link) inside the user's own, made if missing."""
    try:
        if not os.path.lexists(folder):
            os.mkdir(folder, 0o700)
        return stat.S_ISDIR(os.lstat(folder).st_mode)
    except OSError:
        return False
