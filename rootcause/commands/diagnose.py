"""`rootcause diagnose`: the command-line face of the matcher (`rootcause.matching`), for CI pipelines and login nodes.

Signatures come from the project's compiled signature index in `.rootcause-cache/`
(`rootcause.site.diagnosis_index`: the data of the site's `search/signatures.json`, stored by
`check`, `build` and `diagnose` itself whenever they checked the entries without error) when it
is fresh; otherwise the entries are checked first and the index stored again. With `--site`
they come from a built site's `search/signatures.json`, so a copy of the built site is all a
cluster needs. Errors that no signature explains are searched in the site's search index (the
same one the site's search box uses; the compiled index holds a copy) for a separate "possibly
related" tier.

Exit status: 0 a known failure was found; 1 no failure found; 3 the log shows a failure that no
entry explains; 2 usage or input error.
"""

from __future__ import annotations

import gzip
import json
import sys
import zlib
from collections.abc import Mapping
from pathlib import Path

EXIT_FOUND, EXIT_NONE, EXIT_ERROR, EXIT_UNKNOWN = 0, 1, 2, 3
POSSIBLE_PER_FAILURE = 3
#: a related entry must score at least this share of the best one (and share two search terms)
POSSIBLE_RELATIVE_SCORE = 0.6
CONSEQUENCE_LINES_SHOWN = 3   # in the text report: the cause's lines matter, the echoes less
from ..text import printable



def _info(entry_id: str, row: list):
    from ..matching.ranking import EntryInfo, Persistence

    role = row[4] if len(row) > 4 else "cause"
    persistent = Persistence(*row[5]) if len(row) > 5 and row[5] else None
    return EntryInfo(entry_id, row[0], row[1], row[2], row[3], role, persistent)


def _infos_from_site(entries: dict):
    """EntryInfo by id from the 'entries' of a signatures.json."""
    return {entry_id: _info(entry_id, row) for entry_id, row in entries.items()}


MAX_INDEX_BYTES = 256 << 20


def _from_site(folder: Path):
    from .. import jsonbytes
    from ..files import Refused, read_regular
    from ..matching.scanner import index_problem, signature_from_json
    from ..site.search import SearchIndex

    path = folder / "search" / "signatures.json"
    try:
        data = jsonbytes.loads(read_regular(path, MAX_INDEX_BYTES).decode("utf-8"))
    except Refused as refused:
        raise SystemExit(_fail(f"{path}: cannot use the signature index: {refused.message}"))
    except OSError as exc:
        raise SystemExit(_fail(f"{path}: cannot read the signature index ({exc.strerror}); build the site first"))
    except (ValueError, RecursionError) as exc:
        raise SystemExit(_fail(f"{path}: not a signature index ({exc})"))
    problem = index_problem(data)
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
    infos = _infos_from_site(data["entries"])
    consequences = {k: set(v) for k, v in data["consequences"].items()}
    try:
        index = SearchIndex.from_folder(folder)
    except (OSError, ValueError, KeyError):
        index = None   # an older or partial copy of the site: no "possibly related" tier
    return signatures, infos, consequences, folder.resolve().as_posix() + "/", index


class _IndexedInfos(Mapping):
    """EntryInfo by id, each read from the compiled index when a report first needs it."""

    def __init__(self, index):
        self._index = index
        self._made: dict = {}

    def __getitem__(self, entry_id: str):
        if entry_id not in self._made:
            from ..matching.anchors import CorruptIndex
            from ..matching.scanner import row_problem

            row = self._index.entry(entry_id)
            if row is None:
                raise KeyError(entry_id)
            problem = row_problem(entry_id, row)
            if problem:
                raise CorruptIndex(problem)
            self._made[entry_id] = _info(entry_id, row)
        return self._made[entry_id]

    def __iter__(self):
        return iter(self._index.entry_ids())

    def __len__(self) -> int:
        return len(self._index.entry_ids())


class _IndexedSearch:
    """The compiled index's copy of the site's search index, read only when an error needs related entries."""

    def __init__(self, index):
        self._index = index
        self._search = None

    def query(self, text: str, limit: int = 10) -> list[dict]:
        from ..matching.anchors import CorruptIndex

        try:
            if self._search is None:
                self._search = self._index.search_index()
            return self._search.query(text, limit)
        except CorruptIndex:
            raise
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
            raise CorruptIndex(f"the search files are not a search index ({exc})") from None


def _from_cache(root: Path, verify: bool = False):
    """The project's compiled signature index, if it is fresh and whole; else None. `verify`
    hashes every section first (for a reader that cannot start over, such as one of standard
    input: nothing may turn out damaged once reading has begun)."""
    from ..site.diagnosis_index import CorruptIndex, load

    index = load(root.resolve())
    if index is None or (verify and not index.verify()):
        return None
    try:
        return index.table(), _IndexedInfos(index), index.consequences(), index.base_url, _IndexedSearch(index)
    except CorruptIndex:
        return None


