"""Rendering shared between the build's own process and worker processes (where there is no
`fork`, or one core, the build's process renders every page).

Two kinds of workers, both forked:
- `render_pages`: forked when rendering starts; they inherit the pages to render. After a fork
  every memory page that either process writes is copied, and rendering writes to every object
  it reads (their reference counts): at 10,000 entries the copies added about 380 MB to the
  build's peak. `serve` and `site_files` use these.
- `EntryPageWorkers`: forked before the catalog is loaded, so they hold none of it. Once the
  entries are checked, they are given every entry page; each reads the entries it is given
  from the build cache's records (`catalog.from_record`, which validates them again), makes
  their pages and writes them into the staging folder itself, while the build's process checks
  across entries, indexes and renders every other page, then renders the entry pages no worker
  has started. A `build` that writes the cache uses these.
"""

from __future__ import annotations

import os
from typing import Literal
from pathlib import Path

from ..forked import quiet_worker

# multiprocessing, concurrent.futures, pickle and hashlib are imported where workers start:
# a build of a small site, and most of `serve`'s builds, never need them

#: pages it takes before rendering is shared with workers
PARALLEL_PAGES = 400
#: pages per task of a render worker
CHUNK = 100


def worker_count() -> int:
    """Processes that render, the build's own included: one per core where `fork` exists."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return os.cpu_count() or 1


def alternate(chunks: list, processes: int) -> tuple[list, list]:
    """(this process's chunks, the workers'): the build's own process takes every
    `processes`-th chunk (the first, and so on), its `processes - 1` workers the others."""
    return chunks[::processes], [chunk for i, chunk in enumerate(chunks) if i % processes]


# -- workers forked when rendering starts ----------------------------------------------------------
_render_job: tuple | None = None  # (renderer, pages, sink), inherited by forked render workers


def _render_chunk(bounds: tuple[int, int]) -> list[tuple]:
    """One chunk of pages rendered and handed to the sink (`sink(path, bytes)`); returns what the
    sink returns (the bytes themselves, or what a sink that writes the page returns), which a
    worker sends back."""
    renderer, pages, sink = _render_job  # type: ignore[misc]
    return [(page.path, sink(page.path, renderer.render(page))) for page in pages[bounds[0]:bounds[1]]]


def render_pages(renderer, pages: list, advance=lambda: None, rendered: dict | None = None, sink=None,
                 fork: bool = True, discard=lambda _path: None):
    """Render pages, shared between this process and forked workers when there are many (they
    inherit the catalog) and `fork`.
    `rendered`: pages rendered already (by path), not rendered again. Yields (path, bytes); with
    `sink`, (path, `sink(path, bytes)`) instead, the sink called where the page was rendered, so
    that workers write their own pages rather than send them to this process. The pages of a
    worker that died (killed, out of memory) are rendered here, each after `discard(path)`."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    rendered = rendered or {}
    sink_here = sink or (lambda _path, data: data)
    for path in sorted(set(rendered) & {page.path for page in pages}):
        yield path, sink_here(path, rendered[path])
        advance()
    pages = [page for page in pages if page.path not in rendered]
    workers = worker_count() if fork else 1
    if workers < 2 or len(pages) < PARALLEL_PAGES:
        for page in pages:
            yield page.path, sink_here(page.path, renderer.render(page))
            advance()
        return
    global _render_job
    _render_job = (renderer, pages, sink_here)
    bounds = [(start, min(start + CHUNK, len(pages))) for start in range(0, len(pages), CHUNK)]
    own, theirs = alternate(bounds, workers)
    import gc

    gc.freeze()  # the forked workers share the catalog; keep their collector off its pages
    try:
        with ProcessPoolExecutor(workers - 1, mp_context=multiprocessing.get_context("fork"),
                                 initializer=quiet_worker) as pool:
            done_by_workers = [(chunk, pool.submit(_render_chunk, chunk)) for chunk in theirs]
            for chunk in own:
                for item in _render_chunk(chunk):
                    yield item
                    advance()
            for (start, end), future in done_by_workers:
                try:
                    done = future.result()
                except BrokenProcessPool:
                    done = []
                    for page in pages[start:end]:
                        discard(page.path)
                        done.append((page.path, sink_here(page.path, renderer.render(page))))
                for item in done:
                    yield item
                    advance()
    finally:
        _render_job = None
        gc.unfreeze()


