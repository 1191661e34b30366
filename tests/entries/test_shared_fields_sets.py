"""Entries share their models' fields sets (`schema.Entry._share_fields_sets`): every model of
every bundled entry carries one shared set, equal to what pydantic recorded, and nothing that
reads an entry sees a difference."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from conftest import REPO

from rootcause.entries.catalog import entry_record, from_record
from rootcause.entries.project import open_project
from rootcause.entries.schema import Entry, SharedFields
from rootcause.located_yaml import load_yaml


def models(value):
    if isinstance(value, BaseModel):
        yield value
        for item in value.__dict__.values():
            yield from models(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from models(item)


@pytest.fixture(scope="module")
def catalog():
    project, problems = open_project(REPO)
    assert not [p for p in problems if p.severity == "error"]
    return project.catalog


def test_every_model_holds_a_shared_set_of_the_fields_it_was_given(catalog):
    shared: dict[frozenset, int] = {}
    count = 0
    for loaded in catalog.entries.values():
        for model in models(loaded.entry):
            fields = model.model_fields_set
            assert type(fields) is SharedFields and isinstance(fields, set)
            shared.setdefault(frozenset(fields), id(fields))
            assert id(fields) == shared[frozenset(fields)]   # one object per distinct set of fields
            count += 1
    assert count > 20 * len(catalog.entries) and len(shared) < count / 50
    # what pydantic recorded: the keys the file gives
    for loaded in list(catalog.entries.values())[:20]:
        data = load_yaml(REPO / loaded.path, loaded.path)[0].data
        assert loaded.entry.model_fields_set == set(data)
        assert loaded.entry.signatures[0].model_fields_set == set(data["signatures"][0]) if data.get("signatures") \
            else True
    entry = next(iter(catalog.entries.values())).entry
    with pytest.raises(TypeError):
        entry.model_fields_set.add("x")
    import copy

    assert copy.deepcopy(entry) == entry and copy.deepcopy(entry).model_fields_set == entry.model_fields_set
    # a copy, updated or not, and an unpickled entry get a set of their own
    import pickle

    changed = entry.model_copy(update={"title": "Another title"})
    assert changed.title == "Another title" and "title" in changed.model_fields_set and entry.title != changed.title
    assert type(entry.model_copy().model_fields_set) is set
    assert pickle.loads(pickle.dumps(entry)) == entry


def test_the_entries_read_dump_and_compare_as_before(catalog):
    for loaded in list(catalog.entries.values())[:40]:
        entry = loaded.entry
        data = entry.model_dump(mode="json")
        assert Entry.model_validate(data, context={"config": catalog.config}) == entry
        assert Entry.model_validate_json(entry.model_dump_json(exclude_unset=True),
                                         context={"config": catalog.config}) == entry
        body = entry_record((loaded, []))
        back, _problems = from_record(body, catalog.config)
        assert back.entry == entry and back.entry.model_dump_json() == entry.model_dump_json()
        assert entry_record((back, [])) == body


def test_the_entries_stay_frozen(catalog):
    entry = next(iter(catalog.entries.values())).entry
    with pytest.raises(ValidationError):
        entry.title = "changed"
    with pytest.raises(ValidationError):
        entry.signatures[0].within = 3
    assert "changed" not in entry.model_fields_set
