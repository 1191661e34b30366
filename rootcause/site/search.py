"""The search index (sharded, so the first result needs little transfer) and the signature file
the in-browser diagnosis loads.

Tokens come from `rootcause.text`, per-entry term weights from `rootcause.entries.terms`.

Layout under `search/`:
- `manifest.json`: entry count, shard keys → file names, doc shard names;
- `t/<key>.<hash>.json`: {token: [doc, score, doc, score, ...]} for the tokens whose longest
  shard key is <key> (2 characters, lengthened where a shard would pass 24 KB);
- `d/<n>.<hash>.json`: [[id, title, summary, severity, category], ...] for 10 entries each.
A query fetches the manifest, one shard per query token and the doc shards of the top hits.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING

from .. import jsonbytes
from ..entries.terms import entry_weights
from ..matching.logline import MAX_LINE, MAX_PREFIXES, rules_for_javascript
from ..matching.ranking import CONSEQUENCE_CHECKS, PHASE_TAIL, PHASES
from ..matching.rows import EntryInfo
from ..matching.events import ANCHORS as EVENT_ANCHORS
from ..matching.events import EXCEPTION_ANCHORS, EXCEPTION_KINDS, FINGERPRINT
from ..matching.events import printed_rules_for_javascript as printed_event_rules
from ..matching.events import rules_for_javascript as event_rules
from ..matching.incident import BACKTRACE_GAP, MAX_FAILURES, MESSAGES
from ..matching.scanner import (ERROR_EVENTS, FRAME_GAP, MAX_HITS_PER_SIGNATURE, MAX_LINES_SHOWN, MAX_MATCHES_PER_SIGNATURE,
                                MIN_WRAPPED, SATURATION_CHECK, SURE_CORE)
from ..matching.shared import SHARED
from ..text import DECORATION_NEEDS, DECORATION_RULES, STOPWORDS, name_key, plain, terms, tokens, undecorate

if TYPE_CHECKING:
    from ..entries.catalog import Catalog

#: results scoring below this fraction of the best one are not shown: a query's tail of entries
#: that share one common word with it is noise, not a longer answer
RELEVANCE_CUTOFF = 0.25
MAX_POSTINGS = 300     # a token's best entries; more never reach the top results of a query
SHARD_SPLIT_BYTES = 24 * 1024
DOCS_PER_SHARD = 10
SUMMARY_CHARS = 140
MANIFEST = "search/manifest.json"
SIGNATURES = "search/signatures.json"


def signature_address(digest: str) -> str:
    """The address pages load signatures.json from, its hash (`write.file_digest`) in the query so
    that a browser never keeps an old one."""
    return f"{SIGNATURES}?v={digest[:10]}"


def is_search_file(path: str) -> bool:
    """One of the search index's files (`build_search_files`), not signatures.json or the search page."""
    return path.startswith("search/") and path.endswith(".json") and path != SIGNATURES


def _short_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:10]


def _dump(value) -> bytes:
    return jsonbytes.dumps(value, sort_keys=True)


def search_key(loaded) -> tuple:
    """Entries are numbered in this order: by category and system, so that the top hits of a
    query, which tend to share them, sit in few doc shards (fewer requests before the first result)."""
    return loaded.entry.category, loaded.entry.systems[0], loaded.entry.id


def doc_row(entry_id: str, title: str, summary: str, severity: str, category: str) -> list:
    """An entry as a doc shard lists it (`summary`: its plain text)."""
    if len(summary) > SUMMARY_CHARS:
        summary = summary[:SUMMARY_CHARS].rsplit(" ", 1)[0] + "…"
    return [entry_id, title, summary, severity, category]


