"""A log read as an incident: which process failed first, with what, and what the others show
because of it.

`LogModel` is fed the event lines of a log in order (`events.recognise`) and keeps, per stream
(rank and host), a bounded record: the Python exceptions with the frame that raised them and
their chain, C++ exceptions with their `what()`, fatal errors and signals, plus the launchers'
own reports (torchrun's ChildFailedError block and agent lines, the DeepSpeed launcher, Slurm)
and the collective state the NCCL watchdog and desync report print.

`build_incident` then weighs that evidence against the signature matches:
- each matched entry has a role: `cause`, `consequence` or `warning` (a note, unless it
  persisted: `Entry.persistent`);
- an error line that a match covers (the same traceback or C++ exception, or the lines of its
  message) is explained by that entry; an error no match covers is *unknown*, and is a cause
  unless its text is a generic consequence (a closed connection, a timeout, a launcher saying
  its child died);
- the first failure is the earliest cause event: by the processes' own timestamps where the
  events have them, otherwise by print order; a launcher's "Root Cause" is one claim among the
  evidence, used when the processes' own lines cannot settle it (its time is often only when
  the agent noticed) and to name the rank when the cause printed no prefix;
- with no cause in the log (only consequences), the lagging ranks of a desync report, the ranks
  missing from the watchdog timeouts, a rank that the job's numbering implies and the log never
  shows (one that exited 0, when its node's torchrun report leaves it out), the one rank that
  waited in another function than all the others (or whose peer-sounding error is raised
  outside the collectives they wait in: its own error), or the launcher's claim name the rank
  to look at.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set
from dataclasses import dataclass, field

from .events import EXCEPTION_KINDS, fingerprints, time_key
from .logline import LogLine
from .shared import SHARED

_LIMITS = SHARED["limits"]
MAX_FAILURES = _LIMITS["max_failures"]            # error events kept (the earliest); the rest are only counted
MAX_LAUNCHER_RECORDS = _LIMITS["max_launcher_records"]
MAX_STREAMS = _LIMITS["max_streams"]
MESSAGE_LINES = _LIMITS["message_lines"]          # lines after an error line that may still be its message
MAX_TEXT = _LIMITS["max_text"]
TIME_BEFORE_TRACEBACK = _LIMITS["time_before_traceback"]   # lines between a timestamped record and its traceback
INCOMPLETE_TRACEBACK: str = SHARED["incomplete_traceback"]
#: a torch C++ error known only by its backtrace's header (the excerpt begins below its message)
RAISED_WITHOUT_MESSAGE: str = SHARED["raised_without_message"]

#: an unexplained error whose text says it is waiting on, or reporting, a failure elsewhere
CONSEQUENCE_HINTS = re.compile(SHARED["consequence_hints"])
#: the frames of a C++ backtrace that build the error rather than raise it
CPP_ERROR_FRAMES = re.compile(SHARED["cpp_error_frames"])
#: a consequence that says the process was waiting on its peers (in a collective, on the store): it
#: timed out, or a peer's connection closed under it
WAITING_HINTS = re.compile(SHARED["waiting_hints"])
#: exit statuses that mean the launcher stopped the process because another failed
STOPPED_BY_LAUNCHER = frozenset(SHARED["stopped_by_launcher"])
#: signals a launcher (or a user) sends to stop a process: how it died, not why the job failed
STOP_SIGNALS = frozenset(SHARED["stop_signals"])


@dataclass
class Failure:
    """An error the log shows: a Python exception, a C++ exception, a fatal error or a signal."""

    line: int
    stream: str
    rank: int | None
    host: str | None
    time: str | None
    kind: str                       # exception | cpp | fatal | signal
    text: str
    location: str | None = None     # 'File "train.py", line 42, in main' of the raising frame
    frame: tuple | None = None      # that frame as (line, file, function, raises): what frame signatures read
    start: int = 0                  # first line of its traceback (or the line itself)
    group: int = 0                  # chained exceptions share a group
    end: int = 0                    # last line of the group so far
    explained_by: str | None = None
    consequence: bool = False
    #: a C++ error's raising frames, from the backtrace printed with it: (line, file, function,
    #: text), the file "" for a `frame #N:` line (its function then qualified: `c10d::X::f`)
    cpp_frames: list = field(default_factory=list)

    def key(self) -> tuple:
        return self.kind, self.text


@dataclass
class LauncherFailure:
    """One failed process as a launcher reported it."""

    line: int
    source: str                     # torchrun-report | torchrun-agent | deepspeed | srun
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    exitcode: int | None = None
    time: str | None = None
    root: bool = False
    message: str = ""


@dataclass
class _Stream:
    rank: int | None
    host: str | None
    traceback_open: bool = False
    traceback_start: int = 0
    last_frame: str | None = None
    frame: tuple | None = None       # the last frame as (line, file, function, its source line is a `raise`)
    last_line: int = 0
    last_time: tuple[str, int] | None = None   # the latest timestamp this stream printed, and where
    chained: bool = False
    group: int = 0
    trace: dict | None = None        # the C++ backtrace being printed: its lines, raising frames, error


#: the events that carry an error's message: a c10 backtrace within BACKTRACE_GAP lines below one is its own
MESSAGES = frozenset({"exception", "cpp-what", "watchdog", "log-error", "fatal"})
BACKTRACE_GAP = 3


class LogModel:
    """The bounded record of a log's events, fed line by line in order."""

    def __init__(self) -> None:
        self.streams: dict[str, _Stream] = {}
        self.failures: list[Failure] = []
        self.failures_dropped = 0
        self.launcher: list[LauncherFailure] = []
        self.watchdog: dict[str, dict] = {}        # stream → {seq, op, line}
        self.completed: dict[int, int] = {}         # rank → its last completed NCCL work, as its watchdog says
        self.last_phase: tuple[str, int] | None = None   # the last start-up phase a line showed, and that line
        self.lagging: set[int] = set()
        self.ranks_seen: set[int] = set()
        self.collectives: dict[int, str] = {}
        self.launcher_started = False     # rank → the collective a mismatch report says it ran
        self._root_next = False
        self._record: LauncherFailure | None = None
        self._pending_cpp: Failure | None = None
        self._raised: Failure | None = None   # the first c10 backtrace header: an error, if nothing else is
        self._last_cpp: Failure | None = None  # the last C++ exception (`terminate called ...`)
        self.cpp_traces: list[list] = []       # every C++ backtrace's raising frames (kept: MAX_FAILURES)
        self._said: dict[str, int] = {}       # stream → the line of its last message (its backtrace follows it)
        self._said_last = -1                  # the last message's line, any stream's
        self._groups = 0
        self._finished = False

    def _stream(self, line: LogLine) -> _Stream:
        state = self.streams.get(line.stream)
        if state is None:
            if len(self.streams) >= MAX_STREAMS:
                state = _Stream(line.rank, line.host)   # not kept: still parsed, never stored
            else:
                state = self.streams[line.stream] = _Stream(line.rank, line.host)
        return state

    def _add(self, failure: Failure) -> Failure:
        if len(self.failures) < MAX_FAILURES:
            self.failures.append(failure)
        else:
            self.failures_dropped += 1
        return failure

    @property
    def saturated(self) -> bool:
        """As many failures as are kept: error lines are ignored from here on (the scanner then
        stops looking for them, at the same line in Python and in the browser)."""
        return len(self.failures) >= MAX_FAILURES

    def feed(self, number: int, line: LogLine, kind: str, groups: tuple) -> None:
        if kind in EXCEPTION_KINDS and self.saturated:
            return
        if line.rank is not None:
            self.ranks_seen.add(line.rank)
        state = self._stream(line)
        if line.time:
            state.last_time = (line.time, number)
        if kind in MESSAGES:
            self._said[line.stream] = number
            self._said_last = number
        if kind == "traceback":
            if not state.chained:
                self._groups += 1
                state.group = self._groups
            state.traceback_open, state.traceback_start, state.last_frame, state.chained = True, number, None, False
            state.frame = None
            state.last_line = number
        elif kind == "frame":
            if not state.traceback_open:        # an excerpt that starts mid-traceback
                if not state.chained:
                    self._groups += 1
                    state.group = self._groups
                state.traceback_open, state.traceback_start, state.chained = True, number, False
            state.last_frame = f'File "{groups[0]}", line {groups[1]}, in {groups[2]}'
            state.frame = (number, groups[0], groups[2], False)
            state.last_line = number
        elif kind == "chain":
            state.chained = True
        elif kind == "raise":
            frame = state.frame
            if state.traceback_open and frame is not None and 0 < number - frame[0] <= 2:
                state.frame = (frame[0], frame[1], frame[2], True)
        elif kind == "exception":
            self._exception(number, line, state, groups)
            for rank, collective in fingerprints(line.text):
                if len(self.collectives) < MAX_STREAMS:
                    self.collectives.setdefault(rank, collective)
        elif kind == "cpp-throw":
            self._pending_cpp = self._cpp(number, line, state, f"terminate called after throwing an instance of "
                                                             f"'{groups[0]}")
        elif kind == "cpp-terminate":
            self._cpp(number, line, state, "terminate called without an active exception")
        elif kind == "cpp-what":
            # `what():` follows its `terminate called`, from the same process or printed by the C++
            # runtime without the launcher's prefix
            pending = self._pending_cpp
            if pending is not None and number - pending.end <= 4 and fits(pending.stream, line.stream):
                pending.text = _cut(f"{pending.text}: {groups[0].strip()}")
                pending.end = number
                self._pending_cpp = None
        elif kind == "cpp-raised":
            # one error, one event: the backtrace right below a message (a watchdog's timeout, an
            # exception, `what():`) is that message's, not an error whose message is missing
            # (an unprefixed backtrace, as c10 prints it to a launcher's stderr, may follow any
            # process's message)
            said = self._said.get(line.stream) if line.stream else (self._said_last if self._said_last >= 0 else None)
            raised = None
            if self._raised is None and (said is None or number - said > BACKTRACE_GAP):
                raised = self._raised = self._failure(number, line, "cpp", RAISED_WITHOUT_MESSAGE.format(*groups))
            file = groups[1].rsplit(":", 1)[0]
            self._trace(number, line, state, None, (number, file, groups[0], _cut(line.text.strip())), raised)
        elif kind == "cpp-frame":
            self._trace(number, line, state, int(groups[0]), (number, "", groups[1], _cut(line.text.strip())))
        elif kind == "fatal":
            # the line as printed: Python's "Fatal Python error: ...", a shell's signal report, glibc's abort
            self._add(self._failure(number, line, "fatal", line.text.strip()[:300]))
        elif kind == "signal":
            self._signal(number, line, groups)
        elif kind in ("agent-exit", "launcher-exit", "srun-exit"):
            self._launcher_line(number, line, kind, groups)
        elif kind == "launcher-start":
            self.launcher_started = True
        elif kind == "report-root":
            self._root_next = True
        elif kind == "report-field":
            self._report_field(number, groups)
        elif kind == "watchdog":
            self.watchdog.setdefault(line.stream, {"seq": int(groups[0]), "op": groups[1], "line": number})
        elif kind.startswith("phase:"):
            self.last_phase = (kind[len("phase:"):], number)
        elif kind == "progress":
            if line.rank is not None and len(self.completed) < MAX_STREAMS:
                self.completed.setdefault(line.rank, int(groups[2]))
        elif kind == "lagging":
            self.lagging.update(int(r) for r in re.findall(r"[0-9]+", groups[0])[:MAX_STREAMS])

    def finish(self) -> None:
        """A traceback whose exception line is not in the log (an excerpt cut short) is still an
        error: it is kept with its last frame. A torch C++ error's backtrace header is one only
        when the log shows no other: below the error's own message (its exception line, `what():`)
        it says nothing more. Called once the log is read (by the scanner, before frame
        signatures look at the failures), and again harmlessly."""
        if self._finished:
            return
        self._finished = True
        for stream, state in self.streams.items():
            if state.traceback_open:
                failure = Failure(line=state.traceback_start, stream=stream, rank=state.rank, host=state.host, time=None,
                                  kind="exception", text=INCOMPLETE_TRACEBACK,
                                  location=state.last_frame, start=state.traceback_start, group=state.group,
                                  end=max(state.last_line, state.traceback_start), frame=state.frame)
                self._add(failure)
                state.traceback_open = False
        if not self.failures and self._raised is not None:
            self._add(self._raised)
        if self.one_node():
            # torchrun's agent names the failed process by its local rank (the first to fail, by
            # the time it exited: the one its `Root Cause` record names); on one node that is its rank
            for record in self.launcher:
                if record.source == "torchrun-agent" and record.rank is None:
                    record.rank = record.local_rank

    def report_lines(self) -> set[int]:
        """The lines where a launcher reported a failed process."""
        return {record.line for record in self.launcher}

    def one_node(self) -> bool:
        """The log shows at most one host, and no launcher record whose rank differs from its
        local rank: its processes' local ranks are their ranks."""
        hosts = {state.host for state in self.streams.values() if state.host}
        hosts |= {record.host for record in self.launcher if record.host}
        return len(hosts) <= 1 and all(record.rank == record.local_rank for record in self.launcher
                                       if record.source == "torchrun-report" and record.rank is not None)

    def _cpp(self, number: int, line: LogLine, state: _Stream, text: str) -> Failure:
        """A C++ exception that ended the process. The backtrace printed just before it (the
        watchdog logs its exception's backtrace, then rethrows it) is its own: one error, one event."""
        failure = self._add(self._failure(number, line, "cpp", text))
        trace = state.trace
        if trace is not None and trace["failure"] is None and 0 < number - trace["end"] <= BACKTRACE_GAP:
            trace["failure"], failure.cpp_frames, failure.start = failure, trace["frames"], trace["start"]
        self._last_cpp = failure
        return failure

    def _trace(self, number: int, line: LogLine, state: _Stream, frame_no: int | None, candidate: tuple,
               raised: Failure | None = None) -> None:
        """A line of a C++ backtrace: c10's header (`Exception raised from F at FILE:N`, frame_no
        None) or a `frame #N:` line. Its raising frames: the header's function, and the first frame
        that is not c10's error machinery (`c10::Error::Error`, `c10::detail::torchCheckFail`).
        A backtrace that begins just below a C++ exception (after its `what():`) is that
        exception's; one whose header is the only sign of an error is that error's."""
        trace = state.trace
        if trace is None or number - trace["end"] > BACKTRACE_GAP or frame_no is None \
                or (frame_no == 0 and trace["framed"]):
            trace = state.trace = {"start": number, "end": number, "framed": False, "looking": True, "frames": [],
                                   "failure": None}
            if len(self.cpp_traces) < MAX_FAILURES:
                self.cpp_traces.append(trace["frames"])
            last = self._last_cpp
            if last is None or not fits(last.stream, line.stream) or last.cpp_frames \
                    or not 0 < number - last.end <= BACKTRACE_GAP:
                last = raised
            if last is not None:
                trace["failure"], last.cpp_frames = last, trace["frames"]
        trace["end"] = number
        if frame_no is None:
            trace["frames"].append(candidate)
        else:
            trace["framed"] = True
            name = candidate[2]
            if trace["looking"] and not CPP_ERROR_FRAMES.match(name):
                trace["looking"] = False
                if name != "<unknown function>":
                    trace["frames"].append(candidate)
        if trace["failure"] is not None:
            trace["failure"].end = max(trace["failure"].end, number)

    def _failure(self, number: int, line: LogLine, kind: str, text: str) -> Failure:
        return Failure(line=number, stream=line.stream, rank=line.rank, host=line.host, time=line.time, kind=kind,
                       text=_cut(text), start=number, end=number)

    def _exception(self, number: int, line: LogLine, state: _Stream, groups: tuple) -> None:
        name, message = groups[0], groups[1].strip()
        if not (state.traceback_open or state.chained) and ":" not in line.text:
            return  # a bare word ending in "Error" outside a traceback is not an exception line
        if not state.traceback_open and not state.chained:
            self._groups += 1
            state.group = self._groups
        failure = self._failure(number, line, "exception", f"{name}: {message}" if message else name)
        failure.location, failure.frame = state.last_frame, state.frame
        failure.start = state.traceback_start if state.traceback_open else number
        if failure.time is None and state.last_time is not None and line.stream \
                and 0 <= failure.start - state.last_time[1] <= TIME_BEFORE_TRACEBACK:
            failure.time = state.last_time[0]   # a logger's record introduced the traceback
        failure.group = state.group
        failure.end = number
        for other in self.failures:       # a chain: the group now reaches this line
            if other.group == failure.group and other.stream == failure.stream:
                other.end = number
        self._add(failure)
        state.traceback_open, state.last_frame, state.chained, state.frame = False, None, False, None

    def _signal(self, number: int, line: LogLine, groups: tuple) -> None:
        failure = self._failure(number, line, "signal", f"Signal {groups[0]} ({groups[1]}) received by PID {groups[2]}")
        record = self._record
        if record is not None and number - record.line <= 8:
            record.message = _cut(line.text.strip())
            if not line.stream and record.rank is not None:   # the report says whose death this was
                failure.rank, failure.host, failure.stream = record.rank, record.host, f"#{record.rank}"
                failure.time = failure.time or record.time
        failure.consequence = groups[1] in STOP_SIGNALS
        self._add(failure)

    def _launcher_line(self, number: int, line: LogLine, kind: str, groups: tuple) -> None:
        if len(self.launcher) >= MAX_LAUNCHER_RECORDS:
            return
        if kind == "agent-exit":
            record = LauncherFailure(number, "torchrun-agent", exitcode=int(groups[0]), local_rank=int(groups[1]),
                                     host=line.host, time=line.time)
        elif kind == "launcher-exit":
            record = LauncherFailure(number, "deepspeed", exitcode=int(groups[0]), host=line.host, time=line.time)
        else:
            tasks = re.findall(r"[0-9]+", groups[1])
            code = re.search(r"exit code (-?[0-9]+)", groups[2])
            record = LauncherFailure(number, "srun", rank=int(tasks[0]) if tasks else None, host=groups[0],
                                     exitcode=int(code.group(1)) if code else None, message=_cut(groups[2]))
        self.launcher.append(record)

    def _report_field(self, number: int, groups: tuple) -> None:
        name, value = groups[0], groups[1].strip()
        if name == "time":
            if len(self.launcher) >= MAX_LAUNCHER_RECORDS:
                self._record = None
                return
            self._record = LauncherFailure(number, "torchrun-report", time=value, root=self._root_next)
            self._root_next = False
            self.launcher.append(self._record)
            return
        record = self._record
        if record is None or number - record.line > 8:
            return
        if name == "host":
            record.host = value
        elif name == "rank":
            found = re.match(r"(-?[0-9]+) \(local_rank: (-?[0-9]+)\)", value)
            if found:
                record.rank, record.local_rank = int(found.group(1)), int(found.group(2))
        elif name == "exitcode":
            found = re.match(r"-?[0-9]+", value)
            if found:
                record.exitcode = int(found.group(0))
        elif name == "traceback" and not record.message:
            record.message = _cut(value)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def fits(a: str, b: str) -> bool:
    """An unprefixed line may belong to any process."""
    return not a or not b or a == b


