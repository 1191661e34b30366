"""The mutation check (E056): every example still names its entry when pasted the ways real
pastes differ from what the software printed.

An example is what a release printed once. People paste it otherwise: behind a launcher's rank
or host prefix or a timestamp, quoted in an issue (`> `), with Windows line ends, cut after the
first sentence, behind another exception class or none (an older release, a wrapper that
re-raises), with its numbers elided, and, for a signature that declares its raising frames, cut
just before its exception line (a Python frame) or without its message line (a C++ frame the
example's backtrace shows), and wrapped by a terminal at 60, 80 and 100 columns: every line
longer than that cut into lines of that width, wherever the cut falls (the scanner joins the
message again: `matching.scanner.wrap_texts`). One class of wrap is not asked of an example: a
cut whose rest reads as a line of its own (blank, behind what a launcher's prefix or a
timestamp looks like, or opening a record such as an exception's line, `_reads_alone`), which
no reader can tell from a line that the software printed so. Each example of each
signature is mutated in each of these ways and diagnosed with every entry's signatures, as
`rootcause diagnose` would: the report must name the same entry first as it does for the example
itself, and no mutation may name another one. An example whose own report names another entry
first (a consequence entry's example, which holds its cause's line) is not mutated.

`rootcause check` runs this after the other checks pass (it diagnoses every example a dozen
times); a failing mutation is an error at the example, saying which mutation and what it named.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import Diagnostic

_CLASS = re.compile(r"^((?:[A-Za-z_][\w.]*)?(?:Error|Exception)): ")


def _every_line(text: str, change: Callable[[str], str]) -> str:
    return "\n".join(change(line) for line in text.split("\n"))


def _elided(text: str, pattern: str | None) -> str:
    """The line with the numbers its pattern's number placeholders matched shown as N (the
    variable parts a person elides; a number written in the pattern is part of the message)."""
    if pattern is None:
        return text
    from ..matching.patterns import PLACEHOLDERS, escape, split_pattern

    numbers = ("int", "float", "hex")
    regex = "".join(escape(value) if kind == "lit" else
                    (f"({PLACEHOLDERS[value][0]})" if value in numbers else f"(?:{PLACEHOLDERS[value][0]})")
                    for kind, value in split_pattern(pattern))
    found = re.search(regex, text)
    if found is None:
        return text
    for group in range(found.re.groups, 0, -1):
        start, end = found.span(group)
        if start >= 0:
            text = text[:start] + "N" + text[end:]
    return text


#: the widths a terminal, a logger or a form wraps a long line at (`_wrapped`)
WRAP_WIDTHS = (60, 80, 100)


def _wrapped(text: str, width: int) -> str:
    """The text as a terminal shows it `width` columns wide: each line longer than that cut into
    lines of `width` characters, wherever the cut falls (inside a word, at a space, which stays
    where it was), its prefixes on its first line only."""
    out = []
    for line in text.split("\n"):
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return "\n".join(out)


def _reads_alone(text: str, width: int) -> bool:
    """Does a wrap at `width` columns leave a line that reads as a line of its own: the rest of a
    cut line that is blank, begins with what a prefix looks like (`9: ...`, a timestamp) or
    opens a record (`...ShapeException: ...` reads as an exception's line)? No reader can tell
    such a line from one that the software printed so: the scanner does not join it, and the
    wrap mutation is not asked of the example at that width."""
    from ..matching.events import recognise
    from ..matching.logline import parse_line
    from ..matching.scanner import RECORD_STARTS

    for line in text.split("\n"):
        for at in range(width, len(line), width):
            rest = parse_line(line[at:at + width])
            event = recognise(rest.text)
            if not rest.text.strip(" \t") or rest.stream or rest.time is not None or \
                    (event is not None and event[0] in RECORD_STARTS):
                return True
    return False


def mutations(example: str, line: int, core: str, pattern: str | None = None,
              frames: bool = False, backtrace: bool = False) -> list[tuple[str, str]]:
    """(name, mutated example) pairs of an example whose signature matched its line `line`
    (0-based), with the signature's core ("" for none) and placeholder pattern (None for a regex
    or a multi-line signature); `frames`: the signature declares Python raising frames, so the
    example cut just before its exception line must still name it; `backtrace`: the example shows
    a C++ backtrace with a raising frame the signature declares, so without its message line (the
    C++ exception's `what():` cut or missing) it must still name it."""
    lines = example.split("\n")
    found = [
        ("behind a torchrun rank prefix", _every_line(example, lambda l: f"[rank3]: {l}")),
        ("behind a Slurm task prefix", _every_line(example, lambda l: f"3: {l}")),
        ("behind a host and local-rank prefix", _every_line(example, lambda l: f"node-7: [default0]:{l}")),
        ("behind a timestamp", _every_line(example, lambda l: f"2025-03-01 10:00:00,123 {l}")),
        ("quoted with '> '", _every_line(example, lambda l: f"> {l}")),
        ("with CRLF line ends", example.replace("\n", "\r\n")),
    ]
    target = lines[line] if 0 <= line < len(lines) else ""
    if core and core in target:
        cut = target[:target.index(core) + len(core)]
        if cut != target.rstrip():
            found.append(("cut after its core", "\n".join(lines[:line] + [cut])))
    message = target.lstrip()
    indent = target[:len(target) - len(message)]
    prefix = _CLASS.match(message)
    if prefix and core:
        for name, other in (("behind another exception class", "RuntimeError: "), ("without its exception class", "")):
            if prefix.group(0) != other:
                found.append((name, "\n".join(lines[:line] + [indent + other + message[prefix.end():]]
                                              + lines[line + 1:])))
    if frames and line > 0:
        found.append(("cut before its exception line", "\n".join(lines[:line])))
    if backtrace and 0 <= line < len(lines):
        found.append(("without its message line", "\n".join(lines[:line] + lines[line + 1:])))
    for width in WRAP_WIDTHS:
        wrapped = _wrapped(example, width)
        if wrapped != example and not _reads_alone(example, width):
            found.append((f"wrapped at {width} columns", wrapped))
    elided = _elided(target, pattern)
    if elided != target:
        found.append(("with its numbers elided", "\n".join(lines[:line] + [elided] + lines[line + 1:])))
    return found


def mutation_problems(catalog) -> list[Diagnostic]:
    """E056 for every mutated example that the diagnosis names differently from the example."""
    from ..matching.ranking import rank, report_json
    from ..matching.rows import EntryInfo
    from ..matching.incident import backtrace_frames
    from ..matching.scanner import Scanner, cpp_frame_fits

    scanner = Scanner(catalog.signatures())
    infos = {entry_id: EntryInfo.of_entry(loaded.entry) for entry_id, loaded in catalog.entries.items()}
    consequences = catalog.consequences()

    def first(text: str) -> str | None:
        report = report_json(rank(scanner.scan_text(text), consequences, infos), infos, 1)
        return report["results"][0]["entry"] if report["results"] and report["status"] != "none" else None

    problems = []
    for entry_id, loaded in sorted(catalog.matchable().items()):
        if loaded.entry.role == "warning":
            continue   # a benign warning is a note, never the first result
        for i, (spec, compiled) in enumerate(zip(loaded.entry.signatures, loaded.signatures)):
            for j, example in enumerate(spec.example_logs):
                if first(example) != entry_id:
                    continue
                marks = compiled.marks.get(example) or ()
                line = marks[-1][0] if marks else -1
                python = any(frame.file.endswith(".py") for frame in spec.frames)
                cpp = [frame for frame in spec.frames if not frame.file.endswith(".py")]
                backtrace = bool(cpp) and any(cpp_frame_fits(file, function, frame.file, frame.function)
                                              for file, function in backtrace_frames(example) for frame in cpp)
                for name, mutated in mutations(example, line, compiled.core, spec.pattern, python, backtrace):
                    named = first(mutated)
                    if named != entry_id:
                        at, col = loaded.located.where(("signatures", i, "examples", j))
                        what = f"names '{named}' first" if named else "names no entry"
                        problems.append(Diagnostic(
                            loaded.path, at, col, "E056",
                            f"example {j + 1} of signature {i + 1}, {name}, {what} instead of this entry",
                            "make the pattern hold what this failure always prints (its core: `core:`), or "
                            "narrow the other entry's pattern if it named that one"))
                        break   # one line per example: its first failing mutation
    return problems
