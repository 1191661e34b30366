"""The persistent cache next to site.yml: `.rootcause-cache/`, never deployed, ignored by git.

A cache file only ever saves work: everything in it can be recomputed from the project's inputs,
and it is used only when it is both whole and fresh.

- *Whole*: a file is a header line of JSON followed by named sections, each with its length and
  SHA-256 in the header. Sections are read when first needed and verified as they are read;
  a section of records read a few at a time is checked record by record (a CRC-32 each, kept by
  its reader) unless the reader asks for the whole file to be verified first. A
  file cut short, a flipped byte, another format or another kind of cache is a miss, never an
  error.
- *Fresh*: the header lists the inputs the file was made from (`Inputs`: site.yml, the entries,
  the healthy logs, the study tables and the package's own source, i.e. the version of the
  code) with the content
  hash of each. The cheap test compares one digest of every input's name, size, modification
  and change time, inode and type with the one stored; only when that differs (a checkout, a
  `touch`, a copied project) are the files whose stat changed read and hashed, and the file is
  fresh when every hash is the stored one and no input was added or removed.

Files are written to a temporary name in the cache folder and renamed into place, so a reader
sees a whole old file or a whole new one. A large section lives beside the file instead, in
`sections/<its SHA-256>`, where the next file can refer to it again (`CacheFile.kept`) without
writing or hashing it: a rebuild that changed a few records of a site model writes those, not the
model. A reader opens every section it refers to with its header, so a section pruned later
(none of the cache files names it any more) stays readable to it. The folder must be a real
folder of the project (a symbolic link there is neither read nor written through), made by this
user's rootcause (its `owner` token listed in the user's own folder: a cache folder that came
with the project's files is never read), and carries its own `.gitignore` and `CACHEDIR.TAG`,
so that neither git nor backup tools pick it up in a project whose .gitignore lacks it. A
project folder that cannot be written simply goes without a cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import stat
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CACHE_FOLDER = ".rootcause-cache"
MAGIC = b"rootcause-cache 1\n"
MAX_CACHE_BYTES = 1 << 30
MAX_HEADER_BYTES = 1 << 20
PACKAGE = Path(__file__).resolve().parent
CODE = "<code>/"  # prefix of the package's own files among the inputs (a project path never starts with '<')
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_TAG = b"Signature: 8a477f597d28d172789f06886806bc55\n# rootcause's cache: safe to delete, rebuilt when needed\n"


def cache_folder(root: Path) -> Path:
    return root / CACHE_FOLDER


# -- inputs -----------------------------------------------------------------------------------------
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


def listing(folder: str, suffix: str = "") -> list[str]:
    """The names in `folder` ending with `suffix`, sorted: what `entries/*.yaml` and a
    healthy-log folder's `*` give (links and special files included, for the loader to refuse)."""
    try:
        with os.scandir(folder) as found:
            return sorted(e.name for e in found if e.name.endswith(suffix))
    except OSError:
        return []


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
        for folder, suffix in [["entries", ".yaml"], *inputs.folders]:
            where = f"{base}/{folder}"
            stats[folder + "/"] = stat_key(where)
            for name in listing(where, suffix):
                stats[f"{folder}/{name}"] = stat_key(f"{where}/{name}", taken)
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


# -- cache files ----------------------------------------------------------------------------------------
SHARED = "sections"         # the folder of sections stored beside the files that name them
SHARE_BYTES = 64 << 10      # sections at least this long are stored there
PRUNE_AFTER_S = 120         # a shared section no file names is removed once it is this old
#: shared sections are opened, listed and removed relative to their folder's descriptor, so that
#: no link is followed; where the system cannot, every section stays in its file
CAN_SHARE = (hasattr(os, "O_DIRECTORY") and os.open in os.supports_dir_fd and os.unlink in os.supports_dir_fd
             and os.scandir in os.supports_fd)


