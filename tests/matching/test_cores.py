"""Signatures match the failure, not one rendering of it: cores, elided variable parts, and the
mutation check that holds every example to them."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO, copy_bundled_project, run_cli
from rootcause.encyclopedia import Encyclopedia
from rootcause.entries.mutations import mutations
from rootcause.matching.patterns import compile_pattern, core_problem, derive_core, literal_pieces


@pytest.fixture(scope="module")
def bundled():
    return Encyclopedia.open(root=REPO)


def first(encyclopedia, text: str) -> tuple[str | None, str | None]:
    report = encyclopedia.diagnose_text(text, 3)
    top = report["results"][0] if report["results"] and report["status"] != "none" else None
    return (top["entry"], top["confidence"]) if top else (None, None)


@pytest.mark.parametrize("pattern, core", [
    # the exception class goes, the message's first clause that names something stays
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {float} {word}", "CUDA out of memory"),
    ("CUDA error: an illegal memory access was encountered", "an illegal memory access was encountered"),
    ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum={int}, OpType={word})",
     "Watchdog caught collective operation timeout: WorkNCCL(SeqNum="),
    # an operating system's or CPython's own words identify nothing
    ("FileNotFoundError: [Errno 2] No such file or directory: '{path}/latest'", ""),
    ("TypeError: __init__() got an unexpected keyword argument '{name}'", ""),
    # but a name beside them does
    ("TypeError: TrainingArguments.__init__() got an unexpected keyword argument '{name}'",
     "TrainingArguments.__init__() got an unexpected keyword argument"),
    # three common words are not enough: the core starts where the message names something
    ("size mismatch for {name}: copying a param with shape torch.Size([0]) from checkpoint",
     "copying a param with shape torch.Size([0]"),
])
def test_a_core_is_derived_from_the_patterns_own_words(pattern: str, core: str):
    assert derive_core(literal_pieces(pattern, False)) == core


def test_a_derived_core_avoids_the_signatures_counter_examples():
    pieces = literal_pieces("Expected all tensors to be on the same device, but found {word}", False)
    assert derive_core(pieces) == "Expected all tensors to be on the same device"
    # a counter-example holding the first clause pushes the core to the next boundary
    assert derive_core(pieces, ["Expected all tensors to be on the same device (ignored)"]) == \
        "Expected all tensors to be on the same device, but found"


def test_a_declared_core_must_be_literal_text_of_the_pattern():
    pieces = literal_pieces("Unexpected key(s) in state_dict: \"module.{name}\"", False)
    assert core_problem('Unexpected key(s) in state_dict: "module.', pieces) is None
    assert "literal text" in core_problem("Unexpected key(s) in the checkpoint", pieces)
    assert "at least" in core_problem("state_dict", pieces)


def test_elided_variable_parts_match_a_placeholder():
    regex = compile_pattern("failed (exitcode: {int}) local_rank: {int} (pid: {int})").compile_re2()
    for pasted in ("failed (exitcode: -9) local_rank: N (pid: ...)", "failed (exitcode: 1) local_rank: 0 (pid: <pid>)",
                   "failed (exitcode: 1) local_rank: \u2026 (pid: ***)"):
        assert regex.search(pasted), pasted


def test_the_issues_renderings_name_the_failure(bundled):
    # cut after the core, and the other exception classes releases print
    assert first(bundled, "torch.cuda.OutOfMemoryError: CUDA out of memory") == ("cuda-out-of-memory", "low")
    # the whole message behind another wrapper's words: a whole match, whatever its class
    assert first(bundled, "RuntimeError: merge_sort: failed to synchronize: cudaErrorIllegalAddress: an illegal "
                          "memory access was encountered") == ("cuda-illegal-memory-access", "high")
    assert first(bundled, "ValueError: Your setup doesn't support bf16/gpu.") == ("bf16-unsupported-hardware", "high")
    assert first(bundled, "RuntimeError: Your setup doesn't support bf16/gpu.") == ("bf16-unsupported-hardware", "high")
    # the whole line stays the strong match
    assert first(bundled, "RuntimeError: CUDA error: an illegal memory access was encountered") == \
        ("cuda-illegal-memory-access", "high")


def test_a_short_core_in_a_line_that_is_no_error_names_nothing(bundled):
    assert first(bundled, "[rank0]: set PYTORCH_CUDA_ALLOC_CONF to avoid CUDA out of memory in long runs") == \
        (None, None)


def test_a_watchdog_line_wrapped_at_word_boundaries_is_still_the_watchdog(bundled):
    """Wrapped by a form or an editor at 100 columns: the message over three physical lines."""
    import textwrap

    line = ("[rank3]:[E1201 10:00:00.000000 1234 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=15734, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600010 milliseconds before timing out.")
    wrapped = "\n".join(textwrap.wrap(line, 100))
    assert len(wrapped.splitlines()) == 3
    assert first(bundled, wrapped)[0] == "nccl-watchdog-collective-timeout"


def test_a_message_wrapped_onto_a_last_line_without_its_newline_is_joined(bundled):
    """A paste usually ends without a newline: the message wrapped onto that last line is read
    as it is with one (the last line used to be a block of its own, out of the join's reach)."""
    wrapped = "ValueError: You can't train a model that has been loaded in 8-bit precision on\nmultiple devices."
    assert first(bundled, wrapped)[0] == first(bundled, wrapped + "\n")[0] == \
        "accelerate-quantized-model-wrong-device"


def test_mutations_are_the_pastes_people_make():
    example = "Traceback (most recent call last):\n  File \"t.py\", line 3\ntorch.OutOfMemoryError: CUDA out of " \
              "memory. Tried to allocate 2.00 GiB"
    found = dict(mutations(example, 2, "CUDA out of memory",
                           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {float} {word}"))
    assert found["behind a torchrun rank prefix"].splitlines()[2].startswith("[rank3]: torch.OutOfMemoryError")
    assert found["quoted with '> '"].startswith("> Traceback")
    assert "\r\n" in found["with CRLF line ends"]
    assert found["cut after its core"].splitlines()[-1] == "torch.OutOfMemoryError: CUDA out of memory"
    assert found["behind another exception class"].splitlines()[2] == \
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert found["without its exception class"].splitlines()[2] == "CUDA out of memory. Tried to allocate 2.00 GiB"
    # only what a placeholder matched is elided: the message's own numbers are part of it
    assert found["with its numbers elided"].splitlines()[2] == \
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate N GiB"


def test_check_reports_a_mutation_that_names_another_entry_at_the_example(tmp_path: Path):
    """A core that is too weak to hold its example when cut: E056 at the example's line."""
    project = copy_bundled_project(tmp_path / "p")
    path = project / "entries" / "xla-tpu-initialization-failed.yaml"
    text = path.read_text(encoding="utf-8")
    assert "    core: ''\n" in text
    path.write_text(text.replace("    core: ''\n", ""), encoding="utf-8")   # back to the derived core
    result = run_cli("--root", str(project), "check")
    assert result.returncode == 1
    lines = [l for l in result.stdout.decode().splitlines() if "E056" in l]
    assert len(lines) == 1
    where = lines[0].split(": error[E056]: ")[0]
    line = next(n for n, l in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if l.strip() == "examples:")
    assert where.startswith("entries/xla-tpu-initialization-failed.yaml:") and int(where.split(":")[1]) > line
    assert "cut after its core, names no entry instead of this entry" in lines[0]


def test_a_log_that_stops_in_nccl_init_says_so_and_offers_the_hang_entries_as_possible(bundled):
    log = "\n".join(["[rank0]:node-1:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
                     "[rank0]:node-1:4242:4242 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
                     "[rank1]:node-1:4243:4243 [1] NCCL INFO Channel 00/02 :    0   1"])
    report = bundled.diagnose_text(log)
    assert report["status"] == "none" and report["results"] == []   # never the diagnosis
    assert report["stopped"]["phase"] == "nccl-init"
    assert [hit["entry"] for hit in report["stopped"]["entries"]] == ["distributed-init-hang",
                                                                     "nccl-socket-interface-not-found"]
    done = bundled.diagnose_text(log + "\n" + "\n".join(f"[rank0]: step {n} loss 2.0" for n in range(20)))
    assert done["stopped"] is None and done["headline"].startswith("No failure found.")
