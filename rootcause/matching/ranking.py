"""From a scan to a report: findings per entry, the incident, and the report itself.

Each entry whose signatures matched becomes a finding, scored by the strength of its evidence
(literal characters matched, a multi-line match over a single line, several independent
signatures); `incident.build_incident` orders findings by role and evidence (causes before
consequences, the first failing process first, warnings as notes), and declared relations
refine the order within each role: a declared cause moves above its declared consequences.

The JSON report (`report_json`) is the contract that the text report, `--json` and the
browser share; it is documented in content/command-line.md (the site's Command line page).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from .incident import Failure, Incident, LogModel, build_incident
from .metrics import loss_symptom, tail_lines
from .rows import EntryInfo
from .scanner import MAX_LINES_SHOWN, Report
from .shared import SHARED
from .signatures import CompiledSignature, Match

@dataclass
class Finding:
    entry: str
    score: int
    confidence: str
    matches: list[Match] = field(default_factory=list)
    match_lines: list[int] = field(default_factory=list)   # first line of every match found (bounded)
    first_text: str = ""
    persisted: bool = False
    by_frame: bool = False    # found by a traceback's raising frame alone (`scanner.frame_matches`)

    @property
    def first_line(self) -> int:
        return min(m.lines[0] for m in self.matches)


def specificity(sig: CompiledSignature) -> int:
    return getattr(sig, "_specificity", None) or sig.specificity


def findings_of(report: Report) -> list[Finding]:
    by_entry: dict[str, list[Match]] = {}
    for match in report.matches:
        by_entry.setdefault(match.signature.entry_id, []).append(match)
    findings = []
    for entry_id, matches in by_entry.items():
        first = min(matches, key=lambda m: m.lines[0])
        line = report.hit_lines.get(first.lines[0])
        read = [m for m in matches if not m.by_frame]
        if not read:   # the message is not in the log: the raising frame says which error it was
            findings.append(Finding(entry_id, FRAME_SCORE, "medium", matches,
                                    sorted(report.match_lines.get(entry_id, [])), line.text if line else "",
                                    by_frame=True))
            continue
        distinct = {m.signature.index: m.signature for m in read}
        whole = {m.signature.index for m in read if not m.by_core}
        # a signature matched only through its core is evidence of its core's length, and no more
        # than likely: the rest of its message is not in the log as the pattern has it
        evidence = [specificity(s) if s.index in whole else len(s.core) for s in distinct.values()]
        best = max(evidence)
        score = best + 10 * (len(distinct) - 1)
        multiline = any(s.multiline for s in distinct.values())
        if whole:
            confidence = "high" if multiline or best >= 40 or len(distinct) > 1 else "medium" if best >= 25 else "low"
        else:
            confidence = "medium" if best >= 25 else "low"
        findings.append(Finding(entry_id, score, confidence, matches, sorted(report.match_lines.get(entry_id, [])),
                                line.text if line else ""))
    findings.sort(key=lambda f: (-f.score, f.first_line, f.entry))
    return findings


def rank(report: Report, consequences: Mapping[str, set[str]], infos: Mapping[str, EntryInfo] | None = None) -> Report:
    """Findings, then the incident; sets `report.incident` (and the legacy fields) and returns the report."""
    infos = infos or {}
    model = report.model or LogModel()
    incident = build_incident(model, findings_of(report), infos, report.hit_lines)
    if incident.status == "none":
        lines = tail_lines(report.tail)
        symptom = loss_symptom(lines, report.lines_scanned - len(lines), infos)
        if symptom is not None:
            incident.status, incident.symptom = "symptom", symptom
            incident.first = {"line": symptom["line"], "stream": "", "rank": symptom["rank"], "host": symptom["host"],
                              "time": None, "entry": symptom["entries"][0]["entry"], "text": symptom["text"],
                              "evidence": [f"no error line: {symptom['says']}"]}
    roles = {f.entry: _role(f, infos) for f in incident.findings}
    incident.findings = _causes_first(incident.findings, consequences, roles)
    report.incident = incident
    report.findings = incident.findings
    report.first_failure = incident.first
    report.consequence_streams = incident.consequence_streams
    return report


def _role(finding: Finding, infos: Mapping[str, EntryInfo]) -> str:
    info = infos.get(finding.entry)
    role = info.role if info else "cause"
    return "cause" if finding.persisted else role


def _causes_first(findings: list[Finding], consequences: Mapping[str, set[str]], roles: dict[str, str]) -> list[Finding]:
    """Move each matched cause directly above the highest of its matched consequences, never
    across roles (a consequence entry stays below every cause)."""
    order = list(findings)
    for _ in range(len(order) * len(order) + 1):
        moved = False
        position = {f.entry: i for i, f in enumerate(order)}
        for cause in order:
            above = [position[c] for c in consequences.get(cause.entry, ())
                     if c in position and position[c] < position[cause.entry] and roles.get(c) == roles.get(cause.entry)]
            if above:
                order.remove(cause)
                order.insert(min(above), cause)
                moved = True
                break
        if not moved:
            break
    return order


# -- the report ------------------------------------------------------------------------------------
#: the strength of a finding's evidence, in the words the text report and the page both show
CONFIDENCE_WORDS: dict[str, str] = SHARED["confidence_words"]
#: a traceback cut before its message, identified by the frame that raises this entry's error
FRAME_WORDS: str = SHARED["frame_words"]
#: the score of such a finding: below any whole message of 25 literal characters
FRAME_SCORE: int = SHARED["frame_score"]
#: what to do when a log shows only consequences (a watchdog timeout, a peer's closed connection,
#: a launcher's summary): the checks that find the process that stopped, not "fix the culprit"
CONSEQUENCE_CHECKS = (
    "Find the rank that stopped first: while the job hangs, `py-spy dump --pid PID` on each rank's process "
    "shows where it waits; its output, or the first rank whose log stops, holds the cause.",
    "Get a Flight Recorder dump of every rank: set TORCH_FR_BUFFER_SIZE=2000 (TORCH_NCCL_TRACE_BUFFER_SIZE in "
    "earlier releases) and TORCH_NCCL_DUMP_ON_TIMEOUT=1, run again, and give the dumps to `rootcause diagnose` "
    "or PyTorch's fr_trace: the collective where the ranks diverge names the rank that stopped.",
    "Run again with NCCL_DEBUG=INFO (and TORCH_DISTRIBUTED_DEBUG=DETAIL for mismatched collectives) and keep "
    "every rank's output (torchrun --tee 3): the cause is on a process whose output is not in this log.",
)
#: the start-up phases a log with no error line can stop in (`events` recognises their lines), and
#: the entries for a hang there: offered as possible, never as the diagnosis
PHASES = {
    "nccl-init": {"title": "NCCL initialisation", "entries": ["distributed-init-hang", "nccl-socket-interface-not-found"]},
    "rendezvous": {"title": "rendezvous and process-group set-up",
                   "entries": ["torchrun-rendezvous-timeout", "distributed-init-hang"]},
    "jit-build": {"title": "a JIT build of an extension (a stale lock in the extensions folder hangs it)",
                  "entries": ["torch-extension-build-stale-lock"]},
    # every local rank reading the whole checkpoint into host memory: the kernel kills one, silently
    "checkpoint-load": {"title": "checkpoint loading", "entries": ["linux-oom-killer-process-killed"]},
    # the other ranks wait at a barrier while one preprocesses, past the collective timeout; a
    # `num_proc` map on a spawn platform (Windows, macOS) runs the unguarded script again per worker
    "data-preprocessing": {"title": "dataset preprocessing (a map over the dataset)",
                           "entries": ["nccl-watchdog-collective-timeout", "multiprocessing-spawn-main-not-guarded"]},
}
#: a phase's line this close to the end of the log is where the log stops
PHASE_TAIL = 10


def stopped_in(report: Report, incident: Incident, infos: Mapping[str, EntryInfo]) -> dict | None:
    """Where a log with no failure stops, when its last lines are a start-up phase's: a job that
    hangs there prints nothing more. None otherwise (a log that reaches training, or ends)."""
    model = report.model
    if incident.status != "none" or model is None or model.last_phase is None:
        return None
    phase, line = model.last_phase
    if report.lines_scanned - line > PHASE_TAIL or phase not in PHASES:
        return None
    entries = [{"entry": i, "title": infos[i].title, "url": infos[i].url} for i in PHASES[phase]["entries"] if i in infos]
    return {"phase": phase, "title": PHASES[phase]["title"], "line": line + 1, "entries": entries}


#: what a consequence shows instead, when a cause is listed above it: its strength says that it is
#: in the log, not that it explains the failure, so it must not read as surer than the cause
CONSEQUENCE_WORDS: str = SHARED["consequence_words"]


def _steady(results: list[dict], status: str) -> list[dict]:
    """Below the first failure (a matched cause, or an error no entry explains), a consequence
    carries no strength of its own (CONSEQUENCE_WORDS); when the log holds only consequences,
    their strength is the report's answer and stays."""
    if status != "consequences" or any(r["role"] == "cause" for r in results):
        for r in results:
            if r["role"] == "consequence":
                r["confidence_text"] = CONSEQUENCE_WORDS
    return results


