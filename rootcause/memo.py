"""Results kept in memory between the builds of one process: `serve`'s.

The pipeline's functions are memoised by a key of everything they are computed from (a record
key, a page key, a digest of a stage's inputs). Between processes the per-entry and per-page
results are records of the store (`cache.RecordStore`); while `serve` runs, the server holds a
`Kept` with the last build's results, small ones: each entry's share of the cross-entry stages
(its card, links, search terms, signature file part, digests of what the checks across entries
read), each page's and output file's hash, the cross-entry checks' findings, the search index's
parts. Each build runs in a forked child that inherits them (`serve`), reruns the pipeline over
them and sends back what it added (`changes`), so an edit recomputes the changed entry, the
stages whose inputs changed and the pages they reach; nothing else is read, checked or written.

A value is never changed once kept: the stages treat what they get from here as read-only.
`sweep()` after a build forgets the results that build did not use, so the memory held is one
build's worth. Nothing here is read from disk: a record planted anywhere is never a result.

A per-entry result that every build needs for every entry (a card, an entry's links, its share
of signatures.json) is kept as a `Column`: the results of the last build's catalog, by entry id,
with the record key each was made from. The next build copies it (one C-level dict copy) and
computes only the entries whose record key changed: the same memo as a table by record key,
without a Python-level lookup per entry and build. A column also carries a digest of its
content (`Column.digest`: a sum of one hash per entry, kept up to date entry by entry), which
keys what is made from the whole column (the links made to each entry, the list pages' plan).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: a miss (None is a result like any other)
MISSING: Any = object()
#: tables of objects that live in one process only (a template environment): never sent back
LOCAL = frozenset({"renderer"})


_DIGEST_MODULUS = 1 << 256


def content_hash(entry_id: str, content: bytes) -> int:
    """One entry's term of a `Column.digest`."""
    return int.from_bytes(hashlib.blake2b(entry_id.encode("utf-8", "surrogateescape") + b"\0" + content,
                                          digest_size=32).digest(), "big")


@dataclass
class Column(Generic[T]):
    """A per-entry result of every entry of one catalog: `values` by entry id in the catalog's
    order, `keys` the record key each was made from (shared by the columns of one build), and
    `digest`, the sum of `content_hash(id, content(value))` over the entries (None for a column
    made without `content`): equal digests, equal contents, whatever order the edits came in."""

    keys: dict[str, str]
    values: dict[str, T]
    digest: int | None = None
    context: Any = None   # what else every value was made from (`Kept.column`)