def backtrace_frames(text: str) -> list[tuple[str, str]]:
    """The raising frames (file, function) of every C++ backtrace in a text, as the log model
    reads them: what an entry's example shows (E057, the mutation check)."""
    from .events import recognise
    from .logline import parse_line

    model = LogModel()
    for number, raw in enumerate(text.split("\n")):
        line = parse_line(raw)
        event = recognise(line.text)
        if event is not None:
            model.feed(number, line, *event)
    return [(file, function) for frames in model.cpp_traces for _n, file, function, _text in frames]


# -- the incident ----------------------------------------------------------------------------------
@dataclass
class Incident:
    """What the report says, before it is written out."""

    findings: list                          # ranking.Finding: causes, then consequences
    notes: list                             # ranking.Finding of warning entries that did not persist
    unknown: list[Failure]                  # unexplained causes, earliest first
    first: dict | None                      # the first failure: stream, rank, host, line, time, entry, text, ...
    consequence_streams: list[str] = field(default_factory=list)
    launcher: list[LauncherFailure] = field(default_factory=list)
    status: str = "none"                    # known | unknown | consequences | symptom | none
    handled: list[Failure] = field(default_factory=list)   # errors printed in a job its launcher saw succeed
    symptom: dict | None = None             # no error line, but the loss the log ends with fails (`metrics`)


