"""Command line: `rootcause build|check|serve|schema|diagnose|run|export|new` (also `python build.py ...`).

Each verb is one module of this package with `add_parser(subparsers)` and `run(args)`; this
module only assembles them, importing the verb that runs alone. Exit codes: 0 success; 1 the
input has problems (check/build) or no known failure was found (diagnose); 2 usage or
unreadable input. Bad input never produces a traceback.
"""

from __future__ import annotations

import argparse
import errno
import gc
import importlib
import os
import sys

#: the verbs, each the module of this package of the same name, in the order help lists them
VERBS = ("build", "check", "serve", "schema", "diagnose", "run", "export", "new")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with `only`, that verb's options in full and the others as
    bare names: a command imports its own module alone (the others' standard-library imports,
    subprocess and selectors for `run`, gzip for `diagnose`, cost each command 10 ms)."""
    parser = argparse.ArgumentParser(prog="rootcause", description="Build and check the rootcause encyclopedia of "
                                     "ML training failures, and diagnose training logs against it.")
    parser.add_argument("--root", help="project folder holding site.yml and entries/ (default: .; diagnose, run "
                        "and export use the bundled encyclopedia when the current folder is no project)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for verb in VERBS:
        if only is None or verb == only:
            importlib.import_module(f"{__package__}.{verb}").add_parser(sub)
        else:
            sub.add_parser(verb)
    return parser


def _command_in(argv: list[str]) -> str | None:
    """The verb `argv` names, when nothing before it asks for the whole parser (help, an unknown
    option): the first argument that is not `--root` or its value."""
    at = 0
    while at < len(argv):
        word = argv[at]
        if word == "--root":
            at += 2
        elif word.startswith("--root="):
            at += 1
        else:
            return word if word in VERBS else None
    return None


def main(argv: list[str] | None = None, ending: bool = False) -> int:
    """Run one command. `ending`: the process ends with it (`run_command`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(only=_command_in(argv))
    args = parser.parse_args(argv)
    args.root_named = args.root is not None   # diagnose, run and export fall back to the bundled entries
    args.root = args.root if args.root_named else "."
    if ending and args.command in ONE_SHOT:
        # a build pauses the cyclic garbage collector (`collector.paused`); when the pause ends,
        # the collector's first pass walks every object the build left, just before the process
        # exits
        gc.disable()
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        if exc.errno not in _OUT_OF_SPACE:
            raise
        # the disk (or the quota) is full: whatever was being written is cut short
        print(f"rootcause: cannot write: {exc.strerror} — free some space and run it again", file=sys.stderr)
        return 1


#: the commands that end when their work is done (not `serve` nor `run`,
#: which watch for as long as they are left running)
ONE_SHOT = ("build", "check")

_OUT_OF_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def exit_with(code: int) -> None:
    """End the process with `code` once its output is flushed, without the interpreter's teardown.

    Teardown frees every object the command made, one by one, which after a build of 10,000
    entries takes about a tenth of a second and changes nothing: every file was closed and
    every worker reaped before the command returned (mypy ends the same way). Only the command
    line's own entry points call this; `main` returns normally to a caller in the same process.
    """
    for stream in (sys.stdout, sys.stderr):
        if stream is None:   # started with it closed (`>&-`)
            continue
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):   # the reader went away, or the stream was closed
            pass
        except OSError:   # the output is lost (a full disk): as the interpreter's own exit would
            code = code or 120
    os._exit(code)


def run_command() -> None:
    """The `rootcause` command: `main`, then `exit_with` its exit code. Started with its output
    closed (`>&-`), it writes to nowhere rather than failing: the exit status still answers."""
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the process's life
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    exit_with(main(ending=True))


if __name__ == "__main__":
    run_command()
