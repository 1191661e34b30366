"""Issue 9, item 7: bad input gives `path:line:col: error[CODE]: what — how to fix`, never a traceback.

Each case below once raised: a 5,000-digit integer (Python's int-string limit), `order: abc` in
a content page, a corrupt .gz log, a malformed or wrongly shaped signatures.json, `theme: /` or
`healthy_logs: /proc/self` (which also walked the whole filesystem), and a read-only project.
`run_cli` fails on any traceback; each run has a time bound.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import REPO, run_cli

HOSTILE = Path(__file__).resolve().parent
TIMEOUT = 60


def site_files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_a_5000_digit_integer_in_an_entry_is_a_positioned_error(small_project: Path):
    shutil.copy(HOSTILE / "huge-number.yaml", small_project / "entries")
    result = run_cli("--root", str(small_project), "check", timeout=TIMEOUT)
    assert result.returncode == 1
    assert result.stdout.decode().splitlines() == [
        "entries/huge-number.yaml:12:13: error[E012]: a number of 5,000 characters is too long — numbers here are "
        "small; quote the value if it is meant as text"]


def test_a_5000_digit_integer_in_site_yml_is_a_positioned_error(small_project: Path):
    site_yml = small_project / "site.yml"
    text = site_yml.read_text()
    line = text[:text.index("recent: 8")].count("\n") + 1
    site_yml.write_text(text.replace("recent: 8", "recent: " + "7" * 5000))
    for verb in ("check", "build"):
        result = run_cli("--root", str(small_project), verb, timeout=TIMEOUT)
        assert result.returncode == 1
        assert f"site.yml:{line}:9: error[E012]: a number of 5,000 characters is too long" in \
            (result.stdout + result.stderr).decode()


def test_a_content_page_with_order_abc_is_a_positioned_error(small_project: Path):
    shutil.copy(HOSTILE / "order-abc.md", small_project / "content")
    result = run_cli("--root", str(small_project), "check", timeout=TIMEOUT)
    assert result.returncode == 1
    assert result.stdout.decode().startswith(
        "content/order-abc.md:3:8: error[E040]: front matter 'order' must be a whole number, not 'abc'")
    result = run_cli("--root", str(small_project), "build", timeout=TIMEOUT)
    assert result.returncode == 1 and "content/order-abc.md:3:8: error[E040]" in result.stderr.decode()


def test_a_corrupt_gz_log_is_named_and_refused(tmp_path: Path):
    truncated = tmp_path / "truncated.log.gz"
    whole = gzip.compress((REPO / "tests" / "logs" / "healthy" / "torchrun-ddp-gloo-train-checkpoint.log").read_bytes())
    truncated.write_bytes(whole[: len(whole) // 2])
    for log, why in ((HOSTILE / "corrupt-deflate.log.gz", "is not valid gzip data (Error -3 while decompressing"),
                     (truncated, "is truncated")):
        result = run_cli("diagnose", str(log), timeout=TIMEOUT)
        assert result.returncode == 2
        assert result.stderr.decode().startswith(f"rootcause diagnose: {log}: the compressed log {why}")
        assert result.stdout == b""


SITE_INDEXES = sorted(p.stem for p in (HOSTILE / "signatures").glob("*.json"))


@pytest.mark.parametrize("name", SITE_INDEXES)
def test_a_malformed_signature_index_is_refused_by_diagnose_site(tmp_path: Path, name: str):
    site = tmp_path / "site"
    (site / "search").mkdir(parents=True)
    shutil.copy(HOSTILE / "signatures" / f"{name}.json", site / "search" / "signatures.json")
    result = run_cli("diagnose", "--site", str(site), "-", stdin=b"CUDA out of memory\n", timeout=TIMEOUT)
    assert result.returncode == 2
    err = result.stderr.decode()
    assert err.startswith(f"rootcause diagnose: {site}/search/signatures.json: not a signature index"), err
    assert len(err.splitlines()) == 1


def test_a_signature_index_behind_a_link_is_not_read(tmp_path: Path):
    site = tmp_path / "site"
    (site / "search").mkdir(parents=True)
    (site / "search" / "signatures.json").symlink_to("/dev/zero")
    result = run_cli("diagnose", "--site", str(site), "-", stdin=b"x\n", timeout=TIMEOUT)
    assert result.returncode == 2
    assert "cannot use the signature index: is a symbolic link" in result.stderr.decode()


@pytest.mark.parametrize("setting, value, why", [
    ("theme", "/", "is an absolute path"),
    ("healthy_logs", "/proc/self", "is an absolute path"),
    ("theme", "../..", "climbs out with '..'"),
    ("healthy_logs", "no-such-folder", "does not exist"),
    ("theme", "site.yml", "is not a folder"),
])
def test_folders_in_site_yml_must_be_inside_the_project(small_project: Path, setting: str, value: str, why: str):
    site_yml = small_project / "site.yml"
    text = site_yml.read_text() + f"{setting}: {value}\n"
    site_yml.write_text(text)
    position = f"site.yml:{text.count(chr(10))}:{len(setting) + 3}"
    for verb in ("check", "build"):
        result = run_cli("--root", str(small_project), verb, timeout=TIMEOUT)
        assert result.returncode == 1
        assert f"{position}: error[E017]: {setting}: '{value}' {why} —" in (result.stdout + result.stderr).decode()
    assert not (small_project / "site").exists()


def test_a_theme_folder_linked_out_of_the_project_is_refused(small_project: Path, tmp_path: Path):
    outside = tmp_path / "outside-theme" / "templates"
    outside.mkdir(parents=True)
    (small_project / "my-theme").symlink_to(outside.parent)
    site_yml = small_project / "site.yml"
    site_yml.write_text(site_yml.read_text() + "theme: my-theme\n")
    result = run_cli("--root", str(small_project), "check", timeout=TIMEOUT)
    assert result.returncode == 1
    assert "error[E017]: theme: 'my-theme' leads out of the project folder (through a symbolic link)" in \
        result.stdout.decode()


def _as_nobody() -> list[str] | None:
    """A command prefix that drops root's power to write anywhere, or [] when not root."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    # the unprivileged user must be able to run this checkout (a clone in a private folder is not)
    probe = subprocess.run([*prefix, sys.executable, "-c", "import rootcause.commands.cli, pydantic, jinja2"],
                           capture_output=True, timeout=TIMEOUT)
    return prefix if probe.returncode == 0 else None


