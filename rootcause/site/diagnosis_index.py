"""The compiled signature index that `diagnose` reads instead of checking every entry on every call.

It holds the data of the built site's `search/signatures.json` (signatures compiled to regexes
with their anchors, the entries' titles, summaries, first fix steps, roles and declared
consequences) and the site's search files (for the "possibly related" tier), as records of the
project's store (`cache.RecordStore`, kind `diagnose-index`): a head record naming each section
by the SHA-256 of its body, and the sections, each a record of its own (see `rootcause.inputs`
for the freshness test). `check`, `build` (and so `serve`) and a `diagnose` that had to check the
entries store it whenever the entries they checked had no error; a `diagnose` that finds it
fresh and whole uses it without importing the entry schema, pydantic or anything that renders.

Laid out so that a short log costs little at any size of catalog: the anchor table
(`matching.anchors.SignatureTable`) is read whole; each signature's record and each entry's row
is read only when a log line reaches it (a CRC-32 each); the search files only when an error
needs related entries; the list of inputs only when the cheap freshness test fails.

Sections: `inputs` (name → [stat key, SHA-256]), `table`, `records` (one signature per line),
`entries.K` (one `[id, row]` per line, the row as in signatures.json (`matching.rows`), for the ids of bucket K:
`cache.bucket`), `entry_index` (id → [K, offset, length, CRC-32]), `consequences`,
`search_index` (path → [K, offset, length, CRC-32]) and `search.K` (the site's search files of
bucket K, one after the other). Cut into buckets so that a short log reads a few rows.

What it is keyed by: site.yml, `entries/*.yaml`, the healthy-log folder's files (a healthy log
can make an entry invalid, E036), the study tables (`open_project` checks them too, E046) and the
package's source. Stat keys are taken before a file is
read for checking and again after it was hashed; if any changed in between, nothing is stored.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .. import jsonbytes
from ..cache import RecordStore
from ..inputs import Inputs, content_key, still_fresh
from ..files import relative_path_problem
from ..matching.anchors import (
    CorruptIndex,  # what a section of a fresh index that turns out damaged raises
)

if TYPE_CHECKING:
    from pathlib import Path

    from ..entries.project import Project
    from ..matching.anchors import SignatureTable
    from .search import SearchIndex

RECORDS = "diagnose-index"
HEAD = "0" * 32   # the key of the head record; the sections are filed by their SHA-256
FORMAT = 9   # 7: entry rows are mappings read by name (`matching.rows`); 8: signatures carry their core;
#            9: and their raising frames
WHOLE = ("inputs", "table", "records", "entry_index", "consequences", "search_index")


def section_names(count: int) -> list[str]:
    return [*WHOLE, *(f"{kind}.{k}" for kind in ("entries", "search") for k in range(count))]


class DiagnosisIndex:
    """A fresh, whole index, read section by section as `diagnose` needs them."""

    def __init__(self, records: RecordStore, header: dict):
        self._records = records
        self._digests: dict[str, str] = header["sections"]
        self._read: dict[str, bytes] = {}
        self.base_url: str = header["base_url"]
        self._entry_index: dict | None = None

    def section(self, name: str) -> bytes | None:
        """A section's bytes (read once, checked against their SHA-256), or None."""
        if name not in self._read:
            digest = self._digests.get(name)
            body = self._records.get(digest) if isinstance(digest, str) else None
            if body is None:
                return None
            self._read[name] = body
        return self._read[name]

    def _json(self, name: str):
        data = self.section(name)
        if data is None:
            raise CorruptIndex(f"section '{name}' fails its checksum")
        try:
            return jsonbytes.loads(data)
        except (ValueError, RecursionError) as exc:
            raise CorruptIndex(f"section '{name}' is not JSON ({exc})") from None

    def table(self) -> SignatureTable:
        from ..matching.anchors import SignatureTable

        return SignatureTable.from_records(self._json("table"), lambda: self.section("records"))

    def verify(self) -> bool:
        """Is every section whole? (Before reading standard input, which cannot be read twice.)"""
        return all(self.section(name) is not None for name in self._digests)

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
        """The entry's row as in signatures.json (`matching.rows`), or None for an id the index
        does not hold."""
        place = self.entry_ids().get(entry_id)
        if place is None:
            return None
        try:
            k = place[0]
            line = record_at(self.section(f"entries.{k}") if isinstance(k, int) else None, place)
            if line is None:
                raise CorruptIndex(f"the row of entry '{entry_id[:60]}' fails its checksum")
            found_id, row = jsonbytes.loads(line)
        except (TypeError, ValueError, RecursionError) as exc:
            raise CorruptIndex(f"the row of entry '{entry_id[:60]}' is not one ({exc})") from None
        if found_id != entry_id:
            raise CorruptIndex(f"the row of entry '{entry_id[:60]}' is another entry's")
        return row

    def search_files(self) -> SearchFiles:
        places = self._json("search_index")
        if not isinstance(places, dict):
            raise CorruptIndex("section 'search_index' is not a mapping")
        return SearchFiles(places, lambda k: self.section(f"search.{k}") if isinstance(k, int) else None)

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
        place = self._places[path]
        try:
            k, _offset, _length, _check = place
        except (TypeError, ValueError):
            raise CorruptIndex(f"the place of search file {path[:80]} is not one") from None
        body = record_at(self._read(k), place)
        if body is None:
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
    old = _open(RecordStore(root, RECORDS))
    if old is not None:
        try:
            recorded = jsonbytes.loads(old.section("inputs") or b"null")
        except (ValueError, RecursionError):
            recorded = None
    read: list[str] = []
    try:
        hashes = before.hashes(recorded if isinstance(recorded, dict) else None, read)
    except (TypeError, IndexError, KeyError):   # a previous record of another shape: hash everything
        read = []
        hashes = before.hashes(None, read)
    # A file hashed now that changed since its stat key was taken may have been checked as it was
    # and hashed as it is: its hash would then pass for the content the index was made from. Any
    # other file that changed since keeps its earlier hash under the stat key taken before, and
    # the next freshness test finds it changed. (Added or removed files change the listing.)
    if not before.unchanged(read):
        return None   # an input changed while it was being checked or hashed
    return _write(root, before, before.record(hashes), base_url, sections)


