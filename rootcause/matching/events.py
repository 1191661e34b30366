"""What happened in a log, independent of any entry: the events a failure leaves behind.

A line (after `logline.parse_line`) may be one of these events, recognised by portable regular
expressions (RE2 = Python `re` = JavaScript here: no lookaround, bounded repeats) that
theme/assets/matcher.js receives as data, so both sides read a log alike:

- Python tracebacks: the header, each `File "...", line N, in f` frame (and IPython's and
  `rich`'s frame lines), the chain markers
  (`The above exception was the direct cause ...`, `During handling ...`) and the exception
  line `SomeError: message` — including excerpts that start mid-traceback;
- C++ exceptions: `terminate called after throwing an instance of 'T'` and its `what():`, and
  the header of a torch C++ error's backtrace (`Exception raised from F at FILE:LINE ...`);
- crashes: `Fatal Python error: ...`, and `Signal N (SIGX) received by PID P`;
- launcher reports: torchrun's agent (`failed (exitcode: N) local_rank: R (pid: P)`), its
  ChildFailedError block (`time`, `host`, `rank`, `exitcode`, `error_file`, `traceback` fields;
  the `Root Cause (first observed failure)` header), the DeepSpeed launcher's
  `exits with return code = N`, Slurm's `srun: error: host: task N: ...`;
- collective state: the NCCL watchdog's `WorkNCCL(SeqNum=N, OpType=OP, ... Timeout(ms)=T)` and
  the desync report's lagging ranks.

`ANCHORS` are literal strings, at least one of which every event line contains: the scanner adds
them to its prefilter, so event lines are decoded like signature candidates and no other line is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .shared import SHARED

#: literals that the prefilter looks for so that event lines reach `recognise`
ANCHORS: tuple[str, ...] = (
    "Traceback (most recent call last)",
    '", line ',
    "File ~",
    "File /",
    "│ /",
    "│ ~",
    "The above exception was the direct cause",
    "During handling of the above exception",
    "raise ",
    "Error",
    "Exception",
    "KeyboardInterrupt",
    "SystemExit",
    "terminate called after throwing",
    "terminate called without an active exception",
    "what():",
    "frame #",
    "received by PID",
    "Fatal Python error",
    "Segmentation fault", "segmentation fault", "Bus error", "bus error", "Aborted", "abort", "Killed", "killed",
    "Illegal instruction", "illegal hardware instruction", "Floating point exception",
    "NCCL failure ", "CUDA failure ", "Cuda failure ",
    "(): ", "double free or corruption", "corrupted size vs", "corrupted double-linked list",
    "(exitcode: ",
    "exits with return code",
    "srun: error:",
    "Root Cause (first observed failure)",
    "time      :",
    "host      :",
    "rank      :",
    "exitcode  :",
    "error_file:",
    "traceback :",
    "WorkNCCL(SeqNum=",
    "Setting OMP_NUM_THREADS environment variable for each process",
    "WORLD INFO DICT:",
    " ERROR ",
    "[ERROR]",
    "are the lagging ranks",
    "last completed NCCL work:",
    "NCCL INFO", "NCCL version", "store based barrier", "store_based_barrier", "Rendezvous'ing", "elastic_operator",
    "Initializing torch.distributed", "init_process_group", "extensions root", "extension module", "ninja",
    "oading checkpoint", "Loading model from", "load_checkpoint",
    "num_proc=", "Map: ", "Filter: ", "Tokenizing", "tokenizer on",
    "joined but didn't finish collective #",
    "but didn't join collective #",
)

#: the anchors and kinds of Python and C++ errors: once the log model holds as many failures as
#: it keeps, it ignores these and the scanner stops looking for them (see scanner.SATURATION_CHECK)
EXCEPTION_ANCHORS = frozenset(("Traceback (most recent call last)", '", line ', "File ~", "File /", "\u2502 /",
                               "\u2502 ~", "The above exception was the direct cause",
                               "During handling of the above exception", "raise ", "Error", "Exception",
                               "KeyboardInterrupt",
                               "SystemExit", "terminate called after throwing",
                               "terminate called without an active exception", "what():", "frame #",
                               "Fatal Python error",
                               " ERROR ", "[ERROR]"))
EXCEPTION_KINDS = frozenset({"traceback", "frame", "chain", "raise", "exception", "cpp-throw", "cpp-terminate", "cpp-what",
                             "cpp-raised", "cpp-frame", "fatal",
                             "log-error"})

_IDENT = r"[A-Za-z_][A-Za-z0-9_]{0,100}"

#: (kind, regex searched in the line's text); the first rule that matches decides. `[^\n]`, not
#: `.`: JavaScript's `.` also stops at U+2028 and U+2029, which a line may hold
RULES: list[tuple[str, str]] = [
    ("traceback", r"Traceback \(most recent call last\)"),
    ("frame", r'^[ \t]*File "([^"]{1,1000})", line ([0-9]{1,9}), in ([^ \t]{1,200})'),
    # IPython / Jupyter: `File ~/lib/trainer.py:2548, in Trainer.train(self, ...)`
    ("frame", r"^[ \t]*File ((?:~|/|[A-Za-z]:)[^ ,]{0,1000}\.py):([0-9]{1,9}), in ([^ (]{1,200})"),
    # rich: `│ /lib/deepspeed/__init__.py:125 in initialize │` (the box is undecorated away)
    ("frame", r"^((?:~|/)[^ ]{0,1000}\.py):([0-9]{1,9}) in ([^ ]{1,200})$"),
    ("chain", r"^[ \t]*(?:The above exception was the direct cause of the following exception|"
              r"During handling of the above exception, another exception occurred):"),
    # a frame's source line that is a `raise` statement: that frame raised the exception (not a
    # call whose deeper frames an excerpt cut away)
    ("raise", r"^[ \t]*raise [A-Za-z_]"),
    # `...Error: msg`, and the classes that are a whole name: `KeyboardInterrupt`, `SystemExit: 1`,
    # `Exception: msg` (bare, or behind a module path)
    ("exception", r"^[ \t]*((?:" + _IDENT + r"\.){0,12}(?:" + _IDENT +
                  r"(?:Error|Exception)|KeyboardInterrupt|SystemExit|Exception))(?:: ?([^\n]{0,2000}))?$"),
    # the class's closing quote is kept in the group: a paste cut inside the class name still shows
    # a C++ exception that ended the process
    ("cpp-throw", r"terminate called after throwing an instance of '([^'\n]{1,300}'?)"),
    ("cpp-terminate", r"terminate called without an active exception"),
    ("cpp-what", r"^[ \t]*what\(\):[ \t]+([^\n]{1,2000})$"),
    # c10's backtrace header, below the message of a torch C++ error (`c10::Error`): an excerpt of
    # only the backtrace still shows that such an error was raised, and where
    ("cpp-raised", r"^[ \t]*Exception raised from ([^ ]{1,300}) at ([^ ]{1,1000}:[0-9]{1,9}) \(most recent call first\):"),
    # a frame of that backtrace: `frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(...) + 0x1d2 (0x7f... in
    # .../libtorch_cuda.so)`, `frame #4: <unknown function> + 0xd3b55 (...)`: its function, qualified
    ("cpp-frame", r"^[ \t]*frame #([0-9]{1,4}): (<unknown function>|[^ (\n]{1,300}?)(?:\(| \+ 0x)"),
    ("signal", r"Signal ([0-9]{1,3}) \((SIG[A-Z0-9]{1,12}|<N/A>)\) received by PID ([0-9]{1,10})"),
    ("fatal", r"Fatal Python error: ([^\n]{1,300})$"),
    # a process ended by a signal, in the words of the shell that started it: bash's
    # `train.sh: line 2: 29959 Segmentation fault      python3 train.py` (or, interactive, just
    # `Segmentation fault (core dumped)`), zsh's `[1]    4242 segmentation fault (core dumped)  python ...`
    # (a script's name ending in a digit, `train2.sh: line 2: ...`, is read as a host prefix: the
    # rest of bash's report still starts with `line N:`)
    ("fatal", r"(?:^|(?:^|: )line [0-9]{1,9}: {1,8}[0-9]{1,10} {1,8}|^\[[0-9]{1,4}\] {1,8}[0-9]{1,10} {1,8})"
              r"(Segmentation fault|Bus error|Aborted|Killed|Illegal instruction|Floating point exception|"
              r"segmentation fault|bus error|abort|killed|illegal hardware instruction)"
              r"(?: {1,20}\(core dumped\))?(?: {2,}[^\n]{0,500}| {0,20})$"),
    # glibc's heap checks (malloc/malloc.c, malloc_printerr), printed just before it aborts
    ("fatal", r"^((?:free|realloc|malloc|munmap_chunk|malloc_consolidate|_int_malloc|_int_free)\(\): "
              r"[a-z][a-z0-9 ().,]{3,80}|double free or corruption(?: \([a-z!]{1,12}\))?|corrupted size vs\. prev_size"
              r"(?: in fastbins)?|corrupted double-linked list)$"),
    # the status checks of NCCL's and CUDA's own tests and examples (nccl-tests' NCCLCHECK/CUDACHECK),
    # which print the failed call's result and exit: `node1: Test NCCL failure common.cu:958 'unhandled
    # system error'`, `CUDA failure test.cu:20 'peer mapping resources exhausted'`
    ("fatal", r"(?:^|: )((?:Test )?(?:NCCL|CUDA|Cuda) failure [^ ']{1,300}:[0-9]{1,9} '[^'\n]{1,300}')"),
    ("agent-exit", r"failed \(exitcode: (-?[0-9]{1,6})\) local_rank: ([0-9]{1,6}) \(pid: ([0-9]{1,10})\)"),
    ("launcher-exit", r"exits with return code = (-?[0-9]{1,6})"),
    ("srun-exit", r"^srun: error: ([^: \t]{1,253}): tasks? ([0-9][0-9,\-]{0,200}): ([^\n]{1,300})$"),
    ("report-root", r"^Root Cause \(first observed failure\):"),
    ("report-field", r"^[ \t]{0,8}(time|host|rank|exitcode|error_file|traceback)[ \t]{0,12}:[ \t]?([^\n]{0,2000})$"),
    # a launcher that starts its workers: it reports every failed worker when the job ends
    ("launcher-start", r"Setting OMP_NUM_THREADS environment variable for each process|WORLD INFO DICT:"),
    # a logging record at error level: its timestamp dates the traceback it introduces
    ("log-error", r"(?:^| |\[)(?:ERROR|CRITICAL)(?:\]|:| |$)"),
    # (an excerpt may cut the line before its timeout)
    ("watchdog", r"WorkNCCL\(SeqNum=([0-9]{1,20}), OpType=([A-Za-z_]{1,40})(?:[^)]{0,400}Timeout\(ms\)=([0-9]{1,12})\))?"),
    # where a job is in its start-up: a log that stops right after one of these, with no error,
    # stops in that phase (`ranking.PHASES`)
    ("phase:nccl-init", r"NCCL INFO (?:Bootstrap|NET/|NCCL_SOCKET_IFNAME|Using network|comm 0x|Channel [0-9]{1,3}/|"
                        r"Connected all|ncclCommInitRank|Init COMPLETE|cudaDriverVersion)|NCCL version [0-9]{1,3}\.[0-9]"),
    ("phase:rendezvous", r"Waiting in store based barrier|store_based_barrier_key|Rendezvous'ing worker group|"
                         r"Starting elastic_operator|Initializing torch\.distributed|init_process_group"),
    ("phase:jit-build", r"as PyTorch extensions root|Building extension module|Loading extension module|"
                        r"Emitting ninja build file|ninja: no work to do"),
    ("phase:checkpoint-load", r"Loading checkpoint shards|[Ll]oading checkpoint|Loading model from|load_checkpoint"),
    # the watchdog's account of where the process stopped (torch 2.3+): the rank whose last
    # completed work is the lowest fell behind the others
    ("progress", r"detected by watchdog at work: ([0-9]{1,20}), last enqueued NCCL work: ([0-9]{1,20}), "
                 r"last completed NCCL work: (-?[0-9]{1,20})"),
    ("lagging", r"ranks \[([0-9][0-9, ]{0,2000})\] are the lagging ranks"),
    ("lagging", r"\[([0-9][0-9, ]{0,2000})\] joined but didn't finish collective #([0-9]{1,20})"),
    ("lagging", r"\[([0-9][0-9, ]{0,2000})\] finished collective #([0-9]{1,20}), but didn't join collective"),
]
_COMPILED = [(kind, re.compile(regex)) for kind, regex in RULES]

#: what a progress bar is of. The decoration removes a bar with its description
#: (`text.DECORATION_RULES`: the next record is glued behind it), so these are searched in the
#: line as printed (its first physical line, MAX_LINE characters), when its text is no event:
#: a dataset's preprocessing (Hugging Face datasets' `Map (num_proc=32):  45%|`, `Filter:`, a
#: trainer's `Tokenizing Prompts (num_proc=64):`, `Running tokenizer on dataset:`)
PRINTED_RULES: list[tuple[str, str]] = [
    # transformers' bar over a sharded checkpoint, not yet full (`Loading checkpoint shards:  50%|`)
    ("phase:checkpoint-load", r"(?:^|[ \t\r])Loading checkpoint shards:[ \t]{0,8}[0-9]{1,2}%\|"),
    ("phase:data-preprocessing", r"(?:^|[ \t\r])(?:Map|Filter|Tokenizing(?: [A-Za-z]{1,20}){0,3}|Running tokenizer on"
                                 r"(?: [A-Za-z]{1,20}){1,3})(?: \(num_proc=[0-9]{1,4}\))?:[ \t]{0,8}[0-9]{1,3}%\|"),
]
_PRINTED = [(kind, re.compile(regex)) for kind, regex in PRINTED_RULES]

#: TORCH_DISTRIBUTED_DEBUG=DETAIL's mismatch report names two ranks and their collectives; the
#: rank whose collective differs from everyone else's is the one that went astray. A collective is
#: its operation, and the first tensor's shape and dtype where the fingerprint has them
#: (`OpType=ALLREDUCE, TensorShape=[4], TensorDtypes=Float`): the same all_reduce of a tensor of
#: another shape or dtype is a mismatch too
_COLLECTIVE = r"OpType=([A-Za-z_]{1,40}(?:, TensorShape=\[[0-9, ]{0,200}\])?(?:, TensorDtypes=[A-Za-z0-9_]{1,40})?)"
FINGERPRINT = (r"Rank ([0-9]{1,6}) is running collective: CollectiveFingerPrint\(SequenceNumber=[0-9]{1,20}, "
               + _COLLECTIVE + r".{0,3000}?but Rank ([0-9]{1,6}) is running collective: "
               r"CollectiveFingerPrint\(SequenceNumber=[0-9]{1,20}, " + _COLLECTIVE)
_FINGERPRINT = re.compile(FINGERPRINT)


def fingerprints(text: str) -> list[tuple[int, str]]:
    """(rank, collective) pairs a mismatch report names, or none."""
    match = _FINGERPRINT.search(text)
    return [(int(match.group(1)), match.group(2)), (int(match.group(3)), match.group(4))] if match else []


@dataclass(frozen=True)
class Event:
    """One recognised line: its kind and the groups of the rule that recognised it."""

    line: int           # 0-based line number
    kind: str
    groups: tuple


def recognise(text: str) -> tuple[str, tuple] | None:
    """The event a line's text is, if any: (kind, groups)."""
    for kind, regex in _COMPILED:
        match = regex.search(text)
        if match:
            return kind, tuple("" if g is None else g for g in match.groups())
    return None


