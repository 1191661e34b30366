"""Open a project folder: site.yml, then every entry, checked. Shared by every command."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..config import load_config
from ..errors import Diagnostic
from .catalog import Catalog, load_catalog


@dataclass
class Project:
    root: Path
    catalog: Catalog

    @property
    def config(self):
        return self.catalog.config


def healthy_log_paths(root: Path, folder: str | None) -> list[Path]:
    if not folder:
        return []
    return sorted(p for p in (root / folder).glob("*") if p.is_file())


def open_project(root: Path, workers: int | None = None, memo: dict | None = None) -> tuple[Project | None, list[Diagnostic]]:
    """(project, diagnostics). The project is None only when site.yml itself is unusable.

    `memo` carries per-file results between builds of one process (see `catalog.load_catalog`);
    it is tied to the site.yml it was filled under and emptied when that changes.
    """
    root = root.resolve()
    config, problems = load_config(root)
    if config is None:
        return None, problems
    if memo is not None:
        config_key = config.model_dump_json()
        if memo.get("config") != config_key:
            memo.clear()
            memo["config"] = config_key
        memo = memo.setdefault("entries", {})
    catalog = load_catalog(root, config, healthy_log_paths(root, config.healthy_logs), workers=workers, memo=memo)
    return Project(root, catalog), catalog.diagnostics
