"""Shared fixtures: the repository, a throw-away copy of a project, and running the CLI for real."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True, scope="session")
def _own_cache_home(tmp_path_factory):
    """Compiled templates (`rootcause.site.template_cache`) go to a folder of the test run, not
    the user's ~/.cache; subprocesses inherit it."""
    folder = tmp_path_factory.mktemp("xdg-cache")
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before
SEED_ENTRY = REPO / "entries" / "zero3-state-dict-saved-without-gathering.yaml"

#: what the tests drive besides Python: `needs(NAME)` marks a test that uses it. A test whose tool
#: is missing FAILS, saying how to install it (`bash scripts/test` installs all three), unless
#: the variable ROOTCAUSE_TEST_SKIP names it (e.g. ROOTCAUSE_TEST_SKIP=browser,torchrun): then it
#: is skipped, and pytest's summary says by whom.
TOOLS = {
    "browser": ("Debian's chromium", "apt-get install chromium (these tests never download a browser)"),
    "node": ("Node.js", "apt-get install nodejs"),
    "go": ("Go", "apt-get install golang-go (Go's own text/template parser checks what Loki would expand)"),
    "torchrun": ("torchrun of a CPU torch", "bash scripts/test installs torch==2.13.0+cpu into .test-torch/, "
                 "or point ROOTCAUSE_TEST_TORCHRUN at a torchrun"),
}
LEFT_OUT = set(os.environ.get("ROOTCAUSE_TEST_SKIP", "").replace(",", " ").split())


def tool(name: str) -> str | None:
    """The path of a tool the tests drive, or None."""
    if name == "browser":
        return shutil.which("chromium")
    if name == "node":
        return shutil.which("node")
    if name == "go":
        return shutil.which("go")
    found = os.environ.get("ROOTCAUSE_TEST_TORCHRUN") or (
        str(REPO / ".test-torch" / "bin" / "torchrun") if (REPO / ".test-torch" / "bin" / "torchrun").exists()
        else shutil.which("torchrun"))
    return found if found and Path(found).exists() else None


def needs(name: str):
    """Mark a test (or, as `pytestmark`, a module) as driving one of TOOLS."""
    assert name in TOOLS, name
    return pytest.mark.needs(name)


def pytest_configure(config):
    config.addinivalue_line("markers", "needs(tool): the test drives a tool besides Python (browser, node, go, torchrun)")
    unknown = LEFT_OUT - set(TOOLS)
    if unknown:
        raise pytest.UsageError(f"ROOTCAUSE_TEST_SKIP names {', '.join(sorted(unknown))}; it may name "
                                f"{', '.join(TOOLS)}")


def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs"):
        name = mark.args[0]
        if tool(name) is not None:
            continue
        what, how = TOOLS[name]
        if name in LEFT_OUT:
            pytest.skip(f"left out by ROOTCAUSE_TEST_SKIP ({what} is not installed)")
        pytest.fail(f"{what} is not installed: {how}; or set ROOTCAUSE_TEST_SKIP={name} to leave these tests out",
                    pytrace=False)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for `serve`)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str) -> tuple[int, str]:
    """(status, body) of a GET, HTTP errors included."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def run_cli(*args: str, cwd: Path = REPO, stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `python -m rootcause ...` in a subprocess: real exit codes, real output, no traceback allowed."""
    result = subprocess.run([sys.executable, "-m", "rootcause", *args], cwd=cwd, input=stdin,
                            capture_output=True, timeout=timeout)
    assert b"Traceback (most recent call last)" not in result.stderr, result.stderr.decode()
    return result


def read_to_end(master: int) -> bytes:
    """Everything a pseudo-terminal's other side writes until it closes (EIO once it has)."""
    out = b""
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:
            break
        if not data:
            break
        out += data
    return out


def make_project(folder: Path, entries: list[Path] | None = None, healthy: bool = False) -> Path:
    """A minimal project: the real site.yml and content, and the given entry files (no study)."""
    (folder / "entries").mkdir(parents=True, exist_ok=True)
    text = (REPO / "site.yml").read_text(encoding="utf-8")
    dropped = ("study:",) if healthy else ("study:", "healthy_logs:")
    text = "\n".join(line for line in text.splitlines() if not line.startswith(dropped)) + "\n"
    (folder / "site.yml").write_text(text, encoding="utf-8")
    shutil.copytree(REPO / "content", folder / "content", dirs_exist_ok=True)
    for entry in entries or []:
        shutil.copy(entry, folder / "entries" / entry.name)
    return folder


def copy_bundled_project(folder: Path) -> Path:
    """A copy of this repository's project: entries, content, the study, the healthy logs and
    site.yml (the build tests compare its site with a cold build of the same input)."""
    folder.mkdir(parents=True)
    for name in ("entries", "content", "study"):
        shutil.copytree(REPO / name, folder / name)
    shutil.copytree(REPO / "tests" / "logs" / "healthy", folder / "tests" / "logs" / "healthy")
    shutil.copy(REPO / "site.yml", folder / "site.yml")
    return folder


def files_of(out: Path) -> dict[str, bytes]:
    """Every file under a built site's folder, by its path in the site."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


@pytest.fixture
def small_project(tmp_path: Path) -> Path:
    """A project with one real entry and its related links trimmed to nothing."""
    project = make_project(tmp_path / "project")
    text = SEED_ENTRY.read_text(encoding="utf-8")
    start, end = text.index("\nrelated:"), text.index("\nreferences:")
    (project / "entries" / SEED_ENTRY.name).write_text(text[:start] + text[end:], encoding="utf-8")
    return project


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium through Playwright, one per test process: Playwright's sync API runs one
    instance at a time, so every browser test (tests/site/, tests/hostile/) shares this one."""
    from playwright.sync_api import sync_playwright

    from browser_helpers import CHROMIUM_ARGS

    chromium_path = tool("browser")
    if chromium_path is None:   # a test that uses this fixture is marked needs("browser"): it failed or was skipped
        pytest.fail("Debian's chromium is not installed: apt-get install chromium", pytrace=False)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
