"""`rootcause diagnose`: the command-line face of the matcher (`rootcause.matching`), for CI pipelines and login nodes.

Signatures come from the project's entries (checked first), or from a built site's
`search/signatures.json` with `--site`, so a copy of the built site is all a cluster needs.
Exit status: 0 a known failure was found, 1 none found, 2 usage or input error.
"""

from __future__ import annotations

import gzip
import json
import sys
import zlib
from pathlib import Path

from ..text import printable


EXIT_FOUND, EXIT_NONE, EXIT_ERROR = 0, 1, 2


MAX_INDEX_BYTES = 256 << 20


def _from_site(folder: Path):
    from ..files import Refused, read_regular
    from ..matching.ranking import EntryInfo
    from ..matching.scanner import signature_from_json

    path = folder / "search" / "signatures.json"
    try:
        data = json.loads(read_regular(path, MAX_INDEX_BYTES).decode("utf-8"))
    except Refused as refused:
        raise SystemExit(_fail(f"{path}: cannot use the signature index: {refused.message}"))
    except OSError as exc:
        raise SystemExit(_fail(f"{path}: cannot read the signature index ({exc.strerror}); build the site first"))
    except (ValueError, RecursionError) as exc:
        raise SystemExit(_fail(f"{path}: not a signature index ({exc})"))
    problem = _index_problem(data)
    if problem:
        raise SystemExit(_fail(f"{path}: not a signature index of this version of rootcause: {problem}; "
                               "rebuild the site"))
    signatures = [signature_from_json(s) for s in data["signatures"]]
    for number, sig in enumerate(signatures):
        try:
            sig.step_regexes, sig.unless_regexes  # noqa: B018 - compile now, refuse now
        except Exception as exc:  # re2's error type is not part of its interface
            raise SystemExit(_fail(f"{path}: not a signature index: signatures[{number}] holds a regular expression "
                                   f"that does not compile ({exc})"))
        sig.release()
    infos = {i: EntryInfo(i, v[0], v[1], v[2], v[3]) for i, v in data["entries"].items()}
    consequences = {k: set(v) for k, v in data["consequences"].items()}
    return signatures, infos, consequences, folder.resolve().as_posix() + "/"


def _index_problem(data) -> str | None:
    """What is wrong with the shape of a signatures.json (it may come from anywhere), or None."""
    def texts(value, n=None) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) for v in value) and (n is None or len(value) == n)

    def number(value) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and -10**9 < value < 10**9

    if not isinstance(data, dict):
        return "the file holds no mapping"
    for key, kind in (("signatures", list), ("entries", dict), ("consequences", dict)):
        if not isinstance(data.get(key), kind):
            return f"'{key}' is missing or not a {'list' if kind is list else 'mapping'}"
    for i, sig in enumerate(data["signatures"]):
        where = f"signatures[{i}]"
        if not isinstance(sig, dict):
            return f"{where} is not a mapping"
        if not isinstance(sig.get("entry"), str) or not number(sig.get("index")) or not number(sig.get("specificity")):
            return f"{where} lacks a text 'entry' or a number 'index' or 'specificity'"
        steps = sig.get("steps")
        if not isinstance(steps, list) or not steps or not all(texts(step, 2) for step in steps):
            return f"{where}.steps is not a list of [regex, anchor] pairs"
        unless = sig.get("unless", [])
        if not isinstance(unless, list) or not all(texts(step, 2) for step in unless):
            return f"{where}.unless is not a list of [regex, anchor] pairs"
        if not number(sig.get("within", 40)) or sig.get("within", 40) < 1:
            return f"{where}.within is not a positive number"
        if sig["entry"] not in data["entries"]:
            return f"{where} names the entry '{sig['entry'][:60]}', which 'entries' lacks"
    for key, value in data["entries"].items():
        if not texts(value, 4):
            return f"entries['{key[:60]}'] is not [title, summary, address, first step]"
    for key, value in data["consequences"].items():
        if not texts(value):
            return f"consequences['{key[:60]}'] is not a list of entry ids"
    return None


def _from_project(root: Path):
    from ..matching.ranking import EntryInfo
    from ..entries.project import open_project
    from ..text import plain

    project, problems = open_project(root)
    errors = [d for d in problems if d.severity == "error"]
    if project is None or errors:
        for d in errors[:20]:
            print(d, file=sys.stderr)
        raise SystemExit(_fail("the entries have errors (run `rootcause check`); or use --site with a built site"))
    catalog = project.catalog
    infos = {i: EntryInfo(i, l.entry.title, plain(l.entry.summary), f"entries/{i}/", plain(l.entry.fix[0].step))
             for i, l in catalog.entries.items()}
    return catalog.signatures(), infos, catalog.consequences(), catalog.config.base_url


