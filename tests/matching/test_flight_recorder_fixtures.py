"""The real Flight Recorder fixtures (tests/fixtures/flight_recorder/, made by
bench/flight_recorder/make_dumps.py) are whole: every scenario has its expected culprit, its
job log, and one JSON and one pickle dump per rank that left one (and none for a rank that died)."""

from __future__ import annotations

import yaml

from conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "flight_recorder"


def test_every_scenario_is_whole():
    scenarios = sorted(p for p in FIXTURES.iterdir() if p.is_dir())
    assert len(scenarios) >= 10
    verdicts = set()
    for scenario in scenarios:
        expected = yaml.safe_load((scenario / "expected.yaml").read_text())
        verdicts.add(expected["verdict"])
        assert expected["scenario"] == scenario.name and expected["backend"] == "gloo"
        pickles = sorted(p.name for p in (scenario / "pickle").iterdir())
        jsons = sorted(p.name for p in (scenario / "json").iterdir())
        assert [f"{name}.json" for name in pickles] == jsons
        ranks = {int(name.split("_")[1]) for name in pickles}
        assert ranks <= set(range(expected["world_size"]))
        if expected["verdict"] == "no_dump":
            assert not ranks & set(expected["culprits"])
        elif expected["verdict"] != "healthy":
            assert set(expected["culprits"]) <= ranks, scenario.name
        log = (scenario / "job.log").read_text(encoding="utf-8", errors="replace")
        assert "[default0]:" in log                                  # torchrun --tee 3: every rank's output
        assert ("FAILED" in log) == (expected["verdict"] != "healthy")
        for name in pickles:
            assert (scenario / "pickle" / name).read_bytes()[:2] == b"\x80\x02"
    assert verdicts >= {"healthy", "missing", "lagging", "mismatch", "no_dump"}
