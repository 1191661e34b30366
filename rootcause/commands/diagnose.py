"""`rootcause diagnose`: the command-line face of the diagnosis service (`rootcause.encyclopedia`),
for CI pipelines and login nodes.

The signatures come from the encyclopedia `Encyclopedia.open` picks: `--site` (a built site's
`search/signatures.json`, all a cluster needs), `--root` or the project in the current folder
(its compiled index in the project's store when fresh, else its entries, checked), else the
encyclopedia bundled with the installed package. The report says which answered. Errors that no
signature explains are searched in the site's search index for a separate "possibly related"
tier.

Exit status: 0 a known failure was found; 1 no failure found; 3 the log shows a failure that no
entry explains; 2 usage or input error.
"""

from __future__ import annotations

import json
import os
import sys

from ..text import printable

EXIT_FOUND, EXIT_NONE, EXIT_ERROR, EXIT_UNKNOWN = 0, 1, 2, 3
CONSEQUENCE_LINES_SHOWN = 3   # in the text report: the cause's lines matter, the echoes less


def fail(command: str, error) -> int:
    """Print why (a `DiagnosisError`, or a message) and return the usage/input exit status."""
    for line in getattr(error, "details", ())[:20]:
        print(line, file=sys.stderr)
    print(printable(f"rootcause {command}: {getattr(error, 'message', error)}", one_line=True), file=sys.stderr)
    return EXIT_ERROR


def open_encyclopedia(args, verify: bool = True):
    """The encyclopedia the command's options name (`--site`, `--root`), or the one `Encyclopedia.open` finds."""
    from ..encyclopedia import Encyclopedia

    return Encyclopedia.open(root=args.root if getattr(args, "root_named", False) else None,
                             site=getattr(args, "site", None), use_cache=not getattr(args, "no_cache", False),
                             verify=verify)


