"""The diagnosis service: one object that loads an encyclopedia and diagnoses logs against it.

Every face of the diagnosis goes through `Encyclopedia`: `rootcause diagnose`, `rootcause run`,
`new --from-log`, the library (`rootcause.Matcher`) and the fleet scan. It loads the signatures
from one of three places and says which answered (`Origin`, in every report):

- a **project** (a folder with `site.yml` and `entries/`): its compiled index in
  the project's store (`rootcause.cache`) when fresh, else its entries, checked (which stores the index again);
- a **built site** (`search/signatures.json` and the search files): all a cluster needs;
- the **bundled** encyclopedia, the entries that come with the installed package: used when
  neither is named and the current folder is no project. The installed copy is read-only, so it
  is copied once into the user's cache folder and compiled there like a project; later calls
  read the compiled index (`bundled_root`).

Failures are typed exceptions (`DiagnosisError` and its kinds), never `SystemExit`: the commands
turn them into a message and an exit status, the library lets them through.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import zlib
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .version import __version__

#: at most this many related entries per unexplained error, in the "possibly related" tier
POSSIBLE_PER_FAILURE = 3
#: a related entry must score at least this share of the best one (and share two search terms)
POSSIBLE_RELATIVE_SCORE = 0.6
MAX_INDEX_BYTES = 256 << 20
#: the files of the bundled encyclopedia, relative to its folder (site.yml names the last two)
BUNDLED_PARTS = ("site.yml", "entries", "study", "tests/logs/healthy")


class DiagnosisError(Exception):
    """Why an encyclopedia cannot be loaded or a log cannot be read: one line for a person."""

    def __init__(self, message: str, details: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        #: lines that say more (the first problems of entries with errors)
        self.details = details


class NoEncyclopedia(DiagnosisError):
    """Nothing to load there: no built site, no signature index, an index of another version."""


class EntriesHaveErrors(DiagnosisError):
    """The project's entries do not pass `rootcause check`."""


class UnreadableLog(DiagnosisError):
    """A log that cannot be read: missing, a folder, a cut-short or broken gzip, a read error."""


class DamagedIndex(DiagnosisError):
    """The compiled index turned out damaged while a log from standard input was read: it was
    removed, and standard input cannot be read a second time."""


@dataclass(frozen=True)
class Origin:
    """Which encyclopedia answered: what a report says about where its entries came from."""

    kind: str          # "bundled", "project" or "site"
    path: str          # the folder it was read from
    version: str       # the rootcause that compiled it
    entries: int       # how many entries can match
    digest: str = ""   # the bundled entries' content digest (two installs of one version may differ)

    def describe(self) -> str:
        what = {"bundled": "the encyclopedia bundled with", "project": "the project at",
                "site": "the built site at"}[self.kind]
        where = f"rootcause {self.version}" if self.kind == "bundled" else self.path
        suffix = f", {self.digest}" if self.digest else ""
        return f"{what} {where} ({self.entries} entries{suffix})"

    def as_json(self) -> dict:
        return asdict(self)


class _Where(NamedTuple):
    """An `Origin` before its entries are counted."""

    kind: str
    path: Path
    digest: str = ""
    version: str = __version__


