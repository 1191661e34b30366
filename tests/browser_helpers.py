"""Shared fixtures for the browser and parity tests: a small project, its built site, a local server.

The project is built once per test session into a temporary folder: site.yml copied from the
repository (without `healthy_logs`), one real entry copied from entries/, and four small entries
written here. Two of them are declared cause and consequence (`causes` / `caused-by`), one has a
multi-line signature (`lines:`) and one an `unless` veto, so the cascade ranking and every
signature form can be exercised in the browser and compared between Python and JavaScript.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from rootcause.site.render import CONTENT_SECURITY_POLICY

REPO = Path(__file__).resolve().parent.parent
ASSETS = REPO / "theme" / "assets"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"

#: The Content-Security-Policy the pages must work under (no inline script or style, nothing from
#: elsewhere): the one every page carries in its <meta>, sent as a header as well.
CSP = CONTENT_SECURITY_POLICY

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]

COPIED_ENTRY = "zero3-state-dict-saved-without-gathering"

ENTRIES: dict[str, str] = {
    "cuda-out-of-memory": r'''
id: cuda-out-of-memory
title: "CUDA out of memory. Tried to allocate ...: the GPU ran out of memory"
summary: >
  PyTorch's caching allocator could not get the block it needed from the GPU. Reduce the
  per-GPU working set, or set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` when much memory
  is reserved but unallocated.
category: memory
systems: [cuda, pytorch]
phase: forward-backward
severity: high
role: cause
tags: [oom]
signatures:
  - pattern: "CUDA out of memory. Tried to allocate {float} {word}"
    source: c10/cuda/CUDACachingAllocator.cpp, `DeviceCachingAllocator::malloc`.
    examples:
      - log: |
          [rank3]: Traceback (most recent call last):
          [rank3]:   File "/workspace/train.py", line 181, in main
          [rank3]:     loss.backward()
          [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 77.93 GiB memory in use. Of the allocated memory 75.02 GiB is allocated by PyTorch, and 1.37 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
        assembled: "a fixture written for the tests (tests/browser_helpers.py)"
    counter_examples:
      - "[2025-03-02 10:14:07,113] [WARNING] [stage3.py:2140:step] 4 pytorch allocator cache flushes since last step. this happens when there is high memory pressure and is detrimental to performance."
symptoms:
  - observed: One rank raises `torch.OutOfMemoryError` and the job stops.
    why: The live tensors exceed the device's capacity.
root_cause: |
  The caching allocator freed its cache and retried; the device still had no block of the
  requested size.
confirm:
  - step: Watch memory while the step runs.
    command: nvidia-smi --query-gpu=memory.used,memory.total --format=csv -l 1
fix:
  - step: Halve the micro-batch size and double gradient accumulation.
  - step: When reserved-but-unallocated memory is large, allow expandable segments.
    command: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
related:
  - id: nccl-watchdog-collective-timeout
    relation: causes
reviewed: 2026-01-15
''',
    "nccl-watchdog-collective-timeout": r'''
id: nccl-watchdog-collective-timeout
title: "NCCL watchdog: Watchdog caught collective operation timeout"
summary: >
  A collective did not complete within the process-group timeout, so the NCCL watchdog took the
  process down. Almost always a consequence: find the rank that failed first.
category: communication
systems: [nccl, pytorch]
phase: communication
severity: critical
role: consequence
tags: [timeout, watchdog, collectives]
signatures:
  - pattern: "Watchdog caught collective operation timeout: WorkNCCL(SeqNum={int}, OpType={name}{any}) ran for {int} milliseconds before timing out."
    source: torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, `WorkNCCL::checkTimeout`.
    examples:
      - log: |
          [rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
          [rank1]:[E626 06:24:44.906512215 ProcessGroupNCCL.cpp:630] [Rank 1] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
        assembled: "a fixture written for the tests (tests/browser_helpers.py)"
    counter_examples:
      - "[rank0]:[W1104 02:58:11.100215770 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 0]  using GPU 0 to perform barrier as devices used by this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect."
root_cause: |
  The watchdog thread polls each collective; one that runs longer than the timeout is aborted.
fix:
  - step: Find the rank that failed first and fix that failure.
  - step: Record the collectives of every rank.
    command: export TORCH_NCCL_TRACE_BUFFER_SIZE=2000
related:
  - id: cuda-out-of-memory
    relation: caused-by
reviewed: 2026-01-15
''',
    "torchrun-child-killed-sigkill": r'''
id: torchrun-child-killed-sigkill
title: "torchrun ChildFailedError: Signal 9 (SIGKILL) received by PID"
summary: >
  A worker process was killed with SIGKILL, almost always by the kernel's OOM killer because the
  host ran out of RAM. Check `dmesg` for the kill and reduce host memory use.
category: memory
systems: [torchrun, pytorch]
phase: data-loading
severity: critical
role: cause
tags: [host-memory, signals]
signatures:
  - lines:
      - pattern: "Root Cause (first observed failure):"
      - pattern: "traceback : Signal 9 (SIGKILL) received by PID {int}"
    within: 12
    source: torch/distributed/elastic/multiprocessing/errors/__init__.py, `ChildFailedError.format_msg`.
    examples:
      - log: |
          torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
          ============================================================
          train.py FAILED
          ------------------------------------------------------------
          Failures:
            <NO_OTHER_FAILURES>
          ------------------------------------------------------------
          Root Cause (first observed failure):
          [0]:
            time      : 2024-05-14_10:31:07
            host      : gpu-node-3
            rank      : 1 (local_rank: 1)
            exitcode  : -9 (pid: 2382)
            error_file: <N/A>
            traceback : Signal 9 (SIGKILL) received by PID 2382
          ============================================================
        assembled: "a fixture written for the tests (tests/browser_helpers.py)"
    counter_examples:
      - |
        Root Cause (first observed failure):
        [0]:
          time      : 2024-05-14_10:31:07
          host      : gpu-node-3
          rank      : 1 (local_rank: 1)
          exitcode  : 1 (pid: 2382)
          error_file: <N/A>
          traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
root_cause: |
  The kernel's OOM killer sends SIGKILL, which cannot be caught; the agent reports the exit code -9.
confirm:
  - step: Look for the kill in the kernel log.
    command: sudo dmesg -T | grep -i -E "killed process|out of memory"
fix:
  - step: Lower the number of DataLoader workers or use memory-mapped datasets.
reviewed: 2026-01-15
''',
    "dataloader-worker-exited-unexpectedly": r'''
id: dataloader-worker-exited-unexpectedly
title: "RuntimeError: DataLoader worker (pid(s) ...) exited unexpectedly"
summary: >
  A DataLoader worker process died. Unless the log shows a bus error (shared memory), it was
  usually killed by the OOM killer or crashed in native code.
category: data
systems: [pytorch]
phase: data-loading
severity: high
role: cause
tags: [dataloader]
signatures:
  - pattern: "RuntimeError: DataLoader worker (pid(s) {any}) exited unexpectedly"
    unless:
      - pattern: "Unexpected bus error encountered in worker"
    source: torch/utils/data/dataloader.py, `_MultiProcessingDataLoaderIter._try_get_data`.
    examples:
      - log: |
          Traceback (most recent call last):
            File "/usr/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1132, in _try_get_data
              data = self._data_queue.get(timeout=timeout)
          RuntimeError: DataLoader worker (pid(s) 31337) exited unexpectedly
        assembled: "a fixture written for the tests (tests/browser_helpers.py)"
    counter_examples:
      - |
        ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).
        Traceback (most recent call last):
        RuntimeError: DataLoader worker (pid(s) 31337) exited unexpectedly
root_cause: |
  The main process noticed that a worker's process is gone while waiting for its batch.
fix:
  - step: Run with `num_workers=0` to see the worker's own error.
reviewed: 2026-01-15
''',
}


def write_project(root: Path) -> Path:
    """A minimal valid project in `root`: site.yml (no healthy logs), five entries, two content pages
    and the repository's frequency study (most of its classes without an entry here: the frequency
    page draws both kinds of bar)."""
    (root / "entries").mkdir(parents=True)
    (root / "content").mkdir()
    for slug, title in (("about", "About"), ("contributing", "Contributing")):  # the header's tabs link to both
        (root / "content" / f"{slug}.md").write_text(f"---\ntitle: {title}\n---\n\n{title} this fixture site.\n"
                                                    # aligned columns: rendered with classes, not inline styles
                                                    "\n| Code | Count | Meaning |\n| :-- | --: | :-: |\n"
                                                    "| E001 | 1 | not text |\n",
                                                    encoding="utf-8")
    site = (REPO / "site.yml").read_text(encoding="utf-8")
    site, n = re.subn(r"(?m)^healthy_logs:.*\n", "", site)
    shutil.copytree(REPO / "study", root / "study")
    (root / "site.yml").write_text(site, encoding="utf-8")
    copied = (REPO / "entries" / f"{COPIED_ENTRY}.yaml").read_text(encoding="utf-8")
    # its `related` targets are not in the fixture project: point it at one that is
    copied, n = re.subn(r"(?m)^related:\n(?:  .*\n)+", "related:\n  - id: cuda-out-of-memory\n    relation: see-also\n",
                        copied)
    assert n == 1, "the copied entry's related block changed shape"
    (root / "entries" / f"{COPIED_ENTRY}.yaml").write_text(copied, encoding="utf-8")
    for entry_id, text in ENTRIES.items():
        (root / "entries" / f"{entry_id}.yaml").write_text(text.lstrip(), encoding="utf-8")
    return root


def build_project(root: Path, out: Path) -> Path:
    from rootcause.site.builder import build

    build(root, out=out, progress=False, force=True)
    return out


_built: dict[str, Path] = {}


def fixture_site(tmp_path_factory) -> Path:
    """The fixture project's built site, built once per session (shared by every test module)."""
    if "site" not in _built:
        base = tmp_path_factory.mktemp("rootcause-fixture")
        project = write_project(base / "project")
        _built["site"] = build_project(project, base / "site")
        _built["project"] = project
    return _built["site"]


