"""Scan a log of any size for known signatures.

The scan streams the log in large binary chunks. One RE2 expression made of every signature's
anchor (its longest literal piece) finds candidate lines at close to literal-search speed; only
those lines are decoded, split into rank and text (`logline`) and matched in full
(`signatures.find_matches`). Memory stays flat in the size of the log: a chunk, the tail of a
partial line, and at most `MAX_HITS_PER_SIGNATURE` candidate lines per signature. Ranking what
was found is `ranking`'s job.

Start-up does not grow with the catalog: the first blocks are read with an expression of only
the anchors that can occur in them (`anchors.SignatureTable.possible`), signatures are
materialised when one of their anchors is met, and the expression of every anchor is compiled
only once a log has proved long enough to pay for it (see SUBSET_BYTES_PER_ANCHOR). Which way a
block is read changes the cost, never the lines found.

A message that a terminal, a form or a logger wrapped over several physical lines (#31) is read
as one line. A wrap at a space is found by the prefilter itself (WRAP); a terminal's cut inside a
word is found through the anchors' wrap pieces (`anchors.wrap_pieces`, one of which any wrap of
MIN_WRAPPED columns or more leaves whole). Around a line that holds a signature's anchor or wrap
piece, or is an error, the lines its message may have begun on and run on to are read
(`_Scan._before`, `_Scan._following`, at most MAX_WRAPPED_LINES each way) and joined
(`Scanner._wrap_info`, `wrap_texts`): only lines that continue it (no timestamp, no other
process's prefix, no record of their own), only while every line before a break was cut at the
wrap's width (a line that ends short of it ended its message), and only where the join makes a
signature match that none of its physical lines matches alone. The joined line keeps its first
line's number and prefixes; a log whose messages a wrap cut is read with multi-line windows as
wide as the wrap made them (`find_matches`' `wrap`).
"""

from __future__ import annotations

import errno
import io
import re
import zlib
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable, Iterable, Iterator, Set
from typing import BinaryIO

import re2

from .events import ANCHORS as EVENT_ANCHORS
from .events import EXCEPTION_ANCHORS, recognise, recognise_printed
from ..text import undecorate
from .incident import INCOMPLETE_TRACEBACK, Failure, LogModel, covers, fits
from .logline import MAX_LINE, LogLine, parse_line
from .metrics import tail_of
from .patterns import escape
from .anchors import (MAX_WRAPPED, MIN_PIECE, MIN_WRAPPED, WRAP_PIECE, SignatureTable, anchors_of, signature_from_json,
                      signature_problem)
from .rows import row_problem
from .signatures import CompiledSignature, Match, find_matches

CHUNK = 1 << 22
#: a line's first LINE_BYTES bytes hold its first MAX_LINE characters (4 bytes of UTF-8 at most
#: each), all that a line is read for: the rest of a longer line is never kept
LINE_BYTES = 4 * MAX_LINE
#: The memo of parsed candidate lines (`Scanner._line_info`) holds lines up to SHORT_LINE bytes
#: by the thousand (crash loops and warning floods repeat them) and longer ones, cut to
#: LINE_BYTES, by the few hundred: at most about 8192 × 2 KiB + 256 × 32 KiB of keys, whatever
#: the log (keyed by whole lines it held 517 MB of 900 KB lines).
SHORT_LINE = 2048
MAX_HITS_PER_SIGNATURE = 1_000   # candidate lines kept per signature: far more than a report shows
MAX_MATCHES_PER_SIGNATURE = 20
MAX_LINES_SHOWN = 12
#: a space in an anchor also matches a line break with indentation: a message that a terminal,
#: `rich` or a logger wrapped at a space still reaches the matcher, as one joined line
WRAP = r"[ \t\n]+"   # a run of blanks and line breaks: a candidate is read to its second line at most,
                     # so allowing more than one break finds no other line than one break would, and
                     # RE2 compiles this form in 60 % of the time of the one-break form
#: A message is read over at most this many lines after its first (`wrap_texts`): a
#: terminal, a form or a logger that wraps at 60 columns makes seven of the longest one-line
#: message an example holds (autograd's in-place error, 375 characters after `[rank3]: `);
#: beyond that a line is seldom one message, and the work per candidate line stays bounded.
MAX_WRAPPED_LINES = 8
#: the events that open a record of their own: a line that is one never continues a message
#: wrapped from the lines before it (a traceback's lines, an exception's first line)
RECORD_STARTS = frozenset({"traceback", "frame", "cpp-frame", "chain", "raise", "exception", "cpp-throw",
                           "cpp-terminate", "report-field", "report-root"})
#: Saturation. A signature whose bucket is full, and the error events once the log model keeps
#: no more failures, gain nothing from further lines: their anchors leave the prefilter, so a
#: log in which most lines match scans at the speed of one in which few do. The prefilter is
#: rebuilt at the first candidate line past a multiple of this many lines (a line number, not a
#: byte offset, so that the browser, which reads the log differently, rebuilds at the same line).
SATURATION_CHECK = 1 << 16


@dataclass
class Report:
    lines_scanned: int = 0
    bytes_scanned: int = 0
    matches: list[Match] = field(default_factory=list)
    hit_lines: dict[int, LogLine] = field(default_factory=dict)
    match_lines: dict[str, list[int]] = field(default_factory=dict)   # entry → first line of each match
    model: LogModel | None = None
    incident: object = None                         # ranking.rank sets it (incident.Incident)
    findings: list = field(default_factory=list)
    first_failure: dict | None = None
    consequence_streams: list[str] = field(default_factory=list)
    unread: list[dict] = field(default_factory=list)   # logs not read to their end: {log, at, reason}
    tail: bytes = b""     # the log's last lines, which `metrics.loss_symptom` reads


def anchor_piece(anchor: str, fragments: dict[str, str]) -> str:
    """An anchor's alternative in the prefilter (memoised in `fragments`)."""
    piece = fragments.get(anchor)
    if piece is None:
        piece = WRAP.join(escape(word) for word in re.split(r"[ \t]+", anchor))
        if piece.startswith(WRAP):   # a blank it begins with is on its line, never the break before
            piece = r"[ \t]+" + piece[len(WRAP):]   # (as the browser's automaton reads a line)
        fragments[anchor] = piece
    return piece


def prefilter_regex(anchors: Iterable[str], fragments: dict[str, str] | None = None) -> str:
    """One alternation of every anchor, longest first, with spaces that also match a wrap.
    `fragments` memoises each anchor's piece (a rebuild mid-scan joins them again)."""
    fragments = {} if fragments is None else fragments
    return "|".join(anchor_piece(anchor, fragments) for anchor in sorted(set(anchors), key=lambda a: (-len(a), a)))


def _texts(value, n=None) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value) and (n is None or len(value) == n)


