"""The package type-checks: mypy (the `test` extra) on `rootcause/` with the settings of
pyproject.toml (with pydantic's mypy plugin) reports no error, on every module."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def test_mypy_finds_no_error():
    result = subprocess.run([sys.executable, "-m", "mypy", "rootcause"], cwd=REPO, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
