"""The HTTP side of `rootcause serve`: the built files as they are, HTML with one extra
`<script src="/__rootcause/livereload.js">`, and the server-sent event stream that tells open
pages to reload after each successful rebuild."""

from __future__ import annotations

import http.server
import socketserver
import threading
from pathlib import Path

LIVERELOAD_JS = b"""(function () {
  var source = new EventSource("/__rootcause/events");
  source.addEventListener("reload", function () { window.location.reload(); });
})();
"""
INJECT = b'<script src="/__rootcause/livereload.js"></script>'


class BuildState:
    """The generation number of the served site; waiters wake when it changes."""

    def __init__(self):
        self.generation = 0
        self.changed = threading.Condition()

    def bump(self) -> None:
        with self.changed:
            self.generation += 1
            self.changed.notify_all()

    def wait(self, seen: int, timeout: float) -> int:
        with self.changed:
            self.changed.wait_for(lambda: self.generation != seen, timeout=timeout)
            return self.generation


class Handler(http.server.SimpleHTTPRequestHandler):
    state: BuildState

    def log_message(self, format, *args):
        pass  # quiet: the terminal shows builds, not every request

    def do_GET(self):
        if self.path == "/__rootcause/livereload.js":
            return self._send(200, "text/javascript", LIVERELOAD_JS)
        if self.path == "/__rootcause/events":
            return self._events()
        path = self.translate_path(self.path)
        if Path(path).is_dir():
            index = Path(path) / "index.html"
            if not self.path.split("?")[0].endswith("/"):
                return super().do_GET()  # the stdlib redirects to the trailing slash
            path = str(index)
        if path.endswith(".html") and Path(path).is_file():
            body = Path(path).read_bytes().replace(b"</body>", INJECT + b"</body>", 1)
            return self._send(200, "text/html; charset=utf-8", body)
        if not Path(path).exists():
            not_found = Path(self.directory) / "404.html"
            if not_found.is_file():
                body = not_found.read_bytes().replace(b"</body>", INJECT + b"</body>", 1)
                return self._send(404, "text/html; charset=utf-8", body)
        return super().do_GET()

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _events(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        seen = self.state.generation
        try:
            while True:
                now = self.state.wait(seen, timeout=15)
                if now != seen:
                    seen = now
                    self.wfile.write(b"event: reload\ndata: %d\n\n" % now)
                else:
                    self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # the listen backlog: socketserver's default of 5 left a page's burst of requests (or a few
    # hundred at once) waiting for SYN retries, some past 30 s; the kernel caps it at somaxconn
    request_queue_size = 1024
