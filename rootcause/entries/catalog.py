"""All entries of a project, validated one by one and then against each other.

Per entry (in `load_entry`): YAML → located data → schema, id = file name, signatures match
their own examples and not their counter-examples. Across entries (in `cross_check`): unique
ids, `related` targets exist, no example matches another entry's signature unless the two
entries declare a relation, and no signature matches a healthy training log.
"""

from __future__ import annotations

import difflib
import hashlib
import marshal
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from ..inputs import file_hash, listing, stat_key
from ..collector import paused, release_free_memory
from ..config import SiteConfig
from ..errors import Diagnostic, display_path
from ..files import is_inside
from ..forked import quiet_worker
from ..memo import Column, Kept, entry_column, per_entry
from .. import jsonbytes
from ..located_yaml import Located, load_yaml, read_text
from ..matching.logline import MAX_LINE
from ..matching.signatures import (
    AnchorIndex,
    CompiledSignature,
    compile_signature,
    find_matches,
    marked_lines,
    parse_text,
)
from ..validation import validate
from ..text import markdown_images
from .schema import Entry, Signature, prose_fields
from .claims import check_claims
from .placeholders import placeholder_problems
from .terms import entry_weights

ENTRY_GLOB = "*.yaml"
#: relations that declare two entries may share log lines (a cause and its consequence, look-alikes)
OVERLAP_RELATIONS = {"caused-by", "causes", "often-confused-with"}


@dataclass
class LoadedEntry:
    """A valid entry with what later stages need: where it came from and its compiled signatures."""

    entry: Entry
    path: str                       # as shown in messages, relative to the project root
    located: Located
    signatures: list[CompiledSignature]
    search_weights: dict[str, float] = field(default_factory=dict)  # filled where the entry is loaded
    source_key: str = ""   # the build cache's key of the file's content, site.yml and the code, if known

    @property
    def entry_id(self) -> str:
        return self.entry.id

    def whole(self) -> "LoadedEntry":
        """Itself (a `StoredEntry` reads its whole entry back here)."""
        return self


@dataclass
class Catalog:
    config: SiteConfig
    entries: dict[str, LoadedEntry] = field(default_factory=dict)   # by id, sorted
    diagnostics: list[Diagnostic] = field(default_factory=list)
    unloadable: set[str] = field(default_factory=set)  # ids (file names) of entries with errors of their own
    checked: int = 0   # entry files parsed and checked by this load (not taken from the build cache)
    _related: Column | None = field(default=None, repr=False)
    _keys: tuple | None = field(default=None, repr=False)

    def keys(self) -> dict[str, str] | None:
        """{entry id: record key} of every entry, in order: what the entries' memoised results
        are kept by (`memo.entry_column`); None when an entry has no record key (nothing kept).
        Made once (the entries are not changed after loading)."""
        if self._keys is None:
            keys = {entry_id: loaded.source_key for entry_id, loaded in self.entries.items()}
            self._keys = (keys if all(keys.values()) else None,)
        return self._keys[0]

    def related_column(self, kept: Kept | None = None) -> Column[tuple[tuple[str, str], ...]]:
        """Every entry's links (`related_of`), by id (memoised per entry with `kept`; made once)."""
        if self._related is None:
            self._related = entry_column(kept, "related", self, related_of, content=_repr_bytes)
        return self._related

    def related(self, kept: Kept | None = None) -> dict[str, tuple[tuple[str, str], ...]]:
        """Every entry's links (`related_of`), by id."""
        return self.related_column(kept).values

    def signatures(self) -> list[CompiledSignature]:
        return [sig for loaded in self.entries.values() for sig in loaded.signatures]

    def matchable(self) -> dict[str, LoadedEntry]:
        """The entries a log can match: all but those of `role: symptom`, which print no error."""
        return {entry_id: loaded for entry_id, loaded in self.entries.items() if loaded.signatures}

    def consequences(self) -> dict[str, set[str]]:
        """entry id → ids of entries declared to be its consequences (for cause-first ranking)."""
        result: dict[str, set[str]] = {}
        for entry_id, loaded in self.entries.items():
            for rel in loaded.entry.related:
                if rel.relation == "causes":
                    result.setdefault(entry_id, set()).add(rel.id)
                elif rel.relation == "caused-by":
                    result.setdefault(rel.id, set()).add(entry_id)
        return result


#: CPU seconds (thread time) this process spent reading entries' YAML and checking them, for
#: `build --timings` (workers send theirs back with their results)
CPU = {"load": 0.0, "validate": 0.0}


def load_entry(path: Path, root: Path, config: SiteConfig,
               raw: bytes | None = None) -> tuple[LoadedEntry | None, list[Diagnostic]]:
    """Everything that can be checked about one entry on its own (`raw`: its bytes, if read already)."""
    started = time.thread_time()
    try:
        shown = display_path(path, root)
        if raw is not None:
            text, problems = read_text(path, shown, raw)
            located, more = load_yaml(path, shown, text) if text is not None else (None, [])
            problems = problems + more
        else:
            located, problems = load_yaml(path, shown)
    finally:
        middle = time.thread_time()
        CPU["load"] += middle - started
    if located is None:
        return None, problems
    try:
        return _check_entry(path, shown, located, config)
    finally:
        CPU["validate"] += time.thread_time() - middle


