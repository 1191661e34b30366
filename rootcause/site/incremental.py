"""A rebuild after a few entries changed and nothing else did, in proportion to the change.

A full build that used the build cache leaves a *site model* in its state file
(`.rootcause-cache/build-state-*`, beside the list of files it wrote): every entry's stat key and
record key, the cards list pages show, the declared links, every search-term weight by shard key
and the shard names, the length of each entry's share of `signatures.json` (so that a changed
entry's share is spliced into the last file instead of the file being assembled again), the
examples as signatures read them, and the sections of the diagnosis index it stored. Its rows
are cut into buckets (`cache.bucket`), and a rebuild writes only the sections it changed.

`rebuild` uses it when only entry files changed (none added or removed, no other input, the same
code), at most MAX_CHANGED of them, and the site is as the last build left it. It checks the
changed entries alone (`load_entry`) and against the others: their links, their examples
against every other signature (through the model's signature table), the other
examples against their signatures (through the stored example lines), their signatures against
the healthy logs. It writes only the files that differ: their pages, the pages that list or link
to them when what those show changed, the search shards of the terms whose weights changed, the
doc shard, `signatures.json`, the sitemap and feed when they change; then the diagnosis index
and the model. The list pages, the one part that reads every card, are planned and rendered by a
forked child (`forked.Alongside`) while this process does the rest. Whenever it finds anything
to report, or a change it would have to recompute for the whole site (an entry's place in the
search order, an entry gaining or losing signatures), it returns None and the full build runs,
which reports exactly as a cold one does.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields
from itertools import chain
from pathlib import Path

from markupsafe import Markup

from ..cache import (MAX_BUCKETS, Inputs, RecordStore, bucket, bucket_count, bucketed, input_folders, patch_buckets,
                     record_at)
from .. import jsonbytes
from ..collector import paused
from ..forked import Alongside
from ..entries.catalog import (OVERLAP_RELATIONS, LoadedEntry, config_key, entry_record, from_record, load_entry,
                               record_key)
from ..entries.project import healthy_log_paths
from ..files import Refused, read_regular
from ..located_yaml import MAX_FILE_BYTES
from ..matching.anchors import CorruptIndex
from ..matching.signatures import find_matches, parse_text
from . import diagnosis_index
from .diagnosis_index import index_buckets, patched_sections, store_sections, table_sections
from .render import Card, Page, Renderer, aggregate_pages, card_lists, diagnose_page, entry_page
from .search import (
    MANIFEST,
    SIGNATURES,
    consequences_in,
    consequences_of,
    doc_row,
    doc_shard,
    is_search_file,
    manifest_file,
    search_key,
    shard_path,
    signature_address,
    signature_layout,
    signature_parts,
    splice_signature_file,
    term_shards,
)
from .search import DOCS_PER_SHARD
from .stamps import (ENTRY_RECORDS, PAGE_RECORDS, VOLATILE_TEMPLATE, code_store, collect_assets,
                     page_key, render_stamp)
from .write import file_digest, open_state, update_in_place, write_manifest

FORMAT = 5
MAX_SITE_FILE = 1 << 30
#: more changed entries than this: the full build (with the build cache) is about as quick
MAX_CHANGED = 16
#: the model's rows by entry (and its weights by group) are cut into sections (`cache.bucket`),
#: so that a rebuild writes (and hashes) the few its change touched and keeps the others as they are
BY_ENTRY = ("entries", "cards", "related", "examples")
WHOLE = ("model", "weights_index", "siglayout", "plan", "cards_index")
#: the list pages' plan: its index (`plan`) and its pages, a record each, in this many sections
PLAN_BUCKETS = 16
#: the sections of the diagnosis index it stored, under this prefix (the shared ones are the same files)
INDEX = "index."


def section_names(model: dict) -> list[str]:
    """The model's sections: its own, by `model["buckets"]`, and the diagnosis index's."""
    return [*WHOLE, *(f"{kind}.{k}" for kind in (*BY_ENTRY, "weights") for k in range(model["buckets"])),
            *(f"plan.{k}" for k in range(PLAN_BUCKETS)),
            *(INDEX + name for name in diagnosis_index.section_names(model["index_buckets"]) if name != "inputs")]


def per_record(names) -> tuple[str, ...]:
    """The sections whose reader checks each record it uses (a CRC-32 each) instead of the whole."""
    of_index = diagnosis_index.per_record([name[len(INDEX):] for name in names if name.startswith(INDEX)])
    return tuple(name for name in names if name.startswith("weights.")) + tuple(INDEX + name for name in of_index)


@dataclass
class Outcome:
    entries: int
    pages: int
    files: int
    written: int
    checked: int
    rendered: int


def _dump(value) -> bytes:
    return jsonbytes.dumps(value)


def _card_data(card: Card) -> tuple:
    return tuple(card.__dict__.values())   # its fields in order (astuple would deep-copy them)


_CARD_FIELDS = tuple(f.name for f in fields(Card))


def _card(data: list) -> Card:
    """A card from its row, set field by field past the frozen class's `__init__`: a rebuild reads
    10,000 of them, and that `__init__` is half the time."""
    if not isinstance(data, list) or len(data) != len(_CARD_FIELDS):
        raise ValueError("a card row of another shape")
    card = object.__new__(Card)
    values = card.__dict__
    values.update(zip(_CARD_FIELDS, data))
    values["systems"], values["tags"] = tuple(values["systems"]), tuple(values["tags"])
    return card


def _weight_line(group: str, tokens: dict[str, dict[int, float]]) -> bytes:
    """A weight group as one line, tokens and entry numbers in order: the same line whichever
    order a rebuild added them in."""
    return _dump([group, {t: [x for pair in sorted(tokens[t].items()) for x in pair] for t in sorted(tokens)}])


def _weight_sections(lines: dict[str, bytes], count: int, only: set[int] | None = None) -> tuple[dict, dict]:
    """The weight sections (`weights.K`, one line per group) of the buckets in `only` (all by
    default), and their part of the index: group → [bucket, offset, length, CRC-32]."""
    bodies, index = bucketed(lines, count, b"\n", only)
    return {f"weights.{k}": body for k, body in bodies.items()}, index


def _entry_sections(rows: dict[str, dict], count: int, only: set[int] | None = None) -> dict[str, bytes]:
    """The sections of the rows kept by entry (`rows`: kind → id → row) for the buckets in `only`."""
    split: dict[int, list[str]] = {}
    for entry_id in sorted(rows["entries"]):
        split.setdefault(bucket(entry_id, count), []).append(entry_id)
    sections = {}
    for k in range(count) if only is None else sorted(only):
        ids = split.get(k, [])
        for kind in ("entries", "related"):
            sections[f"{kind}.{k}"] = _dump({i: rows[kind][i] for i in ids})
        sections[f"examples.{k}"] = b"\n".join(rows["examples"][i] for i in ids)
    return sections


def _card_sections(cards: dict[str, Card], count: int) -> dict[str, bytes]:
    """The cards, a record each (`cache.bucketed`), in the sections `cards.K`, and their places
    by id in `cards_index`: a rebuild reads the few hundred cards its pages show, not all of them."""
    bodies, places = bucketed({entry_id: _dump(_card_data(card)) for entry_id, card in cards.items()}, count, b"\n")
    return {"cards_index": _dump(places), **{f"cards.{k}": body for k, body in bodies.items()}}


class _CardRecords:
    """The model's cards, each read from its record when asked for (its CRC-32 checked)."""

    def __init__(self, state):
        self._state = state
        self._places: dict | None = None
        self._bodies: dict[int, bytes | None] = {}

    def places(self) -> dict[str, list]:
        if self._places is None:
            places = _json(self._state, "cards_index")
            if not isinstance(places, dict):
                raise _Fallback("cards_index is not a mapping")
            self._places = places
        return self._places

    def body(self, k: int) -> bytes | None:
        if k not in self._bodies:
            self._bodies[k] = self._state.section(f"cards.{k}", verify=False)
        return self._bodies[k]

    def card(self, entry_id: str) -> Card:
        place = self.places().get(entry_id)
        record = record_at(self.body(place[0]), place) if place else None
        if record is None:
            raise _Fallback(f"no card of {entry_id}, or a damaged one")
        return _card(jsonbytes.loads(record))

    def every(self, ids: list[str]) -> dict[str, Card]:
        """Every card, in the catalog's order."""
        if len(self.places()) != len(ids):
            raise _Fallback("the cards are not the model's entries")
        return {entry_id: self.card(entry_id) for entry_id in ids}

    def sections_with(self, cards: dict[str, Card], count: int) -> dict[str, bytes]:
        """`_card_sections` with these cards in place of their records, made from the places and
        bodies already read: the sections of the buckets they are in, and `cards_index`."""
        bodies, places = patch_buckets(self.places(), self.body, {i: _dump(_card_data(c)) for i, c in cards.items()},
                                       set(), count, b"\n")
        return {"cards_index": _dump(places), **{f"cards.{k}": body for k, body in bodies.items()}}


