"""The browser's matcher is the command line's, function by function: every function of the
matching modules that decides what a report says has its twin in theme/assets/matcher.js (the
same name in camelCase, or the one named here), or is named here as Python's alone, with why.
A new matching function without a twin fails this test before it can make the two sides differ."""

from __future__ import annotations

import ast
import re

from conftest import REPO

MODULES = ("logline", "events", "signatures", "incident", "ranking", "scanner", "rows", "metrics")
#: Python's name → its twin's, where the twin is named otherwise
RENAMED = {"report_json": "reportOf", "_role": "roleOf", "_lines_of": "entryJson", "_signal": "feed",
           "fingerprints": "oddCollective", "_take_line": "take", "_match": "result", "_scan_block": "scan",
           "first_line": "findingsOf", "recognise_printed": "recognise",
           "_physical_info": "readPhysical", "_read_physical": "readPhysical", "_record": "lossRecord"}
#: what only the Python side has, and why the browser needs no twin of it
PYTHON_ONLY = {
    "rules_for_javascript": "writes the rules the browser receives as data",
    "printed_rules_for_javascript": "writes the rules the browser receives as data",
    "backtrace_frames": "reads an entry's example for the checks (E057, the mutation check)",
    "marked_lines": "marks an example on the entry's page at build time",
    "anchors_of": "the browser collects the same anchors where it reads a signature",
    "compile_signature": "compiles an entry's signature; the browser reads compiled ones",
    "parse_text": "numbers an example's lines for the checks",
    "multiline": "a property the browser stores when it reads a signature",
    "specificity": "shipped in signatures.json",
    "step_regexes": "compiled RE2 programs; the browser compiles RE2JS ones (SignatureRegex)",
    "unless_regexes": "compiled RE2 programs; the browser compiles RE2JS ones (SignatureRegex)",
    "release": "frees compiled programs in a large catalog",
    "as_json": "writes the record the browser reads",
    "key": "a sort key inside build_incident",
    "anchor_piece": "RE2's alternation of anchors; the browser uses an Aho-Corasick automaton",
    "prefilter_regex": "RE2's alternation of anchors; the browser uses an Aho-Corasick automaton",
    "_texts": "checks the shape of a signatures.json from anywhere",
    "index_problem": "checks the shape of a signatures.json from anywhere",
    "open_log": "opens files and gzip streams; the browser's worker reads File slices",
    "span": "RE2's prefilter search",
    "index": "the prefilter's shard index",
    "signatures": "a property of the signature table",
    "from_site": "reads a built site from disk",
    "_compile": "compiles RE2 programs",
    "_prefilter": "RE2's prefilter",
    "scan_paths": "reads files", "scan_text": "reads a string", "scan_stream": "reads a binary stream",
    "_line_info": "memoised parse of a candidate line (the browser parses in take)",
    "_cached_info": "the memo of _line_info, bounded in bytes (the browser parses in take)",
    "_wrapped": "the memo of _wrap_info for short messages (the browser joins in take)",
    "_physical": "the memo of _physical_info for short lines (the browser reads them in readPhysical)",
    "back": "_before's generator of the lines before; the browser's before reads them with an iterator",
    "__iter__": "LineBlocks: whole lines of a file in chunks; the browser's worker reads File slices",
    "read": "reads chunks of a stream",
    "_enter": "switches the prefilter at a block", "_refresh": "switches the prefilter", "_rebuild": "rebuilds it",
    "_scan_stream": "reads a stream in chunks",
    "_lines_back": "where a chunk's carried lines begin (the browser matches a log in one piece)",
    "tail_of": "a chunk's last lines (the browser's Scan keeps the last lines in complete)",
    "_number": "checks a row's numbers", "row_problem": "checks a row from anywhere",
    "of_entry": "makes a row at build time", "from_row": "reads a row (the browser reads the mapping itself)",
    "row": "writes a row at build time",
    # the log reader (open_log): its twin is diagnose-worker.js's LogText and Gunzip, not matcher.js
    "unread_of": "where a log reader stopped; the worker reports its own `unread`",
    "_read_at_least": "reads a log's first bytes (open_log)", "_more": "reads compressed bytes (open_log)",
    "unread": "where a log reader stopped (open_log)", "_read_source": "reads a log's bytes (open_log)",
    "_convert": "decodes a log's bytes (open_log; the worker's LogText)",
    "readable": "the log reader's file protocol", "readinto": "the log reader's file protocol",
    "close": "the log reader's file protocol",
}


def camel(name: str) -> str:
    parts = name.strip("_").split("_")
    return parts[0] + "".join(part.title() for part in parts[1:])


def functions_of(modules) -> dict[str, str]:
    """{function name: its module} of these matching modules (`__init__` left out)."""
    found = {}
    for module in modules:
        tree = ast.parse((REPO / "rootcause" / "matching" / f"{module}.py").read_text(encoding="utf-8"))
        found |= {node.name: module for node in ast.walk(tree)
                  if isinstance(node, ast.FunctionDef) and node.name != "__init__"}
    return found


def missing_twins(modules, script: str, twin_patterns, renamed, python_only, inline=None) -> list[str]:
    """The functions of `modules` with no twin in theme/assets/`script`: none of the names the
    patterns find there is theirs (camelCase, or `renamed`), they are not Python's alone, and no
    JavaScript written inline for them (`inline`: name → its text) is in the script."""
    js = (REPO / "theme" / "assets" / script).read_text(encoding="utf-8")
    twins = {name for pattern in twin_patterns for found in re.findall(pattern, js, flags=re.M)
             for name in (found if isinstance(found, tuple) else (found,)) if name}
    inline = inline or {}
    return [f"{module}.{name}" for name, module in functions_of(modules).items()
            if name not in python_only and not (name in inline and inline[name] in js)
            and renamed.get(name, camel(name)) not in twins]


def test_every_matching_function_has_its_twin_in_the_browser_or_says_why_not():
    missing = missing_twins(MODULES, "matcher.js", [r"function ([A-Za-z]+)|prototype\.([A-Za-z]+) = function"],
                            RENAMED, PYTHON_ONLY)
    assert not missing, f"no twin in matcher.js, and not listed as Python's alone: {missing}"


def test_the_lists_name_only_what_exists():
    """A function renamed or removed takes its line here with it."""
    assert not (set(PYTHON_ONLY) | set(RENAMED)) - set(functions_of(MODULES))


def test_the_browser_reads_the_declared_rules_and_copies_none():
    """rootcause/matching/shared.json declares the limits, sentences, codes and time formats once:
    matcher.js gets them from signatures.json ("shared"), and holds no copy of any."""
    import json

    js = (REPO / "theme" / "assets" / "matcher.js").read_text(encoding="utf-8")
    shared = json.loads((REPO / "rootcause" / "matching" / "shared.json").read_text(encoding="utf-8"))

    def texts(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for v in value.values():
                yield from texts(v)
        elif isinstance(value, list):
            for v in value:
                yield from texts(v)

    copied = [t for key, value in shared.items() if key != "about" for t in texts(value)
              if len(t) >= 12 and (t in js or json.dumps(t)[1:-1] in js)]
    assert not copied, f"matcher.js copies declared rules: {copied}"
    for name in shared["limits"]:
        assert not re.search(rf"\b{name.upper()}\s*=\s*-?[0-9]", js), f"matcher.js sets {name.upper()} by hand"
    assert ", ".join(map(str, shared["days_before"][:4])) not in js
    assert "shared = data.shared" in js