def explain(model: LogModel, matches: list, consequence_entries: Set[str], warning_entries: Set[str] = frozenset()) -> None:
    """Mark each failure that a signature match covers with that match's entry; an error that a
    process prints after a consequence of its own (a peer error, a timeout) is part of that
    consequence: its teardown, not a new cause.

    A traceback whose exception line is not in the log (an excerpt cut short) says nothing of its
    own: when the lines just before it match an entry that is not a warning (CUDA's device-side
    `Assertion ... failed` lines, a launcher's "FAILED with no error file"), that entry explains it."""
    by_stream: dict[str, list] = {}
    for match in matches:
        by_stream.setdefault(match.stream, []).append(match)
    reports = model.report_lines()
    for failure in model.failures:
        best = None
        for stream, found in by_stream.items():
            if not fits(stream, failure.stream):
                continue
            for match in found:
                if covers(failure, match.lines, reports):
                    best = best or match
        if best is None and failure.text == INCOMPLETE_TRACEBACK:
            best = _just_before(failure, by_stream, warning_entries)
        if best is not None:
            failure.explained_by = best.signature.entry_id
        elif failure.kind != "signal" and CONSEQUENCE_HINTS.search(failure.text):
            failure.consequence = True
    waited: dict[str, int] = {}   # stream → first line where it shows a consequence
    for failure in model.failures:
        if failure.stream and (failure.consequence or failure.explained_by in consequence_entries):
            waited[failure.stream] = min(waited.get(failure.stream, failure.line), failure.line)
    for match in matches:
        if match.stream and match.signature.entry_id in consequence_entries:
            waited[match.stream] = min(waited.get(match.stream, match.lines[0]), match.lines[0])
    for failure in model.failures:
        if failure.stream in waited and failure.line > waited[failure.stream] and not failure.explained_by \
                and failure.kind != "signal":
            failure.consequence = True


