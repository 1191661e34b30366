"""`rootcause check --explain CODE` and the codes section of content/writing-entries.md: one
source (`rootcause.explanations`), every code explained with a wrong and a right example, and
every wrong example really reported with its code by `check` (or `build`), every right one not."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from rootcause.errors import CODES
from rootcause.explanations import EXPLANATIONS, HEADING

BASE = REPO / "tests" / "explain"
RUN = [code for code, e in EXPLANATIONS.items() if not e.not_shown]


def test_every_code_has_a_whole_explanation():
    from rootcause.explanations import _ALL

    assert set(EXPLANATIONS) == set(CODES) and len(_ALL) == len(CODES)   # none twice
    for code, e in EXPLANATIONS.items():
        assert len(e.meaning) > 30 and e.fix, code
        assert e.wrong.strip() and e.right.strip() and (e.wrong != e.right or e.right_file), code
        assert e.now == "" or e.now in CODES, code
    # the codes whose wrong example is not run say why; none of them is a check of an entry's text
    assert {c for c, e in EXPLANATIONS.items() if e.not_shown} == {"E002", "E008", "E051", "E052"}


def test_the_page_is_generated_from_the_explanations():
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from write_code_docs import PAGE, written
    finally:
        sys.path.remove(str(REPO / "scripts"))
    text = PAGE.read_text(encoding="utf-8")
    assert written(text) == text, "content/writing-entries.md is stale: run python scripts/write_code_docs.py"
    section = text[text.index(f"\n{HEADING}\n"):]
    for code, e in EXPLANATIONS.items():
        assert f"\n### {code}: {CODES[code]}\n" in section
        assert e.wrong in section and e.right in section


def test_explain_prints_the_whole_explanation():
    result = run_cli("check", "--explain", "e033")
    assert result.returncode == 0
    out = result.stdout.decode()
    e = EXPLANATIONS["E033"]
    assert out.startswith("E033: signature does not match its own example\n\n")
    assert "\nWrong (entries/worker-killed.yaml):\n\n" in out and "\nRight:\n\n" in out and "How to fix it:" in out
    for line in e.wrong.splitlines() + e.right.splitlines():
        assert f"    {line}\n" in out
    assert all(len(line) <= 79 for line in out.splitlines() if not line.startswith("    ") and "[" not in line[:5])
    retired = run_cli("check", "--explain", "W002").stdout.decode()
    assert "Reported now as E045: rootcause check --explain E045" in retired


@pytest.mark.parametrize("asked", ["E999", "X", "E03", "W004"])
def test_explain_refuses_an_unknown_code(asked: str):
    result = run_cli("check", "--explain", asked)
    assert result.returncode == 2 and result.stdout == b""
    message = result.stderr.decode()
    last = max(code for code in CODES if code.startswith("E"))
    assert message.startswith(f"unknown code '{asked}': codes are E001 to {last} and W001 to W003")


def _top_keys(text: str) -> list[str]:
    return re.findall(r"^([A-Za-z_][\w-]*):", text, flags=re.M)


def _laid_over(base: str, snippet: str) -> str:
    """`base` (YAML of top-level fields, nested values indented) with the fields `snippet` names
    replaced by the snippet's."""
    replaced = set(_top_keys(snippet))
    kept, skipping = [], False
    for line in base.splitlines():
        top = re.match(r"([A-Za-z_][\w-]*):", line)
        if top:
            skipping = top.group(1) in replaced
        elif line and not line.startswith((" ", "#")):
            skipping = False
        if not skipping:
            kept.append(line)
    return "\n".join(kept).rstrip("\n") + "\n" + snippet + "\n"


def _project(folder: Path) -> Path:
    (folder / "entries").mkdir(parents=True)
    (folder / "study").mkdir()
    for name in ("worker-killed.yaml", "shm-too-small.yaml"):
        shutil.copy(BASE / name, folder / "entries" / name)
    shutil.copy(BASE / "threads.tsv", folder / "study" / "threads.tsv")
    shutil.copytree(REPO / "tests" / "broken" / "healthy", folder / "healthy")
    site = (REPO / "tests" / "broken" / "site.yml").read_text(encoding="utf-8")
    (folder / "site.yml").write_text(site, encoding="utf-8")
    return folder


def _write_example(project: Path, code: str, text: str, encoding: str = "utf-8", right: bool = False) -> None:
    e = EXPLANATIONS[code]
    target = project / (e.right_file if right and e.right_file else e.file)
    if e.file == "site.yml" or (e.file.startswith("entries/") and not text.lstrip().startswith("- ")):
        if target.exists():
            base = target.read_text(encoding="utf-8")
        else:   # a second entry: the first one, under the file's name
            base = (BASE / "worker-killed.yaml").read_text(encoding="utf-8").replace(
                "id: worker-killed\n", f"id: {target.stem}\n", 1)
        text = _laid_over(base, text)
    elif not text.endswith("\n"):
        text += "\n"
    if e.file.startswith("theme/"):
        site = project / "site.yml"
        site.write_text(site.read_text(encoding="utf-8") + "theme: theme\n", encoding="utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(text.encode(encoding))


def _codes(project: Path, command: str) -> set[str]:
    from rootcause.commands.cli import main

    out, err = io.StringIO(), io.StringIO()
    args = ["--root", str(project), command] + (["--format", "json"] if command == "check" else [])
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(args)
    if command == "check":
        return {d["code"] for d in json.loads(out.getvalue())}
    return set(re.findall(r"(?:error|warning)\[(\w+)\]", out.getvalue() + err.getvalue()))


def test_the_base_project_is_clean(tmp_path: Path):
    assert _codes(_project(tmp_path / "p"), "check") == set()


@pytest.mark.parametrize("code", RUN)
def test_the_wrong_example_is_reported_and_the_right_one_is_not(tmp_path: Path, code: str):
    e = EXPLANATIONS[code]
    expected = e.now or code
    wrong = _project(tmp_path / "wrong")
    _write_example(wrong, code, e.wrong, e.wrong_encoding)
    found = _codes(wrong, e.command)
    assert expected in found, f"{code}'s wrong example gives {sorted(found)}"
    right = _project(tmp_path / "right")
    _write_example(right, code, e.right, right=True)
    found = _codes(right, e.command)
    assert expected not in found, f"{code}'s right example gives {sorted(found)}"