class Encyclopedia:
    """Signatures, entry summaries, declared consequences and the search index, loaded once;
    `diagnose_paths` and `diagnose_text` then report on any number of logs."""

    def __init__(self, signatures, infos: Mapping, consequences: Mapping, base_url: str, search, where: _Where,
                 root: Path | None = None):
        self.signatures = signatures
        self.infos = infos
        self.consequences = consequences
        self.base_url = base_url
        self.search = search
        self._where = where
        self._root = root   # the project folder to check again when its compiled index is damaged
        self._scanner = None

    @property
    def origin(self) -> Origin:
        """Which encyclopedia this is. Counting its entries reads a compiled index's entry list,
        which may turn out damaged only now (`diagnose_paths` then checks the entries)."""
        kind, path, digest, version = self._where
        return Origin(kind, path.as_posix(), version, len(self.infos), digest)

    # -- where an encyclopedia comes from ---------------------------------------------------------
    @classmethod
    def open(cls, root: str | Path | None = None, site: str | Path | None = None, use_cache: bool = True,
             verify: bool = True, cwd: str | Path | None = None) -> "Encyclopedia":
        """The one rule: `site`, else the project `root`, else the current folder when it is a
        project (site.yml and entries/), else the bundled encyclopedia."""
        if site is not None:
            return cls.from_site(site)
        folder, where = project_folder(root, cwd)
        return cls.from_project(folder, use_cache, verify, kind=where.kind, shown=where.path, digest=where.digest)

    @classmethod
    def from_project(cls, root: str | Path, use_cache: bool = True, verify: bool = True,
                     kind: str = "project", shown: Path | None = None, digest: str = "") -> "Encyclopedia":
        """From the project's compiled index when it is fresh (`verify`: every section hashed
        first, for a reader that cannot start over); else from its entries, checked (an unchanged
        entry taken from the build cache's record of it, unless `use_cache` is off), which then
        stores the index for the next call."""
        root = Path(root)
        if not (root / "site.yml").is_file():
            raise NoEncyclopedia(f"{root}: no site.yml here; name a rootcause project with --root, "
                                 "or a built site with --site")
        shown = shown or root.resolve()
        if use_cache:
            found = _from_cache(root, verify)
            if found is not None:
                return cls(*found, where=_Where(kind, shown, digest), root=root)
        parts = _from_entries(root, use_cache)
        return cls(*parts, where=_Where(kind, shown, digest), root=root)

    @classmethod
    def from_site(cls, folder: str | Path) -> "Encyclopedia":
        parts = _from_site(Path(folder))
        return cls(*parts, where=_Where("site", Path(folder).resolve()))

    @classmethod
    def from_catalog(cls, catalog, root: Path, search_files: dict | None = None) -> "Encyclopedia":
        """From the catalog of the project at `root`, already loaded and checked (`new --from-log`,
        the benchmarks)."""
        parts = sources_of(catalog, search_files)
        return cls(*parts, where=_Where("project", Path(root).resolve()))

    # -- diagnosing -------------------------------------------------------------------------------
    @property
    def scanner(self):
        if self._scanner is None:
            from .matching.scanner import Scanner

            self._scanner = Scanner(self.signatures)
        return self._scanner

    def diagnose_paths(self, paths: Iterable[str | Path], top: int = 5, reading: list | None = None) -> dict:
        """The report on logs (plain or .gz paths, '-' for standard input), read as one incident.
        `reading` is kept naming the log being read (for a caller's own messages)."""
        from .matching.anchors import CorruptIndex

        names = [str(p) for p in paths]
        try:
            return self._read(names, top, reading)
        except CorruptIndex as exc:
            if self._root is None:
                raise NoEncyclopedia(f"the signature index is damaged ({exc}); rebuild the site") from None
            # a part of the compiled index read only now turned out damaged: never trusted, it
            # goes, and the logs are read again with the checked entries (which store a new one)
            from .site.diagnosis_index import remove

            remove(self._root.resolve())
            if "-" in names:
                raise DamagedIndex(f"the compiled signature index in the project's store is damaged ({exc}); "
                                   "it was removed: run again") from None
            kind, shown, digest, _version = self._where
            fresh = Encyclopedia.from_project(self._root, use_cache=False, kind=kind, shown=shown, digest=digest)
            self.__dict__.update(fresh.__dict__)
            return self._read(names, top, reading)

    def diagnose_text(self, text: str, top: int = 5) -> dict:
        return self.report(self.scanner.scan_text(text), top)

    def report(self, scanned, top: int = 5) -> dict:
        """The JSON report of a finished scan: ranked, with the "possibly related" tier and the
        origin of the entries."""
        from .matching.ranking import rank, report_json

        data = report_json(rank(scanned, self.consequences, self.infos), self.infos, top)
        data["possible"] = possible_entries(self.search, data["unknown"], self.infos)
        data["encyclopedia"] = self.origin.as_json()
        if scanned.unread:   # a log read only up to junk after its last gzip member (the browser says the same)
            data["unread"] = scanned.unread
        return data

    def _read(self, paths: list[str], top: int, reading: list | None) -> dict:
        reading = [] if reading is None else reading
        paths, dumps = split_dumps(paths)
        if dumps and not paths:
            data = self.report(self.scanner.scan_text(""), top)
            return with_flight_recorder(data, read_dumps(dumps), self.infos)
        if dumps:
            verdict = read_dumps(dumps)
            return with_flight_recorder(self._read(paths, top, reading), verdict, self.infos)

        def each():
            for path in paths:
                reading[:] = [path]
                yield path

        for path in paths:
            if path != "-" and Path(path).is_dir():
                raise UnreadableLog(f"{path}: is a folder; name the log files in it (e.g. {path.rstrip('/')}/*.log)")
            # a named pipe, `<(...)` (/dev/fd/63) and /dev/stdin are logs too: only what is not there is refused
            if path != "-" and not os.path.exists(path):
                raise UnreadableLog(f"{path}: no such file")
        with reading_errors(reading):
            return self.report(self.scanner.scan_paths(each()), top)


