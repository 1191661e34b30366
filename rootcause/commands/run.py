"""`rootcause run -- CMD ...`: run a training command and, if it fails, say why.

The command's output reaches the terminal unchanged and at once: through a pseudo-terminal when
rootcause's own output is one (so colours, progress bars and line buffering behave as if the
command ran alone), else through pipes, stdout to stdout and stderr to stderr. A copy of every
whole line goes, as it arrives, to the same scanner `diagnose` uses, in a thread; the scanner
keeps bounded evidence and the lines waiting for it are bounded in bytes, so memory stays flat
however long the run. When the command exits non-zero or is interrupted, the diagnosis goes to
standard error (and, with `--report`, the JSON report to a file). The exit status is the
command's (128 + N when a signal N ended it).

`run` never stands between a user and their job: when no encyclopedia can be loaded, or the
scanner fails, the command still runs, unchanged, after a one-line warning. Ctrl-C is the
user's decision, not a failure: the terminal delivers it to the command itself (it is in the
terminal's foreground group with us), so `run` does not send it again, stops reading the
output for the diagnosis at that moment (what follows is the job's teardown), and says
"interrupted by you". This is sudo's rule: SIGINT and SIGQUIT (the terminal's Ctrl-C and
Ctrl-\\) are relayed only when the terminal cannot have sent them to the command already, that
is when our process group is not the foreground group of our controlling terminal (`/dev/tty`,
whatever the standard streams were redirected to: `run ... </dev/null >log 2>&1` typed at a
terminal still gets the terminal's Ctrl-C). The command stays in our group, in the terminal's
foreground, so that it can read the terminal (a debugger's prompt) and Ctrl-Z stops the job.
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time

from ..matching.logline import MAX_LINE

#: how many bytes of output may wait for the scanner before the relay waits for it: far more
#: than any training job prints between two scans (the scanner reads >100 MB/s)
SCAN_BACKLOG = 64 << 20
#: a line longer than this keeps only its head, as `diagnose` reads a log (`scanner.LineBlocks`:
#: a line is read for its first MAX_LINE characters)
LINE_BYTES = 4 * MAX_LINE
READ = 1 << 16
#: once the command has exited, output still arriving from processes it left behind (which
#: hold its pipes open) is read for this long, then the relay stops
DRAIN_AFTER_EXIT = 0.5
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
#: what the terminal sends to its whole foreground group from a key (Ctrl-C, Ctrl-\)
FROM_KEYS = (signal.SIGINT, signal.SIGQUIT)


class LineQueue:
    """The scanner's side: whole lines from every stream, in the order they arrived, as a
    binary reader. Lines of two streams are never interleaved mid-line. At most SCAN_BACKLOG
    bytes wait; `close` (or `stop`, which drops what waits) ends the reader's stream."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._waiting = 0
        self._done = False
        self._changed = threading.Condition()
        self._partial: dict[int, bytes] = {}

    def feed(self, stream: int, data: bytes) -> None:
        if self._done:
            return
        head = self._partial.pop(stream, None)   # the start of an unfinished line of this stream
        if head is not None:
            newline = data.find(b"\n")
            if newline < 0:   # the line goes on: its head grows to LINE_BYTES, the rest is dropped
                self._partial[stream] = head if len(head) >= LINE_BYTES else head + data[:LINE_BYTES - len(head)]
                return
            self._put((head + data[:min(newline, LINE_BYTES)])[:LINE_BYTES] + b"\n")
            data = data[newline + 1:]
        cut = data.rfind(b"\n") + 1
        if cut < len(data):
            self._partial[stream] = data[cut:cut + LINE_BYTES]
        if cut:
            self._put(data[:cut])

    def _put(self, chunk: bytes) -> None:
        with self._changed:
            while self._waiting and self._waiting + len(chunk) > SCAN_BACKLOG and not self._done:
                self._changed.wait()
            if self._done:
                return
            self._chunks.append(chunk)
            self._waiting += len(chunk)
            self._changed.notify_all()

    def close(self) -> None:
        """The end of the output: the partial lines count as whole."""
        for rest in self._partial.values():
            self._put(rest + b"\n")
        self._partial.clear()
        with self._changed:
            self._done = True
            self._changed.notify_all()

    def stop(self) -> None:
        """No more lines for the scanner, not even those waiting (its reader died, or the user
        interrupted the job and what follows is teardown)."""
        with self._changed:
            self._done = True
            self._partial.clear()
            self._changed.notify_all()

    def read(self, _size: int = -1) -> bytes:
        with self._changed:
            while not self._chunks and not self._done:
                self._changed.wait()
            if not self._chunks:
                return b""
            chunk = self._chunks.pop(0)
            self._waiting -= len(chunk)
            self._changed.notify_all()
            return chunk


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run a training command; if it fails, diagnose its output",
                       description="Run CMD with its output passed through unchanged; when it exits non-zero or "
                       "is interrupted, print which failure its output shows. Put the command after --. "
                       "The entries come from --site, --root, the project in the current folder, or else the "
                       "encyclopedia bundled with rootcause.")
    p.add_argument("command", nargs="+", metavar="CMD", help="the command and its arguments, after --")
    p.add_argument("--report", metavar="FILE", help="also write the JSON report here when the command fails")
    p.add_argument("--site", help="use a built site's signature index instead of the project's entries")
    p.add_argument("--top", type=int, default=3, help="how many entries to report (default 3)")
    p.add_argument("--always", action="store_true", help="diagnose even when the command succeeds")
    p.add_argument("--no-pty", action="store_true", help="use pipes even when the output is a terminal")
    p.add_argument("--flight-recorder", metavar="DIR",
                   help="turn on PyTorch's Flight Recorder for the command (TORCH_FR_BUFFER_SIZE, dumps on a "
                        "NCCL timeout into DIR/rank_<N>) and, when it fails, read the dumps it left there")
    p.set_defaults(func=run)


