"""The build, start to end. Thin on purpose: each stage lives in its own module.

    load → check each entry → check across entries → index → render → write

Every stage runs on every build; what makes a build cheap is that the results of the stages that
work per item are memoised in the project's store (`cache.RecordStore`), keyed by a hash of
everything they are made from: a checked entry by its file, site.yml and the code's version; a
rendered page by its context (`stamps.page_key`); a highlighted code block by its text. No
stage has a second, incremental implementation. A build whose inputs (files under the project,
by size and modification time, and the theme and package files) are unchanged since the last
build, with that build's output intact, returns at once without loading anything.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..cache import RecordStore
from ..collector import paused, release_free_memory
from ..errors import RootcauseError
from ..forked import Alongside
from .page_workers import EntryPageWorkers, links_of, render_pages, workers_share
from .stamps import (ENTRY_RECORDS, PAGE_RECORDS, build_version, code_store, collect_assets, input_fingerprint,
                     page_key, quick_settings, render_stamp, same_inputs, theme_files)
from .write import (OutputLock, SiteWriter, check_output_folder, file_digest, output_intact, read_manifest,
                    remove_leftovers, write_manifest)

if TYPE_CHECKING:
    from ..config import SiteConfig


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
          wait: float = LOCK_WAIT, timings=None, walked: tuple | None = None) -> BuildResult:
    """Build the site; raise RootcauseError (with every problem found) instead of writing a broken one.

    Entries and pages whose inputs did not change come from the project's store
    (`rootcause.cache`, `render_site`). `force` skips the up-to-date test, reads nothing from
    the build cache (it is written anew) and writes every file anew. One build at a time writes
    an output folder; another one waits up to `wait` seconds for it (E052 after that).
    `timings` (a `timings.Timings`) is filled stage by stage. `walked`: the walk of the inputs
    `up_to_date` has just made (`serve`), not made again.
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
            last = read_manifest(quick_out, root)
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
        manifest = {} if force else read_manifest(out, root)
        if not force and _up_to_date(manifest, out, fingerprint):
            return BuildResult(0, 0, 0, 0, 0, time.perf_counter() - started, up_to_date=True, out=out)
        problems = check_output_folder(out, root, None if force else manifest)
        if problems:
            raise RootcauseError(problems)
        remove_leftovers(out)
        previous = manifest.get("files")
        with SiteWriter(out, previous=previous) as writer:
            stats: dict = {}
            entries, pages = render_site(root, timings.part("write")(writer.add),
                                         progress=progress and sys.stderr.isatty(),
                                         cache="write" if force else "use", timings=timings, stats=stats,
                                         writer=writer)
            with timings.stage("write"):
                manifest = writer.commit(extra={"inputs": fingerprint})
        with timings.stage("write"):
            write_manifest(out, root, manifest)
    return BuildResult(entries, pages, len(writer.digests), writer.written, writer.reused,
                       time.perf_counter() - started, out=out, **stats)


def up_to_date(root: Path, out: Path | None = None) -> tuple[bool, tuple]:
    """The build's up-to-date test alone, in this process, for `serve` (which runs each build in
    a child): whether a build would have nothing to do, and the walk it made (`_walk`; its first
    item is the inputs' fingerprint, from site.yml unvalidated), for that build to start from."""
    root = root.resolve()
    settings = quick_settings(root)
    walked = _walk(root, settings)
    output = settings.get("output", "site")
    if not isinstance(output, str):
        return False, walked
    where = (out or root / output).resolve()
    return _up_to_date(read_manifest(where, root), where, walked[0]), walked


def _walk(root: Path, settings: dict) -> tuple[str]:
    """`input_fingerprint` of the input folders as `settings` name them (a build takes it again if
    site.yml, read in full, names others)."""
    return (input_fingerprint(root, settings),)


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
    render_site(root, files.__setitem__)
    return files


@dataclass
class Memo:
    """Where the stages' per-item results are memoised (the project's store): checked entries by
    their file's key, rendered pages by their page key, highlighted code blocks by their text.
    `mode`: "use" reads and writes them, "write" only writes them (`--force`), "off" leaves the
    store alone (every result computed afresh, nothing kept)."""

    mode: str
    entries: RecordStore
    pages: RecordStore
    codes: RecordStore
    version: str

    @classmethod
    def open(cls, root: Path, mode: str) -> "Memo":
        on, read = mode != "off", mode == "use"
        return cls(mode, RecordStore(root, ENTRY_RECORDS, enabled=on, read=read),
                   RecordStore(root, PAGE_RECORDS, enabled=on, read=read), code_store(root, enabled=on, read=read),
                   build_version() if on else "")

    @property
    def on(self) -> bool:
        return self.mode != "off"

    def prune(self) -> None:
        """Forget what this build did not use (the pages and entries of an earlier state)."""
        if self.on:
            self.entries.prune()
            self.pages.prune()
            self.codes.prune()


