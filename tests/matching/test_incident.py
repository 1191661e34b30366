"""Diagnosis reads a log as an incident, pinned on real logs nobody here wrote: multi-rank CPU runs
made by bench/real_logs/runs/make_runs.sh (the script decides which rank fails first) and excerpts
posted in public threads (bench/real_logs/threads/, each with its URL in the .yaml)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import REPO, run_cli
from rootcause.matching.incident import Failure, LogModel, persisted
from rootcause.matching.ranking import Finding
from rootcause.matching.rows import Persistence

RUNS = REPO / "bench" / "real_logs" / "runs"
THREADS = REPO / "bench" / "real_logs" / "threads"


@pytest.fixture(scope="module")
def diagnose():
    """`rootcause diagnose --json` on the bundled entries, as a function of a log path."""
    from rootcause.encyclopedia import Encyclopedia

    encyclopedia = Encyclopedia.open(root=REPO)

    def run(path: Path) -> dict:
        data = encyclopedia.diagnose_paths([path], 5)
        data.pop("encyclopedia")
        return data
    return run


def meta(path: Path) -> dict:
    return yaml.safe_load(path.with_suffix(".yaml").read_text(encoding="utf-8"))


def test_an_exception_no_entry_covers_is_the_first_failure_not_the_peer_errors(diagnose):
    log = RUNS / "rank_indexerror.log"   # rank 1's dataset raises; ranks 0 and 2 lose their peer
    report = diagnose(log)
    assert meta(log)["first_rank"] == 1
    assert report["status"] == "unknown"
    first = report["first_failure"]
    assert (first["rank"], first["entry"], first["text"]) == (1, None, "IndexError: list index out of range")
    assert first["location"].endswith('rank_indexerror.py", line 20, in __getitem__')
    assert report["headline"].startswith("Rank 1 failed first with an error no entry explains: IndexError: list "
                                         "index out of range (rank_indexerror.py, line 20, in __getitem__).")
    assert report["headline"].endswith("Rank 0 and rank 2 then show consequences of it.")
    assert report["unknown"][0]["text"] == "IndexError: list index out of range"
    # the peer errors are listed, as consequences, never as the cause
    assert [r["role"] for r in report["results"]] == ["consequence"] * len(report["results"])
    assert "gloo-connection-closed-by-peer" in [r["entry"] for r in report["results"]]
    # the related tier is separate and labelled as such
    assert all(set(tier) == {"unknown", "text", "entries"} for tier in report["possible"])


def test_the_command_line_exits_3_for_a_failure_no_entry_explains():
    result = run_cli("diagnose", str(RUNS / "rank_indexerror.log"))
    assert result.returncode == 3
    out = result.stdout.decode()
    assert out.splitlines()[0].startswith("Rank 1 failed first with an error no entry explains")
    assert "Errors no entry explains" in out
    assert run_cli("diagnose", str(RUNS / "rank_sigkill.log")).returncode == 0
    assert run_cli("diagnose", str(RUNS / "healthy_warnings.log")).returncode == 1


@pytest.mark.parametrize("name", ["late_cause_after_timeout", "eval_late_error"])
def test_a_cause_printed_after_the_consequences_still_comes_first(diagnose, name):
    """The survivors' timeouts are printed before the failing rank's own error."""
    log = RUNS / f"{name}.log"
    report = diagnose(log)
    first = report["first_failure"]
    assert first["rank"] == meta(log)["first_rank"]
    lines = log.read_text(encoding="utf-8").splitlines()
    consequence_lines = [r["lines"][0]["line"] for r in report["results"] if r["role"] == "consequence"]
    timeouts = [n for n, text in enumerate(lines, 1) if "Timed out waiting" in text]
    assert timeouts and min(timeouts) < first["line"], "the consequence must really be printed first"
    assert report["status"] == "unknown" and first["entry"] is None
    assert all(line != first["line"] for line in consequence_lines)


def test_the_launchers_root_cause_claim_is_weighed_not_obeyed(diagnose):
    """torchrun names a survivor (the first process it saw exit); the thread that died first is rank 1."""
    log = RUNS / "thread_exception_timeout.log"
    report = diagnose(log)
    claims = [r["rank"] for r in report["launcher"] if r["root"]]
    assert claims and claims[0] != meta(log)["first_rank"]
    assert report["first_failure"]["rank"] == meta(log)["first_rank"] == 1
    assert any(f"names rank {claims[0]} instead" in e for e in report["first_failure"]["evidence"])


def test_a_rank_that_printed_nothing_is_found_by_the_others_waiting_for_it(diagnose):
    log = RUNS / "hang_barrier_timeout.log"   # rank 0 hangs; 1-3 time out; torchrun blames rank 1
    report = diagnose(log)
    assert report["status"] == "unknown"
    assert report["first_failure"]["rank"] == meta(log)["first_rank"] == 0
    assert "printed no error while the others waited for it" in report["first_failure"]["text"]


def test_the_odd_collective_names_the_rank_that_went_astray(diagnose):
    log = RUNS / "mismatched_collectives.log"   # every rank raises the mismatch; rank 2 called all_gather
    report = diagnose(log)
    assert report["first_failure"]["entry"] == "distributed-mismatched-collectives"
    assert report["first_failure"]["rank"] == meta(log)["first_rank"] == 2
    assert any("ALLGATHER" in e for e in report["first_failure"]["evidence"])


def test_fp16_loss_scale_warm_up_is_a_note_not_a_failure(diagnose):
    log = THREADS / "ds-931.log"   # deepspeedai/DeepSpeed#931: OVERFLOW! in the first steps, then training
    assert meta(log)["label"] == "healthy"
    report = diagnose(log)
    assert report["status"] == "none"
    assert report["results"] == []
    assert [n["entry"] for n in report["notes"]] == ["deepspeed-fp16-overflow-skipping-steps"]
    assert report["headline"] == "No failure found. 1 benign warning noted."
    assert run_cli("diagnose", str(log)).returncode == 1


def test_fp16_overflow_that_persists_down_to_a_tiny_scale_is_a_failure(diagnose):
    """ymcui/Chinese-LLaMA-Alpaca#534 (verbatim excerpt): the scale falls 64 → 2, then the run aborts."""
    log = REPO / "tests" / "logs" / "real" / "loss-scale-collapse-chinese-llama-alpaca-534.log"
    report = diagnose(log)
    assert report["status"] == "known"
    assert report["first_failure"]["entry"] == "deepspeed-fp16-loss-scale-at-minimum"
    assert "Attempted loss scale: 8, reducing to 4" in report["first_failure"]["text"]


