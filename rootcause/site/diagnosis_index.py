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
`entries.K` (one `[id, row]` per line, the row as in signatures.json, for the ids of bucket K:
`cache.bucket`), `entry_index` (id → [K, offset, length, CRC-32]), `consequences`,
`search_index` (path → [K, offset, length, CRC-32]) and `search.K` (the site's search files of
bucket K, one after the other). Cut into buckets so that a rebuild that changed a few entries
writes the few sections holding them and keeps the others (`cache.Kept`): `patched_sections`.

What it is keyed by: site.yml, `entries/*.yaml`, the healthy-log folder's files (a healthy log
can make an entry invalid, E036), the study tables (`open_project` checks them too, E046) and the
package's source. Stat keys are taken before a file is
read for checking and again after it was hashed; if any changed in between, nothing is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .. import jsonbytes
from ..cache import (MAX_BUCKETS, CacheFile, Inputs, bucket_count, bucketed, content_key, patch_buckets, read_cache,
                     record_at, still_fresh, write_cache)
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
FORMAT = 8
WHOLE = ("inputs", "table", "records", "entry_index", "consequences", "search_index")


def section_names(count: int) -> list[str]:
    return [*WHOLE, *(f"{kind}.{k}" for kind in ("entries", "search") for k in range(count))]


def per_record(names) -> tuple[str, ...]:
    """The sections whose reader checks each record it reads (a CRC-32 each)."""
    return tuple(name for name in names if name == "records" or name.startswith(("entries.", "search.")))


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
            return jsonbytes.loads(data)
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
        """The entry's row as in signatures.json (`matching.rows`), or None for an id the index
        does not hold."""
        place = self.entry_ids().get(entry_id)
        if place is None:
            return None
        try:
            k = place[0]
            line = record_at(self._cached.section(f"entries.{k}") if isinstance(k, int) else None, place)
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
        return SearchFiles(places, lambda k: self._cached.section(f"search.{k}") if isinstance(k, int) else None)

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
    old = read_cache(root, NAME, KIND)
    if old is not None:
        try:
            recorded = jsonbytes.loads(old.section("inputs") or b"null")
        except (ValueError, RecursionError):
            recorded = None
        old.close()
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
    return _sections(search_files, data["signatures"], rows, data["consequences"])


def index_sections_of_parts(search_files: Mapping[str, bytes], parts: Mapping[str, tuple[bytes, bytes | None]],
                            consequences: dict) -> dict[str, bytes]:
    """`index_sections` of the signatures.json that `search.assemble_signature_file` makes of
    these parts, without parsing that file whole: each entry's signatures are parsed, recorded
    and dropped in turn (at 10,000 entries the parsed file is about 100 MB), and its row is
    the part as it is (the same JSON text)."""
    ids = sorted(parts)
    signatures = (signature for entry_id in ids if parts[entry_id][0]
                  for signature in jsonbytes.loads(b"[" + parts[entry_id][0] + b"]"))
    rows = {entry_id: parts[entry_id][1] for entry_id in ids if parts[entry_id][1] is not None}
    return _sections(search_files, signatures, rows, consequences)


def _sections(search_files: Mapping[str, bytes], signatures, rows: dict[str, bytes], consequences: dict
              ) -> dict[str, bytes]:
    from ..matching.anchors import SignatureTable

    table_data, records = SignatureTable.records(signatures)
    count = bucket_count(len(rows))
    entries, entry_index = bucketed({i: _entry_line(i, row) for i, row in rows.items()}, count, b"\n")
    search, search_index = bucketed(dict(search_files), count, b"")
    return {"table": _dump(table_data), "records": records, "entry_index": _dump(entry_index),
            "consequences": _dump(consequences or {}), "search_index": _dump(search_index),
            **{f"entries.{k}": body for k, body in entries.items()},
            **{f"search.{k}": body for k, body in search.items()}}


def table_sections(signatures: dict) -> tuple[bytes, bytes]:
    """The (table, records) sections of the signatures of a parsed signatures.json."""
    from ..matching.anchors import SignatureTable

    table_data, records = SignatureTable.records(signatures["signatures"])
    return _dump(table_data), records


