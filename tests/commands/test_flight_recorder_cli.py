"""`rootcause diagnose` on Flight Recorder dumps (a folder, files, with or without the job's log) and
`rootcause run --flight-recorder DIR`, on the real dumps of bench/flight_recorder/make_dumps.py."""

from __future__ import annotations

import json
import pickle
import shutil
import sys
from pathlib import Path

from conftest import REPO, run_cli

FIXTURES = REPO / "tests" / "fixtures" / "flight_recorder"


def test_a_folder_of_dumps_alone_gives_the_verdict_first():
    result = run_cli("diagnose", str(FIXTURES / "subgroup_hang_world_timeout" / "pickle"))
    out = result.stdout.decode()
    assert result.returncode == 0, result.stderr.decode()
    assert out.splitlines()[0] == ("Rank 3 never entered `all_reduce` #4 of TENSOR_MODEL_PARALLEL_GROUP (pg 2); "
                                   "rank 2 waits in it.")
    assert "consequence of TENSOR_MODEL_PARALLEL_GROUP (pg 2)" in out
    assert "rank 3's last collective was called from:" in out and "make_dumps.py" in out
    assert "Distributed training hangs mid-run" in out and "Check:" in out
    assert "default_pg (pg 0) top #4 all_reduce  0:4 1:4 2:3 3:3" in out


def test_dump_files_are_recognised_by_content_and_json_matches_the_text():
    files = sorted(str(p) for p in (FIXTURES / "mismatched_op" / "json").iterdir())
    result = run_cli("diagnose", "--json", *files)
    assert result.returncode == 0
    data = json.loads(result.stdout)
    fr = data["flight_recorder"]
    assert data["status"] == "known"
    assert data["headline"] == fr["divergences"][0]["sentence"]
    root = fr["divergences"][0]
    assert root["kind"] == "mismatch" and root["culprits"] == [1] and root["detail"] == "op"
    assert [c["ranks"] for c in root["calls"]] == [[0, 2, 3], [1]]
    assert [c["op"] for c in root["calls"]] == ["all_reduce", "broadcast"]
    assert root["entries"][0]["entry"] == "distributed-mismatched-collectives" and root["entries"][0]["check"]


def test_dumps_and_the_log_as_one_incident_agree_on_the_culprit():
    scenario = FIXTURES / "never_joins"
    result = run_cli("diagnose", "--json", str(scenario / "pickle"), str(scenario / "job.log"))
    data = json.loads(result.stdout)
    agreement = data["flight_recorder"]["agreement"]
    assert agreement["agrees"] and agreement["log_rank"] == 2 and agreement["dump_ranks"] == [2]
    assert any("Flight Recorder dumps name it" in line for line in data["first_failure"]["evidence"])


def test_the_report_says_when_dumps_and_log_disagree(tmp_path):
    # the log of one job with the dumps of another: the log blames rank 2, the dumps rank 1
    scenario = FIXTURES / "never_joins"
    result = run_cli("diagnose", "--json", str(FIXTURES / "mismatched_op" / "json"), str(scenario / "job.log"))
    agreement = json.loads(result.stdout)["flight_recorder"]["agreement"]
    assert not agreement["agrees"]
    assert agreement["sentence"].startswith("The dumps and the log disagree: the log's first failure is on rank 2, "
                                            "the dumps name 1")


def test_healthy_dumps_are_no_failure():
    result = run_cli("diagnose", str(FIXTURES / "healthy" / "json"))
    assert result.returncode == 1
    assert "No divergence in 4 dumps" in result.stdout.decode()


def test_a_hostile_dump_names_the_file_and_exits_2_without_running_it(tmp_path):
    import os

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path}/pwned",))

    folder = tmp_path / "dumps"
    shutil.copytree(FIXTURES / "never_joins" / "pickle", folder)
    (folder / "rank_3").write_bytes(pickle.dumps({"version": "2.10", "entries": [Evil()]}, protocol=2))
    result = run_cli("diagnose", str(folder))
    assert result.returncode == 2
    err = result.stderr.decode()
    assert f"{folder}/rank_3: pickle dump refused: opcode GLOBAL" in err and "nothing was run" in err
    assert not (tmp_path / "pwned").exists()


def test_a_cut_short_dump_among_good_ones_is_named(tmp_path):
    folder = tmp_path / "dumps"
    shutil.copytree(FIXTURES / "never_joins" / "json", folder)
    data = (folder / "rank_1.json").read_bytes()
    (folder / "rank_1.json").write_bytes(data[:200])
    result = run_cli("diagnose", str(folder))
    assert result.returncode == 2
    assert f"{folder}/rank_1.json: JSON dump refused: not valid JSON" in result.stderr.decode()


def test_a_folder_without_dumps_is_still_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing\n")
    result = run_cli("diagnose", str(tmp_path))
    assert result.returncode == 2 and "no Flight Recorder dump in it" in result.stderr.decode()


def test_run_sets_the_flight_recorder_for_the_job_and_reads_its_dumps(tmp_path):
    # the "job" checks the variables it was given, then writes the real dumps of a hang where
    # torch would (TORCH_FR_DUMP_TEMP_FILE + rank) and fails as a hung job does
    source = FIXTURES / "never_joins" / "pickle"
    code = (
        "import os, shutil, sys\n"
        "assert os.environ['TORCH_FR_BUFFER_SIZE'] == '2000', os.environ\n"
        "assert os.environ['TORCH_NCCL_DUMP_ON_TIMEOUT'] == '1'\n"
        "prefix = os.environ['TORCH_FR_DUMP_TEMP_FILE']\n"
        f"for rank in range(4): shutil.copyfile(r'{source}/rank_%d' % rank, prefix + str(rank))\n"
        "print('[rank0]: RuntimeError: Timed out waiting 4000ms for recv operation to complete', flush=True)\n"
        "sys.exit(1)\n")
    stale = tmp_path / "fr"
    stale.mkdir()
    result = run_cli("run", "--no-pty", "--flight-recorder", str(stale), "--report", str(tmp_path / "r.json"),
                     "--", sys.executable, "-c", code)
    assert result.returncode == 1, result.stderr.decode()
    assert sorted(p.name for p in stale.iterdir()) == ["rank_0", "rank_1", "rank_2", "rank_3"]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["flight_recorder"]["divergences"][0]["culprits"] == [2]
    assert "Rank 2 never entered `all_reduce` #6 of default_pg (pg 0)" in result.stderr.decode()


def test_run_without_dumps_says_so_and_keeps_the_logs_diagnosis(tmp_path):
    result = run_cli("run", "--no-pty", "--flight-recorder", str(tmp_path / "fr"), "--",
                     sys.executable, "-c", "import sys; sys.exit(3)")
    assert result.returncode == 3
    assert "no Flight Recorder verdict" in result.stderr.decode() and "left no Flight Recorder dump" in result.stderr.decode()
    assert Path(tmp_path / "fr").is_dir()
