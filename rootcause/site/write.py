"""Write the site atomically: the previous site stays whole until the new one is complete.

The new site is assembled in a sibling staging folder and swapped in with one rename (an atomic
exchange on Linux, two renames elsewhere). Files whose bytes did not change since the last build
are hard-linked from it instead of written again, which keeps rebuilds cheap; a file is reused
only after its bytes on disk were compared with the new ones, so a file corrupted by hand (or by
anything else) is written again, and `--force` reuses nothing. The build's state (every file's
hash, the inputs' fingerprint and when it was written) is a record of the project's store
(`cache.RecordStore`, outside the project), not in the output folder: the folder holds only what
is deployed. A build refuses to replace a non-empty folder that is neither
recorded there nor has the files every rootcause site has (`LOOKS_BUILT`; the manifest file of
earlier versions, `.rootcause-build.json`, counts too), refuses the project folder itself or one
of its parents, and refuses any output path that would land outside the output folder.

One build at a time writes an output folder: `OutputLock` holds an exclusive `flock` on a lock
file next to it (`.site.lock` for `site/`, never inside the folder that gets deployed); a second
build waits for the first, then builds its own inputs. Staging folders left by killed builds
(`.site.staging-PID` whose process is gone) are removed by the next build.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import hashlib
import os
import re
import shutil
import stat
import time
from collections.abc import Callable
from typing import Literal
from pathlib import Path, PurePosixPath

from .. import jsonbytes
from ..cache import RecordStore
from ..errors import Diagnostic, RootcauseError

#: the manifest file earlier versions wrote into the output folder (now the state is in the cache)
LEGACY_MANIFEST = ".rootcause-build.json"
#: files every site rootcause builds has at its top: a folder with all of them is taken as one
#: this program wrote when the cache that recorded it is gone (deleted, or another checkout's)
LOOKS_BUILT = ("index.html", "404.html", "entry.schema.json", ".nojekyll", "sitemap.xml", "robots.txt")
_RENAME_EXCHANGE = 2


STATE_RECORDS = "build-state"


def state_name(out: Path) -> str:
    """The key of the state of the builds into `out`."""
    return hashlib.blake2b(os.fsencode(out.resolve()), digest_size=8).hexdigest()


def read_manifest(out: Path, root: Path | None = None) -> dict:
    """The state the last build into `out` left in `root`'s store ({} if none, or not whole):
    {"files": {path: hash}, "inputs": fingerprint, "written_ns": time}. `root` defaults to the
    output's parent folder."""
    root = root if root is not None else out.resolve().parent
    body = RecordStore(root, STATE_RECORDS).get(state_name(out))
    try:
        data = jsonbytes.loads(body) if body is not None else None
    except (ValueError, RecursionError):
        return {}
    if not (isinstance(data, dict) and data.get("out") == os.fsdecode(os.fsencode(out.resolve()))
            and isinstance(data.get("files"), dict) and isinstance(data.get("written_ns"), int)):
        return {}
    return data


def write_manifest(out: Path, root: Path | None, manifest: dict) -> bool:
    """Record the build's state in the project's store."""
    root = root if root is not None else out.resolve().parent
    body = jsonbytes.dumps(dict(manifest, out=os.fsdecode(os.fsencode(out.resolve()))), sort_keys=True)
    return RecordStore(root, STATE_RECORDS).put(state_name(out), body)


def looks_built(out: Path) -> bool:
    return (out / LEGACY_MANIFEST).is_file() or all(os.path.lexists(out / name) for name in LOOKS_BUILT)


def file_digest(data: bytes) -> str:
    """A file's hash as the build state records it: SHA-256 cut to 128 bits. Current x86 and ARM
    cores compute SHA-256 in hardware (faster than BLAKE2b on them)."""
    return hashlib.sha256(data).hexdigest()[:32]


