"""The search index (sharded, so the first result needs little transfer) and the signature file
the in-browser diagnosis loads.

Tokens. Text is cut into runs of `[A-Za-z0-9_]`; each run is kept whole (lower-cased) and, when
it is an identifier, also split into its parts at `_` and camelCase boundaries, so that
`CUDA_VISIBLE_DEVICES` is found by `cuda_visible_devices` and by `visible`. Volatile tokens are
dropped on both sides (numbers of two digits or more, hex addresses and hashes), as are a few
stop words; plural words are reduced to the singular (`stem`); one-digit numbers stay, since `torch.Size([0])` or ZeRO stage `3` tell failures apart: a
pasted message with other numbers, paths and names still finds its entry. theme/assets/search.js
implements the same `tokens()`; the tests compare the two.

Layout under `search/`:
- `manifest.json`: entry count, shard keys → file names, doc shard names;
- `t/<key>.<hash>.json`: {token: [doc, score, doc, score, ...]} for the tokens whose longest
  shard key is <key> (2 characters, lengthened where a shard would pass 24 KB);
- `d/<n>.<hash>.json`: [[id, title, summary, severity, category], ...] for 10 entries each.
A query fetches the manifest, one shard per query token and the doc shards of the top hits.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter, defaultdict
from functools import lru_cache
from typing import TYPE_CHECKING

from .content import plain
from .diagnose import MAX_HITS_PER_SIGNATURE, MAX_LINES_SHOWN, MAX_MATCHES_PER_SIGNATURE
from .logline import MAX_LINE, MAX_PREFIXES, rules_for_javascript

if TYPE_CHECKING:
    from .catalog import Catalog

STOPWORDS = frozenset("""a an and are as at be but by for from has have if in into is it its no not of on or
that the their then there these this to was were will with you your""".split())
_RUN = re.compile(r"[A-Za-z0-9_]+")
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# addresses (0x7f3a2c...) and hashes (8+ hex digits, at least one a digit); short hex-looking
# words such as bf16 or a100 are real terms
_HEXISH = re.compile(r"^(?:0x[0-9a-f]+|(?=[0-9a-f]*[0-9])[0-9a-f]{8,})$")

FIELD_WEIGHTS = {"title": 3.0, "signatures": 3.0, "tags": 2.0, "systems": 1.5, "summary": 1.5, "symptoms": 1.0,
                 "examples": 0.5}
EXAMPLE_CHARS = 3000  # of each entry's example log lines: the words around real error messages
MAX_POSTINGS = 300     # a token's best entries; more never reach the top results of a query
SHARD_SPLIT_BYTES = 24 * 1024
DOCS_PER_SHARD = 10
SUMMARY_CHARS = 140
MANIFEST = "search/manifest.json"
SIGNATURES = "search/signatures.json"


def _volatile(token: str) -> bool:
    """Numbers of two digits or more, hex addresses and hashes: they differ from run to run."""
    return (token.isdigit() and len(token) > 1) or bool(_HEXISH.match(token))


def _keep(token: str) -> bool:
    return (len(token) >= 2 or token.isdigit()) and token not in STOPWORDS and not _volatile(token)


def stem(token: str) -> str:
    """Plural to singular, roughly ('weights' → 'weight', 'entries' → 'entry'): the same on both sides."""
    if not token.isalpha():
        return token
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


@lru_cache(maxsize=1 << 18)
def _run_tokens(run: str) -> tuple[str, ...]:
    """The tokens of one `[A-Za-z0-9_]+` run; words repeat across entries, so this is memoised."""
    whole = run.lower()
    if _volatile(whole):
        return ()
    out = [stem(whole)] if _keep(whole) else []
    parts = [p for chunk in run.split("_") for p in _PART.findall(chunk)]
    if len(parts) > 1:
        out.extend(stem(p.lower()) for p in parts if _keep(p.lower()) and p.lower() != whole)
    return tuple(out)


def tokens(text: str) -> list[str]:
    """Search tokens of a text, in order, with repeats (see the module docstring)."""
    out: list[str] = []
    for run in _RUN.findall(text):
        out.extend(_run_tokens(run))
    return out


PHRASE_FIELDS = ("title", "signatures")


def terms(text: str) -> list[str]:
    """Tokens plus each pair of neighbouring tokens ("size+0" for `torch.Size([0])`): pairs tell
    apart messages made of the same words, like the shapes of two size-mismatch errors."""
    found = tokens(text)
    return found + [f"{a}+{b}" for a, b in zip(found, found[1:]) if a != b]


def _short_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:10]


def _dump(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8")


def document_fields(loaded) -> dict[str, str]:
    entry = loaded.entry
    # the literal text of each signature (a regex's source would add its syntax as words)
    signature_text = " ".join(sig.pattern or "" for sig in entry.signatures)
    signature_text += " " + " ".join(step.pattern or "" for sig in entry.signatures for step in sig.lines or [])
    signature_text += " " + " ".join(step.anchor for sig in loaded.signatures for step in sig.steps)
    return {
        "title": entry.title,
        "signatures": signature_text,
        "tags": " ".join(entry.tags) + " " + entry.category,
        "systems": " ".join(entry.systems),
        "summary": plain(entry.summary),
        "symptoms": " ".join(plain(s.observed) for s in entry.symptoms),
        "examples": " ".join(ex for sig in entry.signatures for ex in sig.examples)[:EXAMPLE_CHARS],
    }


def entry_weights(loaded) -> dict[str, float]:
    """How strongly each search term describes one entry, before the corpus-wide idf. Computed
    where the entry is loaded (in worker processes on large sites)."""
    per_token: dict[str, float] = defaultdict(float)
    for field, text in document_fields(loaded).items():
        split = terms if field in PHRASE_FIELDS else tokens
        for token, count in Counter(split(text)).items():
            per_token[token] += FIELD_WEIGHTS[field] * (1 + math.log(count))
    return dict(per_token)


def build_search_files(catalog: Catalog) -> dict[str, bytes]:
    """{relative path: bytes} of every search file. Shard names carry a content hash; the manifest
    keeps its name (pages do not change when the index does) and is revalidated by the browser.

    Entries are numbered by category and system, so the top hits of a query, which tend to share
    them, sit in few doc shards: fewer requests before the first result."""
    entries = sorted(catalog.entries.values(), key=lambda l: (l.entry.category, l.entry.systems[0], l.entry.id))
    n = len(entries)
    weights: dict[str, dict[int, float]] = defaultdict(dict)
    for number, loaded in enumerate(entries):
        for token, weight in (loaded.search_weights or entry_weights(loaded)).items():
            weights[token][number] = weight
    postings: dict[str, list[list[int]]] = {}
    for token, docs in weights.items():
        df = len(docs)
        if n >= 50 and df / n > 0.5:
            continue  # appears in most entries: no help in ranking, only transfer
        idf = math.log(1 + n / df)
        scored = sorted(((doc, max(1, round(10 * w * idf))) for doc, w in docs.items()), key=lambda p: (-p[1], p[0]))
        postings[token] = [number for pair in scored[:MAX_POSTINGS] for number in pair]  # doc, score, doc, ...

    files: dict[str, bytes] = {}
    shard_names: dict[str, str] = {}
    for key, group in sorted(_shard_groups(postings).items()):
        data = _dump(group)
        name = f"search/t/{key}.{_short_hash(data)}.json"
        files[name] = data
        shard_names[key] = name[len("search/"):]
    doc_shards = []
    for start in range(0, n, DOCS_PER_SHARD):
        rows = []
        for loaded in entries[start:start + DOCS_PER_SHARD]:
            e = loaded.entry
            summary = plain(e.summary)
            if len(summary) > SUMMARY_CHARS:
                summary = summary[:SUMMARY_CHARS].rsplit(" ", 1)[0] + "…"
            rows.append([e.id, e.title, summary, e.severity, e.category])
        data = _dump(rows)
        name = f"search/d/{start // DOCS_PER_SHARD}.{_short_hash(data)}.json"
        files[name] = data
        doc_shards.append(name[len("search/"):])
    manifest = {"version": 1, "entries": n, "docs_per_shard": DOCS_PER_SHARD, "doc_shards": doc_shards,
                "shards": shard_names, "stopwords": sorted(STOPWORDS)}
    data = _dump(manifest)
    files[MANIFEST] = data
    return files


def _shard_groups(postings: dict[str, list]) -> dict[str, dict[str, list]]:
    """Shards keyed by a token prefix: two characters, lengthened one character at a time where
    a shard would pass SHARD_SPLIT_BYTES. A token lives in the shard of its longest key."""
    result: dict[str, dict[str, list]] = {}

    def place(key: str, group: dict[str, list]) -> None:
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
            place(sub, subgroup)

    groups: dict[str, dict[str, list]] = defaultdict(dict)
    for token, plist in postings.items():
        groups[token[:2]][token] = plist  # a pair "a+b" lives with the tokens starting like "a"
    for key, group in sorted(groups.items()):
        place(key, group)
    return result


def build_signature_file(catalog: Catalog) -> bytes:
    """Everything the browser's matcher needs: line rules, compiled signatures, entry summaries."""
    entries = {}
    for entry_id, loaded in catalog.entries.items():
        e = loaded.entry
        entries[entry_id] = [e.title, plain(e.summary), f"entries/{entry_id}/", plain(e.fix[0].step)]
    consequences = {cause: sorted(ids) for cause, ids in sorted(catalog.consequences().items())}
    return _dump({
        "version": 1,
        "rules": rules_for_javascript(),
        "signatures": [sig.as_json() for sig in catalog.signatures()],
        "entries": entries,
        "consequences": consequences,
        "limits": {"max_line": MAX_LINE, "max_prefixes": MAX_PREFIXES, "default_within": 40,
                   "max_hits_per_signature": MAX_HITS_PER_SIGNATURE,
                   "max_matches_per_signature": MAX_MATCHES_PER_SIGNATURE, "max_lines_shown": MAX_LINES_SHOWN},
    })
