"""Frame signatures: a traceback cut before its message line is the failure whose declared raising
frame (`frames:`) is its last frame, in Python and in the browser alike; the check holds every
declared frame to an example that shows it (E057)."""

from __future__ import annotations

import pytest

from browser_helpers import PythonDiagnosis, own_site, own_site_problem, signature_data
from conftest import REPO, copy_bundled_project, run_cli
from rootcause.encyclopedia import Encyclopedia
from rootcause.matching.ranking import FRAME_WORDS
from test_parity import run_node

# reproduced here: torch 2.13.0+cpu, an fp16 nn.Linear stepped through torch.amp.GradScaler("cpu")
FRAMES = [
    "Traceback (most recent call last):",
    '  File "/tmp/fr/scaler.py", line 7, in <module>',
    "    scaler.step(opt)",
    '  File "/venv/lib/python3.11/site-packages/torch/amp/grad_scaler.py", line 473, in step',
    "    self.unscale_(optimizer)",
    '  File "/venv/lib/python3.11/site-packages/torch/amp/grad_scaler.py", line 358, in unscale_',
    '    optimizer_state["found_inf_per_device"] = self._unscale_grads_(',
    '  File "/venv/lib/python3.11/site-packages/torch/amp/grad_scaler.py", line 275, in _unscale_grads_',
    '    raise ValueError("Attempting to unscale FP16 gradients.")',
]
LOGS = {
    # the excerpt stops after the raising frame's source line, which quotes the message: a match
    "cut": "\n".join(FRAMES) + "\n",
    # ... or in the middle of it (`raise ValueError("`), behind torchrun's rank prefix
    "cut-prefixed": "\n".join(f"[rank1]:{line}" for line in FRAMES[:-1] + ['    raise ValueError("']) + "\n",
    # a Windows install: backslashes in the path
    "windows": "\n".join(FRAMES[:7] + [
        '  File "C:\\Python311\\Lib\\site-packages\\torch\\amp\\grad_scaler.py", line 275, in _unscale_grads_',
        '    raise ValueError(']) + "\n",
    # cut right after the frame line: no sign that this frame raised, and not the deeper frames either
    "frame-only": "\n".join(FRAMES[:8]) + "\n",
    # a call in that frame, the deeper frames cut away (a real excerpt: PEFT #869's compute_loss)
    "call-site": "\n".join(FRAMES[:8] + ["    found_inf = self._amp_update(found_inf)"]) + "\n",
    # the message is there but cut mid-word: the class fits the pattern's
    "message-cut": "\n".join(FRAMES[:8] + ["ValueError: Attempting to unsc"]) + "\n",
    # the same function raising another class: not this failure
    "other-class": "\n".join(FRAMES[:8] + ["AssertionError: expected param to be torch.Tensor, got list"]) + "\n",
    # a file whose path only ends like the declared one
    "other-file": "\n".join(FRAMES[:7] + [
        '  File "/venv/lib/python3.11/site-packages/notamp/grad_scaler.py", line 275, in _unscale_grads_']) + "\n",
    # the frame above the last is not the raising frame
    "not-last": "\n".join(FRAMES[:8] + ["    self._check(param)",
                                     '  File "/venv/lib/python3.11/site-packages/torch/_tensor.py", line 9, in half',
                                     "    raise RuntimeError(msg)"]) + "\n",
}

# hiyouga/LlamaFactory#5558 (an excerpt of an NCCL watchdog abort, verbatim): the C++ frames of the
# watchdog's exception, then the process's `terminate called ...` line, cut inside the class name
CPP = [
    "mpi-rc1ou1aw-launcher: frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f7b5ae35897 in "
    "/mnt/afs2/yaohaishen/my_conda_env/llm_mul/lib/python3.10/site-packages/torch/lib/libc10.so)",
    "mpi-rc1ou1aw-launcher: frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
    "duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f7b5c10ec62 in /mnt/afs2/yaohaishen/my_conda_env/llm_mul/"
    "lib/python3.10/site-packages/torch/lib/libtorch_cuda.so)",
    "mpi-rc1ou1aw-launcher: frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x1a0 (0x7f7b5c113a80 in "
    "/mnt/afs2/yaohaishen/my_conda_env/llm_mul/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so)",
    "mpi-rc1ou1aw-launcher: frame #6: clone + 0x43 (0x7f7ba8e23133 in /lib/x86_64-linux-gnu/libc.so.6)",
    "mpi-rc1ou1aw-launcher: ",
    "mpi-rc1ou1aw-launcher: terminate called after throwing an instance of 'c10::DistBackendE",
]
# arrival-ltd/catalyst-rl-tutorial#15 (the watchdog entry's example) without its `what():` line
HEADER = ["terminate called after throwing an instance of 'c10::DistBackendError'",
          "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:525 "
          "(most recent call first):"]
LOGS.update({
    "cpp-frames": "\n".join(CPP) + "\n",
    "cpp-header": "\n".join(HEADER) + "\n",
    # the same function in a class not named after the declared file: not its frame
    "cpp-other-class": "\n".join(CPP).replace("ProcessGroupNCCL::WorkNCCL::checkTimeout", "Store::checkTimeout") + "\n",
    # the backtrace far above the terminate line is not its own
    "cpp-far": "\n".join(CPP[:4] + ["mpi-rc1ou1aw-launcher: step"] * 4 + CPP[5:]) + "\n",
})
CPP_ENTRY = "nccl-watchdog-collective-timeout"


@pytest.fixture(scope="module")
def bundled():
    return Encyclopedia.open(root=REPO)