def check_output_folder(out: Path, root: Path, state: dict | None = None) -> list[Diagnostic]:
    """E050 when `out` cannot be the output folder. `state`: what `read_manifest` gave for it
    just before, if the caller read it (not read again)."""
    out = out.resolve()
    root = root.resolve()
    shown = out.as_posix()
    if out == root or out in root.parents or out == Path(out.anchor) or out == Path.home():
        return [Diagnostic(shown, 1, 1, "E050", "the output folder is the project folder or one of its parents",
                           "set 'output:' in site.yml (or --out) to a folder of its own, such as site")]
    if out.exists() and not out.is_dir():
        return [Diagnostic(shown, 1, 1, "E050", "the output path exists and is not a folder",
                           "remove it or choose another output folder")]
    if out.is_dir() and any(out.iterdir()) and not (state if state is not None else read_manifest(out, root)) and \
            not looks_built(out):
        return [Diagnostic(shown, 1, 1, "E050", "the output folder is not empty and was not written by rootcause",
                           "choose an empty or new folder; rootcause replaces its output folder completely")]
    return []


#: a plain relative path: segments of anything but a slash, a backslash or NUL, none of them "." or ".."
_PLAIN = re.compile(r"(?!\.\.?(?:/|$))[^/\\\x00]+(?:/(?!\.\.?(?:/|$))[^/\\\x00]+)*")


def safe_relative(path: str) -> str:
    """Refuse absolute paths, '..' and other ways out of the output folder."""
    if type(path) is str and _PLAIN.fullmatch(path):
        return path   # as `PurePosixPath(path).as_posix()` gives it, without making one per file
    pure = PurePosixPath(path)
    if pure.is_absolute() or not pure.parts or any(part in ("..", "") for part in pure.parts) or "\\" in path:
        raise RootcauseError([Diagnostic(path, 1, 1, "E050", "refusing to write outside the output folder",
                                         "output paths are relative and stay inside the output folder")])
    return pure.as_posix()


def output_intact(out: Path, manifest: dict) -> bool:
    """Is `out` as the build that wrote `manifest` left it? Every file the manifest lists is there
    as a regular file, and neither it nor any folder of the site was modified after the build
    finished (`written_ns`, taken after the new folder was in place). A file added, removed or
    renamed anywhere changes its folder's modification time, so the folders' times stand for a
    listing of them. Cheap: one `lstat` per file and per folder, nothing is read or listed. A
    change that also forges modification times is repaired by `build --force`, which reuses
    nothing."""
    files = manifest.get("files")
    written = manifest.get("written_ns")
    if not isinstance(files, dict) or not isinstance(written, int):
        return False
    laid = _layout(os.fspath(out) + "/", files)
    if laid is None:
        return False
    paths, folders = laid
    lstat, is_dir, is_file = os.lstat, stat.S_ISDIR, stat.S_ISREG
    try:
        for path in paths:
            st = lstat(path)
            if st.st_mtime_ns > written or not is_file(st.st_mode):
                return False
        for path in folders:
            st = lstat(path)
            if st.st_mtime_ns > written or not is_dir(st.st_mode):
                return False
    except (OSError, TypeError, ValueError):
        return False
    return True


#: the last `_layout` made: (top, files, its result); `serve` tests its output once a second
#: between builds, and a build's child inherits what the test made of the same state
_LAID: list = []


def _layout(top: str, files: dict) -> tuple[list[str], list[str]] | None:
    """The paths of a manifest's files and of the folders holding them, under `top`; None when
    one is not a path this code writes."""
    if _LAID and _LAID[0][0] == top and _LAID[0][1] is files:
        return _LAID[0][2]
    folders = {""}
    paths = []
    try:
        for relative in files:
            if ".." in relative and ".." in relative.split("/") or relative.startswith("/"):
                return None   # not a path this code writes
            paths.append(top + relative)
            cut = relative.rfind("/")
            while cut > 0 and relative[:cut] not in folders:
                folders.add(relative[:cut])
                cut = relative.rfind("/", 0, cut)
    except (TypeError, AttributeError):
        return None
    laid = paths, [top + folder for folder in sorted(folders)]
    _LAID[:] = [(top, files, laid)]
    return laid