@paused()
def render_site(root: Path, emit, progress: bool = False, cache: str = "off",
                timings=None, stats: dict | None = None, writer=None) -> tuple[int, int]:
    """Produce every file of the site, handing each to `emit(path, bytes)` as soon as it is ready;
    with `writer` (the output's `SiteWriter`), rendered pages are written by whichever process
    rendered them instead (`SiteWriter.put`), and `emit` gets every other file.

    Checks everything first: raises RootcauseError, before emitting anything, when any input has an
    error. Returns (entries, pages). `cache`: the `Memo` mode. `stats` gets the number of entries
    checked and of pages rendered (not taken from the store).

    A build that writes pages through `writer` and the store forks its render workers first
    (`page_workers.EntryPageWorkers`), before the catalog is loaded: they hold none of it.
    """
    from contextlib import nullcontext

    from ..entries.catalog import entry_paths
    from ..timings import OFF
    from . import render  # noqa: F401  (imported before the fork: the workers share its code)
    from .highlight import kept_in

    timings = timings or OFF
    with timings.stage("load"):
        memo = Memo.open(root, cache)
    # before the workers are forked: they inherit it
    with kept_in(memo.codes) if memo.on else nullcontext():
        ahead = None
        if writer is not None and memo.entries.enabled:
            # (a store that cannot be written holds no records for them to read)
            ahead = EntryPageWorkers.start(root, writer, len(entry_paths(root)))
        with ahead or nullcontext():
            project, content_pages = check(root, memo, timings)
            files, asset_names = index(root, project, timings)
            planned = plan(root, project, content_pages, asset_names, memo, timings)
            with timings.stage("index"):
                files.update(extras(project, planned))
            with timings.stage("write"):
                for path in sorted(files):
                    emit(path, files[path])
                del files
            todo, pages = len(planned.todo), len(planned.pages)
            note = f"{todo} of {pages} pages rendered, the rest from the store" if memo.mode == "use" else f"{todo} pages"
            with timings.stage("render", note=note):
                for path in sorted(planned.reuse):
                    emit(path, planned.reuse[path])
                render_all(project, planned, memo, emit, writer, ahead, progress, timings)
    with timings.stage("write"):
        memo.prune()
    if stats is not None:
        stats.update(checked=project.catalog.checked, rendered=todo)
    return len(project.catalog.entries), pages


def check(root: Path, memo: Memo, timings) -> tuple:
    """Stages 1-3, load, check each entry (memoised by its file's key) and check across entries,
    and the content pages and theme files: (project, content pages); RootcauseError with every
    problem when any input has an error."""
    from ..entries.project import open_project
    from .content import load_content

    project, problems = open_project(root, store=memo.entries if memo.on else None, version=memo.version,
                                     timings=timings)
    if project is None or any(d.severity == "error" for d in problems):
        raise RootcauseError(problems)
    _forget_positions(project.catalog)
    with timings.stage("load"):
        content_pages, content_problems = load_content(root)
        theme_problems = theme_files(root, project.catalog.config)[1]
    if content_problems or theme_problems:
        raise RootcauseError(content_problems + theme_problems)
    return project, content_pages


def index(root: Path, project, timings) -> tuple[dict[str, bytes], dict[str, str]]:
    """Stage 4: the theme's assets, the search files and `signatures.json`, as {path: bytes}, and
    the assets' content-hashed names; the diagnosis index (for `diagnose`) is stored from them."""
    from .diagnosis_index import index_sections_of_parts, store_sections
    from .search import (SIGNATURES, assemble_signature_file, build_search_files, consequences_of, signature_address,
                         signature_parts)

    catalog = project.catalog
    config = catalog.config
    with timings.stage("index"):
        asset_names, files = collect_assets(root, config)
        search_files = build_search_files(catalog, release=True)
        parts = {entry_id: signature_parts(loaded) for entry_id, loaded in catalog.entries.items()}
        consequences = consequences_of({entry_id: [(r.id, r.relation) for r in loaded.entry.related]
                                        for entry_id, loaded in catalog.entries.items()})
        signatures = assemble_signature_file(parts, consequences)
        files.update(search_files)
        files[SIGNATURES] = signatures
        if project.inputs is not None:
            store_sections(root, project.inputs, config.base_url,
                           index_sections_of_parts(search_files, parts, consequences))
        asset_names["signatures.json"] = signature_address(file_digest(signatures))
    return files, asset_names


@dataclass
class Plan:
    """Every page of the site, and which of them the store already holds."""

    pages: list
    cards: dict            # entry id → `render.Card`
    incoming: dict         # entry id → the links made to it
    renderer: object
    context: tuple         # what a render worker needs to make the renderer
    todo: list             # the pages to render
    reuse: dict            # path → the bytes the store holds for the page
    keys: dict             # path → page key
    checked: dict          # path → bytes of the pages rendered while checking their templates


