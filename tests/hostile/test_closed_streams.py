"""`diagnose` keeps its contract when its streams are not what a terminal gives it: standard
input closed (`<&-`), standard output closed (`>&-`), or a reader that stops early (`| head`, `| true`).
Each ends with a message or silently, never a traceback, and the exit status still answers
(0 a failure found, 1 none, 2 an error, 3 an error no entry explains)."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO

LOG = REPO / "bench" / "real_logs" / "runs" / "rank3_late_inplace.log"   # a known failure: status 0


def shell(command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_closed_standard_input_is_an_error_in_words():
    done = shell(f"'{sys.executable}' -m rootcause diagnose - <&-")
    assert done.returncode == 2
    assert "standard input is closed" in done.stderr
    assert "Traceback" not in done.stderr


def test_closed_standard_output_still_answers_by_exit_status():
    done = shell(f"'{sys.executable}' -m rootcause diagnose '{LOG}' >&-")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_a_reader_that_stops_early_does_not_change_the_answer():
    for flag in ("", "--json"):
        done = shell(f"'{sys.executable}' -m rootcause diagnose {flag} '{LOG}' | true; "
                     "echo \"status=${PIPESTATUS[0]}\"")
        assert done.stdout.strip().endswith("status=0"), (flag, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
