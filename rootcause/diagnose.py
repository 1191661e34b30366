"""Scan a log of any size for known signatures and rank the entries that explain it.

The scan streams the log in large binary chunks. One RE2 expression made of every signature's
anchor (its longest literal piece) finds candidate lines at close to literal-search speed; only
those lines are decoded, split into rank and text (`logline`) and matched in full
(`signatures.find_matches`). Memory stays flat in the size of the log: a chunk, the tail of a
partial line, and at most `MAX_HITS_PER_SIGNATURE` candidate lines per signature.

Ranking puts the entry with the most specific evidence first (literal characters matched, a
multi-line match over a single line, several independent signatures), then moves a declared
cause above its consequences when both are present: the NCCL watchdog timeouts on the ranks
that waited rank below the crash on the rank that failed.
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
class EntryInfo:
    """What a report shows about an entry; from the catalog or a built site's index."""

    id: str
    title: str
    summary: str
    url: str
    fix: str


@dataclass
class Finding:
    entry: str
    score: int
    confidence: str
    matches: list[Match] = field(default_factory=list)

    @property
    def first_line(self) -> int:
        return min(m.lines[0] for m in self.matches)


@dataclass
class Report:
    lines_scanned: int = 0
    bytes_scanned: int = 0
    matches: list[Match] = field(default_factory=list)
    hit_lines: dict[int, LogLine] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
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


def specificity(sig: CompiledSignature) -> int:
    return getattr(sig, "_specificity", None) or sig.specificity


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


def rank(report: Report, consequences: dict[str, set[str]]) -> Report:
    """Group matches by entry, score, order causes above their consequences, find the first failure."""
    by_entry: dict[str, list[Match]] = {}
    for match in report.matches:
        by_entry.setdefault(match.signature.entry_id, []).append(match)
    findings = []
    for entry_id, matches in by_entry.items():
        distinct = {m.signature.index: m.signature for m in matches}
        best = max(specificity(s) for s in distinct.values())
        score = best + 10 * (len(distinct) - 1)
        multiline = any(s.multiline for s in distinct.values())
        confidence = "high" if multiline or best >= 40 or len(distinct) > 1 else "medium" if best >= 25 else "low"
        findings.append(Finding(entry_id, score, confidence, matches))
    findings.sort(key=lambda f: (-f.score, f.first_line, f.entry))
    findings = _causes_first(findings, consequences)
    report.findings = findings
    if findings:
        top = findings[0]
        report.first_failure = _first_failure(top, report.hit_lines)
        cause_streams = {m.stream for m in top.matches}
        downstream = consequences.get(top.entry, set())
        report.consequence_streams = sorted({m.stream for f in findings if f.entry in downstream
                                             for m in f.matches if m.stream and m.stream not in cause_streams})
    return report


def _first_failure(top: Finding, hit_lines: dict[int, LogLine]) -> dict:
    """The earliest matched line of the top finding that names its process (rank or host);
    an unprefixed line (a warning printed without the launcher's prefix) names none."""
    ordered = sorted(top.matches, key=lambda m: m.lines[0])
    for match in ordered:
        for number in match.lines:
            line = hit_lines.get(number)
            if line is not None and (line.rank is not None or line.host):
                return {"line": number + 1, "stream": match.stream, "rank": line.rank, "host": line.host}
    first = ordered[0]
    return {"line": first.lines[0] + 1, "stream": first.stream, "rank": None, "host": None}


def _causes_first(findings: list[Finding], consequences: dict[str, set[str]]) -> list[Finding]:
    """Move each matched cause directly above the highest of its matched consequences."""
    order = list(findings)
    for _ in range(len(order) * len(order) + 1):
        moved = False
        position = {f.entry: i for i, f in enumerate(order)}
        for cause in order:
            above = [position[c] for c in consequences.get(cause.entry, ()) if c in position and position[c] < position[cause.entry]]
            if above:
                order.remove(cause)
                order.insert(min(above), cause)
                moved = True
                break
        if not moved:
            break
    return order


def report_json(report: Report, infos: dict[str, EntryInfo], top: int) -> dict:
    """The machine-readable report; the text report and the browser show the same fields."""
    results = []
    for finding in report.findings[:top]:
        info = infos.get(finding.entry)
        lines = []
        for match in finding.matches:
            for number in match.lines:
                line = report.hit_lines.get(number)
                lines.append({"line": number + 1, "rank": line.rank if line else None,
                              "host": line.host if line else None, "text": line.text if line else ""})
        lines = sorted({(l["line"]): l for l in lines}.values(), key=lambda l: l["line"])
        results.append({
            "entry": finding.entry,
            "title": info.title if info else finding.entry,
            "summary": info.summary if info else "",
            "url": info.url if info else "",
            "confidence": finding.confidence,
            "score": finding.score,
            "signatures": sorted({m.signature.index + 1 for m in finding.matches}),
            "lines": lines[:MAX_LINES_SHOWN],
            "more_lines": max(0, len(lines) - MAX_LINES_SHOWN),
            "fix": info.fix if info else "",
        })
    first = report.first_failure
    return {
        "lines_scanned": report.lines_scanned,
        "bytes_scanned": report.bytes_scanned,
        "results": results,
        "first_failure": first,
        "consequence_streams": report.consequence_streams,
    }