class Kept:
    """Tables of results by key. `get` and `put` mark a key used by the current build.
    `columns`: the per-entry `Column`s of the last build (`column`)."""

    def __init__(self) -> None:
        self.tables: dict[str, dict] = {}
        self.used: dict[str, set] = {}
        self.added: dict[str, dict] = {}   # put since `changes` was last taken (a build's own results)
        self.forgotten: dict[str, set] = {}
        self.columns: dict[str, Column] = {}
        self.patched: dict[str, tuple] = {}   # the columns made since `changes`: (base keys, changed ids or None)
        self._diffs: list = []   # (old keys, new keys, changed ids or None): this build's, made once
        self.hits = self.misses = 0

    def get(self, table: str, key, default=MISSING):
        try:
            value = self.tables[table][key]
        except KeyError:
            self.misses += 1
            return default
        self.hits += 1
        used = self.used.get(table)
        if used is None:
            used = self.used[table] = set()
        used.add(key)
        return value

    def put(self, table: str, key, value: T) -> T:
        self.tables.setdefault(table, {})[key] = value
        self.added.setdefault(table, {})[key] = value
        self.used.setdefault(table, set()).add(key)
        return value

    def touch(self, table: str, keys) -> None:
        """Mark results used that this build did not need to read (they stay for the next)."""
        self.used.setdefault(table, set()).update(keys)

    def forget(self, table: str, key) -> None:
        """A result that no longer holds (the output folder it describes was changed)."""
        self.tables.get(table, {}).pop(key, None)
        self.added.get(table, {}).pop(key, None)
        self.forgotten.setdefault(table, set()).add(key)

    def memoised(self, table: str, key, compute: Callable[[], T]) -> T:
        value = self.get(table, key)
        return self.put(table, key, compute()) if value is MISSING else value

    def unused(self) -> dict[str, list]:
        """The keys of each table that the current build did not use (or forgot)."""
        found = {}
        for table, values in self.tables.items():
            used = self.used.get(table)
            found[table] = list(values) if not used else list(values.keys() - used)
        for table, keys in self.forgotten.items():
            found.setdefault(table, []).extend(keys)
        return found

    def sweep(self) -> None:
        """Forget what the current build did not use; the next build starts counting anew."""
        for table, keys in self.unused().items():
            values = self.tables[table]
            for key in keys:
                values.pop(key, None)
        self.used, self.added, self.forgotten, self.patched, self._diffs = {}, {}, {}, {}, []

    # -- columns -----------------------------------------------------------------------------------
    def column(self, table: str, keys: dict[str, str], compute: Callable[[str], T],
               content: Callable[[T], bytes] | None = None, also: Callable[[Column], Any] | None = None,
               context: Any = None) -> Column[T]:
        """`compute(entry id)` for every entry of `keys` ({entry id: record key}, in the catalog's
        order): the last build's column for `table`, copied, with only the entries whose record
        key changed computed again (and those `also(last column)` names, when it names any: ids
        whose result depends on other entries' too; None: every one). `content`: what of a value
        its digest is made of (no digest without it). `context`: what else every value is made
        of (a hashable value): when it differs from the last column's, every entry is computed."""
        old = self.columns.get(table)
        if old is not None and old.context != context:
            old = None
        changed = None if old is None else self.changed_ids(old.keys, keys)
        if old is not None and changed is not None and also is not None:
            extra = also(old)
            if extra is None:
                changed = None
            elif extra:
                changed = list(dict.fromkeys([*changed, *(i for i in extra if i in keys)]))
        if old is None or changed is None:
            if old is None or also is not None:
                values = {i: compute(i) for i in keys}
            else:   # an entry came or went: the others' results stand
                was, kept_values = old.keys, old.values
                values = {i: kept_values[i] if was.get(i) == key else compute(i) for i, key in keys.items()}
            made = Column(keys, values, _digest_of(values, content) if content is not None else None, context)
            self.columns[table] = made
            self.patched[table] = (None, None)
            return made
        if not changed and old.keys is keys:
            return old
        values = dict(old.values)
        digest = old.digest
        for i in changed:
            value = values[i] = compute(i)
            if content is not None and digest is not None:
                digest = (digest - content_hash(i, content(old.values[i])) + content_hash(i, content(value))) \
                    % _DIGEST_MODULUS
        made = Column(keys, values, digest if content is not None else None, context)
        self.columns[table] = made
        self.patched[table] = (old.keys, changed)
        return made

    def changed_ids(self, old: dict[str, str], new: dict[str, str]) -> list[str] | None:
        """The ids whose record key differs between two catalogs' keys, in order; None when an
        entry came or went (the column is then made again). Made once per pair and build."""
        if old is new:
            return []
        for was, now, changed in self._diffs:
            if was is old and now is new:
                return changed
        if len(old) != len(new) or old.keys() != new.keys():
            changed = None
        else:
            differ = {i for i, _key in new.items() - old.items()}
            changed = [i for i in new if i in differ] if len(differ) > 1 else list(differ)
        self._diffs.append((old, new, changed))
        return changed

    def changes(self) -> tuple[dict[str, dict], dict[str, list], dict[str, tuple]]:
        """What this build added, and what it did not use: all a forked build sends back for the
        process it was forked from to `apply`. A column goes as the entries it computed, when
        its last build's column is the one the parent holds (else whole)."""
        columns: dict[str, tuple] = {}
        for table, (base, changed) in self.patched.items():
            made = self.columns[table]
            if base is None or changed is None:
                columns[table] = (None, made.keys, made.values, made.digest, made.context)
            else:
                columns[table] = (id(base), {i: made.keys[i] for i in changed},
                                  {i: made.values[i] for i in changed}, made.digest, made.context)
        return {table: values for table, values in self.added.items() if table not in LOCAL}, self.unused(), columns

    def apply(self, changes: tuple) -> None:
        """A forked build's `changes`, as if the build had run here (then swept)."""
        added, unused, columns = changes
        for table, values in added.items():
            self.tables.setdefault(table, {}).update(values)
        for table, keys in unused.items():
            values = self.tables.get(table, {})
            for key in keys:
                values.pop(key, None)
        rekeyed: dict[int, dict] = {}   # the columns of one build share their keys: patched once
        for table, (base, keys, values, digest, context) in columns.items():
            old = self.columns.get(table)
            if base is None:
                self.columns[table] = Column(keys, values, digest, context)
            elif old is None or id(old.keys) != base:
                self.columns.pop(table, None)   # (not the column the build patched: made again next time)
            else:
                new_keys = rekeyed.get(base)
                if new_keys is None:
                    new_keys = rekeyed[base] = {**old.keys, **keys}
                self.columns[table] = Column(new_keys, {**old.values, **values}, digest, context)
        self.used, self.added, self.forgotten, self.patched, self._diffs = {}, {}, {}, {}, []

    def clear(self) -> None:
        self.tables, self.used, self.added, self.forgotten = {}, {}, {}, {}
        self.columns, self.patched, self._diffs = {}, {}, []


def _digest_of(values: dict, content: Callable[[Any], bytes]) -> int:
    return sum(content_hash(i, content(value)) for i, value in values.items()) % _DIGEST_MODULUS


def per_entry(kept: Kept | None, table: str, loaded, compute: Callable[[Any], T]) -> T:
    """`compute(loaded)`, memoised by the entry's record key (its file's content, path, site.yml
    and the code's version) when there is a `kept` and the entry has a key."""
    key = getattr(loaded, "source_key", "")
    if kept is None or not key:
        return compute(loaded)
    value = kept.get(table, key)
    return kept.put(table, key, compute(loaded)) if value is MISSING else value


def entry_column(kept: Kept | None, table: str, catalog, compute: Callable[[Any], T],
                 content: Callable[[T], bytes] | None = None) -> Column[T]:
    """`compute(loaded)` of every entry of `catalog`, as a `Column`: with a `kept`, the last
    build's column patched where an entry's record key changed (`Kept.column`); without one, or
    when an entry has no record key, every entry computed (and a digest made only for `kept`,
    which keys what it makes of the column by it)."""
    entries = catalog.entries
    keys = catalog.keys() if kept is not None else None
    if kept is None or keys is None:
        values = {entry_id: compute(loaded) for entry_id, loaded in entries.items()}
        return Column(keys or {}, values, _digest_of(values, content) if content is not None and kept is not None
                      else None)
    return kept.column(table, keys, lambda entry_id: compute(entries[entry_id]), content)