def _unwritable(out: Path, exc: OSError) -> RootcauseError:
    return RootcauseError([Diagnostic(out.as_posix(), 1, 1, "E051",
                                      f"cannot write the output folder or next to it: {exc.strerror or exc}",
                                      "build into a folder you can write (--out DIR or 'output:' in site.yml), "
                                      "or free some space")])


class OutputLock:
    """An exclusive lock on one output folder, held for a whole build (`flock` on `.NAME.lock`
    next to the folder: released by the kernel if the build is killed)."""

    def __init__(self, out: Path, wait: float = 600.0, on_wait=None):
        self.out = out
        self.path = out.parent / f".{out.name}.lock"
        self.wait = wait
        self.on_wait = on_wait
        self.fd: int | None = None

    def __enter__(self) -> "OutputLock":
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as exc:
            raise _unwritable(self.out, exc) from None
        deadline = time.monotonic() + self.wait
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "another process"
                    os.close(fd)
                    raise RootcauseError([Diagnostic(
                        self.out.as_posix(), 1, 1, "E052",
                        f"another build (pid {holder}) is writing this output folder; gave up after {self.wait:g}s",
                        "wait for it to finish (or stop it), or build into another folder with --out")]) from None
                if not told and self.on_wait is not None:
                    self.on_wait(f"waiting for another build into {self.out} to finish…")
                    told = True
                time.sleep(0.05)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:
            pass  # the pid is only shown to whoever waits
        self.fd = fd
        return self

    def __exit__(self, *_exc) -> Literal[False]:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
        return False


