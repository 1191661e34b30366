"""`rootcause new ID`: start an entry from a template that lists every field, so a contributor
fills in text instead of looking up the schema.

With `--from-log FILE` the template starts from a real log: the failure lines (the first failure,
on the first failing rank, and the final exception) become signatures with their variable parts
masked (`matching.propose`), the lines around them become the examples, and the entries that
already match the log, or whose text is close, are listed, so that a contributor extends an
entry rather than writing it twice."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

TEMPLATE = """\
# yaml-language-server: $schema=../entry.schema.json
id: {id}
title: TODO what failed, in the words a reader would search for
summary: >
  TODO the quick answer: the cause and the fix in one or two sentences.
category: TODO  # one of: {categories}
systems: [TODO]  # from: {systems}
phase: TODO  # one of: {phases}
severity: TODO  # one of: {severities}
role: TODO  # cause (a failure in its own right), consequence (printed because something failed elsewhere), warning, or symptom (prints no error: `new --symptom`)
tags: []

signatures:
  - pattern: "TODO the error text as printed, with {{int}}, {{name}}, {{path}}... for the parts that vary"
    source: TODO the upstream file and function that prints it, or the issue thread
    examples:
      - |
        TODO paste real log lines here, exactly as printed

symptoms:
  - observed: TODO what you see
    why: TODO why it happens

root_cause: |
  TODO the mechanism, precisely.

misdiagnosis:
  - assumption: TODO what people wrongly conclude
    reality: TODO why that is wrong here

confirm:
  - TODO a check that proves this is the cause

fix:
  - step: TODO what to do
    command: TODO the exact command

prevention:
  - TODO how not to hit it again

examples: []
faq: []
related: []
references:
  - kind: source
    title: TODO
    url: https://github.com/TODO