class CacheFile:
    """An open cache file: its header, and its sections read (and verified) on first use. The
    file and the shared sections it names stay open, so a writer replacing or pruning them
    meanwhile changes nothing for this reader."""

    def __init__(self, fd: int, header: dict, layout: dict[str, tuple[int, int, int, str, bool]]):
        self._fd = fd
        self.header = header
        self._layout = layout   # name → (fd, offset, length, SHA-256, shared)
        self._read: dict[str, bytes] = {}
        per_record = header.get("per_record")
        self._per_record = set(per_record) if isinstance(per_record, list) else set()

    def __contains__(self, name: str) -> bool:
        return name in self._layout

    def names(self) -> list[str]:
        """The file's sections, in the order written."""
        return list(self._layout)

    def section(self, name: str, verify: bool | None = None) -> bytes | None:
        """The section's bytes; None if it is missing, cannot be read or fails its SHA-256. A
        section of records (`per_record` when written) is not hashed unless `verify`: its reader
        checks the records it uses."""
        if name in self._read:
            return self._read[name]
        if name not in self._layout or self._fd < 0:
            return None
        fd, offset, length, digest, _shared = self._layout[name]
        try:
            body = os.pread(fd, length, offset)
        except OSError:
            return None
        if verify is None:
            verify = name not in self._per_record
        if len(body) != length or (verify and hashlib.sha256(body).hexdigest() != digest):
            return None
        self._read[name] = body
        return body

    def kept(self, name: str) -> Kept | None:
        """The section as it is, for `write_cache` to store again without hashing it (and, when it
        is shared, without writing it); None if this file has no such section."""
        if name not in self._layout or self._fd < 0:
            return None
        return Kept(self, name)

    def verify(self) -> bool:
        """Is every section whole (records sections included)? For a reader that cannot start
        over once it has begun, such as one reading standard input."""
        for name in self._layout:
            self._read.pop(name, None)
            if self.section(name, verify=True) is None:
                return False
        return True

    def close(self) -> None:
        if self._fd >= 0:
            for fd, *_rest in self._layout.values():
                if fd != self._fd:
                    os.close(fd)
            os.close(self._fd)
            self._fd = -1

    def __del__(self):
        self.close()


#: a file cuts its rows into at most this many sections: a reader holds every shared section of
#: a file open (a site model and an index together stay well under the 256 descriptors macOS
#: allows a process by default), and a change to a few rows rewrites a sixteenth of them
MAX_BUCKETS = 16