def index_problem(data) -> str | None:
    """What is wrong with the shape of a signatures.json (it may come from anywhere), or None."""
    if not isinstance(data, dict):
        return "the file holds no mapping"
    for key, kind in (("signatures", list), ("entries", dict), ("consequences", dict)):
        if not isinstance(data.get(key), kind):
            return f"'{key}' is missing or not a {'list' if kind is list else 'mapping'}"
    for i, sig in enumerate(data["signatures"]):
        where = f"signatures[{i}]"
        problem = signature_problem(sig, where)
        if problem:
            return problem
        if sig["entry"] not in data["entries"]:
            return f"{where} names the entry '{sig['entry'][:60]}', which 'entries' lacks"
    for key, value in data["entries"].items():
        problem = row_problem(key, value)
        if problem:
            return problem
    for key, value in data["consequences"].items():
        if not _texts(value):
            return f"consequences['{key[:60]}'] is not a list of entry ids"
    return None


def open_log(path: str | Path) -> BinaryIO:
    """A binary stream of a log ('-' is standard input; a named pipe, `<(...)` or `/dev/stdin`
    too), as UTF-8 lines: gunzipped member by member when it is gzip (`_Gunzip`), transcoded when
    a byte-order mark says UTF-16, its carriage returns read as line ends when it is CR-only
    (`_LogReader`). The browser's worker (`theme/assets/diagnose-worker.js`) reads a file the
    same way. What could not be read (junk after the last gzip member) is `unread_of(stream)`."""
    import sys

    if str(path) == "-" and sys.stdin is None:   # started with standard input closed (`<&-`)
        raise OSError(errno.EBADF, "standard input is closed; pass the log as a file, or pipe it in")
    raw: BinaryIO = sys.stdin.buffer if str(path) == "-" else open(path, "rb")  # noqa: SIM115
    try:
        return io.BufferedReader(_LogReader(raw, close=str(path) != "-"), CHUNK_OF_READER)
    except BaseException:
        if str(path) != "-":
            raw.close()
        raise


def unread_of(stream) -> tuple[int, str] | None:
    """(the byte of the file where reading stopped, why), or None when all of it was read."""
    reader = getattr(stream, "raw", None)
    return reader.unread if isinstance(reader, _LogReader) else None


CHUNK_OF_READER = 1 << 16
#: how much of a log decides that it is CR-only: a carriage return, and no line feed, in its first
#: SNIFF bytes (the browser decides on the same bytes)
SNIFF = 64 << 10
GZIP_MEMBER = b"\x1f\x8b\x08"