def test_a_persistent_warning_turns_into_a_failure_only_when_dense_enough():
    """The `persistent` rule on the line numbers of matches (count within a window of lines)."""
    finding = Finding("w", 10, "high", match_lines=[0, 3, 6, 9, 900])
    assert persisted(finding, Persistence(count=4, within=10))
    assert not persisted(finding, Persistence(count=4, within=9))
    assert not persisted(finding, Persistence(count=6, within=10_000))


def test_a_message_wrapped_onto_the_next_line_is_matched(diagnose):
    """pytorch/pytorch#45950 posts `NCCL error in:` with the rest wrapped onto further lines."""
    log = THREADS / "pt-45950.log"
    assert "NCCL error in:\n" in log.read_text(encoding="utf-8")
    report = diagnose(log)
    assert report["first_failure"]["entry"] == "nccl-unhandled-system-error"
    assert "unhandled system error" in report["results"][0]["lines"][0]["text"]


def test_an_error_the_job_survived_is_reported_as_handled(diagnose):
    log = RUNS / "healthy_handled_errors.log"   # caught FileNotFoundError, printed with its traceback
    assert meta(log)["label"] == "healthy"
    report = diagnose(log)
    assert report["status"] == "none"
    assert report["handled"] and report["handled"][0]["text"].startswith("FileNotFoundError")
    assert "printed and handled" in report["headline"]


