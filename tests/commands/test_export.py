"""`rootcause export`: Loki alerting rules and a Vector remap program that mean what the entries say."""

from __future__ import annotations

import re
from pathlib import Path

import re2
import yaml

from conftest import REPO, copy_bundled_project, run_cli
from rootcause.entries.project import open_project

EXPR = re.compile(r"^sum by \(job\) \(count_over_time\((\{.*\}) \|~ `([^`]*)` \[(\d+[smhdw])\]\)\) >= (\d+)$")
VRL_LINE = re.compile(r"^if match\(message, r'([^']*)'\) \{ entries = push\(entries, \"([a-z0-9-]+)\"\) \}$")


def project():
    opened, problems = open_project(REPO)
    assert opened is not None and not [d for d in problems if d.severity == "error"]
    return opened


def exported_lines_match(regex: str, entry_id: str, catalog, skipped_text: str) -> None:
    """Every example of every exported signature has a line the exported regex finds."""
    compiled = re2.compile(regex)
    loaded = catalog.entries[entry_id]
    for sig in loaded.entry.signatures:
        number = loaded.entry.signatures.index(sig) + 1
        if f"{entry_id} signature {number}:" in skipped_text:
            continue
        for example in sig.example_logs:
            assert any(compiled.search(line) for line in example.splitlines()), (entry_id, number, example[:200])


def test_loki_rules_have_the_ruler_shape_and_match_every_exported_example(tmp_path: Path):
    out = tmp_path / "rules.yaml"
    result = run_cli("export", "--format", "loki", "-o", str(out), "--selector", '{job="train"}', "--range", "10m")
    assert result.returncode == 0, result.stderr.decode()
    text = out.read_text(encoding="utf-8")
    header = "".join(line for line in text.splitlines(True) if line.startswith("#"))
    data = yaml.safe_load(text)
    [group] = data["groups"]
    assert group["name"] == "rootcause"
    opened = project()
    catalog, base = opened.catalog, opened.config.base_url
    names = set()
    for rule in group["rules"]:
        assert re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", rule["alert"]) and rule["alert"] not in names
        names.add(rule["alert"])
        match = EXPR.match(rule["expr"])
        assert match, rule["expr"][:200]
        selector, regex, window, threshold = match.groups()
        assert (selector, window) == ('{job="train"}', "10m")
        entry_id = rule["labels"]["entry"]
        entry = catalog.entries[entry_id].entry
        assert rule["labels"] == {"severity": entry.severity, "entry": entry_id, "system": entry.systems[0],
                                  "role": entry.role}
        assert rule["annotations"]["runbook_url"] == f"{base}entries/{entry_id}/"
        assert int(threshold) == (entry.persistent.count if entry.role == "warning" else 1)
        exported_lines_match(regex, entry_id, catalog, header)
    # every entry is either a rule or named as not exported, and the reason is given
    for entry_id, loaded in catalog.entries.items():
        if entry_id not in {r["labels"]["entry"] for r in group["rules"]}:
            assert f"#   - {entry_id}:" in header, entry_id
    assert "'unless' veto cannot be expressed" in header   # the bundled entries have such signatures
    assert "exported" in result.stderr.decode()


def test_vector_program_tags_lines_with_entries_whose_examples_it_matches():
    result = run_cli("export", "--format", "vector")
    assert result.returncode == 0
    text = result.stdout.decode()
    lines = text.splitlines()
    assert 'message = to_string(.message) ?? ""' in lines and lines[-1] == "if length(entries) > 0 { .rootcause_entries = entries }"
    header = "".join(line + "\n" for line in lines if line.startswith("#"))
    catalog = project().catalog
    rules = [VRL_LINE.match(line) for line in lines if line.startswith("if match(")]
    assert rules and all(rules)
    for match in rules:
        exported_lines_match(match.group(1), match.group(2), catalog, header)
    # the regexes carry no quote that would end a VRL raw string early
    assert all("'" not in m.group(1) for m in rules)


def test_bad_options_are_refused_plainly():
    result = run_cli("export", "--format", "loki", "--selector", "job=train")
    assert result.returncode == 2 and "stream selector in braces" in result.stderr.decode()
    result = run_cli("export", "--format", "loki", "--range", "five minutes")
    assert result.returncode == 2 and "--range must be a duration" in result.stderr.decode()


