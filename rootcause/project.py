"""Open a project folder: site.yml, then every entry, checked. Shared by every command."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .catalog import Catalog, load_catalog
from .config import load_config
from .errors import Diagnostic


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


def open_project(root: Path, workers: int | None = None) -> tuple[Project | None, list[Diagnostic]]:
    """(project, diagnostics). The project is None only when site.yml itself is unusable."""
    root = root.resolve()
    config, problems = load_config(root)
    if config is None:
        return None, problems
    catalog = load_catalog(root, config, healthy_log_paths(root, config.healthy_logs), workers=workers)
    return Project(root, catalog), catalog.diagnostics