def test_a_read_only_project_folder_is_reported_not_a_traceback(small_project: Path):
    prefix = _as_nobody()
    if prefix is None:
        pytest.skip("running as root, and no unprivileged user can run this checkout (no setpriv, or the "
                    "checkout sits in a folder only root can read): a read-only folder cannot be made")
    # a folder the unprivileged user can read but not write (tmp_path's parents are private to root)
    base = Path(tempfile.mkdtemp(prefix="rootcause-readonly-"))
    try:
        project = base / "project"
        shutil.copytree(small_project, project)
        for folder in [base, *[p for p in project.rglob("*") if p.is_dir()], project]:
            folder.chmod(0o555)

        def run(*args: str) -> subprocess.CompletedProcess:
            result = subprocess.run([*prefix, sys.executable, "-m", "rootcause", "--root", str(project), *args],
                                    capture_output=True, timeout=TIMEOUT, env={**os.environ, "HOME": str(base)})
            assert b"Traceback" not in result.stderr, result.stderr.decode()
            return result

        result = run("build", "-q")
        assert result.returncode == 1
        assert re.match(rf"{re.escape(str(project))}/site:1:1: error\[E051\]: cannot write the output folder or "
                        r"next to it: Permission denied", result.stderr.decode()), result.stderr.decode()
        result = run("schema")
        assert result.returncode == 2
        assert result.stderr.decode().startswith(
            f"{project}/entry.schema.json:1:1: error[E051]: cannot write the schema: Permission denied")
        result = run("new", "another-failure")
        assert result.returncode == 2 and "error[E051]: cannot write the entry" in result.stderr.decode()
        assert sorted(p.name for p in project.iterdir()) == ["content", "entries", "site.yml"]
    finally:
        for folder in [base, *base.rglob("*")]:
            if folder.is_dir():
                folder.chmod(0o755)
        shutil.rmtree(base)
