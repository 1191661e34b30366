"""`rootcause run`: output passed through unchanged, the command's exit status, a diagnosis when it fails."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, needs, read_to_end, tool

RUNS = REPO / "bench" / "real_logs" / "runs"


def child(code: str) -> list[str]:
    return ["--", sys.executable, "-c", code]


def run_cli(*args: str, cwd: Path = REPO, timeout: float = 120) -> subprocess.CompletedProcess:
    """As conftest's, but the command's own traceback passes through: only none of rootcause's
    (whose frames would name its package) may appear."""
    result = subprocess.run([sys.executable, "-m", "rootcause", *args], cwd=cwd, capture_output=True, timeout=timeout)
    for package in (b"rootcause/commands/", b"rootcause/matching/", b"rootcause/site/"):
        assert package not in result.stderr, result.stderr.decode()
    return result


def test_a_command_that_succeeds_passes_through_byte_for_byte_and_says_nothing():
    code = ("import sys\nsys.stdout.write('step 1 loss 2.5\\r\\x1b[32mok\\x1b[0m\\n' * 3 + 'no newline at the end')\n"
            "sys.stderr.write('warning: a \\u00e9 on stderr\\n')")
    result = run_cli("run", *child(code))
    assert result.returncode == 0
    assert result.stdout == b"step 1 loss 2.5\r\x1b[32mok\x1b[0m\n" * 3 + b"no newline at the end"
    assert result.stderr == "warning: a \u00e9 on stderr\n".encode()


def test_a_failing_command_keeps_its_exit_status_and_gets_a_diagnosis(tmp_path: Path):
    report = tmp_path / "report.json"
    code = ("import sys\nprint('[rank1]: step 3 loss 2.1', flush=True)\n"
            "print('[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
            "capacity of 79.15 GiB of which 1.21 GiB is free.', file=sys.stderr)\nsys.exit(7)")
    result = run_cli("run", "--report", str(report), *child(code))
    assert result.returncode == 7
    assert result.stdout == b"[rank1]: step 3 loss 2.1\n"   # stdout stays the command's own
    err = result.stderr.decode()
    assert err.startswith("[rank1]: torch.OutOfMemoryError")
    assert "cuda-out-of-memory" in err and "Rank 1 failed first" in err
    data = json.loads(report.read_text())
    assert data["status"] == "known" and data["results"][0]["entry"] == "cuda-out-of-memory"
    assert data["first_failure"]["rank"] == 1
    assert data["command"] == {"argv": [sys.executable, "-c", code], "exit_status": 7, "interrupted": False,
                               "interrupted_by_you": False}


def test_a_failure_no_entry_explains_is_named_as_such():
    code = "raise ValueError('the config has no key named warmup_ratio_v2')"
    result = run_cli("run", *child(code))
    assert result.returncode == 1
    assert "ValueError: the config has no key named warmup_ratio_v2" in result.stderr.decode()
    assert "Errors no entry explains" in result.stderr.decode()


def test_a_command_ended_by_a_signal_exits_like_a_shell_and_counts_as_interrupted(tmp_path: Path):
    report = tmp_path / "r.json"
    result = run_cli("run", "--report", str(report), *child("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)"))
    assert result.returncode == 128 + 15
    assert json.loads(report.read_text())["command"]["interrupted"] is True


def test_a_missing_command_is_reported_without_a_traceback():
    result = run_cli("run", "--", "no-such-command-for-rootcause")
    assert result.returncode == 127
    assert result.stderr.decode().strip() == "rootcause run: cannot run no-such-command-for-rootcause: No such file or directory"


def test_lines_are_scanned_whole_even_when_the_streams_interleave(tmp_path: Path):
    # stderr prints the error in two writes with stdout output in between: still one line
    code = ("import sys, time\nsys.stderr.write('RuntimeError: CUDA error: device-si'); sys.stderr.flush()\n"
            "print('step 9', flush=True); time.sleep(0.05)\nsys.stderr.write('de assert triggered\\n'); sys.exit(1)")
    report = tmp_path / "r.json"
    result = run_cli("run", "--report", str(report), *child(code))
    assert result.returncode == 1
    assert json.loads(report.read_text())["results"][0]["entry"] == "cuda-device-side-assert"


def test_under_a_terminal_the_command_gets_one_too():
    """Through a pseudo-terminal, so progress bars and colours behave as if it ran alone."""
    master, slave = pty.openpty()
    code = "import sys; print('tty' if sys.stdout.isatty() and sys.stderr.isatty() else 'pipe'); sys.exit(3)"
    proc = subprocess.Popen([sys.executable, "-m", "rootcause", "--root", str(REPO), "run", *child(code)],
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out = read_to_end(master)
    assert proc.wait(timeout=60) == 3
    os.close(master)
    assert out.splitlines()[0] == b"tty"
    assert b"Traceback" not in out


@needs("torchrun")
def test_a_real_torchrun_job_that_fails_on_one_rank(tmp_path: Path):
    report = tmp_path / "r.json"
    work = tmp_path / "workspace"
    shutil.copytree(RUNS / "scripts", work / "scripts")
    result = run_cli("--root", str(REPO), "run", "--report", str(report), "--", tool("torchrun"), "--nproc_per_node", "2",
                     "--tee", "3", "--master_port", "29871", "scripts/gradscaler_unscale_twice.py", "--fail-rank", "1",
                     cwd=work, timeout=240)
    assert result.returncode == 1
    out = result.stdout.decode()
    assert "[default0]:rank 0: step 0 loss" in out   # the job's own output, as torchrun printed it
    data = json.loads(report.read_text())
    assert data["status"] == "known"
    assert data["results"][0]["entry"] == "gradscaler-unscale-called-twice"
    assert data["first_failure"]["rank"] == 1
    assert data["command"]["exit_status"] == 1
    assert "gradscaler-unscale-called-twice" in result.stderr.decode()


def test_a_signal_that_comes_while_the_command_starts_is_the_commands(monkeypatch):
    """A Ctrl-C that reaches `run` while it starts the command (before the child exists) is not a
    KeyboardInterrupt of `run`'s own: its handler is in place first, and the signal goes to the
    command once it runs (here, one that would otherwise sleep for a minute)."""
    import signal as signals

    from rootcause.commands import run

    real = subprocess.Popen

    def starting(*args, **kwargs):
        os.kill(os.getpid(), signals.SIGINT)   # arrives before the child exists
        return real(*args, **kwargs)

    monkeypatch.setattr(run.subprocess, "Popen", starting)
    before = signals.getsignal(signals.SIGINT)
    started = time.monotonic()
    outcome = run._relay([sys.executable, "-c", "import time; time.sleep(60)"], run.LineQueue(), use_pty=False)
    assert outcome.interrupted and outcome.by_you
    assert outcome.status != 0 and time.monotonic() - started < 30   # the command got the Ctrl-C
    assert signals.getsignal(signals.SIGINT) is before
