"""The browser reads Flight Recorder dumps as the command line does, function by function: every
function of `matching/flight_recorder.py` and `flight_verdict.py` has its twin in
theme/assets/flight-recorder.js (the same name in camelCase, or the one named here), or is named
here as Python's alone, with why. A new function without a twin fails here before the two
verdicts can differ (`tests/site/test_flight_recorder_browser.py` then compares them on every
fixture)."""

from __future__ import annotations

from test_twins import functions_of, missing_twins

MODULES = ("flight_recorder", "flight_verdict")
#: Python's name → its twin's, where the twin is named otherwise
RENAMED = {"_int_line": "intOf", "_ranks": "ranksOf", "_entry": "toEntry", "_number": "numberOf",
           "_mismatch": "mismatchOf", "_p2p_ends": "parse", "_frames": "framesOf"}
#: twins written inline rather than as a function: the JavaScript that does the same
INLINE = {"seq": "e.seq = e.is_p2p ? e.p2p_seq_id : e.collective_seq_id",
          "_latest": "d.entries.reduce(function (a, b) { return b.record_id > a.record_id ? b : a; })"}
#: what only the Python side has, and why the browser needs no twin of it
PYTHON_ONLY = {"read_dump": "reads a file from disk; the worker reads File objects and calls parseDump"}
#: where flight-recorder.js names a function: declarations, methods, assigned functions
TWIN_PATTERNS = [r"function ([A-Za-z0-9]+)\s*\(", r"^\s+([A-Za-z0-9]+)\([^)]*\)\s*\{",
                 r"(?:prototype\.|this\.)([A-Za-z0-9]+)\s*=\s*function"]


def test_every_flight_recorder_function_has_its_twin_in_the_browser_or_says_why_not():
    missing = missing_twins(MODULES, "flight-recorder.js", TWIN_PATTERNS, RENAMED, PYTHON_ONLY, INLINE)
    assert not missing, f"no twin in flight-recorder.js, and not listed as Python's alone: {missing}"


def test_the_flight_recorder_lists_name_only_what_exists():
    assert not (set(PYTHON_ONLY) | set(RENAMED) | set(INLINE)) - set(functions_of(MODULES))