def base_path(project: Path) -> str:
    """The sub-path the site lives under, from site.yml's `url` (e.g. /rootcause/)."""
    from rootcause.config import load_config

    config, problems = load_config(project)
    assert config is not None, problems
    return config.base_path


def fixture_server(tmp_path_factory, csp: str | None = CSP) -> "SiteServer":
    site = fixture_site(tmp_path_factory)
    return SiteServer(site, base_path(_built["project"]), csp=csp)


def own_site(tmp_path_factory) -> Path | None:
    """The repository's own entries built into a temporary folder, or None while they do not check."""
    if "own" not in _built:
        check = subprocess.run([sys.executable, "build.py", "check"], cwd=REPO,
                               capture_output=True, text=True, timeout=600)
        if check.returncode != 0:
            _built["own"] = None  # type: ignore[assignment]
            _built["own-why"] = check.stdout[-600:] + check.stderr[-600:]  # type: ignore[assignment]
        else:
            _built["own"] = build_project(REPO, tmp_path_factory.mktemp("rootcause-own") / "site")
    return _built["own"]


def own_site_problem() -> str:
    return str(_built.get("own-why", ""))


def signature_data(site: Path) -> dict:
    return json.loads((site / "search" / "signatures.json").read_text(encoding="utf-8"))


class PythonDiagnosis:
    """The command line's diagnosis on a built site's signatures.json (as `rootcause diagnose --site`)."""

    def __init__(self, data: dict):
        from rootcause.matching.rows import EntryInfo
        from rootcause.matching.scanner import Scanner, signature_from_json

        self.scanner = Scanner([signature_from_json(s) for s in data["signatures"]])
        self.infos = {entry_id: EntryInfo.from_row(entry_id, row) for entry_id, row in data["entries"].items()}
        self.consequences = {k: set(v) for k, v in data["consequences"].items()}

    def _finish(self, scanned, top: int) -> dict:
        from rootcause.matching.ranking import rank, report_json

        result = report_json(rank(scanned, self.consequences, self.infos), self.infos, top)
        del result["bytes_scanned"]  # the browser counts characters, not bytes
        del result["possible"]       # the page asks its search index for these itself
        return result

    def report(self, text: str, top: int) -> dict:
        return self._finish(self.scanner.scan_text(text), top)

    def report_files(self, paths: list[Path], top: int) -> dict:
        return self._finish(self.scanner.scan_paths(paths), top)


