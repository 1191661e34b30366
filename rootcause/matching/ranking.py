"""Rank the entries a scan found and find the first failure.

The entry with the most specific evidence comes first (literal characters matched, a multi-line
match over a single line, several independent signatures), then a declared cause moves above
its consequences when both are present: the NCCL watchdog timeouts on the ranks that waited
rank below the crash on the rank that failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .logline import LogLine
from .scanner import MAX_LINES_SHOWN, Report
from .signatures import CompiledSignature, Match


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


def specificity(sig: CompiledSignature) -> int:
    return getattr(sig, "_specificity", None) or sig.specificity


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
