"""What an entry page marks in its example logs is found where the entry is checked, kept in its
build-cache record, and checked again when the record is read; a page shows the same marks
either way."""

from __future__ import annotations

import json

import pytest

from conftest import REPO

from rootcause.config import load_config
from rootcause.entries.catalog import entry_record, from_record, load_entry
from rootcause.matching.signatures import marked_lines
from rootcause.site.highlight import mark_matches


@pytest.fixture(scope="module")
def checked():
    config, _ = load_config(REPO)
    results = [load_entry(path, REPO, config) for path in sorted((REPO / "entries").glob("*.yaml"))]
    return config, [loaded for loaded, _problems in results if loaded is not None and loaded.signatures]


def test_every_example_is_marked_where_a_fresh_search_marks_it(checked):
    _config, entries = checked
    examples = 0
    for loaded in entries:
        for spec, compiled in zip(loaded.entry.signatures, loaded.signatures):
            for log in spec.example_logs:
                examples += 1
                assert compiled.marks[log] == marked_lines(compiled, log)
                assert compiled.marks[log], f"{loaded.entry.id}: an example without a mark"
    assert examples > 300


def test_a_record_gives_back_the_same_marks_and_the_same_page_text(checked):
    config, entries = checked
    for loaded in entries[:40]:
        again, _ = from_record(entry_record((loaded, [])), config)
        for spec, before, after in zip(loaded.entry.signatures, loaded.signatures, again.signatures):
            assert after.marks == before.marks
            for log in spec.example_logs:
                assert mark_matches(log, after) == mark_matches(log, before)
                assert mark_matches(log, after, True) == mark_matches(log, before, True)


def test_a_text_the_check_did_not_see_is_marked_by_searching_it(checked):
    _config, entries = checked
    compiled = entries[0].signatures[0]
    log = entries[0].entry.signatures[0].example_logs[0]
    other = "an unrelated first line\n" + log
    assert other not in compiled.marks
    assert "<mark>" in mark_matches(other, compiled)
    assert str(mark_matches(other, compiled)).split("\n", 1)[1] == str(mark_matches(log, compiled))


@pytest.mark.parametrize("damage", ["line past the end", "span past the line", "lines out of order",
                                    "one list short", "not integers"])
def test_a_record_with_marks_that_do_not_fit_its_examples_is_refused(checked, damage):
    config, entries = checked
    loaded = next(e for e in entries if any(len(marked) >= 1 for s in e.signatures for marked in s.marks.values()))
    record = json.loads(entry_record((loaded, [])))
    first = record["marks"][0]
    lines = loaded.entry.signatures[0].example_logs[0].rstrip("\n").split("\n")
    if damage == "line past the end":
        first[0] = [[len(lines), 0, 1]]
    elif damage == "span past the line":
        number = first[0][0][0]
        first[0] = [[number, 0, len(lines[number]) + 1]]
    elif damage == "lines out of order":
        first[0] = [[1, -1, -1], [0, -1, -1]]
    elif damage == "one list short":
        record["marks"][0] = first[1:]
    else:
        first[0] = [["0", "0", "1"]]
    with pytest.raises(ValueError):
        from_record(json.dumps(record).encode(), config)
