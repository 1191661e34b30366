"""A rebuild after a few entries changed and nothing else did, in proportion to the change.

A full build that used the build cache leaves a *site model* in its state file
(`.rootcause-cache/build-state-*`, beside the list of files it wrote): every entry's stat key and
record key, the cards list pages show, the declared links, every search-term weight by shard key
and the shard names, each entry's share of `signatures.json`, the examples as signatures read
them, and a copy of the signature table of the diagnosis index it stored.

`rebuild` uses it when only entry files changed (none added or removed, no other input, the same
code), at most MAX_CHANGED of them, and the site is as the last build left it. It checks the
changed entries alone (`load_entry`) and against the others: their links, their examples
against every other signature (through the model's signature table), the other
examples against their signatures (through the stored example lines), their signatures against
the healthy logs. It writes only the files that differ: their pages, the pages that list or link
to them when what those show changed, the search shards of the terms whose weights changed, the
doc shard, `signatures.json`, the sitemap and feed when they change; then the diagnosis index
and the model. Whenever it finds anything to report, or a change it would have to recompute for
the whole site (an entry's place in the search order, an entry gaining or losing signatures),
it returns None and the full build runs, which reports exactly as a cold one does.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..cache import Inputs, RecordStore, input_folders
from ..entries.catalog import (OVERLAP_RELATIONS, LoadedEntry, config_key, entry_record, from_record, load_entry,
                               record_key)
from ..entries.project import healthy_log_paths
from ..files import Refused, read_regular
from ..located_yaml import MAX_FILE_BYTES
from ..matching.anchors import CorruptIndex
from ..matching.signatures import find_matches, parse_text
from .render import Card, Page, Renderer, aggregate_pages, diagnose_page, entry_page
from .search import (
    MANIFEST,
    SIGNATURES,
    assemble_signature_file,
    consequences_of,
    doc_row,
    doc_shard,
    manifest_file,
    search_key,
    shard_path,
    signature_parts,
    term_shards,
)
from .search import DOCS_PER_SHARD
from .stamps import VOLATILE_TEMPLATE, build_version, collect_assets, page_key, render_stamp
from .write import file_digest, open_state, output_intact, update_in_place, write_manifest

FORMAT = 1
#: more changed entries than this: the full build (with the build cache) is about as quick
MAX_CHANGED = 16
PER_RECORD = ("weights", "records")
SECTIONS = ("state", "model", "entries", "cards", "related", "weights", "weights_index", "table", "records", "examples",
            "sigparts")


@dataclass
class Outcome:
    entries: int
    pages: int
    files: int
    written: int
    checked: int
    rendered: int


def _dump(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _card_data(card: Card) -> tuple:
    return tuple(card.__dict__.values())   # its fields in order (astuple would deep-copy them)


def _card(data: list) -> Card:
    return Card(*[tuple(v) if isinstance(v, list) else v for v in data])


def _lines(records: list[tuple[str, bytes]]) -> tuple[bytes, dict[str, list[int]]]:
    """A section of one record per line and its index (name → [offset, length, CRC-32])."""
    index, offset, body = {}, 0, []
    for name, line in records:
        index[name] = [offset, len(line), zlib.crc32(line)]
        body.append(line)
        offset += len(line) + 1
    return b"\n".join(body), index


# -- what a full build leaves ---------------------------------------------------------------------
def model_sections(project, version: str, others: str, keep: dict, parts: dict, table: tuple[bytes, bytes],
                   cards: dict[str, Card], pages: int) -> dict[str, bytes]:
    """The site model's sections, from a full build's catalog and what its index stage kept
    (`keep`: `build_search_files`'s order, weights and shard names; `parts`: `signature_parts` by
    id; `table`: the diagnosis index's signature table and records, a copy the model owns, so that
    an index stored meanwhile by `check` or `diagnose` changes nothing here; `cards`: by id)."""
    catalog = project.catalog
    stats = project.inputs.stats if project.inputs is not None else {}
    entries, card_rows, related, examples = {}, {}, {}, []
    for entry_id, loaded in catalog.entries.items():
        e = loaded.entry
        key = stats.get(loaded.path)
        entries[entry_id] = [loaded.path, list(key) if key else None, loaded.source_key,
                             e.reviewed.isoformat(), e.published.isoformat()]
        card_rows[entry_id] = _card_data(cards[entry_id])
        related[entry_id] = [[r.id, r.relation] for r in e.related]
        examples.append((entry_id, _dump([entry_id, catalog.example_lines.get(entry_id, "")])))
    weights, weights_index = _lines([(group, _dump([group, {t: [x for pair in docs.items() for x in pair]
                                                            for t, docs in tokens.items()}]))
                                     for group, tokens in sorted(keep["weights"].items())])
    model = {"format": FORMAT, "version": version, "others": others, "config": config_key(catalog.config),
             "order": keep["order"], "shards": keep["shards"], "doc_shards": keep["doc_shards"], "pages": pages}
    return {"model": _dump(model), "entries": _dump(entries), "cards": _dump(card_rows), "related": _dump(related),
            "weights": weights, "weights_index": _dump(weights_index), "table": table[0], "records": table[1],
            "examples": b"\n".join(line for _i, line in examples),
            "sigparts": b"\n".join(i.encode() + b"\t" + sigs + b"\t" + (row or b"") for i, (sigs, row) in sorted(parts.items()))}


# -- the rebuild ----------------------------------------------------------------------------------
@dataclass
class _Change:
    """The changed entries, old and new, and the site-wide data they are set against."""

    fresh: dict[str, LoadedEntry]       # by id, as the files are now
    before: dict[str, LoadedEntry]      # the same, as the last build had them
    entries: dict[str, list]            # the model's rows: path, stat key, record key, reviewed, published
    related: dict[str, list[tuple[str, str]]]   # every entry's links, the changed ones' new
    old_loaded: Callable[[str], LoadedEntry]    # an unchanged entry from the build cache
    cards: dict[str, Card] = field(default_factory=dict)       # every card, the changed ones' new
    old_cards: dict[str, Card] = field(default_factory=dict)   # every card as the last build had it


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
        return json.loads(data)
    except (ValueError, RecursionError):
        raise _Fallback(f"section {name} is not JSON") from None


def rebuild(root: Path, out: Path, config, fingerprint: str, others: str, timings=None,
            seen: dict | None = None) -> Outcome | None:
    """Rebuild `out` for the entry files changed since the last build, or None when only a
    full build can (see the module's docstring). `fingerprint` and `others`: the inputs'
    (`stamps.input_fingerprints`), taken before the output's lock, which the caller holds;
    `seen`: that walk's `os.lstat` results (the stat keys the model is compared with)."""
    from ..timings import OFF

    state = open_state(out, root)
    if state is None:
        return None
    # the model is millions of small objects and the rebuild makes little garbage: the cyclic
    # collector's passes over them would be a sixth of its time at 10,000 entries
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _rebuild(root, out, config, fingerprint, others, state, timings or OFF, seen)
    except (_Fallback, CorruptIndex, KeyError, IndexError, TypeError, ValueError, OSError) as exc:
        # a model this code cannot read is never trusted, and a file of the site that cannot be
        # read back (gone since it was checked) is rewritten: the full build runs
        if os.environ.get("ROOTCAUSE_EXPLAIN_REBUILD"):
            print(f"full build: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None
    finally:
        state.close()
        if collecting:
            gc.enable()


def _rebuild(root: Path, out: Path, config, fingerprint: str, others: str, state, timings, seen) -> Outcome | None:
    with timings.stage("load"):
        model = _json(state, "model")
        manifest = _json(state, "state")
        version = build_version()
        if not isinstance(model, dict) or model.get("format") != FORMAT or model.get("version") != version or \
                model.get("others") != others or \
                model.get("config") != config_key(config):
            return None
        now = Inputs.take(root, input_folders(config), taken=seen)   # taken before any entry was read
        old_entries = _json(state, "entries")
        by_path = {row[0]: entry_id for entry_id, row in old_entries.items()}
        present = {name for name in now.stats if name.startswith("entries/") and name != "entries/"}
        if present != set(by_path):
            return None
        changed = [by_path[name] for name in sorted(present)
                   if list(now.stats[name] or ()) != (old_entries[by_path[name]][1] or [])]
        if not changed or len(changed) > MAX_CHANGED or not output_intact(out, manifest):
            return None

    entry_store = RecordStore(root, "build-entries")
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
            except (Refused, OSError):
                return None
            keys[entry_id] = key = record_key(shown, raw, settings, version)
            if key == old_entries[entry_id][2]:
                continue   # touched, not changed
            loaded, problems = load_entry(root / shown, root, config, raw)
            if problems or loaded is None or loaded.entry.id != entry_id:
                return None
            old = old_loaded(entry_id)
            if search_key(loaded) != search_key(old) or bool(loaded.signatures) != bool(old.signatures):
                return None
            loaded.source_key = key
            fresh[entry_id] = loaded
            before[entry_id] = old

    if not fresh:   # touched, not changed: only the recorded stat keys and the inputs' fingerprint are new
        with timings.stage("write"):
            for entry_id in changed:
                stat = now.stats[old_entries[entry_id][0]]
                old_entries[entry_id][1] = list(stat) if stat else None
            sections = {name: state.section(name, verify=name not in PER_RECORD) for name in SECTIONS if name != "state"}
            if any(body is None for body in sections.values()):
                return None
            sections["entries"] = _dump(old_entries)
            write_manifest(out, root, {**manifest, "inputs": fingerprint}, sections, per_record=PER_RECORD)
        return Outcome(len(old_entries), model["pages"], len(manifest["files"]), 0, 0, 0)

    related = {entry_id: [tuple(link) for link in links] for entry_id, links in _json(state, "related").items()}
    with timings.stage("cross-check"):
        for entry_id, loaded in fresh.items():
            related[entry_id] = [(r.id, r.relation) for r in loaded.entry.related]
            if any(r.id == entry_id or r.id not in old_entries for r in loaded.entry.related):
                return None
        if fresh and (_collides(state, fresh, related, old_loaded) or _healthy_match(root, config, fresh)):
            return None

    files: dict[str, bytes] = {}
    removed: set[str] = set()
    with timings.stage("index"):
        old_cards = {entry_id: _card(data) for entry_id, data in _json(state, "cards").items()}
        cards = dict(old_cards)
        for entry_id, loaded in fresh.items():
            cards[entry_id] = Card.of(loaded)
        parts = _sigparts(state)
        same_signatures = True
        for entry_id, loaded in fresh.items():
            new_parts = signature_parts(loaded)
            same_signatures = same_signatures and new_parts[0] == parts[entry_id][0]
            parts[entry_id] = new_parts
        consequences = consequences_of(related)
        signature_file = assemble_signature_file(parts, consequences)
        files[SIGNATURES] = signature_file
        signature_file_changed = manifest["files"].get(SIGNATURES) != file_digest(signature_file)
        change = _Change(fresh, before, old_entries, related, old_loaded, cards, old_cards)
        weights_blob = _search_update(state, model, change, files, removed)

    with timings.stage("render"):
        gone: set[str] = set()
        rendered = _render(root, config, version, signature_file, signature_file_changed, change, files, gone)
        model["pages"] += sum(path not in manifest["files"] for path in files if path.endswith(".html")) - len(gone)
        removed |= gone

    with timings.stage("index"):
        from .diagnosis_index import index_sections, store_sections

        search = {}
        for path, digest in manifest["files"].items():
            if path.startswith("search/") and path != SIGNATURES and path not in removed:
                body = (out / path).read_bytes()
                if file_digest(body) != digest:
                    return None
                search[path] = body
        search.update({path: body for path, body in files.items() if path.startswith("search/") and path != SIGNATURES})
        if same_signatures:
            index = index_sections(search, rows={i: row for i, (_s, row) in parts.items() if row is not None},
                                   consequences=consequences, table=(_section(state, "table"), _section(state, "records")))
        else:
            index = index_sections(search, signature_file)
        store_sections(root, now, config.base_url, index)
        table = index["table"], index["records"]
        del index, search

    with timings.stage("write"):
        changed_files = {path: body for path, body in files.items() if manifest["files"].get(path) != file_digest(body)}
        removed -= set(files)
        new_state = update_in_place(out, manifest, changed_files, removed)
        new_state["inputs"] = fingerprint
        for entry_id, loaded in fresh.items():
            entry_store.put(keys[entry_id], entry_record((loaded, [])))
        for entry_id in changed:
            row = old_entries[entry_id]
            stat = now.stats[row[0]]
            row[1], row[2] = list(stat) if stat else None, keys[entry_id]
            if entry_id in fresh:
                e = fresh[entry_id].entry
                row[3], row[4] = e.reviewed.isoformat(), e.published.isoformat()
        sections = _updated_sections(state, model, old_entries, cards, related, parts, fresh, weights_blob, table)
        write_manifest(out, root, new_state, sections, per_record=PER_RECORD)
    return Outcome(len(old_entries), model["pages"], len(new_state["files"]), len(changed_files), len(fresh), rendered)


def _allowed(entry_id: str, related: dict[str, list[tuple[str, str]]]) -> set[str]:
    """The entries that may share log lines with `entry_id`: related to it, either way, by a
    relation that says so (`catalog.OVERLAP_RELATIONS`)."""
    allowed = {other for other, relation in related.get(entry_id, []) if relation in OVERLAP_RELATIONS}
    allowed.update(other for other, links in related.items()
                   if any(target == entry_id and relation in OVERLAP_RELATIONS for target, relation in links))
    return allowed


def _collides(state, fresh: dict[str, LoadedEntry], related: dict, old_loaded) -> bool:
    """Would the full check report E035 for a changed entry, one way or the other?"""
    from ..matching.anchors import SignatureTable

    table = SignatureTable.from_records(_json(state, "table"), lambda: state.section("records", verify=False))
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
    # which entries hold a signature's first anchor; only those are read and matched
    blob = state.section("examples")
    if blob is None:
        raise _Fallback("the example lines are damaged")
    needles = {entry_id: {json.dumps(sig.steps[0].anchor, ensure_ascii=False)[1:-1].encode("utf-8")
                          for sig in loaded.signatures} for entry_id, loaded in fresh.items()}
    wanted: dict[str, set[str]] = {}
    for line in blob.split(b"\n"):
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


def _sigparts(state) -> dict[str, tuple[bytes, bytes | None]]:
    blob = state.section("sigparts")
    if blob is None:
        raise _Fallback("sigparts damaged")
    parts = {}
    for line in blob.split(b"\n") if blob else []:
        entry_id, sigs, row = line.split(b"\t")
        parts[entry_id.decode()] = (sigs, row or None)
    return parts


def _search_update(state, model: dict, change: _Change, files: dict, removed: set) -> dict:
    """The search files one change touches: the shards of the tokens whose weights changed (each
    two-character group recomputed whole), the doc shards of the changed entries, the manifest.
    Returns the changed weight groups, by group, for the model."""
    fresh, before, cards = change.fresh, change.before, change.cards
    order = model["order"]
    number = {entry_id: n for n, entry_id in enumerate(order)}
    n = len(order)
    index = _json(state, "weights_index")
    blob = state.section("weights", verify=False)
    if blob is None:
        raise _Fallback("weights damaged")
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
            offset, length, check = index[key]
            line = blob[offset:offset + length]
            if len(line) != length or zlib.crc32(line) != check:
                raise _Fallback(f"weights of {key} damaged")
            found_key, tokens = json.loads(line)
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
        rows = [doc_row(c.id, c.title, c.summary, c.severity, c.category)
                for c in (cards[i] for i in order[shard * DOCS_PER_SHARD:(shard + 1) * DOCS_PER_SHARD])]
        name, data = doc_shard(shard, rows)
        removed.add("search/" + doc_shards[shard])
        files[name] = data
        doc_shards[shard] = name[len("search/"):]
    files[MANIFEST] = manifest_file(n, {shard: name for names in model["shards"].values()
                                        for shard, name in names.items()}, doc_shards)
    return groups


def _render(root: Path, config, version: str, signature_file: bytes, signature_file_changed: bool, change: _Change,
            files: dict, gone: set[str]) -> int:
    """The pages a change shows on: the changed entries' own, the pages of the entries they link
    with (either way, before or after) when their card or links changed, and every list page whose
    context changed; then the sitemap and feed if what they list changed. A list page the change
    does away with (the last of a list that got shorter) is added to `gone`. Returns how many
    pages were rendered (the others came from the page cache)."""
    import hashlib

    fresh, before, cards, old_cards = change.fresh, change.before, change.cards, change.old_cards
    related, old_entries, old_loaded = change.related, change.entries, change.old_loaded

    from ..entries.study import load_study
    from .content import load_content
    from .feeds import atom, feed_key, newest, sitemap

    asset_names, _files = collect_assets(root, config)
    asset_names["signatures.json"] = f"{SIGNATURES}?v={hashlib.sha256(signature_file).hexdigest()[:10]}"
    content_pages, problems = load_content(root)
    if problems:
        raise _Fallback("content pages have problems")
    tabs = [(c.slug, c.tab) for c in content_pages if c.tab]
    study = load_study(root, config)[0] if config.study else []
    incoming: dict[str, list[tuple[str, str]]] = {}
    for other_id, links in related.items():
        for target, relation in links:
            incoming.setdefault(target, []).append((other_id, relation))
    pages: list[Page] = [entry_page(loaded, config, cards, incoming) for loaded in fresh.values()]
    neighbours: set[str] = set()
    for entry_id, loaded in fresh.items():
        old_links = {r.id for r in before[entry_id].entry.related}
        if cards[entry_id] != old_cards[entry_id] or old_links != {r.id for r in loaded.entry.related}:
            neighbours |= old_links | {r.id for r in loaded.entry.related} | {o for o, _r in incoming.get(entry_id, [])}
    for entry_id in sorted(neighbours - set(fresh)):
        pages.append(entry_page(old_loaded(entry_id), config, cards, incoming))
    cards_changed = any(cards[i] != old_cards[i] for i in fresh)
    if cards_changed:   # the list pages are made from cards alone: those whose context changed
        new_plan = aggregate_pages(config, cards, content_pages, study)
        old_plan = {p.path: p for p in aggregate_pages(config, old_cards, content_pages, study)}
        for new in new_plan:   # a list that grew or shrank by a page gains or loses its last
            old = old_plan.pop(new.path, None)
            if old is None or (old.template, old.title, old.description, old.sitemap, old.context) != \
                    (new.template, new.title, new.description, new.sitemap, new.context):
                pages.append(new)
        gone.update(old_plan)
    if signature_file_changed and not any(p.template == VOLATILE_TEMPLATE for p in pages):
        pages.append(diagnose_page(config))
    renderer = Renderer(config, root, asset_names, tabs)
    stamp = render_stamp(root, config, asset_names, tabs, version)
    if signature_file_changed and stamp[0] == stamp[1]:
        raise _Fallback("a template besides diagnose.html names signatures.json: every page changes with it")
    page_store = RecordStore(root, "build-pages")
    rendered = 0
    for page in pages:
        # an entry's page may be one an earlier build rendered (an edit undone); a list page
        # shown here has new cards, and its key would cost a tenth of a second at 10,000 entries
        key = page_key(page, stamp) if page.template == "entry.html" else None
        body = page_store.get(key) if key else None
        if body is None:
            body = renderer.render(page)
            rendered += 1
            if key:
                page_store.put(key, body)
        files[page.path] = body
    if cards_changed:
        every = [Page(f"entries/{entry_id}/index.html", "entry.html", "") for entry_id in cards] + new_plan
        files["sitemap.xml"] = sitemap(every, config.base_url, {i: c.reviewed for i, c in cards.items()})
    keys = {entry_id: feed_key(row[3], row[4], entry_id) for entry_id, row in old_entries.items()}
    old_top = set(newest(keys))
    for entry_id, loaded in fresh.items():
        keys[entry_id] = feed_key(loaded.entry.reviewed.isoformat(), loaded.entry.published.isoformat(), entry_id)
    top = newest(keys)
    if (old_top | set(top)) & set(fresh):
        files["feed.xml"] = atom(config, [fresh[i] if i in fresh else old_loaded(i) for i in top])
    return rendered


def _updated_sections(state, model, entries, cards, related, parts, fresh, groups: dict,
                      table: tuple[bytes, bytes]) -> dict[str, bytes]:
    """The model after the change: the changed rows replaced, the untouched sections' bytes kept."""
    sections = {"model": _dump(model), "entries": _dump(entries), "table": table[0], "records": table[1],
                "cards": _dump({i: _card_data(c) for i, c in cards.items()}),
                "related": _dump({i: [list(link) for link in links] for i, links in related.items()})}
    index = _json(state, "weights_index")
    blob = state.section("weights", verify=False) or b""
    records = []
    for key in sorted(set(index) | set(groups)):
        if key in groups:
            if groups[key]:
                records.append((key, _dump([key, {t: [x for pair in docs.items() for x in pair]
                                                  for t, docs in groups[key].items()}])))
        else:
            offset, length, _check = index[key]
            records.append((key, blob[offset:offset + length]))
    sections["weights"], weights_index = _lines(records)
    sections["weights_index"] = _dump(weights_index)
    lines = []
    for line in (state.section("examples") or b"").split(b"\n"):
        entry_id = _line_id(line) if line else None
        if entry_id in fresh:
            texts = [parsed.text for sig in fresh[entry_id].entry.signatures for example in sig.example_logs
                     for _n, parsed in parse_text(example)]
            line = _dump([entry_id, "\n".join(texts)])
        lines.append(line)
    sections["examples"] = b"\n".join(lines)
    sections["sigparts"] = b"\n".join(i.encode() + b"\t" + sigs + b"\t" + (row or b"") for i, (sigs, row) in sorted(parts.items()))
    return sections