#: what `--flight-recorder DIR` sets for the command; a variable the user set already is kept
FLIGHT_RECORDER_DEFAULTS = {
    "TORCH_FR_BUFFER_SIZE": "2000",          # the ring buffer: entries kept per process
    "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",  # its older name, for releases before TORCH_FR_*
    "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",       # NCCL's watchdog dumps every rank when one times out
}


def flight_recorder_env(folder: str) -> dict[str, str]:
    """The child's environment with the Flight Recorder on and its dumps going to `folder`."""
    env = dict(os.environ)
    for key, value in FLIGHT_RECORDER_DEFAULTS.items():
        env.setdefault(key, value)
    prefix = os.path.join(os.path.abspath(folder), "rank_")
    env["TORCH_FR_DUMP_TEMP_FILE"] = prefix          # the dump of rank N is written to PREFIX + N
    env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] = prefix  # its older name
    return env


def run(args) -> int:
    from .diagnose import EXIT_ERROR

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("rootcause run: name the command to run after --", file=sys.stderr)
        return EXIT_ERROR
    if args.top < 1:
        print("rootcause run: --top must be at least 1", file=sys.stderr)
        return EXIT_ERROR
    encyclopedia = _load(args)   # before starting, so that nothing is printed into the job's output
    env = None
    if args.flight_recorder:
        try:
            os.makedirs(args.flight_recorder, exist_ok=True)
            env = flight_recorder_env(args.flight_recorder)
        except OSError as exc:   # the job runs anyway, without the recorder's folder
            print(f"rootcause run: cannot make {args.flight_recorder} ({exc.strerror or exc}); running the command "
                  "without the Flight Recorder", file=sys.stderr)
    lines = LineQueue()
    result: dict = {}
    scanning = None
    if encyclopedia is not None:
        scanning = threading.Thread(target=_scan, args=(encyclopedia, lines, result), daemon=True)
        scanning.start()
    else:
        lines.stop()
    started = time.time() - 1
    try:
        outcome = _relay(command, lines, use_pty=not args.no_pty and sys.stdout.isatty(), env=env)
    except OSError as exc:
        lines.stop()
        print(f"rootcause run: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127 if exc.errno == errno.ENOENT else 126
    lines.close()
    if scanning is not None:
        scanning.join()
    status = outcome.status
    if status == 0 and not outcome.interrupted and not args.always:
        return 0
    if encyclopedia is None:
        return status
    sys.stdout.flush()
    print(file=sys.stderr)
    if "error" in result:
        print(f"rootcause run: no diagnosis: the scanner failed ({result['error']})", file=sys.stderr)
        return status
    data = encyclopedia.report(result["report"], args.top)
    data["command"] = {"argv": command, "exit_status": status, "interrupted": outcome.interrupted,
                       "interrupted_by_you": outcome.by_you}
    if env is not None:
        _add_dumps(encyclopedia, data, args.flight_recorder, started)
    if outcome.by_you and data["status"] == "none":
        print("rootcause run: interrupted by you (Ctrl-C); no failure in the output before it.", file=sys.stderr)
    else:
        if outcome.by_you:
            print("rootcause run: interrupted by you (Ctrl-C); the output before it shows:", file=sys.stderr)
        from .diagnose import print_text

        print_text(data, encyclopedia.base_url, file=sys.stderr)
    if args.report:
        try:
            with open(args.report, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=2)
                fh.write("\n")
        except OSError as exc:
            print(f"rootcause run: cannot write the report {args.report}: {exc.strerror or exc}", file=sys.stderr)
    return status


def _add_dumps(encyclopedia, data: dict, folder: str, since: float) -> None:
    """The dumps the job left in `folder` (written since it started: an older run's are not its
    own), as evidence in the report; a note when there are none or they cannot be read (the log's
    diagnosis stands either way)."""
    from ..encyclopedia import DiagnosisError, UnreadableLog, read_dumps, split_dumps, with_flight_recorder

    try:
        with os.scandir(folder) as listing:
            empty = next(listing, None) is None
        _, dumps = ([], []) if empty else split_dumps([folder])
        dumps = [p for p in dumps if p.stat().st_mtime >= since]
        if not dumps:
            raise UnreadableLog(f"{folder}: the command left no Flight Recorder dump there")
        with_flight_recorder(data, read_dumps(dumps), encyclopedia.infos)
    except (DiagnosisError, OSError) as error:
        message = getattr(error, "message", None) or f"{folder}: {getattr(error, 'strerror', None) or error}"
        data["flight_recorder_problem"] = message
        print(f"rootcause run: no Flight Recorder verdict: {message}", file=sys.stderr)


def _load(args):
    """The encyclopedia, or None after a one-line warning: the job runs either way."""
    from ..text import printable
    from .diagnose import open_encyclopedia

    try:
        return open_encyclopedia(args, verify=True)
    except Exception as exc:   # noqa: BLE001 - nothing may keep the job from starting
        why = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        print(printable(f"rootcause run: no diagnosis for this run ({why}); running the command anyway",
                        one_line=True), file=sys.stderr)
        return None


def _scan(encyclopedia, lines: LineQueue, result: dict) -> None:
    try:
        result["report"] = encyclopedia.scanner.scan_stream(lines)
    except Exception as exc:   # noqa: BLE001 - a scanner bug must not block or end the relay
        result["error"] = f"{type(exc).__name__}: {exc}"
        lines.stop()


class _Outcome:
    def __init__(self, status: int, interrupted: bool, by_you: bool):
        self.status, self.interrupted, self.by_you = status, interrupted, by_you


def _terminal_signals_us() -> bool:
    """Is this process in the foreground group of its controlling terminal? Then a Ctrl-C there
    reached the whole group, the command included, and sending it again would be a second
    Ctrl-C. Asked of `/dev/tty`, the controlling terminal itself: the standard streams may all
    be redirected while the terminal still signals the group."""
    try:
        terminal = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:   # no controlling terminal (ENXIO): a signal came from a process, not a key
        return False
    try:
        return os.tcgetpgrp(terminal) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(terminal)


def _relay(command: list[str], lines: LineQueue, use_pty: bool, env: dict | None = None) -> _Outcome:
    """Run the command, copy its output to ours and to the scanner. Our handlers are in place
    before the command starts: a key pressed while it starts is the command's, never a
    KeyboardInterrupt of ours."""
    outputs = {}
    state = {"interrupted": False, "by_you": False}
    started: dict = {}       # the child, once it exists
    pending: list[int] = []  # signals to forward that came before it did

    def forward(signum, _frame):
        state["interrupted"] = True
        if signum == signal.SIGINT:
            state["by_you"] = True
            lines.stop()   # what follows is the job's reaction to the Ctrl-C
        child = started.get("child")
        if child is None:
            pending.append(signum)   # (the terminal signalled its group before the command was in it)
            return
        if signum in FROM_KEYS and _terminal_signals_us():
            return   # the terminal signalled the command too: once is what the user asked for
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, *FORWARDED)}
    try:
        if use_pty:
            import fcntl
            import pty
            import termios

            master, slave = pty.openpty()
            try:
                size = fcntl.ioctl(sys.stdout.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
                fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
            except OSError:
                pass
            child = subprocess.Popen(command, stdout=slave, stderr=slave, close_fds=True, env=env)
            os.close(slave)
            outputs[master] = sys.stdout.buffer
        else:
            child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0, env=env)
            assert child.stdout is not None and child.stderr is not None   # both are pipes
            outputs[child.stdout.fileno()] = sys.stdout.buffer
            outputs[child.stderr.fileno()] = sys.stderr.buffer
    except BaseException:
        for s, handler in previous.items():
            signal.signal(s, handler)
        raise
    started["child"] = child
    for signum in pending:
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass
    if use_pty:
        def resize(_signum, _frame):
            try:
                size = fcntl.ioctl(sys.stdout.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
                fcntl.ioctl(master, termios.TIOCSWINSZ, size)
            except OSError:
                pass
        previous[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, resize)
    selector = selectors.DefaultSelector()
    for fd in outputs:
        selector.register(fd, selectors.EVENT_READ)
    try:
        exited_at = None
        while outputs:
            if exited_at is None and child.poll() is not None:
                exited_at = time.monotonic()
            if exited_at is not None and time.monotonic() - exited_at > DRAIN_AFTER_EXIT:
                break   # a process the command left behind holds the output open: not our job
            for key, _ in selector.select(timeout=0.1):
                fd = key.fd
                try:
                    data = os.read(fd, READ)
                except OSError as exc:   # a pty's master reads EIO once the child side is closed
                    if exc.errno not in (errno.EIO, errno.EBADF):
                        raise
                    data = b""
                if not data:
                    selector.unregister(fd)
                    if use_pty:   # the pipes are the Popen object's to close
                        os.close(fd)
                    del outputs[fd]
                    continue
                out = outputs[fd]
                try:
                    out.write(data)
                    out.flush()
                except BrokenPipeError:
                    outputs[fd] = _Discard()
                lines.feed(fd, data)
        status = child.wait()
    finally:
        selector.close()
        for s, handler in previous.items():
            signal.signal(s, handler)
        if use_pty:
            for fd in outputs:
                os.close(fd)
    interrupted = state["interrupted"]
    if status < 0:
        interrupted = interrupted or -status in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        status = 128 - status
    return _Outcome(status, interrupted, state["by_you"])


class _Discard:
    """Where output goes once our own reader has gone away (`rootcause run ... | head`)."""

    def write(self, _data: bytes) -> None:
        pass

    def flush(self) -> None:
        pass
