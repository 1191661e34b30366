"""Issue 12: a rebuild splices the changed entries' parts into the last signatures.json
(`search.splice_signature_file`) instead of assembling it from every entry's parts; it must give
the assembler's bytes, and refuse a file that is not laid out as the model says."""

from __future__ import annotations

import random

import pytest

from conftest import REPO

from rootcause.entries.project import open_project
from rootcause.site import search


@pytest.fixture(scope="module")
def bundled():
    project, _problems = open_project(REPO)
    entries = project.catalog.entries
    parts = {i: search.signature_parts(loaded) for i, loaded in entries.items()}
    related = {i: [(r.id, r.relation) for r in loaded.entry.related] for i, loaded in entries.items()}
    return parts, related


def test_spliced_parts_give_the_assembled_file(bundled):
    parts, related = bundled
    consequences = search.consequences_of(related)
    old = search.assemble_signature_file(parts, consequences)
    layout = search.signature_layout(parts)
    assert search.splice_signature_file(old, layout, consequences, consequences, {}) == (old, {})
    rng = random.Random(12)
    matched = [i for i in parts if parts[i][1] is not None]
    for _trial in range(100):
        chosen = rng.sample(matched, rng.randint(1, 4))
        changed = {i: (parts[i][0] + (b',{"steps":[]}' if rng.random() < 0.5 else b""), parts[i][1][:-1] + b',"x"]')
                   for i in chosen}
        links = dict(related)
        links[chosen[0]] = [(chosen[-1], rng.choice(["causes", "caused-by", "see-also"]))]
        now = search.consequences_of(links)
        spliced, before = search.splice_signature_file(old, layout, consequences, now, changed)
        assert spliced == search.assemble_signature_file({**parts, **changed}, now)
        assert before == {i: parts[i] for i in chosen}


def test_a_file_not_laid_out_as_the_model_says_is_refused(bundled):
    parts, related = bundled
    consequences = search.consequences_of(related)
    old = search.assemble_signature_file(parts, consequences)
    layout = search.signature_layout(parts)
    one = next(i for i in parts if parts[i][1] is not None)
    shifted = {**layout, "rows": list(layout["rows"])}
    shifted["rows"][0] += 1
    shifted["rows"][1] -= 1   # the same total length, items cut in the wrong places
    symptom = next(i for i in parts if parts[i][1] is None)
    for file, told, consequences_told, changed in [
            (old[:-1] + b" ", layout, consequences, {}),                       # damaged
            (old + b" ", layout, consequences, {}),                            # longer
            (old, shifted, consequences, {one: parts[one]}),
            (old, layout, {"a-cause": ["its-consequence"]}, {}),               # other consequences
            (old, layout, consequences, {symptom: (b'{"steps":[]}', b'["t"]')}),   # gains signatures
            (old, layout, consequences, {one: (b"", None)})]:                  # loses them
        assert search.splice_signature_file(file, told, consequences_told, consequences, changed) is None


def test_the_consequences_are_read_from_the_head_of_the_file(bundled):
    """A rebuild whose edit kept every link takes the declared consequences from the last
    signatures.json (its first member) instead of reading every entry's links."""
    parts, related = bundled
    consequences = search.consequences_of(related)
    assert consequences   # the bundled entries declare some
    file = search.assemble_signature_file(parts, consequences)
    assert search.consequences_in(file) == consequences
    assert search.consequences_in(search.assemble_signature_file(parts, {})) == {}
    for damaged in (file[1:], b'{"consequences":[1]' + file[file.index(b',"decoration":'):], b"", b'{"consequences":{'):
        assert search.consequences_in(damaged) == {}
