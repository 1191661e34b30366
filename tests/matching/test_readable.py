"""Signatures as readers read them (hub tables): the message with named placeholders, never a regex."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rootcause.matching.patterns import PLACEHOLDERS, compile_pattern, compile_regex
from rootcause.matching.readable import NAMES, readable

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize("regex, shown", [
    (r"'\] exits with return code = [0-9]+$", "'] exits with return code = N"),
    (r"exits with return code = -6$", "exits with return code = -6"),
    (r"ValidationError: [0-9]+ validation errors? for DeepSpeed[A-Za-z]*Config",
     "ValidationError: N validation error[s] for DeepSpeed…Config"),
    (r"__init__\(\) got an unexpected keyword argument '(evaluate_during_training|evaluation_strategy)'",
     "__init__() got an unexpected keyword argument 'evaluate_during_training/evaluation_strategy'"),
    (r"No module named '(transformer_engine|apex)'", "No module named 'transformer_engine/apex'"),
    (r"No such file or directory: '[^']*tmp-checkpoint-[0-9]+'", "No such file or directory: '…tmp-checkpoint-N'"),
    (r"Fatal Python error: (none_dealloc: )?deallocating None", "Fatal Python error: [none_dealloc: ]deallocating None"),
    (r"(?:^|: line [0-9]+: +[0-9]+ +)Segmentation fault(?: +\(core dumped\))?",
     "[: line N: N ]Segmentation fault[ (core dumped)]"),
    (r"AssertionError: ([Tt]ensor model|[Pp]ipeline) parallel group", "AssertionError: (Tensor model | Pipeline) parallel group"),
    (r"Input type \(torch\.[A-Z][A-Za-z]*\)", "Input type (torch.NAME)"),
    (r"segfault at 0x[0-9a-f]+ in module (a|b|c|d|e)", "segfault at 0xHEX in module a/…"),
])
def test_a_regex_reads_as_its_message(regex: str, shown: str):
    compile_regex(regex)   # in the portable subset
    assert readable(regex, regex=True) == shown


def test_a_pattern_names_its_placeholders_and_unescapes_braces():
    assert readable("size mismatch for {name}: copying {shape} from {path}, {{literal}} {any}") == \
        "size mismatch for NAME: copying SHAPE from PATH, {literal} …"
    assert set(NAMES) == set(PLACEHOLDERS)


def test_no_signature_of_the_encyclopedia_reads_as_a_regex():
    """Whatever the bundled entries hold: no regex syntax survives (a backslash, a class, a
    quantifier after a group), and every literal word of the signature is still there."""
    for path in sorted((REPO / "entries").glob("*.yaml")):
        entry = yaml.safe_load(path.read_text(encoding="utf-8"))
        for signature in entry.get("signatures") or []:
            for step in signature.get("lines") or [signature]:
                if "regex" not in step:
                    continue
                shown = readable(step["regex"], regex=True)
                assert "\\" not in shown and not re.search(r"\[\^|\[[A-Za-z0-9]-[A-Za-z0-9]|\)[?*+]|\{\d", shown), \
                    (path.name, step["regex"], shown)
                longest = compile_regex(step["regex"]).anchor.strip(" '\"")
                assert longest in shown or longest in re.sub(r"[\[\]]", "", shown), (path.name, longest, shown)
