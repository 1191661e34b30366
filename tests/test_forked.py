"""`rootcause.forked.Alongside`: work done in a forked child, and done here instead whenever the
child cannot give its answer."""

from __future__ import annotations

import os
import signal

import pytest

from rootcause.forked import Alongside


def where() -> int:
    return os.getpid()


def test_the_answer_comes_from_the_child_and_is_given_once():
    calls = []

    def work():
        calls.append(1)   # in the parent only if it runs here
        return where(), "x" * 200_000   # more than a pipe holds at once

    job = Alongside(work)
    pid, text = job.result()
    assert pid != os.getpid() and text == "x" * 200_000 and calls == []
    assert job.result() == (pid, text) and calls == []   # asked again: the same answer
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)   # reaped


def test_a_child_that_fails_or_dies_leaves_the_work_to_this_process():
    parent = os.getpid()

    def raises():
        if os.getpid() != parent:
            raise RuntimeError("only in the child")
        return where()

    assert Alongside(raises).result() == parent

    def dies():
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return where()

    assert Alongside(dies).result() == parent

    def unpicklable():
        return (lambda: None) if os.getpid() != parent else where()

    assert Alongside(unpicklable).result() == parent


def test_without_fork_the_work_is_done_here(monkeypatch):
    def no_fork():
        raise OSError("fork refused")

    monkeypatch.setattr(os, "fork", no_fork)
    assert Alongside(where).result() == os.getpid()


def test_close_reaps_a_child_whose_answer_is_not_wanted():
    job = Alongside(where)
    pid = job._pid
    job.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    job.close()   # twice: nothing left to do


def test_a_pool_worker_ends_quietly_on_ctrl_c():
    """Ctrl-C reaches every process of the group: a worker of a build's pool (`quiet_worker`) ends
    at once with no traceback of its own, and its pool is seen broken, which the build handles."""
    import subprocess
    import sys

    script = """
import multiprocessing, os, signal, sys, time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from rootcause.forked import quiet_worker
with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"), initializer=quiet_worker) as pool:
    worker = pool.submit(os.getpid).result()
    os.kill(worker, signal.SIGINT)
    time.sleep(0.5)
    try:
        pool.submit(os.getpid).result(timeout=10)
    except BrokenProcessPool:
        print("broken")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "broken"
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr
