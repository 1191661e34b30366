"""Issue 9, item 8: nothing from an entry, a log or a file name is injected into what the CLI prints.

A file name holding a newline started workflow commands of its own in `check --format github`
(GitHub's runner reads every line of a CI log that starts with `::`), and `\\0` and `\\e` escapes
in an entry's title reached the terminal raw through `diagnose`.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from conftest import run_cli

HOSTILE = Path(__file__).resolve().parent
TIMEOUT = 60
#: what may not reach a terminal: C0 controls but tab and newline, DEL, C1, bidi overrides/isolates
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_a_file_name_cannot_inject_workflow_commands(small_project: Path):
    evil = "x\n::warning file=README.md,line=1::pwned\r\n::add-mask::secret,:%.yaml"
    (small_project / "entries" / evil).write_text("id: abc\n")  # E014 names the file in its hint too
    result = run_cli("--root", str(small_project), "check", "--format", "github", timeout=TIMEOUT)
    assert result.returncode == 1
    lines = result.stdout.decode().splitlines()
    problems = json.loads(run_cli("--root", str(small_project), "check", "--format", "json",
                                  timeout=TIMEOUT).stdout)
    assert len(lines) == len(problems) > 2  # one command per problem: no more lines, no fewer
    assert all(line.startswith("::error file=entries/x%0A%3A%3Awarning file=README.md%2Cline=1%3A%3Apwned"
                               "%0D%0A%3A%3Aadd-mask%3A%3Asecret%2C%3A%25.yaml,line=") for line in lines), lines
    # the message (after the second '::') escapes the same name with the data rules: % CR LF only
    assert "or set id: x%0A::warning file=README.md,line=1::pwned%0D%0A::add-mask::secret,:%25" in "".join(lines)
    assert not CONTROL.search(result.stdout.decode())
    # text output: one line per problem, controls dropped
    text = run_cli("--root", str(small_project), "check", timeout=TIMEOUT).stdout.decode()
    assert len(text.splitlines()) == len(problems) and not CONTROL.search(text)
    assert not any(line.startswith("::") for line in text.splitlines())


def test_workflow_command_escaping_follows_githubs_rules():
    from rootcause.commands.output import escape_data, escape_property, github_command
    from rootcause.errors import Diagnostic

    assert escape_data("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext: a,b"
    assert escape_property("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext%3A a%2Cb"
    assert escape_data("bell\x07 escape\x1b[31m red\u202e") == "bell escape red"
    line = github_command(Diagnostic("a,b:c.yaml", 3, 4, "E012", "50%\nbad", "fix: it"))
    assert line == "::error file=a%2Cb%3Ac.yaml,line=3,col=4,title=E012::E012: 50%25%0Abad — fix: it"


def write_log(folder: Path) -> Path:
    log = folder / "train.log"
    log.write_bytes(b"[rank0]: \x1b[1;31mrootcause hostile fixture: the terminal must stay clean at step 3\x1b[0m "
                    b"\xe2\x80\xae\x07\n")
    return log


def test_diagnose_prints_no_control_character_from_an_entry_or_a_log(small_project: Path, tmp_path: Path):
    shutil.copy(HOSTILE / "title-escapes.yaml", small_project / "entries")
    log = write_log(tmp_path)
    result = run_cli("--root", str(small_project), "diagnose", str(log), timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert "1. Hostile fixture red title with override  (title-escapes; cause; Strong match: the log prints this entry's own error message)" in out
    assert "   Summary that tries to retitle the terminal  and ring  the bell." in out
    assert "[rank 0] rootcause hostile fixture: the terminal must stay clean at step 3 " in out
    assert "Then fix: First step  that tries to clear the screen." in out
    assert not CONTROL.search(out), repr(out)
    # JSON keeps the text as it is, escaped (ASCII only): a tool gets the data, a terminal no escape
    data = run_cli("--root", str(small_project), "diagnose", "--json", str(log), timeout=TIMEOUT).stdout
    assert not CONTROL.search(data.decode()) and data.isascii()
    assert json.loads(data)["results"][0]["title"] == "Hostile fixture \x1b[31mred\x1b[0m title\x00 with \u202eoverride"


def test_diagnose_from_a_built_site_strips_the_same(small_project: Path, tmp_path: Path):
    """A built site's signatures.json may come from anywhere: its titles are printed safely too."""
    shutil.copy(HOSTILE / "title-escapes.yaml", small_project / "entries")
    assert run_cli("--root", str(small_project), "build", "-q", timeout=TIMEOUT).returncode == 0
    result = run_cli("diagnose", "--site", str(small_project / "site"), str(write_log(tmp_path)), timeout=TIMEOUT)
    assert result.returncode == 0
    assert "Hostile fixture red title with override" in result.stdout.decode()
    assert not CONTROL.search(result.stdout.decode())


def test_printable_removes_escape_sequences_whole():
    from rootcause.text import printable

    assert printable("\x1b[1;31mred\x1b[0m \x1b]0;title\x07ok \x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\") == "red ok link"
    assert printable("a\tb\nc\rd\x00e\x7ff\x85g\u2066h") == "a\tb\ncdefgh"
    assert printable("a\tb\nc", one_line=True) == "a b c"
    assert printable("Grüße — 日本語 ✓") == "Grüße — 日本語 ✓"