def bucket_count(rows: int, per_bucket: int = 128) -> int:
    """How many sections a file cuts `rows` rows into (`bucket`): enough that a change to a few
    rows rewrites a small part of the file, few enough that a reader opens a handful of files."""
    return max(1, min(MAX_BUCKETS, rows // per_bucket))


def bucket(key: str, count: int) -> int:
    """The section of `count` that the row `key` (an entry's id, a file's path) is kept in."""
    return zlib.crc32(key.encode("utf-8")) % count


def bucketed(records: dict[str, bytes], count: int, join: bytes, only: set[int] | None = None) -> tuple[dict, dict]:
    """Records cut into `count` bucket bodies (only those in `only`), in the order of their keys,
    joined by `join`; and their places: key → [bucket, offset, length, CRC-32]."""
    split: dict[int, list[str]] = {}
    for key in sorted(records):
        split.setdefault(bucket(key, count), []).append(key)
    bodies, places = {}, {}
    for k in range(count) if only is None else sorted(only):
        offset = 0
        for key in split.get(k, []):
            body = records[key]
            places[key] = [k, offset, len(body), zlib.crc32(body)]
            offset += len(body) + len(join)
        bodies[k] = join.join(records[key] for key in split.get(k, []))
    return bodies, dict(sorted(places.items()))


def record_at(body: bytes | None, place: list) -> bytes | None:
    """The record `bucketed` put at `place` ([bucket, offset, length, CRC-32]) in its bucket's
    `body`; None when there is no body or the bytes there fail the length or the CRC-32."""
    _k, offset, length, check = place
    record = body[offset:offset + length] if body is not None else b""
    return record if len(record) == length and zlib.crc32(record) == check else None


def patch_buckets(places: dict[str, list], read: Callable[[int], bytes | None], new: dict[str, bytes],
                  gone: set[str], count: int, join: bytes) -> tuple[dict[int, bytes], dict[str, list]]:
    """Records cut by `bucketed` (their `places`), with the records of `new` put in and those
    of `gone` taken out: the bodies of the buckets this touches (the others stay as they are)
    and every record's place. The records kept in a touched bucket are read from its old body
    (`read(bucket)`) and checked against their CRC-32; ValueError when one fails it."""
    touched = {bucket(key, count) for key in (*new, *gone)}
    records = {}
    for key, place in places.items():
        if place[0] in touched and key not in new and key not in gone:
            record = record_at(read(place[0]), place)
            if record is None:
                raise ValueError(f"a record of bucket {place[0]} fails its checksum")
            records[key] = record
    records.update(new)
    bodies, moved = bucketed(records, count, join, touched)
    kept = {key: place for key, place in places.items() if place[0] not in touched}
    kept.update(moved)
    return bodies, dict(sorted(kept.items()))


@dataclass(frozen=True)
class Kept:
    """A section of an open cache file, passed to `write_cache` to be stored unchanged."""

    source: CacheFile
    name: str


def _is_digest(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _header(fd: int) -> tuple[dict, int]:
    """A cache file's header and where its first section begins; ValueError if it has none."""
    head = os.pread(fd, len(MAGIC) + MAX_HEADER_BYTES, 0)
    end = head.find(b"\n", len(MAGIC))
    if not head.startswith(MAGIC) or end < 0:
        raise ValueError("no header")
    header = json.loads(head[len(MAGIC):end])
    if not isinstance(header, dict):
        raise ValueError("a header that is not a mapping")
    return header, end + 1


def read_cache(root: Path, name: str, kind: str) -> CacheFile | None:
    """The cache file `name`, or None if it is missing, not a regular file in a real cache
    folder, of another kind or format, or not whole (its sections do not add up to its size, or a
    shared section it names is missing or of another length)."""
    folder = cache_folder(root)
    if not _real_folder(folder, create=False):
        return None
    try:
        fd = os.open(folder / name, _OPEN_FLAGS)
    except OSError:
        return None
    opened: list[int] = []
    shared_folder = -1
    try:
        size = os.fstat(fd)
        if not stat.S_ISREG(size.st_mode) or size.st_size > MAX_CACHE_BYTES:
            raise ValueError
        header, offset = _header(fd)
        if header.get("kind") != kind or not isinstance(header.get("sections"), list):
            raise ValueError
        layout: dict[str, tuple[int, int, int, str, bool]] = {}
        for item in header["sections"]:
            if not (isinstance(item, list) and len(item) in (3, 4) and isinstance(item[0], str)
                    and isinstance(item[1], int) and not isinstance(item[1], bool) and 0 <= item[1] <= MAX_CACHE_BYTES
                    and isinstance(item[2], str) and (len(item) == 3 or item[3] == "shared")):
                raise ValueError
            if len(item) == 3:
                layout[item[0]] = (fd, offset, item[1], item[2], False)
                offset += item[1]
                continue
            if not _is_digest(item[2]) or not CAN_SHARE:
                raise ValueError
            if shared_folder < 0:   # never through a link, the folder's neither
                shared_folder = os.open(folder / SHARED, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) |
                                        getattr(os, "O_CLOEXEC", 0))
            shared = os.open(item[2], _OPEN_FLAGS, dir_fd=shared_folder)
            opened.append(shared)
            found = os.fstat(shared)
            if not stat.S_ISREG(found.st_mode) or found.st_size != item[1]:
                raise ValueError
            layout[item[0]] = (shared, 0, item[1], item[2], True)
        if offset != size.st_size:
            raise ValueError
    except (OSError, ValueError, RecursionError):
        for other in opened:
            os.close(other)
        os.close(fd)
        return None
    finally:
        if shared_folder >= 0:
            os.close(shared_folder)
    return CacheFile(fd, header, layout)


def write_cache(root: Path, name: str, kind: str, header: dict, sections: dict[str, bytes | Kept],
                per_record: tuple[str, ...] = (), prune: bool = True) -> bool:
    """Write a cache file atomically; False (and nothing written) when the project cannot hold
    one. The sections named in `per_record` are hashed only by `CacheFile.verify`: their reader
    checks each record it reads. A section given as `Kept` is stored as its file has it, neither
    hashed again nor, if it is shared, written again; any other section of `SHARE_BYTES` or
    more is written to `sections/`. Then, unless `prune` is false (a caller that has another
    writer prune beside it), the shared sections no cache file names are pruned."""
    folder = cache_folder(root)
    if not _real_folder(folder, create=True):
        return False
    shared_folder = folder / SHARED
    items: list[list] = []
    inline: list[bytes] = []
    try:
        for key, value in sections.items():
            if isinstance(value, Kept):
                if value.source._fd < 0:   # closed: its descriptors may be other files' by now
                    return False
                fd, offset, length, digest, shared = value.source._layout[value.name]
                if shared:
                    os.utime(shared_folder / digest)   # in use again: not pruned meanwhile
                    items.append([key, length, digest, "shared"])
                    continue
                value = os.pread(fd, length, offset)
                if len(value) != length:
                    return False
                items.append([key, length, digest])
                inline.append(value)
            elif CAN_SHARE and len(value) >= SHARE_BYTES and _real_folder(shared_folder, create=True):
                digest = hashlib.sha256(value).hexdigest()
                _write_atomically(shared_folder, digest, (value,))
                items.append([key, len(value), digest, "shared"])
            else:
                items.append([key, len(value), hashlib.sha256(value).hexdigest()])
                inline.append(value)
        head = json.dumps(dict(header, kind=kind, per_record=list(per_record), sections=items),
                          ensure_ascii=True, separators=(",", ":")).encode()
        if len(head) >= MAX_HEADER_BYTES:
            return False
        _write_atomically(folder, name, (MAGIC + head + b"\n", *inline))
    except OSError:
        return False
    if prune:
        _prune_shared(folder)
    return True


def _write_atomically(folder: Path, name: str, parts) -> None:
    temporary = folder / f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) |
                 getattr(os, "O_CLOEXEC", 0), 0o644)   # less the umask, as any file the user writes
    try:
        with os.fdopen(fd, "wb") as stream:
            for part in parts:
                stream.write(part)
        os.replace(temporary, folder / name)
    except BaseException:
        os.unlink(temporary)
        raise


