"""An entry's search terms and their weights, computed where the entry is loaded (in worker
processes on large sites) so that the site's index only adds the corpus-wide idf."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

from ..text import name_key, plain, terms, tokens

#: how much a word in each field says that an entry is about it. The id is the entry's topic in
#: a few words chosen by its author ("dataloader-worker-killed"), the strongest field there is
FIELD_WEIGHTS = {"id": 1.5, "title": 3.0, "aliases": 3.0, "signatures": 3.0, "tags": 2.0, "systems": 1.5, "summary": 1.5,
                 "symptoms": 1.0, "examples": 0.5}
EXAMPLE_CHARS = 3000  # of each entry's example log lines: the words around real error messages
PHRASE_FIELDS = ("id", "title", "aliases", "signatures")
ALIAS_NAME_WEIGHT = 6.0  # the whole alias as one term (text.name_key): a query that is exactly an alias


def document_fields(loaded) -> dict[str, str]:
    entry = loaded.entry
    # the literal text of each signature (a regex's source would add its syntax as words)
    signature_text = " ".join(sig.pattern or "" for sig in entry.signatures)
    signature_text += " " + " ".join(step.pattern or "" for sig in entry.signatures for step in sig.lines or [])
    signature_text += " " + " ".join(step.anchor for sig in loaded.signatures for step in sig.steps)
    examples = " ".join(ex for sig in entry.signatures for ex in sig.example_logs)
    symptoms = " ".join(plain(s.observed) for s in entry.symptoms)
    if not entry.signatures:
        # a failure that prints no error (role: symptom) is searched for by what is seen and
        # measured: its symptoms weigh as a signature would, its confirm steps as example logs
        signature_text, symptoms = symptoms, ""
        examples = " ".join(plain(step.step) + " " + (step.command or "") for step in entry.confirm)
    return {
        "id": entry.id,
        "title": entry.title,
        "aliases": "\n".join(entry.aliases),  # one per line: pairs are made within an alias only
        "signatures": signature_text,
        "tags": " ".join(entry.tags) + " " + entry.category,
        "systems": " ".join(entry.systems),
        "summary": plain(entry.summary),
        "symptoms": symptoms,
        "examples": examples[:EXAMPLE_CHARS],
    }


def entry_weights(loaded) -> dict[str, float]:
    """How strongly each search term describes one entry, before the corpus-wide idf. Computed
    where the entry is loaded (in worker processes on large sites)."""
    per_token: dict[str, float] = defaultdict(float)
    for field, text in document_fields(loaded).items():
        split = terms if field in PHRASE_FIELDS else tokens
        pieces = text.split("\n") if field == "aliases" else (text,)
        found = split(text) if len(pieces) == 1 else [t for piece in pieces for t in split(piece)]
        for token, count in Counter(found).items():
            per_token[token] += FIELD_WEIGHTS[field] * (1 + math.log(count))
    for alias in loaded.entry.aliases:
        key = name_key(alias)
        if key is not None:
            per_token[key] = ALIAS_NAME_WEIGHT
    return dict(per_token)