def _lines_of(finding: Finding, report: Report) -> list[dict]:
    lines = []
    for match in finding.matches:
        for number in match.lines:
            line = report.hit_lines.get(number)
            lines.append({"line": number + 1, "rank": line.rank if line else None,
                          "host": line.host if line else None, "text": line.text if line else ""})
    return sorted({l["line"]: l for l in lines}.values(), key=lambda l: l["line"])


def _entry_json(finding: Finding, report: Report, infos: Mapping[str, EntryInfo]) -> dict:
    info = infos.get(finding.entry)
    lines = _lines_of(finding, report)
    ranks = sorted({l["rank"] for l in lines if l["rank"] is not None})
    return {
        "entry": finding.entry,
        "title": info.title if info else finding.entry,
        "summary": info.summary if info else "",
        "url": info.url if info else "",
        "role": _role(finding, infos),
        "confidence": finding.confidence,
        "confidence_text": FRAME_WORDS if finding.by_frame else CONFIDENCE_WORDS[finding.confidence],
        "score": finding.score,
        "signatures": sorted({m.signature.index + 1 for m in finding.matches}),
        "ranks": ranks,
        "count": len(finding.match_lines),
        "lines": lines[:MAX_LINES_SHOWN],
        "more_lines": max(0, len(lines) - MAX_LINES_SHOWN),
        "check": info.check if info else "",
        "check_command": info.check_command if info else "",
        "fix": info.fix if info else "",
    }