# -- a local server with the CSP header ------------------------------------------------------------
class _Handler(http.server.SimpleHTTPRequestHandler):
    base = "/"  # the sub-path the site is served under
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".js": "text/javascript", ".json": "application/json", ".svg": "image/svg+xml",
                      ".css": "text/css", ".xml": "application/xml"}

    def translate_path(self, path):
        route = path.split("?", 1)[0].split("#", 1)[0]
        if not route.startswith(self.base):
            return ""  # nothing is served outside the site's sub-path
        return super().translate_path("/" + path[len(self.base):])

    def send_error(self, code, message=None, explain=None):
        """Missing pages get the site's 404.html, with status 404, as on GitHub Pages."""
        page = Path(self.directory) / "404.html"
        if code != 404 or self.command != "GET" or not page.exists():
            return super().send_error(code, message, explain)
        body = page.read_bytes()
        # the 404 page carries one inline script, allowed by its hash in its own policy: a host
        # that sends a policy header for it must send that one (as the test server does)
        meta = re.search(rb'http-equiv="Content-Security-Policy" content="([^"]*)"', body)
        self._policy = html.unescape(meta.group(1).decode()) if meta and self.csp else None
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    csp: str | None = CSP  # None: the pages' own <meta> policy alone

    def end_headers(self):
        policy = getattr(self, "_policy", None) or self.csp
        if policy:
            self.send_header("Content-Security-Policy", policy)
        self._policy = None
        super().end_headers()

    def log_message(self, *args):  # keep test output clean
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A browser that navigates away closes connections mid-response: not worth a traceback."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class SiteServer:
    """Serves a built site on 127.0.0.1 at a free port, in a daemon thread, under the sub-path of
    site.yml's `url` (as GitHub Pages serves a project site), so absolute links are exercised too."""

    def __init__(self, folder: Path, base: str = "/", csp: str | None = CSP):
        self.base = base
        handler = functools.partial(type("Handler", (_Handler,), {"base": base, "csp": csp}), directory=str(folder))
        self.httpd = _QuietServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "SiteServer":
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def url(self, path: str = "") -> str:
        return f"{self.origin}{self.base}{path.lstrip('/')}"
