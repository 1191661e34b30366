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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: a miss (None is a result like any other)
MISSING: Any = object()
#: tables of objects that live in one process only (a template environment): never sent back
LOCAL = frozenset({"renderer"})


class Kept:
    """Tables of results by key. `get` and `put` mark a key used by the current build."""

    def __init__(self) -> None:
        self.tables: dict[str, dict] = {}
        self.used: dict[str, set] = {}
        self.added: dict[str, dict] = {}   # put since `changes` was last taken (a build's own results)
        self.forgotten: dict[str, set] = {}
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
        found = {table: [key for key in values if key not in self.used.get(table, ())]
                 for table, values in self.tables.items()}
        for table, keys in self.forgotten.items():
            found.setdefault(table, []).extend(keys)
        return found

    def sweep(self) -> None:
        """Forget what the current build did not use; the next build starts counting anew."""
        for table, keys in self.unused().items():
            values = self.tables[table]
            for key in keys:
                values.pop(key, None)
        self.used, self.added, self.forgotten = {}, {}, {}

    def changes(self) -> tuple[dict[str, dict], dict[str, list]]:
        """What this build added, and what it did not use: all a forked build sends back for the
        process it was forked from to `apply`."""
        return {table: values for table, values in self.added.items() if table not in LOCAL}, self.unused()

    def apply(self, changes: tuple[dict[str, dict], dict[str, list]]) -> None:
        """A forked build's `changes`, as if the build had run here (then swept)."""
        added, unused = changes
        for table, values in added.items():
            self.tables.setdefault(table, {}).update(values)
        for table, keys in unused.items():
            values = self.tables.get(table, {})
            for key in keys:
                values.pop(key, None)
        self.used, self.added, self.forgotten = {}, {}, {}

    def clear(self) -> None:
        self.tables, self.used, self.added, self.forgotten = {}, {}, {}, {}


def per_entry(kept: Kept | None, table: str, loaded, compute: Callable[[Any], T]) -> T:
    """`compute(loaded)`, memoised by the entry's record key (its file's content, path, site.yml
    and the code's version) when there is a `kept` and the entry has a key."""
    key = getattr(loaded, "source_key", "")
    if kept is None or not key:
        return compute(loaded)
    value = kept.get(table, key)
    return kept.put(table, key, compute(loaded)) if value is MISSING else value
