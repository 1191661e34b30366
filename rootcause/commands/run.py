"""`rootcause run -- CMD ...`: run a training command and, if it fails, say why.

The command's output reaches the terminal unchanged and at once: through a pseudo-terminal when
rootcause's own output is one (so colours, progress bars and line buffering behave as if the
command ran alone), else through pipes, stdout to stdout and stderr to stderr. A copy of every
whole line goes, as it arrives, to the same scanner `diagnose` uses, in a thread; the scanner
keeps bounded evidence, so memory stays flat however long the run. When the command exits
non-zero or is interrupted, the diagnosis goes to standard error (and, with `--report`, the JSON
report to a file). The exit status is the command's (128 + N when a signal N ended it).
"""

from __future__ import annotations

import errno
import json
import os
import queue
import selectors
import signal
import subprocess
import sys
import threading

#: how far the scanner may fall behind before the relay waits for it: far more than any
#: training job prints between two scans (the scanner reads >100 MB/s)
SCAN_BACKLOG = 64 << 20
READ = 1 << 16
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


class LineQueue:
    """The scanner's side: whole lines from every stream, in the order they arrived, as a
    binary reader. Lines of two streams are never interleaved mid-line."""

    def __init__(self) -> None:
        self._chunks: queue.Queue[bytes | None] = queue.Queue()
        self._room = threading.Semaphore(SCAN_BACKLOG >> 16)
        self._partial: dict[int, bytes] = {}

    def feed(self, stream: int, data: bytes) -> None:
        data = self._partial.pop(stream, b"") + data
        cut = data.rfind(b"\n") + 1
        if cut < len(data):
            self._partial[stream] = data[cut:][-(1 << 20):]   # a line longer than 1 MiB keeps its end
        if cut:
            self._room.acquire()
            self._chunks.put(data[:cut])

    def close(self) -> None:
        for rest in self._partial.values():
            self._room.acquire()
            self._chunks.put(rest + b"\n")
        self._partial.clear()
        self._chunks.put(None)

    def read(self, _size: int = -1) -> bytes:
        chunk = self._chunks.get()
        if chunk is None:
            self._chunks.put(None)
            return b""
        self._room.release()
        return chunk


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run a training command; if it fails, diagnose its output",
                       description="Run CMD with its output passed through unchanged; when it exits non-zero or "
                       "is interrupted, print which failure its output shows. Put the command after --.")
    p.add_argument("command", nargs="+", metavar="CMD", help="the command and its arguments, after --")
    p.add_argument("--report", metavar="FILE", help="also write the JSON report here when the command fails")
    p.add_argument("--site", help="use a built site's signature index instead of the project's entries")
    p.add_argument("--top", type=int, default=3, help="how many entries to report (default 3)")
    p.add_argument("--always", action="store_true", help="diagnose even when the command succeeds")
    p.add_argument("--no-pty", action="store_true", help="use pipes even when the output is a terminal")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..matching.ranking import rank
    from ..matching.scanner import Scanner
    from .diagnose import EXIT_ERROR, full_report, load_sources, print_text

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("rootcause run: name the command to run after --", file=sys.stderr)
        return EXIT_ERROR
    if args.top < 1:
        print("rootcause run: --top must be at least 1", file=sys.stderr)
        return EXIT_ERROR
    try:   # load before starting: a project with errors must not cost a training run
        signatures, infos, consequences, base, index = load_sources(args)
    except SystemExit as stop:
        return int(stop.code or EXIT_ERROR)
    lines = LineQueue()
    scanner = Scanner(signatures)
    result: dict = {}
    scanning = threading.Thread(target=lambda: result.update(report=scanner.scan_stream(lines)), daemon=True)
    scanning.start()
    try:
        status, interrupted = _relay(command, lines, use_pty=not args.no_pty and sys.stdout.isatty())
    except OSError as exc:
        lines.close()
        print(f"rootcause run: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127 if exc.errno == errno.ENOENT else 126
    lines.close()
    scanning.join()
    if status == 0 and not interrupted and not args.always:
        return 0
    data = full_report(rank(result["report"], consequences, infos), infos, index, args.top)
    data["command"] = {"argv": command, "exit_status": status, "interrupted": interrupted}
    sys.stdout.flush()
    print(file=sys.stderr)
    print_text(data, base, file=sys.stderr)
    if args.report:
        try:
            with open(args.report, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=2)
                fh.write("\n")
        except OSError as exc:
            print(f"rootcause run: cannot write the report {args.report}: {exc.strerror or exc}", file=sys.stderr)
    return status


def _relay(command: list[str], lines: LineQueue, use_pty: bool) -> tuple[int, bool]:
    """Run the command, copy its output to ours and to the scanner; (exit status, interrupted)."""
    outputs = {}
    if use_pty:
        import pty
        import termios
        import fcntl

        master, slave = pty.openpty()
        try:
            size = fcntl.ioctl(sys.stdout.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
            fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
        except OSError:
            pass
        child = subprocess.Popen(command, stdout=slave, stderr=slave, close_fds=True)
        os.close(slave)
        outputs[master] = sys.stdout.buffer
    else:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        outputs[child.stdout.fileno()] = sys.stdout.buffer
        outputs[child.stderr.fileno()] = sys.stderr.buffer
    interrupted = False

    def forward(signum, _frame):
        nonlocal interrupted
        interrupted = True
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    # Ctrl-C reaches the command from the terminal (same process group); rootcause stays to report
    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, *FORWARDED)}
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
        while outputs:
            for key, _ in selector.select():
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
        for s, handler in previous.items():
            signal.signal(s, handler)
    if status < 0:
        interrupted = interrupted or -status in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        status = 128 - status
    return status, interrupted


class _Discard:
    """Where output goes once our own reader has gone away (`rootcause run ... | head`)."""

    def write(self, _data: bytes) -> None:
        pass

    def flush(self) -> None:
        pass