def _from_project(root: Path, use_cache: bool = True, verify: bool = True):
    """From the compiled index when it is fresh; else from the entries, checked (the slow
    path), which then stores the index for the next call. The slow path takes an unchanged
    entry from the build cache's record of it, as `check` does (the checks across entries
    always run); without `use_cache` (`--no-cache`) every entry is parsed and checked."""
    if use_cache:
        found = _from_cache(root, verify)
        if found is not None:
            return found
    from ..cache import RecordStore
    from ..entries.project import open_project
    from ..site.diagnosis_index import store
    from ..site.search import build_search_files, build_signature_file
    from ..site.stamps import ENTRY_RECORDS, build_version

    if use_cache:
        project, problems = open_project(root, store=RecordStore(root, ENTRY_RECORDS), version=build_version())
    else:
        project, problems = open_project(root)
    errors = [d for d in problems if d.severity == "error"]
    if project is None or errors:
        for d in errors[:20]:
            print(d, file=sys.stderr)
        raise SystemExit(_fail("the entries have errors (run `rootcause check`); or use --site with a built site"))
    search_files = build_search_files(project.catalog)
    store(project, build_signature_file(project.catalog), search_files)
    return sources_of(project.catalog, search_files)


def sources_of(catalog, search_files: dict | None = None):
    """(signatures, entry infos, consequences, base URL, search index) of a loaded catalog."""
    from ..matching.ranking import EntryInfo, Persistence
    from ..site.search import SearchIndex, build_search_files
    from ..text import plain

    infos = {}
    for i, loaded in catalog.matchable().items():   # as signatures.json: symptom entries match nothing
        e = loaded.entry
        persistent = Persistence(e.persistent.count, e.persistent.within) if e.persistent else None
        infos[i] = EntryInfo(i, e.title, plain(e.summary), f"entries/{i}/", plain(e.fix[0].step), e.role, persistent)
    index = SearchIndex(search_files if search_files is not None else build_search_files(catalog))
    return catalog.signatures(), infos, catalog.consequences(), catalog.config.base_url, index


def query_text(failure: dict) -> str:
    """What to search for: the error's own words, and the frame that raised it (its file and
    function often name the subsystem: a DeepSpeed engine, a DataLoader worker, FSDP)."""
    from ..matching.incident import INCOMPLETE_TRACEBACK

    text = "" if failure["text"] == INCOMPLETE_TRACEBACK else failure["text"]
    location = failure.get("location") or ""
    if location.startswith('File "'):
        path, _, rest = location[6:].partition('"')
        location = " ".join(path.split("/")[-3:]) + rest
    return f"{text} {location}".strip()


def possible_entries(index, unknown: list[dict], infos: dict) -> list[dict]:
    """For each unexplained failure, the entries whose text is closest to it: a separate tier,
    never a diagnosis. A hit must share at least two search terms with the error."""
    tiers = []
    if index is None:
        return tiers
    for number, failure in enumerate(unknown):
        hits = index.query(query_text(failure), limit=POSSIBLE_PER_FAILURE * 2)
        best = hits[0]["score"] if hits else 0
        hits = [h for h in hits if h["matched"] >= 2 and h["score"] >= POSSIBLE_RELATIVE_SCORE * best]
        entries = [{"entry": h["id"], "title": h["title"], "url": infos[h["id"]].url if h["id"] in infos
                    else f"entries/{h['id']}/", "score": h["score"]} for h in hits[:POSSIBLE_PER_FAILURE]]
        if entries:
            tiers.append({"unknown": number, "text": failure["text"], "entries": entries})
    return tiers


def _fail(message: str) -> int:
    print(printable(f"rootcause diagnose: {message}", one_line=True), file=sys.stderr)
    return EXIT_ERROR


