"""From a real log line to a signature pattern: the variable parts masked as placeholders.

`rootcause new ID --from-log FILE` starts an entry from a log. The line is first normalised as
the matcher reads it (decoration removed, launcher prefix split off by `logline`), then masked by
these rules, applied in this order to the text that is still literal (content/command-line.md,
"From a log to an entry", lists them):

| what | becomes | e.g. |
| --- | --- | --- |
| a PyTorch shape | `{shape}` | `torch.Size([8, 1024])` |
| a host and port, or an IPv4 address | `{host}:{int}`, `[{host}]:{int}`, `{host}` | `10.0.0.7:29500`, `[node-3]:29500` |
| a file or folder path (two or more `/` parts, or `~/...`, `C:\\...`) | `{path}` | `/data/ckpt/step_100` |
| a bracketed list or tuple of integers | `{ints}` | `[8, 1024]` |
| a dtype | `{dtype}` | `torch.bfloat16` |
| a hexadecimal number with `0x` | `{hex}` | `0x7f3a2c` |
| a decimal or scientific number | `{float}` | `1.96`, `3e-05` |
| a whole number | `{int}` | `808`, `rank 3` → `rank {int}` |

Numbers inside identifiers (`sm_80`, `fp16`, `ProcessGroupNCCL.cpp`) are kept: they are part of
the name. The proposal is checked: it must compile, carry enough literal text, and match the line
it came from; otherwise less is masked.
"""

from __future__ import annotations

import re

from .logline import parse_line
from .patterns import PatternError, compile_pattern
from .signatures import CompiledSignature, find_matches, parse_text
from ..text import undecorate

#: (name, regex, replacement): applied in order; a match never spans text already masked
MASKS: list[tuple[str, re.Pattern, str]] = [
    ("shape", re.compile(r"torch\.Size\(\[[0-9, ]*\]\)"), "{shape}"),
    ("host-port", re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}:\d{2,5}(?![\w.])"), "{host}:{int}"),
    ("bracketed-host-port", re.compile(r"\[[A-Za-z][\w.\-]*\]:\d{2,5}\b"), "[{host}]:{int}"),
    ("ipv4", re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])"), "{host}"),
    ("path", re.compile(r"(?<![\w.\-])(?:~|[A-Za-z]:\\|\.{0,2})?(?:[/\\][\w.+\-@=]+){2,}/?"), "{path}"),
    ("ints", re.compile(r"[\[(]-?\d+(?:, ?-?\d+)+[\])]"), "{ints}"),
    ("dtype", re.compile(r"\btorch\.(?:u?int(?:8|16|32|64)|float(?:16|32|64)|bfloat16|half|double|bool|"
                         r"float8_e4m3fn|float8_e5m2|complex64|complex128)\b"), "{dtype}"),
    ("hex", re.compile(r"\b0x[0-9a-fA-F]+\b"), "{hex}"),
    ("float", re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)(?![\w.])"), "{float}"),
    ("int", re.compile(r"(?<![\w.])[-+]?\d+(?![\w.])"), "{int}"),
]


def mask(text: str, keep: tuple[str, ...] = ()) -> str:
    """The text in the placeholder language, variable parts masked (literal braces doubled);
    the rules named in `keep` are not applied."""
    pieces: list[tuple[bool, str]] = [(True, text)]   # (still literal, text)
    for name, regex, replacement in MASKS:
        if name in keep:
            continue
        next_pieces: list[tuple[bool, str]] = []
        for literal, piece in pieces:
            if not literal:
                next_pieces.append((literal, piece))
                continue
            last = 0
            for match in regex.finditer(piece):
                next_pieces.append((True, piece[last:match.start()]))
                next_pieces.append((False, replacement))
                last = match.end()
            next_pieces.append((True, piece[last:]))
        pieces = [(lit, p) for lit, p in next_pieces if p]
    return "".join(p.replace("{", "{{").replace("}", "}}") if lit else p for lit, p in pieces)


#: a tqdm progress bar that a log record was printed after (no newline between them)
_PROGRESS_BAR = re.compile(r"^\s*\d{1,3}%\|[^|]*\|\s*\d+/\d+\s*\[[^\]]*\]")


def normalised(raw_line: str) -> str:
    """A raw log line as the matcher reads it: undecorated, without its launcher prefix (and
    without a progress bar in front of it, which is never part of the message)."""
    text = parse_line(undecorate(raw_line)).text.strip()
    bar = _PROGRESS_BAR.match(text)
    return parse_line(text[bar.end():]).text.strip() if bar else text


def propose(raw_line: str, example: str) -> str:
    """A pattern for `raw_line` that compiles and matches `example` (the lines it came from):
    fully masked if that works, else with fewer masks, else the line as printed."""
    text = normalised(raw_line)
    candidates = [mask(text)]
    for keep in (("int",), ("int", "float")):   # numbers are likeliest to over-generalise a short line
        candidates.append(mask(text, keep))
    candidates.append(text.replace("{", "{{").replace("}", "}}"))
    for pattern in candidates:
        try:
            compiled = compile_pattern(pattern)
        except PatternError:
            continue
        signature = CompiledSignature(entry_id="proposal", index=0, steps=(compiled,))
        if find_matches(signature, parse_text(example)):
            return pattern
    return candidates[-1]