def _check_entry(path: Path, shown: str, located: Located, config: SiteConfig) -> tuple[LoadedEntry | None, list[Diagnostic]]:
    entry, problems = validate(Entry, located, shown, context={"config": config})
    data = located.data if isinstance(located.data, dict) else {}
    entry_id = data.get("id") if isinstance(data.get("id"), str) else None
    if entry_id is not None and entry_id != path.stem:
        line, col = located.where(("id",))
        problems.append(Diagnostic(shown, line, col, "E014", f"id '{entry_id}' differs from the file name '{path.name}'",
                                   f"rename the file to {entry_id}.yaml or set id: {path.stem}"))
    if entry is None:
        # the entry is unusable, but its valid signatures can still be checked against their examples
        raw_signatures = data.get("signatures")
        for i, raw in enumerate(raw_signatures if isinstance(raw_signatures, list) else []):
            try:
                signature = Signature.model_validate(raw)
            except ValidationError:
                continue  # already reported by the schema
            problems.extend(_check_examples(shown, located, i, signature,
                                            compile_signature(entry_id or path.stem, i, signature)))
        return None, problems
    for where, text in prose_fields(entry):
        for image in markdown_images(text):
            line, col = located.where(where)
            problems.append(Diagnostic(shown, line, col, "E018",
                                       f"{'.'.join(map(str, where))}: image '{image[:80]}' in Markdown",
                                       "the site loads nothing from elsewhere and holds no pictures: "
                                       "describe it in words, or link to it with [text](address)"))
    problems.extend(check_claims(entry, located, shown))
    problems.extend(placeholder_problems(entry, located, shown))
    signatures = [compile_signature(entry.id, i, sig, cores=entry.role != "warning")
                  for i, sig in enumerate(entry.signatures)]
    for i, (signature, compiled) in enumerate(zip(entry.signatures, signatures)):
        problems.extend(_check_examples(shown, located, i, signature, compiled))
        compiled.marks.update((log, marked_lines(compiled, log, compiled.step_regexes)) for log in signature.example_logs)
        compiled.release()
    loaded = LoadedEntry(entry, shown, located.slim(_kept_position), signatures)
    loaded.search_weights = entry_weights(loaded)
    return loaded, problems


def _kept_position(path: tuple) -> bool:
    """Positions that cross-entry checks report: the id, related ids, signatures, their examples and
    the functions of their raising frames."""
    head = path[:1]
    return (head in (("id",), ("related",)) or
            (head == ("signatures",) and (len(path) == 2 or (len(path) == 4 and path[2] in ("examples", "counter_examples"))
                                          or (len(path) == 5 and path[2] == "frames" and path[4] == "function"))))


def _check_examples(shown: str, located: Located, i: int, signature: Signature,
                    compiled: CompiledSignature) -> list[Diagnostic]:
    """A signature must match each of its examples and none of its counter-examples."""
    problems = []
    for j, example in enumerate(signature.example_logs):
        if not find_matches(compiled, parse_text(example)):
            line, col = located.where(("signatures", i, "examples", j))
            long = next(((k, len(text)) for k, text in enumerate(example.split("\n"), start=1) if len(text) > MAX_LINE),
                        None)
            if long is not None:
                # the matcher reads a line's first MAX_LINE characters only (on the command line and
                # in the browser alike): copying the text again, as the usual hint says, cannot help
                problems.append(Diagnostic(
                    shown, line, col, "E033", f"signature {i + 1} does not match its example {j + 1}: line {long[0]} "
                    f"of the example has {long[1]:,} characters, and a log's line is read only up to its first "
                    f"{MAX_LINE:,}",
                    f"make the signature match text within the first {MAX_LINE:,} characters of that line (diagnose "
                    f"never reads past them, so text beyond them cannot identify the failure), and cut the example's "
                    f"line to those {MAX_LINE:,} characters"))
                continue
            problems.append(Diagnostic(shown, line, col, "E033", f"signature {i + 1} does not match its example {j + 1}",
                                       "copy the text exactly as printed, or loosen a varying part with a "
                                       "placeholder such as {int} or {name}"))
    for j, counter in enumerate(signature.counter_examples):
        if find_matches(compiled, parse_text(counter)):
            line, col = located.where(("signatures", i, "counter_examples", j))
            problems.append(Diagnostic(shown, line, col, "E037", f"signature {i + 1} matches its counter-example {j + 1}",
                                       "make the pattern more specific, or add an 'unless' pattern"))
    return problems


def entry_record(result: tuple[LoadedEntry | None, list[Diagnostic]]) -> bytes:
    """What the build cache keeps of one entry's `load_entry` result: JSON (a format that cannot
    run code when read), from which `from_record` makes the same result again."""
    loaded, problems = result
    record: dict = {"problems": [[d.path, d.line, d.column, d.code, d.message, d.hint, d.severity] for d in problems]}
    if loaded is not None:
        record.update(entry=loaded.entry.model_dump(mode="json"), path=loaded.path,
                      values=[[list(k), *v] for k, v in loaded.located.values.items()],
                      keys=[[list(k), *v] for k, v in loaded.located.keys.items()],
                      weights=loaded.search_weights,
                      compiled=[[[_step(c) for c in sig.steps], [_step(c) for c in sig.unless], sig.core]
                                for sig in loaded.signatures],
                      marks=[[sig.marks.get(log, ()) for log in spec.example_logs]
                             for sig, spec in zip(loaded.signatures, loaded.entry.signatures)])
    return jsonbytes.dumps(record)


def _step(compiled) -> list:
    return [compiled.source, compiled.regex, compiled.anchor, compiled.literal_chars]


def _compiled(step: list, source: str | None):
    from ..matching.patterns import Compiled

    if not (isinstance(step, list) and len(step) == 4 and step[0] == source and isinstance(step[1], str)
            and isinstance(step[2], str) and type(step[3]) is int):
        raise ValueError("compiled step does not match its pattern")
    return Compiled(source=step[0], regex=step[1], anchor=step[2], literal_chars=step[3])


def _marks(marks: list, logs: list[str]) -> dict:
    """An example's `marked_lines` from a record, checked: one list per example, of lines in
    order, each (line, start, end) within that line."""
    if not isinstance(marks, list) or len(marks) != len(logs):
        raise ValueError("one list of marks per example")
    out = {}
    for log, marked in zip(logs, marks):
        lines = log.rstrip("\n").split("\n")
        previous = -1
        for item in marked:
            if not (isinstance(item, list) and len(item) == 3 and all(type(v) is int for v in item)):
                raise ValueError("a mark is three integers")
            number, start, end = item
            if not previous < number < len(lines) or not ((start, end) == (-1, -1) or 0 <= start < end <= len(lines[number])):
                raise ValueError("a mark outside its example")
            previous = number
        out[log] = tuple(tuple(item) for item in marked)
    return out