def _prune_shared(folder: Path) -> None:
    """Remove the shared sections that no cache file in `folder` names and that were neither
    written nor kept in the last PRUNE_AFTER_S seconds (a build writing its file meanwhile may
    name them yet); the temporary files of dead writers go too.

    A section is content-addressed: a build may write one again (a value it had two edits ago)
    while this runs, and name it in a state file this has not read. So the cache files are read
    first and the sections listed after, and a section is removed only if it is still the file
    listed (same inode, same time): one written again since is new, and young."""
    if not CAN_SHARE:
        return
    try:   # the folder itself, never one a link there points to
        shared = os.open(folder / SHARED, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) |
                         getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        named = _named_sections(folder)
        with os.scandir(shared) as found:
            listed = [(e.name, e.stat(follow_symlinks=False)) for e in found]
        _remove_unnamed(shared, listed, named, time.time() - PRUNE_AFTER_S)
    except OSError:
        return
    finally:
        os.close(shared)


def _named_sections(folder: Path) -> set[str]:
    """The shared sections the cache files in `folder` name."""
    named: set[str] = set()
    for entry in os.scandir(folder):
        if entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
            continue
        try:
            fd = os.open(entry.path, _OPEN_FLAGS)
            try:
                header, _start = _header(fd)
            finally:
                os.close(fd)
            named.update(item[2] for item in header.get("sections", [])
                         if isinstance(item, list) and len(item) == 4 and isinstance(item[2], str))
        except (OSError, ValueError, TypeError, RecursionError):
            continue
    return named


def _remove_unnamed(shared: int, listed: list[tuple[str, os.stat_result]], named: set[str], old: float) -> None:
    """Unlink each listed file of the sections folder (`shared`, a descriptor) that is not
    `named` and was modified before `old`, unless it is no longer the file listed."""
    for name, st in listed:
        if name in named or st.st_mtime >= old:
            continue
        try:
            now = os.stat(name, dir_fd=shared, follow_symlinks=False)
            if (now.st_ino, now.st_mtime_ns) == (st.st_ino, st.st_mtime_ns):
                os.unlink(name, dir_fd=shared)
        except OSError:
            pass


