"""`rootcause serve`: build, serve on 127.0.0.1, rebuild on change, reload the open page.

The built files are served as they are; HTML responses get one extra
`<script src="/__rootcause/livereload.js">` (an external script, so the pages still work under a
`script-src 'self'` policy). That script listens to a server-sent event stream and reloads the
page after each successful rebuild. A failed rebuild prints every problem in the terminal and
keeps serving the last good site. The HTTP side lives in `livereload`, imported only here, so
that the other verbs (a short `diagnose` above all) do not pay for `http.server`.

The server keeps the last build's results in memory (`memo.Kept`: small ones, each entry's
share of the checks across entries, of the index and of the pages, every page's hash). Each
build runs in a forked child that inherits them and reruns the pipeline over them: an edit
recomputes the changed entry, the stages whose inputs it changed and the pages it reaches, and
rewrites in place only the files whose bytes changed. What the build allocates goes with the
child (hundreds of MB for a first build at 10,000 entries: bench/README.md; CPython's allocator
would otherwise keep it for the life of the server); it sends back only the results it added, and answers before
it stores the diagnosis index, which the next build waits for.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import RootcauseError
from ..text import printable

#: the child of the last build, until it has finished what it does after answering
_last: list = []


def _build_apart(root: Path, out: Path | None, progress: bool, kept, walked: tuple | None = None) -> tuple[str, Any]:
    """One build in a forked child (`forked.Alongside`; done here where there is no fork), over
    the results `kept` (`memo.Kept`) holds, which get the results the build added.
    `walked`: the up-to-date test's walk of the inputs (`builder.up_to_date`), not made again.
    Returns ("built", BuildResult), ("failed", its diagnostics), ("changed", None) when an entry
    changed while it was being built, or ("unexpected", a message)."""
    from ..entries.catalog import Stale
    from ..forked import Alongside
    from ..site.builder import build
    from ..site.write import output_intact

    deferred: list = []
    checking = _output_check(root, out, kept)
    checked = None
    server = os.getpid()
    told: list = []   # (the child's: its end of the second pipe is closed once told)
    if checking is not None:
        where, state, (answer, _answering), (_held, holding) = checking

        def held(use: bool) -> None:
            """Tell the server this build holds the output's lock (and whether it wants the test)."""
            if os.getpid() != server and not told:
                told.append(use)
                try:
                    os.write(holding, b"1" if use else b"0")
                except OSError:
                    pass
                os.close(holding)

        def answered() -> bool:
            if os.getpid() == server:   # (no fork: the build runs here, under the lock)
                return output_intact(where, state)
            try:
                return os.read(answer, 1) == b"1"   # (b"": the server ended without one)
            except OSError:
                return False

        checked = (where, state, answered, held)

    def work() -> tuple[str, Any, Any]:
        if checking is not None and os.getpid() != server:
            os.close(checking[2][1])   # the child's copy of the end the server answers on
            os.close(checking[3][0])   # and of the end the server hears `held` on
        try:
            result = build(root, out=out, progress=progress, walked=walked, kept=kept, deferred=deferred,
                           checked=checked)
            return "built", result, kept.changes()
        except RootcauseError as error:
            return "failed", error.diagnostics, kept.changes()
        except Stale:
            return "changed", None, kept.changes()
        except Exception as exc:  # noqa: BLE001 - a bug must not take the last good site down with it
            return "unexpected", f"{type(exc).__name__}: {exc}", kept.changes()
        finally:
            if checking is not None and os.getpid() != server and not told:
                told.append(False)
                os.close(checking[3][1])   # (a build that never took the lock: the server stops waiting)

    def later() -> None:
        for job in deferred:
            job()

    def died() -> tuple[str, Any, Any]:
        return "unexpected", "the build's process ended without an answer", None

    while _last:   # what the last build does after answering (the diagnosis index) is done first
        _last.pop().wait()
    job = Alongside(work, then=later, failed=died)
    if checking is not None:
        # the output tested here while the child builds, once it holds the output's lock (its
        # first write waits for the answer); without a child (no fork) the build tests it itself
        where, state, (answer, answering), (hearing, holding) = checking
        os.close(holding)
        try:
            if job.forked:
                wanted = os.read(hearing, 1) == b"1"   # (b"": the child ended or gave up first)
                if wanted:
                    try:
                        intact = output_intact(where, state)
                    except Exception:  # noqa: BLE001 - any doubt: the child writes a whole new site
                        intact = False
                    os.write(answering, b"1" if intact else b"0")
        except OSError:
            pass
        finally:
            os.close(answering)
            os.close(hearing)
    outcome, result, changes = job.result()
    if checking is not None:
        os.close(checking[2][0])
    _last.append(job)
    if changes is not None:
        kept.apply(changes)
    else:   # nothing is known of what the child did: the output may be half written
        kept.clear()
    from ..collector import release_free_memory

    release_free_memory()
    return outcome, result


