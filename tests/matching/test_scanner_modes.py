"""The scanner's cheap start and its bulk machinery find the same things.

A scan reads its first blocks with a prefilter of only the anchors that can occur in each block
(`SignatureTable.possible`) and looks candidate signatures up by the anchors' first characters;
a long log changes to the prefilter of every anchor (in shards when it is large) and an RE2 set.
Either way the report must be the same, and `possible` must never leave out an anchor that the
prefilter would find."""

from __future__ import annotations

import random

import pytest
import re2
from conftest import REPO

from rootcause.entries.project import open_project
from rootcause.matching import scanner as scanner_module
from rootcause.matching.anchors import SignatureTable
from rootcause.matching.patterns import Compiled
from rootcause.matching.ranking import rank, report_json
from rootcause.matching.scanner import Scanner, prefilter_regex
from rootcause.matching.signatures import CompiledSignature

LOGS = sorted((REPO / "tests" / "logs").rglob("*.log"))


@pytest.fixture(scope="module")
def catalog():
    project, problems = open_project(REPO)
    assert project is not None and not [d for d in problems if d.severity == "error"]
    return project.catalog


def _report(scanner: Scanner, catalog, paths) -> dict:
    return report_json(rank(scanner.scan_paths(paths), catalog.consequences()), {}, 10)


def test_the_cheap_start_and_the_bulk_machinery_give_the_same_reports(catalog, monkeypatch):
    cheap = Scanner(catalog.signatures())
    expected = {log.name: _report(cheap, catalog, [log]) for log in LOGS}
    # the examples, as many as the cheap way reads in one block (past LOOSE_BUDGET it turns to
    # the full prefilter itself, which is what this test compares it with)
    room = scanner_module.LOOSE_BUDGET // cheap.table.loose_count
    logs = [ex for loaded in catalog.entries.values() for sig in loaded.entry.signatures for ex in sig.example_logs]
    examples = ""
    for log in logs:
        if len((examples + "\n" + log).encode()) > room:
            break
        examples += "\n" + log
    assert len(examples) > 100_000
    expected_examples = report_json(rank(cheap.scan_text(examples), catalog.consequences()), {}, 50)
    assert not cheap.last_scan._full and cheap._set is None   # the cheap way all along
    monkeypatch.setattr(scanner_module, "SUBSET_MIN_BYTES", -1)
    monkeypatch.setattr(scanner_module, "SUBSET_BYTES_PER_ANCHOR", 0)
    monkeypatch.setattr(scanner_module, "MAX_PREFILTER_CHARS", 3000)
    bulk = Scanner(catalog.signatures())
    bulk._set_after = 0
    for log in LOGS:
        assert _report(bulk, catalog, [log]) == expected[log.name], log.name
    assert report_json(rank(bulk.scan_text(examples), catalog.consequences()), {}, 50) == expected_examples
    assert bulk.last_scan._full and bulk._set is not None and isinstance(bulk.last_scan.prefilter, scanner_module.Shards)


WORDS = ["error", "NCCL", "rank", "0", "Tried", "to", "allocate", "x.y:z", "[1,2]", "é", "a", "CUDA", "out", "of",
         "memory.", "Size([0])", "\x1b[31m", "'q'"]
GAPS = [" ", "  ", "\t", "\n", " \n ", "\t\n\t", "\r\n", "\n\n", "", "\x0c"]


def test_one_scanner_serves_several_threads_at_once(catalog):
    """A library caller (a fleet scan) may share one scanner between threads: each scan keeps
    its own prefilter and state."""
    from concurrent.futures import ThreadPoolExecutor

    scanner = Scanner(catalog.signatures())
    alone = {log.name: _report(Scanner(catalog.signatures()), catalog, [log]) for log in LOGS}
    with ThreadPoolExecutor(4) as pool:
        shared = list(pool.map(lambda log: _report(scanner, catalog, [log]), LOGS * 3))
    assert shared == [alone[log.name] for log in LOGS * 3]


def test_possible_never_leaves_out_an_anchor_the_prefilter_finds():
    rng = random.Random(12)
    anchors = sorted({" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for _ in range(300)})
    sigs = [CompiledSignature(f"e{i}", 0, (Compiled(a, "x", a, 0),)) for i, a in enumerate(anchors)]
    table = SignatureTable(sigs)
    options = re2.Options()
    options.log_errors = False
    each = [re2.compile(prefilter_regex([a]).encode(), options) for a in table.anchors]
    hits = 0
    for _ in range(400):
        block = "".join(rng.choice(WORDS) + rng.choice(GAPS) for _ in range(rng.randint(1, 30))).encode()
        found = {n for n, regex in enumerate(each) if regex.search(block)}
        assert found <= table.possible(block), [table.anchors[n] for n in found - table.possible(block)]
        hits += len(found)
    assert hits > 1000   # the blocks do contain anchors, wrapped and not


def test_candidate_lookup_is_the_re2_set_exactly():
    rng = random.Random(5)
    anchors = sorted({"".join(rng.choice(["ab", "b", "abc", " ", "é", "x"]) for _ in range(rng.randint(1, 8)))
                      for _ in range(200)})
    table = SignatureTable([CompiledSignature(f"e{i}", 0, (Compiled(a, "x", a, 0),)) for i, a in enumerate(anchors)])
    options = re2.Options()
    options.literal = True
    reference = re2.Set.SearchSet(options)
    for anchor in table.anchors:
        reference.Add(anchor)
    reference.Compile()
    for _ in range(300):
        text = "".join(rng.choice(["ab", "b", "abc", " ", "é", "x", "yy"]) for _ in range(rng.randint(0, 40)))
        assert table.candidate_anchors(text) == sorted(reference.Match(text) or ())


def test_the_prefilters_internal_span_call_and_the_public_search_agree():
    """`Prefilter.span` uses google-re2's internal match call (faster); a release without it falls
    back to the public `search`, which must find the same spans, wrapped anchors included."""
    import re2

    from rootcause.matching.scanner import Prefilter, prefilter_regex

    regex = re2.compile(prefilter_regex(["CUDA out of memory", "Connection reset by peer"]).encode())
    data = b"step 1\n[rank0]: CUDA out\n  of memory\nrank 1 Connection reset by peer\nend\n"
    fast, public = Prefilter(regex), Prefilter(regex, internal=False)
    assert fast._native is not None and public._native is None
    for pos, end in [(0, None), (0, 20), (9, None), (30, None), (70, None), (len(data), None)]:
        assert fast.span(data, pos, end) == public.span(data, pos, end), (pos, end)
    assert fast.span(data) == (16, 36)   # the wrapped anchor, across its line break
    assert fast.span(data, 40) == (44, 68) and fast.span(data, 70) is None
