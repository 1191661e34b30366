"""The build, start to end. Thin on purpose: each stage lives in its own module.

    load → check each entry → check across entries → index → render → write

Every stage runs on every build; what makes a build cheap is that the results of the stages that
work per item are memoised in the project's store (`cache.RecordStore`), keyed by a hash of
everything they are made from: a checked entry by its file, site.yml and the code's version; a
rendered page by its context (`stamps.page_key`); a highlighted code block by its text; under
`serve`, smaller results in memory too (`memo.Kept`). No stage has a second, incremental
implementation. A build whose inputs (files under the project,
by size and modification time, and the theme and package files) are unchanged since the last
build, with that build's output intact, returns at once without loading anything.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..cache import RecordStore, sweep
from ..collector import paused, release_free_memory
from ..errors import RootcauseError
from ..forked import Alongside
from .page_workers import EntryPageWorkers, links_of, render_pages
from ..memo import Kept, entry_column
from .stamps import (ENTRY_RECORDS, PAGE_RECORDS, build_version, code_store, collect_assets, entry_page_key,
                     input_fingerprint, page_key, quick_settings, render_stamp, same_inputs, theme_files,
                     volatile_only)
from .write import (InPlaceWriter, NotIntact, OutputLock, SiteWriter, check_output_folder, file_digest,
                    output_intact, read_manifest, remove_leftovers, write_manifest)

if TYPE_CHECKING:
    from ..config import SiteConfig
    from .render import Renderer


@dataclass
class BuildResult:
    entries: int
    pages: int
    files: int
    written: int
    reused: int
    seconds: float
    up_to_date: bool = False
    out: Path | None = None
    checked: int = 0       # entries parsed and checked (the rest came from the build cache)
    rendered: int = 0      # pages rendered (the rest came from the build cache)

    def summary(self) -> str:
        if self.up_to_date:
            return f"site is up to date ({self.out}); nothing to do in {self.seconds:.2f}s"
        how = f"built {self.entries} entries into {self.pages} pages"
        return f"{how} ({self.files} files: {self.written} written, {self.reused} unchanged) in {self.seconds:.2f}s → {self.out}"


#: how long a build waits for another build of the same output folder to finish
LOCK_WAIT = 600.0


def _tell(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@paused()
def build(root: Path, out: Path | None = None, progress: bool = True, force: bool = False,
          wait: float = LOCK_WAIT, timings=None, walked: tuple | None = None, kept: Kept | None = None,
          deferred: list | None = None, checked: tuple | None = None) -> BuildResult:
    """Build the site; raise RootcauseError (with every problem found) instead of writing a broken one.

    Entries and pages whose inputs did not change come from the project's store
    (`rootcause.cache`, `render_site`). `force` skips the up-to-date test, reads nothing from
    the build cache (it is written anew) and writes every file anew. One build at a time writes
    an output folder; another one waits up to `wait` seconds for it (E052 after that).
    `timings` (a `timings.Timings`) is filled stage by stage. `walked`: the walk of the inputs
    `up_to_date` has just made (`serve`), not made again. `kept`: `serve`'s results of its last
    build (`memo.Kept`), used and added to; when the output is as that build left it, the build
    writes into it in place (`write.InPlaceWriter`), only the files whose bytes changed.
    `deferred`: a list that gets the work that can wait until the site is written (storing the
    diagnosis index and the build's state), for the caller to run; without it, that work is done
    before returning. `checked`: (output folder, state, answer, held) where another process tests
    whether that folder is still as `state` (`kept`'s) says (`write.output_intact`: `serve`'s
    server, while its child builds): `held(use)` is called once this build holds the output's
    lock, `use` telling whether the folder and state are this build's; then the in-place writer
    calls `answer()` before its first file instead of this process making the test first;
    False (`write.NotIntact`, nothing written yet) makes the build write the whole site anew.
    """
    from ..timings import OFF

    timings = timings or OFF
    started = time.perf_counter()
    root = root.resolve()
    with timings.stage("up-to-date test"):
        settings = quick_settings(root)
        # `walked`: (fingerprint,)
        last, quick_out = None, None   # the last build's state, as read for the test, and for where
        if not force and isinstance(settings.get("output", "site"), str):
            quick_out = (out or root / settings.get("output", "site")).resolve()
            # a fresh process: the walk (an lstat per input) runs in a forked child while this one
            # imports what any build past this test needs (the config's schema); with nothing to
            # do, that import was spent on the other core
            walking = Alongside(lambda: _walk(root, settings)) if walked is None else None
            from ..config import load_config  # noqa: F401
            last = kept_state(kept, quick_out) or read_manifest(quick_out, root)
            walked = walking.result() if walking is not None else walked
            if walked is not None and _up_to_date(last, quick_out, walked[0]):
                return BuildResult(0, 0, 0, 0, 0, time.perf_counter() - started, up_to_date=True, out=quick_out)
    from ..config import load_config

    with timings.stage("load"):
        config, problems = load_config(root)
        if config is None:
            raise RootcauseError(problems)
        out = (out or root / config.output).resolve()
        problems = check_output_folder(out, root, last if out == quick_out else None)
        if problems:
            raise RootcauseError(problems)
        settings_now = config.model_dump()
        # the walk of the up-to-date test, unless site.yml read in full names other input folders
        if not (walked and same_inputs(settings, settings_now)):
            walked = _walk(root, settings_now)
        fingerprint = walked[0]

    with OutputLock(out, wait=wait, on_wait=_tell):
        # another build may have finished while this one waited: the same test, under the lock
        state = None if force else kept_state(kept, out)
        gate = None
        if checked is not None:
            # `serve`: the server tests the output now that this process holds the lock (a build
            # that wrote the folder before it took the lock has finished), while this one loads,
            # indexes and plans; the in-place writer asks for the answer before its first file
            use = state is not None and checked[0] == out and checked[1] is state
            checked[3](use)
            gate = checked[2] if use else None
        manifest = {} if force else state or read_manifest(out, root)
        if not force and _up_to_date(manifest, out, fingerprint):
            return BuildResult(0, 0, 0, 0, 0, time.perf_counter() - started, up_to_date=True, out=out)
        problems = check_output_folder(out, root, None if force else manifest)
        if problems:
            raise RootcauseError(problems)
        remove_leftovers(out)
        previous = manifest.get("files")
        in_place = state is not None and (gate is not None or output_intact(out, state))
        stats: dict = {}
        begun = len(deferred) if deferred is not None else 0
        while True:
            writer: SiteWriter | InPlaceWriter = InPlaceWriter(out, state["files"], gate) if in_place and state \
                else SiteWriter(out, previous=previous)
            try:
                with writer:
                    entries, pages = render_site(root, timings.part("write")(writer.add),
                                                 progress=progress and sys.stderr.isatty(),
                                                 cache="write" if force else "use", timings=timings, stats=stats,
                                                 writer=writer, kept=kept, deferred=deferred,
                                                 taken=walked[1] if len(walked) > 1 else None)
                    with timings.stage("write"):
                        manifest = writer.commit(extra={"inputs": fingerprint})
                break
            except NotIntact:   # nothing was written: the whole site, into a new folder
                in_place = False
                if deferred is not None:
                    del deferred[begun:]
            except BaseException:
                if kept is not None and isinstance(writer, InPlaceWriter) and writer.touched:   # the output is no longer as the state says
                    kept.forget("output", os.fspath(out))
                raise
        with timings.stage("write"):
            if kept is not None:
                kept.put("output", os.fspath(out), manifest)
            if deferred is None:
                write_manifest(out, root, manifest)
            else:   # (`serve` reads its own state of the output, `kept`; the next process, this)
                deferred.append(lambda: write_manifest(out, root, manifest))
    return BuildResult(entries, pages, len(writer.digests), writer.written, writer.reused,
                       time.perf_counter() - started, out=out, **stats)


def kept_state(kept: Kept | None, out: Path) -> dict | None:
    """The state the last build into `out` left, as `serve` keeps it (None without one)."""
    if kept is None:
        return None
    state = kept.get("output", os.fspath(out), None)
    return state if isinstance(state, dict) else None


def up_to_date(root: Path, out: Path | None = None, kept: Kept | None = None,
               changed: set[str] | None = None) -> tuple[bool, tuple]:
    """The build's up-to-date test alone, in this process, for `serve` (which runs each build in
    a child): whether a build would have nothing to do, and the walk it made (`_walk`; its first
    item is the inputs' fingerprint, from site.yml unvalidated), for that build to start from.
    `kept`: `serve`'s results, whose state of the output is read instead of the store's.
    `changed`: the paths `serve`'s watcher reported, the only ones stat-ed again
    (`stamps.input_fingerprint`); None: every input."""
    root = root.resolve()
    settings = quick_settings(root)
    walked = _walk(root, settings, stats=True, changed=changed)
    output = settings.get("output", "site")
    if not isinstance(output, str):
        return False, walked
    where = (out or root / output).resolve()
    return _up_to_date(kept_state(kept, where) or read_manifest(where, root), where, walked[0]), walked


def _walk(root: Path, settings: dict, stats: bool = False, changed: set[str] | None = None) -> tuple:
    """(`input_fingerprint` of the input folders as `settings` name them (a build takes it again
    if site.yml, read in full, names others),) and with `stats`, the stat keys it took, by path
    (a build checks its inputs by them rather than take them again: `serve`). `changed`: as
    `up_to_date` takes it (only with `stats`)."""
    if not stats:
        return (input_fingerprint(root, settings),)
    taken: dict = {}
    return input_fingerprint(root, settings, taken, changed), taken


def _up_to_date(manifest: dict, out: Path, fingerprint: str) -> bool:
    """The last build into `out` (its `manifest`) had these inputs, and its output is as that
    build left it."""
    same_inputs = manifest.get("inputs") == fingerprint
    intact = same_inputs and output_intact(out, manifest)
    if not intact and os.environ.get("ROOTCAUSE_EXPLAIN_REBUILD"):
        why = ("no build state for this output" if not manifest else
               "an input changed" if not same_inputs else "the output changed since the last build")
        _tell(f"rebuilding: {why}")
    return intact


def site_files(root: Path) -> dict[str, bytes]:
    """Every file of the site as bytes, in memory (for tests and tools; builds stream instead)."""
    files: dict[str, bytes] = {}

    def emit(path: str, data: bytes, _digest: str | None = None) -> None:
        files[path] = data

    render_site(root, emit)
    return files


@dataclass
class Memo:
    """Where the stages' per-item results are memoised (the project's store): checked entries by
    their file's key, rendered pages by their page key, highlighted code blocks by their text.
    `mode`: "use" reads and writes them, "write" only writes them (`--force`), "off" leaves the
    store alone (every result computed afresh, nothing kept). `kept`: `serve`'s results of its
    last build, in memory (`memo.Kept`), or None."""

    mode: str
    entries: RecordStore
    pages: RecordStore
    codes: RecordStore
    version: str
    kept: Kept | None = None

    @classmethod
    def open(cls, root: Path, mode: str, kept: Kept | None = None) -> "Memo":
        on, read = mode != "off", mode == "use"
        return cls(mode, RecordStore(root, ENTRY_RECORDS, enabled=on, read=read),
                   RecordStore(root, PAGE_RECORDS, enabled=on, read=read), code_store(root, enabled=on, read=read),
                   _version(kept) if on else "", kept if on else None)

    @property
    def on(self) -> bool:
        return self.mode != "off"

    @property
    def warm(self) -> bool:
        """Are there results of an earlier build in memory (`serve` after its first build)?"""
        return self.kept is not None and bool(self.kept.tables.get("entry"))

    def prune(self) -> None:
        """Forget what this build did not use (the pages and entries of an earlier state). Not
        with `kept`: its build reads only what changed, so the store's other records were not
        used and are still good; the next build in a fresh process prunes."""
        if self.on and self.kept is None:
            self.entries.prune()
            self.pages.prune()
            self.codes.prune()
            sweep()


def _version(kept: Kept | None) -> str:
    """`build_version`, kept by the stat keys of the package's and the bundled theme's files."""
    if kept is None:
        return build_version()
    from ..inputs import PACKAGE, code_files, stat_key
    from .render import theme_folder

    theme = theme_folder()
    key = (tuple(stat_key(PACKAGE / name) for name in code_files()),
           tuple((os.fspath(p), stat_key(p)) for p in sorted(theme.rglob("*"))))
    return kept.memoised("build-version", key, build_version)


@paused()
def render_site(root: Path, emit, progress: bool = False, cache: str = "off",
                timings=None, stats: dict | None = None, writer=None, kept: Kept | None = None,
                deferred: list | None = None, taken: dict | None = None) -> tuple[int, int]:
    """Produce every file of the site, handing each to `emit(path, bytes, hash or None)` as soon
    as it is ready; with `writer` (the output's `SiteWriter` or `InPlaceWriter`), rendered pages
    are written by whichever process rendered them instead (`writer.put`), and `emit` gets
    every other file; with an `InPlaceWriter`, a page the output holds as its key says is not
    made at all (`writer.keep`).

    Checks everything first: raises RootcauseError, before emitting anything, when any input has an
    error. Returns (entries, pages). `cache`: the `Memo` mode; `kept`: `serve`'s results in memory;
    `deferred`: as `build` takes it; `taken`: the inputs' stat keys by path, from the walk of the
    up-to-date test. `stats` gets the number of entries checked and of pages rendered (not taken
    from the store).

    A cold build that writes pages through `writer` and the store forks its render workers first
    (`page_workers.EntryPageWorkers`), before the catalog is loaded: they hold none of it. Once
    every entry is checked on its own, they are given every entry page to render (into the
    staging folder, which a failed build removes) while this process checks across entries,
    indexes and plans the other pages; then it renders those and takes back the entry pages no
    worker has started.
    """
    from contextlib import nullcontext

    from ..entries.catalog import check_across, entry_names
    from ..timings import OFF
    from . import render  # noqa: F401  (imported before the fork: the workers share its code)
    from .highlight import kept_in

    timings = timings or OFF
    with timings.stage("load"):
        memo = Memo.open(root, cache, kept)
    present = writer.previous if isinstance(writer, InPlaceWriter) else None
    # before the workers are forked: they inherit it
    with kept_in(memo.codes) if memo.on else nullcontext():
        ahead = None
        if writer is not None and memo.entries.enabled and not memo.warm:
            # (a store that cannot be written holds no records for them to read)
            if isinstance(writer, InPlaceWriter) and writer.gate is not None:
                writer.open_gate()   # asked here: a worker that inherited the gate must not ask it
            ahead = EntryPageWorkers.start(root, writer, len(entry_names(root)))
        with ahead or nullcontext():
            project, content_pages = check(root, memo, timings, taken)
            with timings.stage("index"):
                asset_names, asset_files = collect_assets(root, project.catalog.config)
            planned = plan_entries(root, project, content_pages, asset_names, memo, timings, present)
            early = _start_entry_pages(ahead, planned) if ahead is not None and planned.early and not planned.problems \
                else None
            check_across(project.catalog, project.healthy_logs, kept=memo.kept, near=False, timings=timings)
            _raise_on_errors(project, memo, timings)
            files, digests, store_index = index(root, project, memo, timings, asset_names)
            files.update(asset_files)
            if deferred is None:
                with timings.stage("index"):
                    store_index()
            else:
                deferred.append(store_index)
            plan_pages(root, project, planned, content_pages, asset_names, memo, timings)
            if early is None and ahead is not None:
                early = _start_entry_pages(ahead, planned)
            with timings.stage("index"):
                files.update(extras(project, planned, memo))
            with timings.stage("write"):
                for path in sorted(files):
                    emit(path, files[path], digests.get(path))
                del files
            todo, pages = len(planned.todo), planned.count
            note = f"{todo} of {pages} pages rendered, the rest from the store" if memo.mode == "use" else f"{todo} pages"
            with timings.stage("render", note=note):
                for path, digest in sorted(planned.present.items()):
                    writer.keep(path, digest)
                for path in sorted(planned.reuse):
                    emit(path, planned.reuse[path])
                render_all(project, planned, memo, emit, writer, ahead, early, progress, timings)
    with timings.stage("write"):
        memo.prune()
        if memo.kept is not None and writer is not None:
            hashes, digests = memo.kept.tables.get("page", {}), writer.digests
            for path, key in planned.keys.items():   # (a page kept as it was is in the table already)
                if path not in planned.present and path in digests and hashes.get(key) != digests[path]:
                    memo.kept.put("page", key, digests[path])
    if stats is not None:
        stats.update(checked=project.catalog.checked, rendered=todo)
    return len(project.catalog.entries), pages


def check(root: Path, memo: Memo, timings, taken: dict | None = None) -> tuple:
    """Stages 1-2, load and check each entry (memoised by its file's key), and the content pages
    and theme files: (project, content pages); RootcauseError with every problem when any input
    has an error (then after the checks across entries too: `_raise_on_errors`)."""
    from ..entries.catalog import check_across
    from ..entries.project import open_project
    from .content import load_content

    project, problems = open_project(root, store=memo.entries if memo.on else None, version=memo.version,
                                     timings=timings, kept=memo.kept, near=False, cross=False, taken=taken)
    if project is None:
        raise RootcauseError(problems)
    if any(d.severity == "error" for d in problems):
        check_across(project.catalog, project.healthy_logs, kept=memo.kept, near=False, timings=timings)
        _raise_on_errors(project, memo, timings)
    with timings.stage("load"):
        content_pages, content_problems = load_content(root)
        theme_problems = theme_files(root, project.catalog.config)[1]
    if content_problems or theme_problems:
        raise RootcauseError(content_problems + theme_problems)
    return project, content_pages


def _raise_on_errors(project, memo: Memo, timings) -> None:
    """RootcauseError with every problem of the project when one is an error, the near-duplicate
    warnings (W001) among them: a build that succeeds does not show them, so they are looked
    for only here. Otherwise the entries' positions are dropped (a `serve` build keeps them)."""
    from ..entries.catalog import near_duplicates

    catalog = project.catalog
    if any(d.severity == "error" for d in catalog.diagnostics):
        with timings.stage("cross-check"):
            raise RootcauseError(sorted(catalog.diagnostics + near_duplicates(catalog, memo.kept)))
    if memo.kept is None:
        _forget_positions(catalog)


def index(root: Path, project, memo: Memo, timings, asset_names: dict) -> tuple[dict[str, bytes], dict[str, str], Callable]:
    """Stage 4: the search files and `signatures.json`, as {path: bytes}, the hashes of those
    known already ({path: `file_digest`}), and what stores the diagnosis index (for `diagnose`)
    made from them. `asset_names` gets signatures.json's address."""
    from .diagnosis_index import index_sections_of_parts, store_sections, table_of_parts
    from .search import (SIGNATURES, assemble_signature_file, build_search_files, consequences_of, signature_address,
                         signature_parts, signature_pieces)

    catalog = project.catalog
    config = catalog.config
    kept = memo.kept
    digests: dict[str, str] = {}
    with timings.stage("index"):
        search_files = build_search_files(catalog, release=kept is None, kept=kept, digests=digests)
        # the column's digest is of the signatures alone (what the diagnosis index's table reads)
        column = entry_column(kept, "parts", catalog, signature_parts, content=_signatures_of)
        parts = column.values
        related = catalog.related_column(kept)
        keys = catalog.keys()
        if kept is None or keys is None:
            consequences = consequences_of(related.values)
            signatures = assemble_signature_file(parts, consequences)
        else:
            consequences = kept.memoised("consequences", related.digest, lambda: consequences_of(related.values))
            # in pieces of consecutive entries, each kept by its entries' record keys
            signatures = assemble_signature_file(parts, consequences, lambda ids: kept.memoised(
                "signature-piece", tuple([keys[i] for i in ids]), lambda: signature_pieces(parts, ids)))
        files = dict(search_files)
        files[SIGNATURES] = signatures
        digest = file_digest(signatures)
        asset_names["signatures.json"] = signature_address(digest)
        # made now with `kept` (where it is kept: what a build does after answering is not)
        table = table_of_parts(parts, kept, column.digest) if kept is not None else None

    def store_index() -> None:
        if project.inputs is not None:
            store_sections(root, project.inputs, config.base_url,
                           index_sections_of_parts(search_files, parts, consequences, table))

    digests[SIGNATURES] = digest
    return files, digests, store_index


@dataclass
class Plan:
    """Every page of the site, and which of them the output or the store already holds."""

    urls: list             # every page's address in the sitemap
    cards: dict            # entry id → `render.Card`
    related: dict          # entry id → its links, (id, relation) each
    incoming: dict         # entry id → the links made to it
    renderer: Renderer
    context: tuple         # what a render worker needs to make the renderer
    output: dict | None    # path → hash of every file of the output as the last build left it (`InPlaceWriter`)
    early: bool            # the entry pages are keyed (and may be rendered) before signatures.json is made
    count: int = 0         # pages in all
    todo: list = field(default_factory=list)       # the pages to render
    reuse: dict = field(default_factory=dict)      # path → the bytes the store holds for the page
    keys: dict = field(default_factory=dict)       # path → page key
    checked: dict = field(default_factory=dict)    # path → bytes of the pages rendered while checking their templates
    present: dict = field(default_factory=dict)    # path → hash of the pages the output holds as they are
    problems: list = field(default_factory=list)   # the templates' problems found so far


def plan_entries(root: Path, project, content_pages: list, asset_names: dict, memo: Memo, timings,
                 output: dict | None = None) -> Plan:
    """Stage 5a: the entries' pages, each keyed by everything it is made from (`stamps.page_key`,
    from its entry and links alone), and which of them the output (`output`, as the last build
    of this process left it: `serve`) or the store already holds; the others made
    (`render.entry_page`) to be rendered, and the entry template checked on one of them. Before
    signatures.json is made when no entry page names it (`Plan.early`), else with the other
    pages (`plan_pages`)."""
    from .render import Card, header_tabs, incoming_links

    catalog = project.catalog
    config = catalog.config
    kept = memo.kept
    with timings.stage("render"):
        if kept is None:   # (`serve`'s builds run in a child that ends after them)
            release_free_memory()
        cards = entry_column(kept, "card", catalog, Card.of, content=_card_key)
        related = catalog.related_column(kept)
        incoming = incoming_links(related.values) if kept is None else \
            kept.memoised("incoming", related.digest, lambda: incoming_links(related.values))
        tabs = header_tabs(content_pages, project.study)
        planned = Plan([f"entries/{entry_id}/" for entry_id in catalog.entries], cards.values, related.values,
                       incoming, _renderer(config, root, asset_names, tabs, memo),
                       (config, dict(asset_names), tabs, memo.on), output, volatile_only(root, config),
                       len(catalog.entries))
        if planned.early:
            _plan_entry_pages(planned, project, render_stamp(root, config, asset_names, tabs, memo.version)
                              if memo.on else None, memo)
    return planned


def _plan_entry_pages(planned: Plan, project, stamp: tuple | None, memo: Memo) -> None:
    from .render import check_templates, entry_links, entry_page

    catalog = project.catalog
    keys: dict[str, str] = {}
    kept = memo.kept
    if stamp:
        cards, related, incoming = planned.cards, planned.related, planned.incoming
        if kept is None or catalog.keys() is None:
            for entry_id, loaded in catalog.entries.items():
                links = entry_links(entry_id, related[entry_id], cards, incoming)[0]
                keys[f"entries/{entry_id}/index.html"] = entry_page_key(stamp, loaded, links)
        else:
            entries = catalog.entries

            def key_of(entry_id: str) -> tuple[str, tuple]:
                links = entry_links(entry_id, related[entry_id], cards, incoming)[0]
                return entry_page_key(stamp, entries[entry_id], links), related[entry_id]

            def neighbours(last) -> set[str] | None:
                """Besides the entries whose file changed, those whose page shows one of them (as
                their link or their backlink): an entry's card and links change with its file only."""
                changed = kept.changed_ids(last.keys, catalog.keys())
                if changed is None:
                    return None
                near: set[str] = set()
                for entry_id in changed:
                    near.update(target for target, _relation in last.values[entry_id][1])
                    near.update(target for target, _relation in related[entry_id])
                    near.update(other for other, _relation in incoming.get(entry_id, ()))
                return near

            made = kept.column("entry-page-key", catalog.keys(), key_of, also=neighbours, context=stamp[0])
            keys = {f"entries/{entry_id}/index.html": value[0] for entry_id, value in made.values.items()}
    _held(planned, memo, keys)
    todo = [entry_page(loaded.whole(), catalog.config, planned.cards, planned.incoming)
            for entry_id, loaded in catalog.entries.items()
            if (path := f"entries/{entry_id}/index.html") not in planned.present and path not in planned.reuse]
    planned.todo += todo
    planned.problems += check_templates(planned.renderer, todo, planned.checked)


def _held(planned: Plan, memo: Memo, keys: dict[str, str]) -> None:
    """Which of the pages of `keys` the output holds as they are (`Plan.output`, with `serve`'s
    page hashes), and which the store holds."""
    kept = memo.kept
    planned.keys.update(keys)
    if planned.output is not None and kept is not None:
        output, pages, present = planned.output, kept.tables.get("page", {}), planned.present
        for path, key in keys.items():
            digest = pages.get(key)
            if digest is not None and output.get(path) == digest:
                present[path] = digest
        kept.touch("page", keys.values())
    planned.reuse.update((path, body) for path, key in keys.items()
                         if path not in planned.present and (body := memo.pages.get(key)) is not None)


def plan_pages(root: Path, project, planned: Plan, content_pages: list, asset_names: dict, memo: Memo,
               timings) -> None:
    """Stage 5b: the other pages (home, lists, hubs, content pages, 404: `render.aggregate_pages`),
    keyed, and which of them the output or the store holds; each template checked on a page
    rendered now (RootcauseError with the problems of every template)."""
    from .render import aggregate_pages, card_lists, check_templates, header_tabs, lists_key

    catalog = project.catalog
    config = catalog.config
    with timings.stage("render"):
        planned.renderer.set_assets(asset_names)   # signatures.json's address, for the diagnose page
        tabs = header_tabs(content_pages, project.study)
        stamp = render_stamp(root, config, asset_names, tabs, memo.version) if memo.on else None
        if not planned.early:
            planned.context = (config, dict(asset_names), tabs, memo.on)
            _plan_entry_pages(planned, project, stamp, memo)
        lists = None
        if memo.kept is not None:
            kept, cards = memo.kept, planned.cards
            keys = catalog.keys()
            # by each card's `place`, all the lists read of it (an edit of a summary keeps them)
            places = kept.column("card-place", keys, lambda entry_id: cards[entry_id].place, content=_text) \
                if keys is not None else None
            made_of = lists_key(config, cards) if places is None else (lists_key(config, {}), places.digest)
            lists = kept.memoised("card-lists", made_of, lambda: card_lists(config, cards))
        aggregates = aggregate_pages(config, planned.cards, content_pages, project.study, lists)
        _held(planned, memo, {page.path: key for page in aggregates if stamp and (key := page_key(page, stamp)) is not None})
        todo = [page for page in aggregates if page.path not in planned.present and page.path not in planned.reuse]
        planned.todo += todo
        planned.urls += [page.url_path for page in aggregates if page.sitemap]
        planned.count += len(aggregates)
        # a template is checked on a page that is rendered now: one whose pages all come from the
        # store is the template they were rendered with (its content is part of their keys)
        planned.problems += check_templates(planned.renderer, todo, planned.checked)
        if planned.problems:
            raise RootcauseError(planned.problems)


def _renderer(config, root: Path, asset_names: dict, tabs: list, memo: Memo):
    """The page renderer: with `kept`, the last build's (its compiled templates) when everything
    it is made from is the same (the name of signatures.json aside: `Renderer.set_assets`)."""
    from .render import Renderer

    make = lambda: Renderer(config, root, asset_names, tabs, keep_compiled=memo.on)  # noqa: E731
    if memo.kept is None or not memo.on:
        return make()
    from .render import theme_folder

    folders = ([root / config.theme / "templates"] if config.theme else []) + [theme_folder() / "templates"]
    templates = tuple((os.fspath(p), p.stat().st_mtime_ns, p.stat().st_size) for folder in folders
                      if folder.is_dir() for p in sorted(folder.glob("*")))
    key = (config.model_dump_json(), tuple(sorted((k, v) for k, v in asset_names.items() if k != "signatures.json")),
           tuple(tabs), templates, memo.version)
    renderer = memo.kept.memoised("renderer", key, make)
    renderer.set_assets(asset_names)
    return renderer


def extras(project, planned: Plan, memo: Memo) -> dict[str, bytes]:
    """Stage 5c: the sitemap, robots.txt, the Atom feed and the entries' JSON Schema."""
    from .feeds import atom, feed_entry, robots, sitemap

    catalog = project.catalog
    config = catalog.config
    kept = memo.kept
    cards = planned.cards
    feed = entry_column(kept, "feed", catalog, lambda whole: feed_entry(whole, config), content=_repr_bytes)
    if kept is None or catalog.keys() is None:
        reviewed = {entry_id: card.reviewed for entry_id, card in cards.items()}
        site_map = sitemap(planned.urls, config.base_url, reviewed)
        feed_file = atom(config, feed.values)
        schema = _schema_bytes(config)
    else:
        settings = config.model_dump_json()
        dates = kept.column("card-reviewed", catalog.keys(), lambda entry_id: cards[entry_id].reviewed, content=_text)
        site_map = kept.memoised("sitemap", (tuple(planned.urls), config.base_url, dates.digest),
                                 lambda: sitemap(planned.urls, config.base_url, dates.values))
        feed_file = kept.memoised("feed", (settings, feed.digest), lambda: atom(config, feed.values))
        schema = kept.memoised("schema", settings, lambda: _schema_bytes(config))
    return {"sitemap.xml": site_map, "robots.txt": robots(config.base_url),
            "feed.xml": feed_file, ".nojekyll": b"", "entry.schema.json": schema}


def _start_entry_pages(ahead: "EntryPageWorkers", planned: Plan) -> list:
    """Give the workers forked ahead every entry page to render that has a record they can read
    its entry from (and that no template check rendered already), each with the cards and
    backlinks of its links (not every card: at 10,000 entries 30 MB in every worker, sent with
    every chunk). Returns their chunks: (jobs, future) each."""
    jobs = [(page.context["entry"].id, page.context["loaded"].source_key, planned.keys.get(page.path),
             links_of(page.context["entry"], planned.cards, planned.incoming))
            for page in planned.todo if page.template == "entry.html" and page.path not in planned.checked
            and page.context["loaded"].source_key]
    return ahead.submit(planned.context, jobs)


def render_all(project, planned: Plan, memo: Memo, emit, writer, ahead: "EntryPageWorkers | None", early: list | None,
               progress: bool, timings) -> None:
    """Stage 6: render the pages the output and the store did not hold, each kept in the store by
    its key and written (with `writer`, by the process that rendered it: a worker sends back its
    hash). With workers (`early`: the entry pages given to them), this process renders the
    other pages, then takes back the entry pages no worker has started."""
    keys, todo, renderer, checked = planned.keys, planned.todo, planned.renderer, planned.checked
    with _progress(progress and bool(todo), len(todo)) as advance:
        if writer is None:
            for path, data in render_pages(renderer, todo, advance, checked):
                emit(path, data)
                if path in keys:
                    memo.pages.put(keys[path], data)
            return

        @timings.part("write")
        def sink(path: str, data: bytes) -> tuple[str, bool]:
            if path in keys:
                memo.pages.put(keys[path], data)
            return writer.put(path, data)

        if ahead is not None and early is not None:
            _render_with(ahead, early, renderer, todo, checked, sink, writer, advance)
        else:
            for path, (digest, linked) in render_pages(renderer, todo, advance, checked, sink,
                                                       discard=writer.discard):
                writer.record(path, digest, linked)


def _forget_positions(catalog) -> None:
    """Drop the entries' positions once the catalog is checked: only messages about the entries
    need them (4.5 KB an entry), and the stages after it allocate from what is freed here."""
    for loaded in catalog.entries.values():
        loaded.located = None


def _render_with(ahead: "EntryPageWorkers", chunks: list, renderer, todo: list, checked: dict, sink, writer,
                 advance) -> None:
    """Render `todo` beside the workers that were given `chunks` of its entry pages: this process
    renders every page not given to them, then the chunks no worker has started (from the last),
    then gathers the workers' answers. A page whose record a worker could not read is rendered
    here; so are the pages of a worker that died (what it had written of them is removed first)."""
    from concurrent.futures.process import BrokenProcessPool

    page_of = {page.context["entry"].id: page for page in todo if page.template == "entry.html"}
    given = {page_of[entry_id].path for jobs, _future in chunks for entry_id, _key, _page_key, _links in jobs}
    for path, (digest, linked) in render_pages(renderer, [page for page in todo if page.path not in given], advance,
                                               checked, sink, fork=False):
        writer.record(path, digest, linked)
    for jobs, future in reversed(chunks):
        if future.cancel():   # not started: rendered here
            for entry_id, _key, _page_key, _links in jobs:
                page = page_of[entry_id]
                writer.record(page.path, *sink(page.path, renderer.render(page)))
                advance()
    for jobs, future in chunks:
        if future.cancelled():
            continue
        try:
            done = future.result()
        except BrokenProcessPool:
            done = [(entry_id, None) for entry_id, _key, _page_key, _links in jobs]
            for entry_id, _ in done:
                writer.discard(page_of[entry_id].path)
        for entry_id, result in done:
            page = page_of[entry_id]
            if result is None:   # not rendered there
                result = sink(page.path, renderer.render(page))
            writer.record(page.path, *result)
            advance()
    ahead.close()   # reaped in the render stage, which their CPU time is counted in


def _signatures_of(part: tuple) -> bytes:
    return part[0]


def _repr_bytes(value) -> bytes:
    return repr(value).encode("utf-8", "surrogateescape")


def _text(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _card_key(card) -> bytes:
    return card.key.encode("utf-8", "surrogateescape")


def _schema_bytes(config: "SiteConfig") -> bytes:
    from ..entries.schema import json_schema_text

    return json_schema_text(config).encode("utf-8")


class _progress:
    """A rich progress bar on a terminal; nothing otherwise."""

    def __init__(self, enabled: bool, total: int):
        self.enabled = enabled
        self.total = total
        self._bar = None

    def __enter__(self):
        if not self.enabled:
            return lambda: None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bar = Progress(TextColumn("rendering"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                             transient=True)
        self._bar.start()
        task = self._bar.add_task("pages", total=self.total)
        return lambda: self._bar.advance(task)

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.stop()
        return False
