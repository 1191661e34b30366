"""`rootcause serve`: build, serve on 127.0.0.1, rebuild on change, reload the open page.

The built files are served as they are; HTML responses get one extra
`<script src="/__rootcause/livereload.js">` (an external script, so the pages still work under a
`script-src 'self'` policy). That script listens to a server-sent event stream and reloads the
page after each successful rebuild. A failed rebuild prints every problem in the terminal and
keeps serving the last good site. The HTTP side lives in `livereload`, imported only here, so
that the other verbs (a short `diagnose` above all) do not pay for `http.server`.
"""

from __future__ import annotations

import sys
import threading
import time
from functools import partial
from pathlib import Path

from ..errors import RootcauseError
from ..text import printable

def _rebuild(root: Path, out: Path | None, memo: dict) -> bool:
    """Build if anything changed; a failed build is retried only once its inputs change again.

    Whatever an edit does to the project, the server stays up with the last good site: bad input
    is reported as positioned errors, and anything unforeseen as one line, never a traceback that
    ends the process."""
    from ..site.builder import build
    from ..site.stamps import input_fingerprint, quick_settings

    try:
        inputs = input_fingerprint(root, quick_settings(root))
    except Exception as exc:  # noqa: BLE001 - the server must outlive any edit
        inputs = f"unreadable: {exc!r}"
    if memo.get("failed_inputs") == inputs:
        return False
    try:
        result = build(root, out=out, progress=False, memo=memo)
    except RootcauseError as error:
        memo["failed_inputs"] = inputs
        for d in error.diagnostics:
            print(d, file=sys.stderr)
        print(f"build failed: {len(error.diagnostics)} problem(s); still serving the last good site",
              file=sys.stderr, flush=True)
        return False
    except Exception as exc:  # noqa: BLE001 - a bug must not take the last good site down with it
        memo.clear()  # what it held may be half-updated
        memo["failed_inputs"] = inputs
        print(printable(f"build failed unexpectedly ({type(exc).__name__}: {exc}); still serving the last good "
                        "site — please report this", one_line=True), file=sys.stderr, flush=True)
        return False
    memo.pop("failed_inputs", None)
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
    from ..site.builder import build
    from .livereload import BuildState, Handler, Server

    root = root.resolve()
    memo: dict = {}  # parsed entries and rendered pages, reused across rebuilds
    try:
        first = build(root, out=out, progress=True, memo=memo)
    except RootcauseError as error:
        for d in error.diagnostics:
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
        # was in place is still picked up, because the build itself compares inputs and does
        # nothing when none changed.
        for _changes in watch(*_watched(root), debounce=200, step=50, rust_timeout=1000, yield_on_timeout=True):
            started = time.perf_counter()
            if _rebuild(root, out, memo):
                state.bump()
                print(f"reloaded open pages ({time.perf_counter() - started:.2f}s)", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    return 0
