"""The library face of `rootcause diagnose`: the same report, as a dict, from Python.

`Matcher` loads an encyclopedia once (`rootcause.encyclopedia.Encyclopedia.open`: a built site,
a project, or, with neither, the project in the current folder or the entries bundled with
rootcause) and then diagnoses any number of logs; each call returns exactly what
`rootcause diagnose --json` prints, including which encyclopedia answered (`encyclopedia`).
Failures raise `DiagnosisError` (its kinds: `NoEncyclopedia`, `EntriesHaveErrors`,
`UnreadableLog`); nothing prints or exits. It holds no state between calls, so one Matcher per
worker process serves a whole fleet scan.
"""

from __future__ import annotations

from pathlib import Path

from .encyclopedia import (DiagnosisError, Encyclopedia, EntriesHaveErrors, NoEncyclopedia, Origin,
                           UnreadableLog)
from .matching.scanner import Scanner

__all__ = ["DiagnosisError", "Encyclopedia", "EntriesHaveErrors", "Matcher", "NoEncyclopedia", "Origin",
           "RootcauseUnavailable", "Scanner", "UnreadableLog", "diagnose_file", "diagnose_text"]

#: the name this error had before the service's own kinds existed
RootcauseUnavailable = DiagnosisError


class Matcher:
    def __init__(self, site: str | Path | None = None, root: str | Path | None = None, top: int = 5):
        if top < 1:
            raise ValueError("top must be at least 1")
        self.top = top
        self.encyclopedia = Encyclopedia.open(root=root, site=site)

    @property
    def base_url(self) -> str:
        return self.encyclopedia.base_url

    @property
    def origin(self) -> Origin:
        return self.encyclopedia.origin

    def diagnose_text(self, text: str) -> dict:
        return self.encyclopedia.diagnose_text(text, self.top)

    def diagnose_file(self, path: str | Path) -> dict:
        """A plain or gzip-compressed log file."""
        return self.encyclopedia.diagnose_paths([path], self.top)


def diagnose_text(text: str, site: str | Path | None = None, root: str | Path | None = None, top: int = 5) -> dict:
    """One log's report. For many logs, make one `Matcher` and call it for each."""
    return Matcher(site=site, root=root, top=top).diagnose_text(text)


def diagnose_file(path: str | Path, site: str | Path | None = None, root: str | Path | None = None,
                  top: int = 5) -> dict:
    return Matcher(site=site, root=root, top=top).diagnose_file(path)
