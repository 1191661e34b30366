"""What a log with no error line shows through its training loss.

A run whose loss has turned NaN, or is logged as exactly 0, prints no error and goes on, yet it
has failed as surely as one that raised: its weights are NaN, or nothing is being trained. The
loss the log *ends* with says so: a NaN that training recovered from is no failure, a failed
state lasts to the end. So only the log's last lines are read (`shared.json` "metrics":
`tail_lines`), after the scan, and the scan's speed does not change with the metrics a log prints.
The browser reads the same lines with the same rules (matcher.js, `lossSymptom`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .logline import MAX_LINE, parse_line
from .shared import SHARED

METRICS: dict = SHARED["metrics"]
TAIL_LINES: int = METRICS["tail_lines"]
LOSS_RECORD = re.compile(METRICS["loss_record"])
RL_RECORD = re.compile(METRICS["rl_record"])
ZERO_AFTER: float = METRICS["zero_after"]
SIGNS: dict[str, dict] = METRICS["signs"]
BLANKS = " \t\n\r\x0b\x0c"   # what is stripped from a line shown: ASCII white space, as in the browser
_NONFINITE = re.compile(METRICS["nonfinite"])


def tail_of(previous: bytes, data: bytes, end: int) -> bytes:
    """The last TAIL_LINES whole lines of a log read so far: `previous` (its tail before this
    block) followed by the whole lines data[:end]."""
    position = end - 1                       # (data[end - 1] is a line's newline)
    for _ in range(TAIL_LINES):
        position = data.rfind(b"\n", 0, position)
        if position < 0:
            if not previous:
                return data[:end]
            joined = previous + data[:end]
            return tail_of(b"", joined, len(joined))
    return data[position + 1:end]


def tail_lines(tail: bytes) -> list[str]:
    """The tail's lines as text, each cut as every line is read (MAX_LINE characters)."""
    return [line.rstrip("\r")[:MAX_LINE] for line in tail.decode("utf-8", "replace").split("\n")[:-1]]


def _record(raw: str) -> tuple[str, bool] | None:
    """A line's training loss as printed (its last loss record), and whether it is an RL record."""
    value = None
    for match in LOSS_RECORD.finditer(raw):
        value = match.group(1)
    return None if value is None else (value, bool(RL_RECORD.search(raw)))


def loss_symptom(lines: list[str], first: int, infos: Mapping) -> dict | None:
    """The sign of failure the loss the log ends with shows, or None: {sign, says, line (1-based),
    rank, host, text, entries}. `lines` are the log's last lines, the first being line `first`
    (0-based); `infos` the entries there are (a sign whose entries are all missing says nothing)."""
    records = [(first + i, raw, *found) for i, raw in enumerate(lines) if (found := _record(raw)) is not None]
    if not records:
        return None
    _n, _raw, value, rl = records[-1]
    if _NONFINITE.match(value):
        sign, still = ("rl-loss-nonfinite" if rl else "loss-nonfinite"), lambda v: bool(_NONFINITE.match(v))
    elif float(value) == 0 and not rl:
        sign, still = "loss-zero", lambda v: not _NONFINITE.match(v) and float(v) == 0
    else:
        return None
    start = len(records) - 1
    while start > 0 and still(records[start - 1][2]):
        start -= 1
    if sign == "loss-zero" and start > 0 and float(records[start - 1][2]) < ZERO_AFTER:
        return None    # fell to 0 step by step: memorisation, not a failure
    entries = [{"entry": i, "title": infos[i].title, "summary": infos[i].summary, "url": infos[i].url,
                "check": infos[i].check, "check_command": infos[i].check_command, "fix": infos[i].fix}
               for i in SIGNS[sign]["entries"] if i in infos]
    if not entries:
        return None
    number, raw = records[start][0], records[start][1]
    line = parse_line(raw)
    # a progress bar redrawn with carriage returns: the last drawing that shows the loss
    shown = [part for part in raw.split("\r") if LOSS_RECORD.search(part)][-1]
    return {"sign": sign, "says": SIGNS[sign]["says"], "line": number + 1, "rank": line.rank, "host": line.host,
            "text": shown.strip(BLANKS), "entries": entries}