def term_weights(entries: list, release: bool = False) -> dict[str, dict[str, dict[int, float]]]:
    """{two-character shard key: {token: {entry number: weight}}} of entries in `search_key` order.
    `release`: empty each entry's own weights once they are grouped, so that they are moved here
    rather than held twice (10 KB an entry)."""
    grouped: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for number, loaded in enumerate(entries):
        for token, weight in (loaded.search_weights or entry_weights(loaded)).items():
            grouped[token[:2]][token][number] = weight  # a pair "a+b" lives with the tokens starting like "a"
        if release:
            loaded.search_weights = {}
    return grouped


def _scored(docs: dict[int, float], n: int) -> list[int] | None:
    """A token's postings (doc, score, doc, score, ...), or None for a token in most entries (no
    help in ranking, only transfer)."""
    df = len(docs)
    if n >= 50 and df / n > 0.5:
        return None
    idf = math.log(1 + n / df)
    scored = sorted(((doc, max(1, round(10 * w * idf))) for doc, w in docs.items()), key=lambda p: (-p[1], p[0]))
    return [number for pair in scored[:MAX_POSTINGS] for number in pair]


def term_shards(group: dict[str, dict[int, float]], key: str, n: int) -> dict[str, bytes]:
    """{shard key: file body} of the tokens of one two-character key (their shards depend on
    nothing else, so a changed entry rewrites only the groups of the tokens it changed)."""
    postings = {token: plist for token, docs in group.items() if (plist := _scored(docs, n)) is not None}
    if not postings:
        return {}
    placed: dict[str, dict[str, list]] = {}
    _place(key, postings, placed)
    return {shard: _dump(tokens_) for shard, tokens_ in placed.items()}


def _place(key: str, group: dict[str, list], result: dict[str, dict[str, list]]) -> None:
    """A shard per key prefix, lengthened one character at a time where a shard would pass
    SHARD_SPLIT_BYTES. A token lives in the shard of its longest key."""
    if len(group) == 1 or len(_dump(group)) <= SHARD_SPLIT_BYTES:
        result[key] = group
        return
    longer: dict[str, dict[str, list]] = defaultdict(dict)
    rest: dict[str, list] = {}
    for token, plist in group.items():
        if len(token) > len(key):
            longer[token[:len(key) + 1]][token] = plist
        else:
            rest[token] = plist
    if rest:
        result[key] = rest
    for sub, subgroup in sorted(longer.items()):
        _place(sub, subgroup, result)


def shard_path(key: str, data: bytes) -> str:
    return f"search/t/{key}.{_short_hash(data)}.json"


def doc_shard(number: int, rows: list[list]) -> tuple[str, bytes]:
    data = _dump(rows)
    return f"search/d/{number}.{_short_hash(data)}.json", data


def manifest_file(n: int, shard_names: dict[str, str], doc_shards: list[str], base_url: str) -> bytes:
    """The manifest keeps its name (pages do not change when the index does); the browser revalidates it.
    `base_url`: where the site is hosted, so that a copy of it (`diagnose --site`) links there."""
    return _dump({"version": 1, "entries": n, "base_url": base_url, "cutoff": RELEVANCE_CUTOFF,
                  "docs_per_shard": DOCS_PER_SHARD,
                  "doc_shards": doc_shards, "shards": dict(sorted(shard_names.items())),
                  "stopwords": sorted(STOPWORDS),
                  "decoration": [[regex, replacement] for _name, regex, replacement in DECORATION_RULES]})