def from_record(body: bytes, config: SiteConfig) -> tuple[LoadedEntry | None, list[Diagnostic]]:
    """`load_entry`'s result from an `entry_record`; ValueError when the record is not one (a
    record of another shape is rebuilt, never trusted). The entry is validated again by the
    same model, so a record can only ever yield a valid entry."""
    try:
        record = jsonbytes.loads(body)
        problems = [Diagnostic(str(p[0]), int(p[1]), int(p[2]), str(p[3]), str(p[4]), str(p[5]), severity=str(p[6]))
                    for p in record["problems"]]
        if "entry" not in record:
            return None, problems
        entry = Entry.model_validate(record["entry"], context={"config": config, "recorded": True})
        located = Located(None, {tuple(k): (int(line), int(col)) for k, line, col in record["values"]},
                          {tuple(k): (int(line), int(col)) for k, line, col in record["keys"]})
        weights = {str(t): float(w) for t, w in record["weights"].items()}
        path = str(record["path"])
        compiled = record["compiled"]
        if len(compiled) != len(entry.signatures) or len(record["marks"]) != len(entry.signatures):
            raise ValueError("one compiled signature and one list of marks per signature")
        signatures = []
        for i, (sig, (steps, unless, core)) in enumerate(zip(entry.signatures, compiled)):
            sources = [m.pattern if m.pattern is not None else m.regex for m in sig.lines] if sig.lines is not None \
                else [sig.pattern if sig.pattern is not None else sig.regex]
            if len(steps) != len(sources) or len(unless) != len(sig.unless) or not isinstance(core, str) or \
                    (core and core != sig.core_text()):
                raise ValueError("compiled steps do not match the signature")
            signatures.append(CompiledSignature(
                entry_id=entry.id, index=i, within=sig.within,
                steps=tuple(_compiled(step, source) for step, source in zip(steps, sources)),
                unless=tuple(_compiled(step, m.pattern if m.pattern is not None else m.regex)
                             for step, m in zip(unless, sig.unless)),
                marks=_marks(record["marks"][i], sig.example_logs), core=core,
                frames=tuple((frame.file, frame.function) for frame in sig.frames),
                raises=sig.raises() if sig.frames else ""))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError, ValidationError) as exc:
        raise ValueError(f"not an entry record: {exc}") from None
    return LoadedEntry(entry, path, located, signatures, weights), problems


#: entries per task of a worker that checks entries
CHUNK = 64


def _load_entry_job(args: tuple[Path, Path, SiteConfig, bytes | None]):
    """In a worker: the result as a record (JSON bytes, not a pickled entry: cheaper to send and
    to read back), and the worker's CPU time for it."""
    before = dict(CPU)
    record = entry_record(load_entry(*args))
    return record, CPU["load"] - before["load"], CPU["validate"] - before["validate"]


def entry_paths(root: Path) -> list[Path]:
    """Every `entries/*.yaml`, links and special files included (`load_entry` refuses those)."""
    folder = root / "entries"
    return [folder / name for name in entry_names(root)]


def entry_names(root: Path) -> list[str]:
    """The names of `entry_paths`, sorted: the same list as `sorted(folder.glob(ENTRY_GLOB))`
    (hidden names included), from one listing, without making and sorting 10,000 `Path`
    objects (about 0.1 s)."""
    folder = root / "entries"
    if not folder.is_dir() or not is_inside(root, folder):
        return []
    return listing(os.fspath(folder), ENTRY_GLOB[1:])


def folder_outside(root: Path, name: str) -> list[Diagnostic]:
    """A folder of the project (entries/, content/) that is a symbolic link leading out of it."""
    folder = root / name
    if os.path.lexists(folder) and not is_inside(root, folder):
        return [Diagnostic(f"{name}/", 1, 1, "E008", f"the {name}/ folder is a symbolic link leading out of the project",
                           f"make {name}/ a real folder of the project; its files are not read")]
    return []


