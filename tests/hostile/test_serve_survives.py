"""Issue 9, item 6: `serve` outlives any edit, reports it, and keeps serving the last good site.

It died on an entry holding a 5,000-digit number, and on a dangling symbolic link followed by
any edit (the change detector followed the link). Now both are positioned errors in the
terminal, the last good pages stay up, and fixing the project brings a rebuild and a reload.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import SEED_ENTRY, fetch, free_port

HOSTILE = Path(__file__).resolve().parent


class Output:
    """Collects a process's output lines in a thread, so a test can wait for one with a bound."""

    def __init__(self, stream):
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream):
        for raw in stream:
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def wait_for(self, needle: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines:
                if needle in line:
                    return line
            time.sleep(0.05)
        raise AssertionError(f"no line with {needle!r} in:\n" + "\n".join(self.lines[-30:]))

    def text(self) -> str:
        return "\n".join(self.lines)


@contextlib.contextmanager
def serving(project: Path):
    """`rootcause serve` on `project` at a free port: yields (server, its Output, the port), and
    stops it afterwards, its output free of tracebacks."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "rootcause", "--root", str(project), "serve",
                               "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = Output(server.stdout)
    try:
        yield server, output, port
    finally:
        server.terminate()
        server.wait(timeout=10)
        output.thread.join(timeout=5)
    assert "Traceback" not in output.text()


def test_serve_reports_hostile_edits_and_keeps_the_last_good_site(small_project: Path):
    with serving(small_project) as (server, output, port):
        page = f"http://127.0.0.1:{port}/entries/{SEED_ENTRY.stem}/"
        entry = small_project / "entries" / SEED_ENTRY.name
        output.wait_for("serving ")
        status, good = fetch(page)
        assert status == 200 and "empty torch.Size([0]) placeholders" in good

        shutil.copy(HOSTILE / "huge-number.yaml", small_project / "entries")
        output.wait_for("entries/huge-number.yaml:12:13: error[E012]: a number of 5,000 characters is too long")
        output.wait_for("still serving the last good site")
        assert fetch(page) == (200, good)

        (small_project / "entries" / "huge-number.yaml").unlink()
        (small_project / "entries" / "gone.yaml").symlink_to(small_project / "no-such-entry.yaml")
        time.sleep(0.5)
        entry.write_text(entry.read_text().replace("are empty torch.Size([0]) placeholders", "are EMPTY placeholders"))
        output.wait_for("entries/gone.yaml:1:1: error[E008]: is a symbolic link, not a regular file")
        assert fetch(page) == (200, good)
        assert server.poll() is None

        (small_project / "entries" / "gone.yaml").unlink()  # fixed: the edit is built and served
        deadline = time.monotonic() + 30
        while "are EMPTY placeholders" not in fetch(page)[1]:
            assert time.monotonic() < deadline, output.text()
            time.sleep(0.1)
        assert server.poll() is None