def _failure_json(failure: Failure) -> dict:
    return {"line": failure.line + 1, "rank": failure.rank, "host": failure.host, "stream": failure.stream,
            "time": failure.time, "kind": failure.kind, "text": failure.text, "location": failure.location}


def report_json(report: Report, infos: Mapping[str, EntryInfo], top: int) -> dict:
    """The machine-readable report; the text report and the browser show the same fields."""
    incident = cast(Incident, report.incident)   # (set by `rank`)
    results = _steady([_entry_json(f, report, infos) for f in incident.findings[:top]], incident.status)
    notes = [_entry_json(f, report, infos) for f in incident.notes]
    first = incident.first
    stopped = stopped_in(report, incident, infos)
    return {
        "lines_scanned": report.lines_scanned,
        "bytes_scanned": report.bytes_scanned,
        "status": incident.status,
        "headline": headline(incident, infos) + (
            f" The log stops during {stopped['title']} (line {stopped['line']}): if the job hung there, see the "
            "possible causes below." if stopped else ""),
        "stopped": stopped,
        "symptom": incident.symptom,
        "results": results,
        "first_failure": first,
        "unknown": [_failure_json(u) for u in incident.unknown[:top]],
        "possible": [],
        "notes": notes,
        "handled": [_failure_json(h) for h in incident.handled[:top]],
        "consequence_streams": incident.consequence_streams,
        "next_steps": list(CONSEQUENCE_CHECKS) if incident.status == "consequences" else [],
        "launcher": [{"line": r.line + 1, "source": r.source, "rank": r.rank, "local_rank": r.local_rank,
                      "host": r.host, "exitcode": r.exitcode, "time": r.time, "root": r.root, "message": r.message}
                     for r in incident.launcher[:32]],
    }


def where(rank: int | None, host: str | None) -> str:
    if rank is not None and host:
        return f"rank {rank} on {host}"
    if rank is not None:
        return f"rank {rank}"
    if host:
        return host
    return ""


def _streams_text(streams: list[str]) -> str:
    ranks = []
    for stream in streams:
        host, _, rank = stream.partition("#")
        ranks.append(f"rank {rank}" if rank else host)
    if len(ranks) > 4:
        return f"{len(ranks)} other processes"
    if len(ranks) == 1:
        return ranks[0]
    return ", ".join(ranks[:-1]) + " and " + ranks[-1]


def headline(incident: Incident, infos: Mapping[str, EntryInfo]) -> str:
    """One sentence: what failed first, where, and what the others show because of it."""
    first = incident.first
    if incident.status == "none":
        notes = len(incident.notes)
        text = "No failure found."
        if incident.handled:
            count = len(incident.handled)
            text += (f" {count} error{'s were' if count != 1 else ' was'} printed and handled: the launcher reported "
                     "no failed process.")
        return text + (f" {notes} benign warning{'s' if notes != 1 else ''} noted." if notes else "")
    assert first is not None   # every status but "none" has a first failure (`incident.build_incident`)
    place = where(first.get("rank"), first.get("host")) if first else ""
    if incident.status == "symptom":
        symptom = cast(dict, incident.symptom)
        return (f"No error line, but {symptom['says']} (line {symptom['line']}"
                f"{', ' + place if place else ''}): {symptom['entries'][0]['title']}.")
    if incident.status == "consequences":
        info = infos.get(first["entry"]) if first else None
        title = info.title if info else first["entry"]
        text = f"Only consequences of a failure are in this log ({title})"
        text += f"; the evidence points at {place}." if place else "; the failing process's own error is not in it."
        return text
    subject = f"{place[0].upper()}{place[1:]} failed first" if place else "The first failure"
    if incident.status == "known":
        info = infos.get(first["entry"])
        sentence = f"{subject}: {info.title if info else first['entry']}."
    else:
        location = f" ({_short_location(first.get('location'))})" if first.get("location") else ""
        sentence = f"{subject} with an error no entry explains: {first['text']}{location}."
    if incident.consequence_streams:
        others = _streams_text(incident.consequence_streams)
        sentence += f" {others[0].upper()}{others[1:]} then show{'s' if len(incident.consequence_streams) == 1 else ''} consequences of it."
    return sentence


def _short_location(location: str | None) -> str:
    if not location:
        return ""
    # 'File "/a/b/train.py", line 42, in main' → 'train.py, line 42, in main'
    if location.startswith('File "'):
        path, _, rest = location[6:].partition('"')
        return f"{path.rsplit('/', 1)[-1]}{rest}"
    return location