def split_dumps(paths: list[str]) -> tuple[list[str], list[Path]]:
    """Logs and Flight Recorder dumps apart, by content (never by name): a folder given alone
    stands for the dumps in it (its other files are not read)."""
    logs: list[str] = []
    dumps: list[Path] = []
    for path in paths:
        if path == "-":
            logs.append(path)
            continue
        folder = Path(path)
        if folder.is_dir():
            found = [p for p in sorted(folder.iterdir()) if p.is_file() and not p.is_symlink() and _dump_head(p)]
            if not found:
                raise UnreadableLog(f"{path}: is a folder with no Flight Recorder dump in it; name the log files "
                                    f"in it (e.g. {path.rstrip('/')}/*.log)")
            dumps.extend(found)
        elif folder.is_file() and _dump_head(folder):
            dumps.append(folder)
        else:
            logs.append(path)
    return logs, dumps


def _dump_head(path: Path) -> bool:
    from .matching.flight_recorder import looks_like_dump

    try:
        with open(path, "rb") as handle:
            return looks_like_dump(handle.read(4096)) is not None
    except OSError:
        return False


def read_dumps(paths: list[Path]) -> dict:
    """The verdict on a job's dumps; `UnreadableLog` naming the file for any bad one."""
    from .matching.flight_recorder import DumpError, read_dump
    from .matching.flight_verdict import verdict
    from .text import printable

    try:
        return verdict([read_dump(p) for p in paths])
    except DumpError as error:
        raise UnreadableLog(printable(str(error), one_line=True)) from None


def with_flight_recorder(data: dict, verdict: dict, infos: Mapping) -> dict:
    """The log's report with the dumps' verdict: the verdict leads when the log names no cause of
    its own (only timeouts, or nothing); it is evidence for the log's first failing rank, and the
    report says when the two name different ranks."""
    for divergence in verdict["divergences"]:
        divergence["entries"] = [_entry_brief(infos[e]) for e in divergence["entries"] if e in infos]
    root = next((d for d in verdict["divergences"] if d["root"]), None) or next(iter(verdict["divergences"]), None)
    first = data.get("first_failure")
    log_rank = first.get("rank") if first else None
    agreement = None
    if root is not None and log_rank is not None:
        agrees = log_rank in root["culprits"]
        agreement = {"agrees": agrees, "log_rank": log_rank, "dump_ranks": root["culprits"],
                     "sentence": (f"The dumps agree with the log: rank {log_rank} failed first, and the dumps "
                                  f"name it ({root['kind'].replace('_', ' ')} in {root['group']}).") if agrees else
                     (f"The dumps and the log disagree: the log's first failure is on rank {log_rank}, the dumps "
                      f"name {', '.join(map(str, root['culprits']))} ({root['kind'].replace('_', ' ')} in "
                      f"{root['group']}).")}
        if agrees and first is not None:
            first.setdefault("evidence", []).append(f"the Flight Recorder dumps name it: {root['sentence']}")
    verdict["agreement"] = agreement
    data["flight_recorder"] = verdict
    if root is not None and data["status"] in ("none", "consequences"):
        data["headline"] = root["sentence"] + (f" {data['headline']}" if data["status"] == "consequences" else "")
        data["status"] = "known"
    elif root is None and data["status"] == "none" and not data.get("lines_scanned"):
        data["headline"] = verdict["headline"]
    return data


def _entry_brief(info) -> dict:
    return {"entry": info.id, "title": info.title, "url": info.url, "check": info.check,
            "check_command": info.check_command}


@contextmanager
def reading_errors(reading: list | str):
    """What reading a log can raise, as `UnreadableLog` naming it (`reading`: its path, or a
    list kept naming the one being read): a cut-short or corrupt .gz, a read error. Every reader
    of a log (`diagnose`, `new --from-log`) says it in these words."""
    try:
        yield
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        what = ("is truncated" if isinstance(exc, EOFError) else f"is not valid gzip data ({exc})")
        raise UnreadableLog(f"{_name(reading)}: the compressed log {what}; decompress it with `gzip -dc` to keep "
                            "what can be read, and pass that") from None
    except OSError as exc:
        raise UnreadableLog(f"{_name(reading)}: cannot read the log: {exc.strerror or exc}") from None


def _name(reading: list | str | None) -> str:
    from .text import printable

    log = reading if isinstance(reading, str) else reading[0] if reading else "-"
    return "standard input" if log == "-" else printable(log, one_line=True)