def patched_sections(source: CacheFile, prefix: str, rows: dict[str, bytes | None], files: dict[str, bytes],
                     removed: set[str], consequences: dict, table: tuple[bytes, bytes] | None) -> dict:
    """The sections of an index after a rebuild changed a few entries, from the index's sections
    as `source` holds them (each named `prefix` + its name; the site model keeps a copy): the
    changed entries' `rows` (as signatures.json has them; None: no signatures), the search files
    written and `removed`, the declared consequences, and `table`, the new (table, records)
    sections, or None to keep the old ones (the signatures did not change). The buckets nothing
    changed in are `cache.Kept`."""
    def json_of(name: str):
        data = source.section(prefix + name)
        if data is None:
            raise CorruptIndex(f"section '{name}' fails its checksum")
        return jsonbytes.loads(data)

    entry_index, search_index = json_of("entry_index"), json_of("search_index")
    count = _count(source, prefix)
    sections: dict = {"consequences": _dump(consequences)}
    if table is None:
        sections["table"], sections["records"] = source.kept(prefix + "table"), source.kept(prefix + "records")
    else:
        sections["table"], sections["records"] = table
    for kind, index_name, places, new, gone, join in (
            ("entries", "entry_index", entry_index,
             {i: _entry_line(i, row) for i, row in rows.items() if row is not None},
             {i for i, row in rows.items() if row is None}, b"\n"),
            ("search", "search_index", search_index, files, removed, b"")):
        def read(k: int, kind: str = kind) -> bytes | None:
            return source.section(f"{prefix}{kind}.{k}", verify=False)

        try:
            bodies, places = patch_buckets(places, read, new, gone, count, join)
        except ValueError as exc:
            raise CorruptIndex(f"section '{kind}': {exc}") from None
        sections[index_name] = _dump(places)
        for k in range(count):
            sections[f"{kind}.{k}"] = bodies[k] if k in bodies else source.kept(f"{prefix}{kind}.{k}")
    if any(value is None for value in sections.values()):
        raise CorruptIndex("a section of the index is missing")
    return {name: sections[name] for name in section_names(count) if name != "inputs"}


def index_buckets(sections) -> int:
    """How many buckets the index with these sections (by name) cuts its entries and search files into."""
    return sum(1 for name in sections if name.startswith("entries."))


def _count(source: CacheFile, prefix: str) -> int:
    """`index_buckets` of the index whose sections `source` holds under `prefix`, checked."""
    count = index_buckets(name[len(prefix):] for name in source.names() if name.startswith(prefix))
    if not 1 <= count <= MAX_BUCKETS or f"{prefix}entries.{count - 1}" not in source:
        raise CorruptIndex("the index's entries sections are not numbered 0 to N-1")
    return count


def _entry_line(entry_id: str, row: bytes) -> bytes:
    return b'["' + entry_id.encode() + b'",' + row + b"]"


def _write(root: Path, inputs: Inputs, record: dict, base_url: str, sections: dict[str, bytes]) -> str | None:
    """Write the index; its content key, or None when the project cannot hold it."""
    key = content_key(record)
    header = {"format": FORMAT, "stat_digest": inputs.digest(), "key": key, "base_url": base_url,
              "folders": inputs.folders}
    written = write_cache(root, NAME, KIND, header, {"inputs": _dump(record), **sections},
                          per_record=per_record(sections))
    return key if written else None


def _dump(value) -> bytes:
    return jsonbytes.dumps(value)


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
    try:
        count = _count(cached, "")
    except CorruptIndex:
        cached.close()
        return None
    if header.get("format") != FORMAT or not isinstance(header.get("base_url"), str) or \
            not isinstance(folders, list) or not all(
                isinstance(f, list) and len(f) == 2 and all(isinstance(p, str) for p in f)
                and relative_path_problem(f[0]) is None for f in folders) or \
            not all(name in cached for name in section_names(count)):
        cached.close()
        return None
    now = Inputs.take(root, folders)
    if now.digest() != header.get("stat_digest"):
        try:
            record = jsonbytes.loads(cached.section("inputs") or b"null")
            if not isinstance(record, dict) or not still_fresh(record, now):
                cached.close()
                return None
        except (ValueError, RecursionError, TypeError, IndexError, KeyError):
            cached.close()
            return None
        # the same content under new stat keys (a checkout, a touch): store them, so that the
        # next call takes the cheap path again
        sections = {name: cached.kept(name) for name in section_names(count) if name != "inputs"}
        _write(root, now, now.record({name: value[1] for name, value in record.items()}), header["base_url"],
               sections)  # type: ignore[arg-type]
    return DiagnosisIndex(cached)
