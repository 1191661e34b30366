"""The search index (sharded, so the first result needs little transfer) and the signature file
the in-browser diagnosis loads.

Tokens come from `rootcause.text`, per-entry term weights from `rootcause.entries.terms`.

Layout under `search/`:
- `manifest.json`: entry count, the token shards' keys (front-coded), one hash of every file
  (`index_version`, in each address as `?v=`);
- `t/<key>.json`: {token: [doc, score, doc, score, ...]} for a range of tokens in sorted order,
  cut where it would pass SHARD_BYTES and named by where it starts; a token in more than half the
  entries has no postings (a stop word of this site: never required, never completed);
- `d/<n>.json`: a row per entry (its `DOC_FIELDS`, named in the manifest), DOCS_PER_SHARD each.
A query fetches the manifest, one shard per query token (the word being typed: also the shards
of its completions) and the doc shards of the top hits, best hit first (search.js shows the
list as soon as the best hit's row is in).
"""

from __future__ import annotations

import bisect
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
from ..matching.events import printed_rules_for_javascript as printed_event_rules
from ..matching.events import rules_for_javascript as event_rules
from ..matching.incident import BACKTRACE_GAP, MAX_FAILURES, MESSAGES
from ..matching.scanner import (ERROR_EVENTS, FRAME_GAP, MAX_HITS_PER_SIGNATURE, MAX_LINES_SHOWN, MAX_MATCHES_PER_SIGNATURE,
                                MAX_WRAPPED, MAX_WRAPPED_LINES, MIN_PIECE, MIN_WRAPPED, RECORD_STARTS, SATURATION_CHECK,
                                SURE_CORE,
                                WRAP_PIECE)
from ..matching.shared import SHARED
from ..text import DECORATION_NEEDS, DECORATION_RULES, STOPWORDS, name_key, plain, terms, tokens, undecorate

if TYPE_CHECKING:
    from ..entries.catalog import Catalog

MAX_POSTINGS = 300     # a token's best entries; more never reach the top results of a query
# Sizes that keep a first result under 300 KB at 10,000 entries (bench/browser_bench.py): a
# query fetches the manifest (a few bytes per token shard), a shard per word and a doc shard per hit
SHARD_BYTES = 2 * 1024    # a token shard: a range of tokens, cut where it would pass this
DOCS_PER_SHARD = 2        # rows per doc shard: a page of 10 hits fetches up to 10 of them
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


def _dump(value) -> bytes:
    return jsonbytes.dumps(value, sort_keys=True)


def search_key(loaded) -> tuple:
    """Entries are numbered in this order: by category and system, so that the top hits of a
    query, which tend to share them, sit in few doc shards (fewer requests before the first result)."""
    return loaded.entry.category, loaded.entry.systems[0], loaded.entry.id


#: the fields of an entry's row in a doc shard, in their order there: the manifest names them and
#: both readers (`SearchIndex`, search.js) take a row's fields by these names
DOC_FIELDS = ("id", "title", "summary", "severity", "category")


def doc_row(entry_id: str, title: str, summary: str, severity: str, category: str) -> list:
    """An entry as a doc shard lists it, in DOC_FIELDS order (`summary`: its plain text)."""
    if len(summary) > SUMMARY_CHARS:
        summary = summary[:SUMMARY_CHARS].rsplit(" ", 1)[0] + "…"
    row = {"id": entry_id, "title": title, "summary": summary, "severity": severity, "category": category}
    return [row[name] for name in DOC_FIELDS]


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


def _scored(docs: dict[int, float], n: int) -> list[int]:
    """A token's postings (doc, score, doc, score, ...); none for a token in most entries (no help
    in ranking, only transfer), which the readers then take as a stop word of this site."""
    df = len(docs)
    if n >= 50 and df / n > 0.5:
        return []
    idf = math.log(1 + n / df)
    scored = sorted(((doc, max(1, round(10 * w * idf))) for doc, w in docs.items()), key=lambda p: (-p[1], p[0]))
    return [number for pair in scored[:MAX_POSTINGS] for number in pair]