@paused()
def load_catalog(root: Path, config: SiteConfig, healthy_logs: list[Path] | None = None,
                 workers: int | None = None, store=None, version: str = "", timings=None,
                 kept: Kept | None = None, stats: dict | None = None, near: bool = True, cross: bool = True) -> Catalog:
    """Load and check every entry; collect all diagnostics rather than stopping at the first.

    `store` (a `cache.RecordStore`, the build cache) holds each entry's result as a record keyed by
    the file's content, its path, site.yml and `version` (the code's), across processes.
    `kept` (`serve`'s results of its last build): an entry file whose stat key (`stats`, by its
    name under the project, from the walk `open_project` made) has the record key kept for it is
    taken as it was (a `StoredEntry`, nothing read); the cross-entry checks are memoised there
    too. `near`: run the near-duplicate check (W001), a warning a build needs only when it fails.
    `cross`: run the checks across entries (`check_across`); a build runs them itself, beside the
    rendering of the entries' pages.
    """
    from ..timings import OFF

    timings = timings or OFF
    catalog = Catalog(config)
    catalog.diagnostics.extend(folder_outside(root, "entries"))
    with timings.stage("load"):
        names = entry_names(root)
        folder = root / "entries"
        settings = config_key(config)
        unchanged = _unchanged(names, root, config, store, version, settings, kept, stats) if kept is not None else {}
        rest = [folder / name for name in names if name not in unchanged]
        cached, record_keys, raws = _cached_results(rest, root, config, store, version, settings)
    todo = [p for p in rest if p not in cached]
    workers = workers if workers is not None else (os.cpu_count() or 1)
    before = dict(CPU)
    with timings.stage("validate"):
        fresh = {}
        for path, body in cached.items():
            try:
                fresh[path] = from_record(body, config)
            except ValueError:   # a record this code cannot read: the entry is checked again
                todo.append(path)
        todo.sort()

        def check_here(path: Path) -> None:
            """One entry checked in this process, and its record put in the build cache."""
            result = fresh[path] = load_entry(path, root, config, raws.get(path))
            if store is not None and path in record_keys:
                store.put(record_keys[path], entry_record(result))

        if workers > 1 and len(todo) >= 400 and "fork" in multiprocessing.get_all_start_methods():
            # this process checks every `workers`-th chunk itself while the workers check the
            # others: one worker fewer, and its share needs no record read back
            chunks = [todo[start:start + CHUNK] for start in range(0, len(todo), CHUNK)]
            own = [path for chunk in chunks[::workers] for path in chunk]
            theirs = [path for i, chunk in enumerate(chunks) if i % workers for path in chunk]
            load_cpu = 0.0
            with ProcessPoolExecutor(workers - 1, mp_context=multiprocessing.get_context("fork"),
                                     initializer=quiet_worker) as pool:
                done = pool.map(_load_entry_job, [(p, root, config, raws.get(p)) for p in theirs], chunksize=CHUNK)
                for path in own:
                    check_here(path)
                load_cpu += CPU["load"] - before["load"]
                try:
                    for path, (record, load_s, _validate_s) in zip(theirs, done):
                        load_cpu += load_s
                        try:
                            fresh[path] = from_record(record, config)
                        except ValueError:
                            fresh[path] = load_entry(path, root, config)
                        if store is not None and path in record_keys:
                            store.put(record_keys[path], record)
                except BrokenProcessPool:   # a worker died (killed, out of memory): the rest is checked here
                    mark = CPU["load"]
                    for path in theirs:
                        if path not in fresh:
                            check_here(path)
                    load_cpu += CPU["load"] - mark
            timings.add_cpu("  of which YAML", load_cpu, note=f"{len(todo)} entries not in the cache, "
                            f"{len(theirs)} of them in workers")
        else:
            for path in todo:
                check_here(path)
            if todo:
                timings.add_cpu("  of which YAML", CPU["load"] - before["load"],
                                note=f"{len(todo)} entries not in the cache")
    catalog.checked = len(todo)
    for path, result in fresh.items():
        if result[0] is not None and path in record_keys:
            result[0].source_key = record_keys[path]
        if kept is not None and path in record_keys:
            _keep(kept, path, root, settings, version, stats, record_keys[path], result)
    results = [unchanged[name] if name in unchanged else fresh[folder / name] for name in names]
    seen: dict[str, LoadedEntry] = {}
    for name, (loaded, problems) in zip(names, results):
        catalog.diagnostics.extend(problems)
        if loaded is None:
            catalog.unloadable.add(name[:-len(ENTRY_GLOB[1:])])
            continue
        if loaded.entry_id in seen:
            line, col = loaded.located.where(("id",))
            catalog.diagnostics.append(Diagnostic(loaded.path, line, col, "E020",
                                                  f"id '{loaded.entry_id}' is also used by {seen[loaded.entry_id].path}",
                                                  "give each entry its own id"))
            continue
        seen[loaded.entry_id] = loaded
    catalog.entries = dict(sorted(seen.items()))
    raws.clear()   # the files' bytes and their records, no longer needed
    cached.clear()
    if kept is None:   # (`serve`'s builds run in a child that ends after them)
        release_free_memory()   # before the cross-entry checks allocate their own
    if cross:
        check_across(catalog, healthy_logs or [], kept=kept, near=near, timings=timings)
    else:
        catalog.diagnostics.sort()
    return catalog


def check_across(catalog: Catalog, healthy_logs: list[Path], kept: Kept | None = None, near: bool = True,
                 timings=None) -> None:
    """Stage 3: the checks across entries (`cross_check`), their problems added to the catalog's."""
    from ..timings import OFF

    with (timings or OFF).stage("cross-check"):
        catalog.diagnostics.extend(cross_check(catalog, healthy_logs, kept=kept, near=near))
        if kept is None:
            release_free_memory()   # the anchor set's automaton and the compiled patterns, freed by now
    catalog.diagnostics.sort()


class Stale(Exception):
    """An entry file changed after its stat key was taken and before a stage read it (`serve`
    builds again once the change is seen)."""


class StoredEntry:
    """An entry that did not change since `serve`'s last build, as the build starts with it: its
    record key, path and id, and its memoised results (`memo.Kept`). A stage that needs more
    (its page is rendered again, a check across entries runs again) gets the whole `LoadedEntry`
    from the entry's record in the store (`from_record`), or checked again from its file when
    the store holds none; `materialised` counts those."""

    materialised = 0
    __slots__ = ("source_key", "entry_id", "path", "_from", "_whole")

    def __init__(self, key: str, entry_id: str, shown: str, root: Path, config: SiteConfig, store,
                 settings: str, version: str):
        self.source_key, self.entry_id, self.path = key, entry_id, shown
        self._from = (root, config, store, settings, version)
        self._whole: LoadedEntry | None = None

    def __getattr__(self, name: str):   # entry, located, signatures, search_weights
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.whole(), name)

    def whole(self) -> LoadedEntry:
        if self._whole is None:
            root, config, store, settings, version = self._from
            file = root / self.path
            body = store.get(self.source_key) if store is not None else None
            try:
                loaded = from_record(body, config)[0] if body is not None else None
            except ValueError:
                loaded = None
            if loaded is None:
                from ..files import Refused, read_regular
                from ..located_yaml import MAX_FILE_BYTES

                try:
                    raw = read_regular(file, MAX_FILE_BYTES)
                except (Refused, OSError):
                    raise Stale(self.path) from None
                if record_key(self.path, raw, settings, version) != self.source_key:
                    raise Stale(self.path)
                loaded = load_entry(file, root, config, raw)[0]
                if loaded is None:
                    raise Stale(self.path)
            loaded.source_key = self.source_key
            self._whole = loaded
            StoredEntry.materialised += 1
        return self._whole


def _stat_of(folder: str, name: str, stats: dict | None) -> tuple | None:
    key = stats.get(f"entries/{name}") if stats else None
    return key if key is not None else stat_key(f"{folder}/{name}")


