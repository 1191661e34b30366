"""`rootcause serve`: serves the built site on 127.0.0.1, rebuilds on change, tells pages to reload."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from conftest import SEED_ENTRY, fetch, free_port


def wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_serve_builds_serves_and_reloads_on_change(small_project: Path):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "rootcause", "--root", str(small_project), "serve", "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/"
    try:
        def up():
            try:
                return fetch(base)[0] == 200
            except OSError:
                return False
        wait_for(up)
        status, page = fetch(base + f"entries/{SEED_ENTRY.stem}/")
        assert status == 200
        assert '<script src="/__rootcause/livereload.js"></script></body>' in page
        assert fetch(base + "no/such/page")[0] == 404

        events = urllib.request.urlopen(base + "__rootcause/events", timeout=30)
        entry = small_project / "entries" / SEED_ENTRY.name
        entry.write_text(entry.read_text().replace("are empty torch.Size([0]) placeholders", "are EMPTY placeholders"))
        line = b""
        deadline = time.monotonic() + 30  # keep-alive comments arrive every 15 s: bound the wait
        while not line.startswith(b"event: reload"):
            assert time.monotonic() < deadline, "no reload event"
            line = events.readline()
        _status, page = fetch(base + f"entries/{SEED_ENTRY.stem}/")
        assert "are EMPTY placeholders" in page

        entry.write_text(entry.read_text().replace("severity: high", "severity: nonsense"))
        time.sleep(1.5)
        _status, page = fetch(base + f"entries/{SEED_ENTRY.stem}/")
        assert "are EMPTY placeholders" in page  # the last good site is still served
    finally:
        server.terminate()
        output = server.communicate(timeout=10)[0].decode()
    assert "error[E013]: severity: 'nonsense'" in output
    assert "Traceback" not in output