def project_folder(root: str | Path | None = None, cwd: str | Path | None = None) -> tuple[Path, _Where]:
    """(the project folder to read, what it is): `root` when named, else the current folder when
    it is a project, else the bundled encyclopedia's compiling copy. `export` reads entries this
    way too; NoEncyclopedia when none is left."""
    if root is not None:
        return Path(root), _Where("project", Path(root).resolve())
    here = Path(cwd) if cwd is not None else Path.cwd()
    if is_project(here):
        return here, _Where("project", here.resolve())
    source = bundled_source()
    if source is None:
        raise NoEncyclopedia("this installation of rootcause carries no entries (a wheel built without them); "
                             "name a project with --root or a built site with --site")
    folder, digest = bundled_root(source)
    return folder, _Where("bundled", source, digest[:12])


def is_project(folder: Path) -> bool:
    """A rootcause project: site.yml beside an entries/ folder."""
    return (folder / "site.yml").is_file() and (folder / "entries").is_dir()


# -- the bundled encyclopedia ----------------------------------------------------------------------
def bundled_source() -> Path | None:
    """The entries that come with this rootcause: `rootcause/bundled/` in an installed wheel
    (copied there when the wheel is built, `setup.py`), or the checkout the package was imported
    from (an editable install, or PYTHONPATH); None when neither holds a site.yml."""
    package = Path(__file__).resolve().parent
    packaged = package / "bundled"
    if is_project(packaged):
        return packaged
    checkout = package.parent
    if (checkout / "pyproject.toml").is_file() and is_project(checkout):
        return checkout
    return None


def bundled_files(source: Path) -> list[Path]:
    """The bundled encyclopedia's files, relative to `source`, sorted."""
    found = []
    for part in BUNDLED_PARTS:
        path = source / part
        if path.is_file():
            found.append(Path(part))
        elif path.is_dir():
            found.extend(p.relative_to(source) for p in sorted(path.iterdir()) if p.is_file() and not p.is_symlink())
    return found


def bundled_root(source: Path) -> tuple[Path, str]:
    """(the folder to compile the bundled encyclopedia in, its content digest). The installed
    files may be read-only, and a compiled index is kept next to site.yml, so they are copied
    once into `$XDG_CACHE_HOME/rootcause/bundled/<digest>/`; a copy is named by the digest of
    the files' names, sizes and times, so an upgrade or an edited checkout gets a new one and
    the old ones are removed. Without a private cache folder, `source` itself is used (and
    compiled on every call)."""
    from .cache import user_cache_folder

    files = bundled_files(source)
    digest = hashlib.sha256(__version__.encode())
    for rel in files:
        st = (source / rel).stat()
        digest.update(f"\0{rel.as_posix()}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    name = digest.hexdigest()
    home = user_cache_folder("bundled")
    if home is None:
        return source, name
    target = home / name[:32]
    if (target / ".complete").is_file():
        return target, name
    staging = home / f".{name[:32]}.{os.getpid()}"
    try:
        shutil.rmtree(staging, ignore_errors=True)
        for rel in files:
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / rel, staging / rel)
        (staging / ".complete").write_text(f"{source}\n", encoding="utf-8")
        try:
            os.rename(staging, target)
        except OSError:   # another process made it meanwhile
            shutil.rmtree(staging, ignore_errors=True)
        for old in home.iterdir():
            if old.name != target.name and not old.name.startswith("."):
                shutil.rmtree(old, ignore_errors=True)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        return source, name
    return (target, name) if (target / ".complete").is_file() else (source, name)


# -- loading ---------------------------------------------------------------------------------------
#: what every source gives: (signatures (a list, or a compiled index's table), entry infos, consequences,
#: base URL, search index)
Sources = tuple[Any, Mapping, Mapping, str, Any]


def _from_site(folder: Path) -> Sources:
    from . import jsonbytes
    from .files import Refused, read_regular
    from .matching.ranking import EntryInfo
    from .matching.scanner import index_problem, signature_from_json
    from .site.search import SearchIndex

    path = folder / "search" / "signatures.json"
    try:
        data = jsonbytes.loads(read_regular(path, MAX_INDEX_BYTES).decode("utf-8"))
    except Refused as refused:
        raise NoEncyclopedia(f"{path}: cannot use the signature index: {refused.message}") from None
    except OSError as exc:
        raise NoEncyclopedia(f"{path}: cannot read the signature index ({exc.strerror}); build the site first") \
            from None
    except (ValueError, RecursionError) as exc:
        raise NoEncyclopedia(f"{path}: not a signature index ({exc})") from None
    problem = index_problem(data)
    if problem:
        raise NoEncyclopedia(f"{path}: not a signature index of this version of rootcause: {problem}; "
                             "rebuild the site")
    signatures = [signature_from_json(s) for s in data["signatures"]]
    for number, sig in enumerate(signatures):
        try:
            sig.step_regexes, sig.unless_regexes  # noqa: B018 - compile now, refuse now
        except Exception as exc:  # re2's error type is not part of its interface
            raise NoEncyclopedia(f"{path}: not a signature index: signatures[{number}] holds a regular expression "
                                 f"that does not compile ({exc})") from None
        sig.release()
    infos = {entry_id: EntryInfo.from_row(entry_id, row) for entry_id, row in data["entries"].items()}
    consequences = {k: set(v) for k, v in data["consequences"].items()}
    try:
        index = SearchIndex.from_folder(folder)
    except (OSError, ValueError, KeyError):
        index = None   # an older or partial copy of the site: no "possibly related" tier
    base = index.manifest.get("base_url") if index is not None else None
    return signatures, infos, consequences, base if isinstance(base, str) and base else folder.resolve().as_posix() + "/", index