def _unchanged(names: list[str], root: Path, config: SiteConfig, store, version: str, settings: str,
               kept: Kept, stats: dict | None) -> dict[str, tuple]:
    """The entry files whose stat key has a record key kept for it, with the entry's id and
    problems kept for that record key: {name: (StoredEntry or None, problems)}."""
    found: dict[str, tuple] = {}
    folder = os.fspath(root / "entries")
    files, entries = kept.tables.get("entry-file", {}), kept.tables.get("entry", {})
    used_files, used_entries = [], []
    known = stats.get if stats else None
    for name in names:
        stat = known("entries/" + name) if known is not None else None
        file_key = (name, folder, stat if stat is not None else stat_key(f"{folder}/{name}"), settings, version)
        key = files.get(file_key)
        summary = entries.get(key) if key is not None else None
        if key is None or summary is None:
            continue
        used_files.append(file_key)
        used_entries.append(key)
        entry_id, problems = summary
        loaded = StoredEntry(key, entry_id, f"entries/{name}", root, config, store, settings, version) \
            if entry_id is not None else None
        found[name] = (loaded, list(problems))
    kept.touch("entry-file", used_files)
    kept.touch("entry", used_entries)
    return found


def _keep(kept: Kept, path: Path, root: Path, settings: str, version: str, stats: dict | None, key: str,
          result: tuple) -> None:
    """What `_unchanged` finds of an entry file in the next build. Only with the stat key taken
    before the file was read (`stats`): one taken after could be a later content's."""
    loaded, problems = result
    if stats is None or (loaded is not None and loaded.path != f"entries/{path.name}"):
        return   # or shown otherwise (an entries/ folder reached through a link): not kept
    folder = os.fspath(root / "entries")
    kept.put("entry-file", (path.name, folder, _stat_of(folder, path.name, stats), settings, version), key)
    kept.put("entry", key, (loaded.entry.id if loaded is not None else None, tuple(problems)))


def _cached_results(paths: list[Path], root: Path, config: SiteConfig, store, version: str, settings: str):
    """The build cache's records of `paths`: ({path: record body}, {path: record key}, {path: bytes}).
    A file that cannot be read as a regular file has no key: `load_entry` reports it."""
    if store is None:
        return {}, {}, {}
    from ..files import Refused, read_regular
    from ..located_yaml import MAX_FILE_BYTES

    cached, record_keys, raws = {}, {}, {}
    for path in paths:
        try:
            raw = read_regular(path, MAX_FILE_BYTES)
        except (Refused, OSError):  # reported by load_entry
            continue
        key = record_key(display_path(path, root), raw, settings, version)
        record_keys[path] = key
        raws[path] = raw
        body = store.get(key)
        if body is not None:
            cached[path] = body
    return cached, record_keys, raws


def config_key(config: SiteConfig) -> str:
    return hashlib.sha256(config.model_dump_json().encode()).hexdigest()


def record_key(shown: str, raw: bytes, settings: str, version: str) -> str:
    """The build cache's key of an entry's result: its bytes, where it is (`shown`), site.yml
    (`settings`, a `config_key`) and the code's version."""
    digest = hashlib.sha256(f"entry\0{version}\0{settings}\0{shown}\0".encode("utf-8", "surrogateescape"))
    digest.update(raw)
    return digest.hexdigest()


#: a problem found by a check across entries, without its position: (entry id, where in the
#: entry's file as a `Located` path, code, message, hint). Positions are looked up when the
#: findings are reported (`placed`), so that a memoised check's findings outlive an edit that
#: only moves lines.
Finding = tuple


def _repr_bytes(value) -> bytes:
    return repr(value).encode("utf-8", "surrogateescape")


def related_of(loaded) -> tuple[tuple[str, str], ...]:
    """An entry's links: (id, relation) each."""
    return tuple((r.id, r.relation) for r in loaded.entry.related)


def cross_check(catalog: Catalog, healthy_logs: list[Path], kept: Kept | None = None,
                near: bool = True) -> list[Diagnostic]:
    """Every check across entries. With `kept`, each is memoised by a digest of what it reads of
    every entry (and of the healthy logs): an edit of an entry's prose reruns none of them.
    `near`: the near-duplicate warnings too (W001)."""
    problems: list[Diagnostic] = []
    related = catalog.related_column(kept)
    if kept is None:
        problems.extend(placed(catalog, _link_findings(catalog, related.values)))
    else:   # by what it reads: every entry's links, and which ids exist
        key = ("links", related.digest, tuple(sorted(catalog.unloadable)))
        problems.extend(placed(catalog, kept.memoised("links", key, lambda: _link_findings(catalog, related.values))))
    problems.extend(placed(catalog, _memoised_check(kept, "examples", catalog, "collide", _collide_digest, b"",
                                                   lambda: _example_findings(catalog))))
    logs = b"".join(f"{log.name}\0{file_hash(log)}\n".encode("utf-8", "surrogateescape") for log in healthy_logs)
    found, unlisted = _memoised_check(kept, "E036", catalog, "signed", _signed_digest, logs,
                                      lambda: _healthy_findings(catalog, healthy_logs))
    problems.extend(_with_unlisted_e036(placed(catalog, found), unlisted))
    if near:
        problems.extend(near_duplicates(catalog, kept))
    return problems


def _link_findings(catalog: Catalog, links: dict[str, tuple[tuple[str, str], ...]]) -> list[Finding]:
    """E022 (an entry related to itself) and E021 (related to an entry that does not exist)."""
    found: list[Finding] = []
    entries = catalog.entries
    for entry_id, own in links.items():
        for i, (target, _relation) in enumerate(own):
            if target == entry_id:
                found.append((entry_id, ("related", i, "id"), "E022", "entry is related to itself", "remove this item"))
            elif target not in entries and target not in catalog.unloadable:  # else reported in its own file
                close = difflib.get_close_matches(target, list(entries), n=1, cutoff=0.6)
                hint = f"did you mean '{close[0]}'?" if close else "check the id, or add that entry first"
                found.append((entry_id, ("related", i, "id"), "E021", f"related entry '{target}' does not exist", hint))
    return found