reviewed: {today}
authors: []
"""


def add_parser(sub) -> None:
    p = sub.add_parser("new", help="create a new entry file from a template (or from a log)")
    p.add_argument("id", help="kebab-case id, e.g. nccl-watchdog-timeout")
    p.add_argument("--from-log", metavar="FILE", help="start from a real log: its failure lines become the "
                   "signatures and examples; entries that already match it are listed")
    p.add_argument("--symptom", action="store_true", help="a failure that prints no error (slow throughput, a loss "
                   "that does not fall): role: symptom, no signatures, recognised by its symptoms and measurements")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.from_log and args.symptom:
        print("--symptom and --from-log exclude each other: a log with an error in it gives a cause", file=sys.stderr)
        return 2
    if args.from_log:
        return new_from_log(Path(args.root), args.id, Path(args.from_log))
    return new_entry(Path(args.root), args.id, symptom=args.symptom)


EXAMPLE_LINES = 25   # lines of the log around a failure line kept as its example


@dataclass
class Proposal:
    pattern: str
    line: int
    example: str
    what: str                                     # "the first failure (rank 2)", "the final exception"


@dataclass
class FromLog:
    proposals: list[Proposal]
    matching: list[tuple[str, str]]               # (entry id, title) of entries whose signatures match
    close: list[tuple[str, str, float]]           # (entry id, title, score) of entries whose text is close
    title: str = ""                               # the first failure line, as the matcher reads it


def analyse_log(root: Path, log: Path) -> FromLog:
    """The failure lines of a log and what the encyclopedia already says about them."""
    from ..matching.propose import normalised, propose

    report = _valid_entries(root).diagnose_paths([log], 5)
    chosen: list[tuple[int, str, dict]] = []
    first = report["first_failure"]
    if first and first.get("line"):
        who = f" (rank {first['rank']})" if first.get("rank") is not None else ""
        chosen.append((first["line"], f"the first failure{who}", first))
    if report["unknown"] and report["unknown"][-1]["line"] not in {c[0] for c in chosen}:
        chosen.append((report["unknown"][-1]["line"], "the final exception", report["unknown"][-1]))
    lines = _lines_around(log, {number for number, _, _ in chosen})
    proposals = []
    for number, what, _failure in chosen:
        window = lines.get(number)
        if not window or normalised(window[-1]).startswith(("Traceback (most recent call last)", "File ")):
            continue   # a traceback cut before its exception line names no failure to match
        example = _example(window)
        proposals.append(Proposal(propose(window[-1], example), number, example, what))
    matching = [(r["entry"], r["title"]) for r in report["results"]]
    seen = {entry for entry, _ in matching}
    # the same "possibly related" tier diagnose prints: entries whose text is close to the error
    close = {hit["entry"]: (hit["entry"], hit["title"], round(hit["score"], 2))
             for tier in report["possible"] for hit in tier["entries"] if hit["entry"] not in seen}
    titles = [normalised(lines[number][-1]) for number, _, _ in chosen if lines.get(number)]
    return FromLog(proposals, matching, sorted(close.values(), key=lambda c: -c[2])[:5], titles[0] if titles else "")


def _valid_entries(root: Path):
    """The matcher's inputs from the entries that load: a contributor adding an entry (perhaps
    the one just started from another log) still gets the comparison with all the others."""
    from ..encyclopedia import Encyclopedia
    from ..entries.project import open_project

    project, problems = open_project(root)
    if project is None:
        for d in problems[:20]:
            print(d, file=sys.stderr)
        raise SystemExit(1)
    return Encyclopedia.from_catalog(project.catalog, project.root)


def _lines_around(log: Path, numbers: set[int]) -> dict[int, list[str]]:
    """For each wanted line number (1-based), that line and up to EXAMPLE_LINES - 1 before it,
    each as `_drafted` writes it. Read as `diagnose` reads the log (`scanner.LineBlocks`: a chunk
    and a line's head at a time, whatever a gzip member inflates to or a line's length), with
    the same errors for a log it cannot read (a cut-short or corrupt .gz: `UnreadableLog`)."""
    from collections import deque

    from ..encyclopedia import reading_errors
    from ..matching.scanner import LINE_BYTES, LineBlocks, open_log

    found: dict[int, list[str]] = {}
    window: deque[str] = deque(maxlen=EXAMPLE_LINES)
    last = max(numbers, default=0)
    number = 0
    with reading_errors(str(log)), open_log(log) as stream:
        for data, end in LineBlocks(stream):
            start = 0
            while start < end and number < last:
                stop = data.index(b"\n", start)
                number += 1
                window.append(_drafted(data[start:min(stop, start + LINE_BYTES)].decode("utf-8", "replace")))
                if number in numbers:
                    found[number] = list(window)
                start = stop + 1
            if number >= last:
                break
    return found


#: what a draft never holds of a log line: line breaks YAML reads inside a block (U+0085 is a C1
#: control, dropped with the others by `printable`; U+2028, U+2029)
_YAML_BREAKS = re.compile("[\u2028\u2029]")


def _drafted(line: str) -> str:
    """A log line as the draft entry holds it: its first MAX_LINE characters (all the matcher
    reads), a carriage return as the space the matcher reads it as, and no escape sequence or
    control character (`printable`: they would recolour the terminal that shows the draft, and
    YAML refuses most of them) nor a character YAML reads as a line break."""
    from ..matching.logline import MAX_LINE
    from ..text import printable

    line = line.rstrip("\r")[:MAX_LINE].replace("\r", " ")
    return _YAML_BREAKS.sub(" ", printable(line))


def _example(window: list[str]) -> str:
    """The failure line and the lines of the same process before it, from its traceback's start."""
    from ..matching.logline import parse_line

    stream = parse_line(window[-1]).stream
    own = [line for line in window if parse_line(line).stream == stream]
    start = max((i for i, line in enumerate(own) if "Traceback (most recent call last)" in line), default=len(own) - 1)
    return "\n".join(own[start:]) + "\n"