def term_shards(group: dict[str, dict[int, float]], key: str, n: int) -> dict[str, bytes]:
    """{shard key: file body} of the tokens of one two-character group `key` (their shards depend
    on nothing else, so a changed entry rewrites only the groups of the tokens it changed): the
    group's tokens in order, cut into shards of at most SHARD_BYTES (a token's postings are never
    cut). A shard's key is where its range of tokens starts: the group's key for the first, then
    the shortest start of its first token that sorts after the previous shard's last one, so that
    a token's shard is the one with the last key not after it (`shard_key`)."""
    if not group:
        return {}
    shards: dict[str, bytes] = {}
    pieces: list[bytes] = []
    size = 1   # the braces and commas: "{" + pieces joined by "," + "}" is 1 + sum(len(piece) + 1)
    shard = previous = ""
    for token in sorted(group):
        piece = _dump(token) + b":" + _dump(_scored(group[token], n))
        if pieces and size + len(piece) + 1 > SHARD_BYTES:
            shards[shard or key] = b"{" + b",".join(pieces) + b"}"
            shard = next(token[:j] for j in range(3, len(token) + 1) if token[:j] > previous)
            pieces, size = [], 1
        pieces.append(piece)
        size += len(piece) + 1
        previous = token
    shards[shard or key] = b"{" + b",".join(pieces) + b"}"
    return shards


def encode_keys(keys: list[str]) -> str:
    """The shard keys, sorted, written as the manifest holds them: each as the number of leading
    characters it shares with the one before (one character, 0-9 then a-z) and the rest, separated
    by spaces ("nc nca 3b" for nc, nca, ncab). Keys of long identifiers share most of their
    characters, so this halves the manifest, which is fetched before any result. As search.js's decodeKeys."""
    out, previous = [], ""
    for key in sorted(keys):
        shared = 0
        while shared < min(len(key), len(previous), len(_DIGITS) - 1) and key[shared] == previous[shared]:
            shared += 1
        out.append(_DIGITS[shared] + key[shared:])
        previous = key
    return " ".join(out)


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def decode_keys(text: str) -> list[str]:
    keys, previous = [], ""
    for item in text.split(" ") if text else []:
        previous = previous[:_DIGITS.index(item[0])] + item[1:]
        keys.append(previous)
    return keys


def shard_path(key: str) -> str:
    return f"search/t/{key}.json"


def doc_path(number: int) -> str:
    return f"search/d/{number}.json"


def doc_shard(number: int, rows: list[list]) -> tuple[str, bytes]:
    return doc_path(number), _dump(rows)


def index_version(digests: Mapping[str, str]) -> str:
    """One hash of every shard's path and content (`write.file_digest`s): the readers ask for a
    shard as `<path>?v=<this>`, so that a browser never mixes shards of two builds, while a shard
    keeps its file name (a rebuild writes only the shards whose content changed)."""
    return hashlib.sha256("".join(f"{path}\0{digests[path]}\n" for path in sorted(digests)).encode()).hexdigest()[:10]