def placed(catalog: Catalog, findings: list[Finding]) -> list[Diagnostic]:
    """Findings as diagnostics, at their positions in the entries' files as they are now."""
    out = []
    for entry_id, where, code, message, hint in findings:
        loaded = catalog.entries[entry_id]
        line, col = loaded.located.where(where)
        out.append(Diagnostic(loaded.path, line, col, code, message, hint))
    return out


def _memoised_check(kept: Kept | None, name: str, catalog: Catalog, table: str, digest, extra: bytes, compute):
    """`compute()`, memoised in `kept` by `digest(entry)` of every entry (a column: each
    memoised by the entry's record key) and `extra`."""
    if kept is None:
        return compute()
    digests = entry_column(kept, table, catalog, digest, content=str.encode)
    return kept.memoised(name, hashlib.sha256(extra + (digests.digest or 0).to_bytes(32, "big")).hexdigest(), compute)


def _collide_digest(loaded) -> str:
    """What the example checks (E035, E057) read of an entry: its id and path, its compiled
    signatures (steps, exclusions, window, core, raising frames), its examples and the relations
    that allow a shared line."""
    overlap = sorted((rel.id, rel.relation) for rel in loaded.entry.related if rel.relation in OVERLAP_RELATIONS)
    text = repr((loaded.entry.id, loaded.path, [repr(sig) for sig in loaded.signatures],
                 [list(spec.example_logs) for spec in loaded.entry.signatures], overlap))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _signed_digest(loaded) -> str:
    """What the healthy-log check (E036) reads of an entry: its id and compiled signatures."""
    text = repr((loaded.entry.id, [repr(sig) for sig in loaded.signatures]))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _example_findings(catalog: Catalog) -> list[Finding]:
    """What the signatures and examples of every entry say together: collisions and shared
    cores (E035), raising frames not shown or declared twice (E057)."""
    collisions = _collisions(catalog)
    return collisions + _shared_cores(catalog, MAX_E035 - len(collisions)) + _frame_findings(catalog)


#: cosine similarity of two entries' search terms (tf-idf) above which they may be one failure
#: written twice; the closest distinct bundled entries reach 0.43 (and are declared related)
NEAR_DUPLICATE = 0.6
_TOP_TERMS = 12


def entry_vectors(catalog: Catalog, weights: dict[str, dict[str, float]] | None = None) -> dict[str, dict[str, float]]:
    """Unit tf-idf vectors of every entry's search terms (`weights`: by entry id, else the entries' own)."""
    import math

    weights = weights if weights is not None else {i: loaded.search_weights for i, loaded in catalog.entries.items()}
    df: dict[str, int] = {}
    for own in weights.values():
        for term in own:
            df[term] = df.get(term, 0) + 1
    count = len(weights)
    idf = {term: math.log(1 + count / n) for term, n in df.items()}   # once per term, not per entry
    vectors = {}
    for entry_id, own in weights.items():
        vector = {t: w * idf[t] for t, w in own.items()}
        norm = math.sqrt(sum(x * x for x in vector.values())) or 1.0
        vectors[entry_id] = {t: x / norm for t, x in vector.items()}
    return vectors


def similar_pairs(vectors: dict[str, dict[str, float]], threshold: float) -> list[tuple[float, str, str]]:
    """Pairs whose cosine is at least `threshold`. Only pairs sharing three of their strongest
    terms are compared, so this stays near-linear in the number of entries."""
    import math
    from collections import Counter

    strongest: dict[str, list[str]] = {}
    by_term: dict[str, list[str]] = {}
    for entry_id, vector in vectors.items():
        # (a stable sort: among equal weights, the first term seen)
        strongest[entry_id] = terms = sorted(vector, key=vector.__getitem__, reverse=True)[:_TOP_TERMS]
        for term in terms:
            by_term.setdefault(term, []).append(entry_id)
    found = []
    for a, terms in strongest.items():
        # how many of a's strongest terms each entry shares, counted in C (`Counter.update`)
        shared: Counter[str] = Counter()
        for term in terms:
            ids = by_term[term]
            if len(ids) <= 200:   # a term this common says nothing about duplication
                shared.update(ids)
        va = vectors[a]
        for b in [b for b, count in shared.items() if count >= 3 and a < b]:
            vb = vectors[b]
            # over the terms both have (a set operation in C), summed exactly: in any order the same
            cosine = math.fsum([va[t] * vb[t] for t in va.keys() & vb.keys()])
            if cosine >= threshold:
                found.append((cosine, a, b))
    return sorted(found, reverse=True)


def near_duplicates(catalog: Catalog, kept: Kept | None = None) -> list[Diagnostic]:
    """A warning, not an error: two entries that read alike and are not declared related are
    likely one failure written twice (extend one instead). With `kept`, each entry's terms come
    from there (as `marshal` bytes), not from the entry."""
    if len(catalog.entries) < 2:
        return []
    related = {(a, target) for a, links in catalog.related(kept).items() for target, _relation in links}
    weights = None if kept is None else {entry_id: marshal.loads(per_entry(kept, "weights", loaded, weights_record))
                                         for entry_id, loaded in catalog.entries.items()}
    problems = []
    for cosine, a, b in similar_pairs(entry_vectors(catalog, weights), NEAR_DUPLICATE):
        if (a, b) in related or (b, a) in related:
            continue
        loaded = catalog.entries[b]
        line, col = loaded.located.where(("id",))
        problems.append(Diagnostic(loaded.path, line, col, "W001", f"reads like '{a}' ({catalog.entries[a].path}): "
                                   f"{cosine:.0%} of their search terms agree", "if it is the same failure, extend "
                                   "that entry with this one's wording; if not, say how they differ in 'related' "
                                   "(often-confused-with)", severity="warning"))
    return problems


def weights_record(loaded) -> bytes:
    """An entry's search-term weights as `marshal` bytes: how `serve` keeps them (far less than the
    memory of the dictionary)."""
    return marshal.dumps(loaded.search_weights)