# -- what a full build leaves ---------------------------------------------------------------------
def model_sections(project, version: str, others: str, keep: dict, parts: dict, index: dict[str, bytes],
                   cards: dict[str, Card], pages: int, plan: list[Page]) -> dict[str, bytes]:
    """The site model's sections, from a full build's catalog and what its index stage kept
    (`keep`: `build_search_files`'s order, weights and shard names; `parts`: `signature_parts` by
    id; `index`: the sections of the diagnosis index it stored, a copy the model owns, so that an
    index stored meanwhile by `check` or `diagnose` changes nothing here: the rebuild patches this
    copy, and the index's shared sections are the same files; `cards`: by id; `plan`: the pages
    `render.aggregate_pages` planned, kept as `plan_sections` says)."""
    from .feeds import feed_key, newest

    catalog = project.catalog
    stats = project.inputs.stats if project.inputs is not None else {}
    rows: dict[str, dict] = {kind: {} for kind in BY_ENTRY}
    for entry_id, loaded in catalog.entries.items():
        e = loaded.entry
        key = stats.get(loaded.path)
        rows["entries"][entry_id] = [loaded.path, list(key) if key else None, loaded.source_key,
                                     e.reviewed.isoformat(), e.published.isoformat()]
        rows["related"][entry_id] = [[r.id, r.relation] for r in e.related]
        rows["examples"][entry_id] = _dump([entry_id, catalog.example_lines.get(entry_id, "")])
    count = bucket_count(len(catalog.entries))
    weights, weights_index = _weight_sections({group: _weight_line(group, tokens)
                                               for group, tokens in keep["weights"].items()}, count)
    model = {"format": FORMAT, "version": version, "others": others, "config": config_key(catalog.config),
             "order": keep["order"], "shards": keep["shards"], "doc_shards": keep["doc_shards"], "pages": pages,
             "buckets": count, "ids": list(catalog.entries), "index_buckets": index_buckets(index),
             "feed": newest({entry_id: feed_key(loaded.entry.reviewed.isoformat(), loaded.entry.published.isoformat(),
                                                entry_id) for entry_id, loaded in catalog.entries.items()})}
    return {"model": _dump(model), "weights_index": _dump(dict(sorted(weights_index.items()))),
            "siglayout": _dump(signature_layout(parts)), **plan_sections(plan, catalog.config),
            **_card_sections({entry_id: cards[entry_id] for entry_id in catalog.entries}, count),
            **_entry_sections(rows, count), **weights, **{INDEX + name: body for name, body in index.items()}}


# -- the list pages' plan -------------------------------------------------------------------------
#: what a page's context holds besides cards, plain values, lists, tuples and dicts: the site's
#: vocabulary terms (kept by name: `config.vocabularies.<kind>[key]`)
_VOCABULARIES = ("categories", "systems", "tags", "phases", "severities")


class _Unstorable(Exception):
    """A context holding something the plan cannot keep (the frequency page's study rows)."""


def plan_sections(plan: list[Page], config) -> dict[str, bytes]:
    """The pages of a plan that show cards (the home page, the entries index, the category, tag
    and system lists), each with its context as JSON and its cards by id, and by entry the pages
    that show it: what a rebuild needs to render again the pages of a card that keeps its place
    on every list, without reading every card and planning every list again. Each page is a
    record (`cache.bucketed`) in one of the sections `plan.K`; `plan` holds their paths, their
    places and, by entry, the numbers of the pages showing it. `plan` is `null` when a page that
    shows cards holds anything else than cards, vocabulary terms and plain data (a site with a
    study: its frequency page shows every card): such a rebuild plans the lists."""
    terms = {id(term): [kind, key] for kind in _VOCABULARIES
             for key, term in getattr(config.vocabularies, kind).items()}
    records: dict[str, bytes] = {}
    shown: dict[str, list[str]] = {}
    for page in plan:
        ids: dict[str, None] = {}
        try:
            context = _encode(page.context, terms, ids)
        except _Unstorable:
            if _holds_card(page.context, 0):
                return {"plan": _dump(None), **{f"plan.{k}": b"" for k in range(PLAN_BUCKETS)}}
            continue   # a page that shows no card (a content page) needs no keeping
        if ids and page.template != VOLATILE_TEMPLATE:
            records[page.path] = _dump([page.template, page.title, page.description, page.sitemap, page.absolute,
                                        context])
            for entry_id in ids:
                shown.setdefault(entry_id, []).append(page.path)
    bodies, places = bucketed(records, PLAN_BUCKETS, b"\n")
    paths = list(places)
    number = {path: n for n, path in enumerate(paths)}
    index = {"paths": paths, "places": [places[path] for path in paths],
             "shown": {entry_id: [number[path] for path in shown[entry_id]] for entry_id in sorted(shown)}}
    return {"plan": _dump(index), **{f"plan.{k}": body for k, body in bodies.items()}}


