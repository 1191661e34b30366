"""`memo.Kept`'s columns: a per-entry result of every entry, patched by the entries whose record
key changed, sent back from a forked build as those entries alone, with a digest of its content
that does not depend on the order the edits came in."""

from __future__ import annotations

import pickle

from rootcause.memo import Kept


def _column(kept: Kept, keys: dict[str, str], calls: list[str]):
    def compute(entry_id: str) -> str:
        calls.append(entry_id)
        return f"{entry_id}={keys[entry_id]}"

    return kept.column("t", keys, compute, content=str.encode)


def test_only_the_entries_whose_key_changed_are_computed():
    kept, calls = Kept(), []
    first = _column(kept, {"a": "1", "b": "2", "c": "3"}, calls)
    assert calls == ["a", "b", "c"]
    calls.clear()
    second = _column(kept, {"a": "1", "b": "9", "c": "3"}, calls)
    assert calls == ["b"]
    assert second.values == {"a": "a=1", "b": "b=9", "c": "c=3"}
    assert list(second.values) == ["a", "b", "c"]
    assert first.values["b"] == "b=2"   # the last build's column is not changed


def test_an_entry_added_or_removed_keeps_the_order_and_the_others_results():
    kept, calls = Kept(), []
    _column(kept, {"a": "1", "c": "3"}, calls)
    calls.clear()
    made = _column(kept, {"a": "1", "b": "2", "c": "3"}, calls)
    assert calls == ["b"] and list(made.values) == ["a", "b", "c"]
    calls.clear()
    made = _column(kept, {"a": "1", "c": "4"}, calls)
    assert calls == ["c"] and made.values == {"a": "a=1", "c": "c=4"}


def test_the_digest_is_of_the_content_whatever_the_path_to_it():
    kept = Kept()
    _column(kept, {"a": "1", "b": "2"}, [])
    _column(kept, {"a": "5", "b": "2"}, [])
    patched = _column(kept, {"a": "5", "b": "7"}, []).digest
    assert patched == _column(Kept(), {"a": "5", "b": "7"}, []).digest
    assert patched != _column(Kept(), {"a": "5", "b": "8"}, []).digest


def test_a_context_change_computes_every_entry():
    kept, calls = Kept(), []
    kept.column("t", {"a": "1", "b": "2"}, lambda i: (calls.append(i), i)[1], context="x")
    calls.clear()
    kept.column("t", {"a": "1", "b": "2"}, lambda i: (calls.append(i), i)[1], context="y")
    assert calls == ["a", "b"]


def test_also_names_entries_that_depend_on_others():
    kept, calls = Kept(), []
    kept.column("t", {"a": "1", "b": "2", "c": "3"}, lambda i: (calls.append(i), i)[1], also=lambda last: set())
    calls.clear()
    kept.column("t", {"a": "1", "b": "9", "c": "3"}, lambda i: (calls.append(i), i)[1], also=lambda last: {"c"})
    assert calls == ["b", "c"]


def test_a_forked_build_sends_back_only_what_it_computed():
    """The parent holds the last build's column; the child patches its copy and sends the
    changed entries, which the parent applies to the same column (sharing the new keys)."""
    parent = Kept()
    _column(parent, {f"e{i}": "1" for i in range(100)}, [])
    parent.apply(pickle.loads(pickle.dumps(parent.changes())))
    child = pickle.loads(pickle.dumps(parent))   # (a fork, as far as the column goes)
    child.columns = dict(parent.columns)           # the same columns, as a forked child has them
    keys = {f"e{i}": "2" if i == 7 else "1" for i in range(100)}
    _column(child, keys, [])
    sent = child.changes()
    base, changed_keys, changed_values, _digest, _context = sent[2]["t"]
    assert changed_keys == {"e7": "2"} and changed_values == {"e7": "e7=2"}
    parent.apply(pickle.loads(pickle.dumps(sent)))
    assert parent.columns["t"].values == child.columns["t"].values
    assert parent.columns["t"].keys == keys
    assert parent.columns["t"].digest == child.columns["t"].digest
