"""The library face of `rootcause diagnose`: the same report, as a dict, from Python.

`Matcher` loads the signatures once (from a built site's `search/signatures.json`, which is all
a cluster or a data pipeline needs, or from a project's entries) and then diagnoses any number of
logs; each call returns exactly what `rootcause diagnose --json` prints. It holds no state
between calls, so one Matcher per worker process serves a whole fleet scan.
"""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path

from .matching.scanner import Scanner

__all__ = ["Matcher", "Scanner", "diagnose_file", "diagnose_text"]


class RootcauseUnavailable(Exception):
    """The signatures could not be loaded (no built site there, or entries with errors)."""


class Matcher:
    def __init__(self, site: str | Path | None = None, root: str | Path = ".", top: int = 5):
        from .commands.diagnose import load_sources

        if top < 1:
            raise ValueError("top must be at least 1")
        self.top = top
        try:
            self._signatures, self._infos, self._consequences, self.base_url, self._index = load_sources(
                Namespace(site=str(site) if site is not None else None, root=str(root)))
        except SystemExit:   # the CLI's loaders print why and exit; a library raises
            raise RootcauseUnavailable(f"cannot load the signatures from {site or root} (see the message above)") \
                from None
        self._scanner = Scanner(self._signatures)

    def diagnose_text(self, text: str) -> dict:
        return self._report(self._scanner.scan_text(text))

    def diagnose_file(self, path: str | Path) -> dict:
        """A plain or gzip-compressed log file."""
        return self._report(self._scanner.scan_paths([path]))

    def _report(self, scanned) -> dict:
        from .commands.diagnose import full_report
        from .matching.ranking import rank

        return full_report(rank(scanned, self._consequences, self._infos), self._infos, self._index, self.top)


def diagnose_text(text: str, site: str | Path | None = None, root: str | Path = ".", top: int = 5) -> dict:
    """One log's report. For many logs, make one `Matcher` and call it for each."""
    return Matcher(site=site, root=root, top=top).diagnose_text(text)


def diagnose_file(path: str | Path, site: str | Path | None = None, root: str | Path = ".", top: int = 5) -> dict:
    return Matcher(site=site, root=root, top=top).diagnose_file(path)