def test_decoration_is_removed_before_matching(diagnose, tmp_path):
    """ANSI colours, carriage returns and an issue's `> ` quote around a real posted line."""
    line = meta(THREADS / "pt-45950.log")   # keep the fixture real: take the posted lines
    text = (THREADS / "pt-45950.log").read_text(encoding="utf-8").splitlines()
    decorated = ["> \x1b[31m" + text[0] + "\x1b[0m\r"] + ["> " + t for t in text[1:]]
    path = tmp_path / "quoted.log"
    path.write_text("\n".join(decorated) + "\n", encoding="utf-8")
    assert line["label"] == "nccl-unhandled-system-error"
    assert diagnose(path)["first_failure"]["entry"] == "nccl-unhandled-system-error"


def test_the_model_keeps_bounded_evidence():
    model = LogModel()
    from rootcause.matching.logline import parse_line

    for n in range(10_000):
        model.feed(n, parse_line(f"[rank{n % 8}]: ValueError: bad value {n}"), "exception", ("ValueError", f"bad {n}"))
    assert len(model.failures) == 200 and model.saturated   # the rest are not even looked at
    assert isinstance(model.failures[0], Failure)


def test_json_report_has_the_documented_fields():
    result = run_cli("diagnose", "--json", str(RUNS / "rank_indexerror.log"))
    data = json.loads(result.stdout)
    assert set(data) == {"lines_scanned", "bytes_scanned", "status", "headline", "results", "first_failure",
                         "unknown", "possible", "notes", "handled", "consequence_streams", "launcher", "encyclopedia",
                         "next_steps", "stopped", "symptom"}
    documented = (REPO / "content" / "command-line.md").read_text(encoding="utf-8")
    for field in data:
        assert f"`{field}`" in documented, f"the report table of content/command-line.md does not document {field}"


def test_timestamps_outweigh_print_order_and_the_launchers_report(diagnose):
    """Rank 1 fails first (its logger's timestamp), but its buffered lines are printed after rank
    0's, and torchrun names rank 0: the timestamps decide."""
    log = RUNS / "buffered_log_sigterm.log"
    text = log.read_text(encoding="utf-8")
    assert text.index("RuntimeError: checkpoint shard 0") < text.index("ValueError: tokenizer returned")
    report = diagnose(log)
    assert [r["rank"] for r in report["launcher"] if r["root"]] == [0]
    first = report["first_failure"]
    assert first["rank"] == meta(log)["first_rank"] == 1
    assert first["text"] == "ValueError: tokenizer returned 0 tokens for sample 71"
    assert first["evidence"][0].startswith("its own timestamp (2026-12-01 11:07:19,236) is the earliest")
    assert any("names rank 0 instead" in e for e in first["evidence"])


@pytest.mark.parametrize("before, explained", [
    ("assert", True),      # CUDA's device-side assertion lines, then the traceback cut short
    ("warning", False),    # a warning entry's line explains nothing
    ("far", False),        # the cause is more than MESSAGE_LINES lines before the traceback
])
def test_a_traceback_cut_before_its_exception_line_is_explained_by_the_cause_just_before_it(
        diagnose, tmp_path, before, explained):
    lead = {"assert": ["/opt/pytorch/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1284: indexSelectLargeIndex: block: "
                       "[37,0,0], thread: [92,0,0] Assertion `srcIndex < srcSelectDimSize` failed."] * 2,
            "warning": ["[rank0]: [W1201 10:00:00 reducer.cpp:1400] Warning: find_unused_parameters=True was specified in "
                        "DDP constructor, but did not find any unused parameters in the forward pass."],
            "far": ["/opt/pytorch/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1284: indexSelectLargeIndex: block: "
                    "[37,0,0], thread: [92,0,0] Assertion `srcIndex < srcSelectDimSize` failed."]
            + ["[rank0]: step 7"] * 12}[before]
    log = tmp_path / "cut.log"
    log.write_text("\n".join(lead + ["[rank0]: Traceback (most recent call last):",
                                      '[rank0]:   File "/workspace/train.py", line 154, in <module>',
                                      "[rank0]:     loss = step(batch)"]) + "\n", encoding="utf-8")
    report = diagnose(log)
    if explained:
        assert report["status"] == "known" and report["unknown"] == []
        assert report["first_failure"]["entry"] == "cuda-device-side-assert"
        assert report["first_failure"]["line"] == 1
    else:
        assert report["status"] == "unknown"
        assert [u["text"] for u in report["unknown"]] == ["a Python traceback whose exception line is not in the log"]