def _output_check(root: Path, out: Path | None, kept) -> tuple | None:
    """(output folder, the state `kept` holds of it, a pipe for the answer, a pipe for the child
    to say it holds the output's lock) for the server to test that folder while its child builds
    into it (`builder.build`'s `checked`); None without a state (the child then writes a whole
    new folder) or when the folder cannot be told here."""
    from ..site.builder import kept_state
    from ..site.stamps import quick_settings

    try:
        output = quick_settings(root).get("output", "site")
        if out is None and not isinstance(output, str):
            return None
        where = (out or root / output).resolve()
        state = kept_state(kept, where)
        if state is None:
            return None
        return where, state, os.pipe(), os.pipe()
    except (OSError, ValueError, RuntimeError):
        return None


def _rebuild(root: Path, out: Path | None, failed: dict, kept, changed: set[str] | None = None) -> bool:
    """Build if anything changed; a failed build is tried again only once its inputs change.

    The up-to-date test runs here (once a second and on every change), the build itself in a
    child. `changed`: the paths the watcher reported, the only inputs the test stats again
    (`builder.up_to_date`); None (a tick with nothing reported): every input, so that a change
    the watcher missed is built a second later. Whatever an edit does to the project, the server stays up with the last good site:
    bad input is reported as positioned errors, and anything unforeseen as one line, never a
    traceback that ends the process."""
    from ..site.builder import up_to_date

    try:
        fresh, walked = up_to_date(root, out, kept, changed)
        inputs = walked[0]
    except Exception as exc:  # noqa: BLE001 - the server must outlive any edit
        fresh, walked, inputs = False, None, f"unreadable: {exc!r}"
    if fresh or failed.get("inputs") == inputs:
        return False
    outcome, result = _build_apart(root, out, progress=False, kept=kept, walked=walked)
    if outcome == "changed":
        return False   # built again at the next tick, from the inputs as they are then
    if outcome != "built":
        failed["inputs"] = inputs
        if outcome == "failed":
            for d in result:
                print(d, file=sys.stderr)
            print(f"build failed: {len(result)} problem(s); still serving the last good site", file=sys.stderr,
                  flush=True)
        else:
            print(printable(f"build failed unexpectedly ({result}); still serving the last good site — please "
                            "report this", one_line=True), file=sys.stderr, flush=True)
        return False
    failed.pop("inputs", None)
    if result.up_to_date:
        return False
    print(result.summary(), flush=True)
    return True


def _watched(root: Path) -> list[Path]:
    from ..config import load_config
    from ..site.render import theme_folder

    paths = [root / "site.yml", root / "entries", root / "content", theme_folder()]
    config, _ = load_config(root)
    if config and config.theme:
        paths.append(root / config.theme)
    return [p for p in paths if p.exists()]


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="build, serve on 127.0.0.1, rebuild and reload on every change")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--open", action="store_true", help="open the site in a web browser")
    p.set_defaults(func=run)


def run(args) -> int:
    return serve(Path(args.root), host=args.host, port=args.port, open_browser=args.open)


def serve(root: Path, host: str = "127.0.0.1", port: int = 8000, open_browser: bool = False,
          out: Path | None = None) -> int:
    # what every build needs, imported once here: each build's child starts with it
    from ..memo import Kept
    from ..site import builder, render  # noqa: F401
    from .livereload import BuildState, Handler, Server

    root = root.resolve()
    failed: dict = {}  # the inputs of the last failed build, not tried again until they change
    kept = Kept()
    outcome, first = _build_apart(root, out, progress=True, kept=kept)
    if outcome != "built":
        for d in first if outcome == "failed" else [printable(f"build failed unexpectedly ({first})")]:
            print(d, file=sys.stderr)
        print("build failed: fix the problems above, then run serve again", file=sys.stderr)
        return 1
    print(first.summary(), flush=True)
    site = first.out
    state = BuildState()
    handler = partial(type("Handler", (Handler,), {"state": state}), directory=str(site))
    try:
        server = Server((host, port), handler)
    except OSError as exc:
        print(f"cannot listen on {host}:{port}: {exc.strerror}; try --port {port + 1}", file=sys.stderr)
        return 2
    url = f"http://{host}:{server.server_address[1]}/"
    print(f"serving {site} at {url} — rebuilding on changes; Ctrl-C to stop", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    from watchfiles import watch

    try:
        # Wake on every change, and once a second regardless: a change made before the watcher
        # was in place (or one it did not report) is still picked up, because the test on a
        # tick with nothing reported stats every input, and the build itself compares inputs
        # and does nothing when none changed. A tick with changes stats only the paths reported.
        for changes in watch(*_watched(root), debounce=200, step=50, rust_timeout=1000, yield_on_timeout=True):
            started = time.perf_counter()
            if _rebuild(root, out, failed, kept, {path for _change, path in changes} or None):
                state.bump()
                print(f"reloaded open pages ({time.perf_counter() - started:.2f}s)", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        while _last:
            _last.pop().wait()
    return 0