_LEFTOVER = re.compile(r"\.(?P<name>.+)\.(?:staging|old)-(?P<pid>[0-9]+)$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def remove_leftovers(out: Path) -> list[Path]:
    """Staging (and half-swapped old) folders of `out` left by builds that were killed: removed
    when their process is gone. Called with the output's lock held."""
    removed: list[Path] = []
    try:
        siblings = list(os.scandir(out.parent))
    except OSError:
        return removed
    for entry in siblings:
        match = _LEFTOVER.match(entry.name)
        if not match or match["name"] != out.name:
            continue
        pid = int(match["pid"])
        if pid == os.getpid() or _alive(pid) or not entry.is_dir(follow_symlinks=False):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


class SiteWriter:
    """Writes files into a staging folder as they are produced, then swaps it in by `commit()`.

    Streaming keeps memory flat in the size of the site; until `commit()`, the previous site is
    untouched, and leaving the `with` block on an exception removes the staging folder. The
    caller holds the output's `OutputLock`. `previous` is the last build's `{path: hash}` (from
    its state): a file listed with the same hash is linked from the last build after its bytes
    were compared; with none, every file is written anew.
    """

    def __init__(self, out: Path, previous: dict | None = None):
        self.out = out.resolve()
        self.previous = previous if isinstance(previous, dict) and self.out.is_dir() else {}
        self.staging = self.out.parent / f".{self.out.name}.staging-{os.getpid()}"
        self.digests: dict[str, str] = {}
        self.written = self.reused = 0
        self._dirs: set[Path] = set()

    def __enter__(self) -> "SiteWriter":
        try:
            if os.path.lexists(self.staging):
                shutil.rmtree(self.staging)
            self.staging.mkdir(parents=True)
        except OSError as exc:
            raise _unwritable(self.out, exc) from None
        self._dirs.add(self.staging)
        return self

    def __exit__(self, kind, *_exc) -> Literal[False]:
        if kind is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
        return False

    def add(self, path: str, data: bytes, digest: str | None = None) -> None:
        self.record(path, *self.put(path, data, digest))

    def put(self, path: str, data: bytes, digest: str | None = None) -> tuple[str, bool]:
        """Write one file into the staging folder, or link the last build's copy when it holds
        these bytes; returns (its hash, linked). Safe in a forked render worker, which writes
        its own pages and sends only this back to `record`. A path already in the staging folder
        is E050: the file there is never opened again (it may be a link to the last build's).
        `digest`: the bytes' `file_digest`, when the caller has it."""
        relative = safe_relative(path)
        digest = digest or file_digest(data)
        target = self.staging / relative
        try:
            if target.parent not in self._dirs:
                target.parent.mkdir(parents=True, exist_ok=True)
                self._dirs.add(target.parent)
            if self.previous.get(relative) == digest and self._link_if_same(self.out / relative, target, data):
                return digest, True
            with open(target, "xb") as stream:
                stream.write(data)
        except FileExistsError:
            raise RootcauseError([Diagnostic(path, 1, 1, "E050", "two outputs want the same path",
                                             "rename one of the pages or assets")]) from None
        except OSError as exc:
            raise _unwritable(self.out, exc) from None
        return digest, False

    def discard(self, path: str) -> None:
        """Remove what a worker that died may have put at `path` in the staging folder (a file,
        or a link to the last build's, which stays as it is), so that the page can be put again."""
        try:
            os.unlink(self.staging / safe_relative(path))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _unwritable(self.out, exc) from None

    def record(self, path: str, digest: str, linked: bool) -> None:
        """Count a file `put` wrote (here or in a worker)."""
        self.digests[safe_relative(path)] = digest
        if linked:
            self.reused += 1
        else:
            self.written += 1

    @staticmethod
    def _link_if_same(source: Path, target: Path, data: bytes) -> bool:
        """Hard-link the previous build's file if it holds exactly `data` now (the manifest says
        what was written, not what is there: the bytes are compared)."""
        try:
            fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
                return False
            with os.fdopen(os.dup(fd), "rb") as stream:
                if stream.read(len(data) + 1) != data:
                    return False
            try:
                os.link(source, target, follow_symlinks=False)
            except OSError:
                return False
            if os.lstat(target).st_ino != st.st_ino:  # replaced between the check and the link
                os.unlink(target)
                return False
            return True
        finally:
            os.close(fd)

    def commit(self, extra: dict | None = None) -> dict:
        """Swap the new folder in; returns the state to record (`write_manifest`)."""
        try:
            _swap(self.staging, self.out)
        except OSError as exc:
            raise _unwritable(self.out, exc) from None
        return {"files": dict(sorted(self.digests.items())), **(extra or {}), "written_ns": file_clock(self.out)}


class NotIntact(Exception):
    """The output was changed since the build that an `InPlaceWriter` writes over (its `gate`)."""


class InPlaceWriter:
    """`SiteWriter`'s interface, writing into the output folder itself: what `serve` uses when
    the output is as its last build left it (`output_intact`, against the state that build
    kept in memory). A file whose hash is the one the last build wrote there is left alone,
    unread (`put`, or `keep` when the caller knows the hash without the bytes); any other is
    written beside its place and renamed into it, so that a page being served is the old one
    or the new one, never half of either; `commit` removes the files the build no longer makes.
    A build that fails while writing leaves a mix of old and new files: the caller then forgets
    the state, and its next build writes a whole new folder (`SiteWriter`)."""

    def __init__(self, out: Path, previous: dict[str, str], gate: Callable[[], bool] | None = None):
        self.out = out.resolve()
        self.previous = previous
        # `gate`: asked once, before the first file is written or kept, whether the output is
        # still as `previous` says (`output_intact`, made meanwhile in another process: `build`);
        # False raises `NotIntact`, with nothing written
        self.gate = gate
        self.touched = False   # a file of the output replaced or removed (also by a forked worker: see `put`)
        self.digests: dict[str, str] = {}
        self.written = self.reused = 0
        self._dirs: set[Path] = set()

    def __enter__(self) -> "InPlaceWriter":
        return self

    def __exit__(self, *_exc) -> Literal[False]:
        return False

    def open_gate(self) -> None:
        gate, self.gate = self.gate, None
        if gate is not None and not gate():
            raise NotIntact(os.fspath(self.out))

    def add(self, path: str, data: bytes, digest: str | None = None) -> None:
        if self.gate is not None:
            self.open_gate()
        if digest is not None and self.previous.get(path) == digest and path not in self.digests:
            # a file the last build wrote with these bytes, under this very path (checked by
            # `safe_relative` then): left alone, as `put` and `record` would (thousands of search
            # shards a build, nearly all of them unchanged)
            self.digests[path] = digest
            self.reused += 1
            return
        self.record(path, *self.put(path, data, digest))

    def put(self, path: str, data: bytes, digest: str | None = None) -> tuple[str, bool]:
        if self.gate is not None:
            self.open_gate()
        relative = safe_relative(path)
        digest = digest or file_digest(data)
        if self.previous.get(relative) == digest:
            return digest, True
        target = self.out / relative
        temporary = target.parent / f".{target.name}.{os.getpid()}.tmp"
        self.touched = True   # (in a worker, its parent learns it from `record`)
        try:
            if target.parent not in self._dirs:
                target.parent.mkdir(parents=True, exist_ok=True)
                self._dirs.add(target.parent)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC |
                         getattr(os, "O_NOFOLLOW", 0), 0o644)
            with os.fdopen(fd, "wb") as stream:
                stream.write(data)
            os.replace(temporary, target)
        except OSError as exc:
            raise _unwritable(self.out, exc) from None
        return digest, False

    def keep(self, path: str, digest: str) -> None:
        """A file the last build wrote with this hash (its path checked then), left as it is."""
        if self.gate is not None:
            self.open_gate()
        if path in self.digests:
            raise RootcauseError([Diagnostic(path, 1, 1, "E050", "two outputs want the same path",
                                             "rename one of the pages or assets")])
        self.digests[path] = digest
        self.reused += 1

    def discard(self, path: str) -> None:
        """Nothing to undo: a file is replaced whole or not at all."""

    def record(self, path: str, digest: str, linked: bool) -> None:
        relative = safe_relative(path)
        self.touched = self.touched or not linked
        if relative in self.digests:
            raise RootcauseError([Diagnostic(path, 1, 1, "E050", "two outputs want the same path",
                                             "rename one of the pages or assets")])
        self.digests[relative] = digest
        if linked:
            self.reused += 1
        else:
            self.written += 1

    def commit(self, extra: dict | None = None) -> dict:
        """Remove what the last build wrote and this one did not (and the folders that leaves
        empty); returns the state to record."""
        if self.gate is not None:
            self.open_gate()
        for relative in sorted(set(self.previous) - set(self.digests)):
            self.touched = True
            target = self.out / relative
            try:
                os.unlink(target)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise _unwritable(self.out, exc) from None
            folder = target.parent
            while folder != self.out:
                try:
                    os.rmdir(folder)
                except OSError:
                    break
                folder = folder.parent
        return {"files": dict(sorted(self.digests.items())), **(extra or {}), "written_ns": file_clock(self.out)}