def index_sections(search_files: Mapping[str, bytes], signature_file: bytes) -> dict[str, bytes]:
    """The sections of an index (all but `inputs`), from a site's signatures.json and its search files."""
    data = jsonbytes.loads(signature_file)
    rows = {entry_id: _dump(row) for entry_id, row in data["entries"].items()}
    from ..matching.anchors import SignatureTable

    return _sections(search_files, SignatureTable.records(data["signatures"]), rows, data["consequences"])


def index_sections_of_parts(search_files: Mapping[str, bytes], parts: Mapping[str, tuple[bytes, bytes | None]],
                            consequences: dict, table: tuple[dict, bytes] | None = None) -> dict[str, bytes]:
    """`index_sections` of the signatures.json that `search.assemble_signature_file` makes of
    these parts, without parsing that file whole: each entry's signatures are parsed, recorded
    and dropped in turn (at 10,000 entries the parsed file is about 100 MB), and its row is
    the part as it is (the same JSON text). `table`: `table_of_parts` of these parts, if made."""
    ids = sorted(parts)
    rows = {entry_id: row for entry_id in ids if (row := parts[entry_id][1]) is not None}
    return _sections(search_files, table or table_of_parts(parts), rows, consequences)


def table_of_parts(parts: Mapping[str, tuple[bytes, bytes | None]], kept=None, digest: int | None = None) \
        -> tuple[dict, bytes]:
    """The signature table and records (`SignatureTable.records`) of the entries' parts of
    signatures.json. `kept` (`serve`'s `memo.Kept`): kept by a hash of the signatures' parts
    (an edit of an entry's prose leaves them as they were): `digest`, when the caller has one
    (`memo.Column.digest` of the signatures), else one made here."""
    from ..matching.anchors import SignatureTable

    ids = sorted(parts)

    def make() -> tuple[dict, bytes]:
        return SignatureTable.records(signature for entry_id in ids if parts[entry_id][0]
                                      for signature in jsonbytes.loads(b"[" + parts[entry_id][0] + b"]"))

    if kept is None:
        return make()
    if digest is not None:
        return kept.memoised("diagnose-table", digest, make)
    key = hashlib.sha256()
    for entry_id in ids:
        key.update(parts[entry_id][0] + b"\n")
    return kept.memoised("diagnose-table", key.hexdigest(), make)


def _sections(search_files: Mapping[str, bytes], table: tuple[dict, bytes], rows: dict[str, bytes],
              consequences: dict) -> dict[str, bytes]:
    table_data, records = table
    count = bucket_count(len(rows))
    entries, entry_index = bucketed({i: _entry_line(i, row) for i, row in rows.items()}, count, b"\n")
    search, search_index = bucketed(dict(search_files), count, b"")
    return {"table": _dump(table_data), "records": records, "entry_index": _dump(entry_index),
            "consequences": _dump(consequences or {}), "search_index": _dump(search_index),
            **{f"entries.{k}": body for k, body in entries.items()},
            **{f"search.{k}": body for k, body in search.items()}}


