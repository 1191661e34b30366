"""Open a project folder: site.yml, then every entry, checked. Shared by every command."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..inputs import Inputs, input_folders, stat_key
from ..config import load_config
from ..errors import Diagnostic, display_path
from ..files import kind_of, not_regular
from .catalog import Catalog, load_catalog
from .study import Report, load_study


@dataclass
class Project:
    root: Path
    catalog: Catalog
    study: list[Report] = field(default_factory=list)
    #: the inputs' stat keys, taken before they were read (for the caches made from this project)
    inputs: Inputs | None = None
    #: the healthy logs the checks across entries read (E036)
    healthy_logs: list[Path] = field(default_factory=list)

    @property
    def config(self):
        return self.catalog.config


def healthy_log_paths(root: Path, folder: str | None) -> tuple[list[Path], list[Diagnostic]]:
    """The regular files of the healthy-log folder (site.yml checked that it lies inside the
    project); a symbolic link, pipe or device there is refused (E008), never opened."""
    if not folder:
        return [], []
    found, problems = [], []
    for path in sorted((root / folder).glob("*")):
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode):
            found.append(path)
        elif not stat.S_ISDIR(mode):
            problems.append(not_regular(kind_of(mode)).diagnostic(display_path(path, root)))
    return found, problems


def open_project(root: Path, workers: int | None = None, store=None, version: str = "",
                 timings=None, kept=None, near: bool = True, cross: bool = True,
                 taken: dict | None = None) -> tuple[Project | None, list[Diagnostic]]:
    """(project, diagnostics). The project is None only when site.yml itself is unusable.

    `store` and `version`: the build cache's entry records (`catalog.load_catalog`); `timings`:
    `build --timings`; `kept`, `near` and `cross`: as `load_catalog` takes them; `taken`: stat keys
    of the inputs by path, taken a moment before (`inputs.Inputs.take`).
    """
    from ..timings import OFF

    timings = timings or OFF
    root = root.resolve()
    site_key = stat_key(root / "site.yml", taken)   # before it is read: a change while checking is seen
    config, problems = load_config(root)
    if config is None:
        return None, problems
    inputs = Inputs.take(root, input_folders(config), known={"site.yml": site_key}, taken=taken)
    healthy, refused = healthy_log_paths(root, config.healthy_logs)
    catalog = load_catalog(root, config, healthy, workers=workers, store=store, version=version, timings=timings,
                           kept=kept, stats=inputs.stats, near=near, cross=cross)
    with timings.stage("load"):
        study, study_problems = load_study(root, config)
    if refused or study_problems:
        catalog.diagnostics = sorted(catalog.diagnostics + refused + study_problems)
    return Project(root, catalog, study, inputs, healthy), catalog.diagnostics
