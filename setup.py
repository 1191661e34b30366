"""Packaging hook: the wheel carries the bundled encyclopedia.

`rootcause diagnose`, `run`, `export` and the library work in any folder, on the entries that come
with the package (`rootcause.encyclopedia.bundled_source`). The entries are the project's own
files (site.yml, entries/, the study tables and the healthy logs site.yml names), copied into
`rootcause/bundled/` of the built package; nothing is generated here, so a wheel needs no
dependency to be built. Everything else is declared in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: the bundled encyclopedia, relative to the project (as `rootcause.encyclopedia.BUNDLED_PARTS`)
BUNDLED = ("site.yml", "entries", "study", "tests/logs/healthy")


class BuildWithEncyclopedia(build_py):
    def run(self):
        super().run()
        if self.editable_mode:   # an editable install reads the checkout itself
            return
        here = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "rootcause" / "bundled"
        shutil.rmtree(target, ignore_errors=True)
        for part in BUNDLED:
            source = here / part
            if source.is_dir():
                for path in sorted(source.iterdir()):
                    if path.is_file() and not path.is_symlink():
                        (target / part).mkdir(parents=True, exist_ok=True)
                        shutil.copy2(path, target / part / path.name)
            elif source.is_file():
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / part)
            else:
                raise SystemExit(f"setup.py: {part} is missing: the wheel would carry no encyclopedia")


setup(cmdclass={"build_py": BuildWithEncyclopedia})
