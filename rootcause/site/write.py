"""Write the site atomically: the previous site stays whole until the new one is complete.

The new site is assembled in a sibling staging folder and swapped in with one rename (an atomic
exchange on Linux, two renames elsewhere). Files whose bytes did not change since the last build
are hard-linked from it instead of written again, which keeps rebuilds cheap. A manifest of
every file's hash (`.rootcause-build.json`) marks the folder as ours: a build refuses to replace
a non-empty folder that lacks it, refuses the project folder itself or one of its parents, and
refuses any output path that would land outside the output folder.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import shutil
from pathlib import Path, PurePosixPath

from ..errors import Diagnostic, RootcauseError

MANIFEST = ".rootcause-build.json"
_RENAME_EXCHANGE = 2


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def check_output_folder(out: Path, root: Path) -> list[Diagnostic]:
    out = out.resolve()
    root = root.resolve()
    shown = out.as_posix()
    if out == root or out in root.parents or out == Path(out.anchor) or out == Path.home():
        return [Diagnostic(shown, 1, 1, "E050", "the output folder is the project folder or one of its parents",
                           "set 'output:' in site.yml (or --out) to a folder of its own, such as site")]
    if out.exists() and not out.is_dir():
        return [Diagnostic(shown, 1, 1, "E050", "the output path exists and is not a folder",
                           "remove it or choose another output folder")]
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).exists():
        return [Diagnostic(shown, 1, 1, "E050", "the output folder is not empty and was not written by rootcause",
                           "choose an empty or new folder; rootcause replaces its output folder completely")]
    return []


def safe_relative(path: str) -> str:
    """Refuse absolute paths, '..' and other ways out of the output folder."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or not pure.parts or any(part in ("..", "") for part in pure.parts) or "\\" in path:
        raise RootcauseError([Diagnostic(path, 1, 1, "E050", "refusing to write outside the output folder",
                                         "output paths are relative and stay inside the output folder")])
    return pure.as_posix()


def read_manifest(out: Path) -> dict:
    try:
        return json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


class SiteWriter:
    """Writes files into a staging folder as they are produced, then swaps it in by `commit()`.

    Streaming keeps memory flat in the size of the site; until `commit()`, the previous site is
    untouched, and leaving the `with` block on an exception removes the staging folder.
    """

    def __init__(self, out: Path):
        self.out = out.resolve()
        self.previous = read_manifest(self.out).get("files", {}) if self.out.is_dir() else {}
        self.staging = self.out.parent / f".{self.out.name}.staging-{os.getpid()}"
        self.digests: dict[str, str] = {}
        self.written = self.reused = 0
        self._dirs: set[Path] = set()

    def __enter__(self) -> "SiteWriter":
        if self.staging.exists():
            shutil.rmtree(self.staging)
        self.staging.mkdir(parents=True)
        self._dirs.add(self.staging)
        return self

    def __exit__(self, kind, *_exc) -> bool:
        if kind is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
        return False

    def add(self, path: str, data: bytes) -> None:
        relative = safe_relative(path)
        if relative in self.digests:
            raise RootcauseError([Diagnostic(path, 1, 1, "E050", "two outputs want the same path",
                                             "rename one of the pages or assets")])
        digest = _digest(data)
        self.digests[relative] = digest
        target = self.staging / relative
        if target.parent not in self._dirs:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._dirs.add(target.parent)
        if self.previous.get(relative) == digest:
            try:
                os.link(self.out / relative, target)
                self.reused += 1
                return
            except OSError:
                pass
        target.write_bytes(data)
        self.written += 1

    def commit(self, extra: dict | None = None) -> None:
        manifest = {"files": dict(sorted(self.digests.items())), **(extra or {})}
        (self.staging / MANIFEST).write_text(json.dumps(manifest, indent=0, sort_keys=True), encoding="utf-8")
        _swap(self.staging, self.out)


def write_site(out: Path, files: dict[str, bytes], extra: dict | None = None) -> tuple[int, int]:
    """Replace `out` with exactly `files`. Returns (files written, files reused from the last build)."""
    with SiteWriter(out) as writer:
        for path in sorted(files):
            writer.add(path, files[path])
        writer.commit(extra)
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
