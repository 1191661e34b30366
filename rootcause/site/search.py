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

import functools
import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .. import jsonbytes
from ..entries.terms import entry_weights
from ..matching.logline import MAX_LINE, MAX_PREFIXES, rules_for_javascript
from ..matching.ranking import CONSEQUENCE_CHECKS, PHASE_TAIL, PHASES
from ..matching.rows import EntryInfo
from ..matching.events import ANCHORS as EVENT_ANCHORS
from ..matching.events import EXCEPTION_ANCHORS, EXCEPTION_KINDS, FINGERPRINT
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


#: entries per part of the index that `serve` memoises apart: an edit regroups the terms of its
#: part, and scores again the two-character groups whose postings changed
PART = 256


def search_row(loaded) -> tuple[tuple, list]:
    """An entry's place in the index's numbering (`search_key`) and its row in a doc shard."""
    e = loaded.entry
    return search_key(loaded), doc_row(e.id, e.title, plain(e.summary), e.severity, e.category)


def build_search_files(catalog: Catalog, release: bool = False, kept=None,
                       digests: dict[str, str] | None = None) -> dict[str, bytes]:
    """{relative path: bytes} of every search file; shard names carry a content hash. `release`:
    the entries' own weights are not needed afterwards (`term_weights`). `kept` (`serve`'s
    `memo.Kept`): each entry's row and terms, each part of the numbering's grouped terms and
    each group's shards are memoised there. `digests` gets the `write.file_digest` of the files
    whose hash is known already."""
    from ..memo import entry_column

    keys = catalog.keys() if kept is not None else None
    column = entry_column(kept, "search-row", catalog, search_row, content=_numbering)
    rows = column.values
    if keys is None:
        order = sorted(rows, key=lambda entry_id: rows[entry_id][0])
    else:   # the numbering, by what it is made from (the digest is of each entry's `search_key`)
        order = kept.memoised("search-order", column.digest, lambda: sorted(rows, key=lambda entry_id: rows[entry_id][0]))
    n = len(order)
    if keys is not None:
        shards = _memoised_shards(kept, catalog, order)
    else:
        grouped = term_weights([catalog.entries[entry_id] for entry_id in order], release)
        shards = {key: _named(term_shards(grouped[key], key, n)) for key in grouped}
    files: dict[str, bytes] = {}
    shard_names: dict[str, str] = {}
    for key in sorted(shards):
        for shard, (data, name, digest) in sorted(shards[key].items()):
            files[name] = data
            shard_names[shard] = name[len("search/"):]
            if digests is not None:
                digests[name] = digest
    doc_shards = []
    for start in range(0, n, DOCS_PER_SHARD):
        ids = order[start:start + DOCS_PER_SHARD]
        if keys is None:
            name, data = doc_shard(start // DOCS_PER_SHARD, [rows[entry_id][1] for entry_id in ids])
        else:   # kept by its number and its entries' record keys
            name, data, digest = kept.memoised("doc-shard", (start, *[keys[i] for i in ids]),
                                               lambda ids=ids, start=start: _doc_shard_of(start, [rows[i][1] for i in ids]))
            if digests is not None:
                digests[name] = digest
        files[name] = data
        doc_shards.append(name[len("search/"):])
    files[MANIFEST] = manifest_file(n, shard_names, doc_shards, catalog.config.base_url)
    return files


def _numbering(row: tuple[tuple, list]) -> bytes:
    return repr(row[0]).encode("utf-8", "surrogateescape")


def _doc_shard_of(start: int, rows: list[list]) -> tuple[str, bytes, str]:
    """`doc_shard`, with its `write.file_digest`."""
    name, data = doc_shard(start // DOCS_PER_SHARD, rows)
    return name, data, hashlib.sha256(data).hexdigest()[:32]


def _named(shards: dict[str, bytes]) -> dict[str, tuple[bytes, str, str]]:
    """Each shard's bytes with its path (`shard_path`) and `write.file_digest`, from one hash."""
    named = {}
    for shard, data in shards.items():
        digest = hashlib.sha256(data).hexdigest()
        named[shard] = (data, f"search/t/{shard}.{digest[:10]}.json", digest[:32])
    return named


def _memoised_shards(kept, catalog: Catalog, order: list[str]) -> dict[str, dict[str, tuple[bytes, str, str]]]:
    """`term_shards` of every two-character group, memoised: the numbering is cut into parts of
    PART entries, each part's terms grouped (`term_weights`) and kept as `marshal` bytes by the
    entries' record keys; a group's shards are kept by the hashes of its parts' postings. An
    edit of one entry groups one part again and scores the groups whose postings it changed."""
    import marshal

    from ..entries.catalog import weights_record
    from ..memo import per_entry

    n = len(order)
    parts: list[dict[str, tuple[bytes, bytes]]] = []
    for start in range(0, n, PART):
        ids = order[start:start + PART]
        key = hashlib.sha256(repr((start, [catalog.entries[i].source_key for i in ids])).encode()).hexdigest()

        def group(start=start, ids=ids) -> dict[str, tuple[bytes, bytes]]:
            weights = {start + k: marshal.loads(per_entry(kept, "weights", catalog.entries[entry_id], weights_record))
                       for k, entry_id in enumerate(ids)}
            grouped: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
            for number, own in weights.items():
                for token, weight in own.items():
                    grouped[token[:2]][token][number] = weight
            out = {}
            for g, tokens_ in grouped.items():
                body = marshal.dumps({token: dict(docs) for token, docs in tokens_.items()})
                out[g] = (hashlib.blake2b(body, digest_size=16).digest(), body)
            return out

        parts.append(kept.memoised("search-part", key, group))
        kept.touch("weights", [catalog.entries[i].source_key for i in ids])   # for the next time this part changes
    holders: dict[str, list[int]] = defaultdict(list)
    for p, part in enumerate(parts):
        for g in part:
            holders[g].append(p)
    shards = {}
    for g, held in holders.items():
        key = hashlib.sha256(f"{n}\0{g}\0{held}\0".encode() + b"".join([parts[p][g][0] for p in held])).hexdigest()

        def score(g=g, held=held) -> dict[str, tuple[bytes, str, str]]:
            merged: dict[str, dict[int, float]] = {}
            for p in held:
                for token, docs in marshal.loads(parts[p][g][1]).items():
                    merged.setdefault(token, {}).update(docs)
            return _named(term_shards(merged, g, n))

        shards[g] = kept.memoised("search-group", key, score)
    return shards


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


def _signature_top(consequences: dict[str, list[str]]) -> dict[str, bytes]:
    """signatures.json's members besides the entries and their signatures, as JSON text. Keys are
    written sorted and `consequences_in` reads the file's head: a new key must sort after
    "decoration", so that "consequences" stays first and "decoration" second."""
    return {**_rules_top(), "consequences": _dump(consequences)}


@functools.cache
def _rules_top() -> dict[str, bytes]:
    """`_signature_top` but the consequences: the code's own rules, dumped once per process."""
    top = {
        "version": 2,   # 2: entry rows are mappings read by name (`matching.rows`)
        "rules": rules_for_javascript(),
        "decoration": DECORATION_RULES,
        "decoration_needs": [list(marks) for marks in DECORATION_NEEDS],
        "shared": SHARED,
        "events": event_rules(),
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
        "limits": {"max_line": MAX_LINE, "max_prefixes": MAX_PREFIXES, "default_within": 40,
                   "max_hits_per_signature": MAX_HITS_PER_SIGNATURE,
                   "max_matches_per_signature": MAX_MATCHES_PER_SIGNATURE, "max_lines_shown": MAX_LINES_SHOWN,
                   "min_wrapped": MIN_WRAPPED, "saturation_check": SATURATION_CHECK, "max_failures": MAX_FAILURES},
    }
    return {key: _dump(value) for key, value in top.items()}


#: entries per piece of signatures.json that `serve` memoises apart (`assemble_signature_file`)
SIGNATURE_PIECE = 256


def signature_pieces(parts: dict[str, tuple[bytes, bytes | None]], ids: list[str]) -> tuple[bytes, bytes]:
    """The entries `ids`' share of signatures.json's "signatures" list and of its "entries"
    mapping, each as the members joined by commas (b"" for none)."""
    signed = b",".join([signed for i in ids if (signed := parts[i][0])])
    rows = b",".join([b'"' + i.encode() + b'":' + row for i in ids if (row := parts[i][1]) is not None])   # ids are kebab-case
    return signed, rows


def assemble_signature_file(parts: dict[str, tuple[bytes, bytes | None]], consequences: dict[str, list[str]],
                            pieces=None) -> bytes:
    """Everything the browser's matcher needs (line rules, compiled signatures, entry summaries),
    from each entry's `signature_parts`, by id: the same bytes as dumping the whole structure at
    once (each entry's parts are made once, where the entry is checked). The entries are taken
    SIGNATURE_PIECE at a time, in order of id; `pieces(ids)` gives a piece's `signature_pieces`
    (kept by `serve`: an edit joins one piece again)."""
    ids = sorted(parts)
    pieces = pieces or (lambda chunk: signature_pieces(parts, chunk))
    made = [pieces(ids[start:start + SIGNATURE_PIECE]) for start in range(0, len(ids), SIGNATURE_PIECE)]
    values = _signature_top(consequences)
    values["signatures"] = b"[" + b",".join([signed for signed, _rows in made if signed]) + b"]"
    values["entries"] = b"{" + b",".join([rows for _signed, rows in made if rows]) + b"}"
    return b"{" + b",".join(_dump(key) + b":" + values[key] for key in sorted(values)) + b"}"


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

    def __init__(self, files: Mapping[str, bytes]):
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