def covers(failure: Failure, lines, reports: Set[int]) -> bool:
    """A match on these lines covers the failure: a line of its traceback, or one of the lines
    below its exception line that may still be its message; a launcher's report of a process's
    exit (torchrun's agent line) is never an exception's message."""
    end = failure.end + MESSAGE_LINES
    return any(failure.start <= n <= end and (n <= failure.end or n not in reports) for n in lines)


def _just_before(failure: Failure, by_stream: dict, warning_entries: Set[str]):
    """The match (of an entry that is not a warning) with a line closest before the failure's
    first line, at most MESSAGE_LINES before it, on a stream that fits; None if there is none."""
    best, best_line = None, failure.start - MESSAGE_LINES - 1
    for stream, found in by_stream.items():
        if not fits(stream, failure.stream):
            continue
        for match in found:
            if match.signature.entry_id in warning_entries:
                continue
            line = max((n for n in match.lines if n < failure.start), default=None)
            if line is not None and line > best_line:
                best, best_line = match, line
    return best


def unknown_causes(model: LogModel) -> list[Failure]:
    """Unexplained causes, one per distinct error (the earliest), printed-twice copies dropped.

    A chained exception is one error: its first line (the original) speaks for the group. The
    launcher's copy of a rank's traceback (unprefixed) is dropped when the rank printed it too."""
    seen_groups: set[tuple[str, int]] = set()
    named_texts = {f.key() for f in model.failures if f.stream}
    kept: dict[tuple, Failure] = {}
    for failure in sorted(model.failures, key=lambda f: f.line):
        group_key = (failure.stream, failure.group)
        group_explained = failure.group and any(
            f.group == failure.group and f.stream == failure.stream and f.explained_by for f in model.failures)
        if failure.explained_by or failure.consequence or group_explained:
            continue
        if failure.group and group_key in seen_groups:
            continue
        seen_groups.add(group_key)
        if not failure.stream and failure.key() in named_texts:
            continue
        key = (failure.stream, failure.key())
        if key not in kept:
            kept[key] = failure
        elif kept[key].time is None and failure.time:
            # the same error printed twice by one process (logged, then raised): the copy a
            # logger timestamped dates the first
            kept[key].time = failure.time
    return sorted(kept.values(), key=lambda f: f.line)