def _kept_pages(state, plan: dict, entry_ids: list[str], cards, vocabularies) -> list[Page]:
    """The pages the kept plan says show these entries, their contexts made with `cards`."""
    pages = []
    bodies: dict[int, bytes | None] = {}
    for n in dict.fromkeys(n for entry_id in entry_ids for n in plan["shown"].get(entry_id, [])):
        place = plan["places"][n]
        if place[0] not in bodies:
            bodies[place[0]] = state.section(f"plan.{place[0]}", verify=False)   # each record has its CRC-32
        record = record_at(bodies[place[0]], place)
        if record is None:
            raise _Fallback(f"the plan's page {n} is damaged")
        template, title, description, sitemap, absolute, context = jsonbytes.loads(record)
        pages.append(Page(plan["paths"][n], template, title, description, _decode(context, cards, vocabularies),
                          sitemap, absolute))
    return pages


def _holds_card(value, depth: int) -> bool:
    """Might this value hold a card, at any depth, in any container or object's attributes?
    (Deeper than anything a template is given, or an object that hides its attributes: yes.)"""
    if isinstance(value, Card) or depth > 32:
        return True
    if value is None or isinstance(value, (str, bytes, int, float)):
        return False
    if isinstance(value, dict):
        return any(_holds_card(item, depth + 1) for item in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_card(item, depth + 1) for item in value)
    attributes = getattr(value, "__dict__", None)
    if attributes is None or getattr(type(value), "__slots__", ()):
        return True
    return any(_holds_card(item, depth + 1) for item in attributes.values())


def _encode(value, terms: dict[int, list[str]], ids: dict[str, None]):
    """A context value as JSON: a card as its id after a NUL (collected in `ids`), terms by name,
    tuples, markup and a text that starts with NUL marked as such (by a key that starts with NUL,
    which no other key does)."""
    kind = type(value)
    if kind is Card:
        ids[value.id] = None
        return "\0" + value.id
    if kind is str:
        return {"\0text": value} if value.startswith("\0") else value
    if kind is int or kind is bool or value is None or kind is float and math.isfinite(value):
        return value   # (JSON has no NaN or infinity: such a float is not kept)
    if kind is list:
        return [_encode(item, terms, ids) for item in value]
    if kind is tuple:
        return {"\0tuple": [_encode(item, terms, ids) for item in value]}
    if kind is Markup:
        return {"\0markup": str(value)}
    if kind is dict and all(type(key) is str and not key.startswith("\0") for key in value):
        return {key: _encode(item, terms, ids) for key, item in value.items()}
    if id(value) in terms:
        return {"\0term": terms[id(value)]}
    raise _Unstorable(kind.__name__)


def _decode(value, cards, vocabularies):
    """`_encode` undone, each card taken from `cards` and each term from the site's vocabularies."""
    kind = type(value)
    if kind is str:
        return cards[value[1:]] if value.startswith("\0") else value
    if kind is list:
        return [_decode(item, cards, vocabularies) for item in value]
    if kind is not dict:
        return value
    if len(value) == 1:
        (key, item), = value.items()
        if key == "\0text":
            return item
        if key == "\0tuple":
            return tuple(_decode(x, cards, vocabularies) for x in item)
        if key == "\0markup":
            return Markup(item)
        if key == "\0term":
            return getattr(vocabularies, item[0])[item[1]]
    return {key: _decode(item, cards, vocabularies) for key, item in value.items()}


# -- the rebuild ----------------------------------------------------------------------------------
@dataclass
class _Change:
    """The changed entries, old and new, and the site-wide data they are set against."""

    fresh: dict[str, LoadedEntry]       # by id, as the files are now
    before: dict[str, LoadedEntry]      # the same, as the last build had them
    entries: dict[str, list]            # the model's rows: path, stat key, record key, reviewed, published
    related: _Links                             # every entry's links, the changed ones' new
    old_loaded: Callable[[str], LoadedEntry]    # an unchanged entry from the build cache
    cards: _Cards                               # every card, the changed ones' new, read as asked for


class _Links:
    """Every entry's links, (target, relation) pairs: the changed entries' as they are now, the
    others' as the model has them, read a bucket at a time as they are asked for. A summary edit
    needs the changed entries' buckets alone; every link is read only for a step that needs them
    all (a link or a signature changed, or the entry pages are rendered in this process)."""

    def __init__(self, state, model: dict, fresh: dict[str, LoadedEntry]):
        self._state, self._model = state, model
        self.now = {entry_id: [(r.id, r.relation) for r in loaded.entry.related] for entry_id, loaded in fresh.items()}
        self._buckets: dict[int, dict] = {}
        self._every: dict[bool, dict] = {}

    def before(self, entry_id: str) -> list[tuple[str, str]]:
        """The entry's links as the last build had them."""
        row = self._bucket(bucket(entry_id, self._model["buckets"])).get(entry_id)
        if not isinstance(row, list):
            raise _Fallback(f"no links of {entry_id} in the model")
        return [tuple(link) for link in row]

    def __getitem__(self, entry_id: str) -> list[tuple[str, str]]:
        return self.now[entry_id] if entry_id in self.now else self.before(entry_id)

    def every(self, before: bool = False) -> dict[str, list[tuple[str, str]]]:
        """Every entry's links, in the catalog's order (`before`: the changed ones' too as they were)."""
        if before not in self._every:
            links = {entry_id: [tuple(link) for link in row]
                     for entry_id, row in _by_entry(self._state, self._model, "related").items()}
            if not before:
                links.update(self.now)
            self._every[before] = links
        return self._every[before]

    def _bucket(self, k: int) -> dict:
        if k not in self._buckets:
            self._buckets[k] = _bucket_rows(self._state, "related", k)
        return self._buckets[k]


class _Fallback(Exception):
    """The model cannot answer this change: the full build runs."""


def _section(state, name: str) -> bytes:
    data = state.section(name)
    if data is None:
        raise _Fallback(f"section {name} missing or damaged")
    return data


def _json(state, name: str):
    data = state.section(name)
    if data is None:
        raise _Fallback(f"section {name} missing or damaged")
    try:
        return jsonbytes.loads(data)
    except (ValueError, RecursionError):
        raise _Fallback(f"section {name} is not JSON") from None


def _bucket_rows(state, kind: str, k: int) -> dict:
    """The rows of one kind that bucket `k` holds, by entry id."""
    part = _json(state, f"{kind}.{k}")
    if not isinstance(part, dict):
        raise _Fallback(f"section {kind}.{k} is not a mapping")
    return part


def _by_entry(state, model: dict, kind: str) -> dict:
    """Every entry's row of one kind, in the catalog's order (the order a full build has them in)."""
    merged: dict = {}
    for k in range(model["buckets"]):
        merged.update(_bucket_rows(state, kind, k))
    if len(merged) != len(model["ids"]):
        raise _Fallback(f"the {kind} rows are not the model's entries")
    return {entry_id: merged[entry_id] for entry_id in model["ids"]}