def add_parser(sub) -> None:
    p = sub.add_parser("diagnose", help="find known failures in training logs (files, .gz, or - for stdin)",
                       description="Read training logs as one incident and name the entries that explain it. "
                       "The entries come from --site, --root, the project in the current folder, or else the "
                       "encyclopedia bundled with rootcause; the report says which.")
    p.add_argument("logs", nargs="*", default=["-"], metavar="LOG")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--top", type=int, default=5, help="how many entries to report (default 5)")
    p.add_argument("--site", help="use a built site's signature index instead of the project's entries")
    p.add_argument("--no-cache", action="store_true",
                   help="check the entries instead of reading the compiled index in the project's store "
                        "(which is then stored anew)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..encyclopedia import DiagnosisError

    if args.top < 1:
        return fail("diagnose", "--top must be at least 1")
    logs = args.logs or ["-"]
    if logs.count("-") > 1:
        return fail("diagnose", "standard input ('-') can be read only once")
    try:
        encyclopedia = open_encyclopedia(args, verify="-" in logs)
        data = encyclopedia.diagnose_paths(logs, args.top)
    except DiagnosisError as error:
        return fail("diagnose", error)
    for unread in data.get("unread", []):
        print(printable(f"rootcause diagnose: warning: {'standard input' if unread['log'] == '-' else unread['log']}: "
                        f"not all of the log was read: {unread['reason']}; the report covers what came before it",
                        one_line=True), file=sys.stderr)
    try:
        if args.json:
            json.dump(data, sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            print_text(data, encyclopedia.base_url)
        sys.stdout.flush()
    except BrokenPipeError:   # the reader went away (`| head`): the answer, and its status, stand
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return exit_status(data)


def exit_status(data: dict) -> int:
    return {"known": EXIT_FOUND, "consequences": EXIT_FOUND, "symptom": EXIT_FOUND,
            "unknown": EXIT_UNKNOWN}.get(data["status"], EXIT_NONE)


def _who(line: dict) -> str:
    parts = [line["host"]] if line.get("host") else []
    if line.get("rank") is not None:
        parts.append(f"rank {line['rank']}")
    return " ".join(parts)


ROLE_LABEL = {"cause": "cause", "consequence": "consequence of a failure elsewhere", "warning": "warning"}


def _console_class():
    from rich.console import Console

    class PipeConsole(Console):
        """rich ends the process with status 1 when its reader goes away; the caller decides."""

        def on_broken_pipe(self) -> None:
            raise BrokenPipeError

    return PipeConsole


def print_text(data: dict, base: str, file=None) -> None:
    from rich.markup import escape as markup_escape

    _Console = _console_class()

    def escape(text: str) -> str:
        """Entry text and log lines, for the terminal: no escape sequence, no control character,
        no bidi override (rich passes them through), and no rich markup."""
        return markup_escape(printable(text, one_line=True))

    console = _Console(highlight=False, soft_wrap=True, emoji=False, file=file)
    scanned = f"{data['lines_scanned']:,} line{'s' if data['lines_scanned'] != 1 else ''}"
    console.print(f"[bold]{escape(data['headline'])}[/bold]")
    first = data["first_failure"]
    if first:
        where = f"line {first['line']}" + (f", {first['time']}" if first.get("time") else "")
        console.print(f"[dim]{escape(where)}: {escape(first['text'][:300])}[/dim]")
        for reason in first.get("evidence", []):
            console.print(f"[dim]  · {escape(reason)}[/dim]")
    if data.get("lines_scanned") or not data.get("flight_recorder"):
        console.print(f"[dim]Scanned {scanned}.[/dim]")
    if data.get("flight_recorder"):
        print_flight_recorder(console, data["flight_recorder"], base, escape)
    if data["unknown"]:
        console.print()
        console.print("[bold]Errors no entry explains[/bold]")
        for failure in data["unknown"]:
            who = _who(failure)
            console.print(f"  {failure['line']:>7}  " + (f"[{escape(who)}] " if who else "") + escape(failure["text"]))
            if failure.get("location"):
                console.print(f"           [dim]{escape(failure['location'])}[/dim]")
    if data.get("stopped"):
        stopped = data["stopped"]
        console.print()
        console.print(f"[bold]The log stops during {escape(stopped['title'])}[/bold] [dim](line {stopped['line']}; "
                      "possible causes of a hang there, not a diagnosis)[/dim]")
        for hit in stopped["entries"]:
            console.print(f"  - {escape(hit['title'])}  [dim]{escape(base + hit['url'])}[/dim]")
    if data.get("symptom"):
        print_symptom(console, data["symptom"], base, escape)
    for tier in data["possible"]:
        console.print()
        console.print(f"[bold]Possibly related, no signature matched[/bold] [dim](to: {escape(tier['text'][:80])})[/dim]")
        for hit in tier["entries"]:
            console.print(f"  - {escape(hit['title'])}  [dim]{escape(base + hit['url'])}[/dim]")
    for number, result in enumerate(data["results"], 1):
        console.print()
        console.print(f"[bold]{number}. {escape(result['title'])}[/bold]  [dim]({escape(result['entry'])}; "
                      f"{ROLE_LABEL[result['role']]}; {escape(result['confidence_text'])})[/dim]")
        console.print(f"   {escape(result['summary'])}")
        shown = result["lines"] if result["role"] == "cause" else result["lines"][:CONSEQUENCE_LINES_SHOWN]
        for line in shown:
            who = _who(line)
            prefix = f"{line['line']:>7}  " + (f"[{who}] " if who else "")
            console.print(f"[dim]{escape(prefix)}[/dim]{escape(line['text'].expandtabs(4))}")
        more = result["more_lines"] + len(result["lines"]) - len(shown)
        if more:
            console.print(f"[dim]          … {more} more matched lines[/dim]")
        if result.get("check") and result["role"] == "cause":
            console.print(f"   [bold]Confirm:[/bold] {escape(result['check'])}")
            for command_line in result.get("check_command", "").splitlines()[:6]:
                console.print(f"     [cyan]{escape(command_line)}[/cyan]")
        if result["fix"]:
            console.print(f"   [bold]Then fix:[/bold] {escape(result['fix'])}")
        console.print(f"   [dim]{escape(base + result['url'])}[/dim]")
    if data["notes"]:
        console.print()
        console.print("[bold]Notes[/bold] [dim](benign warnings, not the failure)[/dim]")
        for note in data["notes"]:
            console.print(f"  - {escape(note['title'])} [dim]({note['count']}×, first at line "
                          f"{note['lines'][0]['line'] if note['lines'] else '?'}; {escape(base + note['url'])})[/dim]")
    if data.get("next_steps"):
        console.print()
        console.print("[bold]Next steps[/bold] [dim](the log shows only consequences: find the process that stopped)[/dim]")
        for number, step in enumerate(data["next_steps"], 1):
            console.print(f"  {number}. {escape(step)}")
    if data.get("encyclopedia"):
        from ..encyclopedia import Origin

        console.print()
        console.print(f"[dim]Answered by {escape(Origin(**data['encyclopedia']).describe())}.[/dim]")


def print_symptom(console, symptom: dict, base: str, escape) -> None:
    """What the loss the log ends with shows (`metrics.loss_symptom`): the entry that explains
    it, how to confirm and fix it, then the other entries for that sign."""
    first, others = symptom["entries"][0], symptom["entries"][1:]
    console.print()
    console.print(f"[bold]1. {escape(first['title'])}[/bold]  [dim]({escape(first['entry'])}; what the loss shows, "
                  "no error was printed)[/dim]")
    console.print(f"   {escape(first['summary'])}")
    if first.get("check"):
        console.print(f"   [bold]Confirm:[/bold] {escape(first['check'])}")
        for command_line in first.get("check_command", "").splitlines()[:6]:
            console.print(f"     [cyan]{escape(command_line)}[/cyan]")
    if first.get("fix"):
        console.print(f"   [bold]Then fix:[/bold] {escape(first['fix'])}")
    console.print(f"   [dim]{escape(base + first['url'])}[/dim]")
    if others:
        console.print()
        console.print("[bold]Also explains such a loss[/bold]")
        for hit in others:
            console.print(f"  - {escape(hit['title'])}  [dim]{escape(base + hit['url'])}[/dim]")


KIND_LABEL = {"missing": "never entered", "lagging": "lagging", "mismatch": "mismatched call",
              "no_dump": "no dump", "p2p_unmatched": "p2p without partner"}


def print_flight_recorder(console, fr: dict, base: str, escape) -> None:
    """The dumps' verdict: each divergence (root cause first) with its evidence, the stuck rank's
    stack, the entries that explain it; then a compact table per process group."""
    console.print()
    formats = "/".join(fr["formats"])
    console.print(f"[bold]Flight Recorder[/bold] [dim]({fr['dumps']} {formats} dumps, ranks "
                  f"{escape(_span(fr['ranks']))}; format {escape(fr['version'])}, {escape(', '.join(fr['backends']))})[/dim]")
    if fr.get("agreement"):
        console.print(f"  {escape(fr['agreement']['sentence'])}")
    if not fr["divergences"]:
        console.print(f"  {escape(fr['headline'])}")
    for number, d in enumerate(fr["divergences"][:6], 1):
        role = "root cause" if d["root"] else f"consequence of {', '.join(d['explained_by'])}"
        console.print(f"  [bold]{number}. {escape(d['sentence'])}[/bold] [dim]({KIND_LABEL[d['kind']]}; "
                      f"{escape(role)})[/dim]")
        if d["kind"] == "mismatch":
            for call in d["calls"]:
                console.print(f"     [dim]{escape(_span(call['ranks'])):>12}[/dim]  {escape(call['op'])} "
                              f"in {escape(str(call['input_sizes']))} out {escape(str(call['output_sizes']))} "
                              f"{escape(','.join(call['input_dtypes']))}")
        if d.get("behind"):
            gaps = ", ".join(f"rank {r}: {g} behind" for r, g in d["behind"].items())
            console.print(f"     [dim]{escape(gaps)}[/dim]")
        if d.get("culprits_waiting_elsewhere"):
            waits = ", ".join(f"rank {r} waits in {g}" for r, g in d["culprits_waiting_elsewhere"].items())
            console.print(f"     [dim]{escape(waits)}[/dim]")
        if d.get("stack"):
            console.print(f"     [dim]rank {d['stack_rank']}'s last collective was called from:[/dim]")
            for frame in d["stack"][:6]:
                console.print(f"       [dim]{escape(frame['filename'])}:{frame['line']} in {escape(frame['name'])}[/dim]")
        for hit in d.get("entries", [])[:2] if d["root"] else []:
            console.print(f"     - {escape(hit['title'])}  [dim]{escape(base + hit['url'])}[/dim]")
            if hit.get("check"):
                console.print(f"       [bold]Check:[/bold] {escape(hit['check'])}")
    console.print()
    console.print("[bold]Process groups[/bold] [dim](rank: last collective's sequence number; - no dump)[/dim]")
    for table in fr["groups"][:12]:
        cells = " ".join(f"{row['rank']}:{row['last_seq'] if row['dump'] else '-'}" for row in table["ranks"][:64])
        console.print(f"  {escape(table['group'])} [dim]top #{table['top_seq']} {escape(table['top_op'] or '')}[/dim]  "
                      f"{escape(cells)}")
    for note in fr["notes"]:
        console.print(f"  [dim]{escape(note)}[/dim]")


def _span(ranks) -> str:
    ranks = sorted(ranks)
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ",".join(map(str, ranks))