def build_incident(model: LogModel, findings: list, infos: Mapping, hit_lines: dict) -> Incident:
    """Order the evidence: causes before consequences, the first failing process first.

    `findings` are ranking.Finding objects (an entry and its matches), `infos` EntryInfo by id
    (for each entry's role and persistence), `hit_lines` the parsed matched lines by number."""
    model.finish()
    consequence_entries = {f.entry for f in findings if infos.get(f.entry) and infos[f.entry].role == "consequence"}
    warning_entries = {f.entry for f in findings if infos.get(f.entry) and infos[f.entry].role == "warning"}
    explain(model, [m for f in findings for m in f.matches], consequence_entries, warning_entries)
    causes, consequences, notes = [], [], []
    for finding in findings:
        info = infos.get(finding.entry)
        role = info.role if info else "cause"
        if role == "warning":
            if info and info.persistent and persisted(finding, info.persistent):
                finding.persisted = True
                causes.append(finding)
            else:
                notes.append(finding)
        elif role == "consequence":
            consequences.append(finding)
        else:
            causes.append(finding)
    unknown = unknown_causes(model)
    handled: list[Failure] = []
    if unknown and model.launcher_started and not model.launcher and not causes and not consequences \
            and not any(f.consequence for f in model.failures) \
            and not any(u.text == INCOMPLETE_TRACEBACK for u in unknown):
        # the launcher was there and reported no failed process, and the log does not stop in the
        # middle of a traceback: the errors were caught and printed (traceback.print_exc, logging)
        handled, unknown = unknown, []
    events = [e for f in causes for e in _cause_events(f, hit_lines)] + [_unknown_event(u) for u in unknown]
    first = _first_failure(events, model)
    if first is not None and first.get("entry"):
        first_entry = first["entry"]
        causes.sort(key=lambda f: (f.entry != first_entry, -f.score, f.first_line, f.entry))
    else:
        causes.sort(key=lambda f: (-f.score, f.first_line, f.entry))
    consequences.sort(key=lambda f: (-f.score, f.first_line, f.entry))
    ordered = causes + consequences
    status = "none"
    if first is not None:
        status = "known" if first.get("entry") else "unknown"
    elif consequences or any(f.consequence for f in model.failures):
        consequence_ranks = {hit_lines[n].rank for f in consequences for m in f.matches for n in m.lines
                             if n in hit_lines and hit_lines[n].rank is not None}
        status, first, unknown = _consequence_only_first(model, consequences, consequence_ranks)
    elif (record := _launcher_claim(model)) is not None:
        unknown = [Failure(line=record.line, stream="", rank=record.rank, host=record.host, time=record.time,
                           kind="exit", text=_exit_text(record))]
        status = "unknown"
        first = {"line": record.line + 1, "stream": "", "rank": record.rank, "host": record.host,
                 "time": record.time, "entry": None, "text": unknown[0].text, "evidence": [
                     "only the launcher's report shows the failure; the process printed no error"]}
    cause_streams = {first["stream"]} if first and first.get("stream") else set()
    downstream = sorted({m.stream for f in consequences for m in f.matches if m.stream and m.stream not in cause_streams}
                        | {u.stream for u in model.failures if u.consequence and u.stream and u.stream not in cause_streams})
    return Incident(findings=ordered, notes=notes, unknown=unknown, first=first, consequence_streams=downstream,
                    launcher=list(model.launcher), status=status, handled=handled)


