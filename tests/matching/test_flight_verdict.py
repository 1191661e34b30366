"""The verdict on real Flight Recorder dumps: on every scenario of bench/flight_recorder/make_dumps.py
the root-cause divergence names the culprit the scenario was made with, in the group it was made
in, from the JSON dumps and from the pickles alike."""

from __future__ import annotations

import copy

import pytest
import yaml

from conftest import REPO
from rootcause.matching.flight_recorder import DumpError, read_dump
from rootcause.matching.flight_verdict import ENTRIES_BY_KIND, verdict

FIXTURES = REPO / "tests" / "fixtures" / "flight_recorder"
SCENARIOS = sorted(p for p in FIXTURES.iterdir() if (p / "expected.yaml").exists())


def dumps_of(folder):
    return [read_dump(p) for p in sorted(folder.iterdir())]


def later_json(scenario) -> list[int]:
    """The ranks whose JSON dump holds more entries than their pickle: gloo's JSON dump of a rank
    stuck in Python waited until the rank woke up (lagging_subgroup, expert_group_hang), so it
    shows a later moment than the one the scenario was made for."""
    return [d.rank for d, j in zip(dumps_of(scenario / "pickle"), dumps_of(scenario / "json"))
            if len(j.entries) > len(d.entries)]


@pytest.mark.parametrize("fmt", ["json", "pickle"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_the_root_cause_is_the_culprit_made_by_design(scenario, fmt):
    expected = yaml.safe_load((scenario / "expected.yaml").read_text())
    result = verdict(dumps_of(scenario / fmt))
    if fmt == "json" and later_json(scenario):
        # a later moment: the stuck rank woke and went on alone after the others had given up
        assert later_json(scenario) == expected["culprits"]
        assert result["divergences"][0]["culprits"] != expected["culprits"]
        return
    if expected["verdict"] == "healthy":
        assert result["healthy"] and not result["divergences"]
        assert result["headline"].startswith("No divergence in 4 dumps")
        return
    root = result["divergences"][0]
    assert root["root"], root
    assert root["kind"] == expected["verdict"]
    assert root["culprits"] == expected["culprits"]
    assert root["desc"] == expected["group"]
    assert root["op"] == expected["op"]
    if "detail" in expected:
        assert root["detail"] == expected["detail"]
    assert result["headline"] == root["sentence"]
    if "consequence_group" in expected:
        consequences = [d for d in result["divergences"] if not d["root"]]
        assert any(d["desc"] == expected["consequence_group"] and d["explained_by"] == [root["group"]]
                   for d in consequences), consequences
    assert set(ENTRIES_BY_KIND[root["kind"]]) == set(root["entries"])


def test_only_the_json_dumps_of_a_rank_stuck_in_python_were_taken_later():
    assert {s.name for s in SCENARIOS if later_json(s)} == {"lagging_subgroup", "expert_group_hang"}


def test_the_headlines_read_as_one_sentence_each():
    heads = {s.name: verdict(dumps_of(s / "pickle"))["headline"] for s in SCENARIOS}
    assert heads["never_joins"] == "Rank 2 never entered `all_reduce` #6 of default_pg (pg 0); the other 3 ranks wait in it."
    assert heads["mismatched_op"] == ("Rank 1 called `broadcast` where ranks 0, 2 and 3 called `all_reduce`, "
                                      "at #4 of default_pg (pg 0).")
    assert heads["subgroup_hang_world_timeout"] == ("Rank 3 never entered `all_reduce` #4 of "
                                                    "TENSOR_MODEL_PARALLEL_GROUP (pg 2); rank 2 waits in it.")
    assert heads["lagging_subgroup"].startswith("Rank 2 is 3 collectives behind in DATA_PARALLEL_GROUP (pg 1)")
    assert heads["rank_died"].startswith("Rank 1 left no dump")


def test_the_stuck_ranks_stack_comes_from_the_pickle():
    result = verdict(dumps_of(FIXTURES / "never_joins" / "pickle"))
    stack = result["divergences"][0]["stack"]
    assert result["divergences"][0]["stack_rank"] == 2
    assert stack and stack[0]["filename"].endswith("make_dumps.py") and stack[0]["name"] == "warmup"
    assert verdict(dumps_of(FIXTURES / "never_joins" / "json"))["divergences"][0]["stack"] == []


def test_the_group_table_has_every_rank_and_its_last_sequence_number():
    result = verdict(dumps_of(FIXTURES / "subgroup_hang_world_timeout" / "json"))
    tables = {t["group"]: t for t in result["groups"]}
    assert {r["rank"]: r["last_seq"] for r in tables["default_pg (pg 0)"]["ranks"]} == {0: 4, 1: 4, 2: 3, 3: 3}
    assert {r["rank"]: r["last_seq"] for r in tables["TENSOR_MODEL_PARALLEL_GROUP (pg 2)"]["ranks"]} == {2: 4, 3: 3}


def test_dumps_of_two_formats_for_one_rank_or_two_versions_are_refused():
    scenario = FIXTURES / "healthy"
    both = [read_dump(scenario / "json" / "rank_0.json"), read_dump(scenario / "pickle" / "rank_0")]
    with pytest.raises(DumpError, match="a second dump for rank 0"):
        verdict(both)
    dumps = dumps_of(scenario / "json")
    dumps[1].version = "2.4"
    with pytest.raises(DumpError, match=r"rank_1.json: dump format version 2.4, but .*rank_0.json has 2.10"):
        verdict(dumps)


def test_a_pending_nccl_recv_without_its_send_is_a_p2p_without_partner():
    # gloo records no p2p; NCCL does ("nccl:send 0->1", "nccl:recv 1<-0", state "started"). This
    # test edits a real dump into that shape: rank 0's pending recv from rank 1, which sent nothing.
    dumps = dumps_of(FIXTURES / "healthy" / "pickle")[:2]
    for dump in dumps:
        dump.entries = [e for e in dump.entries if e.pg_desc == "default_pg"]
        for entry in dump.entries:
            entry.state, entry.backend = "completed", "nccl"
    recv = copy.deepcopy(dumps[0].entries[-1])
    recv.op, recv.peer, recv.is_p2p, recv.p2p_seq_id, recv.state = "recv", "0<-1", True, 1, "started"
    recv.record_id += 1
    dumps[0].entries.append(recv)
    dumps[0].pg_config = {"0": ("default_pg", (0, 1))}
    result = verdict(dumps)
    root = result["divergences"][0]
    assert root["kind"] == "p2p_unmatched" and root["culprits"] == [1] and root["waiting"] == [0]
    assert result["headline"] == "Rank 0 waits in `recv` #1 of default_pg (pg 0); rank 1 never posted the matching `send`."