# -- records by key (the build cache) ----------------------------------------------------------------
RECORD_MAGIC = b"rootcause-record 1 "
_RECORD_KEY = re.compile(r"[0-9a-f]{16,}")   # a hex digest: the file's name, never a path


def code_version(extra: tuple = ()) -> str:
    """One hash of the package's source (every `.py` under it, by content) and of `extra` (the
    versions of libraries whose output a cache holds): a cache made by other code is another cache."""
    digest = hashlib.sha256(repr(extra).encode("utf-8", "surrogateescape"))
    package = os.fspath(PACKAGE)
    for name in code_files():
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
        digest.update((file_hash(Path(f"{package}/{name}")) or "-").encode() + b"\n")
    return digest.hexdigest()


class RecordStore:
    """A folder of small cache files under `.rootcause-cache/NAME/`, one per key (a hex digest
    of everything the record was made from). Each file carries the SHA-256 of its body and is
    written under a temporary name and renamed into place; a file that is missing, cut short,
    of another format or whose body fails its hash is a miss, never an error. A folder that
    cannot be written (or is a symbolic link) simply holds nothing.

    `get` and `put` note the keys used; `prune()` removes the files no build asked for this time,
    so the folder holds one build's worth of records. With `idle_days`, for records that forked
    workers read and write and that a build may not need at all (its pages all from the page
    cache), `get` and `put` also set a record's time when it is a day old, and `prune()` keeps
    any record used within that many days, by any process."""

    def __init__(self, root: Path, name: str, enabled: bool = True, read: bool = True,
                 idle_days: float | None = None):
        self.folder = cache_folder(root) / name
        self.used: set[str] = set()
        self.read = read
        self.idle_days = idle_days
        self.enabled = enabled and _real_folder(cache_folder(root), create=True) and _real_folder(self.folder, create=True)
        self.hits = self.misses = 0

    def _file(self, key: str) -> str:
        if not _RECORD_KEY.fullmatch(key):
            raise ValueError(f"not a record key: {key!r}")
        return f"{os.fspath(self.folder)}/{key}"

    def get(self, key: str) -> bytes | None:
        self.used.add(key)
        if not self.enabled or not self.read:
            return None
        path = self._file(key)
        times: list[float] = []
        data = _read_record_file(path, times=times)
        head = len(RECORD_MAGIC) + 64 + 1
        if (data is None or len(data) < head or not data.startswith(RECORD_MAGIC) or data[head - 1:head] != b"\n"
                or hashlib.sha256(data[head:]).hexdigest().encode() != data[len(RECORD_MAGIC):head - 1]):
            self.misses += 1
            return None
        self.hits += 1
        self._touch(path, times)
        return data[head:]

    def _touch(self, path: str, times: list[float]) -> None:
        """A record read or put again is used now (`idle_days`): its time set when a day old."""
        if self.idle_days is not None and times and times[0] < time.time() - DAY:
            try:
                os.utime(path, follow_symlinks=False)
            except OSError:
                pass

    def put(self, key: str, body: bytes) -> None:
        """Store `body` under `key`. A record already holding these exact bytes is left as it is:
        replacing a file costs the file system several times what reading it does, and a build
        with `--force` puts every record again."""
        self.used.add(key)
        if not self.enabled:
            return
        target = self._file(key)
        record = RECORD_MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
        times: list[float] = []
        if _read_record_file(target, len(record), times) == record:
            self._touch(target, times)
            return
        temporary = f"{os.fspath(self.folder)}/.{key}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) |
                         getattr(os, "O_CLOEXEC", 0), 0o644)
            try:
                with os.fdopen(fd, "wb") as stream:
                    stream.write(record)
                os.replace(temporary, target)
            except BaseException:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
                raise
        except OSError:
            self.enabled = False   # no space, no permission: go on without a cache

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


DAY = 86400.0


