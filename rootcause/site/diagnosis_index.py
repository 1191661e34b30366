"""The compiled signature index that `diagnose` reads instead of checking every entry on every call.

It holds the data of the built site's `search/signatures.json` (signatures compiled to regexes
with their anchors, the entries' titles, summaries, first fix steps, roles and declared
consequences) and the site's search files (for the "possibly related" tier), in one file of the
project's cache, `.rootcause-cache/diagnose-index` (see `rootcause.cache` for the format and
the freshness test). `check`, `build` (and so `serve`) and a `diagnose` that had to check the
entries store it whenever the entries they checked had no error; a `diagnose` that finds it
fresh and whole uses it without importing the entry schema, pydantic or anything that renders.

Laid out so that a short log costs little at any size of catalog: the anchor table
(`matching.anchors.SignatureTable`) is read whole; each signature's record and each entry's row
is read only when a log line reaches it (a CRC-32 each); the search files only when an error
needs related entries; the list of inputs only when the cheap freshness test fails.

Sections: `inputs` (name → [stat key, SHA-256]), `table`, `records` (one signature per line),
`entries` (one `[id, row]` per line, the row as in signatures.json), `entry_index`
(id → [offset, length, CRC-32]), `consequences`, `search_index` (path → [offset, length,
CRC-32]) and `search` (the site's search files, one after the other).

What it is keyed by: site.yml, `entries/*.yaml`, the healthy-log folder's files (a healthy log
can make an entry invalid, E036), the study tables (`open_project` checks them too, E046) and the
package's source. Stat keys are taken before a file is
read for checking and again after it was hashed; if any changed in between, nothing is stored.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..cache import CacheFile, Inputs, content_key, read_cache, still_fresh, write_cache
from ..files import relative_path_problem
from ..matching.anchors import (
    CorruptIndex,  # what a section of a fresh index that turns out damaged raises
)

if TYPE_CHECKING:
    from pathlib import Path

    from ..entries.project import Project
    from ..matching.anchors import SignatureTable
    from .search import SearchIndex

NAME = "diagnose-index"
KIND = "rootcause diagnose index"
FORMAT = 4
SECTIONS = ("inputs", "table", "records", "entries", "entry_index", "consequences", "search_index", "search")
PER_RECORD = ("records", "entries", "search")


class DiagnosisIndex:
    """A fresh, whole index, read section by section as `diagnose` needs them."""

    def __init__(self, cached: CacheFile):
        self._cached = cached
        self.base_url: str = cached.header["base_url"]
        self._entry_index: dict | None = None

    def _json(self, name: str):
        data = self._cached.section(name)
        if data is None:
            raise CorruptIndex(f"section '{name}' fails its checksum")
        try:
            return json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise CorruptIndex(f"section '{name}' is not JSON ({exc})") from None

    def table(self) -> SignatureTable:
        from ..matching.anchors import SignatureTable

        return SignatureTable.from_records(self._json("table"), lambda: self._cached.section("records"))

    def verify(self) -> bool:
        """Is every section whole? (Before reading standard input, which cannot be read twice.)"""
        return self._cached.verify()

    def consequences(self) -> Consequences:
        return Consequences(lambda: self._json("consequences"))

    def entry_ids(self) -> dict:
        if self._entry_index is None:
            data = self._json("entry_index")
            if not isinstance(data, dict):
                raise CorruptIndex("section 'entry_index' is not a mapping")
            self._entry_index = data
        return self._entry_index

    def entry(self, entry_id: str):
        """The entry's row as in signatures.json ([title, summary, address, first step, role,
        persistence]), or None for an id the index does not hold."""
        place = self.entry_ids().get(entry_id)
        if place is None:
            return None
        blob = self._cached.section("entries")
        try:
            offset, length, check = place
            line = blob[offset:offset + length] if blob is not None else None
            if line is None or len(line) != length or zlib.crc32(line) != check:
                raise CorruptIndex(f"the row of entry '{entry_id[:60]}' fails its checksum")
            found_id, row = json.loads(line)
        except (TypeError, ValueError, RecursionError) as exc:
            raise CorruptIndex(f"the row of entry '{entry_id[:60]}' is not one ({exc})") from None
        if found_id != entry_id:
            raise CorruptIndex(f"the row of entry '{entry_id[:60]}' is another entry's")
        return row

    def search_files(self) -> SearchFiles:
        places = self._json("search_index")
        if not isinstance(places, dict):
            raise CorruptIndex("section 'search_index' is not a mapping")
        return SearchFiles(places, lambda: self._cached.section("search"))

    def search_index(self) -> SearchIndex:
        from .search import SearchIndex

        return SearchIndex(self.search_files())


class Consequences(Mapping):
    """Declared consequences by cause (ids), read from the index when a report first asks."""

    def __init__(self, read):
        self._read = read
        self._data: dict | None = None

    def _load(self) -> dict:
        if self._data is None:
            data = self._read()
            if not isinstance(data, dict) or not all(isinstance(v, list) and all(isinstance(i, str) for i in v)
                                                     for v in data.values()):
                raise CorruptIndex("section 'consequences' is not a mapping of entry ids")
            self._data = data
        return self._data

    def __getitem__(self, cause: str) -> set[str]:
        return set(self._load()[cause])

    def __iter__(self):
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


class SearchFiles(Mapping):
    """The site's search files by path, each read from the index (and its CRC-32 checked) when
    the query first needs it: the manifest, one shard per query term, a few doc shards."""

    def __init__(self, places: dict, read):
        self._places = places
        self._read = read

    def __getitem__(self, path: str) -> bytes:
        offset, length, check = self._places[path]
        blob = self._read()
        body = blob[offset:offset + length] if blob is not None else b""
        if len(body) != length or zlib.crc32(body) != check:
            raise CorruptIndex(f"search file {path[:80]} fails its checksum")
        return body

    def __iter__(self):
        return iter(self._places)

    def __len__(self) -> int:
        return len(self._places)


def store(project: Project, signature_file: bytes | None = None,
          search_files: dict[str, bytes] | None = None) -> str | None:
    """Write the index of a project whose entries were checked without error (`open_project`
    took its `inputs` before reading them). The site's files are built here unless the caller
    has them already. Returns the index's content key, or None when nothing was written: an
    input changed meanwhile, or the project folder cannot hold a cache."""
    if project.inputs is None:
        return None
    catalog = project.catalog
    if signature_file is None or search_files is None:
        from .search import build_search_files, build_signature_file

        signature_file = signature_file if signature_file is not None else build_signature_file(catalog)
        search_files = search_files if search_files is not None else build_search_files(catalog)
    return store_sections(project.root, project.inputs, catalog.config.base_url,
                          index_sections(search_files, signature_file))


def store_sections(root: Path, before: Inputs, base_url: str, sections: dict[str, bytes]) -> str | None:
    """`store` from the index's sections (`index_sections`), for inputs taken (`Inputs.take`)
    before the entries they were made from were read."""
    recorded = None
    old = read_cache(root, NAME, KIND)
    if old is not None:
        try:
            recorded = json.loads(old.section("inputs") or b"null")
        except (ValueError, RecursionError):
            recorded = None
        old.close()
    try:
        hashes = before.hashes(recorded if isinstance(recorded, dict) else None)
    except (TypeError, IndexError, KeyError):   # a previous record of another shape: hash everything
        hashes = before.hashes()
    if Inputs.take(root, before.folders).stats != before.stats:
        return None   # an input changed while it was being checked or hashed
    record = before.record(hashes)
    if not _write(root, before, record, base_url, sections):
        return None
    return content_key(record)


def index_sections(search_files: Mapping[str, bytes], signature_file: bytes | None = None, *,
                   rows: dict[str, bytes] | None = None, consequences: dict | None = None,
                   table: tuple[bytes, bytes] | None = None) -> dict[str, bytes]:
    """The sections of an index, from a site's signatures.json and its search files; or, for a
    rebuild that knows them, from the entries' rows (as signatures.json has them, by id), the
    declared consequences and the (table, records) sections of the same signatures, which are
    then not compiled again."""
    from ..matching.anchors import SignatureTable

    if signature_file is not None:
        data = json.loads(signature_file)
        table_data, records = SignatureTable.records(data["signatures"])
        table = (_dump(table_data), records)
        lines = [(entry_id, _dump([entry_id, row])) for entry_id, row in data["entries"].items()]
        consequences = data["consequences"]
    else:
        assert rows is not None and table is not None
        lines = [(entry_id, b'["' + entry_id.encode() + b'",' + row + b"]") for entry_id, row in sorted(rows.items())]
    entry_index, offset = {}, 0
    for entry_id, line in lines:
        entry_index[entry_id] = [offset, len(line), zlib.crc32(line)]
        offset += len(line) + 1
    search_index, offset = {}, 0
    for path, body in sorted(search_files.items()):
        search_index[path] = [offset, len(body), zlib.crc32(body)]
        offset += len(body)
    return {"table": table[0], "records": table[1], "entries": b"\n".join(line for _i, line in lines),
            "entry_index": _dump(entry_index), "consequences": _dump(consequences or {}),
            "search_index": _dump(search_index), "search": b"".join(body for _p, body in sorted(search_files.items()))}


def _write(root: Path, inputs: Inputs, record: dict, base_url: str, sections: dict[str, bytes]) -> bool:
    header = {"format": FORMAT, "stat_digest": inputs.digest(), "key": content_key(record),
              "base_url": base_url, "folders": inputs.folders}
    return write_cache(root, NAME, KIND, header, {"inputs": _dump(record), **sections}, per_record=PER_RECORD)


def _dump(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def remove(root: Path) -> None:
    """Delete the index (one found damaged); a missing one, or a folder that is not writable, is no error."""
    import os
    import stat

    from ..cache import cache_folder

    try:
        if stat.S_ISDIR(os.lstat(cache_folder(root)).st_mode):   # never through a link
            (cache_folder(root) / NAME).unlink()
    except OSError:
        pass


def load(root: Path) -> DiagnosisIndex | None:
    """The index, if the cache holds a whole one made from the project's inputs as they are now;
    else None (the caller checks the entries, which stores a new one)."""
    cached = read_cache(root, NAME, KIND)
    if cached is None:
        return None
    header = cached.header
    folders = header.get("folders")
    if header.get("format") != FORMAT or not isinstance(header.get("base_url"), str) or \
            not isinstance(folders, list) or not all(
                isinstance(f, list) and len(f) == 2 and all(isinstance(p, str) for p in f)
                and relative_path_problem(f[0]) is None for f in folders) or \
            not all(name in cached for name in SECTIONS):
        cached.close()
        return None
    now = Inputs.take(root, folders)
    if now.digest() != header.get("stat_digest"):
        try:
            record = json.loads(cached.section("inputs") or b"null")
            if not isinstance(record, dict) or not still_fresh(record, now):
                cached.close()
                return None
        except (ValueError, RecursionError, TypeError, IndexError, KeyError):
            cached.close()
            return None
        # the same content under new stat keys (a checkout, a touch): store them, so that the
        # next call takes the cheap path again
        sections = {name: cached.section(name) for name in SECTIONS if name != "inputs"}
        if all(body is not None for body in sections.values()):
            _write(root, now, now.record({name: value[1] for name, value in record.items()}), header["base_url"],
                   sections)  # type: ignore[arg-type]
    return DiagnosisIndex(cached)