# -- workers forked before the catalog is loaded ----------------------------------------------------
#: in a worker: what it inherited at the fork (root, writer) and the last context it was sent
#: (its digest and (renderer, config, entry records, page records))
_inherited: tuple | None = None
_context: tuple[bytes, tuple] | None = None


def _warm_up(_n: int) -> int:
    return os.getpid()


def links_of(entry, cards: dict, incoming: dict) -> tuple[dict, list]:
    """What `render.entry_page` reads of the site's cards and backlinks for `entry`: the cards of
    the entries it links with, either way, and the links made to it."""
    towards = incoming.get(entry.id, [])
    ids = {r.id for r in entry.related} | {other for other, _relation in towards}
    return {i: cards[i] for i in ids if i in cards}, towards


def _render_entries(digest: bytes, context: bytes, jobs: list[tuple]) -> list[tuple]:
    """In a worker: the pages of `jobs` ([(entry id, its record's key, its page's cache key, its
    `links_of`)]), each entry read from its record, rendered and written where it was rendered.
    Returns, per job, (entry id, the writer's (hash, linked)), or (entry id, None) for an entry
    whose record cannot be read or is not that entry: the build's process renders that page
    itself."""
    global _context
    import pickle

    from ..cache import RecordStore
    from ..entries.catalog import from_record
    from .render import Renderer, entry_page
    from .stamps import ENTRY_RECORDS, PAGE_RECORDS

    root, writer = _inherited  # type: ignore[misc]
    if _context is None or _context[0] != digest:
        config, asset_names, tabs, keep_compiled = pickle.loads(context)
        # the build's process marks the keys of the pages put here used (it looked them all up)
        _context = (digest, (Renderer(config, root, asset_names, tabs, keep_compiled), config,
                             RecordStore(root, ENTRY_RECORDS), RecordStore(root, PAGE_RECORDS)))
    renderer, config, records, page_store = _context[1]
    done: list[tuple] = []
    for entry_id, record_key, key, (cards, towards) in jobs:
        body = records.get(record_key)
        try:
            loaded = from_record(body, config)[0] if body is not None else None
        except ValueError:
            loaded = None
        if loaded is None or loaded.entry.id != entry_id:
            done.append((entry_id, None))
            continue
        loaded.source_key = record_key
        page = entry_page(loaded, config, cards, {entry_id: towards})
        data = renderer.render(page)
        if key is not None:
            page_store.put(key, data)
        done.append((entry_id, writer.put(page.path, data)))
    return done


class EntryPageWorkers:
    """`count` render workers forked now, while this process holds little; `render` gives them
    entry pages to render from the build cache's records. Use as a context manager: leaving it
    stops them."""

    def __init__(self, root: Path, writer, count: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        global _inherited
        self.count = count
        _inherited = (root, writer)
        try:
            self._pool = ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork"),
                                             initializer=quiet_worker)
            # a pool forks its workers at the first task: this one, before anything is loaded
            list(self._pool.map(_warm_up, range(count)))
        finally:
            _inherited = None

    @classmethod
    def start(cls, root: Path, writer, entries: int) -> "EntryPageWorkers | None":
        """Workers for a build of `entries` entry files into `writer`, or None when one process
        renders them all (too few pages, one core, no `fork`)."""
        workers = worker_count()
        if workers < 2 or entries < PARALLEL_PAGES:
            return None
        return cls(root, writer, workers - 1)

    def __enter__(self) -> "EntryPageWorkers":
        return self

    def __exit__(self, *_exc) -> Literal[False]:
        self.close()
        return False

    def close(self) -> None:
        """Stop the workers (a chunk being rendered is finished first; the others are dropped)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, context: tuple, jobs: list[tuple[str, str, str | None, tuple]]) -> list:
        """Start rendering `jobs` ([(entry id, record key, page cache key, `links_of` the entry)])
        in chunks of `CHUNK`; `context` = (config, asset names, content tabs, whether compiled
        templates are kept (`Renderer`)), sent with each chunk and read once per worker. Returns
        (its jobs, a future) per chunk; the future's result is `_render_entries`'s, and its
        `result()` raises a worker's error, or `BrokenProcessPool` when a worker died (killed,
        out of memory)."""
        import hashlib
        import pickle

        data = pickle.dumps(context, protocol=pickle.HIGHEST_PROTOCOL)
        digest = hashlib.sha256(data).digest()
        chunks = [jobs[start:start + CHUNK] for start in range(0, len(jobs), CHUNK)]
        return [(chunk, self._pool.submit(_render_entries, digest, data, chunk)) for chunk in chunks]