def related_pairs(catalog: Catalog) -> set[tuple[str, str]]:
    """The (entry, entry) pairs, both ways, whose signatures may match each other's examples (E035)."""
    pairs = set()
    for entry_id, loaded in catalog.entries.items():
        for rel in loaded.entry.related:
            if rel.relation in OVERLAP_RELATIONS:
                pairs.add((entry_id, rel.id))
                pairs.add((rel.id, entry_id))
    return pairs


#: Bounds on E035, so that a folder of entries that all collide (a pull request adding a
#: pattern that matches everything, a generated corpus gone wrong) prints a page, not millions
#: of lines: examples of one entry listed as matching one other entry, then "… and N more";
#: E035 lines in all (those summaries included); and the signature tests spent counting the
#: collisions past that, after which the count is a lower bound.
MAX_E035_PER_PAIR = 3
MAX_E035 = 200
E035_COUNT_BUDGET = 200_000
#: The hint asks for a distinct pattern, not for a relation: a relation declared to silence a
#: copied pattern leaves the copy matching every log of the other failure (ranked next to it).
#: A relation is for an example that also holds the other failure's own line (a wrapper, a
#: consequence printed after it), which E035 then allows.
E035_HINT = ("remove the copied pattern, or make it distinctive: keep the wording only this failure prints "
             "(its own message, the frame or the value that tells it apart); do not declare a relation just to "
             "silence this: 'related' is for an example that also shows the other failure's own line")


def _collisions(catalog: Catalog) -> list[Finding]:
    """An example of entry A matched by a signature of entry B is an error unless A and B are related.

    Reported per ordered pair (A's examples matching B, in A's file): the first
    MAX_E035_PER_PAIR, then one line counting the rest; past MAX_E035 lines only a count, in one
    last line (a lower bound once E035_COUNT_BUDGET signature tests were spent counting)."""
    signatures = catalog.signatures()
    if not signatures:
        return []
    index = AnchorIndex(signatures)
    allowed = related_pairs(catalog)
    problems: list[Finding] = []
    unlisted = unlisted_pairs = 0   # collisions past MAX_E035, and the pairs of entries they are between
    budget, exhausted = E035_COUNT_BUDGET, False
    first_unlisted: tuple[str, tuple] | None = None
    for entry_id, loaded in catalog.entries.items():
        per_pair: dict[str, list] = {}   # other entry → [listed, more, where the last listed is]
        beyond: set[str] = set()          # other entries with collisions past MAX_E035
        for i, signature in enumerate(loaded.entry.signatures):
            for j, example in enumerate(signature.example_logs):
                if exhausted:
                    break
                numbered = parse_text(example)
                candidates = {sig.entry_id for _n, line in numbered for sig in index.candidates(line.text)
                              if sig.entry_id != entry_id and (entry_id, sig.entry_id) not in allowed}
                for other_id in sorted(candidates):
                    others = catalog.entries[other_id].signatures
                    if len(problems) >= MAX_E035:
                        if budget <= 0:
                            exhausted = True
                            break
                        budget -= len(others)
                    hit = next((s for s in others if find_matches(s, numbered)), None)
                    if hit is None:
                        continue
                    where = ("signatures", i, "examples", j)
                    pair = per_pair.setdefault(other_id, [0, 0, where])
                    if len(problems) >= MAX_E035:
                        unlisted += 1
                        beyond.add(other_id)
                        first_unlisted = first_unlisted or (entry_id, where)
                    elif pair[0] < MAX_E035_PER_PAIR:
                        pair[0] += 1
                        pair[2] = where
                        problems.append((
                            entry_id, where, "E035",
                            f"example {j + 1} of signature {i + 1} also matches signature {hit.index + 1} of "
                            f"'{other_id}' ({catalog.entries[other_id].path})", E035_HINT))
                    else:
                        pair[1] += 1
        for other_id, (_listed, more, where) in sorted(per_pair.items()):
            if not more:
                continue
            if len(problems) < MAX_E035:
                problems.append((entry_id, where, "E035",
                                 f"… and {more} more E035 between '{entry_id}' and '{other_id}' "
                                 f"(examples of this entry that '{other_id}' also matches)", E035_HINT))
            else:
                unlisted += more
                beyond.add(other_id)
                first_unlisted = first_unlisted or (entry_id, where)
        unlisted_pairs += len(beyond)
    if unlisted:
        first_id, first_where = first_unlisted  # type: ignore[misc]
        counted = "at least " if exhausted else ""
        problems.append((first_id, first_where, "E035",
                         f"… and {counted}{unlisted} more E035 between {counted}{unlisted_pairs} "
                         f"pair{'s' if unlisted_pairs != 1 else ''} of entries, not listed "
                         f"(only the first {MAX_E035} are)",
                         "fix the collisions listed first: many collisions usually come from one "
                         "pattern that is too general, and `check` lists the rest once they are fewer"))
    for sig in signatures:  # compiled once for the whole check, not once per example
        sig.release()
    return problems


def _shared_cores(catalog: Catalog, room: int) -> list[Finding]:
    """A core identifies one failure: two entries whose signatures have the same core, or one
    whose core holds another's, identify neither by it (related or not: a cut line holding it
    would name either). At most `room` lines (what E035's cap leaves), the last counting the rest."""
    if room <= 0:
        return []   # the collisions listed first come first: their fixes often change the cores
    cores: dict[str, list[tuple[str, int]]] = {}
    for entry_id, loaded in catalog.entries.items():
        for sig in loaded.signatures:
            if sig.core:
                cores.setdefault(sig.core, []).append((entry_id, sig.index))
    holders = _holders(list(cores))
    problems: list[Finding] = []
    for core, owners in sorted(cores.items()):
        others = [(o, i) for c in holders.get(core, ()) for o, i in cores[c]]
        for entry_id, index in owners:
            clash = sorted({o for o, _ in owners + others if o != entry_id})
            if not clash:
                continue
            problems.append((entry_id, ("signatures", index), "E035",
                             f"the core '{core}' of signature {index + 1} is held by a signature of "
                             f"{', '.join(repr(o) for o in clash[:3])} too: it identifies neither",
                             "declare this signature's core as a longer span that only this failure "
                             "prints (core: ...), or core: '' for none"))
    if len(problems) > room:
        last = problems[room - 1]
        problems = problems[:room - 1] + [(last[0], last[1], "E035",
                                           f"… and {len(problems) - room + 1} more signatures whose core "
                                           "another entry's signature holds too, not listed",
                                           "declare their cores (core: ...), or core: '' for none")]
    return problems


