"""A static file server in its own process, for the browser benchmarks.

Served from a thread of the benchmark's own process, every response waited for the GIL that
Playwright's driver holds, and Python's handler speaks HTTP/1.0 (a new connection per file) with
Nagle's algorithm on: 10-20 ms a file that no static host charges. Here each benchmark gets its
own process, HTTP/1.1 keep-alive (as browsers and hosts use) and TCP_NODELAY, so what is measured
is the page, not the harness.

    python bench/_static_server.py FOLDER     # prints the port, then serves until killed
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import subprocess
import sys
from pathlib import Path


class _Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def static_server(folder: Path):
    """Serve FOLDER on 127.0.0.1 from a child process; yields the base URL ("http://127.0.0.1:PORT/")."""
    child = subprocess.Popen([sys.executable, __file__, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())
        yield f"http://127.0.0.1:{port}/"
    finally:
        child.terminate()
        child.wait(10)


def main() -> None:
    handler = functools.partial(_Handler, directory=sys.argv[1])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
