"""Damaging cache files on purpose: a byte flipped inside a named section, wherever it is stored
(in the file itself, or shared in `.rootcause-cache/sections/`)."""

from __future__ import annotations

import json
from pathlib import Path

from rootcause import cache


def sections(path: Path) -> list[list]:
    data = path.read_bytes()
    return json.loads(data[len(cache.MAGIC):data.index(b"\n", len(cache.MAGIC))])["sections"]


def section_file(path: Path, name: str) -> tuple[Path, int, int]:
    """Where the section `name` of the cache file `path` is: (file, offset, length)."""
    data = path.read_bytes()
    at = data.index(b"\n", len(cache.MAGIC)) + 1
    for item in sections(path):
        if len(item) == 4:
            if item[0] == name:
                return path.parent / cache.SHARED / item[2], 0, item[1]
            continue
        if item[0] == name:
            return path, at, item[1]
        at += item[1]
    raise KeyError(name)


def flip_byte(path: Path, name: str, into: int | None = None) -> Path:
    """Flip one bit of a byte of section `name` (its middle one unless `into`); returns the file changed."""
    where, offset, length = section_file(path, name)
    data = bytearray(where.read_bytes())
    data[offset + (length // 2 if into is None else into)] ^= 0x01
    where.write_bytes(bytes(data))
    return where


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
