"""One piece of work done in a forked child while this process goes on with the next.

Used where a step reads nothing the others make and is long enough to matter (walking the
inputs while the build's modules load; each of `serve`'s builds, whose allocations then go with
the child; storing the diagnosis index after the site is written). A forked child does it
beside the rest, on another core, and hands back a small answer through a pipe. Forking is not free: every memory page either process writes to afterwards is
copied, so it pays only for work that is long and touches little. It is an optimisation only:
where there is no `fork`, where the fork fails, or when the child fails in any way (an
exception, a signal, an answer that does not unpickle), the work is done here, as if nothing
had been forked.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Alongside(Generic[T]):
    """`work()` started in a forked child now; `result()` waits for its answer. The child runs
    nothing but `work` and ends without the interpreter's teardown (`os._exit`), so it flushes no
    buffer of this process and runs none of its exit handlers.

    `then`: more work the child does after it has answered (the answer is read as soon as it is
    whole); `wait()` waits for it to end. `failed`: what `result()` gives when the child fails,
    instead of doing the work here (where there is no `fork`, the work is always done here).
    """

    def __init__(self, work: Callable[[], T], then: Callable[[], object] | None = None,
                 failed: Callable[[], T] | None = None):
        self._work = work
        self._then = then
        self._failed = failed
        self._pid: int | None = None
        self._read = -1
        self._done = False
        self._answer: T | None = None
        if not hasattr(os, "fork"):
            return
        try:
            read, write = os.pipe()
        except OSError:
            return
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return
        if pid == 0:   # the child
            code = 1
            try:
                os.close(read)
                data = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
                view = memoryview(data)
                while view:
                    view = view[os.write(write, view):]
                os.close(write)   # the answer is whole: the parent reads it now
                code = 0
                if then is not None:
                    then()
            except BaseException:   # noqa: BLE001 (any failure: the parent does the work itself)
                pass
            finally:
                os._exit(code)
        os.close(write)
        self._pid, self._read = pid, read

    @property
    def forked(self) -> bool:
        """Is the work being done in a child (else `result()` does it here)?"""
        return self._pid is not None and not self._done

    def result(self) -> T:
        """The child's answer, or `work()`'s here when there was no child or it failed (asked
        again: the same answer)."""
        if self._done:
            return self._answer  # type: ignore[return-value]  # set with _done
        answer: T
        if self._pid is None:
            answer = self._work()
            if self._then is not None:
                self._then()
        else:
            chunks = []
            try:
                while chunk := os.read(self._read, 1 << 16):
                    chunks.append(chunk)
            finally:
                os.close(self._read)
                self._read = -1
                status = 0 if self._then is not None else self._reap()
            try:
                if status != 0:
                    raise ValueError("the child failed")
                answer = pickle.loads(b"".join(chunks))
            except Exception:   # noqa: BLE001 (failed or cut short: done here instead)
                if self._then is not None:
                    self.wait()
                answer = self._failed() if self._failed is not None else self._work()
        self._done, self._answer = True, answer
        return answer

    def wait(self) -> None:
        """Wait for the child to end (its `then` done)."""
        if self._pid is not None:
            self._reap()

    def close(self) -> None:
        """Reap the child without waiting for its answer to be wanted (an error ended the work
        it was for)."""
        if self._pid is not None:
            self._reap()

    def __del__(self):   # a rebuild that gave up without asking: its child is reaped all the same
        self.close()

    def _reap(self) -> int:
        if self._read >= 0:
            os.close(self._read)
            self._read = -1
        try:
            status = os.waitpid(self._pid, 0)[1]  # type: ignore[arg-type]  # reaped only with a child
        except ChildProcessError:
            status = -1
        self._pid = None
        return status


def quiet_worker() -> None:
    """The initializer of every pool of forked workers: Ctrl-C reaches the whole process group,
    and a worker waiting for its next task would print a traceback of multiprocessing's
    internals above the command's own "interrupted". It ends at once and silently instead; the
    process that forked it notices the pool broken and reports the interruption."""
    import signal

    signal.signal(signal.SIGINT, lambda _signal, _frame: os._exit(130))
