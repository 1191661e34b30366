"""Scan a log of any size for known signatures.

The scan streams the log in large binary chunks. One RE2 expression made of every signature's
anchor (its longest literal piece) finds candidate lines at close to literal-search speed; only
those lines are decoded, split into rank and text (`logline`) and matched in full
(`signatures.find_matches`). Memory stays flat in the size of the log: a chunk, the tail of a
partial line, and at most `MAX_HITS_PER_SIGNATURE` candidate lines per signature. Ranking what
was found is `ranking`'s job.
"""

from __future__ import annotations

import gzip
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterable

import re2

from .logline import MAX_LINE, LogLine, parse_line
from .patterns import Compiled, escape
from .signatures import AnchorIndex, CompiledSignature, Match, find_matches

CHUNK = 1 << 22
MAX_HITS_PER_SIGNATURE = 5_000
MAX_MATCHES_PER_SIGNATURE = 20
MAX_LINES_SHOWN = 12


@dataclass
class Report:
    lines_scanned: int = 0
    bytes_scanned: int = 0
    matches: list[Match] = field(default_factory=list)
    hit_lines: dict[int, LogLine] = field(default_factory=dict)
    findings: list = field(default_factory=list)   # ranking.Finding, set by ranking.rank
    first_failure: dict | None = None
    consequence_streams: list[str] = field(default_factory=list)


def signature_from_json(data: dict) -> CompiledSignature:
    """Rebuild a compiled signature from a built site's signatures.json (for `diagnose --site`)."""
    steps = tuple(Compiled(source=regex, regex=regex, anchor=anchor, literal_chars=0) for regex, anchor in data["steps"])
    unless = tuple(Compiled(source=regex, regex=regex, anchor=anchor, literal_chars=0)
                   for regex, anchor in data.get("unless", []))
    sig = CompiledSignature(entry_id=data["entry"], index=data["index"], steps=steps, unless=unless,
                            within=data.get("within", 40))
    object.__setattr__(sig, "_specificity", data["specificity"])
    return sig


def open_log(path: str | Path) -> BinaryIO:
    """A binary stream of a plain or gzip-compressed log ('-' is standard input)."""
    import sys

    raw: BinaryIO = sys.stdin.buffer if str(path) == "-" else open(path, "rb")  # noqa: SIM115
    peek = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
    if peek == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
    return raw


class Scanner:
    def __init__(self, signatures: list[CompiledSignature]):
        self.signatures = signatures
        self.index = AnchorIndex(signatures)
        options = re2.Options()
        options.max_mem = 512 << 20
        options.log_errors = False
        alternation = "|".join(escape(anchor) for anchor in sorted(self.index.anchors, key=len, reverse=True))
        self.prefilter = re2.compile(alternation.encode(), options) if alternation else None

    # -- scanning -------------------------------------------------------------------------------
    def scan_paths(self, paths: Iterable[str | Path]) -> Report:
        report = Report()
        per_signature: dict[int, list[tuple[int, LogLine]]] = {}
        offset = 0
        for path in paths:
            with open_log(path) as stream:
                offset = self._scan_stream(stream, report, per_signature, offset)
        self._match(report, per_signature)
        return report

    def scan_text(self, text: str) -> Report:
        report = Report()
        per_signature: dict[int, list[tuple[int, LogLine]]] = {}
        self._scan_stream(io.BytesIO(text.encode()), report, per_signature, 0)
        self._match(report, per_signature)
        return report

    def _scan_stream(self, stream: BinaryIO, report: Report, per_signature: dict, first_line: int) -> int:
        """Feed chunks; returns the line number after the last line (for several files in a row)."""
        line_number = first_line
        tail = b""
        skipping = False  # inside a line longer than we keep: drop bytes until its newline
        head_bytes = 4 * MAX_LINE  # MAX_LINE characters of UTF-8 at most
        while True:
            chunk = stream.read(CHUNK)
            if not chunk:
                break
            report.bytes_scanned += len(chunk)
            if skipping:
                newline = chunk.find(b"\n")
                if newline < 0:
                    continue
                chunk = chunk[newline:]
                skipping = False
            data = tail + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                tail = data[:head_bytes]
                skipping = len(data) > head_bytes
                continue
            line_number = self._scan_block(data, cut, line_number, report, per_signature)
            tail = data[cut:]
            if len(tail) > head_bytes:
                tail, skipping = tail[:head_bytes], True
        if tail:
            line_number = self._scan_block(tail + b"\n", len(tail) + 1, line_number, report, per_signature)
        report.lines_scanned = line_number
        return line_number

    def _scan_block(self, data: bytes, end: int, line_number: int, report: Report, per_signature: dict) -> int:
        """Find candidate lines in data[:end] (whole lines only); return the next line number."""
        position = 0
        if self.prefilter is not None:
            search = self.prefilter.search
            while True:
                match = search(data, position, end)
                if match is None:
                    break
                start = data.rfind(b"\n", 0, match.start()) + 1
                stop = data.find(b"\n", match.start(), end)
                line_number += data.count(b"\n", position, start)
                self._take_line(data[start:stop], line_number, report, per_signature)
                line_number += 1
                position = stop + 1
        return line_number + data.count(b"\n", position, end)

    def _take_line(self, raw: bytes, number: int, report: Report, per_signature: dict) -> None:
        line = parse_line(raw.decode("utf-8", "replace"))
        candidates = self.index.candidates(line.text)
        if not candidates:
            return
        report.hit_lines[number] = line
        for sig in candidates:
            bucket = per_signature.setdefault(id(sig), [])
            if len(bucket) < MAX_HITS_PER_SIGNATURE:
                bucket.append((number, line))

    def _match(self, report: Report, per_signature: dict) -> None:
        kept: set[int] = set()
        for sig in self.signatures:
            numbered = per_signature.get(id(sig))
            if not numbered:
                continue
            for match in find_matches(sig, numbered, first_only=False)[:MAX_MATCHES_PER_SIGNATURE]:
                report.matches.append(match)
                kept.update(match.lines)
        report.hit_lines = {n: line for n, line in report.hit_lines.items() if n in kept}
        report.matches.sort(key=lambda m: (m.lines[0], m.signature.entry_id, m.signature.index))
