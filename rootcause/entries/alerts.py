"""What a line filter (a Loki alerting rule, a Vector tag) can say of each signature, and the
proof that it means what the signature means.

A line filter sees one raw line at a time. A single-line signature is exported as its regex
(E035 and E036 already hold it to its own failure). A multi-line signature means its lines
together; alone, one of them may be printed by healthy runs (a Trainer's "Training completed")
or by another failure (any CUDA out-of-memory line, any frame of an evaluation loop). So it is
exported only through the line its entry declares distinctive (`alert_line`), and otherwise
left out, with the reason. Vetoes (`unless`) cannot be said by a line filter: such a signature
is left out too. Every exported expression, as it will be written, is run against every healthy
log and every other entry's examples: one that matches is an error (E055), the same way E035 is
for a signature (a declared relation allows it). `rootcause check` and `rootcause export` both
run this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import Diagnostic
from .catalog import related_pairs
from .project import Project, healthy_log_paths

#: the characters a LogQL backtick literal and a VRL raw string cannot hold, written as hex escapes
QUOTES = "\"'`"


@dataclass(frozen=True)
class Exported:
    entry_id: str
    title: str
    summary: str
    severity: str
    system: str
    role: str
    url: str
    regexes: tuple[str, ...]
    threshold: int
    notes: tuple[str, ...]        # how a signature was narrowed, e.g. "signature 2: its line 1 of 2"
    places: tuple[tuple[int, int], ...] = ()   # where each exported signature is in the entry file

    @property
    def expression(self) -> str:
        """The rule's regexes as one alternation, each as `line_filter` writes it."""
        parts = [line_filter(r) for r in self.regexes]
        return parts[0] if len(parts) == 1 else "|".join(f"(?:{r})" for r in parts)


def line_filter(regex: str) -> str:
    """A signature's regex with quotes and backticks as hex escapes, which RE2, Go and Rust read
    alike, so the text needs no escaping inside a LogQL or VRL literal."""
    def hexed(match: re.Match) -> str:
        char = match.group(1) or match.group(2)
        return f"\\x{ord(char):02x}" if char in QUOTES else match.group(0)

    return re.sub(r"\\(.)|([\"'`])", hexed, regex, flags=re.DOTALL)


class _Corpus:
    """The lines an exported expression must not match: every healthy log's, and every entry's
    examples' (by entry)."""

    def __init__(self, project: Project):
        self.healthy: list[tuple[str, int, str]] = []
        paths, _refused = healthy_log_paths(project.root, project.config.healthy_logs)
        for path in paths:
            text = path.read_bytes().decode("utf-8", errors="replace")
            self.healthy += [(path.name, number, line) for number, line in enumerate(text.splitlines(), 1)]
        self.examples = {entry_id: [line for example in loaded.entry.signatures for log in example.example_logs
                                    for line in log.splitlines()]
                         for entry_id, loaded in project.catalog.entries.items()}

    def first_match(self, regex, entry_id: str, allowed: frozenset[str] = frozenset()) -> str | None:
        """Where `regex` (compiled) matches a line it must not: a healthy log's, or an example of
        another entry than `entry_id` and those `allowed`; None when nowhere."""
        for name, number, line in self.healthy:
            if regex.search(line):
                return f"line {number} of the healthy log {name}"
        for other, lines in self.examples.items():
            if other != entry_id and other not in allowed and any(regex.search(line) for line in lines):
                return f"an example of the entry '{other}'"
        return None


def exportable(project: Project) -> tuple[list[Exported], list[str], list[Diagnostic]]:
    """(rules, skipped, problems): what each entry contributes, why anything was left out, and
    the exported expressions that match what they must not (E055)."""
    import re2

    from ..text import plain

    corpus = _Corpus(project)
    allowed: dict[str, frozenset[str]] = {}   # the entries E035 lets this one's signatures match (both ways)
    for one, other in related_pairs(project.catalog):
        allowed[one] = allowed.get(one, frozenset()) | {other}
    config = project.config
    rules, skipped, problems = [], [], []
    for entry_id, loaded in sorted(project.catalog.entries.items()):
        entry = loaded.entry
        if entry.is_symptom:
            skipped.append(f"{entry_id}: prints no error (role: symptom), nothing for a line filter to match")
            continue
        if entry.role == "warning" and entry.persistent is None:
            skipped.append(f"{entry_id}: a benign warning (no persistent threshold), never an alert")
            continue
        regexes, notes, places = [], [], []
        for compiled in loaded.signatures:
            number = compiled.index + 1
            if compiled.unless:
                skipped.append(f"{entry_id} signature {number}: its 'unless' veto cannot be expressed in a line filter")
                continue
            if compiled.multiline:
                chosen = entry.signatures[compiled.index].alert_line
                if chosen is None:
                    skipped.append(f"{entry_id} signature {number}: a multi-line signature means its lines together, "
                                   "and it names no line that identifies the failure alone (alert_line)")
                    continue
                step = compiled.steps[chosen - 1]
                notes.append(f"signature {number}: its line {chosen} of {len(compiled.steps)} only")
            else:
                step = compiled.steps[0]
            regexes.append(step.regex)
            places.append(loaded.located.where(("signatures", compiled.index)))
        if not regexes:
            skipped.append(f"{entry_id}: no signature can be exported")
            continue
        threshold = entry.persistent.count if entry.role == "warning" and entry.persistent else 1
        rule = Exported(entry_id, plain(entry.title), plain(entry.summary), entry.severity, entry.systems[0],
                        entry.role, f"{config.base_url}entries/{entry_id}/", tuple(dict.fromkeys(regexes)),
                        threshold, tuple(notes), tuple(places))
        wrong = []
        for regex, (line, col) in zip(regexes, places):   # each as written, so the error names its signature
            found = corpus.first_match(re2.compile(line_filter(regex)), entry_id, allowed.get(entry_id, frozenset()))
            if found:
                wrong.append(Diagnostic(loaded.path, line, col, "E055",
                                        f"the alert rule exported for this entry matches {found}",
                                        "narrow the signature (for a multi-line one, name in 'alert_line' a line "
                                        "that only this failure prints) so that its exported line means it alone"))
        if wrong:
            problems += wrong
            continue
        rules.append(rule)
    return rules, skipped, problems


def export_problems(project: Project) -> list[Diagnostic]:
    """E055 for `rootcause check`."""
    return exportable(project)[2]