def test_a_real_excerpt_of_device_asserts_and_a_cut_traceback_names_the_assert(diagnose):
    log = THREADS / "megatron-1038.log"   # the 'device-side assert triggered' line is not in the excerpt
    report = diagnose(log)
    assert meta(log)["label"] == "cuda-device-side-assert"
    assert report["first_failure"]["entry"] == "cuda-device-side-assert"
    assert report["unknown"] == []


def test_an_excerpt_of_only_a_c10_backtrace_is_an_error_not_a_healthy_log(diagnose):
    """The excerpt begins below the error's message: c10's backtrace header still says a torch C++
    error was raised, and where; the report must not be 'No failure found'."""
    log = THREADS / "pt-150916.log"
    report = diagnose(log)
    assert meta(log)["label"] == "none"
    assert report["status"] == "unknown"
    assert [u["text"] for u in report["unknown"]] == [
        "a C++ error raised from ncclCommWatchdog at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1901, "
        "whose message is not in the log"]


def test_a_c10_backtrace_below_its_message_adds_no_second_error(diagnose):
    """With its message in the log (the `what():` of the `terminate called` before it), the header
    is part of that error: the report is what it was without the header."""
    log = THREADS / "pt-152780.log"
    report = diagnose(log)
    assert meta(log)["label"] == "cuda-illegal-memory-access"
    assert report["first_failure"]["entry"] == "cuda-illegal-memory-access"
    assert not any("whose message is not in the log" in u["text"] for u in report["unknown"])


def test_a_terminate_line_cut_inside_the_class_name_is_still_an_error(diagnose, tmp_path):
    """An excerpt of a watchdog abort that ends inside `terminate called after throwing an instance
    of 'c10::DistBackendE`: the process was ended by a C++ exception, so the log is not healthy;
    the report quotes the class as far as the log shows it, adding no closing quote. With the
    watchdog's backtrace above it (the whole excerpt), that backtrace's raising frame
    (`WorkNCCL::checkTimeout`) says which error it is: the watchdog's timeout."""
    log = THREADS / "llamafactory-5558.log"
    text = log.read_text(encoding="utf-8")
    assert text.rstrip().endswith("instance of 'c10::DistBackendE")
    alone = tmp_path / "terminate-only.log"
    alone.write_text(text.rstrip().splitlines()[-1] + "\n", encoding="utf-8")
    report = diagnose(alone)
    assert report["status"] == "unknown"
    assert report["first_failure"]["text"] == "terminate called after throwing an instance of 'c10::DistBackendE"
    assert report["first_failure"]["host"] == "mpi-rc1ou1aw-launcher"
    report = diagnose(log)
    assert meta(log)["label"] == "nccl-watchdog-collective-timeout"
    assert report["status"] == "consequences" and report["unknown"] == []
    assert report["first_failure"]["entry"] == "nccl-watchdog-collective-timeout"