def new_from_log(root: Path, entry_id: str, log: Path) -> int:
    from ..config import KEBAB

    if not re.fullmatch(KEBAB, entry_id):
        print(f"'{entry_id}' is not a kebab-case id (lowercase words joined by '-'), e.g. nccl-watchdog-timeout",
              file=sys.stderr)
        return 2
    if not log.is_file():
        print(f"{log}: no such file", file=sys.stderr)
        return 2
    from ..encyclopedia import DiagnosisError
    from ..text import printable

    try:
        found = analyse_log(root, log)
    except SystemExit as stop:   # the entries have errors: already printed
        return int(stop.code or 1)
    except DiagnosisError as error:   # an unreadable log (a broken .gz, a read error)
        print(printable(error.message, one_line=True), file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{log}: cannot read the log: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if not found.proposals:
        print(f"{log}: no failure found in this log (no traceback, exception or error line); nothing to propose",
              file=sys.stderr)
        return 1
    code = new_entry(root, entry_id, found)
    if code:
        return code
    for proposal in found.proposals:
        print(f"  signature from {proposal.what}, line {proposal.line}: {proposal.pattern}")
    if found.matching:
        print("entries that already match this log (extend one of them if it is the same failure):")
        for entry, title in found.matching:
            print(f"  - {entry}: {title}")
    if found.close:
        print("entries whose text is close:")
        for entry, title, score in found.close:
            print(f"  - {entry}: {title} (score {score})")
    return 0


def _signatures_yaml(found: "FromLog") -> str:
    import json

    out = ["signatures:"]
    for proposal in found.proposals:
        out.append(f"  - pattern: {json.dumps(proposal.pattern, ensure_ascii=False)}  # from {proposal.what}")
        out.append("    source: TODO the upstream file and function that prints it (fetch the repository; git grep)")
        out.append("    examples:")
        out.append("      - log: |")
        out += [f"          {line}" if line.strip() else "" for line in proposal.example.rstrip("\n").split("\n")]
        out.append("        reproduced: " + json.dumps("TODO the exact versions and the command that printed this log; "
                                                  "or replace this key by 'posted' and the thread's address"))
    return "\n".join(out) + "\n"


SYMPTOM_PARTS = """\
role: symptom  # prints no error: no signatures; recognised by the symptoms and the measurements under confirm
tags: []

symptoms:
  - observed: TODO what the reader sees and measures, with the numbers that tell it from normal
    why: TODO why it happens

root_cause: |
  TODO each mechanism that produces the symptom, and how to tell them apart.

misdiagnosis:
  - assumption: TODO what people wrongly conclude
    reality: TODO why that is wrong here

confirm:
  - step: TODO a measurement that proves it
    command: TODO the exact command
"""


def new_entry(root: Path, entry_id: str, found: "FromLog | None" = None, symptom: bool = False) -> int:
    from ..config import KEBAB, load_config

    if not re.fullmatch(KEBAB, entry_id):
        print(f"'{entry_id}' is not a kebab-case id (lowercase words joined by '-'), e.g. nccl-watchdog-timeout",
              file=sys.stderr)
        return 2
    config, problems = load_config(root)
    if config is None:
        for d in problems:
            print(d, file=sys.stderr)
        return 1
    path = root / "entries" / f"{entry_id}.yaml"
    if os.path.lexists(path):
        print(f"{path} already exists", file=sys.stderr)
        return 1
    vocab = config.vocabularies
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x", encoding="utf-8") as stream:  # never through a link planted there
            text = TEMPLATE.format(
                id=entry_id, today=dt.date.today().isoformat(),
                categories=", ".join(vocab.categories), systems=", ".join(vocab.systems),
                phases=", ".join(vocab.phases), severities=", ".join(vocab.severities))
            if symptom:   # no signatures; symptoms and confirm are what identify it
                start, end = text.index("role: TODO"), text.index("\nfix:")
                text = text[:start] + SYMPTOM_PARTS + text[end:]
            if found is not None:
                start, end = text.index("signatures:\n"), text.index("\nsymptoms:")
                text = text[:start] + _signatures_yaml(found) + text[end:]
                title = json.dumps(f"TODO (from the log) {found.title[:100]}", ensure_ascii=False)
                text = text.replace("title: TODO what failed, in the words a reader would search for",
                                    f"title: {title}")
            stream.write(text)
    except OSError as exc:
        print(f"{path}:1:1: error[E051]: cannot write the entry: {exc.strerror or exc} — check that entries/ "
              "can be written", file=sys.stderr)
        return 2
    print(f"wrote {path}; fill in the TODOs, then run `rootcause check`")
    return 0