def file_clock(out: Path) -> int:
    """Now, by the clock the file system stamps files with (a probe file's modification time):
    every file written before has a time at or before it. `time.time_ns()` reads a finer clock,
    which a file written a moment earlier can be stamped after."""
    probe = out.parent / f".{out.name}.clock-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, b"0")
            return os.fstat(fd).st_mtime_ns
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError:
        return time.time_ns()


def write_site(out: Path, files: dict[str, bytes], extra: dict | None = None, root: Path | None = None) -> tuple[int, int]:
    """Replace `out` with exactly `files`, its state kept in `root`'s store (default: the output's
    parent folder). Returns (files written, files reused from the last build)."""
    out = out.resolve()
    with OutputLock(out):
        with SiteWriter(out, previous=read_manifest(out, root).get("files")) as writer:
            for path in sorted(files):
                writer.add(path, files[path])
            manifest = writer.commit(extra)
        write_manifest(out, root, manifest)
    return writer.written, writer.reused


def _swap(staging: Path, out: Path) -> None:
    """Put staging in out's place; the old site is removed only after the swap."""
    if out.exists() and _exchange(staging, out):
        shutil.rmtree(staging, ignore_errors=True)  # staging now holds the old site
        return
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    if out.exists():
        os.rename(out, old)
    os.rename(staging, out)
    shutil.rmtree(old, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two paths with renameat2(RENAME_EXCHANGE) where the OS has it."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    result = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    return result == 0
