"""Split a raw log line into who printed it (host, rank), when, and the message text.

Launchers prefix every line of a multi-rank job: torchrun writes `[rank3]:` or `[default0]:`,
Slurm's `srun --label` writes `3: `, pdsh (DeepSpeed's multi-node launcher) writes `worker-1: `,
NCCL writes `host:pid:tid [gpu] NCCL ...`, DeepSpeed's logger writes
`[2025-01-01 10:00:00,123] [INFO] [engine.py:12:fn] [Rank 0] ...`, and glog-style C++ logs
(c10d) write `E1010 12:00:00.123456 4242 file.cpp:88] ...`. NCCL's `[N]` is the process's CUDA
device, used as its rank only when no launcher prefix gave one (true on one node, where the
device index is the local rank).

Before the prefixes, the line loses its decoration (ANSI colours, carriage returns, an issue's
`> ` quote, a `rich` box frame: `rootcause.text.undecorate`). The rules are data: each is a portable regular expression (RE2 = JavaScript) tried at the start
of the line, in order, repeatedly, until none applies. The browser receives the same list
(`rules_for_javascript`), so both sides split lines identically.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text import undecorate

MAX_LINE = 4096  # longer lines are cut: bounds regex work per line on both sides
MAX_PREFIXES = 6

#: (name, regex, which group holds the rank or host). Order matters: specific before generic.
RULES: list[tuple[str, str, str]] = [
    ("iso-time", r"^\[?[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?(?:Z|[-+][0-9]{2}:?[0-9]{2})?\]?:?[ \t]*", "time"),
    ("glog", r"^([IWEF][0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]+) +[0-9]+ [^ \]]+\] ?", "time"),
    ("level", r"^\[(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\][ \t]*", ""),
    # `accelerate test` and other wrappers that relay a child's streams
    ("stdio", r"^(?:stderr|stdout): ", ""),
    ("source", r"^\[[A-Za-z0-9_.\-]+\.py:[0-9]+(?::[A-Za-z0-9_<>]+)?\][ \t]*", ""),
    ("deepspeed-rank", r"^\[Rank ([0-9]{1,6})\][ \t]*", "rank"),
    ("torchrun", r"^\[(?:rank|default|[a-z_]{1,32}?)([0-9]{1,6})\]:[ \t]?", "rank"),
    ("nccl", r"^([A-Za-z0-9][A-Za-z0-9.\-]{0,252}):[0-9]{1,10}:[0-9]{1,10} \[([0-9]{1,6})\] ", "host+device"),
    # Ray's relay of a worker's output: `(TaskRunner pid=892962) `, `(LLMRayActor pid=90738, ip=172.19.24.110) `,
    # `(pid=4242) `, `(raylet) `: the actor or worker process is the stream
    ("ray", r"^\(((?:[A-Za-z_][A-Za-z0-9_.:]{0,80} )?pid=[0-9]{1,10}(?:, ip=[0-9A-Fa-f.:]{3,45})?|raylet(?:, ip=[0-9A-Fa-f.:]{3,45})?)\) ",
     "host"),
    ("slurm", r"^ {0,8}([0-9]{1,6}): ", "rank"),
    # a host name needs a digit or a hyphen, so that "error: ..." is not taken for one; every
    # part is bounded so that no line can make the rule backtrack for long
    ("host", r"^(localhost|[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}|[a-z][a-z0-9]{0,30}(?:-[a-z0-9]{1,30}){1,6}|"
             r"[a-z]{1,30}[0-9]{1,8}[a-z0-9]{0,30}(?:-[a-z0-9]{1,30}){0,6})(?:\.[a-z0-9\-]{1,63}){0,8}: ", "host"),
]
_COMPILED = [(name, re.compile(regex), groups) for name, regex, groups in RULES]
#: matches where any rule does: most lines have no prefix, and one failed search of the
#: alternation costs a tenth of trying the rules one by one
_ANY_RULE = re.compile("|".join(f"(?:{regex})" for _name, regex, _groups in RULES))


@dataclass(frozen=True)
class LogLine:
    """A line with its launcher prefixes removed."""

    text: str
    rank: int | None = None
    host: str | None = None
    time: str | None = None

    @property
    def stream(self) -> str:
        """Lines of one process share a stream key, so multi-line signatures match within it."""
        if self.rank is None and self.host is None:
            return ""
        return f"{self.host or ''}#{'' if self.rank is None else self.rank}"


def parse_line(raw: str) -> LogLine:
    """Strip launcher prefixes; keep the last rank and host seen, the first timestamp."""
    text = undecorate(raw[:MAX_LINE])
    rank = host = time = None
    for _ in range(MAX_PREFIXES):
        if not _ANY_RULE.match(text):
            break
        for _name, regex, groups in _COMPILED:
            match = regex.match(text)
            if not match or not match.end():
                continue
            if groups == "rank":
                rank = int(match.group(1))
            elif groups == "host":
                host = match.group(1)
            elif groups == "host+device":
                # NCCL's [N] is the CUDA device: the rank only when no launcher prefix named one
                host = match.group(1)
                if rank is None:
                    rank = int(match.group(2))
            elif groups == "time" and time is None:
                time = (match.group(1) if match.re.groups else match.group(0)).strip(" \t[]:")
            text = text[match.end():]
            break
        else:
            break
    return LogLine(text=text, rank=rank, host=host, time=time)


def rules_for_javascript() -> list[list[str]]:
    return [[name, regex, groups] for name, regex, groups in RULES]