@pytest.mark.parametrize("name, rank", [("mmdet-6588", 0), ("modded-nanogpt-8", 5), ("colossalai-3514", 3)])
def test_on_one_node_the_agents_local_rank_names_the_first_failing_rank(diagnose, name, rank):
    """torchrun's agent reports the process that failed first by its local rank:
    `failed (exitcode: 1) local_rank: 0 (pid: 3208990) of binary: ...` (open-mmlab/mmdetection#6588,
    after an unprefixed AssertionError traceback), `... local_rank: 5 (pid: 119) ...`
    (KellerJordan/modded-nanogpt#8, the workers' tracebacks not in the excerpt), `(exitcode: -9)
    local_rank: 3` (hpcaitech/ColossalAI#3514). On a log that shows one node that is the rank."""
    log = THREADS / f"{name}.log"
    assert meta(log)["first_rank"] == rank
    assert f"local_rank: {rank} (pid: " in log.read_text(encoding="utf-8")
    assert diagnose(log)["first_failure"]["rank"] == rank


def test_on_several_nodes_the_agents_local_rank_is_not_a_rank(diagnose, tmp_path):
    """The same agent line (KellerJordan/modded-nanogpt#8) behind pdsh's host prefixes of two nodes
    (the other node's line an event line the log model reads: NCCL's bootstrap): local rank 5 of
    `node-b` is not rank 5, so the report names no rank rather than a wrong one."""
    agent = ("E1006 18:04:10.454885 126467783853248 torch/distributed/elastic/multiprocessing/api.py:826] failed "
             "(exitcode: 1) local_rank: 5 (pid: 119) of binary: /opt/conda/envs/py_3.9/bin/python")
    log = tmp_path / "two-nodes.log"
    nccl = ":4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>"
    log.write_text(f"node-a{nccl}\nnode-b: {agent}\n", encoding="utf-8")
    report = diagnose(log)
    assert report["launcher"] and report["first_failure"]["rank"] is None
    one = tmp_path / "one-node.log"
    one.write_text(f"node-b{nccl}\nnode-b: {agent}\n", encoding="utf-8")
    assert diagnose(one)["first_failure"]["rank"] == 5


def test_the_agents_line_below_an_exception_is_not_its_message(diagnose):
    """open-mmlab/mmdetection#6588: an unprefixed `AssertionError` traceback, then torchrun's
    `ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid:
    3208990) of binary: ...` on the next line. The agent's line matches torchrun's summary
    (a consequence), but a launcher's report of an exit is never the message of the exception
    above it: the AssertionError stays the failure no entry explains."""
    log = THREADS / "mmdet-6588.log"
    assert meta(log)["label"] == "none"
    report = diagnose(log)
    assert report["status"] == "unknown"
    assert report["first_failure"]["text"] == "AssertionError" and report["first_failure"]["rank"] == 0
    assert "torchrun-child-failed-error" in [r["entry"] for r in report["results"]]


def test_the_agents_line_and_the_launchers_cut_traceback_are_torchruns_summary(diagnose):
    """hiyouga/LlamaFactory#7233: the agent's SIGTERM lines, `failed (exitcode: 1) local_rank: 2
    (pid: 2958760)`, and torchrun's own traceback cut inside `elastic_launch(`: the log shows
    torchrun's summary of a worker that failed (its error is not in the excerpt), on rank 2."""
    log = THREADS / "llamafactory-7233.log"
    assert meta(log)["label"] == "torchrun-child-failed-error"
    report = diagnose(log)
    assert report["status"] == "consequences"
    assert report["first_failure"]["entry"] == "torchrun-child-failed-error"
    assert report["first_failure"]["rank"] == meta(log)["first_rank"] == 2
    assert not report["unknown"]


