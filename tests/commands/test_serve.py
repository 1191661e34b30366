"""`rootcause serve`: serves the built site on 127.0.0.1, rebuilds on change, tells pages to reload."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from conftest import SEED_ENTRY, fetch, free_port

from rootcause.memo import Kept


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


def test_builds_run_in_a_child_and_a_failed_one_waits_for_a_change(small_project: Path, tmp_path: Path,
                                                                     monkeypatch, capsys):
    """serve's tick (`_rebuild`, once a second and on every change): the up-to-date test is the
    only work done in the server's own process (one walk of the inputs); each build runs in a
    forked child over the last build's results, which the server keeps (`memo.Kept`), so that
    what it allocates goes with it and only its results come back; a failed build is not tried again, nor
    its errors printed again, until an input changes (this project leaves `healthy_logs` to its
    default, which the full reading of site.yml and the quick one name differently)."""
    import os

    from rootcause.commands import serve
    from rootcause.site import builder

    pids = tmp_path / "pids"
    build = builder.build

    def recorded(*args, **kwargs):
        with open(pids, "a") as out:
            out.write(f"{os.getpid()}\n")
        return build(*args, **kwargs)

    monkeypatch.setattr(builder, "build", recorded)
    failed: dict = {}
    kept = Kept()   # the server's: the last build's results, sent back by the child that built
    assert serve._rebuild(small_project, None, failed, kept) is True
    assert pids.read_text().split() and str(os.getpid()) not in pids.read_text().split()
    assert (small_project / "site" / "index.html").is_file()
    assert len(kept.tables["entry"]) == len(list((small_project / "entries").glob("*.yaml")))

    apart, walk_log = [], tmp_path / "walks"
    fingerprints = builder.input_fingerprint

    def walking(*args, **kwargs):   # in this process or in a build's child: counted in a file
        with open(walk_log, "a") as out:
            out.write("walk\n")
        return fingerprints(*args, **kwargs)

    def walks() -> int:
        return len(walk_log.read_text().split()) if walk_log.exists() else 0

    monkeypatch.setattr(builder, "input_fingerprint", walking)
    build_apart = serve._build_apart
    monkeypatch.setattr(serve, "_build_apart", lambda *a, **k: apart.append(1) or build_apart(*a, **k))
    assert serve._rebuild(small_project, None, failed, kept) is False   # nothing changed
    assert (apart, walks()) == ([], 1)

    # a build takes the walk of the test before it: one walk per change, not two
    about = small_project / "content" / "about.md"
    about.write_text(about.read_text() + "\nMore.\n")
    assert serve._rebuild(small_project, None, failed, kept) is True
    assert walks() == 2 and apart == [1]
    apart.clear()

    entry = small_project / "entries" / SEED_ENTRY.name
    good = entry.read_text()
    entry.write_text(good.replace("severity: high", "severity: nonsense"))
    assert serve._rebuild(small_project, None, failed, kept) is False
    assert "severity: 'nonsense'" in capsys.readouterr().err and apart == [1]
    for _tick in range(3):
        assert serve._rebuild(small_project, None, failed, kept) is False
    assert apart == [1] and capsys.readouterr().err == ""
    time.sleep(0.01)   # past the file's last time on a file system of coarse times
    entry.write_text(good.replace("are empty torch.Size([0]) placeholders", "are EMPTY placeholders"))
    assert serve._rebuild(small_project, None, failed, kept) is True and apart == [1, 1]
    assert failed == {}
    assert "are EMPTY placeholders" in (small_project / "site" / "entries" / SEED_ENTRY.stem / "index.html").read_text()
    assert "written" in capsys.readouterr().out   # (in place: "N written, M unchanged")


def test_a_reported_change_is_the_only_input_stat_ed_again(small_project: Path, monkeypatch):
    """serve's watcher names the paths that changed: the up-to-date test then stats those alone
    and takes every other input's stat from its last full walk; the fingerprint is the one a full
    walk gives. A change the watcher did not report is seen by the next full walk (a tick with
    nothing reported)."""
    import os

    from rootcause.site import builder, stamps

    kept = Kept()
    from rootcause.commands import serve

    assert serve._rebuild(small_project, None, {}, kept) is True
    assert builder.up_to_date(small_project, None, kept)[0] is True   # a full walk, remembered
    edited, missed = small_project / "entries" / SEED_ENTRY.name, small_project / "content" / "about.md"
    time.sleep(0.01)
    edited.write_text(edited.read_text() + "\n")
    missed.write_text(missed.read_text() + "\n")

    stat_ed: list[str] = []
    lstat = os.lstat
    monkeypatch.setattr(stamps.os, "lstat", lambda path: stat_ed.append(os.fspath(path)) or lstat(path))
    fresh, walked = builder.up_to_date(small_project, None, kept, changed={str(edited)})
    inputs = {p for p in stat_ed if p.startswith((str(small_project / "entries") + "/",
                                                     str(small_project / "content") + "/"))}
    assert not fresh and inputs == {str(edited)}
    monkeypatch.setattr(stamps.os, "lstat", lstat)
    full = builder.up_to_date(small_project, None, kept)[1]
    assert full[0] != walked[0]   # the unreported edit: seen by the full walk
    assert builder.up_to_date(small_project, None, kept, changed={str(missed)})[1][0] == full[0]