def _read_at_least(read, size: int) -> bytes:
    parts, got = [], 0
    while got < size:
        part = read(size - got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


class _Gunzip:
    """The gzip members of a file inflated one after another, as Python's gzip module reads
    them (zero bytes between and after members are padding), in pieces of bounded size (a gzip
    bomb costs no memory). Corrupt data raises zlib.error and a file cut short inside a member
    EOFError, as gzip does; data after a member that is neither another member nor padding ends
    the reading instead, with `unread` saying where it begins (the browser says the same)."""

    def __init__(self, raw: BinaryIO, prefix: bytes):
        self.raw = raw
        self.buf = prefix      # compressed bytes not yet inflated; `at`: where buf[0] is in the file
        self.at = 0
        self.member: zlib._Decompress | None = None   # the member being inflated
        self.started = False
        self.unread: tuple[int, str] | None = None
        self.done = False

    def _more(self) -> bool:
        data = self.raw.read(CHUNK_OF_READER)
        if data:
            self.buf += data
        return bool(data)

    def read(self, size: int) -> bytes:
        while not self.done:
            if self.member is None:
                # between members: skip zero padding, then another member or the end
                while True:
                    stripped = self.buf.lstrip(b"\0")
                    self.at += len(self.buf) - len(stripped)
                    self.buf = stripped
                    if len(self.buf) >= len(GZIP_MEMBER) or not self._more():
                        break
                if not self.buf:
                    self.done = True
                    break
                if self.buf[:len(GZIP_MEMBER)] != GZIP_MEMBER and self.started:
                    self.unread = (self.at, f"after byte {self.at:,} the file holds data that is neither another "
                                            "gzip member nor padding")
                    self.done = True
                    break
                self.member = zlib.decompressobj(31)
                self.started = True
            member = self.member
            if not self.buf and not self._more():
                raise EOFError("Compressed file ended before the end-of-stream marker was reached")
            out = member.decompress(self.buf, size)
            rest = member.unused_data if member.eof else member.unconsumed_tail
            self.at += len(self.buf) - len(rest)
            self.buf = rest
            if member.eof:
                self.member = None
            if out:
                return out
        return b""


class _LogReader(io.RawIOBase):
    """A log's bytes as the scanner reads them (see `open_log`)."""

    def __init__(self, raw: BinaryIO, close: bool = True):
        super().__init__()
        self._raw = raw
        self._close = close
        magic = _read_at_least(raw.read, 2)
        self._gunzip = _Gunzip(raw, magic) if magic == b"\x1f\x8b" else None
        self._pending = b"" if self._gunzip else magic
        head = _read_at_least(self._read_source, SNIFF)
        self._decoder = None
        if head[:2] in (b"\xff\xfe", b"\xfe\xff"):   # UTF-16, by its byte-order mark (which is dropped)
            import codecs

            encoding = "utf-16-le" if head[:2] == b"\xff\xfe" else "utf-16-be"
            self._decoder = codecs.getincrementaldecoder(encoding)("replace")
            sniffed = head[2:SNIFF - SNIFF % 2].decode(encoding, "replace")
            self._cr_only = "\r" in sniffed and "\n" not in sniffed
            head = head[2:]
        else:
            self._cr_only = b"\r" in head[:SNIFF] and b"\n" not in head[:SNIFF]
        self._ready = self._convert(head, final=not head)
        self._from = 0          # what of _ready was handed over
        self._ended = not head

    @property
    def unread(self) -> tuple[int, str] | None:
        return self._gunzip.unread if self._gunzip else None

    def _read_source(self, size: int) -> bytes:
        if self._pending:
            data, self._pending = self._pending[:size], self._pending[size:]
            return data
        return self._gunzip.read(size) if self._gunzip else self._raw.read(size)

    def _convert(self, data: bytes, final: bool = False) -> bytes:
        if self._decoder is not None:
            text = self._decoder.decode(data, final)
            if self._cr_only:
                text = text.replace("\r", "\n")
            return text.encode("utf-8")
        return data.replace(b"\r", b"\n") if self._cr_only else data

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self._from == len(self._ready) and not self._ended:
            data = self._read_source(len(buffer))
            if not data:
                self._ended = True
            self._ready, self._from = self._convert(data, final=not data), 0
        n = min(len(buffer), len(self._ready) - self._from)
        buffer[:n] = memoryview(self._ready)[self._from:self._from + n]
        self._from += n
        return n

    def close(self) -> None:
        if not self.closed and self._close:
            self._raw.close()
        super().close()


class LineBlocks:
    """A log's whole lines, CHUNK bytes at a time, in bounded memory: iterating gives (data,
    end), data[:end] being whole lines, each ending with a newline (the last line of the stream
    gets one). A line that runs past a chunk keeps its first LINE_BYTES bytes (MAX_LINE
    characters, all a line is read for): the rest is read and dropped up to its newline, so a
    single line of gigabytes, or a gzip bomb, costs a chunk and a line's head, never the line.
    One reader for every command that reads a log (`diagnose`, `run`, `new --from-log`)."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.bytes_read = 0
        self.last = False   # is the block just given the log's last?

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        tail = b""
        skipping = False  # inside a line longer than we keep: drop bytes until its newline
        chunk = self.stream.read(CHUNK)
        while chunk:
            # the next chunk is read first: an unfinished last line (a paste without its final
            # newline) ends the last block, after the lines whose message a wrap carried onto it
            ahead = self.stream.read(CHUNK)
            self.bytes_read += len(chunk)
            if skipping:
                newline = chunk.find(b"\n")
                if newline < 0:
                    chunk = ahead
                    continue
                chunk = chunk[newline:]
                skipping = False
            data = tail + chunk
            cut = data.rfind(b"\n") + 1
            if not ahead and cut < len(data):
                data = data[:cut] + data[cut:cut + LINE_BYTES] + b"\n"
                self.last = True
                yield data, len(data)
                return
            if cut == 0:
                tail = data[:LINE_BYTES]
                skipping = len(data) > LINE_BYTES
                chunk = ahead
                continue
            self.last = not ahead
            yield data, cut
            tail = data[cut:]
            if len(tail) > LINE_BYTES:
                tail, skipping = tail[:LINE_BYTES], True
            chunk = ahead
        if tail:
            self.last = True
            yield tail + b"\n", len(tail) + 1


#: Which prefilter reads a block. At first, one of only the anchors that can occur in the block
#: (`SignatureTable.possible`): it costs a little per byte read, and nothing in advance. The
#: prefilter of every anchor costs, once, in proportion to their number (seconds at 10,000
#: entries; not worth it for a short log), and then nothing per byte. A scan changes to the
#: latter once it has read SUBSET_BYTES_PER_ANCHOR bytes per anchor (at least SUBSET_MIN_BYTES),
#: or for a block whose loose anchors (those looked for as substrings) would cost more than
#: LOOSE_BUDGET bytes of search. Both find the same candidate lines: only the cost differs.
SUBSET_BYTES_PER_ANCHOR = 4 << 10
SUBSET_MIN_BYTES = 8 << 20
LOOSE_BUDGET = 1 << 27
#: One RE2 program of more regex characters than this is split into shards searched together
#: (`Shards`): RE2 refuses a program past its instruction limit, and its DFA reads a big one
#: slowly (on 10,000 entries' anchors, 139 MB/s at 300,000 characters, 62 at 600,000, 36 at
#: 1.2 million), so that past about this size two passes over a block cost no more than one.
MAX_PREFILTER_CHARS = 1 << 19
#: Candidate signatures of a line come from the table's lookup by the anchors' first characters
#: until this many lines (or as many as there are anchors) were looked up; then from one RE2 set
#: of every anchor, compiled once. Both give the same signatures.
SET_AFTER_LOOKUPS = 5_000


_ANCHOR = getattr(re2, "_Anchor", None)
_NO_MATCH = (-1, -1)


class Prefilter:
    """One compiled prefilter program. `span` asks RE2 for the leftmost match's (start, end) only:
    on a log where most lines are candidates, the wrapper's match objects cost a fifth of the scan.
    That call is google-re2's internal one; a release without it gets the public `search`."""

    def __init__(self, regex, internal: bool = True):
        self._regex = regex
        native = getattr(getattr(regex, "_regexp", None), "Match", None)
        self._native = native if internal and _ANCHOR is not None else None

    def span(self, data: bytes, pos: int = 0, end: int | None = None) -> tuple[int, int] | None:
        end = len(data) if end is None else end
        if self._native is not None:
            found = self._native(_ANCHOR.UNANCHORED, data, pos, end)[0]  # type: ignore[union-attr]  # with _native
            return None if found == _NO_MATCH else found
        match = self._regex.search(data, pos, end)
        return None if match is None else match.span()


class Shards:
    """Prefilter programs, each an alternation of a run of anchors in the prefilter's order,
    searched as the one alternation of them all: the leftmost match, and at equal starts the one
    of the first shard (RE2 prefers the first alternative that matches at the leftmost start).
    Each shard's last match is remembered, so that a block is read about once per shard."""

    def __init__(self, parts: list[Prefilter]):
        self.parts = parts
        self._last: list[tuple | None] = [None] * len(parts)

    def span(self, data: bytes, pos: int = 0, end: int | None = None) -> tuple[int, int] | None:
        end = len(data) if end is None else end
        best = None
        for number, part in enumerate(self.parts):
            last = self._last[number]
            if (last is not None and last[0] is data and last[1] == end and last[2] <= pos
                    and (last[3] is None or last[3][0] >= pos)):
                found = last[3]
            else:
                found = part.span(data, pos, end)
                self._last[number] = (data, end, pos, found)
            if found is not None and (best is None or found[0] < best[0]):
                best = found
        return best


class Scanner:
    def __init__(self, signatures: list[CompiledSignature] | SignatureTable):
        self.table = signatures if isinstance(signatures, SignatureTable) else SignatureTable(signatures)
        options = re2.Options()
        options.max_mem = 512 << 20
        options.log_errors = False
        self._options = options
        self._fragments: dict[str, str] = {}
        self._events = re2.compile("|".join(escape(a) for a in EVENT_ANCHORS).encode(), options)
        self._short_info = lru_cache(maxsize=8192)(self._line_info)
        self._long_info = lru_cache(maxsize=256)(self._line_info)
        self._short_wrap = lru_cache(maxsize=4096)(self._wrap_info)
        # a physical line is read by the joins of up to 2 × MAX_WRAPPED_LINES candidate lines near
        # it: a short one is read once (at most about 8192 × 2 KiB of keys, as `_short_info`)
        self._short_physical = lru_cache(maxsize=8192)(self._physical_info)
        self._compiled: dict[tuple, object] = {}   # prefilters, by their anchors
        self._set = None                           # RE2 set of every anchor, once lookups pay for it
        self._lookups = 0
        self._wrap_lookups = 0
        self._set_after = max(SET_AFTER_LOOKUPS, len(self.table.anchors))
        self.last_scan: _Scan | None = None        # the state of the last scan finished (for tests)

    @property
    def index(self) -> SignatureTable:
        """The signatures' anchors (`.anchors`) and the signatures of each."""
        return self.table

    @property
    def signatures(self) -> list[CompiledSignature]:
        return self.table.signatures

    @classmethod
    def from_site(cls, folder: str | Path) -> "Scanner":
        """The scanner of a built site's signature index (`search/signatures.json`)."""
        import json

        path = Path(folder) / "search" / "signatures.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        problem = index_problem(data)
        if problem:
            raise ValueError(f"{path}: not a signature index of this version of rootcause: {problem}")
        return cls([signature_from_json(s) for s in data["signatures"]])

    def _compile(self, anchors: list[str]):
        """The prefilter of these anchors: one RE2 program, or Shards of them in the same order."""
        if not anchors:
            return None
        ordered = sorted(set(anchors), key=lambda a: (-len(a), a))
        runs: list[list[str]] = [[]]
        size = 0
        for anchor in ordered:
            cost = len(anchor_piece(anchor, self._fragments)) + 1
            if runs[-1] and size + cost > MAX_PREFILTER_CHARS:
                runs.append([])
                size = 0
            runs[-1].append(anchor)
            size += cost
        parts = [Prefilter(re2.compile(prefilter_regex(run, self._fragments).encode(), self._options)) for run in runs]
        return parts[0] if len(parts) == 1 else Shards(parts)

    def _candidates(self, text: str, counted: bool = True) -> tuple[int, ...]:
        """Numbers of the signatures with an anchor in `text`, ascending. `counted`: a candidate
        line's lookup, else a wrapped message's (counted apart: either kind pays for the set)."""
        if counted:
            self._lookups += 1
        else:
            self._wrap_lookups += 1
        table = self.table
        if self._set is None and max(self._lookups, self._wrap_lookups) > self._set_after:
            options = re2.Options()
            options.literal = True
            options.max_mem = 256 << 20
            every = re2.Set.SearchSet(options)
            for anchor in table.anchors:
                every.Add(anchor)
            every.Compile()
            self._set = every   # whole before it is seen: scanners may be shared between threads
        every = self._set
        anchors = (every.Match(text) or ()) if every is not None else table.candidate_anchors(text)
        return tuple(sorted({n for a in anchors for n in table.by_anchor[a]}))

    def _prefilter(self, live: frozenset[int], exceptions_dead: bool):
        """The prefilter of these live anchors and the event anchors (compiled once, kept)."""
        key = (live, exceptions_dead)
        prefilter = self._compiled.get(key)
        if prefilter is None:
            events = [a for a in EVENT_ANCHORS if not (exceptions_dead and a in EXCEPTION_ANCHORS)]
            anchors, pieces = self.table.anchors, self.table.pieces
            # each anchor with its wrap pieces (`anchors.wrap_pieces`): a hard wrap cuts the anchor
            prefilter = self._compile([anchors[n] for n in live] + [p for n in live for p in pieces(n)] + events)
            if len(self._compiled) >= 32:
                self._compiled.clear()
            self._compiled[key] = prefilter
        return prefilter

    # -- scanning -------------------------------------------------------------------------------
    def scan_paths(self, paths: Iterable[str | Path]) -> Report:
        scan = _Scan(self)
        offset = 0
        for path in paths:
            with open_log(path) as stream:
                offset = scan.read(stream, offset)
                unread = unread_of(stream)
            if unread is not None:
                scan.report.unread.append({"log": str(path), "at": unread[0], "reason": unread[1]})
        return scan.finish()

    def scan_text(self, text: str) -> Report:
        return self.scan_stream(io.BytesIO(text.encode()))

    def scan_stream(self, stream: BinaryIO) -> Report:
        """Scan any binary reader (`read(n)` returning b"" at the end), e.g. a live process's output."""
        scan = _Scan(self)
        scan.read(stream, 0)
        return scan.finish()

    def _cached_info(self, raw: bytes) -> tuple:
        """`_line_info`, memoised per scanner: a log that repeats lines, as crash loops and
        warning floods do, parses each distinct line once. A line longer than LINE_BYTES is
        looked up by its first LINE_BYTES bytes, all that its parse reads (`parse_line` keeps
        MAX_LINE characters), so that the memo never holds a long line whole."""
        if len(raw) <= SHORT_LINE:
            return self._short_info(raw)
        if len(raw) > LINE_BYTES:
            raw = b"\n".join(part[:LINE_BYTES] for part in raw.split(b"\n"))
        return self._long_info(raw)

    def _line_info(self, raw: bytes) -> tuple:
        """What a candidate line is, before any neighbour is considered: (parsed line, candidate
        signatures by number, does any of their patterns match it, its event, is a wrap join
        read around it (see below))."""
        line = join_lines(raw.decode("utf-8", "replace").split("\n"))
        candidates = self._candidates(line.text)
        signature = self.table.signature
        step_hit = any(r.search(line.text) for n in candidates for r in signature(n).step_regexes)
        # the event anchors are looked for as printed: a rich frame's box is part of its anchor
        event = self._event_of(line, raw)
        # a wrap join is read around a line that holds a signature's anchor whose pattern it does
        # not match alone, or no anchor but a wrap piece of one that a wrap cut at its start or end
        # (`holds_cut_anchor`), or an error (a signal's line, an exception:
        # the rest of its message may hold the anchor). A line that every signature it holds an
        # anchor of matches is a message whole: it is read alone, and a later line's join may
        # begin on it.
        if candidates:
            joins = not all(any(r.search(line.text) for r in signature(n).step_regexes) for n in candidates)
        else:
            joins = (event is not None and event[0] in ERROR_EVENTS) or self.table.holds_cut_anchor(line.text)
        return line, candidates, step_hit, event, joins

    def _wrapped(self, raw: bytes, before: tuple[bytes, ...], following: tuple[bytes, ...]) -> tuple | None:
        """`_wrap_info`, memoised for short messages (crash loops repeat them whole)."""
        if len(raw) + sum(map(len, before)) + sum(map(len, following)) <= SHORT_LINE:
            return self._short_wrap(raw, before, following)
        return self._wrap_info(raw, before, following)

    def _wrap_info(self, raw: bytes, before: tuple[bytes, ...], following: tuple[bytes, ...]) -> tuple | None:
        """A candidate line's message where a wrap cut it into physical lines (`wrap_texts`):
        begun on the earliest of the lines `before` it that runs on into it (not when the line
        opens a record of its own: a traceback's line, an exception), else on the line itself,
        and joined with as many of the `following` lines as make the joined text match the most
        signatures that need the join (`needed`: a pattern or core that no physical line holds
        alone), the fewest lines of those, each break read as a space or as nothing (`wrap_texts`);
        the join must still match every signature that the line alone did.
        Returns (the joined line, its candidate signatures, how many lines before `raw` it
        begins, how many after it it takes), or None. A pattern that a wrap cut inside its
        anchor is whole in the joined text: the candidates are looked up there."""
        line, candidates, _hit, event, _joins = self._cached_info(raw)
        physical = raw.decode("utf-8", "replace").split("\n")
        after = [more.decode("utf-8", "replace") for more in following]
        # (lines before, the message's first line parsed, its physical lines, the lines after it,
        # how many of those make up the candidate line itself)
        # the earliest first: a line that continues the message of the line before it is no start
        starts = []
        if before and not (event is not None and event[0] in RECORD_STARTS):
            earlier = [more.decode("utf-8", "replace") for more in before]
            starts += [(back, parse_line(earlier[-back]), [earlier[-back]],
                        earlier[len(earlier) - back + 1:] + physical + after, back - 1 + len(physical))
                       for back in range(len(earlier), 0, -1)]
        starts.append((0, line, physical, after, 0))
        signature = self.table.signature

        def hits(n: int, text: str) -> bool:
            return any(r.search(text) for r in signature(n).step_regexes)

        def needed(n: int, text: str, pieces: list[str]) -> int:
            """Does the joined text match signature n where none of its physical lines does: 2
            for a step's pattern, 1 for the core only, else 0 (a multi-line signature's steps on
            lines next to each other stay lines of their own)."""
            sig = signature(n)
            if any(r.search(text) and not any(r.search(piece) for piece in pieces) for r in sig.step_regexes):
                return 2
            return int(bool(sig.core and sig.core in text and not any(sig.core in piece for piece in pieces)))

        whole = [n for n in candidates if hits(n, line.text)]
        for back, first, printed, rest, own in starts:
            joins = wrap_texts(first, printed, rest, self._physical)
            if len(joins) < max(own, 1):
                continue   # the lines before do not run on into the candidate line
            # (a multi-line signature's step, a traceback's frame line, may be wrapped as any line)
            found = self._candidates(joins[-1][0], False) + self._candidates(joins[-1][1], False)
            new = sorted(set(found) - set(whole))
            if not new:
                continue
            pieces = [first.text]
            best, most = None, 0
            for took, (spaced, tight, piece) in enumerate(joins, start=1 - own):
                pieces.append(piece)
                if took < 0:
                    continue   # not yet at the candidate line
                for text in dict.fromkeys((spaced, tight)):
                    count = sum(needed(n, text, pieces) for n in new)   # (a pattern counts over a core)
                    if count > most and all(hits(n, text) for n in whole):
                        best, most = (text, took), count
            if best is not None:   # the join that the most signatures need, the shortest of those
                text, took = best
                return (LogLine(text=text, rank=first.rank, host=first.host, time=first.time),
                        self._candidates(text, False), back, took)
        return None

    def _physical(self, raw: str) -> tuple[LogLine, int, bool]:
        """`_physical_info`, memoised for short lines."""
        return self._short_physical(raw) if len(raw) <= SHORT_LINE else self._physical_info(raw)

    def _physical_info(self, raw: str) -> tuple[LogLine, int, bool]:
        """What the wrap join reads of a physical line: (it parsed, its width as printed
        (`printed_width`), does it open a record of its own (`starts_record`))."""
        line = parse_line(raw)
        return line, printed_width(raw), self._starts_record(line, raw)

    def _starts_record(self, line: LogLine, raw: str) -> bool:
        """Does a physical line open a record of its own (RECORD_STARTS): no wrap continues onto it."""
        if not self._events.search(raw.encode("utf-8")):
            return False
        event = recognise(line.text)
        return event is not None and event[0] in RECORD_STARTS

    def _event_of(self, line: LogLine, raw: bytes) -> tuple | None:
        """The event a candidate line is: by its text, else by what its first physical line shows
        as printed (a progress bar the decoration removed)."""
        if not self._events.search(raw):
            return None
        return recognise(line.text) or recognise_printed(raw.split(b"\n", 1)[0].decode("utf-8", "replace")[:MAX_LINE])



#: the events that say a line is an error, not just text that mentions one
ERROR_EVENTS = frozenset({"exception", "cpp-throw", "cpp-what", "fatal", "log-error", "signal", "watchdog"})
#: a core this long is the failure's own sentence: a line holding it needs no other sign of an error
SURE_CORE = 30
#: a line this close below a traceback's frame stands where its exception line would (the frame's
#: source line and its ^^^ markers come between)
FRAME_GAP = 4


def core_holds(match: Match, error_lines: set[int]) -> bool:
    """A match through a signature's core counts when its core is long (SURE_CORE) or its line
    is an error: an error event (an exception, an error record...) or the place of a traceback's
    exception line. A short core is also text that healthy output may print ("... to avoid CUDA
    out of memory")."""
    return not match.by_core or len(match.signature.core) >= SURE_CORE or match.lines[0] in error_lines


def frame_matches(failures: list[Failure], table: SignatureTable, matches: list[Match],
                  reports: frozenset[int] | set[int] = frozenset()) -> list[tuple[Match, LogLine]]:
    """A traceback that no signature explains, whose message line is missing (an excerpt cut
    short) or cut before the pattern could match, is the failure whose declared raising frame
    (`frames:`) is its last frame: file by its path's end, function by name. That frame must be
    shown raising: the exception line the log shows names the class the signature's pattern
    raises, or, with none shown, the frame's source line is a `raise` statement (a call there
    means the excerpt lost the deeper frames that raised). One match per traceback, on its last
    frame's line (the signatures in table order: E057 keeps a frame to one entry)."""
    found = []
    for failure in failures:
        if failure.kind == "cpp" and failure.cpp_frames:
            if not _covered(failure, matches, reports):
                found += _cpp_frame_match(failure, table)
            continue
        if failure.kind != "exception" or failure.frame is None:
            continue
        number, file, function, raising = failure.frame
        numbers = table.by_function.get(function)
        if not numbers or _covered(failure, matches, reports):
            continue
        shown = "" if failure.text == INCOMPLETE_TRACEBACK else failure.text.split(":", 1)[0].rsplit(".", 1)[-1]
        if not shown and not raising:
            continue
        path = file.replace("\\", "/")
        for n in numbers:
            sig = table.signature(n)
            if shown and shown != sig.raises:
                continue
            if any(name == function and (path == suffix or path.endswith("/" + suffix)) for suffix, name in sig.frames):
                found.append((Match(sig, [number], failure.stream, by_frame=True),
                              LogLine(text=failure.location or "", rank=failure.rank, host=failure.host, time=None)))
                break
    return found


def _cpp_frame_match(failure: Failure, table: SignatureTable) -> list[tuple[Match, LogLine]]:
    """A C++ error whose message no signature matched (cut, missing, reworded), named by a
    declared raising frame of the backtrace printed with it (`LogModel._trace`): c10's header gives
    the source file and function; a `frame #N:` line gives the function qualified by its class,
    which C++ names after its file (`c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout` is defined in
    ProcessGroupNCCL.cpp). The exception class is C++'s, so none is compared."""
    for number, file, function, text in failure.cpp_frames:
        for n in table.by_function.get(function.rsplit("::", 1)[-1], ()):
            sig = table.signature(n)
            if any(cpp_frame_fits(file, function, suffix, name) for suffix, name in sig.frames):
                return [(Match(sig, [number], failure.stream, by_frame=True),
                         LogLine(text=text, rank=failure.rank, host=failure.host, time=None))]
    return []


def cpp_frame_fits(file: str, function: str, suffix: str, name: str) -> bool:
    """Is a C++ backtrace's raising frame (`file` "" for a `frame #N:` line) the declared one?"""
    if file:
        path = file.replace("\\", "/")
        return function == name and (path == suffix or path.endswith("/" + suffix))
    scopes = function.split("::")
    return len(scopes) > 1 and scopes[-1] == name and suffix.rsplit("/", 1)[-1].split(".", 1)[0] in scopes[:-1]


def _covered(failure: Failure, matches: list[Match], reports: Set[int]) -> bool:
    """A signature matched a line of the failure's traceback or just below it (as `incident.explain` reads it)."""
    return any(fits(m.stream, failure.stream) and covers(failure, m.lines, reports) for m in matches)


class _Scan:
    """The state of one scan (a scanner may serve several at once, from several threads)."""

    def __init__(self, scanner: Scanner):
        self.scanner = scanner
        self.table = scanner.table
        self.report = Report(model=LogModel())
        self.per_signature: dict[int, list[tuple[int, LogLine]]] = {}
        self.prefilter = None
        self._saturated: set[int] = set()     # signature numbers with a full bucket
        self._dead: set[int] = set()          # anchor numbers all of whose signatures are saturated
        self._removed: frozenset[int] = frozenset()   # ... as of the last rebuild of the prefilter
        self._pending = False
        self._next_check = SATURATION_CHECK
        self._exceptions_dead = False
        self._full = False                    # reading with the prefilter of every anchor
        self._block: frozenset[int] | None = None
        self._state: tuple | None = None
        self.error_lines: set[int] = set()    # kept lines that are an error event (`core_holds`)
        self.wrap = 1                         # the most physical lines a wrap join read as one (`find_matches`)
        self._fed = -1                        # the last line whose event the log model was fed
        self._frame_at: dict[str, int] = {}   # stream → the line of its last traceback frame

    def finish(self) -> Report:
        self._match(self.report, self.per_signature)
        model = self.report.model
        assert model is not None   # (made with the report, in __init__)
        model.finish()
        for match, line in frame_matches(model.failures, self.table, self.report.matches, model.report_lines()):
            self.report.matches.append(match)
            self.report.hit_lines[match.lines[0]] = line
            self.report.match_lines.setdefault(match.signature.entry_id, []).append(match.lines[0])
        self.report.matches.sort(key=lambda m: (m.lines[0], m.signature.entry_id, m.signature.index))
        self.scanner.last_scan = self
        return self.report

    def read(self, stream: BinaryIO, first_line: int) -> int:
        return self._scan_stream(stream, self.report, self.per_signature, first_line)

    def _enter(self, data: bytes, read: int) -> None:
        """Choose the prefilter for a block of `data`, `read` bytes into the scan."""
        if not self._full and (read > max(SUBSET_MIN_BYTES, SUBSET_BYTES_PER_ANCHOR * len(self.table.anchors))
                               or self.table.loose_count * len(data) > LOOSE_BUDGET):
            self._full = True
        self._block = None if self._full else frozenset(self.table.possible(data))
        self._refresh()

    def _refresh(self) -> None:
        state = (self._block, self._removed, self._exceptions_dead)
        if state == self._state:
            return
        self._state = state
        numbers = range(len(self.table.anchors)) if self._block is None else self._block
        live = frozenset(n for n in numbers if n not in self._removed)
        self.prefilter = self.scanner._prefilter(live, self._exceptions_dead)

    def _saturate(self, number: int) -> None:
        self._saturated.add(number)
        sig = self.table.signature(number)
        for anchor in dict.fromkeys(anchors_of(sig)):
            at = self.table.position[anchor]
            if at not in self._dead and all(n in self._saturated for n in self.table.by_anchor[at]):
                self._dead.add(at)
                self._pending = True

    def _rebuild(self, model: LogModel) -> None:
        """The prefilter without the anchors that can no longer add anything."""
        self._exceptions_dead = model.saturated
        self._removed = frozenset(self._dead)
        self._refresh()
        self._pending = False

    def _scan_stream(self, stream: BinaryIO, report: Report, per_signature: dict, first_line: int) -> int:
        """Feed chunks; returns the line number after the last line (for several files in a row).
        A block's last lines are scanned with the next block, after the lines before them that
        a join may read back into: a message wrapped across a chunk's end is joined
        as in one piece, as the browser, which reads no chunks, joins it."""
        line_number = first_line
        blocks = LineBlocks(stream)
        before = report.bytes_scanned
        carried, scanned = b"", 0   # lines of the last block, and how many of those bytes were scanned
        for data, end in blocks:
            report.bytes_scanned = before + blocks.bytes_read
            report.tail = tail_of(report.tail, data, end)
            if carried:
                data, end = carried + data, end + len(carried)
            line_number, resume, low = self._scan_block(data, scanned, end, line_number, report, per_signature,
                                                        blocks.last)
            # the lines a join may read back into (none before `low`, the end of the last line
            # a join was read around), then those not yet scanned
            back = _lines_back(data, resume, MAX_WRAPPED_LINES, low)
            carried, scanned = data[back:end], resume - back
        if scanned < len(carried):   # (a log whose last line was dropped as too long ends here)
            line_number = self._scan_block(carried, scanned, len(carried), line_number, report, per_signature)[0]
        report.bytes_scanned = before + blocks.bytes_read
        report.lines_scanned = line_number
        return line_number

    def _scan_block(self, data: bytes, begin: int, end: int, line_number: int, report: Report, per_signature: dict,
                    last: bool = True) -> tuple[int, int, int]:
        """Find candidate lines in data[begin:end] (whole lines only; data[:begin] holds lines
        scanned before, which a join may read back into). Unless this is the `last` block, the
        lines from the MAX_WRAPPED_LINES + 1-th last on are left to the next block, so that a
        join around a candidate line reads all the lines after it that it could. Returns (the
        line number at `resume`, where the next block's scan resumes, the end of the last line
        a join was read around)."""
        self._enter(data, report.bytes_scanned)
        position = begin
        low = 0   # the end of the last line that holds a signature's anchor or piece: no message begins before it
        safe = end if last else _lines_back(data, end, MAX_WRAPPED_LINES + 1, begin)
        while self.prefilter is not None:
            match = self.prefilter.span(data, position, end)
            if match is None:
                break
            match_start, match_end = match
            start = data.rfind(b"\n", 0, match_start) + 1
            if start >= safe:
                break   # the next block's
            line_number += data.count(b"\n", position, start)
            taken, position = position, start   # (the end of the last line taken)
            if line_number >= self._next_check:
                self._next_check = (line_number // SATURATION_CHECK + 1) * SATURATION_CHECK
                if self._pending or (report.model.saturated and not self._exceptions_dead):
                    self._rebuild(report.model)
                    line_number -= data.count(b"\n", taken, start)
                    position = taken
                    continue   # look again with the smaller prefilter (the lines before were no candidates)
            # a wrapped anchor spans line breaks: the candidate is every line it touches
            stop = data.find(b"\n", max(match_end - 1, match_start), end)
            raw = data[start:stop]
            if raw.count(b"\n") > 1:   # wrapped over more than two lines: the first two (as the browser)
                second = raw.find(b"\n", raw.find(b"\n") + 1)
                stop = start + second
                raw = raw[:second]
            if b"\n" in raw and not self._crosses(raw):
                # the break was only a blank of the anchor's (`(): ` before a frame, ` ERROR `
                # after a line of carets): the candidate is its first line, the next read on its own
                stop = start + raw.index(b"\n")
                raw = raw[:raw.index(b"\n")]
            # a line that holds a signature's anchor or wrap piece, or an error: with the lines
            # before it that its message may have begun on and those after it. (A line that only
            # an event anchor brought is read alone, and a join may begin on it.)
            joins = self.scanner._cached_info(raw)[4]
            before, following, ends = (), (), ()
            if joins:
                before = self._before(data, low, start, raw)
                following, ends = self._following(data, stop + 1, end, raw)
            took = self._take_line(raw, line_number, report, per_signature, before, following)
            line_number += raw.count(b"\n") + 1 + took
            position = ends[took - 1] + 1 if took else stop + 1
            if joins:
                low = position
        resume = max(position, safe)
        return line_number + data.count(b"\n", position, resume), resume, low

    def _crosses(self, raw: bytes) -> bool:
        """May an anchor that a prefilter match carried over a line break join these two physical
        lines: only when the second can continue a message of the first's process
        (`continues_message`), as `wrap_texts` asks of every wrap."""
        first, second = (self.scanner._physical(part) for part in raw.decode("utf-8", "replace").split("\n", 1))
        return continues_message(first[0], second)

    def _take_line(self, raw: bytes, number: int, report: Report, per_signature: dict,
                   before: tuple[bytes, ...] = (), following: tuple[bytes, ...] = ()) -> int:
        """A candidate line `raw` (one physical line, or two that a wrapped anchor spans), with
        the physical lines before and after it that its message may span: the message, joined
        where a wrap cut it (`Scanner._wrap_info`). Returns how many lines after `raw` it took."""
        line, candidates, step_hit, event, _joins = self.scanner._cached_info(raw)
        took = 0
        if before or following:
            joined = self.scanner._wrapped(raw, before, following)
            if joined is not None:
                line, candidates, back, took = joined
                number -= back
                self.wrap = max(self.wrap, back + raw.count(b"\n") + 1 + took)
                event = self.scanner._event_of(line, before[-back] if back else raw)
        if event is not None and number > self._fed:   # (a join begun on a line read before: fed then)
            self._fed = number
            report.model.feed(number, line, *event)  # type: ignore[union-attr]  # a scan's report has a model
            if event[0] == "frame":
                self._frame_at[line.stream] = number
        kept = False
        for n in candidates:
            bucket = per_signature.setdefault(n, [])
            if len(bucket) < MAX_HITS_PER_SIGNATURE:
                bucket.append((number, line))
                kept = True
                if len(bucket) == MAX_HITS_PER_SIGNATURE:
                    self._saturate(n)
        if kept:   # a line no bucket has room for is not kept either: memory stays bounded
            report.hit_lines[number] = line
            # an error event, or the line where a traceback's exception line stands (its class cut
            # off), or a frame's `raise` source line
            if (event is not None and event[0] in ERROR_EVENTS) or \
                    ((event is None or event[0] == "raise")
                     and 0 < number - self._frame_at.get(line.stream, -FRAME_GAP - 1) <= FRAME_GAP):
                self.error_lines.add(number)
        return took

    def _following(self, data: bytes, at: int, end: int, raw: bytes) -> tuple[tuple[bytes, ...], tuple[int, ...]]:
        """The physical lines after a candidate line that may continue its message, and where
        each ends: up to MAX_WRAPPED_LINES of the block's next lines, none empty, each after a
        line long enough to have been wrapped (`may_wrap`). A candidate line may be one: a hard
        wrap leaves an anchor's wrap piece on the line after the one it began on. Which of them
        continue the message is `wrap_texts`'s to say."""
        found: list[bytes] = []
        ends: list[int] = []
        previous = data[data.rfind(b"\n", 0, at - 1) + 1:at - 1]
        read = self.scanner._physical
        # (only as far as any join could read: `wrap_texts` stops at a line that is no
        # continuation, at another stream's, and at a break short of the widest line's width)
        lines = [read(line) for line in raw.decode("utf-8", "replace").split("\n")]
        streams = {line[0].stream for line in lines} - {""}
        width, narrowest, last = max(line[1] for line in lines), None, lines[-1]
        while at < end and len(found) < MAX_WRAPPED_LINES and may_wrap(previous):
            stop = data.find(b"\n", at, end)
            physical = data[at:stop][:LINE_BYTES]
            if not physical.strip():
                break
            line = read(physical.decode("utf-8", "replace"))
            cut = last[1] + 1 + first_word(line[0])
            narrowest = cut if narrowest is None else min(narrowest, cut)
            width = max(width, line[1])
            streams |= {line[0].stream} - {""}
            if not continues(line) or len(streams) > 1 or narrowest <= width:
                break
            found.append(physical)
            ends.append(stop)
            previous, at, last = physical, stop + 1, line
        return tuple(found), tuple(ends)

    def _before(self, data: bytes, low: int, start: int, raw: bytes) -> tuple[bytes, ...]:
        """The physical lines right before the candidate line `raw` (at data[start]), after
        data[low] (the end of the last line a join was read around), that its message may have
        begun on: up to MAX_WRAPPED_LINES, none empty, each long enough to have been wrapped, and each running on
        into the candidate line as `wrap_texts` would read it (`wrap_starts`); the earliest first."""
        found: list[bytes] = []
        read = self.scanner._physical

        def back() -> Iterator[tuple[LogLine, int, bool]]:
            """The lines before, the latest first, read as `wrap_starts` asks for them."""
            end = start - 1
            while end > low and len(found) < MAX_WRAPPED_LINES:
                begin = max(data.rfind(b"\n", low, end) + 1, low)
                physical = data[begin:end][:LINE_BYTES]
                if not physical.strip() or not may_wrap(physical):
                    return
                found.append(physical)
                yield read(physical.decode("utf-8", "replace"))
                end = begin - 1

        if start - 1 <= low:
            return ()
        count = wrap_starts(back(), [read(line) for line in raw.decode("utf-8", "replace").split("\n")])
        return tuple(reversed(found[:count]))

    def _match(self, report: Report, per_signature: dict) -> None:
        kept: set[int] = set()
        for number in sorted(per_signature):
            numbered = per_signature[number]
            if not numbered:
                continue
            sig = self.table.signature(number)
            found = find_matches(sig, numbered, first_only=False, wrap=self.wrap)
            if sig.core:
                found = [m for m in found if core_holds(m, self.error_lines)]
            if found:
                report.match_lines.setdefault(sig.entry_id, []).extend(m.lines[0] for m in found)
            for match in found[:MAX_MATCHES_PER_SIGNATURE]:
                report.matches.append(match)
                kept.update(match.lines)
        report.hit_lines = {n: line for n, line in report.hit_lines.items() if n in kept}
        report.matches.sort(key=lambda m: (m.lines[0], m.signature.entry_id, m.signature.index))




#: a block's lines carried to the next (`_Scan._scan_stream`) are at most this many bytes: a join
#: reads only lines of at most MAX_WRAPPED characters, so past this many bytes lines that no join
#: reads lie between the two ends
CARRY_BYTES = 2 * (MAX_WRAPPED_LINES + 1) * 4 * MAX_WRAPPED


def _lines_back(data: bytes, end: int, count: int, floor: int) -> int:
    """Where the `count`-th whole line before data[end] (a line's start) begins: not before
    `floor` (a line's start), nor before the first line that begins within CARRY_BYTES of `end`."""
    at = end
    for _ in range(count):
        if at <= floor:
            return floor
        at = data.rfind(b"\n", 0, at - 1) + 1
    cap = end - CARRY_BYTES
    if cap > max(at, floor):
        return data.find(b"\n", cap - 1, end) + 1   # (the cap falls inside a line: the next one)
    return max(at, floor)


def may_wrap(physical: bytes) -> bool:
    """Is a physical line long enough to have been wrapped: MIN_WRAPPED characters as printed
    (its prefixes counted, its decoration not), and no more than MAX_WRAPPED?"""
    # (a line of fewer bytes has fewer characters: decoding and undecorating never lengthen one)
    return len(physical) >= MIN_WRAPPED and \
        MIN_WRAPPED <= len(undecorate(physical.decode("utf-8", "replace")[:MAX_LINE])) <= MAX_WRAPPED


def printed_width(physical: str) -> int:
    """A physical line's width as printed: its characters, prefixes and blanks at its end
    counted (a terminal's cut can leave some there), decoration not."""
    line = physical[:MAX_LINE].rstrip("\r")
    return len(undecorate(line)) + len(line) - len(line.rstrip(" \t"))


def wrap_starts(before: Iterable[tuple[LogLine, int, bool]], physical: list[tuple[LogLine, int, bool]]) -> int:
    """How many of the lines `before` a candidate line (the latest first) its message may have
    begun on, each as the physical line is read (parsed, width, opens a record): the lines
    that `wrap_texts`, begun on one of them, could read on into the candidate line's `physical`
    lines. Read back from the candidate line: every line after the message's first is a
    continuation (text, no timestamp, no record, the first line's stream or none), and every
    break is at the widest line's width (see `wrap_texts`). Where either fails, no earlier line
    can begin the message either: the count is the lines read back until then."""
    streams = {line[0].stream for line in physical} - {""}
    if any(not continues(line) for line in physical) or len(streams) > 1:
        return 0
    width = max(line[1] for line in physical)
    narrowest = min((physical[k][1] + 1 + first_word(physical[k + 1][0]) for k in range(len(physical) - 1)),
                    default=None)
    count = 0
    following = physical[0]
    for line in before:
        cut = line[1] + 1 + first_word(following[0])
        narrowest = cut if narrowest is None else min(narrowest, cut)
        width = max(width, line[1])
        stream = line[0].stream
        if narrowest <= width or (stream and streams and stream not in streams):
            break   # (another process's line neither begins nor continues the message)
        count += 1   # it may begin the message; an earlier line, only where this one continues one
        if not continues(line):
            break
        if stream:
            streams.add(stream)
        following = line
    return count


def continues(line: tuple[LogLine, int, bool]) -> bool:
    """May a physical line (as `wrap_starts` reads it) continue a message wrapped onto it: text,
    no timestamp, no record of its own (the stream is the first line's to say)."""
    parsed, _width, record = line
    return bool(parsed.text.strip(" \t")) and parsed.time is None and not record


def continues_message(line: LogLine, read: tuple[LogLine, int, bool]) -> bool:
    """May a physical line (`read` as `wrap_starts` reads it) continue a message of `line`'s
    process: `continues`, and no other process's prefix (a launcher repeats its own on every line)."""
    more = read[0]
    return continues(read) and not (more.stream and more.stream != line.stream)


def first_word(line: LogLine) -> int:
    """The length of a continuation line's first word (`wrap_texts`' width rule)."""
    return len(line.text.strip(" \t").replace("\t", " ").split(" ", 1)[0])


def _read_physical(raw: str) -> tuple[LogLine, int, bool]:
    return parse_line(raw), printed_width(raw), False


def wrap_texts(line: LogLine, physical: list[str], following: list[str],
               read: Callable[[str], tuple[LogLine, int, bool]] = _read_physical) -> list[tuple[str, str, str]]:
    """What a message that a wrap cut into physical lines read before it was cut: for each of
    the `following` lines that continues the parsed `line` (printed on the `physical` lines),
    in order, the text joined up to that line, as (spaced, tight, that line's own text): each
    break read as one space (wrapped at a space, which the wrap took: `rich`, textwrap, a
    logger) and as nothing unless a blank stood at it (wrapped at a column, inside a word: a
    terminal, a form).

    A line continues the message when it carries the same process's prefix (a launcher repeats
    it on every line of what the process printed), or none at all (a terminal wrapped the
    printed line): another process's prefix or a timestamp starts another message, and so do an
    empty line and a line that opens a record (a traceback's line, an exception: `read` gives
    a physical line parsed, its width, and whether it opens one). And the line before it must
    have been cut at the wrap's width: a terminal cuts every line but the last at exactly that
    width, a wrap at spaces cuts a line where its next word would no longer fit; so a line that
    ends before the widest line of the join by more than the next line's first word ended its
    message (the next one is a line of its own)."""
    texts: list[tuple[str, str, str]] = []
    spaced = tight = line.text
    width = max(read(p)[1] for p in physical)
    # every break so far, as the width the line before it would have had with the next word:
    # the narrowest of them must be wider than the widest line (which a join only widens)
    narrowest = None
    last = physical[-1]
    for raw in following:
        physical_read = read(raw)
        if not continues_message(line, physical_read):
            break
        more, more_width, _record = physical_read
        text = more.text.strip(" \t")
        word = text.replace("\t", " ").split(" ", 1)[0]
        cut = read(last)[1] + 1 + len(word)
        narrowest = cut if narrowest is None else min(narrowest, cut)
        width = max(width, more_width)
        if narrowest <= width:
            break
        blank = last.rstrip("\r").endswith((" ", "\t")) or more.text.startswith((" ", "\t"))
        spaced = (spaced + " " + text)[:MAX_LINE]
        tight = (tight + (" " if blank else "") + text)[:MAX_LINE]
        texts.append((spaced, tight, text))
        last = raw
    return texts


def join_lines(physical: list[str], strict: bool = False) -> LogLine:
    """Physical lines of one wrapped message → one parsed line (prefixes of the first; the
    continuation lines' own prefixes removed when they belong to the same process). `strict`:
    a continuation must carry exactly the first line's prefix (no prefix when it has none)."""
    first = parse_line(physical[0])
    if len(physical) == 1:
        return first
    texts = [first.text]
    for raw in physical[1:]:
        more = parse_line(raw)
        if (more.stream != first.stream) if strict else (more.stream and first.stream and more.stream != first.stream):
            break
        texts.append(more.text.strip())
    return LogLine(text=" ".join(t for t in texts if t)[:MAX_LINE], rank=first.rank, host=first.host, time=first.time)