def persisted(finding, persistent) -> bool:
    """Did a warning's matches reach `count` lines within `within` lines anywhere in the log?"""
    lines = sorted(finding.match_lines)
    low = 0
    for high, number in enumerate(lines):
        while number - lines[low] >= persistent.within:
            low += 1
        if high - low + 1 >= persistent.count:
            return True
    return False


def _cause_events(finding, hit_lines: dict) -> list[dict]:
    """Per process, the earliest matched line of a cause entry; a match's unprefixed lines count
    for the process its prefixed lines name."""
    best: dict[str, tuple] = {}
    for match in finding.matches:
        for number in match.lines:
            line = hit_lines.get(number) or LogLine(text="")
            stream = match.stream or line.stream
            candidate = (0 if (line.rank is not None or line.host) else 1, number)
            if stream not in best or candidate < best[stream][0]:
                best[stream] = (candidate, number, line)
    return [{"line": number, "stream": stream, "rank": line.rank, "host": line.host, "time": line.time,
             "entry": finding.entry, "text": line.text} for stream, (_, number, line) in best.items()]


def _unknown_event(failure: Failure) -> dict:
    return {"line": failure.line, "stream": failure.stream, "rank": failure.rank, "host": failure.host,
            "time": failure.time, "entry": None, "text": failure.text, "location": failure.location}


def _first_failure(events: list[dict], model: LogModel) -> dict | None:
    """The earliest cause event, by the evidence the log offers; None when there is no cause."""
    if not events:
        return None
    named = [e for e in events if e["stream"]]
    pool = named or events
    evidence: list[str] = []
    # the earliest event of each stream: within one process, print order is time order
    per_stream: dict[str, dict] = {}
    for event in sorted(pool, key=lambda e: e["line"]):
        per_stream.setdefault(event["stream"], event)
    candidates = list(per_stream.values())
    claim = _launcher_claim(model)
    odd = _odd_collective(model)
    if len(candidates) > 1 and odd is not None and any(e["rank"] == odd[0] for e in candidates):
        chosen = next(e for e in candidates if e["rank"] == odd[0])
        evidence.append(f"its collective ({odd[1]}) differs from the one every other rank ran ({odd[2]})")
    elif len(candidates) > 1:
        timed = [(time_key(e["time"]), e) for e in candidates]
        if all(t is not None for t, _ in timed):
            chosen = min(timed, key=lambda p: (p[0], p[1]["line"]))[1]
            evidence.append(f"its own timestamp ({chosen['time']}) is the earliest among the failing processes")
        else:
            report_times = _report_times(model)
            keyed = [(report_times.get(e["rank"]), e) for e in candidates]
            if all(t is not None for t, _ in keyed) and len({t for t, _ in keyed}) > 1:
                chosen = min(keyed, key=lambda p: (p[0], p[1]["line"]))[1]
                evidence.append("the launcher recorded its failure first")
            else:
                chosen = min(candidates, key=lambda e: e["line"])
                evidence.append("it printed its error first")
    else:
        chosen = candidates[0]
    chosen = dict(chosen)
    others = sorted({e["stream"] for e in candidates if e["stream"] != chosen["stream"]})
    if others:
        evidence.append(f"{len(others)} other process(es) also failed with a cause of their own")
    if chosen["rank"] is None and not chosen["host"] and claim is not None and claim.rank is not None:
        chosen["rank"] = claim.rank
        chosen["host"] = chosen["host"] or claim.host
        evidence.append(f"the launcher's report names rank {claim.rank} as the root cause")
    elif claim is not None and claim.rank is not None and chosen["rank"] is not None:
        if claim.rank == chosen["rank"]:
            evidence.append("the launcher's report agrees")
        else:
            evidence.append(f"the launcher's report names rank {claim.rank} instead, but its time is when the "
                            "launcher noticed the exit, not when the error happened")
    if chosen["time"] is None and chosen["rank"] is not None:
        chosen["time"] = _report_times(model, raw=True).get(chosen["rank"])
    chosen["evidence"] = evidence
    chosen["line"] += 1
    return chosen


def _odd_collective(model: LogModel) -> tuple[int, str, str] | None:
    """(rank, its collective, everyone else's) when exactly one rank ran a different collective."""
    if len(model.collectives) < 3:
        return None
    counts: dict[str, list[int]] = {}
    for rank, collective in sorted(model.collectives.items()):
        counts.setdefault(collective, []).append(rank)
    if len(counts) != 2:
        return None
    (a, ranks_a), (b, ranks_b) = sorted(counts.items(), key=lambda kv: (len(kv[1]), kv[0]))
    return (ranks_a[0], a, b) if len(ranks_a) == 1 and len(ranks_b) > 1 else None


def _launcher_claim(model: LogModel) -> LauncherFailure | None:
    """The launcher's root-cause claim: torchrun's `Root Cause` record (of several nodes' reports,
    the earliest), else its earliest failure that it did not stop itself."""
    roots = [r for r in model.launcher if r.source == "torchrun-report" and r.root and r.exitcode not in (None, 0)]
    if roots:
        # one report per node (each agent names its own first failure): the job's is the earliest,
        # whatever order the nodes' logs were put in
        times = [time_key(r.time) for r in roots]
        if len(roots) > 1 and all(t is not None for t in times):
            return roots[min(range(len(roots)), key=lambda i: (times[i], i))]
        return roots[0]
    for record in model.launcher:
        if record.exitcode not in (None, 0) and record.exitcode not in STOPPED_BY_LAUNCHER:
            return record
    return None


def _report_times(model: LogModel, raw: bool = False) -> dict:
    times: dict = {}
    for record in model.launcher:
        if record.source == "torchrun-report" and record.rank is not None and record.time \
                and record.exitcode not in STOPPED_BY_LAUNCHER:
            times.setdefault(record.rank, record.time if raw else time_key(record.time))
    return times