def plan(root: Path, project, content_pages: list, asset_names: dict, memo: Memo, timings) -> Plan:
    """Stage 5a: every page to render, each keyed by everything it is made from (`stamps.page_key`),
    and which of them the store already holds."""
    from .render import Card, Renderer, aggregate_pages, check_templates, entry_page, incoming_links

    catalog = project.catalog
    config = catalog.config
    with timings.stage("render"):
        release_free_memory()
        cards = {entry_id: Card.of(loaded) for entry_id, loaded in catalog.entries.items()}
        incoming = incoming_links(catalog)
        pages = [entry_page(loaded, config, cards, incoming) for loaded in catalog.entries.values()]
        pages += aggregate_pages(config, cards, content_pages, project.study)
        tabs = [(c.slug, c.tab) for c in content_pages if c.tab]
        renderer = Renderer(config, root, asset_names, tabs, keep_compiled=memo.on)
        stamp = render_stamp(root, config, asset_names, tabs, memo.version) if memo.on else None
        keys = {page.path: key for page in pages if stamp and (key := page_key(page, stamp)) is not None}
        reuse = {path: body for path, key in keys.items() if (body := memo.pages.get(key)) is not None}
        todo = [page for page in pages if page.path not in reuse]
        # a template is checked on a page that is rendered now: one whose pages all come from the
        # store is the template they were rendered with (its content is part of their keys)
        checked: dict[str, bytes] = {}
        template_problems = check_templates(renderer, todo, checked)
        if template_problems:
            raise RootcauseError(template_problems)
    return Plan(pages, cards, incoming, renderer, (config, asset_names, tabs, memo.on), todo, reuse, keys, checked)


def extras(project, planned: Plan) -> dict[str, bytes]:
    """Stage 5b: the sitemap, robots.txt, the Atom feed and the entries' JSON Schema."""
    from .feeds import atom, robots, sitemap

    catalog = project.catalog
    config = catalog.config
    reviewed = {entry_id: card.reviewed for entry_id, card in planned.cards.items()}
    return {"sitemap.xml": sitemap(planned.pages, config.base_url, reviewed), "robots.txt": robots(config.base_url),
            "feed.xml": atom(config, catalog.entries.values()), ".nojekyll": b"",
            "entry.schema.json": _schema_bytes(config)}


def render_all(project, planned: Plan, memo: Memo, emit, writer, ahead: "EntryPageWorkers | None",
               progress: bool, timings) -> None:
    """Stage 6: render the pages the store did not hold, each kept in the store by its key and
    written (with `writer`, by the process that rendered it: a worker sends back its hash)."""
    catalog = project.catalog
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

        if ahead is not None:
            _render_with(ahead, renderer, planned.pages[:len(catalog.entries)], todo, checked, keys, planned.context,
                         planned.cards, planned.incoming, sink, writer, advance)
        else:
            for path, (digest, linked) in render_pages(renderer, todo, advance, checked, sink,
                                                       discard=writer.discard):
                writer.record(path, digest, linked)


def _forget_positions(catalog) -> None:
    """Drop the entries' positions once the catalog is checked: only messages about the entries
    need them (4.5 KB an entry), and the stages after it allocate from what is freed here."""
    for loaded in catalog.entries.values():
        loaded.located = None


def _render_with(ahead: "EntryPageWorkers", renderer, entry_pages: list, todo: list, checked: dict, keys: dict,
                 context: tuple, cards: dict, incoming: dict, sink, writer, advance) -> None:
    """Render `todo`: the workers forked ahead take their share of its entry pages (those whose
    entry has a build cache record), each reading its entries from their records and given the
    cards and backlinks of its pages' links with them (not every card: at 10,000 entries 30 MB
    in every worker, sent with every chunk); this process renders the rest, any page whose
    record a worker could not read, and the pages of a worker that died (what it had written of
    them is removed first)."""
    from concurrent.futures.process import BrokenProcessPool

    entry_page_of = {page.context["entry"].id: page for page in entry_pages}
    left = {page.path for page in todo if page.path not in checked}
    shared = [page for page in entry_pages if page.path in left and page.context["loaded"].source_key]
    theirs = workers_share(shared, ahead.count + 1)
    chunks = ahead.submit(context, [(page.context["entry"].id, page.context["loaded"].source_key,
                                     keys.get(page.path), links_of(page.context["entry"], cards, incoming))
                                    for page in theirs])
    given = {page.path for page in theirs}
    for path, (digest, linked) in render_pages(renderer, [page for page in todo if page.path not in given], advance,
                                               checked, sink, fork=False):
        writer.record(path, digest, linked)
    for jobs, future in chunks:
        try:
            done = future.result()
        except BrokenProcessPool:
            done = [(entry_id, None) for entry_id, _key, _page_key, _links in jobs]
            for entry_id, _ in done:
                writer.discard(entry_page_of[entry_id].path)
        for entry_id, result in done:
            page = entry_page_of[entry_id]
            if result is None:   # not rendered there
                result = sink(page.path, renderer.render(page))
            writer.record(page.path, *result)
            advance()
    ahead.close()   # reaped in the render stage, which their CPU time is counted in


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