def _entry_line(entry_id: str, row: bytes) -> bytes:
    return b'["' + entry_id.encode() + b'",' + row + b"]"


def _write(root: Path, inputs: Inputs, record: dict, base_url: str, sections: dict[str, bytes],
           prune: bool = True) -> str | None:
    """Write the index: each section a record filed by its SHA-256, then the head naming them
    (a reader sees the old head or the new one, each naming sections that are there); then,
    unless not `prune`, the records no head names go. Its content key, or None when the
    project has no store."""
    records = RecordStore(root, RECORDS)
    key = content_key(record)
    digests = {}
    for name, body in {"inputs": _dump(record), **sections}.items():
        digests[name] = hashlib.sha256(body).hexdigest()
        if not records.put(digests[name], body):
            return None
    header = {"format": FORMAT, "stat_digest": inputs.digest(), "key": key, "base_url": base_url,
              "folders": inputs.folders, "sections": digests}
    if not records.put(HEAD, _dump(header)):
        return None
    if prune:
        records.prune()
    return key


def _dump(value) -> bytes:
    return jsonbytes.dumps(value)


def remove(root: Path) -> None:
    """Delete the index (one found damaged); a missing one, or a store that cannot be written, is no error."""
    RecordStore(root, RECORDS).remove(HEAD)


def _open(records: RecordStore) -> DiagnosisIndex | None:
    """The index the head record names, whole or not, fresh or not; None without a head of this format."""
    try:
        header = jsonbytes.loads(records.get(HEAD) or b"null")
    except (ValueError, RecursionError):
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT or not isinstance(header.get("base_url"), str):
        return None
    sections = header.get("sections")
    if not isinstance(sections, dict) or not all(isinstance(d, str) for d in sections.values()):
        return None
    count = sum(1 for name in sections if name.startswith("entries."))
    if not 1 <= count <= MAX_BUCKETS or set(sections) != set(section_names(count)):
        return None
    return DiagnosisIndex(records, header)


def load(root: Path) -> DiagnosisIndex | None:
    """The index, if the store holds a whole one made from the project's inputs as they are now;
    else None (the caller checks the entries, which stores a new one)."""
    records = RecordStore(root, RECORDS)
    index = _open(records)
    if index is None:
        return None
    header = jsonbytes.loads(records.get(HEAD) or b"null")
    folders = header.get("folders")
    if not isinstance(folders, list) or not all(
            isinstance(f, list) and len(f) == 2 and all(isinstance(p, str) for p in f)
            and relative_path_problem(f[0]) is None for f in folders):
        return None
    now = Inputs.take(root, folders)
    if now.digest() != header.get("stat_digest"):
        try:
            record = jsonbytes.loads(index.section("inputs") or b"null")
            if not isinstance(record, dict) or not still_fresh(record, now):
                return None
        except (ValueError, RecursionError, TypeError, IndexError, KeyError):
            return None
        # the same content under new stat keys (a checkout, a touch): store them, so that the
        # next call takes the cheap path again (the sections are the same records)
        sections = {name: index.section(name) for name in header["sections"] if name != "inputs"}
        if all(body is not None for body in sections.values()):
            _write(root, now, now.record({name: value[1] for name, value in record.items()}), header["base_url"],
                   sections, prune=False)  # type: ignore[arg-type]
    return index


#: a file cuts its rows into at most this many sections
MAX_BUCKETS = 16


def bucket_count(rows: int, per_bucket: int = 128) -> int:
    """How many sections `rows` rows are cut into (`bucket`)."""
    return max(1, min(MAX_BUCKETS, rows // per_bucket))


def bucket(key: str, count: int) -> int:
    """The section of `count` that the row `key` (an entry's id, a file's path) is kept in."""
    return zlib.crc32(key.encode("utf-8")) % count


def bucketed(records: dict[str, bytes], count: int, join: bytes) -> tuple[dict, dict]:
    """Records cut into `count` bucket bodies, in the order of their keys, joined by `join`; and
    their places: key → [bucket, offset, length, CRC-32]."""
    split: dict[int, list[str]] = {}
    for key in sorted(records):
        split.setdefault(bucket(key, count), []).append(key)
    bodies, places = {}, {}
    for k in range(count):
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