def _idle(found: os.DirEntry, days: float) -> bool:
    """Was the record last used (its time set) more than `days` ago?"""
    try:
        return found.stat(follow_symlinks=False).st_mtime < time.time() - days * DAY
    except OSError:
        return True


def _read_record_file(path: str, size: int | None = None, times: list | None = None) -> bytes | None:
    """The bytes of a record file, or None when it is missing, not a regular file (a link is not
    followed), larger than a record can be or, with `size`, of another size. `times` gets the
    file's modification time."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CACHE_BYTES or (size is not None and st.st_size != size):
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


def _real_folder(folder: Path, create: bool) -> bool:
    """A real folder (not a symbolic link), made if missing and `create`; the cache folder itself
    only when this user made it here (`_own_cache_folder`)."""
    if folder.name == CACHE_FOLDER:
        return _own_cache_folder(folder, create)
    try:
        if create and not os.path.lexists(folder):
            os.mkdir(folder)
        return stat.S_ISDIR(os.lstat(folder).st_mode)
    except OSError:
        return False


# -- whose cache folder --------------------------------------------------------------------------
#: the file of the cache folder holding its token; the same name in the user's own folder
#: `projects/` says that this user made it
OWNER = "owner"
_TOKEN = re.compile(r"[0-9a-f]{32}")


def user_cache_folder(name: str) -> Path | None:
    """`$XDG_CACHE_HOME/rootcause/NAME` (`~/.cache/rootcause/NAME`), made if missing: a folder
    only this user can write, or None when there is none (no home, a relative XDG_CACHE_HOME,
    which the XDG spec says to ignore, another owner, open to others, a symbolic link)."""
    if not hasattr(os, "getuid"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None
    folder = os.path.join(base, "rootcause", name)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return Path(folder)


def _owned(folder: Path, registry: Path) -> bool:
    """Is this cache folder one that this user's rootcause made? Its `owner` token is listed in
    `registry`, the user's own `projects/` folder, which nothing in a project can write to."""
    try:
        fd = os.open(folder / OWNER, _OPEN_FLAGS)
        try:
            token = os.read(fd, 64).decode("ascii").strip() if stat.S_ISREG(os.fstat(fd).st_mode) else ""
        finally:
            os.close(fd)
        if not _TOKEN.fullmatch(token) or not stat.S_ISREG(os.lstat(registry / token).st_mode):
            return False
    except (OSError, UnicodeDecodeError):
        return False
    return True


def _own_cache_folder(folder: Path, create: bool) -> bool:
    """The cache folder, when this user made it here; with `create`, made (or, if it came from
    elsewhere, made again) so. A cache folder that arrives with the project's files (committed
    by a pull request, say) is never read: its records could hold pages or an index that the
    build would take as its own. It is moved aside and removed, and a new one is made. Its name
    taken by a symbolic link or a file: no cache."""
    registry = user_cache_folder("projects")
    if registry is None:
        return False   # nowhere to say that this user made it: no cache
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        st = None
    except OSError:
        return False
    if st is not None:
        if not stat.S_ISDIR(st.st_mode):
            return False
        if _owned(folder, registry):
            return True
    if not create:
        return False
    token = secrets.token_hex(16)
    fresh = folder.with_name(f"{CACHE_FOLDER}.new-{token[:8]}")
    try:
        os.mkdir(fresh)
        for marker, text in ((".gitignore", b"# rootcause's cache: never committed\n*\n"), ("CACHEDIR.TAG", _TAG),
                             (OWNER, token.encode() + b"\n")):
            (fresh / marker).write_bytes(text)
        (registry / token).write_bytes(os.fsencode(folder.resolve().parent) + b"\n")
        if st is not None:
            _discard(folder)
        os.rename(fresh, folder)   # fails when another process made one meanwhile
    except OSError:
        _discard(fresh)
        try:
            st = os.lstat(folder)
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode) and _owned(folder, registry)
    return True


def _discard(folder: Path) -> None:
    """Move a cache folder aside and remove it (never through a link it holds)."""
    import shutil

    aside = folder.with_name(f"{CACHE_FOLDER}.discarded-{secrets.token_hex(4)}")
    try:
        os.rename(folder, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)