def loki_rules_of(*args: str, cwd: Path = REPO) -> tuple[list[dict], str]:
    result = run_cli(*args, "export", "--format", "loki", cwd=cwd)
    assert result.returncode == 0, result.stderr.decode()
    text = result.stdout.decode()
    return yaml.safe_load(text)["groups"][0]["rules"], text


def test_a_multi_line_signature_is_exported_only_through_the_line_its_entry_declares_distinctive():
    rules, text = loki_rules_of()
    exported = {r["labels"]["entry"]: r for r in rules}
    catalog = project().catalog
    for entry_id, loaded in catalog.entries.items():
        for number, sig in enumerate(loaded.entry.signatures, 1):
            if not sig.lines or sig.unless:
                continue
            if sig.alert_line is None:
                assert f"#   - {entry_id} signature {number}: a multi-line signature means its lines together" in text
            else:
                assert f"signature {number}: its line {sig.alert_line} of {len(sig.lines)} only" in \
                    exported[entry_id]["annotations"]["narrowed"]
    # the rules the review found firing on healthy runs and on other failures are gone
    assert "RootcauseZero3Rank0HostOomGathering16bitWeights" not in {r["alert"] for r in rules}
    assert "Training completed" not in text.split("groups:", 1)[1]
    assert "cuda-oom-during-evaluation" not in exported


def test_no_exported_rule_fires_on_a_healthy_run_of_the_benchmark():
    """The real healthy runs of bench/real_logs/runs (not the healthy logs the checks use), line by line."""
    rules, _text = loki_rules_of()
    healthy = sorted((REPO / "bench" / "real_logs" / "runs").glob("healthy_*.log"))
    assert len(healthy) >= 3
    for rule in rules:
        regex = re2.compile(EXPR.match(rule["expr"]).group(2))
        for log in healthy:
            for number, line in enumerate(log.read_text(encoding="utf-8").splitlines(), 1):
                assert not regex.search(line), (rule["alert"], log.name, number, line)


def test_an_exported_line_that_a_healthy_log_prints_is_an_error_in_check_and_export(tmp_path: Path):
    entry = REPO / "entries" / "deepspeed-fp16-loss-scale-at-minimum.yaml"
    folder = copy_bundled_project(tmp_path / "p")
    text = (folder / "entries" / entry.name).read_text(encoding="utf-8")
    assert "    alert_line: 2\n" in text
    (folder / "entries" / entry.name).write_text(text.replace("    alert_line: 2\n", "    alert_line: 1\n"),
                                                 encoding="utf-8")
    (folder / "tests" / "logs" / "healthy" / "steady.log").write_text("step 5 loss 1.2\n  self.loss_scaler.update_scale(has_overflow)\nstep 6\n",
                                        encoding="utf-8")
    line = next(n for n, l in enumerate(text.splitlines(), 1) if l.strip() == "- lines:")
    check = run_cli("--root", str(folder), "check")
    assert check.returncode == 1
    assert (f"entries/{entry.name}:{line}:5: error[E055]: the alert rule exported for this entry matches line 2 of "
            "the healthy log steady.log") in check.stdout.decode()
    export = run_cli("--root", str(folder), "export", "--format", "loki")
    assert export.returncode == 1 and export.stdout == b"" and b"E055" in export.stderr


def test_entry_text_cannot_act_as_a_loki_template():
    from rootcause.commands.export import go_literal

    assert go_literal("Use {{ .Values }} and }} alone") == '{{"Use {{ .Values }} and }} alone"}}'
    assert go_literal('a {}} "b" \\ {{\n') == '{{"a {}} \\"b\\" \\\\ {{\\x0a"}}'
    assert go_literal("no action }} here {") == "no action }} here {"   # only {{ opens an action
    _rules, text = loki_rules_of()
    for rule in yaml.safe_load(text)["groups"][0]["rules"]:
        for value in rule["annotations"].values():
            # text with {{ is one action printing a string literal; Go's own parser reads every
            # annotation in tests/hostile/test_loki_templates.py
            assert "{{" not in value or (value.startswith('{{"') and value.endswith('"}}')), value
