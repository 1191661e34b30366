"""The frequency study: which failures people report in public issue threads, and how often.

The study lives in the project as tab-separated tables (`study/*.tsv`, the folder named by
site.yml's `study`), one row per sampled thread: `url  system  query  class  summary`. A class
is a failure one entry can explain; it is named by that entry's id, so the site can show which
reported failures the encyclopedia covers and which it still lacks. The tables arrive by pull
request like entries do, so every row is checked and a bad one is reported with its position.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..config import KEBAB, SiteConfig
from ..errors import Diagnostic, display_path
from ..files import Refused, read_regular
from .claims import thread_label

COLUMNS = ("url", "system", "query", "class", "summary")
MAX_TABLE_BYTES = 4 << 20
#: the classes that name no failure (the thread does not show it; a healthy run): kept in the
#: table, since they were sampled, but never counted as a gap in the encyclopedia
UNCLASSIFIED = frozenset({"unclear", "healthy"})
THREAD_URL = re.compile(r"^https://github\.com/([\w.-]+)/([\w.-]+)/(issues|pull|discussions)/([1-9][0-9]{0,7})$")
_KEBAB = re.compile(KEBAB)


@dataclass(frozen=True)
class Report:
    """One sampled thread."""

    url: str
    system: str
    query: str
    failure: str    # the class: an entry id, or the id an entry for it would have
    summary: str
    path: str
    line: int

    @property
    def label(self) -> str:
        return thread_label(self.url)


def load_study(root: Path, config: SiteConfig) -> tuple[list[Report], list[Diagnostic]]:
    """Every row of every table in the study folder, and what is wrong with any of them."""
    if not config.study:
        return [], []
    folder = root / config.study
    reports: list[Report] = []
    problems: list[Diagnostic] = []
    seen: dict[str, str] = {}
    for path in sorted(folder.glob("*.tsv")):
        shown = display_path(path, root)
        try:
            text = read_regular(path, MAX_TABLE_BYTES, "split the table into one file per system").decode("utf-8")
        except Refused as refused:
            problems.append(refused.diagnostic(shown))
            continue
        except UnicodeDecodeError as exc:
            problems.append(Diagnostic(shown, 1, 1, "E001", f"file cannot be read as UTF-8 text ({exc.reason})",
                                       "save the table as UTF-8"))
            continue
        except OSError:
            continue   # removed meanwhile
        rows, found = _parse(text, shown, config)
        problems += found
        for report in rows:
            first = seen.setdefault(report.url, f"{shown}:{report.line}")
            if first != f"{shown}:{report.line}":
                problems.append(Diagnostic(shown, report.line, 1, "E046", f"thread {report.url} is already in the "
                                           f"study at {first}", "keep one row per thread"))
                continue
            reports.append(report)
    return reports, problems


def _parse(text: str, shown: str, config: SiteConfig) -> tuple[list[Report], list[Diagnostic]]:
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r").split("\t") != list(COLUMNS):
        return [], [Diagnostic(shown, 1, 1, "E046", "the first line must name the columns, separated by tabs",
                               "write the header: " + " <tab> ".join(COLUMNS))]
    rows, problems = [], []
    systems = config.vocabularies.systems
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(COLUMNS):
            problems.append(Diagnostic(shown, number, 1, "E046", f"{len(cells)} columns; the study has "
                                       f"{len(COLUMNS)} ({', '.join(COLUMNS)})", "separate the cells by one tab each; "
                                       "a cell holds no tab"))
            continue
        url, system, query, failure, summary = (cell.strip() for cell in cells)
        column = lambda i: sum(len(c) + 1 for c in cells[:i]) + 1  # noqa: E731 - position of cell i
        if not THREAD_URL.match(url):
            problems.append(Diagnostic(shown, number, 1, "E046", f"'{url[:100]}' is not a GitHub issue, pull request "
                                       "or discussion address", "write https://github.com/OWNER/REPO/issues/N"))
            continue
        if system not in systems:
            problems.append(Diagnostic(shown, number, column(1), "E046", f"system '{system[:60]}' is not in "
                                       "site.yml's systems", f"use one of: {', '.join(systems)}"))
            continue
        if not _KEBAB.match(failure):
            problems.append(Diagnostic(shown, number, column(3), "E046", f"class '{failure[:60]}' is not a kebab-case "
                                       "id", "name the class by the id of the entry that explains it"))
            continue
        if not summary:
            problems.append(Diagnostic(shown, number, column(4), "E046", "the summary is empty",
                                       "say in one sentence what failed"))
            continue
        rows.append(Report(url, system, query, failure, summary, shown, number))
    return rows, problems


@dataclass(frozen=True)
class ClassCount:
    failure: str
    count: int
    reports: tuple[Report, ...]


def tally(reports: list[Report]) -> dict[str, list[ClassCount]]:
    """Per system (and "" for all systems together): the classes, most reported first."""
    by_system: dict[str, dict[str, list[Report]]] = {}
    for report in reports:
        for key in (report.system, ""):
            by_system.setdefault(key, {}).setdefault(report.failure, []).append(report)
    return {system: sorted((ClassCount(failure, len(rows), tuple(rows)) for failure, rows in classes.items()),
                           key=lambda c: (c.failure in UNCLASSIFIED, -c.count, c.failure))
            for system, classes in by_system.items()}


def gaps(reports: list[Report], entry_ids: set[str], at_least: int = 3) -> list[tuple[str, int]]:
    """Classes reported at least `at_least` times that no entry explains, most reported first."""
    counts = Counter(r.failure for r in reports if r.failure not in UNCLASSIFIED)
    return sorted(((c, n) for c, n in counts.items() if n >= at_least and c not in entry_ids), key=lambda x: (-x[1], x[0]))
