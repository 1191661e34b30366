"""`rootcause new ID --from-log FILE` on real logs: signatures check accepts and that match their examples,
in an entry that `check` refuses until no field says TODO any more (E058)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO, make_project, run_cli
from rootcause.matching.propose import mask, normalised

LOGS = {
    # (log, origin for the filled-in example, what the first proposal must be); logs whose failure
    # no entry explains yet (once one does, its proposal collides with that entry: E035, as it should)
    "reproduced run": ("bench/real_logs/runs/custom_exception_crash_report.log",
                       'reproduced: "torch 2.13.0+cpu, Python 3.11: torchrun --nproc_per_node 4 --tee 3 '
                       'scripts/custom_exception_crash_report.py --fail-rank 2"',
                       "CorruptBatchError: invalid checksum in batch {int}"),
    "DeepSpeedExamples thread": ("bench/real_logs/threads/ds-examples-790-b.log",
                                 "posted: https://github.com/deepspeedai/DeepSpeedExamples/issues/790",
                                 "ValueError: Expected input batch_size ({int}) to match target batch_size ({int})."),
    "PyTorch thread": ("bench/real_logs/threads/pt-3641.log",
                       "posted: https://github.com/pytorch/pytorch/issues/3641",
                       "RuntimeError: all inputs must have the same number of elements"),
}


@pytest.mark.parametrize("case", list(LOGS))
def test_a_log_becomes_an_entry_whose_signatures_check_accepts(tmp_path: Path, case: str):
    log, origin, expected = LOGS[case]
    project = make_project(tmp_path / "p", sorted((REPO / "entries").glob("*.yaml")))
    result = run_cli("--root", str(project), "new", "from-log-case", "--from-log", str(REPO / log))
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert f": {expected}" in out
    path = project / "entries" / "from-log-case.yaml"
    text = path.read_text(encoding="utf-8")
    assert f'  - pattern: "{expected}"' in text
    # the example is the real lines, verbatim
    example_lines = [line[10:] for line in text.splitlines() if line.startswith("          ")]
    log_lines = (REPO / log).read_text(encoding="utf-8").splitlines()
    assert example_lines and all(line in log_lines for line in example_lines if line)
    # as a contributor would: fill in the vocabulary and say where the example comes from
    filled = (text.replace("category: TODO", "category: data").replace("systems: [TODO]", "systems: [pytorch]")
              .replace("phase: TODO", "phase: forward-backward").replace("severity: TODO", "severity: high")
              .replace("role: TODO", "role: cause"))
    filled = re.sub(r'(?m)^        reproduced: ".*"$', "        " + origin, filled)
    path.write_text(filled, encoding="utf-8")
    # the scaffold is not an entry yet: every field still saying TODO is refused, where it is
    checked = run_cli("--root", str(project), "check")
    assert checked.returncode == 1
    refused = {m.group(2): int(m.group(1)) for m in re.finditer(
        r"(?m)^entries/from-log-case\.yaml:(\d+):\d+: error\[E058\]: ([\w.]+): still holds the placeholder TODO",
        checked.stdout.decode())}
    lines = filled.splitlines()
    for field in ("title", "summary", "root_cause", "fix.0.step", "fix.0.command", "references.0.title",
                  "references.0.url", "signatures.0.source"):
        assert field in refused, (field, checked.stdout.decode())
        key = field.split(".")[-1] if field[-1].isalpha() else field.split(".")[0]
        line = lines[refused[field] - 1]   # the field's line (a block scalar's text starts on the next)
        assert key in line and ("TODO" in line or "TODO" in lines[refused[field]]), (field, line)
    assert all(code == "E058" for code in re.findall(r"error\[(\w+)\]", checked.stdout.decode()))
    # written out, as an author would, it passes
    written = re.sub(r"TODO[^\n\"]*", "written by the author", filled)
    written = written.replace("url: https://github.com/written by the author",
                              "url: https://github.com/pytorch/pytorch/blob/main/torch/utils/data/dataloader.py")
    path.write_text(written, encoding="utf-8")
    checked = run_cli("--root", str(project), "check")
    assert checked.returncode == 0, checked.stdout.decode()


def test_the_masking_rules_are_those_documented():
    line = ("[rank3]: RuntimeError: shape torch.Size([8, 1024]) at 10.0.0.7:29500 on [node-3]:29501 from "
            "/data/ckpt/step_100/model.pt ids [1, 2, 3] dtype torch.bfloat16 ptr 0x7f3a lr 3e-05 loss 1.96 step 808 sm_80")
    assert mask(normalised(line)) == ("RuntimeError: shape {shape} at {host}:{int} on [{host}]:{int} from {path} ids {ints} "
                                      "dtype {dtype} ptr {hex} lr {float} loss {float} step {int} sm_80")
    assert mask("a {literal} brace") == "a {{literal}} brace"


def test_a_log_without_a_failure_says_so(tmp_path: Path):
    project = make_project(tmp_path / "p")
    log = tmp_path / "healthy.log"
    log.write_text("[rank0]: step 1 loss 2.3\n[rank0]: step 2 loss 2.1\n")
    result = run_cli("--root", str(project), "new", "x-y", "--from-log", str(log))
    assert result.returncode == 1 and "no failure found" in result.stderr.decode()
    assert not (project / "entries" / "x-y.yaml").exists()
