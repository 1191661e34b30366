"""`rootcause export`: the entries' signatures as alert rules for the log stacks clusters run.

`--format loki` writes Loki ruler alerting rules: Prometheus rule-group YAML whose expressions
are LogQL `count_over_time({selector} |~ "regex" [range])`, one rule per entry, labelled with the
entry id, severity and system, and the entry's page as `runbook_url`. `--format vector` writes a
Vector VRL remap program that adds the ids of the entries whose signatures a line matches.

A line filter sees one raw line at a time, so only what means the same there is exported: a
signature's regex is already RE2 (which Go's regexp, behind LogQL, implements) and unanchored,
so launcher prefixes in front of the text do not matter. A multi-line signature is exported as
its most specific line; a signature with `unless` patterns is skipped, because a line filter
cannot veto a match by what the next lines say. Warnings are exported only when they have a
`persistent` threshold, as `>= count` within the range. Entries of `role: symptom` print no
error and have no signature to export. The output lists what was skipped.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

FORMATS = ("loki", "vector")


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


def exportable(project) -> tuple[list[Exported], list[str]]:
    """(rules, skipped): what each entry contributes, and why anything was left out."""
    from ..text import plain

    config = project.config
    rules, skipped = [], []
    for entry_id, loaded in sorted(project.catalog.entries.items()):
        entry = loaded.entry
        if entry.is_symptom:
            skipped.append(f"{entry_id}: prints no error (role: symptom), nothing for a line filter to match")
            continue
        if entry.role == "warning" and entry.persistent is None:
            skipped.append(f"{entry_id}: a benign warning (no persistent threshold), never an alert")
            continue
        regexes, notes = [], []
        for compiled in loaded.signatures:
            number = compiled.index + 1
            if compiled.unless:
                skipped.append(f"{entry_id} signature {number}: its 'unless' veto cannot be expressed in a line filter")
                continue
            step = max(compiled.steps, key=lambda s: (s.literal_chars, -compiled.steps.index(s)))
            if compiled.multiline:
                notes.append(f"signature {number}: its line {compiled.steps.index(step) + 1} of {len(compiled.steps)} only")
            regexes.append(step.regex)
        if not regexes:
            skipped.append(f"{entry_id}: no signature can be exported")
            continue
        threshold = entry.persistent.count if entry.role == "warning" and entry.persistent else 1
        rules.append(Exported(entry_id, plain(entry.title), plain(entry.summary), entry.severity, entry.systems[0],
                              entry.role, f"{config.base_url}entries/{entry_id}/", tuple(dict.fromkeys(regexes)),
                              threshold, tuple(notes)))
    return rules, skipped


def combined_regex(rule: Exported) -> str:
    """One alternation of the rule's regexes; quotes and backticks as hex escapes, which RE2,
    Go and Rust read alike, so the text needs no escaping inside a LogQL or VRL literal."""
    joined = rule.regexes[0] if len(rule.regexes) == 1 else "|".join(f"(?:{r})" for r in rule.regexes)

    def hexed(match: re.Match) -> str:
        char = match.group(1) or match.group(2)
        return f"\\x{ord(char):02x}" if char in QUOTES else match.group(0)

    return re.sub(r"\\(.)|([\"'`])", hexed, joined, flags=re.DOTALL)


QUOTES = "\"'`"


def alert_name(entry_id: str) -> str:
    return "Rootcause" + "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", entry_id) if part)


def loki_rules(rules: list[Exported], skipped: list[str], selector: str, window: str, group: str) -> str:
    import yaml

    body = {"groups": [{"name": group, "rules": [{
        "alert": alert_name(r.entry_id),
        "expr": f"sum by (job) (count_over_time({selector} |~ `{combined_regex(r)}` [{window}])) >= {r.threshold}",
        "labels": {"severity": r.severity, "entry": r.entry_id, "system": r.system, "role": r.role},
        "annotations": {"summary": r.title, "description": r.summary, "runbook_url": r.url,
                        **({"narrowed": "; ".join(r.notes)} if r.notes else {})},
    } for r in rules]}]}
    return _header(rules, skipped, "#") + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=100000)


def vector_program(rules: list[Exported], skipped: list[str]) -> str:
    lines = [_header(rules, skipped, "#").rstrip("\n"),
             "# Adds .rootcause_entries (ids of the entries whose signatures this line matches) to each event.",
             'message = to_string(.message) ?? ""', "entries = []"]
    for r in rules:
        if r.role == "warning":
            continue   # a threshold over many lines is not a per-line tag
        lines.append(f"if match(message, r'{combined_regex(r)}') {{ entries = push(entries, {json.dumps(r.entry_id)}) }}")
    lines += ["if length(entries) > 0 { .rootcause_entries = entries }", ""]
    return "\n".join(lines)


def _header(rules: list[Exported], skipped: list[str], comment: str) -> str:
    text = [f"{comment} Generated by `rootcause export` from {len(rules)} entries; do not edit by hand."]
    if skipped:
        text.append(f"{comment} Not exported ({len(skipped)}):")
        text += [f"{comment}   - {reason}" for reason in skipped]
    return "\n".join(text) + "\n"


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="write the signatures as Loki alerting rules or a Vector remap program")
    p.add_argument("--format", choices=FORMATS, required=True)
    p.add_argument("-o", "--output", help="write here instead of standard output")
    p.add_argument("--selector", default='{job=~".+"}', help='LogQL stream selector (default {job=~".+"})')
    p.add_argument("--range", dest="window", default="5m", help="LogQL range of count_over_time (default 5m)")
    p.add_argument("--group", default="rootcause", help="rule group name (default rootcause)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..entries.project import open_project

    if not re.fullmatch(r"\{.*\}", args.selector.strip()):
        print("rootcause export: --selector must be a LogQL stream selector in braces, e.g. '{job=\"train\"}'",
              file=sys.stderr)
        return 2
    if not re.fullmatch(r"[1-9][0-9]*(ms|s|m|h|d|w)", args.window):
        print("rootcause export: --range must be a duration such as 5m, 1h", file=sys.stderr)
        return 2
    project, problems = open_project(Path(args.root))
    errors = [d for d in problems if d.severity == "error"]
    if project is None or errors:
        for d in errors[:20]:
            print(d, file=sys.stderr)
        print("rootcause export: the entries have errors (run `rootcause check`)", file=sys.stderr)
        return 1
    rules, skipped = exportable(project)
    text = (loki_rules(rules, skipped, args.selector.strip(), args.window, args.group) if args.format == "loki"
            else vector_program(rules, skipped))
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"rootcause export: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    print(f"exported {len(rules)} entries ({sum(len(r.regexes) for r in rules)} signatures); "
          f"{len(skipped)} not exported (listed at the top of the output)", file=sys.stderr)
    return 0