def _fail(message: str) -> int:
    print(printable(f"rootcause diagnose: {message}", one_line=True), file=sys.stderr)
    return EXIT_ERROR


def add_parser(sub) -> None:
    p = sub.add_parser("diagnose", help="find known failures in training logs (files, .gz, or - for stdin)")
    p.add_argument("logs", nargs="*", default=["-"], metavar="LOG")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--top", type=int, default=5, help="how many entries to report (default 5)")
    p.add_argument("--site", help="use a built site's signature index instead of the project's entries")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..matching.ranking import rank, report_json
    from ..matching.scanner import Scanner

    if args.top < 1:
        return _fail("--top must be at least 1")
    logs = args.logs or ["-"]
    for log in logs:
        if log != "-" and Path(log).is_dir():
            return _fail(f"{log}: is a folder; name the log files in it (e.g. {log.rstrip('/')}/*.log)")
        if log != "-" and not Path(log).is_file():
            return _fail(f"{log}: no such file")
    if logs.count("-") > 1:
        return _fail("standard input ('-') can be read only once")
    try:
        signatures, infos, consequences, base = (_from_site(Path(args.site)) if args.site
                                                 else _from_project(Path(args.root)))
    except SystemExit as stop:
        return int(stop.code or EXIT_ERROR)
    scanner = Scanner(signatures)
    reading: list[str] = []

    def each_log():  # remembers which log is being read, to name it if it cannot be
        for log in logs:
            reading[:] = [log]
            yield log

    try:
        report = rank(scanner.scan_paths(each_log()), consequences)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        what = "is truncated" if isinstance(exc, EOFError) else f"is not valid gzip data ({exc})"
        return _fail(f"{_name(reading)}: the compressed log {what}")
    except OSError as exc:
        return _fail(f"{_name(reading)}: cannot read the log: {exc.strerror or exc}")
    data = report_json(report, infos, args.top)
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_text(data, base)
    return EXIT_FOUND if data["results"] else EXIT_NONE


def _name(reading: list[str]) -> str:
    log = reading[0] if reading else "-"
    return "standard input" if log == "-" else printable(log, one_line=True)


def _who(line: dict) -> str:
    parts = [line["host"]] if line.get("host") else []
    if line.get("rank") is not None:
        parts.append(f"rank {line['rank']}")
    return " ".join(parts)


def _stream_label(stream: str) -> str:
    host, _, rank_text = stream.rpartition("#")
    return " ".join(p for p in (host, f"rank {rank_text}" if rank_text else "") if p)


def _print_text(data: dict, base: str) -> None:
    from rich.console import Console
    from rich.markup import escape as markup_escape

    def escape(text: str) -> str:
        """Entry text and log lines, for the terminal: no escape sequence, no control character,
        no bidi override (rich passes them through), and no rich markup."""
        return markup_escape(printable(text, one_line=True))

    console = Console(highlight=False, soft_wrap=True, emoji=False)
    scanned = f"{data['lines_scanned']:,} line{'s' if data['lines_scanned'] != 1 else ''}"
    if not data["results"]:
        console.print(f"No known failure found in {scanned}.")
        return
    first = data["first_failure"]
    console.print(f"Scanned {scanned}; {len(data['results'])} known failure(s), most likely cause first.")
    if first and (first.get("rank") is not None or first.get("host")):
        text = f"First failure: {_who(first)} at line {first['line']}."
        if data["consequence_streams"]:
            text += " Only consequences on " + ", ".join(_stream_label(s) for s in data["consequence_streams"]) + "."
        console.print(f"[bold]{escape(text)}[/bold]")
    for number, result in enumerate(data["results"], 1):
        console.print()
        console.print(f"[bold]{number}. {escape(result['title'])}[/bold]  [dim]({escape(result['entry'])}, confidence "
                      f"{escape(str(result['confidence']))})[/dim]")
        console.print(f"   {escape(result['summary'])}")
        for line in result["lines"]:
            who = _who(line)
            prefix = f"{line['line']:>7}  " + (f"[{who}] " if who else "")
            console.print(f"[dim]{escape(prefix)}[/dim]{escape(line['text'].expandtabs(4))}")
        if result["more_lines"]:
            console.print(f"[dim]          … {result['more_lines']} more matched lines[/dim]")
        if result["fix"]:
            console.print(f"   [bold]First step:[/bold] {escape(result['fix'])}")
        console.print(f"   [dim]{escape(base + result['url'])}[/dim]")