def add_parser(sub) -> None:
    p = sub.add_parser("diagnose", help="find known failures in training logs (files, .gz, or - for stdin)")
    p.add_argument("logs", nargs="*", default=["-"], metavar="LOG")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--top", type=int, default=5, help="how many entries to report (default 5)")
    p.add_argument("--site", help="use a built site's signature index instead of the project's entries")
    p.add_argument("--no-cache", action="store_true",
                   help="check the entries instead of reading the compiled index in .rootcause-cache/ "
                        "(which is then stored anew)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..matching.anchors import CorruptIndex

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
        source = load_sources(args, verify="-" in logs)
    except SystemExit as stop:
        return int(stop.code or EXIT_ERROR)
    reading: list[str] = []

    def each_log():  # remembers which log is being read, to name it if it cannot be
        for log in logs:
            reading[:] = [log]
            yield log

    try:
        try:
            data = diagnosis(source, each_log(), args.top)
        except CorruptIndex as exc:
            if args.site:
                raise
            # a part of the compiled index read only now turned out damaged: never trusted, it
            # goes, and the logs are read again with the checked entries (which store a new one)
            from ..site.diagnosis_index import remove

            remove(Path(args.root).resolve())
            if "-" in logs:
                return _fail(f"the compiled signature index in .rootcause-cache/ is damaged ({exc}); it was "
                             "removed: run again")
            try:
                source = _from_project(Path(args.root), use_cache=False)
            except SystemExit as stop:
                return int(stop.code or EXIT_ERROR)
            data = diagnosis(source, each_log(), args.top)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        what = "is truncated" if isinstance(exc, EOFError) else f"is not valid gzip data ({exc})"
        return _fail(f"{_name(reading)}: the compressed log {what}")
    except OSError as exc:
        return _fail(f"{_name(reading)}: cannot read the log: {exc.strerror or exc}")
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_text(data, source[3])
    return exit_status(data)


def load_sources(args, verify: bool = True):
    """(signatures, entry infos, consequences, base URL, search index) from `--site` or the project
    (its compiled index when fresh, unless `args.no_cache`; `verify`: hash all of it first, for a
    caller that cannot read its input twice); raises SystemExit with the exit status after
    printing why it cannot."""
    if args.site:
        return _from_site(Path(args.site))
    return _from_project(Path(args.root), not getattr(args, "no_cache", False), verify)


def diagnosis(source: tuple, logs, top: int = 5) -> dict:
    """The JSON report on `logs` (paths, '-' for standard input) from a `load_sources` result."""
    from ..matching.ranking import rank
    from ..matching.scanner import Scanner

    signatures, infos, consequences, _base, index = source
    return full_report(rank(Scanner(signatures).scan_paths(logs), consequences, infos), infos, index, top)


def full_report(report, infos: dict, index, top: int) -> dict:
    """The JSON report of a ranked scan, with the "possibly related" tier."""
    from ..matching.ranking import report_json

    data = report_json(report, infos, top)
    data["possible"] = possible_entries(index, data["unknown"], infos)
    return data


def exit_status(data: dict) -> int:
    return {"known": EXIT_FOUND, "consequences": EXIT_FOUND, "unknown": EXIT_UNKNOWN}.get(data["status"], EXIT_NONE)


def _name(reading: list[str]) -> str:
    log = reading[0] if reading else "-"
    return "standard input" if log == "-" else printable(log, one_line=True)


def _who(line: dict) -> str:
    parts = [line["host"]] if line.get("host") else []
    if line.get("rank") is not None:
        parts.append(f"rank {line['rank']}")
    return " ".join(parts)


ROLE_LABEL = {"cause": "cause", "consequence": "consequence of a failure elsewhere", "warning": "warning"}


def print_text(data: dict, base: str, file=None) -> None:
    from rich.console import Console
    from rich.markup import escape as markup_escape

    def escape(text: str) -> str:
        """Entry text and log lines, for the terminal: no escape sequence, no control character,
        no bidi override (rich passes them through), and no rich markup."""
        return markup_escape(printable(text, one_line=True))

    console = Console(highlight=False, soft_wrap=True, emoji=False, file=file)
    scanned = f"{data['lines_scanned']:,} line{'s' if data['lines_scanned'] != 1 else ''}"
    console.print(f"[bold]{escape(data['headline'])}[/bold]")
    first = data["first_failure"]
    if first:
        where = f"line {first['line']}" + (f", {first['time']}" if first.get("time") else "")
        console.print(f"[dim]{escape(where)}: {escape(first['text'][:300])}[/dim]")
        for reason in first.get("evidence", []):
            console.print(f"[dim]  · {escape(reason)}[/dim]")
    console.print(f"[dim]Scanned {scanned}.[/dim]")
    if data["unknown"]:
        console.print()
        console.print("[bold]Errors no entry explains[/bold]")
        for failure in data["unknown"]:
            who = _who(failure)
            console.print(f"  {failure['line']:>7}  " + (f"[{escape(who)}] " if who else "") + escape(failure["text"]))
            if failure.get("location"):
                console.print(f"           [dim]{escape(failure['location'])}[/dim]")
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
        if result["fix"]:
            console.print(f"   [bold]First step:[/bold] {escape(result['fix'])}")
        console.print(f"   [dim]{escape(base + result['url'])}[/dim]")
    if data["notes"]:
        console.print()
        console.print("[bold]Notes[/bold] [dim](benign warnings, not the failure)[/dim]")
        for note in data["notes"]:
            console.print(f"  - {escape(note['title'])} [dim]({note['count']}×, first at line "
                          f"{note['lines'][0]['line'] if note['lines'] else '?'}; {escape(base + note['url'])})[/dim]")