def _kept(state, names) -> dict:
    """The sections named, as the state file has them (written again by reference)."""
    sections = {}
    for name in names:
        sections[name] = state.kept(name)
        if sections[name] is None:
            raise _Fallback(f"section {name} missing")
    return sections


def rebuild(root: Path, out: Path, config, fingerprint: str, others: str, manifest: dict, intact: Alongside,
            timings=None, inputs: Inputs | None = None) -> Outcome | None:
    """Rebuild `out` for the entry files changed since the last build, or None when only a
    full build can (see the module's docstring). `fingerprint` and `others`: the inputs'
    (`stamps.input_fingerprints`), taken before the output's lock, which the caller holds;
    `manifest`: the state of the last build (`write.read_manifest`, read under that lock);
    `intact`: `write.output_intact` of it, being proven (nothing is written before its answer);
    `inputs`: the inputs that walk saw (`builder._walk`; taken again if site.yml names other
    input folders), their stat keys what the model is compared with."""
    from ..timings import OFF

    state = open_state(out, root)
    if state is None:
        return None
    try:
        with paused():   # the model is millions of small objects (see `collector`)
            return _rebuild(root, out, config, fingerprint, others, state, manifest, intact, timings or OFF, inputs)
    except (_Fallback, CorruptIndex, KeyError, IndexError, TypeError, ValueError, OSError) as exc:
        # a model this code cannot read is never trusted, and a file of the site that cannot be
        # read back (gone since it was checked) is rewritten: the full build runs
        if os.environ.get("ROOTCAUSE_EXPLAIN_REBUILD"):
            print(f"full build: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None
    finally:
        state.close()


def _rebuild(root: Path, out: Path, config, fingerprint: str, others: str, state, manifest: dict,
             intact: Alongside, timings, inputs: Inputs | None) -> Outcome:
    with timings.stage("load"):
        model = _json(state, "model")
        # `others` covers every module of the package, the bundled theme, Python and the folders
        # of the cached libraries (`stamps.input_fingerprints`): the same, this is the code the
        # model was made by, as the up-to-date test trusts; its version is not computed again
        # (the libraries' metadata read: 9 ms)
        if not isinstance(model, dict) or model.get("format") != FORMAT or not isinstance(model.get("version"), str) or \
                model.get("others") != others or model.get("config") != config_key(config) or \
                not all(isinstance(model.get(name), int) and 1 <= model[name] <= MAX_BUCKETS
                        for name in ("buckets", "index_buckets")) or not isinstance(model.get("ids"), list) or \
                not isinstance(model.get("feed"), list):
            raise _Fallback("the model was made by other code or for other inputs")
        version = model["version"]
        folders = input_folders(config)
        # taken before any entry was read
        now = inputs if inputs is not None and inputs.folders == folders else Inputs.take(root, folders)
        old_entries = _by_entry(state, model, "entries")
        by_path = {row[0]: entry_id for entry_id, row in old_entries.items()}
        present = {name for name in now.stats if name.startswith("entries/") and name != "entries/"}
        if present != set(by_path):
            raise _Fallback("an entry file was added or removed")
        changed = [by_path[name] for name in sorted(present)
                   if list(now.stats[name] or ()) != (old_entries[by_path[name]][1] or [])]
        if not changed or len(changed) > MAX_CHANGED:
            raise _Fallback(f"{len(changed)} entry files changed (in place: 1 to {MAX_CHANGED}, and nothing else)")
    return _rebuild_changed(root, out, config, fingerprint, state, timings, model, manifest, version, now,
                            old_entries, changed, intact)


def _intact(intact: Alongside) -> None:
    if not intact.result():
        raise _Fallback("the site is not as the last build left it")


def _rebuild_changed(root: Path, out: Path, config, fingerprint: str, state, timings, model: dict, manifest: dict,
                     version: str, now: Inputs, old_entries: dict[str, list], changed: list[str],
                     intact: Alongside) -> Outcome:
    entry_store = RecordStore(root, ENTRY_RECORDS)
    settings = config_key(config)

    def old_loaded(entry_id: str) -> LoadedEntry:
        body = entry_store.get(old_entries[entry_id][2])
        if body is None:
            raise _Fallback(f"no record of {entry_id}")
        try:
            loaded = from_record(body, config)[0]
        except ValueError:
            raise _Fallback(f"the record of {entry_id} cannot be read") from None
        if loaded is None:
            raise _Fallback(f"the record of {entry_id} holds no entry")
        loaded.source_key = old_entries[entry_id][2]
        return loaded

    with timings.stage("validate"):
        fresh: dict[str, LoadedEntry] = {}
        before: dict[str, LoadedEntry] = {}
        keys: dict[str, str] = {}
        for entry_id in changed:
            shown = old_entries[entry_id][0]
            try:
                raw = read_regular(root / shown, MAX_FILE_BYTES)
            except (Refused, OSError) as exc:
                raise _Fallback(f"{shown} cannot be read: {exc}") from None
            keys[entry_id] = key = record_key(shown, raw, settings, version)
            if key == old_entries[entry_id][2]:
                continue   # touched, not changed
            loaded, problems = load_entry(root / shown, root, config, raw)
            if problems or loaded is None or loaded.entry.id != entry_id:
                raise _Fallback(f"{shown} has something to report")
            old = old_loaded(entry_id)
            if search_key(loaded) != search_key(old) or bool(loaded.signatures) != bool(old.signatures):
                raise _Fallback(f"{shown} moved in the search order or gained or lost its signatures")
            loaded.source_key = key
            fresh[entry_id] = loaded
            before[entry_id] = old

    if not fresh:   # touched, not changed: only the recorded stat keys and the inputs' fingerprint are new
        with timings.stage("write"):
            _intact(intact)
            for entry_id in changed:
                stat = now.stats[old_entries[entry_id][0]]
                old_entries[entry_id][1] = list(stat) if stat else None
            names = section_names(model)
            count = model["buckets"]
            touched = {bucket(entry_id, count) for entry_id in changed}
            sections = {f"entries.{k}": _dump({i: row for i, row in old_entries.items() if bucket(i, count) == k})
                        for k in touched}
            sections.update(_kept(state, [name for name in names if name not in sections]))
            write_manifest(out, root, {**manifest, "inputs": fingerprint}, {name: sections[name] for name in names},
                           per_record=per_record(names))
        return Outcome(len(old_entries), model["pages"], len(manifest["files"]), 0, 0, 0)

    with timings.stage("index"):
        cards = _Cards(state, model, {entry_id: Card.of(loaded) for entry_id, loaded in fresh.items()})
        pages_in = _page_inputs(root, config, manifest)
        # the list pages a changed card is on, rendered by a forked child while the rest is
        # checked and worked out here (from the kept plan and the cards its pages show, or, when
        # a card moved, from every card planned again; it is the longest piece of the rebuild, so
        # it starts first, and is reaped unused if the checks below find something to report);
        # no card changed, no list page can
        lists = Alongside(lambda: _pages_beside(state, model, config, root, version, fresh, before, cards,
                                                old_loaded, pages_in)) \
            if any(card != cards.old(entry_id) for entry_id, card in cards.new.items()) else None
    try:
        related = _Links(state, model, fresh)
        with timings.stage("cross-check"):
            links_changed = False
            for entry_id, loaded in fresh.items():
                links_changed |= related[entry_id] != related.before(entry_id)
                if any(r.id == entry_id or r.id not in old_entries for r in loaded.entry.related):
                    raise _Fallback(f"{entry_id} links to itself or to no entry")
            # E035 and E036 read an entry's signatures (examples included) and its links alone: an
            # edit that kept both, in every changed entry, cannot change what they report
            if any(_matching_changed(loaded, before[entry_id]) for entry_id, loaded in fresh.items()) and \
                    (_collides(state, model, fresh, related.every(), old_loaded) or _healthy_match(root, config, fresh)):
                raise _Fallback("a changed signature collides or matches a healthy log")

        files: dict[str, bytes] = {}
        removed: set[str] = set()
        with timings.stage("index"):
            # signatures.json: the last one, its changed entries' parts put in place of the old
            parts = {entry_id: signature_parts(loaded) for entry_id, loaded in fresh.items()}
            old_signature_file = _site_file(out, manifest, SIGNATURES)
            # the declared consequences: those the last signatures.json holds, unless a link changed
            if links_changed:
                old_consequences, consequences = consequences_of(related.every(before=True)), \
                    consequences_of(related.every())
            else:
                old_consequences = consequences = consequences_in(old_signature_file)
            layout = _json(state, "siglayout")
            spliced = splice_signature_file(old_signature_file, layout, old_consequences, consequences, parts)
            if spliced is None:
                raise _Fallback("signatures.json is not laid out as the model says")
            signature_file, old_parts = spliced
            same_signatures = all(parts[i][0] == old_parts[i][0] for i in fresh)
            number = {entry_id: n for n, entry_id in enumerate(layout["ids"])}
            for entry_id, (sigs, row) in parts.items():
                layout["sigs"][number[entry_id]] = len(sigs)
                layout["rows"][number[entry_id]] = len(row) if row is not None else -1
            files[SIGNATURES] = signature_file
            digests = {SIGNATURES: file_digest(signature_file)}   # 13 MB at 10,000 entries: hashed once
            signature_file_changed = manifest["files"].get(SIGNATURES) != digests[SIGNATURES]
            change = _Change(fresh, before, old_entries, related, old_loaded, cards)
            weights_blob = _search_update(out, manifest, state, model, change, files, removed, config.base_url)

        with timings.stage("render"):
            # the entry pages too, unless the child renders them
            rendered, model["feed"] = _render(root, config, version, digests[SIGNATURES], signature_file_changed,
                                              change, pages_in, files, model["feed"], entry_pages=lists is None)

        # what needs nothing of the list pages is done before their child is waited for: the
        # search files are all made (the child makes none), and so is every row of the model
        with timings.stage("index"):
            index = patched_sections(
                state, INDEX, rows={i: row for i, (_sigs, row) in parts.items()},
                files={path: body for path, body in files.items() if is_search_file(path)},
                removed={path for path in removed if is_search_file(path)}, consequences=consequences,
                table=None if same_signatures else table_sections(jsonbytes.loads(signature_file)))
            _intact(intact)
            # stored by a forked child while the site and the model are written here
            stored = Alongside(lambda: store_sections(root, now, config.base_url, index))
        try:
            with timings.stage("write"):
                for entry_id, loaded in fresh.items():
                    entry_store.put(keys[entry_id], entry_record((loaded, [])))
                for entry_id in changed:
                    row = old_entries[entry_id]
                    stat = now.stats[row[0]]
                    row[1], row[2] = list(stat) if stat else None, keys[entry_id]
                    if entry_id in fresh:
                        e = fresh[entry_id].entry
                        row[3], row[4] = e.reviewed.isoformat(), e.published.isoformat()
                sections = _updated_sections(state, model, changed, old_entries, cards, related, layout, fresh,
                                             weights_blob, index)
                _hash_new(files, digests)   # this process's files, while the child may still work
            with timings.stage("render"):
                (list_files, gone, listed, plan), (entry_files, entries_rendered) = lists.result() \
                    if lists is not None else (({}, set(), 0, None), ({}, 0))
                files.update(list_files)
                files.update(entry_files)
                rendered += listed + entries_rendered
                model["pages"] += sum(path not in manifest["files"] for path in files if path.endswith(".html")) - \
                    len(gone)
                removed |= gone
            with timings.stage("write"):
                sections["model"] = _dump(model)   # with the page count the list pages changed
                sections.update(plan or {})
                _hash_new(files, digests)
                changed_files = {path: body for path, body in files.items()
                                 if manifest["files"].get(path) != digests[path]}
                removed -= set(files)
                new_state = update_in_place(out, manifest, changed_files, removed, digests)
                new_state["inputs"] = fingerprint
                # the shared sections this file no longer names are pruned by the child storing
                # the diagnosis index (its own `write_cache`), off this process's path; those it
                # still finds named in the state file as it was go at the next rebuild
                write_manifest(out, root, new_state, sections, per_record=per_record(sections), prune=False)
                stored.result()
        finally:
            stored.close()
        return Outcome(len(old_entries), model["pages"], len(new_state["files"]), len(changed_files), len(fresh),
                       rendered)
    finally:
        if lists is not None:
            lists.close()


def _hash_new(files: dict[str, bytes], digests: dict[str, str]) -> None:
    """The hash of each file not hashed yet."""
    for path, body in files.items():
        if path not in digests:
            digests[path] = file_digest(body)


def _matching_changed(loaded: LoadedEntry, old: LoadedEntry) -> bool:
    """Did the edit change what the collision and healthy-log checks read of the entry?"""
    return loaded.entry.signatures != old.entry.signatures or \
        [(r.id, r.relation) for r in loaded.entry.related] != [(r.id, r.relation) for r in old.entry.related]


def _allowed(entry_id: str, related: dict[str, list[tuple[str, str]]]) -> set[str]:
    """The entries that may share log lines with `entry_id`: related to it, either way, by a
    relation that says so (`catalog.OVERLAP_RELATIONS`)."""
    allowed = {other for other, relation in related.get(entry_id, []) if relation in OVERLAP_RELATIONS}
    allowed.update(other for other, links in related.items()
                   if any(target == entry_id and relation in OVERLAP_RELATIONS for target, relation in links))
    return allowed


def _collides(state, model: dict, fresh: dict[str, LoadedEntry], related: dict, old_loaded) -> bool:
    """Would the full check report E035 for a changed entry, one way or the other?"""
    from ..matching.anchors import SignatureTable

    table = SignatureTable.from_records(_json(state, INDEX + "table"),
                                        lambda: state.section(INDEX + "records", verify=False))
    allowed = {entry_id: _allowed(entry_id, related) for entry_id in fresh}
    # the changed entries' examples against every other signature
    for entry_id, loaded in fresh.items():
        others = [sig for other_id, other in fresh.items() if other_id != entry_id and other_id not in allowed[entry_id]
                  for sig in other.signatures]
        for signature in loaded.entry.signatures:
            for example in signature.example_logs:
                numbered = parse_text(example)
                tried: set[int] = set()
                for _n, line in numbered:
                    for anchor in table.candidate_anchors(line.text):
                        for number in table.by_anchor[anchor]:
                            if number in tried:
                                continue
                            tried.add(number)
                            sig = table.signature(number)
                            if sig.entry_id in fresh or sig.entry_id in allowed[entry_id]:
                                continue
                            if find_matches(sig, numbered):
                                return True
                if any(find_matches(sig, numbered) for sig in others):
                    return True
    # every other entry's examples against the changed signatures: the stored example lines tell
    # which entries hold a signature's first anchor; only those are read and matched (the anchor
    # escaped by the encoder that wrote those lines, as a JSON string without its quotes)
    needles = {entry_id: {_dump(anchor)[1:-1] for sig in loaded.signatures
                          for anchor in [sig.steps[0].anchor] + ([sig.core] if sig.core else [])}
               for entry_id, loaded in fresh.items()}
    wanted: dict[str, set[str]] = {}
    for line in _example_lines(state, model):
        hits = [entry_id for entry_id, words in needles.items() if any(word in line for word in words)]
        if hits:
            other_id = _line_id(line)
            for entry_id in hits:
                if other_id not in fresh and other_id not in allowed[entry_id]:
                    wanted.setdefault(other_id, set()).add(entry_id)
    for other_id, against in sorted(wanted.items()):
        other = old_loaded(other_id)
        signatures = [sig for entry_id in sorted(against) for sig in fresh[entry_id].signatures]
        for signature in other.entry.signatures:
            for example in signature.example_logs:
                numbered = parse_text(example)
                if any(find_matches(sig, numbered) for sig in signatures):
                    return True
    return False


def _example_lines(state, model: dict, only: set[int] | None = None):
    """The model's example lines (`[id, text]`, one per entry), of the buckets in `only` (all by default)."""
    for k in range(model["buckets"]) if only is None else sorted(only):
        blob = _section(state, f"examples.{k}")
        if blob:
            yield from blob.split(b"\n")


def _line_id(line: bytes) -> str:
    """The id of an example line, `["<id>",...` (ids are kebab-case: nothing to unescape)."""
    return line[2:line.index(b'"', 2)].decode("utf-8")


def _healthy_match(root: Path, config, fresh: dict[str, LoadedEntry]) -> bool:
    """Would the full check report E036: does a changed signature match a healthy log?"""
    if not config.healthy_logs:
        return False
    from ..matching.scanner import Scanner

    logs, refused = healthy_log_paths(root, config.healthy_logs)
    if refused:
        return True
    signatures = [sig for loaded in fresh.values() for sig in loaded.signatures]
    if not signatures or not logs:
        return False
    scanner = Scanner(signatures)
    return any(scanner.scan_paths([log]).matches for log in logs)


def _site_file(out: Path, manifest: dict, path: str) -> bytes:
    """A file of the site as the last build wrote it (its hash checked against the state's)."""
    try:
        body = read_regular(out / path, MAX_SITE_FILE)
    except (Refused, OSError):
        raise _Fallback(f"{path} cannot be read") from None
    if file_digest(body) != manifest["files"].get(path):
        raise _Fallback(f"{path} is not the one the last build wrote")
    return body


def _search_update(out: Path, manifest: dict, state, model: dict, change: _Change, files: dict, removed: set,
                   base_url: str) -> dict:
    """The search files one change touches: the shards of the tokens whose weights changed (each
    two-character group recomputed whole), the doc shards of the changed entries (the last build's,
    their rows put in place), the manifest. Returns the changed weight groups, by group, for the
    model."""
    fresh, before, cards = change.fresh, change.before, change.cards
    order = model["order"]
    number = {entry_id: n for n, entry_id in enumerate(order)}
    n = len(order)
    index = _json(state, "weights_index")
    touched: dict[str, set[str]] = {}
    for entry_id, loaded in fresh.items():
        old, new = before[entry_id].search_weights, loaded.search_weights
        for token in old.keys() | new.keys():
            if old.get(token) != new.get(token):
                touched.setdefault(token[:2], set()).add(token)
    groups = {}
    for key in sorted(touched):
        group: dict[str, dict[int, float]] = {}
        if key in index:
            k = index[key][0]
            blob = state.section(f"weights.{k}", verify=False)
            if blob is None:
                raise _Fallback(f"weights.{k} damaged")
            line = record_at(blob, index[key])
            if line is None:
                raise _Fallback(f"weights of {key} damaged")
            found_key, tokens = jsonbytes.loads(line)
            if found_key != key:
                raise _Fallback(f"weights of {key} misplaced")
            group = {t: dict(zip(flat[::2], flat[1::2])) for t, flat in tokens.items()}
        for entry_id, loaded in fresh.items():
            doc = number[entry_id]
            for token in touched[key]:
                weight = loaded.search_weights.get(token)
                if weight is not None:
                    group.setdefault(token, {})[doc] = weight
                elif token in group:
                    group[token].pop(doc, None)
                    if not group[token]:
                        del group[token]
        groups[key] = group
        names = {}
        for shard, data in term_shards(group, key, n).items():
            name = shard_path(shard, data)
            files[name] = data
            names[shard] = name[len("search/"):]
        removed.update("search/" + name for name in model["shards"].get(key, {}).values())
        if names:
            model["shards"][key] = names
        else:
            model["shards"].pop(key, None)
    doc_shards = model["doc_shards"]
    for shard in sorted({number[entry_id] // DOCS_PER_SHARD for entry_id in fresh}):
        ids = order[shard * DOCS_PER_SHARD:(shard + 1) * DOCS_PER_SHARD]
        rows = jsonbytes.loads(_site_file(out, manifest, "search/" + doc_shards[shard]))
        if not isinstance(rows, list) or [row[0] if isinstance(row, list) and row else None for row in rows] != ids:
            raise _Fallback(f"doc shard {shard} does not list the model's entries")
        rows = [doc_row(i, cards[i].title, cards[i].summary, cards[i].severity, cards[i].category) if i in fresh
                else row for i, row in zip(ids, rows)]
        name, data = doc_shard(shard, rows)
        removed.add("search/" + doc_shards[shard])
        files[name] = data
        doc_shards[shard] = name[len("search/"):]
    files[MANIFEST] = manifest_file(n, {shard: name for names in model["shards"].values()
                                        for shard, name in names.items()}, doc_shards, base_url)
    return groups


class _Cards:
    """Every card by id, the changed entries' new ones in `new`, the others read from their
    records in the model as they are asked for: the entry pages of a change show a few."""

    def __init__(self, state, model: dict, new: dict[str, Card]):
        self.new = new
        self._records, self._ids, self._count = _CardRecords(state), set(model["ids"]), model["buckets"]
        self._old: dict[str, Card] = {}

    def __contains__(self, entry_id: str) -> bool:
        return entry_id in self._ids

    def __getitem__(self, entry_id: str) -> Card:
        return self.new[entry_id] if entry_id in self.new else self.old(entry_id)

    def old(self, entry_id: str) -> Card:
        """The card as the last build had it."""
        if entry_id not in self._old:
            self._old[entry_id] = self._records.card(entry_id)
        return self._old[entry_id]

    def every(self, ids: list[str]) -> dict[str, Card]:
        """Every card as the last build had it, in the catalog's order."""
        return self._records.every(ids)

    def sections(self) -> dict[str, bytes]:
        """The model's card sections with the new cards in place (those of the buckets they are in)."""
        return self._records.sections_with(self.new, self._count)


@dataclass
class _PageInputs:
    """What every page is rendered with besides its own context."""

    asset_names: dict[str, str]     # signatures.json at the last build's address
    content_pages: list
    tabs: list[tuple[str, str]]
    study: list


def _page_inputs(root: Path, config, manifest: dict) -> _PageInputs:
    from ..entries.study import load_study
    from .content import load_content

    asset_names, _files = collect_assets(root, config)
    asset_names["signatures.json"] = signature_address(manifest["files"].get(SIGNATURES, ""))
    content_pages, problems = load_content(root)
    if problems:
        raise _Fallback("content pages have problems")
    study = load_study(root, config)[0] if config.study else []
    return _PageInputs(asset_names, content_pages, [(c.slug, c.tab) for c in content_pages if c.tab], study)


def _render(root: Path, config, version: str, signature_digest: str, signature_file_changed: bool, change: _Change,
            inputs: _PageInputs, files: dict, old_top: list[str], entry_pages: bool = True) -> tuple[int, list[str]]:
    """The pages a change shows on besides the lists: with `entry_pages`, those of `_entry_pages`
    (else a forked child renders them beside the rest); the diagnose page when signatures.json
    changed; the feed if what it lists changed. Returns how many pages were rendered (the others
    came from the page cache), and the entries the feed lists (`feeds.newest`; `old_top`: those
    it listed). The list pages and the sitemap are the child's (`_list_pages`)."""
    fresh, old_entries, old_loaded = change.fresh, change.entries, change.old_loaded

    from .feeds import atom, feed_key, newest

    rendered = 0
    if entry_pages:
        made, rendered = _entry_pages(root, config, version, fresh, change.before, change.cards,
                                      change.related.every(), old_loaded, inputs)
        files.update(made)
    if signature_file_changed:
        asset_names = {**inputs.asset_names, "signatures.json": signature_address(signature_digest)}
        stamp = render_stamp(root, config, asset_names, inputs.tabs, version)
        if stamp[0] == stamp[1]:
            raise _Fallback("a template besides diagnose.html names signatures.json: every page changes with it")
        page = diagnose_page(config)
        files[page.path] = Renderer(config, root, asset_names, inputs.tabs, keep_compiled=True).render(page)
        rendered += 1
    # the feed: the model's newest entries, ordered again from every entry's dates only when a
    # changed entry's dates changed
    dated = {entry_id: feed_key(loaded.entry.reviewed.isoformat(), loaded.entry.published.isoformat(), entry_id)
             for entry_id, loaded in fresh.items()}
    top = old_top
    if any(feed_key(old_entries[entry_id][3], old_entries[entry_id][4], entry_id) != key
           for entry_id, key in dated.items()):
        keys = {entry_id: feed_key(row[3], row[4], entry_id) for entry_id, row in old_entries.items()}
        keys.update(dated)
        top = newest(keys)
    if (set(old_top) | set(top)) & set(fresh):
        files["feed.xml"] = atom(config, [fresh[i] if i in fresh else old_loaded(i) for i in top])
    return rendered, top


def _pages_beside(state, model: dict, config, root: Path, version: str, fresh: dict[str, LoadedEntry],
                  before: dict[str, LoadedEntry], cards, old_loaded,
                  inputs: _PageInputs) -> tuple[tuple, tuple[dict[str, bytes], int]]:
    """What the forked child makes beside the rebuild: the list pages (`_list_pages`) and the
    entry pages (`_entry_pages`, with every entry's links read here: forked first, the child
    ends sooner reading them itself than waiting for the parent to), with one renderer."""
    renderer = Renderer(config, root, inputs.asset_names, inputs.tabs, keep_compiled=True)
    return (_list_pages(state, model, config, root, cards.new, inputs, renderer),
            _entry_pages(root, config, version, fresh, before, cards, _Links(state, model, fresh).every(), old_loaded,
                         inputs, renderer))


def _entry_pages(root: Path, config, version: str, fresh: dict[str, LoadedEntry], before: dict[str, LoadedEntry],
                 cards, related: dict[str, list[tuple[str, str]]], old_loaded,
                 inputs: _PageInputs, renderer: Renderer | None = None) -> tuple[dict[str, bytes], int]:
    """The entry pages a change shows on: the changed entries' own, and the pages of the entries
    they link with (either way, before or after) when their card or links changed. Returns them
    by path, and how many were rendered (the others came from the page cache). Needs nothing the
    cross-entry checks or signatures.json give: run in the list pages' forked child when there
    is one. Its renderer has signatures.json at the last build's address, which an entry page
    does not name (`_render` falls back when a template besides diagnose.html does)."""
    from .highlight import kept_in

    incoming: dict[str, list[tuple[str, str]]] = {}
    for other_id, links in related.items():
        for target, relation in links:
            incoming.setdefault(target, []).append((other_id, relation))
    pages: list[Page] = [entry_page(loaded, config, cards, incoming) for loaded in fresh.values()]
    neighbours: set[str] = set()
    for entry_id, loaded in fresh.items():
        old_links = {r.id for r in before[entry_id].entry.related}
        if cards[entry_id] != cards.old(entry_id) or old_links != {r.id for r in loaded.entry.related}:
            neighbours |= old_links | {r.id for r in loaded.entry.related} | {o for o, _r in incoming.get(entry_id, [])}
    for entry_id in sorted(neighbours - set(fresh)):
        pages.append(entry_page(old_loaded(entry_id), config, cards, incoming))
    renderer = renderer or Renderer(config, root, inputs.asset_names, inputs.tabs, keep_compiled=True)
    stamp = render_stamp(root, config, inputs.asset_names, inputs.tabs, version)
    page_store = RecordStore(root, PAGE_RECORDS)
    files: dict[str, bytes] = {}
    rendered = 0
    with kept_in(code_store(root)):
        for page in pages:
            # an entry's page may be one an earlier build rendered (an edit undone)
            key = page_key(page, stamp)
            body = page_store.get(key) if key else None
            if body is None:
                body = renderer.render(page)
                rendered += 1
                if key:
                    page_store.put(key, body)
            files[page.path] = body
    return files, rendered


def _list_pages(state, model: dict, config, root: Path, new: dict[str, Card], inputs: _PageInputs,
                renderer: Renderer | None = None) -> tuple[dict[str, bytes], set[str], int, dict[str, bytes] | None]:
    """Every list page whose context a changed card changed, rendered, and the sitemap if what it
    lists changed: ({path: bytes}, the list pages the change does away with (the last of a list
    that got shorter), how many pages were rendered, the model's new plan sections or None when
    they stay as they are). A card that keeps its place on every list is rendered again on the
    pages the model's plan says show it, from their kept contexts and the cards these show; one
    that moves needs the lists planned from every card, before and after, and a new plan. Made
    from cards alone: run in a forked child (`Alongside`). Its renderer has signatures.json at the last
    build's address, which no page rendered here names (the diagnose page is `_render`'s, and a
    theme that names the file elsewhere makes the rebuild fall back)."""
    from .feeds import sitemap

    known = _Cards(state, model, new)
    moved = [i for i in new if new[i] != known.old(i)]
    if not moved:
        return {}, set(), 0, None
    renderer = renderer or Renderer(config, root, inputs.asset_names, inputs.tabs, keep_compiled=True)
    plan = _json(state, "plan")
    # every list holds the same cards in the same places as before: a page changed exactly when
    # it shows a changed card
    alike = all(_listed_alike(known.old(i), new[i]) for i in moved)
    if alike and isinstance(plan, dict):
        # the pages the plan kept, with the new card in them
        pages = _kept_pages(state, plan, moved, known, config.vocabularies)
        return {page.path: renderer.render(page) for page in pages}, set(), len(pages), None
    old_cards = known.every(model["ids"])
    cards = {**old_cards, **new}
    # planned for the lists the changed cards are on, before or after (the others' pages cannot
    # change), and for the pages that show every card
    lists = set().union(*(card_lists(cards[i]) | card_lists(old_cards[i]) for i in moved))
    new_plan = aggregate_pages(config, cards, inputs.content_pages, inputs.study, lists)
    if alike:   # and no plan kept (a site with a study: its frequency page shows every card)
        shown = {id(cards[i]) for i in moved}
        pages = [page for page in new_plan if page.template != VOLATILE_TEMPLATE and _shows(page.context, shown)]
        return {page.path: renderer.render(page) for page in pages}, set(), len(pages), None
    old_plan = {p.path: p for p in aggregate_pages(config, old_cards, inputs.content_pages, inputs.study, lists)}
    listed_before = {(path, p.sitemap) for path, p in old_plan.items()}
    pages = []
    for page in new_plan:   # a list that grew or shrank by a page gains or loses its last
        old = old_plan.pop(page.path, None)
        if page.template != VOLATILE_TEMPLATE and (
                old is None or (old.template, old.title, old.description, old.sitemap, old.context) !=
                (page.template, page.title, page.description, page.sitemap, page.context)):
            pages.append(page)
    files = {page.path: renderer.render(page) for page in pages}
    # the sitemap lists the pages and the entries' review dates: made again (from every page)
    # when a page came or went, or a list page entered or left it, or a date changed
    new_sitemap = any(cards[i].reviewed != old_cards[i].reviewed for i in moved) or \
        {(p.path, p.sitemap) for p in new_plan} != listed_before
    every = aggregate_pages(config, cards, inputs.content_pages, inputs.study) \
        if new_sitemap or isinstance(plan, dict) else []
    if new_sitemap:
        files["sitemap.xml"] = sitemap([Page(f"entries/{entry_id}/index.html", "entry.html", "") for entry_id in cards]
                                       + every, config.base_url, {i: c.reviewed for i, c in cards.items()})
    return files, set(old_plan), len(pages), plan_sections(every, config) if isinstance(plan, dict) else None


#: what a list shows of a card but never orders, counts or files it by (`render.aggregate_pages`)
_SHOWN_ONLY = frozenset({"summary", "signature", "fix"})
_PLACING = tuple(name for name in _CARD_FIELDS if name not in _SHOWN_ONLY)


def _listed_alike(old: Card, new: Card) -> bool:
    """Is the card on the same lists, in the same place and under the same counts as before?"""
    return all(getattr(old, name) == getattr(new, name) for name in _PLACING)


def _shows(value, cards: set[int]) -> bool:
    """Does a page's context hold one of these cards (by identity), at any depth? A list is
    looked at by the types of its items, taken in C: one of cards alone is tested at once (the
    entries index holds every card), one of plain values is skipped, one of rows is looked at as
    the list of their items (the 404 page's 10,000 suggestions), any other is walked."""
    if isinstance(value, Card):
        return id(value) in cards
    if isinstance(value, dict):
        return any(_shows(item, cards) for item in value.values())
    if isinstance(value, (list, tuple)):
        kinds = set(map(type, value))
        if kinds == {Card}:
            return not cards.isdisjoint(map(id, value))
        if kinds <= _ATOMS:
            return False
        if kinds <= {list, tuple}:   # rows: looked at as one list of their items
            return _shows(list(chain.from_iterable(value)), cards)
        return any(_shows(item, cards) for item in value)
    return False


#: types that hold no card: a list of these alone (the 404 page's 10,000 suggestions) is not walked
_ATOMS = frozenset({str, Markup, int, float, bool, type(None)})


def _updated_sections(state, model, changed: list[str], entries, cards, related, layout: dict, fresh,
                      groups: dict, index: dict) -> dict[str, bytes]:
    """The model after the change: the sections holding a changed row made again, the others kept
    as the state file has them (neither hashed nor, when shared, written again). `index`: the
    sections of the diagnosis index stored after the change (`diagnosis_index.patched_sections`)."""
    count = model["buckets"]
    names = section_names(model)
    touched = {bucket(entry_id, count) for entry_id in [*changed, *fresh]}
    rows = {"entries": {}, "related": {}, "examples": {}}
    for entry_id in entries:
        if bucket(entry_id, count) in touched:
            rows["entries"][entry_id] = entries[entry_id]
            rows["related"][entry_id] = [list(link) for link in related[entry_id]]
    for line in _example_lines(state, model, touched):
        entry_id = _line_id(line)
        if entry_id in fresh:
            texts = [parsed.text for sig in fresh[entry_id].entry.signatures for example in sig.example_logs
                     for _n, parsed in parse_text(example)]
            line = _dump([entry_id, "\n".join(texts)])
        rows["examples"][entry_id] = line
    new = {"model": _dump(model), "siglayout": _dump(layout), **_entry_sections(rows, count, touched)}
    new.update({INDEX + name: body for name, body in index.items()})
    new.update(cards.sections())
    if groups:
        lines = {group: _weight_line(group, tokens) for group, tokens in groups.items() if tokens}
        bodies, places = patch_buckets(_json(state, "weights_index"),
                                       lambda k: state.section(f"weights.{k}", verify=False),
                                       lines, set(groups) - set(lines), count, b"\n")
        new.update({f"weights.{k}": body for k, body in bodies.items()})
        new["weights_index"] = _dump(places)
    kept = _kept(state, [name for name in names if name not in new])
    return {name: new[name] if name in new else kept[name] for name in names}
