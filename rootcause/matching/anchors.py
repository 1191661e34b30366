"""Which signatures could match: the table of every signature's anchors, and cheap exact
answers to "which anchors can occur in this block of log" and "which occur in this line".

A scanner of a large catalog would otherwise compile, before reading a byte, one expression of
every anchor (the prefilter) and an RE2 set of them (the candidate index): at 10,000 entries
that is seconds, for a log of one line. The table answers both questions without either:

- `possible(block)`: the anchors that can match somewhere in a block of raw log bytes, the way
  the prefilter reads them (a space in an anchor also matches a wrap, see `scanner.WRAP`). A
  word of an anchor between two others is a whole whitespace-separated token wherever the
  anchor matches, so an anchor whose longest such word is not among the block's tokens cannot
  match there; an anchor of one or two words is kept when its longest word occurs in the block.
  The prefilter compiled from the anchors kept finds exactly what the one of every anchor finds
  in that block: the others match nowhere in it.
- `candidate_anchors(text)`: the anchors contained in a line's text, exactly (as the RE2 set
  does), found through their first `PREFIX` characters.

Signatures are numbered in catalog order and materialised only when one of their anchors is
met: from `CompiledSignature` objects, or from the JSON records of a compiled index (the
project's cache, see `rootcause.site.diagnosis_index`), which are then read one by one.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable

from .. import jsonbytes
from .patterns import Compiled
from .signatures import CompiledSignature, anchors_of

PREFIX = 8                    # characters of an anchor used to look it up in a line
LONG_PREFIX = 16              # ... and of a wrap piece, where many pieces share their first PREFIX
#: `holds_cut_anchor` searches a line for a cut anchor by position until it has done so this many
#: times (or half as many times as there are anchors): then it first asks `_GramBits`, whose
#: making costs about a second per 15,000 anchors, whether the line begins or ends inside one
EDGES_AFTER_CHECKS = 2_000
#: A hard wrap (a terminal's, cut at exactly N columns inside a word) breaks an anchor where no
#: space stands, so that neither physical line holds it whole and the prefilter, which reads a
#: space as a wrap but not a cut word, finds neither. Each anchor is therefore also looked for
#: by its wrap pieces (`wrap_pieces`), one of which such a wrap leaves whole: the line holding
#: it is a candidate, and the scanner joins the lines of the wrapped message (`scanner.wrap_texts`)
#: to find the anchor whole. A line this long or longer, as printed (prefixes included), may
#: continue on the next line: a wrap is at least MIN_WRAPPED columns wide.
MIN_WRAPPED = 40
#: ... and at most this many: a longer line is no terminal's or form's wrap (and a join of such
#: lines, a log of long lines packed with anchors, would cost the scan dearly for nothing)
MAX_WRAPPED = 512
WRAP_PIECE = MIN_WRAPPED // 2
#: a piece shorter than this is text that ordinary output prints: a short anchor has none
MIN_PIECE = 8
_SEPARATORS = re.compile(r"[ \t]+")
_SPLIT_BYTES = frozenset(b" \t\n\r\x0b\x0c")   # where bytes.split() cuts a token
FORMAT = 3   # 2: a signature record may hold its core; 3: its raising frames


def wrap_pieces(anchor: str) -> tuple[str, ...]:
    """The pieces of an anchor, one of which a wrap at MIN_WRAPPED columns or more leaves
    whole, wherever its cuts fall (each is at least MIN_WRAPPED characters after the last): an
    anchor of 2 × WRAP_PIECE characters or more, its last two runs of WRAP_PIECE characters (a
    cut inside the last leaves the one before whole, as the cut before is a wrap's width further
    back; the last ones, as an anchor's first words are often a component's or a class's name
    that healthy lines print too);
    a shorter one, its two halves (one cut at most: one half is whole). Blanks at a piece's ends
    are dropped; a piece shorter than MIN_PIECE is none (the anchor then has none)."""
    if len(anchor) >= 2 * WRAP_PIECE:
        found = (anchor[-2 * WRAP_PIECE:-WRAP_PIECE], anchor[-WRAP_PIECE:])
    else:
        found = (anchor[:(len(anchor) + 1) // 2], anchor[len(anchor) // 2:])
    pieces = tuple(piece.strip(" \t") for piece in found)
    return pieces if all(len(piece) >= MIN_PIECE for piece in pieces) else ()


def cut_at_edge(text: str, begin: int, anchor: str) -> bool:
    """Is `anchor`, placed at text[begin], cut by the text's start or end, the text agreeing with
    it up to that edge?"""
    end = begin + len(anchor)
    if begin >= 0 and end <= len(text):
        return False
    low, high = max(begin, 0), min(end, len(text))
    return low < high and text[low:high] == anchor[low - begin:high - begin]


class CorruptIndex(ValueError):
    """A compiled index whose content does not hold together (a record that is not one)."""


def signature_from_json(data: dict) -> CompiledSignature:
    """Rebuild a compiled signature from its JSON record (a built site's signatures.json, or a
    compiled index's records)."""
    steps = tuple(Compiled(source=regex, regex=regex, anchor=anchor, literal_chars=0) for regex, anchor in data["steps"])
    unless = tuple(Compiled(source=regex, regex=regex, anchor=anchor, literal_chars=0)
                   for regex, anchor in data.get("unless", []))
    sig = CompiledSignature(entry_id=data["entry"], index=data["index"], steps=steps, unless=unless,
                            within=data.get("within", 40), core=data.get("core", ""),
                            frames=tuple((file, function) for file, function in data.get("frames", [])),
                            raises=data.get("raises", ""))
    object.__setattr__(sig, "_specificity", data["specificity"])
    return sig


def _number(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -10**9 < value < 10**9


def _pairs(value) -> bool:
    return isinstance(value, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(t, str) for t in p) for p in value)


def signature_problem(sig, where: str = "the signature") -> str | None:
    """What is wrong with the shape of a signature's JSON record (it may come from anywhere), or None."""
    if not isinstance(sig, dict):
        return f"{where} is not a mapping"
    if not isinstance(sig.get("entry"), str) or not _number(sig.get("index")) or not _number(sig.get("specificity")):
        return f"{where} lacks a text 'entry' or a number 'index' or 'specificity'"
    if not _pairs(sig.get("steps")) or not sig["steps"]:
        return f"{where}.steps is not a list of [regex, anchor] pairs"
    if not _pairs(sig.get("unless", [])):
        return f"{where}.unless is not a list of [regex, anchor] pairs"
    if not _number(sig.get("within", 40)) or sig.get("within", 40) < 1:
        return f"{where}.within is not a positive number"
    core = sig.get("core", "")
    if not isinstance(core, str) or (core and (len(sig["steps"]) != 1 or len(core) < 8)):
        return f"{where}.core is not the text of a single-line signature's core"
    if not _pairs(sig.get("frames", [])) or not isinstance(sig.get("raises", ""), str):
        return f"{where}.frames is not a list of [file, function] pairs with a text 'raises'"
    return None


def signature_from_record(data) -> CompiledSignature:
    """A signature of a compiled index, its shape checked and its regexes compiled; CorruptIndex if not."""
    problem = signature_problem(data)
    if problem:
        raise CorruptIndex(problem)
    sig = signature_from_json(data)
    try:
        sig.step_regexes, sig.unless_regexes  # noqa: B018 - compile now, refuse now
    except Exception as exc:  # noqa: BLE001 - re2's error type is not part of its interface
        raise CorruptIndex(f"a regular expression of the signature does not compile ({exc})") from None
    return sig


def anchor_keys(anchor: str) -> tuple[str | None, str]:
    """(token key, loose word) of an anchor: its longest interior word that bytes.split() keeps
    whole, if it has one; else (None, its longest word), to be looked for as a substring."""
    words = _SEPARATORS.split(anchor)
    interior = [w for w in words[1:-1] if w and not (_SPLIT_BYTES & set(w.encode("utf-8")))]
    if interior:
        return max(interior, key=len), ""
    return None, max(words, key=len)


class _GramBits:
    """Two sets of PREFIX-character texts as bits of their hashes (a Bloom filter of one hash):
    a text cut by a wrap inside an anchor begins (set 0) or ends (set 1) with one of the anchor's.
    A few MB whatever the number of anchors; a false "yes" costs only the exact search after it."""

    BITS = 1 << 24

    def __init__(self) -> None:
        self._bits = (bytearray(self.BITS // 8), bytearray(self.BITS // 8))

    def add(self, which: int, gram: str) -> None:
        spot = hash(gram) & (self.BITS - 1)
        self._bits[which][spot >> 3] |= 1 << (spot & 7)

    def holds(self, which: int, gram: str) -> bool:
        spot = hash(gram) & (self.BITS - 1)
        return bool(self._bits[which][spot >> 3] & (1 << (spot & 7)))


class SignatureTable:
    """Signatures by number, their distinct anchors (in first-seen order, steps then `unless`
    patterns of each signature in turn) and the signatures each anchor belongs to."""

    def __init__(self, signatures: list[CompiledSignature] | None = None):
        self.anchors: list[str] = []
        self.by_anchor: list[list[int]] = []   # anchor number → signature numbers, ascending
        self._position: dict[str, int] | None = {}
        self._signatures: list[CompiledSignature | None] = []
        self._load: Callable[[int], CompiledSignature] | None = None
        self._tokens: dict[str, list[int]] | None = None
        self._loose: list[tuple[bytes, int]] | None = None
        self._prefix: dict[str, list[int]] | None = None
        self._short: list[int] | None = None
        self._pieces: list[tuple[str, ...]] | None = None
        self._piece_prefix: dict[str, tuple[list, dict[str, list]]] | None = None
        self._piece_words: frozenset[str] = frozenset()
        self._edge_bits: _GramBits | None = None
        self._cut_checks = 0
        self._piece_loose_words = None   # an RE2 program of the loose pieces' words
        self._piece_tokens: dict[str, list[int]] | None = None
        self._piece_loose: list[tuple[bytes, int]] | None = None
        #: function → the signatures that name a raising frame in it (`scanner.frame_matches`)
        self.by_function: dict[str, list[int]] = {}
        for number, sig in enumerate(signatures or []):
            self._signatures.append(sig)
            for anchor in anchors_of(sig):
                self._add(anchor, number)
            self._add_frames(sig.frames, number)

    @property
    def position(self) -> dict[str, int]:
        """anchor → its number"""
        if self._position is None:
            self._position = {anchor: number for number, anchor in enumerate(self.anchors)}
        return self._position

    def _add(self, anchor: str, number: int) -> None:
        at = self.position.get(anchor)
        if at is None:
            at = self.position[anchor] = len(self.anchors)
            self.anchors.append(anchor)
            self.by_anchor.append([])
        bucket = self.by_anchor[at]
        if not bucket or bucket[-1] != number:
            bucket.append(number)

    def _add_frames(self, frames, number: int) -> None:
        for _file, function in frames:
            bucket = self.by_function.setdefault(function, [])
            if not bucket or bucket[-1] != number:
                bucket.append(number)

    def __len__(self) -> int:
        return len(self._signatures)

    def signature(self, number: int) -> CompiledSignature:
        sig = self._signatures[number]
        if sig is None:
            sig = self._signatures[number] = self._load(number)  # type: ignore[misc]
        return sig

    @property
    def signatures(self) -> list[CompiledSignature]:
        """Every signature (materialising them all)."""
        return [self.signature(n) for n in range(len(self))]

    # -- lookups ---------------------------------------------------------------------------------
    def _keys(self) -> None:
        tokens: dict[str, list[int]] = {}
        loose: list[tuple[bytes, int]] = []
        for number, anchor in enumerate(self.anchors):
            token, word = anchor_keys(anchor)
            if token is not None:
                tokens.setdefault(token, []).append(number)
            else:
                loose.append((word.encode("utf-8"), number))
        self._tokens, self._loose = tokens, loose

    def pieces(self, number: int) -> tuple[str, ...]:
        """The wrap pieces of anchor `number` (`wrap_pieces`), found by the prefilter with it."""
        if self._pieces is None:
            self._pieces = [wrap_pieces(anchor) for anchor in self.anchors]
        return self._pieces[number]

    def holds_cut_anchor(self, text: str) -> bool:
        """Does `text` hold a wrap piece of an anchor that runs on past its start or its end: the
        text agrees with the anchor up to its edge, and the rest of the anchor would lie on the
        line before or after (a wrap cut it)? A piece is looked up by its first PREFIX characters,
        then, where many pieces share those (anchors share words), by its first LONG_PREFIX."""
        if self._piece_prefix is None:
            self._piece_prefix = self._piece_buckets()
            if self._piece_tokens is None:
                self._piece_keys()
            # (a piece's interior word is a whole word of the text, or its longest word is in it)
            import re2

            from .patterns import escape

            self._piece_words = frozenset(self._piece_tokens)  # type: ignore[arg-type]
            loose = sorted({word.decode("utf-8") for word, _ in self._piece_loose})  # type: ignore[union-attr]
            options = re2.Options()
            options.max_mem = 64 << 20
            self._piece_loose_words = re2.compile("|".join(escape(word) for word in loose), options) if loose else None
        if self._piece_words.isdisjoint(_SEPARATORS.split(text)) and \
                (self._piece_loose_words is None or self._piece_loose_words.search(text) is None):
            return False   # no piece at all (most lines): the search by position is spared
        size = len(text)
        if size < PREFIX:
            return False
        self._cut_checks += 1
        if self._edge_bits is not None or self._cut_checks > max(EDGES_AFTER_CHECKS, len(self.anchors) // 2):
            edges = self._edges
            if not (edges.holds(0, text[:PREFIX]) or edges.holds(1, text[-PREFIX:])):
                return False   # the text neither begins nor ends inside an anchor: no cut at its edges
        get = self._piece_prefix.get
        for at in range(size - PREFIX + 1):
            bucket = get(text[at:at + PREFIX])
            if bucket is None:
                continue
            short, longer = bucket
            for pieces in (short, longer.get(text[at:at + LONG_PREFIX], ()) if longer else ()):
                for piece, places in pieces:
                    if text.startswith(piece, at):
                        for anchor, offset in places:
                            if cut_at_edge(text, at - offset, anchor):
                                return True
        return False

    @property
    def _edges(self) -> "_GramBits":
        """Where a text cut by a wrap can begin and end inside an anchor (`_GramBits`)."""
        if self._edge_bits is None:
            bits = _GramBits()
            for number, anchor in enumerate(self.anchors):
                places = [(anchor.find(piece), len(piece)) for piece in self.pieces(number)]
                if not places:
                    continue
                # a text that begins inside the anchor, after its start and before a whole piece,
                # and one that ends inside it, after a whole piece and before its end
                last_start = max(offset for offset, _ in places)
                for begin in range(1, min(last_start, len(anchor) - PREFIX) + 1):
                    bits.add(0, anchor[begin:begin + PREFIX])
                first_end = min(offset + length for offset, length in places)
                for end in range(max(first_end, PREFIX), len(anchor)):
                    bits.add(1, anchor[end - PREFIX:end])
            self._edge_bits = bits
        return self._edge_bits

    def _piece_buckets(self) -> dict[str, tuple[list, dict[str, list]]]:
        """The distinct wrap pieces, each with the (anchor, offset) places it has, by their
        first PREFIX characters: (pieces shorter than LONG_PREFIX, the longer ones by their
        first LONG_PREFIX characters)."""
        places: dict[str, list[tuple[str, int]]] = {}
        for number, anchor in enumerate(self.anchors):
            for piece in self.pieces(number):
                place = (anchor, anchor.find(piece))
                if place not in places.setdefault(piece, []):
                    places[piece].append(place)
        buckets: dict[str, tuple[list, dict[str, list]]] = {}
        for piece, where in places.items():
            short, longer = buckets.setdefault(piece[:PREFIX], ([], {}))
            if len(piece) < LONG_PREFIX:
                short.append((piece, tuple(where)))
            else:
                longer.setdefault(piece[:LONG_PREFIX], []).append((piece, tuple(where)))
        return buckets

    def _piece_keys(self) -> None:
        """The keys of the anchors' wrap pieces, as `_keys` (a compiled index stores the anchors'
        own keys only: these are made from the anchors when a scan first needs them)."""
        tokens: dict[str, list[int]] = {}
        loose: list[tuple[bytes, int]] = []
        for number in range(len(self.anchors)):
            for piece in self.pieces(number):
                token, word = anchor_keys(piece)
                if token is not None:
                    tokens.setdefault(token, []).append(number)
                else:
                    loose.append((word.encode("utf-8"), number))
        self._piece_tokens, self._piece_loose = tokens, loose

    @property
    def loose_count(self) -> int:
        """Anchors and wrap pieces looked for as substrings by `possible` (its cost is this times
        the block's size)."""
        if self._loose is None:
            self._keys()
        if self._piece_loose is None:
            self._piece_keys()
        return len(self._loose) + len(self._piece_loose)  # type: ignore[arg-type]

    def possible(self, block: bytes) -> set[int]:
        """Numbers of the anchors that can match somewhere in `block`, they or one of their wrap
        pieces (see the module's docstring)."""
        if self._tokens is None:
            self._keys()
        if self._piece_tokens is None:
            self._piece_keys()
        present = set(block.split())
        found = self._possible(block, present, self._tokens, self._loose)  # type: ignore[arg-type]
        found.update(self._possible(block, present, self._piece_tokens, self._piece_loose))  # type: ignore[arg-type]
        return found

    @staticmethod
    def _possible(block: bytes, present: set[bytes], keys: dict[str, list[int]],
                  loose: list[tuple[bytes, int]]) -> set[int]:
        found = set[int]()
        if len(present) < len(keys):  # type: ignore[arg-type]
            for token in present:
                try:
                    numbers = keys.get(token.decode("utf-8"))  # type: ignore[union-attr]
                except UnicodeDecodeError:   # a key is text: bytes that are not UTF-8 are none
                    continue
                if numbers:
                    found.update(numbers)
        else:
            for key, numbers in keys.items():
                if key.encode("utf-8") in present:
                    found.update(numbers)
        found.update(number for word, number in loose if word in block)
        return found

    def candidate_anchors(self, text: str) -> list[int]:
        """Numbers of the anchors that occur in `text`, ascending."""
        if self._prefix is None:
            prefix: dict[str, list[int]] = {}
            short: list[int] = []
            for number, anchor in enumerate(self.anchors):
                if len(anchor) < PREFIX:
                    short.append(number)
                else:
                    prefix.setdefault(anchor[:PREFIX], []).append(number)
            self._prefix, self._short = prefix, short
        prefix, anchors = self._prefix, self.anchors
        found = {number for number in self._short if anchors[number] in text}  # type: ignore[union-attr]
        get = prefix.get
        for at in range(len(text) - PREFIX + 1):
            numbers = get(text[at:at + PREFIX])
            if numbers:
                found.update(n for n in numbers if text.startswith(anchors[n], at))
        return sorted(found)

    # -- a compiled index --------------------------------------------------------------------------
    @staticmethod
    def records(signature_json: Iterable[dict]) -> tuple[dict, bytes]:
        """(table, records) for storing: the table as JSON data and the signatures' records, one
        JSON text per line, as `CompiledSignature.as_json` gives them (a site's signatures.json
        holds the same list)."""
        table = SignatureTable()
        lines, offsets, checks = [], [0], []
        for number, data in enumerate(signature_json):
            for anchor in [a for _regex, a in list(data["steps"]) + list(data.get("unless", []))] + \
                    ([data["core"]] if data.get("core") else []):
                table._add(anchor, number)
            table._add_frames(data.get("frames", []), number)
            line = jsonbytes.dumps(data, sort_keys=True)
            lines.append(line)
            offsets.append(offsets[-1] + len(line) + 1)
            checks.append(zlib.crc32(line))
        tokens: dict[str, list[int]] = {}
        loose: list[list] = []
        for number, anchor in enumerate(table.anchors):
            token, word = anchor_keys(anchor)
            if token is not None:
                tokens.setdefault(token, []).append(number)
            else:
                loose.append([word, number])
        return {"format": FORMAT, "count": len(lines), "anchors": table.anchors, "by_anchor": table.by_anchor,
                "tokens": tokens, "loose": loose, "offsets": offsets, "crc": checks, "frames": table.by_function}, \
            b"\n".join(lines) + (b"\n" if lines else b"")

    @classmethod
    def from_records(cls, table: dict, records: Callable[[], bytes | None],
                     build: Callable[[dict], CompiledSignature] = signature_from_record) -> SignatureTable:
        """The table of a compiled index; each signature is read from `records()` (the bytes that
        `records` wrote, fetched on first need) when one of its anchors is met. Raises
        CorruptIndex when the table does not hold together; a record that fails its CRC-32 or does
        not build raises CorruptIndex when it is read."""
        try:
            anchors, by_anchor, offsets, checks, count = (table["anchors"], table["by_anchor"], table["offsets"],
                                                          table["crc"], table["count"])
            if (table.get("format") != FORMAT or not isinstance(count, int) or len(offsets) != count + 1
                    or len(checks) != count or len(anchors) != len(by_anchor)
                    or not all(isinstance(a, str) for a in anchors)
                    or not all(isinstance(n, int) and 0 <= n < count for b in by_anchor for n in b)):
                raise CorruptIndex("the signature table does not hold together")
        except (KeyError, TypeError) as exc:
            raise CorruptIndex(f"the signature table does not hold together ({exc})") from None
        try:
            tokens = table["tokens"]
            loose = [(word.encode("utf-8"), number) for word, number in table["loose"]]
            if not isinstance(tokens, dict) or sum(map(len, tokens.values())) + len(loose) != len(anchors):
                raise CorruptIndex("the anchor keys do not cover every anchor once")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptIndex(f"the anchor keys do not hold together ({exc})") from None
        frames = table.get("frames", {})
        if not isinstance(frames, dict) or not all(
                isinstance(f, str) and isinstance(b, list) and all(isinstance(n, int) and 0 <= n < count for n in b)
                for f, b in frames.items()):
            raise CorruptIndex("the frame table does not hold together")
        self = cls()
        self.by_function = frames
        self._tokens, self._loose = tokens, loose
        self.anchors, self.by_anchor = anchors, by_anchor
        self._position = None
        self._signatures = [None] * count
        blob: list[bytes] = []

        def load(number: int) -> CompiledSignature:
            if not blob:
                data = records()
                if data is None:
                    raise CorruptIndex("the signature records cannot be read")
                blob.append(data)
            line = blob[0][offsets[number]:offsets[number + 1] - 1]
            if zlib.crc32(line) != checks[number]:
                raise CorruptIndex(f"signature record {number} fails its checksum")
            try:
                sig = build(jsonbytes.loads(line))
            except CorruptIndex:
                raise
            except (ValueError, KeyError, TypeError, RecursionError) as exc:
                raise CorruptIndex(f"signature record {number} is not a signature ({exc})") from None
            for anchor in anchors_of(sig):
                at = self.position.get(anchor)
                if at is None or number not in by_anchor[at]:
                    raise CorruptIndex(f"signature record {number} does not belong to its anchors")
            return sig

        self._load = load
        return self
