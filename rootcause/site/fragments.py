"""The HTML a theme's macros made of cards, kept between builds (`.rootcause-cache/build-fragments`).

A macro of an imported template (`{% from "_macros.html" import entry_card %}`, without `with
context`) sees its arguments and the theme's globals and nothing of the page that calls it, and
the sandbox the templates run in lets no template change a value it is given. A call with one
card and otherwise plain values (text, numbers, the page's `link` function) therefore gives the
same HTML whenever the card, the other values and what `link` answers for the targets the macro
asked it for are the same: `render.Renderer` keeps it here, by a hash of the render stamp (code,
theme, site.yml, assets), the macro, the card and the other values, with those answers. A
category page and a tag page ask `link` the same question and get the same answer, so they share
one fragment per card; the all-entries page shows every card, and after one entry changed an
in-place rebuild renders that card again and takes the others from here.

The file: a header, a fixed-width index (key, card digest, offset, length, CRC-32 per fragment)
and the records (the `link` answers as JSON, a newline, the HTML). When a card changes, the fragments
of its old content are dropped as the file is written again (`sections`). A damaged record is
rendered again, never used.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib

from ..cache import read_cache, write_cache

NAME = "build-fragments"
KIND = "build-fragments"
_ROW = struct.Struct("<16s8sIII")   # key, card digest, offset, length, CRC-32


def card_digest(text: str) -> bytes:
    """A card's `repr` of its fields → the digest its fragments are kept (and dropped) by."""
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=8).digest()


class Fragments:
    """Fragments by key: those made or used in this process, and those a file holds (read lazily).
    A key can hold several fragments, one per set of `link` answers."""

    def __init__(self, stamp: str = "", volatile: tuple[str, ...] = ()):
        """`stamp`: what every page depends on (`stamps.render_stamp`); `volatile`: templates
        whose macros are not kept, because they may name what the stamp leaves out."""
        self.stamp = hashlib.blake2b(stamp.encode("utf-8", "surrogateescape"), digest_size=16).digest()
        self.volatile = volatile
        self._used: dict[bytes, list[tuple]] = {}            # key → [(answers, html, card digest, record)]
        self._new: list[tuple[bytes, tuple, str, bytes]] = []   # made here since `take_new`
        self._rows: dict[bytes, list[tuple]] = {}               # the file's, not yet used: key → [index rows]
        self._blob = b""

    def key(self, text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=16, key=self.stamp).digest()

    def candidates(self, key: bytes) -> list[tuple[tuple, str, bytes, bytes | None]]:
        """The fragments kept under `key`: (link answers, HTML, card digest, the record as
        stored or None) each."""
        rows = self._rows.pop(key, None)
        if rows is None:
            return self._used.get(key, ())
        found = self._used.setdefault(key, [])
        for digest, offset, length, check in rows:
            data = self._blob[offset:offset + length]
            if len(data) != length or zlib.crc32(data) != check:
                continue
            head, _newline, html = data.partition(b"\n")
            try:
                answers = json.loads(head)
                found.append((tuple(tuple(pair) for pair in answers), html.decode("utf-8", "surrogateescape"),
                              digest, data))
            except (ValueError, TypeError, RecursionError, UnicodeDecodeError):
                continue
        return found

    def put(self, key: bytes, answers: tuple, html: str, digest: bytes) -> None:
        self.candidates(key)
        self._used.setdefault(key, []).append((answers, html, digest, None))
        self._new.append((key, answers, html, digest))

    def take_new(self) -> list[tuple[bytes, tuple, str, bytes]]:
        """The fragments made since the last call (a render worker sends them to the parent)."""
        made, self._new = self._new, []
        return made

    def add(self, made: list[tuple[bytes, tuple, str, bytes]]) -> None:
        for key, answers, html, digest in made:
            if all(found[0] != answers for found in self.candidates(key)):
                self._used.setdefault(key, []).append((answers, html, digest, None))

    # -- the file ---------------------------------------------------------------------------------
    def load(self, root) -> "Fragments":
        """Take the fragments the project's cache holds for this stamp (none if it holds another's)."""
        cached = read_cache(root, NAME, KIND)
        if cached is None:
            return self
        try:
            if cached.header.get("stamp") != self.stamp.hex():
                return self
            index, blob = cached.section("index"), cached.section("records")
            if index is None or blob is None or len(index) % _ROW.size:
                return self
            rows: dict[bytes, list[tuple]] = {}
            for key, digest, offset, length, check in _ROW.iter_unpack(index):
                rows.setdefault(key, []).append((digest, offset, length, check))
            self._rows, self._blob = rows, blob
        finally:
            cached.close()
        return self

    def sections(self, live) -> tuple[bytes, bytes]:
        """The index and the records to store: every fragment made, used or held whose card
        digest `live(digest)` accepts."""
        index: list[bytes] = []
        body: list[bytes] = []
        offset = 0
        for key, found in self._used.items():
            for answers, html, digest, data in found:
                if live(digest):
                    if data is None:
                        data = json.dumps(answers, separators=(",", ":")).encode("ascii") + \
                            b"\n" + html.encode("utf-8", "surrogateescape")
                    index.append(_ROW.pack(key, digest, offset, len(data), zlib.crc32(data)))
                    body.append(data)
                    offset += len(data)
        for key, rows in self._rows.items():
            for digest, start, length, check in rows:
                if live(digest):
                    data = self._blob[start:start + length]
                    if len(data) == length and zlib.crc32(data) == check:
                        index.append(_ROW.pack(key, digest, offset, length, check))
                        body.append(data)
                        offset += length
        return b"".join(index), b"".join(body)

    def store(self, root, live) -> bool:
        index, records = self.sections(live)
        return write_cache(root, NAME, KIND, {"stamp": self.stamp.hex()}, {"index": index, "records": records},
                           per_record=("records",))
