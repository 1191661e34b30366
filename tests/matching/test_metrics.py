"""A log with no error line still fails when the loss it ends with is NaN or exactly 0
(rootcause/matching/metrics.py): the report names the symptom's entry, on the command line and
in the browser alike, and leaves alone the losses that are healthy (a loss that falls to 0 step by
step, a GRPO loss of 0, a NaN that training recovered from) and the logs whose failure is an error.
"""

from __future__ import annotations

import pytest

from browser_helpers import PythonDiagnosis, own_site, own_site_problem, signature_data
from conftest import needs
from rootcause.matching import scanner as scanner_module
from rootcause.matching.metrics import TAIL_LINES, tail_lines

# The HF Trainer's log records as transformers prints them (the dict repr; 5.x prints the values as
# strings), Lightning's progress bar and Megatron-LM's iteration line.
HF = "{{'loss': {loss},{norm} 'learning_rate': 1.9e-05, 'epoch': {epoch}}}"
HF_5 = "{{'loss': '{loss}', 'grad_norm': '0', 'learning_rate': '0.0007333', 'epoch': '0.1'}}"
BAR = "Epoch 0:  {pct}% {step}/1702 [13:0{step}<00:24,  2.11it/s, loss={loss}, v_num=0, train_loss={loss}]"
MEGATRON = (" iteration {step}/ 2140 | consumed samples: {samples} | learning rate: 1.417E-07 | lm loss: {loss} |"
            " loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |")


def hf(*losses: str, norm: str | None = "1.2") -> list[str]:
    """Trainer records; `norm` None: as transformers before 4.38 logged them, without grad_norm
    (a grad_norm of nan is a signature of its own: entries/nonfinite-grad-norm.yaml)."""
    shown = "" if norm is None else f" 'grad_norm': {norm},"
    return [HF.format(loss=loss, norm=shown, epoch=round(0.01 * (i + 1), 2)) for i, loss in enumerate(losses)]


LOGS = {
    # the loss drops to exactly 0 and stays: the log filter hid NaN losses, or no label is left
    "zero-after-loss": ["***** Running training *****", *hf("1.0645", "1.157", "1.1938", "0.0", "0.0")],
    "zero-from-start-transformers-5": [HF_5.format(loss="0")] * 3,
    "nan-at-end": [*hf("2.31", "2.29", norm=None), *hf("nan", "nan", norm=None)],
    "nan-lightning-bar": [BAR.format(pct=p, step=s, loss=loss) for p, s, loss in
                          ((96, 1, "0.158"), (97, 2, "nan"), (97, 3, "nan"))],
    "nan-megatron-ranked": [f"[rank0]: {MEGATRON.format(step=s, samples=s * 8, loss=loss)}"
                            for s, loss in ((1, "1.930013E+00"), (2, "nan"), (3, "nan"))],
    "rl-nan": ["{'loss': nan, 'learning_rate': 1e-06, 'reward': 0.0, 'reward_std': 0.0, 'kl': nan}"],
    # healthy: a loss that falls to 0 step by step (memorisation), a GRPO loss of 0, a NaN recovered from
    "falls-to-zero": hf("0.0009", "0.0007", "0.0003", "0.0"),
    "grpo-zero": ["{'loss': 0.0, 'grad_norm': 0.79, 'learning_rate': 1.5e-06, 'rewards/accuracy_reward': 0.16, "
                  "'reward': 0.81, 'reward_std': 0.27, 'kl': 0.0, 'epoch': 0.01}"] * 2,
    "nan-recovered": hf("2.31", "nan", "2.28", "2.27"),
    "eval-nan-only": [*hf("2.31", "2.28"), "{'eval_loss': nan, 'eval_runtime': 12.5, 'epoch': 0.02}"],
    # a failure with an error line is that error, whatever the loss printed before it
    "nan-then-error": [*hf("nan", "nan", norm=None), "Traceback (most recent call last):",
                       '  File "/repro/train.py", line 12, in <module>', "    loss.backward()",
                       "RuntimeError: Function 'MulBackward0' returned nan values in its 0th output."],
}
SYMPTOM = {"zero-after-loss": ("loss-zero", 5), "zero-from-start-transformers-5": ("loss-zero", 1),
           "nan-at-end": ("loss-nonfinite", 3), "nan-lightning-bar": ("loss-nonfinite", 2),
           "nan-megatron-ranked": ("loss-nonfinite", 2), "rl-nan": ("rl-loss-nonfinite", 1)}


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    site = own_site(tmp_path_factory)
    if site is None:
        pytest.skip("the repository's entries do not pass `python build.py check` yet:\n" + own_site_problem())
    return site


@pytest.fixture(scope="module")
def python(own):
    return PythonDiagnosis(signature_data(own))


@pytest.mark.parametrize("name", sorted(LOGS))
def test_the_loss_a_log_ends_with_names_its_symptom_and_nothing_else(python, name):
    report = python.report("\n".join(LOGS[name]) + "\n", 5)
    if name not in SYMPTOM:
        assert report["symptom"] is None and report["status"] != "symptom"
        return
    sign, line = SYMPTOM[name]
    symptom = report["symptom"]
    assert (report["status"], symptom["sign"], symptom["line"]) == ("symptom", sign, line)
    assert report["first_failure"]["entry"] == symptom["entries"][0]["entry"]
    assert report["first_failure"]["line"] == line and report["results"] == []
    assert symptom["text"] in LOGS[name][line - 1] and symptom["entries"][0]["check"]
    assert report["headline"].startswith("No error line, but ")
    if name == "nan-megatron-ranked":
        assert symptom["rank"] == 0 and "rank 0" in report["headline"]


def test_each_sign_names_the_entry_that_explains_it(python):
    first = {name: python.report("\n".join(LOGS[name]) + "\n", 5)["symptom"]["entries"][0]["entry"]
             for name in ("zero-after-loss", "rl-nan")}
    assert first == {"zero-after-loss": "training-loss-exactly-zero",
                     "rl-nan": "rl-policy-nan-outputs-exclamation-marks"}


def test_an_error_outranks_the_loss(python):
    report = python.report("\n".join(LOGS["nan-then-error"]) + "\n", 5)
    assert report["status"] == "known" and report["results"][0]["entry"] == "torch-anomaly-nan-in-backward"


@needs("node")
def test_the_browser_reads_the_loss_as_the_command_line_does(own, tmp_path):
    from test_parity import differing_reports

    texts = [(name, "\n".join(lines) + "\n") for name, lines in LOGS.items()]
    texts.append(("no-final-newline", "\n".join(LOGS["zero-after-loss"])))
    texts.append(("crlf", "\r\n".join(LOGS["nan-at-end"]) + "\r\n"))
    texts.append(("long-log", "\n".join(hf(*["2.5"] * 200, "nan")) + "\n"))
    assert differing_reports(own, texts, tmp_path) == []


def test_the_tail_is_the_same_when_the_log_is_read_in_many_chunks(python, monkeypatch):
    """The tail a chunked read keeps (metrics.tail_of) is the log's last lines: a chunk of a few
    bytes, and a last chunk of fewer lines than the tail, give the report of one whole read."""
    text = "\n".join(["step line"] * 100 + hf("2.3", "0.0", "0.0")) + "\n"
    whole = python.report(text, 5)
    monkeypatch.setattr(scanner_module, "CHUNK", 64)
    chunked = python.report(text, 5)
    assert chunked["symptom"] == whole["symptom"] and whole["symptom"]["line"] == 102
    scan = python.scanner.scan_text(text)
    assert tail_lines(scan.tail) == text.split("\n")[-TAIL_LINES - 1:-1]