class _IndexedInfos(Mapping):
    """EntryInfo by id, each read from the compiled index when a report first needs it."""

    def __init__(self, index):
        self._index = index
        self._made: dict = {}

    def __getitem__(self, entry_id: str):
        if entry_id not in self._made:
            from .matching.anchors import CorruptIndex
            from .matching.ranking import EntryInfo
            from .matching.scanner import row_problem

            row = self._index.entry(entry_id)
            if row is None:
                raise KeyError(entry_id)
            problem = row_problem(entry_id, row)
            if problem:
                raise CorruptIndex(problem)
            self._made[entry_id] = EntryInfo.from_row(entry_id, row)
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
        from .matching.anchors import CorruptIndex

        try:
            if self._search is None:
                self._search = self._index.search_index()
            return self._search.query(text, limit)
        except CorruptIndex:
            raise
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
            raise CorruptIndex(f"the search files are not a search index ({exc})") from None


def _from_cache(root: Path, verify: bool = False) -> Sources | None:
    """The project's compiled signature index, if it is fresh and whole; else None."""
    from .site.diagnosis_index import CorruptIndex, load

    index = load(root.resolve())
    if index is None or (verify and not index.verify()):
        return None
    try:
        return index.table(), _IndexedInfos(index), index.consequences(), index.base_url, _IndexedSearch(index)
    except CorruptIndex:
        return None


def _from_entries(root: Path, use_cache: bool) -> Sources:
    from .cache import RecordStore
    from .entries.project import open_project
    from .site.diagnosis_index import store
    from .site.search import build_search_files, build_signature_file
    from .site.stamps import ENTRY_RECORDS, build_version

    if use_cache:
        project, problems = open_project(root, store=RecordStore(root, ENTRY_RECORDS), version=build_version())
    else:
        project, problems = open_project(root)
    errors = [d for d in problems if d.severity == "error"]
    if project is None or errors:
        raise EntriesHaveErrors("the entries have errors (run `rootcause check`); or use --site with a built site",
                                tuple(str(d) for d in errors[:20]))
    search_files = build_search_files(project.catalog)
    store(project, build_signature_file(project.catalog), search_files)
    return sources_of(project.catalog, search_files)


def sources_of(catalog, search_files: dict | None = None) -> Sources:
    """(signatures, entry infos, consequences, base URL, search index) of a loaded catalog."""
    from .matching.ranking import EntryInfo
    from .site.search import SearchIndex, build_search_files

    # every entry, those with no signature too: a report names them for what a log shows without an error
    infos = {i: EntryInfo.of_entry(loaded.entry) for i, loaded in catalog.entries.items()}
    index = SearchIndex(search_files if search_files is not None else build_search_files(catalog))
    return catalog.signatures(), infos, catalog.consequences(), catalog.config.base_url, index


# -- the "possibly related" tier -------------------------------------------------------------------
def query_text(failure: dict) -> str:
    """What to search for: the error's own words, and the frame that raised it (its file and
    function often name the subsystem: a DeepSpeed engine, a DataLoader worker, FSDP)."""
    from .matching.incident import INCOMPLETE_TRACEBACK

    text = "" if failure["text"] == INCOMPLETE_TRACEBACK else failure["text"]
    location = failure.get("location") or ""
    if location.startswith('File "'):
        path, _, rest = location[6:].partition('"')
        location = " ".join(path.split("/")[-3:]) + rest
    return f"{text} {location}".strip()


def possible_entries(index, unknown: list[dict], infos: Mapping) -> list[dict]:
    """For each unexplained failure, the entries whose text is closest to it: a separate tier,
    never a diagnosis. A hit must share at least two search terms with the error."""
    tiers: list[dict] = []
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