def manifest_file(n: int, shard_keys: list[str], version: str, base_url: str, encoded: str | None = None) -> bytes:
    """The manifest keeps its name (pages do not change when the index does); the browser
    revalidates it. It names the token shards by key alone (`shard_path`, `encode_keys`) and the
    doc shards not at all (`doc_shard`: one per DOCS_PER_SHARD entries), so that its size, fetched
    before any result, grows by a few bytes per token shard; and it gives search.js the query's
    constants (`query`), declared here once. `base_url`: where the site is hosted, so that a
    copy of it (`diagnose --site`) links there. `encoded`: `encode_keys(shard_keys)`, when made
    already."""
    return _dump({"version": 3, "entries": n, "base_url": base_url, "doc_fields": list(DOC_FIELDS),
                  "docs_per_shard": DOCS_PER_SHARD, "files": version,
                  "shards": encode_keys(shard_keys) if encoded is None else encoded,
                  "query": {"max_terms": MAX_QUERY_TERMS, "prefix_weight": PREFIX_WEIGHT,
                            "prefix_shards": PREFIX_SHARDS, "short_words": SHORT_WORDS},
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
    """{relative path: bytes} of every search file (the manifest names their content's hash). `release`:
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
    known: dict[str, str] = {}
    for key in sorted(shards):
        for _shard, (data, name, digest) in sorted(shards[key].items()):
            files[name] = data
            known[name] = digest
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
        known[name] = hashlib.sha256(data).hexdigest()[:32] if keys is None else digest
    shard_keys = [name[len("search/t/"):-len(".json")] for name in known if name.startswith("search/t/")]
    # with `kept`: the keys' text by the keys (thousands of them, and an edit seldom adds one)
    encoded = kept.memoised("shard-keys", tuple(shard_keys), lambda: encode_keys(shard_keys)) \
        if kept is not None else None
    files[MANIFEST] = manifest_file(n, shard_keys, index_version(known), catalog.config.base_url, encoded)
    if digests is not None:
        digests.update(known)
    return files


def _numbering(row: tuple[tuple, list]) -> bytes:
    return repr(row[0]).encode("utf-8", "surrogateescape")


def _doc_shard_of(start: int, rows: list[list]) -> tuple[str, bytes, str]:
    """`doc_shard`, with its `write.file_digest`."""
    name, data = doc_shard(start // DOCS_PER_SHARD, rows)
    return name, data, hashlib.sha256(data).hexdigest()[:32]


def _named(shards: dict[str, bytes]) -> dict[str, tuple[bytes, str, str]]:
    """Each shard's bytes with its path (`shard_path`) and `write.file_digest`, from one hash."""
    return {shard: (data, shard_path(shard), hashlib.sha256(data).hexdigest()[:32]) for shard, data in shards.items()}


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
    row. An entry with no signature has a row too: a report names it for what a log shows
    without an error line (the loss it ends with, the phase it stops in)."""
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
        "record_starts": sorted(RECORD_STARTS),
        "limits": {"max_line": MAX_LINE, "max_prefixes": MAX_PREFIXES, "default_within": 40,
                   "max_hits_per_signature": MAX_HITS_PER_SIGNATURE,
                   "max_matches_per_signature": MAX_MATCHES_PER_SIGNATURE, "max_lines_shown": MAX_LINES_SHOWN,
                   "min_wrapped": MIN_WRAPPED, "max_wrapped": MAX_WRAPPED, "max_wrapped_lines": MAX_WRAPPED_LINES,
                   "wrap_piece": WRAP_PIECE, "min_piece": MIN_PIECE, "saturation_check": SATURATION_CHECK, "max_failures": MAX_FAILURES},
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
    # joined once: the file is megabytes (19 MB at 10,000 entries), each copy of it a cost per build
    values: dict[str, list[bytes]] = {key: [value] for key, value in _signature_top(consequences).items()}
    values["signatures"] = [b"[", b",".join([signed for signed, _rows in made if signed]), b"]"]
    values["entries"] = [b"{", b",".join([rows for _signed, rows in made if rows]), b"}"]
    out = [b"{"]
    for key in sorted(values):
        out += [_dump(key), b":", *values[key], b","]
    out[-1] = b"}"
    return b"".join(out)


def build_signature_file(catalog: Catalog) -> bytes:
    related = {entry_id: [(r.id, r.relation) for r in loaded.entry.related] for entry_id, loaded in catalog.entries.items()}
    return assemble_signature_file({entry_id: signature_parts(loaded) for entry_id, loaded in catalog.entries.items()},
                                   consequences_of(related))


# The query's constants, sent to search.js in the manifest (`manifest_file`):
#: a pasted message's longest words decide (each costs a shard to fetch)
MAX_QUERY_TERMS = 12
#: a completion of the word being typed ("tim" → "timeout") counts this much of an exact match
PREFIX_WEIGHT = 0.7
#: the word being typed also reads the shards after its own that hold its completions, when there
#: are at most this many: a shorter prefix waits for the next key
PREFIX_SHARDS = 2
#: a short query: its entries with every word come first, and its last word is being typed. A
#: longer one (a description, a pasted line) ranks by score alone, in which the share of its words
#: an entry has already weighs, and is not being typed
SHORT_WORDS = 3
_WHITE = re.compile(r"[ \t\n\r\f\v]+")
_ENDS_IN_WORD = re.compile(r"[A-Za-z0-9_]$")


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


def shard_key(keys: list[str], token: str) -> str | None:
    """The shard a token would be in: the last of the sorted keys not after it (`term_shards`).
    As search.js's shardKey."""
    at = bisect.bisect_right(keys, token) - 1
    return keys[at] if at >= 0 else None


def prefix_keys(keys: list[str], token: str, more: int) -> list[str]:
    """The shards that hold the completions of a word being typed: its own shard, and those after
    it up to the one where words stop starting with it, when they are at most `more`. As
    search.js's prefixKeys."""
    first = bisect.bisect_right(keys, token) - 1
    last = bisect.bisect_right(keys, token + "\x7f") - 1   # (tokens are ASCII)
    return keys[max(first, 0):last + 1] if last - first <= more else keys[max(first, 0):first + 1]


def completions(shard: Mapping[str, list], token: str) -> list[str]:
    """The longer words of a shard that start with `token`: not pairs ("oom+killer") nor names ("~...")."""
    return [other for other in sorted(shard) if other != token and other.startswith(token)
            and "+" not in other and "~" not in other]


class SearchIndex:
    """The site's search index read back, queried the way theme/assets/search.js queries it: the
    same files, the same scores, the same order. `diagnose` uses it to offer entries related to an
    error that no signature explains."""

    def __init__(self, files: Mapping[str, bytes]):
        self.manifest = jsonbytes.loads(files[MANIFEST])
        self.shards = decode_keys(self.manifest["shards"])
        self.constants = self.manifest["query"]   # (`manifest_file`: as search.js reads them)
        self.files = files
        self._loaded: dict[str, dict] = {}

    @classmethod
    def from_folder(cls, site: "Path") -> "SearchIndex":
        folder = site / "search"
        files = {f"search/{p.relative_to(folder).as_posix()}": p.read_bytes()
                 for p in folder.rglob("*.json") if p.is_file()}
        return cls(files)

    def _file(self, path: str):
        if path not in self._loaded:
            self._loaded[path] = jsonbytes.loads(self.files[path])
        return self._loaded[path]

    def _shard(self, key: str | None) -> dict:
        return self._file(shard_path(key)) if key is not None else {}

    def query(self, text: str, limit: int = 10, prefix: bool = False) -> list[dict]:
        """[{id, title, summary, severity, category, score, matched, all_words}] best first; no
        cut-off below the best. For a short query (SHORT_WORDS), every entry that has all its
        words (of those the index knows) comes first, then those that have some, each group by
        score. `prefix`: the last word of a short query is being typed, so its completions count
        too (PREFIX_WEIGHT), as the site's search boxes ask.
        A pasted log line loses its decoration first, as the matcher's lines do
        (rootcause.text.undecorate). A query that is a short name also looks up its name term
        (an entry's alias, see rootcause.text.name_key)."""
        constants = self.constants
        max_terms = constants["max_terms"]
        text = "\n".join(undecorate(line) for line in text.split("\n"))
        query = tokens(text)
        # the word being typed: the last one, when the text ends in it ("cuda o" types no word),
        # of a query of a few words (a pasted line is not being typed)
        chunks = [chunk for chunk in _WHITE.split(text) if tokens(chunk)]
        last = query[-1] if (prefix and _ENDS_IN_WORD.search(text) and chunks and chunks[-1] == _WHITE.split(text)[-1]
                             and len(chunks) <= constants["short_words"]) else None
        unique = list(dict.fromkeys(query))
        if len(unique) > max_terms:
            keep = set(sorted(unique, key=len, reverse=True)[:max_terms])
            if last is not None:
                keep.add(last)
            unique = [t for t in unique if t in keep]
        if not unique:
            return []
        kept = set(unique)
        pairs = [p for p in dict.fromkeys(terms(text)[len(query):]) if set(p.split("+")) <= kept][:max_terms]
        unique += pairs
        name = name_key(text)
        if name is not None:
            unique.append(name)
        words = query_words(text, kept)
        shards = self.shards
        scores: dict[int, float] = {}
        matched: dict[int, int] = {}
        covered: dict[int, set[int]] = {}
        df: dict[str, int] = {}
        for token in unique:
            reach = range(len(words)) if token == name else [i for i, w in enumerate(words) if token in w]
            best: dict[int, float] = {}   # each entry's score for this token: its best posting
            postings = self._shard(shard_key(shards, token)).get(token)
            found = postings or []
            for i in range(0, len(found) - 1, 2):
                best[found[i]] = found[i + 1]
            if token == last and postings != []:   # (a word in most entries is not completed)
                for key in prefix_keys(shards, token, constants["prefix_shards"]):
                    shard = self._shard(key)
                    for other in completions(shard, token):
                        postings = shard[other]
                        for i in range(0, len(postings) - 1, 2):
                            doc, score = postings[i], postings[i + 1] * constants["prefix_weight"]
                            if score > best.get(doc, 0):
                                best[doc] = score
            df[token] = len(best)
            for doc, score in best.items():
                scores[doc] = scores.get(doc, 0) + score
                matched[doc] = matched.get(doc, 0) + 1
                covered.setdefault(doc, set()).update(reach)
        weights = word_weights(words, df, self.manifest["entries"])
        total = sum(weights) or 1.0
        known = {i for i, weight in enumerate(weights) if weight > 0}   # words the index has
        short = len(chunks) <= constants["short_words"]
        ranked = []
        for doc, score in scores.items():
            share = sum(weights[i] for i in sorted(covered[doc])) / total
            ranked.append((doc, score * (1 + matched[doc] / len(unique)) * share * share, known <= covered[doc]))
        ranked.sort(key=lambda r: (not (short and r[2]), -r[1], r[0]))
        fields = self.manifest["doc_fields"]
        per = self.manifest["docs_per_shard"]
        out = []
        for doc, score, whole in ranked[:limit]:
            row = dict(zip(fields, self._file(doc_path(doc // per))[doc % per]))
            out.append({**row, "score": round(score, 3), "matched": matched[doc], "terms": len(unique),
                        "all_words": whole})
        return out