def test_a_log_that_stops_in_dataset_preprocessing_lists_its_hangs_as_possible(diagnose):
    """axolotl-ai-cloud/axolotl#2684 ends in `Tokenizing Prompts (num_proc=64): 74%|███████▎ |
    264524/359152 [17:36<08:52, 177.69 examples/s]` (rank 0 tokenised past the distributed timeout
    while the others waited). The decoration drops a progress bar with its description, so the
    phase is read from the line as printed. No failure is claimed; the hangs of that phase are
    listed as possible."""
    log = THREADS / "axolotl-2684.log"
    report = diagnose(log)
    assert report["status"] == "none" and report["first_failure"] is None
    assert report["stopped"]["phase"] == "data-preprocessing"
    assert report["stopped"]["line"] == 10
    assert [e["entry"] for e in report["stopped"]["entries"]][0] == meta(log)["label"]
    assert report["headline"].startswith("No failure found.")


def test_a_preprocessing_bar_far_from_the_end_is_not_where_the_log_stops(diagnose, tmp_path):
    """The same bar (axolotl-ai-cloud/axolotl#2684), then training goes on: no phase is named."""
    bar = "Tokenizing Prompts (num_proc=64): 74%|███████▎ | 264524/359152 [17:36<08:52, 177.69 examples/s]"
    log = tmp_path / "trained.log"
    log.write_text(bar + "\n" + "".join(f"{{'loss': 1.{n}, 'epoch': 0.{n}}}\n" for n in range(20)), encoding="utf-8")
    report = diagnose(log)
    assert report["status"] == "none" and report["stopped"] is None


@pytest.mark.parametrize("name", ["silent_exit_zero_four", "two_nodes_exit_zero"])
def test_a_rank_that_exited_0_early_is_the_one_torchruns_report_leaves_out(diagnose, name):
    """The failing rank leaves with os._exit(0): no error line, and no record in torchrun's report,
    which lists every process of its node that failed (those it stopped too). The others fail with
    gloo's peer errors. On one node of 4 (rank 2) the highest rank shown, 3, says rank 2 exists; on
    two nodes of 2 (rank 3, local rank 1 of node-b) the reports' hosts and local ranks say 4 ran,
    and node-b's report, `<NO_OTHER_FAILURES>` besides rank 2, leaves its local rank 1 out."""
    log = RUNS / f"{name}.log"
    rank = meta(log)["first_rank"]
    text = log.read_text(encoding="utf-8")
    assert f"rank      : {rank} (local_rank:" not in text and f"[rank{rank}]:" not in text
    report = diagnose(log)
    first = report["first_failure"]
    assert report["status"] == "unknown" and first["entry"] is None
    assert first["rank"] == rank
    assert first["text"] == f"rank {rank} exited with status 0 while the others were still running, without an error message"
    assert any("appears nowhere in the log" in e for e in first["evidence"])
    assert any("lists every process of that node that failed, and not this one" in e for e in first["evidence"])
    claims = [r["rank"] for r in report["launcher"] if r["root"]]
    assert rank not in claims


def test_without_torchruns_report_the_missing_rank_is_named_but_the_consequence_stays_the_verdict(diagnose, tmp_path):
    """silent_exit_zero_four cut before torchrun's summary, as a thread's excerpt often is: ranks 0,
    1 and 3 fail with peer errors and rank 2 shows no error line. The numbering still says rank 2
    exists, but without the report nothing says it exited rather than that the excerpt left it out:
    the rank is named, the verdict stays what the log shows (the peer errors' entry)."""
    text = (RUNS / "silent_exit_zero_four.log").read_text(encoding="utf-8")
    excerpt = tmp_path / "excerpt.log"
    excerpt.write_text(text.split("\nTraceback (most recent call last):\n")[0] + "\n", encoding="utf-8")
    assert "Root Cause" not in excerpt.read_text(encoding="utf-8")
    report = diagnose(excerpt)
    first = report["first_failure"]
    assert report["status"] == "consequences"
    assert first["entry"] == "gloo-connection-closed-by-peer"
    assert first["rank"] == 2
    assert any("rank 2, which the job's numbering says exists" in e for e in first["evidence"])