def _holders(cores: list[str]) -> dict[str, set[str]]:
    """core → the other cores that hold it as a substring: one Aho-Corasick pass over each core
    (pyahocorasick), in the total length of the cores. Testing every pair (`a in b`) took 100 s
    of CPU at 10,000 entries (20,000 cores)."""
    import ahocorasick

    automaton = ahocorasick.Automaton()
    for core in cores:
        automaton.add_word(core, core)
    held: dict[str, set[str]] = {}
    if not cores:
        return held
    automaton.make_automaton()
    for holder in cores:
        for _end, core in automaton.iter(holder):
            if core != holder:
                held.setdefault(core, set()).add(holder)
    return held


def _frames_above(example: str, line: int) -> list[tuple[str, str]]:
    """The (file, function) of the traceback frame nearest above line `line` of an example (the
    frame that raised the exception printed there), or none."""
    from ..matching.events import recognise
    from ..matching.logline import parse_line

    lines = example.split("\n")[:max(line, 0)]
    for raw in reversed(lines):
        event = recognise(parse_line(raw).text)
        if event is not None and event[0] == "frame":
            return [(event[1][0].replace("\\", "/"), event[1][2])]
    return []


def _frame_findings(catalog: Catalog) -> list[Finding]:
    """E057: a declared raising frame is a fact an example shows (the frame right above the
    signature's line in one of its examples; for a C++ source file, a raising frame of a C++
    backtrace in an example that matches), and names one failure: no two entries declare it."""
    from ..matching.incident import backtrace_frames
    from ..matching.scanner import cpp_frame_fits
    from ..matching.signatures import marked_lines

    owners: dict[tuple[str, str], dict[str, tuple]] = {}   # frame → entry → where it declares it
    problems: list[Finding] = []
    for entry_id, loaded in sorted(catalog.entries.items()):
        for i, (spec, compiled) in enumerate(zip(loaded.entry.signatures, loaded.signatures)):
            shown: set[tuple[str, str]] = set()
            cpp_shown: set[tuple[str, str]] = set()
            for example in spec.example_logs:
                marks = compiled.marks.get(example) or marked_lines(compiled, example)
                for mark in marks:
                    shown.update(_frames_above(example, mark[0]))
                if marks and any(not frame.file.endswith(".py") for frame in spec.frames):
                    cpp_shown.update(backtrace_frames(example))
            for j, frame in enumerate(spec.frames):
                where = ("signatures", i, "frames", j, "function")
                owners.setdefault((frame.file, frame.function), {}).setdefault(entry_id, where)
                if not any(name == frame.function and (path == frame.file or path.endswith("/" + frame.file))
                           for path, name in shown) and \
                        not any(cpp_frame_fits(path, name, frame.file, frame.function) for path, name in cpp_shown):
                    problems.append((
                        entry_id, where, "E057",
                        f"no example of signature {i + 1} shows the frame '{frame.function}' in '{frame.file}' "
                        "right above its line",
                        "add an example traceback (with its origin) whose last frame is this one, or correct "
                        "the file and function from the source that raises the error"))
    for (file, function), entries in sorted(owners.items()):
        if len(entries) > 1:
            for entry_id, where in sorted(entries.items()):
                others = ", ".join(repr(e) for e in sorted(set(entries) - {entry_id}))
                problems.append((
                    entry_id, where, "E057",
                    f"the raising frame '{function}' in '{file}' is declared by {others} too: a traceback cut "
                    "there would name either",
                    "keep the frame on the entry whose error that frame raises, and remove it from the other"))
    return problems


MAX_E036 = 200   # E036 lines in all; each names a signature and a healthy log once


E036_HINT = "keep more of the error's own wording in the pattern so that normal output cannot match it"


def _healthy_findings(catalog: Catalog, healthy_logs: list[Path]) -> tuple[list[Finding], int]:
    """A signature that fires on a log of a run that did not fail is too generic: the first
    MAX_E036 (signature, log) pairs, and how many more there are."""
    if not healthy_logs or not catalog.entries:
        return [], 0
    from ..matching.scanner import Scanner

    scanner = Scanner(catalog.signatures())
    problems: list[Finding] = []
    unlisted = 0
    for log in healthy_logs:
        report = scanner.scan_paths([log])
        first: dict[int, tuple] = {}   # one line per signature and log: its first match, and how many more
        for hit in report.matches:
            key = id(hit.signature)
            first[key] = (first[key][0], first[key][1] + 1) if key in first else (hit, 0)
        for hit, more in sorted(first.values(), key=lambda item: item[0].lines[0]):
            if len(problems) >= MAX_E036:
                unlisted += 1
                continue
            also = f" (and {more} more match{'es' if more != 1 else ''})" if more else ""
            problems.append((hit.signature.entry_id, ("signatures", hit.signature.index), "E036",
                             f"signature {hit.signature.index + 1} matches line {hit.lines[0] + 1} of the "
                             f"healthy log {log.name}{also}", E036_HINT))
    for sig in scanner.signatures:
        sig.release()
    return problems, unlisted


def _with_unlisted_e036(problems: list[Diagnostic], unlisted: int) -> list[Diagnostic]:
    if unlisted:
        last = max(problems)
        problems.append(Diagnostic(last.path, last.line, last.column, "E036",
                                   f"… and {unlisted} more signatures that match a healthy log, not listed "
                                   f"(only the first {MAX_E036} are)", E036_HINT))
    return problems