def build_search_files(catalog: Catalog, keep: dict | None = None, release: bool = False) -> dict[str, bytes]:
    """{relative path: bytes} of every search file; shard names carry a content hash. `keep`, if
    given, receives what a rebuild needs to rewrite only the shards one entry touches: the entry
    order, the term weights by shard key and the shard names by shard key. `release`: the
    entries' own weights are not needed afterwards (`term_weights`)."""
    entries = sorted(catalog.entries.values(), key=search_key)
    n = len(entries)
    grouped = term_weights(entries, release)
    files: dict[str, bytes] = {}
    shard_names: dict[str, str] = {}
    names_by_group: dict[str, dict[str, str]] = {}
    for key in sorted(grouped):
        for shard, data in sorted(term_shards(grouped[key], key, n).items()):
            name = shard_path(shard, data)
            files[name] = data
            shard_names[shard] = names_by_group.setdefault(key, {})[shard] = name[len("search/"):]
    doc_shards = []
    for start in range(0, n, DOCS_PER_SHARD):
        rows = [doc_row(l.entry.id, l.entry.title, plain(l.entry.summary), l.entry.severity, l.entry.category)
                for l in entries[start:start + DOCS_PER_SHARD]]
        name, data = doc_shard(start // DOCS_PER_SHARD, rows)
        files[name] = data
        doc_shards.append(name[len("search/"):])
    files[MANIFEST] = manifest_file(n, shard_names, doc_shards, catalog.config.base_url)
    if keep is not None:
        keep.update(order=[l.entry.id for l in entries], weights=grouped, shards=names_by_group, doc_shards=doc_shards)
    return files


def signature_parts(loaded) -> tuple[bytes, bytes | None]:
    """One entry's share of signatures.json: its signatures (JSON texts joined by commas) and its
    row (None for an entry of `role: symptom`, which has nothing to match)."""
    if not loaded.signatures:
        return b"", None
    return b",".join(_dump(sig.as_json()) for sig in loaded.signatures), _dump(EntryInfo.of_entry(loaded.entry).row())


def consequences_of(related: dict[str, list[tuple[str, str]]]) -> dict[str, list[str]]:
    """cause id → the ids of its declared consequences, from every entry's (id, relation) links."""
    found: dict[str, set[str]] = {}
    for entry_id, links in related.items():
        for other, relation in links:
            if relation == "causes":
                found.setdefault(entry_id, set()).add(other)
            elif relation == "caused-by":
                found.setdefault(other, set()).add(entry_id)
    return {cause: sorted(ids) for cause, ids in sorted(found.items())}


def consequences_in(signature_file: bytes) -> dict[str, list[str]]:
    """The declared consequences a signatures.json holds (its first member, keys being sorted:
    read without parsing the 13 MB after it at 10,000 entries); {} when it is not laid out so
    (`splice_signature_file` then refuses the file, its top being checked whole)."""
    head = b'{"consequences":'
    end = signature_file.find(b',"decoration":', len(head))
    if not signature_file.startswith(head) or end < 0:
        return {}
    try:
        found = jsonbytes.loads(signature_file[len(head):end])
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _signature_top(consequences: dict[str, list[str]]) -> dict[str, bytes]:
    """signatures.json's members besides the entries and their signatures, as JSON text. Keys are
    written sorted and `consequences_in` reads the file's head: a new key must sort after
    "decoration", so that "consequences" stays first and "decoration" second."""
    top = {
        "version": 2,   # 2: entry rows are mappings read by name (`matching.rows`)
        "rules": rules_for_javascript(),
        "decoration": DECORATION_RULES,
        "decoration_needs": [list(marks) for marks in DECORATION_NEEDS],
        "shared": SHARED,
        "events": event_rules(),
        "printed_events": printed_event_rules(),
        "event_anchors": list(EVENT_ANCHORS),
        "exception_anchors": sorted(EXCEPTION_ANCHORS),
        "exception_kinds": sorted(EXCEPTION_KINDS),
        "fingerprint": FINGERPRINT,
        "error_events": sorted(ERROR_EVENTS),
        "message_events": sorted(MESSAGES), "message_backtrace_gap": BACKTRACE_GAP,
        "next_steps": list(CONSEQUENCE_CHECKS),
        "phases": PHASES, "phase_tail": PHASE_TAIL,   # (after "consequences": `consequences_in` reads the first member)
        "sure_core": SURE_CORE,
        "frame_gap": FRAME_GAP,
        "consequences": consequences,
        "limits": {"max_line": MAX_LINE, "max_prefixes": MAX_PREFIXES, "default_within": 40,
                   "max_hits_per_signature": MAX_HITS_PER_SIGNATURE,
                   "max_matches_per_signature": MAX_MATCHES_PER_SIGNATURE, "max_lines_shown": MAX_LINES_SHOWN,
                   "min_wrapped": MIN_WRAPPED, "saturation_check": SATURATION_CHECK, "max_failures": MAX_FAILURES},
    }
    return {key: _dump(value) for key, value in top.items()}


def _entry_item(entry_id: str, row: bytes) -> bytes:
    return b'"' + entry_id.encode() + b'":' + row   # ids are kebab-case: nothing to escape


def assemble_signature_file(parts: dict[str, tuple[bytes, bytes | None]], consequences: dict[str, list[str]]) -> bytes:
    """Everything the browser's matcher needs (line rules, compiled signatures, entry summaries),
    from each entry's `signature_parts`, by id: the same bytes as dumping the whole structure at
    once, so that a rebuild can replace one entry's parts without touching the rest
    (`splice_signature_file`)."""
    ids = sorted(parts)
    values = _signature_top(consequences)
    values["signatures"] = b"[" + b",".join(parts[i][0] for i in ids if parts[i][0]) + b"]"
    values["entries"] = b"{" + b",".join(_entry_item(i, parts[i][1]) for i in ids if parts[i][1] is not None) + b"}"
    return b"{" + b",".join(_dump(key) + b":" + values[key] for key in sorted(values)) + b"}"


def signature_layout(parts: dict[str, tuple[bytes, bytes | None]]) -> dict[str, list]:
    """How long each entry's share of signatures.json is, by id in sorted order: the length of its
    signatures (0: none) and of its row (-1: none). What `splice_signature_file` needs to find
    an entry's parts in the file without parsing it."""
    ids = sorted(parts)
    return {"ids": ids, "sigs": [len(parts[i][0]) for i in ids],
            "rows": [len(parts[i][1]) if parts[i][1] is not None else -1 for i in ids]}


def splice_signature_file(old: bytes, layout: dict[str, list], old_consequences: dict[str, list[str]],
                          consequences: dict[str, list[str]], changed: dict[str, tuple[bytes, bytes | None]]
                          ) -> tuple[bytes, dict[str, tuple[bytes, bytes | None]]] | None:
    """signatures.json with the `changed` entries' parts put in place of their old ones: `old`
    cut where `layout` (the old parts' lengths) and the old consequences say each part is, and
    joined again around the new parts; the same bytes as `assemble_signature_file` of the new
    parts. Returns it and the changed entries' old parts; None when `old` is not laid out as
    they say, or when an entry gains or loses its signatures or its row (the caller rebuilds).

    Every item's end is checked (a comma after each, the bracket after the last), at 10,000
    entries 20,000 places: their offsets are summed and the bytes there gathered in C."""
    ids, sig_lengths, row_lengths = layout["ids"], layout["sigs"], layout["rows"]
    values = _signature_top(old_consequences)
    keys = sorted([*values, "entries", "signatures"])
    # each entry's item in the two members, by its place in `ids` (-1: it has none there)
    item_lengths = {"entries": [len(i) + 3 + n if n >= 0 else -1 for i, n in zip(ids, row_lengths)],
                    "signatures": [n if n > 0 else -1 for n in sig_lengths]}
    present = {key: [n for n in items if n >= 0] for key, items in item_lengths.items()}   # in file order
    lengths = {key: 2 + sum(items) + max(0, len(items) - 1) for key, items in present.items()}
    if old[:1] != b"{":
        return None
    at, starts = 1, {}
    for n, key in enumerate(keys):
        name = _dump(key) + b":"
        if old[at:at + len(name)] != name:
            return None
        at += len(name)
        starts[key] = at
        length = lengths[key] if key in lengths else len(values[key])
        if key not in lengths and old[at:at + length] != values[key]:
            return None
        at += length
        if old[at:at + 1] != (b"}" if n == len(keys) - 1 else b","):
            return None
        at += 1
    if at != len(old):
        return None
    number = {entry_id: n for n, entry_id in enumerate(ids) if entry_id in changed} if changed else {}
    if len(number) != len(changed):
        return None
    view = memoryview(old)   # the unchanged runs are joined from here, not copied first
    previous: dict[str, list] = {i: [b"", None] for i in changed}
    pieces: dict[str, list] = {}
    for key, part, opening, closing in (("entries", 1, b"{", b"}"), ("signatures", 0, b"[", b"]")):
        start, end = starts[key], starts[key] + lengths[key]
        if old[start:start + 1] != opening or old[end - 1:end] != closing:
            return None
        items, lengths_here = item_lengths[key], present[key]
        # where each item ends: the first after the opening bracket, each next one after a comma
        ends = list(accumulate([n + 1 for n in lengths_here], initial=start))[1:]
        if lengths_here and bytes(map(old.__getitem__, ends)) != b"," * (len(lengths_here) - 1) + closing:
            return None   # not where the layout says the items end
        # the place of each changed entry's item among the items present
        rank = {entry_id: n - items[:n].count(-1) for entry_id, n in number.items() if items[n] >= 0}
        body, cut = [view[start:start + 1]], start + 1   # the bracket kept, each item then its comma
        for entry_id in sorted(rank, key=rank.__getitem__):
            k = rank[entry_id]
            place, stop = ends[k] - lengths_here[k], ends[k]
            old_part = old[place:stop]
            new_part = changed[entry_id][part]
            if new_part is None or (part == 0 and not new_part):
                return None
            if part == 1:
                head = _entry_item(entry_id, b"")
                if not old_part.startswith(head):
                    return None
                previous[entry_id][1] = old_part[len(head):]
                new_part = _entry_item(entry_id, new_part)
            else:
                previous[entry_id][0] = old_part
            body += [view[cut:place], new_part]
            cut = stop
        body.append(view[cut:end])
        pieces[key] = body
    for entry_id, (sigs, row) in changed.items():
        if bool(previous[entry_id][0]) != bool(sigs) or (previous[entry_id][1] is None) != (row is None):
            return None
    new_values = _signature_top(consequences)
    segments: list = [b"{"]
    for n, key in enumerate(keys):
        segments.append(_dump(key) + b":")
        segments += pieces[key] if key in pieces else [new_values[key]]
        segments.append(b"}" if n == len(keys) - 1 else b",")
    return b"".join(segments), {i: (bytes(p[0]), p[1]) for i, p in previous.items()}


def build_signature_file(catalog: Catalog) -> bytes:
    related = {entry_id: [(r.id, r.relation) for r in loaded.entry.related] for entry_id, loaded in catalog.entries.items()}
    return assemble_signature_file({entry_id: signature_parts(loaded) for entry_id, loaded in catalog.entries.items()},
                                   consequences_of(related))


MAX_QUERY_TERMS = 12   # as search.js: a pasted message's longest words decide
_WHITE = re.compile(r"[ \t\n\r\f\v]+")


def query_words(text: str, kept: set[str]) -> list[set[str]]:
    """The query's words (split at white space) that have a kept token, each as its set of
    tokens. An entry's score is scaled by the square of the share of the words it matches, each
    word weighted by its rarest token's idf squared (`word_weights`): "ZeRO-3 checkpoint empty" ranks the
    entry with all three words above those matching "ZeRO-3" many times, and a pasted line's one
    rare identifier outweighs its common words. As search.js's queryWords."""
    words = [set(tokens(chunk)) & kept for chunk in _WHITE.split(text)]
    return [w for w in words if w]


def word_weights(words: list[set[str]], df: dict[str, int], n: int) -> list[float]:
    """Each query word's weight: the square of the idf, log(1 + n/df) rounded to 3 decimals, of its
    rarest token found in the index (0 when none is): a pasted line's one identifier that only its
    entry has outweighs the template words a thousand entries share. As search.js's wordWeights."""
    idf = [max((math.floor(math.log(1 + n / df[t]) * 1000 + 0.5) / 1000 for t in sorted(w) if df.get(t)),
               default=0.0) for w in words]
    return [x * x for x in idf]


class SearchIndex:
    """The site's search index read back, queried the way theme/assets/search.js queries it
    (without its prefix expansion of the word being typed): the same files, the same scores.
    `diagnose` uses it to offer entries related to an error that no signature explains."""

    def __init__(self, files: dict[str, bytes]):
        self.manifest = jsonbytes.loads(files[MANIFEST])
        self.files = files

    @classmethod
    def from_folder(cls, site: "Path") -> "SearchIndex":
        folder = site / "search"
        files = {f"search/{p.relative_to(folder).as_posix()}": p.read_bytes()
                 for p in folder.rglob("*.json") if p.is_file()}
        return cls(files)

    def _shard(self, token: str) -> dict:
        shards = self.manifest["shards"]
        for n in range(len(token), 1, -1):
            key = token[:n]
            if key in shards:
                return jsonbytes.loads(self.files["search/" + shards[key]])
        return {}

    def query(self, text: str, limit: int = 10) -> list[dict]:
        """[{id, title, summary, severity, category, score, matched}] best first, without those
        scoring below RELEVANCE_CUTOFF of the best. A pasted log line loses its decoration
        first, as the matcher's lines do (rootcause.text.undecorate). A query that is a short
        name also looks up its name term (an entry's alias, see rootcause.text.name_key)."""
        text = "\n".join(undecorate(line) for line in text.split("\n"))
        query = tokens(text)
        unique = list(dict.fromkeys(query))
        if len(unique) > MAX_QUERY_TERMS:
            keep = set(sorted(unique, key=len, reverse=True)[:MAX_QUERY_TERMS])
            unique = [t for t in unique if t in keep]
        if not unique:
            return []
        kept = set(unique)
        pairs = [p for p in dict.fromkeys(terms(text)[len(query):]) if set(p.split("+")) <= kept][:MAX_QUERY_TERMS]
        unique += pairs
        name = name_key(text)
        if name is not None:
            unique.append(name)
        words = query_words(text, kept)
        scores: dict[int, float] = defaultdict(float)
        matched: dict[int, int] = defaultdict(int)
        covered: dict[int, set[int]] = defaultdict(set)
        df: dict[str, int] = {}
        for token in unique:
            postings = self._shard(token).get(token, [])
            df[token] = len(postings) // 2
            reach = range(len(words)) if token == name else [i for i, w in enumerate(words) if token in w]
            for i in range(0, len(postings) - 1, 2):
                scores[postings[i]] += postings[i + 1]
                matched[postings[i]] += 1
                covered[postings[i]].update(reach)
        weights = word_weights(words, df, self.manifest["entries"])
        total = sum(weights) or 1.0
        ranked = sorted(((doc, score * (1 + matched[doc] / len(unique))
                          * (sum(weights[i] for i in sorted(covered[doc])) / total) ** 2)
                         for doc, score in scores.items()), key=lambda p: (-p[1], p[0]))
        cutoff = self.manifest.get("cutoff", 0) * ranked[0][1] if ranked else 0
        ranked = [r for r in ranked if r[1] >= cutoff][:limit]
        per = self.manifest["docs_per_shard"]
        out = []
        for doc, score in ranked:
            rows = jsonbytes.loads(self.files["search/" + self.manifest["doc_shards"][doc // per]])
            row = rows[doc % per]
            out.append({"id": row[0], "title": row[1], "summary": row[2], "severity": row[3], "category": row[4],
                        "score": round(score, 3), "matched": matched[doc], "terms": len(unique)})
        return out