def _silent_suspect(model: LogModel, consequence_ranks: set) -> tuple[int | None, list[str]]:
    """The rank the others were waiting for: named by a desync report, or the one rank that shows
    no consequence (no peer error, timeout or watchdog) while the others do. Among several silent
    ranks, those the launcher stopped itself are the least suspect."""
    if model.lagging:
        lagging = sorted(model.lagging)
        return lagging[0], [f"the desync report names rank(s) {', '.join(map(str, lagging))} as lagging"]
    if len(model.completed) > 1:
        low = min(model.completed.values())
        behind = sorted(r for r, work in model.completed.items() if work == low)
        if len(behind) == 1:
            ahead = max(model.completed.values())
            return behind[0], [f"rank {behind[0]}'s last completed NCCL work is {low}, the other ranks' up to {ahead}: "
                               "it fell behind the others"]
    waiting, known = _ranks_waiting(model, consequence_ranks)
    silent = sorted(r for r in known if r not in waiting)
    if not waiting or not silent or len(silent) == len(known):
        return None, []
    stopped = {r.rank for r in model.launcher if r.exitcode in STOPPED_BY_LAUNCHER}
    suspects = [r for r in silent if r not in stopped] or silent
    ranks = ", ".join(map(str, sorted(r for r in waiting if r is not None)))   # (None discarded above)
    return suspects[0], [f"rank(s) {ranks} show only consequences (peer errors, timeouts) while rank "
                         f"{suspects[0]} shows none: the others were waiting for it"]


def _ranks_waiting(model: LogModel, consequence_ranks: set) -> tuple[set[int], set[int]]:
    """(the ranks that show a consequence: a watchdog timeout, a peer error, a consequence entry's
    line; every rank the log shows, in a line or a launcher's record)."""
    waiting = {model.streams[s].rank for s in model.watchdog if s in model.streams}
    waiting |= consequence_ranks
    waiting |= {f.rank for f in model.failures if f.consequence and f.kind != "signal" and f.rank is not None}
    known = set(model.ranks_seen) | {rank for r in model.launcher if (rank := r.rank) is not None}
    return {rank for rank in waiting if rank is not None}, known


def _absent_rank(model: LogModel, consequence_ranks: set) -> tuple[int | None, list[str]]:
    """Every rank the log shows waits on another, and the job's numbering says exactly one rank
    exists that the log never shows (it left early, exiting 0 or without a line the reader keeps):
    that is the rank to look at. A weaker claim than a silent rank the log shows: the consequence
    stays the verdict (an excerpt may leave a rank out), the rank is only named."""
    waiting, known = _ranks_waiting(model, consequence_ranks)
    if not waiting or any(r not in waiting for r in known):
        return None, []
    missing = _missing_rank(known, _world_size(model))
    if missing is None:
        return None, []
    return missing, [f"ranks {', '.join(map(str, sorted(known)))} show only consequences (peer errors, timeouts), "
                     f"and rank {missing}, which the job's numbering says exists, appears nowhere in the log: it "
                     "left early (exited 0, or without an error) while the others waited for it"]


def _odd_wait(model: LogModel, consequence_entries: Set[str]) -> tuple[int | None, list[str], Failure | None]:
    """Every rank shown failed waiting on its peers (a timeout, a peer's closed connection), each
    in the function its traceback stops in (torch's `all_reduce`, `barrier`, `broadcast`: the
    collective it waited in); when one rank waited in another than all the others (at least two)
    agree on, it went elsewhere: a collective the others did not call, or a loop it left before
    them. The rank is named; the consequences stay the verdict. (rank, why, its own error): when
    that rank's error is raised in another file than the one all the others wait in (a socket
    read of its own, not the collectives' library) and no entry explains it, the error only sounds
    like a peer's: it is the rank's own, the first failure."""
    where: dict[int, Failure] = {}
    for failure in model.failures:
        if failure.rank is None or failure.rank in where or not failure.location \
                or not (failure.consequence or failure.explained_by in consequence_entries) \
                or not WAITING_HINTS.search(failure.text):
            continue
        where[failure.rank] = failure
    if len(where) < 3:
        return None, [], None
    groups: dict[str, list[int]] = {}
    for rank, failure in sorted(where.items()):
        groups.setdefault((failure.location or "").rsplit(", in ", 1)[-1], []).append(rank)
    if len(groups) != 2:
        return None, [], None
    (odd, ranks), (usual, others) = sorted(groups.items(), key=lambda kv: (len(kv[1]), kv[0]))
    if len(ranks) != 1 or len(others) < 2:
        return None, [], None
    rank = ranks[0]
    files = {frame[1] if (frame := where[r].frame) else "" for r in others}
    mine = where[rank]
    if len(files) == 1 and "" not in files and mine.frame and mine.frame[1] not in files and not mine.explained_by:
        return rank, [f"ranks {', '.join(map(str, others))} failed waiting on their peers in {usual} ({next(iter(files))}); "
                      f"rank {rank}'s error is raised in {odd} ({mine.frame[1]}), outside the collectives: its own "
                      "error, whose words only sound like a peer's"], mine
    return rank, [f"every rank failed waiting on its peers: rank {rank} in {odd}, ranks "
                  f"{', '.join(map(str, others))} in {usual}: rank {rank} went elsewhere (a collective the others did "
                  "not call, or a loop it left before them)"], None


