"""Flight Recorder dumps in Chromium: theme/assets/flight-recorder.js gives the verdict the command
line gives (rootcause.matching.flight_verdict) on every real fixture, JSON and pickle; the diagnose
page reads dropped dump files in its worker, shows the verdict and the per-group table, and sends
nothing anywhere; a hostile pickle is refused there too, without running anything."""

from __future__ import annotations

import base64
import json
import pickle

import pytest

from browser_helpers import ASSETS, CSP, fixture_server
from conftest import REPO, needs
from rootcause.matching.flight_recorder import read_dump
from rootcause.matching.flight_verdict import verdict

pytestmark = needs("browser")

FIXTURES = REPO / "tests" / "fixtures" / "flight_recorder"
FOLDERS = sorted(p / fmt for p in FIXTURES.iterdir() if (p / "expected.yaml").exists() for fmt in ("json", "pickle"))
TIMEOUT = 20_000


@pytest.fixture(scope="module")
def blank(browser):
    context = browser.new_context()
    page = context.new_page()
    page.goto("about:blank")
    page.add_script_tag(content=(ASSETS / "flight-recorder.js").read_text(encoding="utf-8"))
    yield page
    context.close()


def python_verdict(folder):
    """The command line's verdict, as JSON (tuples become lists), the files named as the page names them."""
    data = verdict([read_dump(p, shown=p.name) for p in sorted(folder.iterdir())])
    return json.loads(json.dumps(data))


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_chromium_gives_the_command_lines_verdict(blank, folder):
    files = [{"name": p.name, "b64": base64.b64encode(p.read_bytes()).decode()} for p in sorted(folder.iterdir())]
    got = blank.evaluate("""(files) => JSON.stringify(RootcauseFlightRecorder.verdictOf(files.map(f => ({
        name: f.name, bytes: Uint8Array.from(atob(f.b64), c => c.charCodeAt(0))}))))""", files)
    assert json.loads(got) == python_verdict(folder)


def test_chromium_refuses_a_pickle_that_would_run_code(blank):
    import os

    class Evil:
        def __reduce__(self):
            return (os.system, ("true",))

    data = base64.b64encode(pickle.dumps({"version": "2.10", "entries": [Evil()]}, protocol=4)).decode()
    message = blank.evaluate("""(b64) => { try { RootcauseFlightRecorder.parseDump(
        Uint8Array.from(atob(b64), c => c.charCodeAt(0)), "rank_0"); return "read"; } catch (e) { return e.text; } }""",
                             data)
    assert message.startswith("rank_0: pickle dump refused: opcode STACK_GLOBAL at offset")
    assert message.endswith("refused, nothing was run")


@pytest.fixture(scope="module")
def site_server(tmp_path_factory):
    with fixture_server(tmp_path_factory, csp=CSP) as running:
        yield running


def open_page(browser, site_server):
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT)
    requests, problems = [], []
    context.on("request", lambda r: requests.append((r.method, r.url)))
    page = context.new_page()
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(site_server.url("diagnose/"), wait_until="load")
    page.locator("#rc-log").focus()
    page.wait_for_timeout(300)
    return context, page, requests, problems


def test_the_diagnose_page_reads_dropped_dumps_in_its_worker(browser, site_server):
    context, page, requests, problems = open_page(browser, site_server)
    folder = FIXTURES / "subgroup_hang_world_timeout" / "pickle"
    before = len(requests)
    page.locator("#rc-file").set_input_files([str(p) for p in sorted(folder.iterdir())])
    page.locator("#rc-report .rc-flight-recorder").wait_for()
    expected = python_verdict(folder)
    assert page.locator("#rc-report .rc-headline").inner_text() == expected["headline"]
    sentences = page.locator("#rc-report .rc-fr-sentence").all_inner_texts()
    assert sentences == [d["sentence"] for d in expected["divergences"]]
    table = page.locator("#rc-report .rc-fr-groups").inner_text()
    assert "TENSOR_MODEL_PARALLEL_GROUP (pg 2)" in table and "2:4 3:3" in table
    assert "consequence of TENSOR_MODEL_PARALLEL_GROUP (pg 2)" in page.locator("#rc-report").inner_text()
    # the worker may still be fetching the site's own files (its scripts, signatures.json, under a
    # loaded machine after the drop); nothing is sent, and nothing goes anywhere else
    assert all(method == "GET" and url.startswith(site_server.url("")) and ("/assets/" in url or "/search/" in url)
               for method, url in requests[before:]), requests[before:]
    assert problems == []
    context.close()


def test_the_diagnose_page_names_a_cut_short_dump(browser, site_server):
    context, page, requests, problems = open_page(browser, site_server)
    folder = FIXTURES / "never_joins" / "json"
    files = [{"name": p.name, "mimeType": "application/json", "buffer": p.read_bytes()} for p in sorted(folder.iterdir())]
    files[1]["buffer"] = files[1]["buffer"][:300]
    page.locator("#rc-file").set_input_files(files)
    page.wait_for_function("() => document.getElementById('rc-status').textContent.startsWith('Could not diagnose')")
    assert page.locator("#rc-status").inner_text().startswith(
        "Could not diagnose: rank_1.json: JSON dump refused: not valid JSON (cut short?)")
    assert problems == []
    context.close()


@pytest.mark.parametrize("packing", ["gzip", "utf-16"])
def test_a_log_dropped_beside_the_dumps_is_read_as_a_log_alone_is(browser, site_server, packing):
    """The job's log, gzipped or in UTF-16, dropped with its dumps: the worker reads it as it reads a
    log on its own (as the command line's open_log), so log and dumps are one incident and the
    agreement sentence is the command line's."""
    import gzip

    from conftest import run_cli

    scenario = FIXTURES / "never_joins"
    text = (scenario / "job.log").read_bytes()
    packed = gzip.compress(text) if packing == "gzip" else b"\xff\xfe" + text.decode("utf-8").encode("utf-16-le")
    expected = json.loads(run_cli("diagnose", "--json", str(scenario / "pickle"), str(scenario / "job.log")).stdout)
    assert expected["flight_recorder"]["agreement"]["agrees"]
    context, page, requests, problems = open_page(browser, site_server)
    files = [{"name": p.name, "mimeType": "application/octet-stream", "buffer": p.read_bytes()}
             for p in sorted((scenario / "pickle").iterdir())]
    files.append({"name": "job.log.gz" if packing == "gzip" else "job.log", "mimeType": "application/octet-stream",
                  "buffer": packed})
    page.locator("#rc-file").set_input_files(files)
    page.locator("#rc-report .rc-fr-agreement").wait_for()
    assert page.locator("#rc-report .rc-fr-agreement").inner_text() == expected["flight_recorder"]["agreement"]["sentence"]
    # the page sets the headline's sentences on lines of their own
    assert page.locator("#rc-report .rc-headline").inner_text().split() == expected["headline"].split()
    assert problems == []
    context.close()
