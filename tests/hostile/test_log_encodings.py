"""Issue 36, item 11 (b, d): logs the command line and the browser read alike.

UTF-16 logs (Windows' PowerShell writes them, with a byte-order mark) and CR-only logs (classic
Mac line ends, or a file of progress-bar lines) found nothing, on the command line and in the
browser: the first was read as UTF-8, one NUL between every two characters, the second as one
line far over the length kept. A gzip with trailing junk after its last member was refused
whole by the command line while the browser diagnosed it. Now the log reader
(`rootcause.matching.scanner.open_log`) and the browser worker's decoder
(`theme/assets/diagnose-worker.js`) read all three the same way: a UTF-16 byte-order mark decides
the encoding, a log whose first 64 KiB hold a carriage return and no line feed breaks its lines at
every carriage return, and what the members of a gzip give is diagnosed, with a warning that
says where the junk begins.
"""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from browser_helpers import PythonDiagnosis, fixture_server, fixture_site, signature_data
from conftest import needs, run_cli

OOM_RANK2 = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 2 has a total capacity of "
             "79.15 GiB of which 2.01 GiB is free.")
CASCADE = "\n".join(
    ["[rank0]: step 1200 | loss 2.113 | lr 3.0e-04", "[rank2]: Traceback (most recent call last):",
     '[rank2]:   File "/workspace/train.py", line 181, in main', "[rank2]:     loss.backward()", "[rank2]: " + OOM_RANK2]
    + [f"[rank{rank}]:[E1104 03:22:09.552318040 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective "
       f"operation timeout: WorkNCCL(SeqNum=20585, OpType=ALLREDUCE, NumelIn=46797824, NumelOut=46797824, "
       f"Timeout(ms)=600000) ran for 600071 milliseconds before timing out." for rank in (0, 1, 3)]) + "\n"

