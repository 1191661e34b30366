"""The diagnosis service (`rootcause.encyclopedia`): which encyclopedia answers, typed errors,
and `run` never standing between a user and the job."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, read_to_end, run_cli
import rootcause
from rootcause.commands.run import SCAN_BACKLOG, LineQueue
from rootcause.encyclopedia import Encyclopedia, Origin, bundled_root, bundled_source

OOM = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
       "capacity of 79.15 GiB of which 1.21 GiB is free.\n")


def test_with_no_project_here_diagnose_answers_from_the_bundled_encyclopedia_and_says_so(tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text(OOM)
    result = run_cli("diagnose", "--json", str(log), cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    data = json.loads(result.stdout)
    assert data["results"][0]["entry"] == "cuda-out-of-memory"
    origin = data["encyclopedia"]
    assert origin["kind"] == "bundled" and origin["version"] == rootcause.__version__
    assert origin["entries"] > 100 and len(origin["digest"]) == 12
    text = run_cli("diagnose", str(log), cwd=tmp_path).stdout.decode()
    assert f"Answered by the encyclopedia bundled with rootcause {rootcause.__version__} (" in text
    assert list(tmp_path.iterdir()) == [log]   # nothing written into the user's folder


def test_the_bundled_copy_is_made_once_and_made_again_when_the_entries_change(tmp_path: Path):
    source = tmp_path / "source"
    for part in ("site.yml", "entries/cuda-out-of-memory.yaml"):
        (source / part).parent.mkdir(parents=True, exist_ok=True)
        (source / part).write_bytes((REPO / part).read_bytes())
    first, digest = bundled_root(source)
    assert (first / ".complete").is_file() and (first / "entries" / "cuda-out-of-memory.yaml").is_file()
    assert bundled_root(source) == (first, digest)
    os.utime(source / "entries" / "cuda-out-of-memory.yaml", ns=(1, 1))
    second, other = bundled_root(source)
    assert other != digest and second != first and not first.exists()   # the old copy is removed


def test_a_project_or_a_site_answers_when_named_and_the_report_names_it(tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text(OOM)
    data = json.loads(run_cli("--root", str(REPO), "diagnose", "--json", str(log), cwd=tmp_path).stdout)
    assert data["encyclopedia"]["kind"] == "project" and data["encyclopedia"]["path"] == REPO.as_posix()
    here = json.loads(run_cli("diagnose", "--json", str(log), cwd=REPO).stdout)   # the current folder is a project
    assert here["encyclopedia"]["kind"] == "project"


def test_library_errors_are_typed_and_nothing_exits(tmp_path: Path):
    with pytest.raises(rootcause.NoEncyclopedia, match="signatures.json"):
        rootcause.Matcher(site=tmp_path)
    with pytest.raises(rootcause.NoEncyclopedia, match="no site.yml"):
        rootcause.Matcher(root=tmp_path)
    matcher = rootcause.Matcher(root=REPO)
    with pytest.raises(rootcause.UnreadableLog, match="no such file"):
        matcher.diagnose_file(tmp_path / "missing.log")
    broken = tmp_path / "cut.log.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 20)
    with pytest.raises(rootcause.UnreadableLog, match="compressed log"):
        matcher.diagnose_file(broken)
    assert issubclass(rootcause.UnreadableLog, rootcause.DiagnosisError)
    assert matcher.origin.kind == "project"


def test_every_report_row_is_read_by_name():
    encyclopedia = Encyclopedia.open(root=REPO)
    info = encyclopedia.infos["cuda-out-of-memory"]
    assert info.row() == {"title": info.title, "summary": info.summary, "url": "entries/cuda-out-of-memory/",
                          "fix": info.fix, "role": "cause", "persistent": None, "check": info.check,
                          "check_command": info.check_command}
    described = Origin("site", "/srv/site", "0.1.0", 3).describe()
    assert described == "the built site at /srv/site (3 entries)"


def test_bundled_source_is_the_checkout_for_an_editable_install():
    assert bundled_source() == REPO


# -- run ------------------------------------------------------------------------------------------
def test_run_starts_the_job_even_when_no_encyclopedia_can_be_loaded(tmp_path: Path):
    code = "import sys; print('trained', flush=True); sys.exit(4)"
    result = run_cli("run", "--site", str(tmp_path / "nowhere"), "--", sys.executable, "-c", code, cwd=tmp_path)
    assert result.returncode == 4
    assert result.stdout == b"trained\n"
    err = result.stderr.decode().splitlines()
    assert len(err) == 1 and err[0].startswith("rootcause run: no diagnosis for this run (") \
        and err[0].endswith("running the command anyway")


def test_run_in_an_empty_folder_diagnoses_with_the_bundled_entries(tmp_path: Path):
    report = tmp_path / "r.json"
    code = f"import sys; sys.stderr.write({OOM!r}); sys.exit(1)"
    result = run_cli("run", "--report", str(report), "--", sys.executable, "-c", code, cwd=tmp_path)
    assert result.returncode == 1
    data = json.loads(report.read_text())
    assert data["results"][0]["entry"] == "cuda-out-of-memory" and data["encyclopedia"]["kind"] == "bundled"


def test_run_does_not_wait_for_processes_the_command_left_behind(tmp_path: Path):
    started = time.monotonic()
    result = run_cli("run", "--", "sh", "-c", "sleep 30 & exit 3", cwd=tmp_path)
    assert result.returncode == 3
    assert time.monotonic() - started < 15


def test_the_lines_waiting_for_the_scanner_are_bounded_in_bytes():
    queue = LineQueue()
    line = b"x" * (900 << 10) + b"\n"
    fed = []

    def feed():
        for _ in range(200):   # 180 MB of long lines against a reader that reads nothing yet
            queue.feed(1, line)
            fed.append(1)

    import threading

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    time.sleep(1.0)
    assert len(fed) * len(line) <= SCAN_BACKLOG + len(line)   # the writer waits for the reader
    read = 0
    while writer.is_alive() or read < 200 * len(line):
        chunk = queue.read()
        if not chunk:
            break
        read += len(chunk)
        if read >= 200 * len(line):
            break
    writer.join(5)
    assert read == 200 * len(line) and len(fed) == 200


def test_one_ctrl_c_reaches_the_command_once_and_is_reported_as_yours(tmp_path: Path):
    """Under a terminal, Ctrl-C signals the foreground group: the command already has it, and
    `run` must not send it a second time (many trainers force-quit on a second Ctrl-C)."""
    counter = tmp_path / "count"
    code = ("import signal, sys, time\nn = [0]\n"
            "def got(*_):\n    n[0] += 1\n"
            f"    open({str(counter)!r}, 'w').write(str(n[0]))\n"
            "signal.signal(signal.SIGINT, got)\nprint('ready', flush=True)\n"
            "t = time.time()\nwhile time.time() - t < 3: time.sleep(0.05)\n"
            "print('RuntimeError: step failed after interrupt', flush=True)\nsys.exit(130)")
    master, slave = pty.openpty()
    report = tmp_path / "r.json"

    def foreground():   # a session of its own whose terminal is the pty: like a shell's job
        os.setsid()
        import fcntl
        import termios

        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([sys.executable, "-m", "rootcause", "--root", str(REPO), "run", "--report", str(report),
                             "--", sys.executable, "-c", code], stdin=slave, stdout=slave, stderr=slave,
                            preexec_fn=foreground, cwd=tmp_path)
    os.close(slave)
    out = b""
    while b"ready" not in out:
        out += os.read(master, 1 << 16)
    os.write(master, b"\x03")   # Ctrl-C typed at the terminal
    out += read_to_end(master)
    assert proc.wait(timeout=60) == 130
    os.close(master)
    assert counter.read_text() == "1"
    text = out.decode(errors="replace")
    assert "interrupted by you (Ctrl-C)" in text and "Traceback" not in text
    data = json.loads(report.read_text())
    assert data["command"]["interrupted_by_you"] is True and data["status"] == "none"


def test_a_sigint_sent_to_run_alone_is_forwarded_once(tmp_path: Path):
    counter = tmp_path / "count"
    code = ("import signal, sys, time\nn = [0]\n"
            "def got(*_):\n    n[0] += 1\n"
            f"    open({str(counter)!r}, 'w').write(str(n[0]))\n    sys.exit(130)\n"
            "signal.signal(signal.SIGINT, got)\nprint('ready', flush=True)\ntime.sleep(30)")
    proc = subprocess.Popen([sys.executable, "-m", "rootcause", "--root", str(REPO), "run", "--", sys.executable,
                             "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            cwd=tmp_path)
    assert proc.stdout.readline() == b"ready\n"
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and counter.read_text() == "1"
    assert b"interrupted by you (Ctrl-C)" in err


def test_each_cause_leads_with_how_to_confirm_it_then_the_fix(tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text(OOM)
    data = json.loads(run_cli("--root", str(REPO), "diagnose", "--json", str(log)).stdout)
    first = data["results"][0]
    assert first["check"] and first["check_command"]   # the entry's confirm step that has a command
    text = run_cli("--root", str(REPO), "diagnose", str(log)).stdout.decode()
    assert text.index("Confirm:") < text.index(first["check_command"].splitlines()[0].strip()) < text.index("Then fix:")