def _left_early(model: LogModel, rank: int) -> bool:
    """torchrun's report of the node that ran `rank` is in the log and does not list it: the report
    lists every process of its node that failed (those the agent stopped too, exitcode -15), so a
    process it leaves out had exited with status 0 before the failure. Nodes start as many
    processes each: the highest local rank + 1 per node, a node's ranks from rank - local rank."""
    reports = [(r.rank, r.local_rank) for r in model.launcher if r.source == "torchrun-report"
               and r.rank is not None and r.local_rank is not None]
    if not reports or any(shown == rank for shown, _local in reports):
        return False
    per_node = max(local for _shown, local in reports) + 1
    return any(shown - local == rank - rank % per_node for shown, local in reports)


def _missing_rank(known: Set[int], size: int) -> int | None:
    """The one rank that a job's numbering (0 to world size - 1) says exists and the log does not
    show, when exactly one is absent; None otherwise. The world is at least as large as the
    highest rank shown, and as `size`."""
    ranks = sorted(r for r in known if r >= 0)
    if not ranks:
        return None
    world = max(ranks[-1] + 1, size)
    if world - len(ranks) != 1:
        return None
    return next(r for r, seen in enumerate(ranks + [world]) if r != seen)


def _world_size(model: LogModel) -> int:
    """The fewest processes the launcher's reports imply: torchrun starts as many processes on
    every node, so the hosts its reports name, times the highest local rank + 1 (two nodes whose
    reports show local rank 1 ran at least 4). 0 when the reports name no host and local rank."""
    hosts: set[str] = set()
    per_node = 0
    for record in model.launcher:
        if record.source == "torchrun-report" and record.host and record.local_rank is not None and record.rank is not None:
            hosts.add(record.host)
            per_node = max(per_node, record.local_rank + 1)
    return len(hosts) * per_node


def _consequence_only_first(model: LogModel, consequences: list, consequence_ranks: set) -> tuple[str, dict, list]:
    """No cause in the log: name the process the consequences point at, and say why. When the
    evidence singles out a rank (a silent rank the log shows, a rank its node's torchrun report
    leaves out), its silence is the failure (status unknown: no entry explains a process that
    exited or hung without a message); a rank whose peer-sounding error is its own is the failure
    with that error; otherwise only consequences are known, and the rank that waited elsewhere,
    the rank the numbering implies, or the launcher's claim is named."""
    evidence = ["the log shows only consequences of a failure; the failing process's own error is not in it"]
    rank, reasons = _silent_suspect(model, consequence_ranks)
    absent, why = _absent_rank(model, consequence_ranks) if rank is None else (None, [])
    left = absent is not None and _left_early(model, absent)
    if left:
        rank, reasons = absent, why + [f"torchrun's report of the node that ran rank {absent} lists every process of "
                                       "that node that failed, and not this one: it exited with status 0 before the "
                                       "others failed"]
    evidence += reasons
    claim = _launcher_claim(model)
    record = next((r for r in model.launcher if r.rank == rank and r.exitcode not in (None, 0)), None) \
        if rank is not None else None
    if rank is not None:
        if claim is not None and claim.rank is not None:
            evidence.append("the launcher's report agrees" if claim.rank == rank else
                            f"the launcher's report names rank {claim.rank} instead, but it only saw exits")
        if record is not None and record.exitcode not in STOPPED_BY_LAUNCHER:
            text = _exit_text(record) + ", without an error message"
        elif left:
            text = f"rank {rank} exited with status 0 while the others were still running, without an error message"
        else:
            text = f"rank {rank} printed no error while the others waited for it (it hung, or died without a message)"
        anchor_line = record.line if record else min(f.line for f in model.failures if f.consequence) \
            if not consequences else min(consequences[0].match_lines)
        failure = Failure(line=anchor_line, stream="", rank=rank,
                          host=record.host if record else None, time=record.time if record else None, kind="silent",
                          text=text)
        first = {"line": failure.line + 1, "stream": "", "rank": rank, "host": failure.host, "time": failure.time,
                 "entry": None, "text": text, "evidence": evidence}
        return "unknown", first, [failure]
    odd, odd_why, own = _odd_wait(model, {f.entry for f in consequences})
    if own is not None:
        first = _unknown_event(own)
        agree = [] if claim is None or claim.rank is None else ["the launcher's report agrees"] if claim.rank == own.rank \
            else [f"the launcher's report names rank {claim.rank} instead, but it only saw exits"]
        first.update(line=own.line + 1, evidence=odd_why + agree)
        return "unknown", first, [own]
    rank, why = (odd, odd_why) if odd is not None else (absent, why)
    evidence += why
    if rank is not None and claim is not None and claim.rank is not None and claim.rank != rank:
        evidence.append(f"the launcher's report names rank {claim.rank} instead, but it only saw exits")
    elif claim is not None and claim.rank is not None:
        rank = claim.rank
        evidence.append(f"the launcher's report names rank {claim.rank} as the root cause")
    if not consequences:   # only errors that wait on another process, and no entry for them
        waited = min((f for f in model.failures if f.consequence), key=lambda f: f.line)
        first = _unknown_event(waited)
        first.update(line=waited.line + 1, rank=waited.rank if rank is None else rank, evidence=evidence)
        return "unknown", first, [waited]
    top = consequences[0]
    line = min(top.match_lines)
    return "consequences", {"line": line + 1, "stream": "", "rank": rank,
                            "host": claim.host if claim and rank == claim.rank else None,
                            "time": claim.time if claim and rank == claim.rank else None, "entry": top.entry,
                            "text": top.first_text, "evidence": evidence}, []


def _exit_text(record: LauncherFailure) -> str:
    code = record.exitcode
    where = f"rank {record.rank}" if record.rank is not None else "a process"
    if code is not None and code < 0:
        return f"{where} was killed by signal {-code}" + (f" ({record.message})" if record.message else "")
    return f"{where} exited with status {code}" + (f" ({record.message})" if record.message else "")