def recognise_printed(raw: str) -> tuple[str, tuple] | None:
    """The event a line is by what it shows as printed (`PRINTED_RULES`), if any."""
    for kind, regex in _PRINTED:
        match = regex.search(raw)
        if match:
            return kind, tuple("" if g is None else g for g in match.groups())
    return None


def rules_for_javascript() -> list[list[str]]:
    return [[kind, regex] for kind, regex in RULES]


def printed_rules_for_javascript() -> list[list[str]]:
    return [[kind, regex] for kind, regex in PRINTED_RULES]


# -- time ------------------------------------------------------------------------------------------
# Timestamps in the formats these tools print, reduced to seconds within a year so that they
# compare across formats: glog `W1130 01:22:06.107000` (no year), Python logging / DeepSpeed
# `2023-07-25 00:38:11,500`, ISO and Slurm `2024-01-01T10:00:00.123`, torchrun's report
# `2026-11-30_01:22:09`. The year is dropped because glog has none (a log spanning New Year
# orders wrongly: rare, and said here).
TIME_RULES: list[tuple[str, str]] = [(name, regex) for name, regex in SHARED["time_rules"]]
_TIME = [re.compile(regex) for _, regex in TIME_RULES]
_DAYS_BEFORE = tuple(SHARED["days_before"])


def time_key(stamp: str | None) -> float | None:
    """Seconds since the start of the year (leap days ignored), or None when not a known format."""
    if not stamp:
        return None
    for regex in _TIME:
        match = regex.match(stamp)
        if match:
            month, day, hour, minute, second = (int(g) for g in match.groups()[:5])
            if not 1 <= month <= 12:
                return None
            fraction = match.group(6)
            seconds = ((_DAYS_BEFORE[month - 1] + day - 1) * 24 + hour) * 3600 + minute * 60 + second
            return seconds + (int(fraction) / 10 ** len(fraction) if fraction else 0.0)
    return None
