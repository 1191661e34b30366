"""The project's store (`rootcause.cache`) as tests handle it: copied along with a project,
records damaged on purpose, a library installed meanwhile."""

from __future__ import annotations

import shutil
from pathlib import Path

from rootcause import cache


def store_of(project: Path) -> Path:
    """The folder holding the project's records (outside the project)."""
    folder = cache.project_folder(project)
    assert folder is not None
    return folder


def copy_store(source: Path, target: Path) -> None:
    """Give the project at `target` the records of the one at `source` (the store is keyed by a
    project's path: a copy otherwise starts cold)."""
    shutil.copytree(store_of(source), store_of(target), dirs_exist_ok=True)


def flip_byte(path: Path, into: int | None = None) -> Path:
    """Flip one bit of a byte of a record file's body (its middle one unless `into`)."""
    data = bytearray(path.read_bytes())
    head = len(cache.RECORD_MAGIC) + 65
    data[head + ((len(data) - head) // 2 if into is None else into)] ^= 0x01
    path.write_bytes(bytes(data))
    return path


def installed_fake_library(folder: Path, monkeypatch) -> Path:
    """A library `fakelib` 2.0 installed in `folder` (on the path, and among the libraries whose
    folders the build's fingerprint watches); returns its metadata folder, whose renaming is
    what an upgrade does there."""
    import sys

    from rootcause.site import stamps

    (folder / "fakelib").mkdir(parents=True)
    (folder / "fakelib" / "__init__.py").write_text("")
    (folder / "fakelib-2.0.dist-info").mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(folder)])
    monkeypatch.setattr(stamps, "LIBRARY_MODULES", (*stamps.LIBRARY_MODULES, "fakelib"))
    return folder / "fakelib-2.0.dist-info"