#: the page's worker, given a file's bytes: its report and what it could not read
WORKER_REPORT = """async (bytes) => {
    const form = document.getElementById('rc-diagnose');
    const url = new URL(form.dataset.worker, document.baseURI);
    for (const key of ['re2js', 'matcher', 'signatures'])
        url.searchParams.set(key, new URL(form.dataset[key], document.baseURI).href);
    const worker = new Worker(url.href);
    const buffer = new Uint8Array(bytes).buffer;
    try {
        return await new Promise((resolve, reject) => {
            worker.onmessage = (e) => {
                if (e.data.type === 'report') resolve({report: e.data.report, unread: e.data.unread});
                else if (e.data.type === 'error') reject(new Error(e.data.message));
            };
            worker.postMessage({type: 'run', id: 1, buffer, top: 5}, [buffer]);
        });
    } finally { worker.terminate(); }
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with fixture_server(tmp_path_factory) as running:
        yield running


@pytest.fixture
def diagnose_page(browser, server):
    context = browser.new_context()
    errors = []
    context.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page = context.new_page()
    page.goto(server.url("diagnose/"), wait_until="load")
    yield page
    context.close()
    assert not errors, errors


def files() -> dict[str, bytes]:
    crlf_later = CASCADE.replace("\n", "\r", 3)   # CR-only at first, then LF: what the first 64 KiB say holds
    return {
        "utf16le.log": CASCADE.encode("utf-16"),                      # BOM FF FE, as Python and PowerShell write it
        "utf16be.log": b"\xfe\xff" + CASCADE.encode("utf-16-be"),
        "utf16le-crlf.log": b"\xff\xfe" + CASCADE.replace("\n", "\r\n").encode("utf-16-le"),
        "utf16le.log.gz": gzip.compress(CASCADE.encode("utf-16")),
        "utf16le-odd-byte.log": CASCADE.encode("utf-16") + b"\x41",
        "cr-only.log": CASCADE.replace("\n", "\r").encode(),
        "cr-only.log.gz": gzip.compress(CASCADE.replace("\n", "\r").encode()),
        "utf16le-cr-only.log": b"\xff\xfe" + CASCADE.replace("\n", "\r").encode("utf-16-le"),
        "cr-then-lf.log": crlf_later.encode(),
        "lf-then-cr.log": (CASCADE[:300] + CASCADE[300:].replace("\n", "\r")).encode(),
    }


@pytest.mark.parametrize("name", list(files()))
def test_the_command_line_diagnoses_utf16_and_cr_only_logs(tmp_path_factory, tmp_path, name):
    path = tmp_path / name
    path.write_bytes(files()[name])
    result = run_cli("diagnose", "--site", str(fixture_site(tmp_path_factory)), "--json", str(path))
    report = json.loads(result.stdout)
    if name == "lf-then-cr.log":   # LF in the first 64 KiB: a carriage return stays within its line
        return
    assert result.returncode == 0, result.stderr.decode()   # a failure found
    assert report["results"][0]["entry"] == "cuda-out-of-memory", report
    assert report["results"][0]["ranks"] == [2], report


def both_reports(diagnose_page, tmp_path_factory, path, payload: bytes) -> tuple[dict, dict]:
    """(the command line's report, the browser worker's answer) on one log written to `path`."""
    path.write_bytes(payload)
    python = PythonDiagnosis(signature_data(fixture_site(tmp_path_factory))).report_files([path], 5)
    return python, diagnose_page.evaluate(WORKER_REPORT, list(payload))


@needs("browser")
@pytest.mark.parametrize("name", list(files()))
def test_the_browser_reads_them_as_the_command_line_does(diagnose_page, tmp_path_factory, tmp_path, name):
    payload = files()[name]
    python, browser = both_reports(diagnose_page, tmp_path_factory, tmp_path / name, payload)
    assert browser["unread"] is None
    assert browser["report"] == python
    if name != "lf-then-cr.log":   # each line read as a line: rank 2's error on line 5, not one line of rank 0
        assert (python["results"][0]["entry"], python["results"][0]["ranks"]) == ("cuda-out-of-memory", [2])
        if "-then-" not in name:   # (those join the lines whose breaks the first 64 KiB do not call line ends)
            assert python["lines_scanned"] >= 8


def junk_files() -> dict[str, bytes]:
    member = gzip.compress(CASCADE.encode())
    return {
        "junk-after.log.gz": member + b"this is not gzip\n",
        "junk-after-padding.log.gz": member + b"\0" * 40 + b"PK\x03\x04 not gzip",
        "junk-after-two-members.log.gz": gzip.compress(CASCADE[:200].encode()) + gzip.compress(CASCADE[200:].encode())
                                         + b"\n\n# trailing note\n",
        # a member over more than one of the worker's 1 MiB chunks (1.4 MiB), ending inside the second, then
        # short padding and junk
        "junk-after-a-big-member.log.gz": gzip.compress(b"".join(hashlib.sha256(b"%d" % i).hexdigest().encode() + b"\n"
                                                                 for i in range(40_000)) + CASCADE.encode())
                                          + b"\0\0\0junk",
    }


@pytest.mark.parametrize("name", list(junk_files()))
def test_trailing_junk_is_diagnosed_with_a_warning_on_the_command_line(tmp_path_factory, tmp_path, name):
    payload = junk_files()[name]
    path = tmp_path / name
    path.write_bytes(payload)
    result = run_cli("diagnose", "--site", str(fixture_site(tmp_path_factory)), "--json", str(path))
    assert result.returncode == 0, result.stderr.decode()   # a failure found
    report = json.loads(result.stdout)
    assert report["results"][0]["entry"] == "cuda-out-of-memory"
    junk = JUNK_AT[name](payload)
    reason = f"after byte {junk:,} the file holds data that is neither another gzip member nor padding"
    assert report["unread"] == [{"log": str(path), "at": junk, "reason": reason}]
    assert result.stderr.decode() == (f"rootcause diagnose: warning: {path}: not all of the log was read: {reason}; "
                                      "the report covers what came before it\n")


JUNK_AT = {
    "junk-after.log.gz": lambda payload: len(payload) - len(b"this is not gzip\n"),
    "junk-after-padding.log.gz": lambda payload: len(payload) - len(b"PK\x03\x04 not gzip"),
    "junk-after-two-members.log.gz": lambda payload: len(payload) - len(b"\n\n# trailing note\n"),
    "junk-after-a-big-member.log.gz": lambda payload: len(payload) - len(b"junk"),
}


@needs("browser")
@pytest.mark.parametrize("name", list(junk_files()))
def test_the_browser_diagnoses_trailing_junk_as_the_command_line_does(diagnose_page, tmp_path_factory, tmp_path, name):
    payload = junk_files()[name]
    python, browser = both_reports(diagnose_page, tmp_path_factory, tmp_path / name, payload)
    junk = JUNK_AT[name](payload)
    assert browser["unread"] == {"at": junk, "total": len(payload), "reason": f"after byte {junk:,} the file holds "
                                 "data that is neither another gzip member nor padding"}
    assert browser["report"] == python