@pytest.mark.parametrize("name, host", [("two_nodes_silent_exit", "node-b"), ("two_nodes_sigkill", "node-a")])
def test_on_two_nodes_each_agents_own_root_cause_is_weighed_by_its_rank(diagnose, name, host):
    """Two torchrun agents (--nnodes 2, 2 processes each) in one merged log: `[default0]:` and
    `[default1]:` name local ranks both nodes have, and each agent prints its own report with its
    own `Root Cause`. The failing rank prints nothing (os._exit(1) on node-b; SIGKILL on node-a);
    the other node's report names one of its own ranks, failed with a peer error, as root cause."""
    log = RUNS / f"{name}.log"
    rank = meta(log)["first_rank"]
    report = diagnose(log)
    roots = [(r["rank"], r["host"]) for r in report["launcher"] if r["root"]]
    assert len(roots) == 2 and len({h for _r, h in roots}) == 2 and (rank, host) in roots
    first = report["first_failure"]
    assert first["rank"] == rank and first["host"] == host
    assert first["entry"] == meta(log)["label"] or meta(log)["label"] == "none"


def test_the_odd_collective_is_told_by_its_shape_when_the_op_is_the_same(diagnose):
    """mismatch_shape_detail_four: every rank all_reduces at step 2, rank 2 a tensor of 4 entries
    where the others' have 3. Each rank's DETAIL report names two fingerprints, all
    `OpType=ALLREDUCE`; rank 3's report is printed first and torchrun names rank 0."""
    log = RUNS / "mismatch_shape_detail_four.log"
    text = log.read_text(encoding="utf-8")
    assert "OpType=ALLGATHER" not in text and "OpType=BROADCAST" not in text
    report = diagnose(log)
    first = report["first_failure"]
    assert first["entry"] == "distributed-mismatched-collectives"
    assert first["rank"] == meta(log)["first_rank"] == 2
    assert any("(ALLREDUCE, TensorShape=[4], TensorDtypes=Float) differs from the one every other rank ran "
               "(ALLREDUCE, TensorShape=[3], TensorDtypes=Float)" in e for e in first["evidence"])
    assert [r["rank"] for r in report["launcher"] if r["root"]] == [0]


def test_the_rank_that_waited_in_another_collective_is_named(diagnose):
    """uneven_shard_barrier_four: rank 1's shard ends two batches early; it prints 'epoch finished'
    and waits in dist.barrier() while ranks 0, 2 and 3 wait in the next all_reduce. Every rank
    fails waiting (three gloo timeouts ending `in all_reduce`, rank 1's peer error ending `in
    barrier`) and torchrun names a rank that only timed out. No entry explains a short shard: the
    rank is named, the consequences stay the verdict."""
    log = RUNS / "uneven_shard_barrier_four.log"
    text = log.read_text(encoding="utf-8")
    assert "[rank1]:   File \"/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", " \
           "line 5356, in barrier" in text
    report = diagnose(log)
    first = report["first_failure"]
    assert report["status"] == "consequences"
    assert first["rank"] == meta(log)["first_rank"] == 1
    assert any("rank 1 in barrier, ranks 0, 2, 3 in all_reduce" in e for e in first["evidence"])
    claims = [r["rank"] for r in report["launcher"] if r["root"]]
    assert claims and claims[0] != 1
    assert any(f"names rank {claims[0]} instead" in e for e in first["evidence"])


def test_an_error_that_only_sounds_like_a_peers_is_the_ranks_own(diagnose):
    """data_server_reset: rank 1's data server resets the connection, and its read raises
    `ConnectionResetError: [Errno 104] Connection reset by peer` in its own fetch_batch; ranks 0
    and 2 fail in torch's all_reduce with gloo's `Connection closed by peer`. The words are a
    peer's, but the traceback stops outside the collectives every other rank waits in: it is rank
    1's own error, the first failure."""
    log = RUNS / "data_server_reset.log"
    report = diagnose(log)
    first = report["first_failure"]
    assert report["status"] == "unknown" and first["entry"] is None
    assert first["rank"] == meta(log)["first_rank"] == 1
    assert first["text"] == "ConnectionResetError: [Errno 104] Connection reset by peer"
    assert "fetch_batch" in first["location"]
    assert any("outside the collectives: its own error" in e for e in first["evidence"])
    assert [u["text"] for u in report["unknown"]] == [first["text"]]