def test_a_traceback_cut_in_the_raising_frame_names_its_entry_as_likely(bundled):
    assert bundled.diagnose_text(LOGS["cut"], 3)["results"][0]["entry"] == "gradscaler-unscale-fp16-gradients"
    for name in ("cut-prefixed", "windows", "message-cut"):
        report = bundled.diagnose_text(LOGS[name], 3)
        top = report["results"][0]
        assert report["status"] == "known", name
        assert top["entry"] == "gradscaler-unscale-fp16-gradients", name
        assert (top["confidence"], top["confidence_text"]) == ("medium", FRAME_WORDS), name
        assert report["first_failure"]["entry"] == "gradscaler-unscale-fp16-gradients", name
        assert "_unscale_grads_" in top["lines"][0]["text"], name
    assert bundled.diagnose_text(LOGS["cut-prefixed"], 3)["first_failure"]["rank"] == 1


def test_a_shown_exception_line_must_be_the_class_the_pattern_raises(bundled):
    report = bundled.diagnose_text(LOGS["other-class"], 3)
    assert report["status"] == "unknown"
    assert report["first_failure"]["text"].startswith("AssertionError: expected param")


def test_only_the_last_frame_and_the_declared_path_count(bundled):
    for name in ("other-file", "not-last", "frame-only", "call-site"):
        report = bundled.diagnose_text(LOGS[name], 3)
        assert report["status"] == "unknown", name
        assert "gradscaler-unscale-fp16-gradients" not in [r["entry"] for r in report["results"]], name


def test_a_whole_message_still_wins_over_the_frame(bundled):
    report = bundled.diagnose_text("\n".join(FRAMES + ["ValueError: Attempting to unscale FP16 gradients."]), 3)
    assert report["results"][0]["confidence"] == "high"
    assert report["results"][0]["confidence_text"] != FRAME_WORDS


def test_a_cpp_error_is_named_by_the_raising_frame_of_its_backtrace(bundled):
    """One error, one event: the watchdog's backtrace and the `terminate` line that follows it are
    one C++ error, whose raising frame (`WorkNCCL::checkTimeout`, declared by the watchdog entry as
    `checkTimeout` in ProcessGroupNCCL.cpp) names it, with or without c10's header."""
    for name in ("cpp-frames", "cpp-header"):
        report = bundled.diagnose_text(LOGS[name], 3)
        assert report["status"] == "consequences", name
        assert report["unknown"] == [], name
        top = report["results"][0]
        assert (top["entry"], top["confidence_text"]) == (CPP_ENTRY, FRAME_WORDS), name
        assert "checkTimeout" in top["lines"][0]["text"], name
    for name in ("cpp-other-class", "cpp-far"):
        report = bundled.diagnose_text(LOGS[name], 3)
        assert report["status"] == "unknown", name
        assert report["first_failure"]["text"].startswith("terminate called after throwing"), name
        assert CPP_ENTRY not in [r["entry"] for r in report["results"]], name


def test_the_browser_reads_frames_as_the_command_line_does(tmp_path_factory, tmp_path):
    site = own_site(tmp_path_factory)
    assert site is not None, own_site_problem()
    data = signature_data(site)
    assert any(s.get("frames") for s in data["signatures"])
    python = PythonDiagnosis(data)
    names = list(LOGS)
    node = run_node({"signatures": str(site / "search" / "signatures.json"),
                     "reports": [{"text": LOGS[n], "top": 5} for n in names]}, tmp_path)["reports"]
    for name, js in zip(names, node, strict=True):
        js.pop("ms")
        assert js == python.report(LOGS[name], 5), name


def test_check_holds_a_declared_frame_to_an_example_and_to_one_entry(tmp_path):
    project = copy_bundled_project(tmp_path / "project")
    path = project / "entries" / "trainer-model-returned-no-loss.yaml"
    text = path.read_text(encoding="utf-8")
    assert "function: compute_loss" in text
    path.write_text(text.replace("function: compute_loss", "function: training_step"), encoding="utf-8")
    other = project / "entries" / "trainer-remove-unused-columns-drops-data.yaml"
    other_text = other.read_text(encoding="utf-8")
    other.write_text(other_text.replace("function: _remove_unused_columns", "function: _determine_best_metric"),
                     encoding="utf-8")
    done = run_cli("check", cwd=project)
    out = done.stdout.decode()
    assert done.returncode != 0
    line = next(n for n, l in enumerate(text.splitlines(), 1) if "function: compute_loss" in l)
    assert f"entries/trainer-model-returned-no-loss.yaml:{line}:19: error[E057]" in out, out
    assert "error[E057]: no example of signature 1 shows the frame 'training_step'" in out, out
    assert "error[E057]: the raising frame '_determine_best_metric' in 'transformers/trainer.py' is declared by " \
           "'trainer-eval-loss-missing-label-names' too" in out, out


def test_a_frame_after_a_code_line_ending_in_a_colon_is_the_last_frame(bundled):
    """glibc's `(): ` event anchor ends in a blank; at a line break it must not carry the next
    line (a frame) into the code line before it."""
    from test_parity import LOGS as PARITY

    report = bundled.diagnose_text(PARITY["frame-after-colon-line"], 3)
    assert report["first_failure"]["location"] == 'File "b.py", line 2, in ready'
    report = bundled.diagnose_text(PARITY["error-after-caret-line"], 3)
    assert report["first_failure"]["entry"] == "nccl-internal-error"
    assert report["first_failure"]["text"].startswith("ERROR 01-29 07:44:33 engine.py:366] NCCL error")