def test_of_several_nodes_reports_the_earliest_root_cause_is_the_launchers_claim(diagnose, tmp_path):
    """two_nodes_files_sigkill: each node's output in its own file, node-a's read first. node-a's
    report names rank 0 (a peer error, 17:21:49) as its root cause; node-b's, later in the log,
    names rank 3 (SIGKILL, 17:21:47). The agent's `failed (exitcode: -9) local_rank: 1` line has no
    host, and both nodes have a local rank 1: the rank comes from the earliest report."""
    log = RUNS / "two_nodes_files_sigkill.log"
    report = diagnose(log)
    roots = [(r["rank"], r["time"]) for r in report["launcher"] if r["root"]]
    assert roots == [(0, "2026-12-07_17:21:49"), (3, "2026-12-07_17:21:47")]
    first = report["first_failure"]
    assert first["entry"] == meta(log)["label"] == "torchrun-worker-killed-sigkill"
    assert first["rank"] == meta(log)["first_rank"] == 3
    # the same two files given to the command line one after the other read as this log
    text = log.read_text(encoding="utf-8")
    cut = text.index("\n", text.index("  traceback : To enable traceback see")) + 1
    cut = text.index("\n", text.index("=====", cut)) + 1
    (tmp_path / "node-a.log").write_text(text[:cut], encoding="utf-8")
    (tmp_path / "node-b.log").write_text(text[cut:], encoding="utf-8")
    result = run_cli("diagnose", "--json", str(tmp_path / "node-a.log"), str(tmp_path / "node-b.log"))
    assert json.loads(result.stdout)["first_failure"]["rank"] == 3


def test_a_log_that_stops_inside_the_checkpoint_shards_bar_lists_a_host_oom_kill_as_possible(diagnose, tmp_path):
    """transformers' `Loading checkpoint shards:` bar, not yet full, is where the log stops: every
    local rank reading the checkpoint into host memory is what the kernel's OOM killer ends
    without a word. A full bar is loading done: no phase is named."""
    log = tmp_path / "load.log"
    log.write_text("Loading checkpoint shards:  50%|█████     | 2/4 [00:41<00:41, 20.6s/it]\n", encoding="utf-8")
    report = diagnose(log)
    assert report["status"] == "none" and report["stopped"]["phase"] == "checkpoint-load"
    assert [e["entry"] for e in report["stopped"]["entries"]] == ["linux-oom-killer-process-killed"]
    log.write_text("Loading checkpoint shards: 100%|██████████| 4/4 [01:22<00:00, 20.6s/it]\n", encoding="utf-8")
    assert diagnose(log)["stopped"] is None


def test_a_log_that_stops_at_the_extensions_root_line_lists_the_stale_build_lock_as_possible(diagnose, tmp_path):
    """The line a DeepSpeed op or any `cpp_extension.load` prints before it builds (quoted from
    OpenRLHF/OpenRLHF#208), then nothing: a build killed earlier left its lock file, and every
    later run waits on it. Possible, never the diagnosis."""
    log = tmp_path / "jit.log"
    log.write_text("Using  .cache/torch_extensions/py310_cu118 as PyTorch extensions root...\n" * 3, encoding="utf-8")
    report = diagnose(log)
    assert report["status"] == "none" and report["stopped"]["phase"] == "jit-build"
    assert [e["entry"] for e in report["stopped"]["entries"]] == ["torch-extension-build-stale-lock"]
