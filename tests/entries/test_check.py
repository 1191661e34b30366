"""`rootcause check`: every problem in one run, as path:line:col: error[CODE]: what — how to fix."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from cache_helpers import store_of
from conftest import REPO, run_cli

BROKEN = REPO / "tests" / "broken"


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """A copy of tests/broken: `check` keeps its results in the project's build cache, which
    must neither land in the source tree nor make a later run a warm one."""
    project = tmp_path / "broken"
    shutil.copytree(BROKEN, project, ignore=shutil.ignore_patterns(".rootcause-cache"))
    return project


def test_broken_entries_give_exactly_the_expected_messages(broken: Path):
    result = run_cli("--root", str(broken), "check")
    assert result.returncode == 1
    expected = (BROKEN / "expected.txt").read_text(encoding="utf-8")
    assert result.stdout.decode() == expected
    assert result.stderr.decode().strip() == "checked 15 entry files: 51 errors in 18 files"


def test_every_documented_code_in_the_golden_output_is_explained():
    from rootcause.errors import CODES

    codes = {re.search(r"(?:error|warning)\[(\w+)\]", line).group(1)
             for line in (BROKEN / "expected.txt").read_text().splitlines()}
    assert codes <= set(CODES)
    docs = (REPO / "content" / "writing-entries.md").read_text(encoding="utf-8")
    for code in CODES:
        assert f"\n### {code}: " in docs, f"{code} is not documented in content/writing-entries.md"


def test_a_check_from_the_build_cache_says_exactly_what_a_cold_one_says(broken: Path):
    """`check` keeps each entry's result in the build cache and takes an unchanged entry from it
    (validated again by the model); a damaged record is checked again, an edited entry too."""
    project = broken
    expected = (BROKEN / "expected.txt").read_text(encoding="utf-8")
    runs = [run_cli("--root", str(project), "check") for _ in range(2)]
    assert [(r.returncode, r.stdout.decode()) for r in runs] == [(1, expected)] * 2
    assert runs[0].stderr == runs[1].stderr
    records = sorted((store_of(project) / "build-entries").iterdir())
    assert len(records) == 15   # one per entry file that could be read, broken ones too
    damaged = bytearray(records[0].read_bytes())
    damaged[-3] ^= 0x01
    records[0].write_bytes(bytes(damaged))
    records[1].write_bytes(b"")
    again = run_cli("--root", str(project), "check")
    assert (again.returncode, again.stdout.decode(), again.stderr) == (1, expected, runs[0].stderr)
    target = next(p for p in sorted((project / "entries").glob("*.yaml")) if "\nseverity: " in p.read_text(encoding="utf-8"))
    target.write_text(target.read_text(encoding="utf-8").replace("\nseverity: ", "\nseverity: unheard-of-", 1),
                      encoding="utf-8")
    edited = run_cli("--root", str(project), "check").stdout.decode()
    assert "unheard-of-" not in expected
    assert any(line.startswith(f"entries/{target.name}:") and "unheard-of-" in line for line in edited.splitlines())


def test_json_and_github_formats_carry_the_same_problems(broken: Path):
    as_json = json.loads(run_cli("--root", str(broken), "check", "--format", "json").stdout)
    github = run_cli("--root", str(broken), "check", "--format", "github").stdout.decode().splitlines()
    assert len(as_json) == len(github) == 51
    first = as_json[0]
    assert github[0].startswith(f"::error file={first['path']},line={first['line']},col={first['column']},title={first['code']}::")


def test_explain_prints_a_code_and_rejects_unknown_ones():
    assert run_cli("check", "--explain", "E033").stdout.decode().startswith("E033: signature does not match")
    assert run_cli("check", "--explain", "E999").returncode == 2


def test_bundled_entries_are_clean():
    """No error and no warning: in particular no version or issue number the references do not tie
    (E045, E049), which were warnings while the bundled entries still carried 52 of them."""
    result = run_cli("check", timeout=600)   # (the whole bundled encyclopedia: a minute on a quiet machine)
    assert result.returncode == 0, result.stdout.decode()
    assert result.stdout.decode() == ""
    assert result.stderr.decode().strip().endswith("entry files: no problems"), result.stderr.decode()


def test_an_untied_version_and_an_uncited_issue_are_positioned_errors(tmp_path: Path):
    from conftest import make_project

    project = make_project(tmp_path / "p", [BROKEN / "entries" / "good-reference-entry.yaml"])
    entry = project / "entries" / "good-reference-entry.yaml"
    text = entry.read_text(encoding="utf-8")
    text = text.replace("root_cause: A reason.\n", "root_cause: |\n  A reason.\n  Since DeepSpeed 0.9.2 the engine refuses it; see #1234.\n")
    text = text.replace("reviewed: 2026-11-30\n", "references:\n  - kind: issue\n    title: another issue\n"
                        "    url: https://github.com/deepspeedai/DeepSpeed/issues/99\nreviewed: 2026-11-30\n")
    entry.write_text(text, encoding="utf-8")
    result = run_cli("--root", str(project), "check")
    out = result.stdout.decode()
    assert result.returncode == 1, out
    assert ("entries/good-reference-entry.yaml:15:13: error[E045]: root_cause: version DeepSpeed 0.9.2 is not tied "
            "to a source") in out, out
    assert ("entries/good-reference-entry.yaml:15:13: error[E049]: root_cause: '#1234' is cited but not among the "
            "references") in out, out
    assert "warning[" not in out

    # tied, both disappear: the version by a reference's title, the issue by its address
    entry.write_text(text.replace("title: another issue", "title: DeepSpeed 0.9.2 release notes")
                     .replace("issues/99", "issues/1234"), encoding="utf-8")
    result = run_cli("--root", str(project), "check")
    assert result.returncode == 0, result.stdout.decode()
    assert result.stdout.decode() == ""


def test_a_todo_left_from_the_scaffold_is_a_positioned_error(tmp_path: Path):
    """E058: the title, the root cause, a fix step and a reference still saying TODO are refused,
    each where it stands; TODO printed by software (in a pattern, a log example) and words that
    merely begin with it are not."""
    from conftest import make_project

    project = make_project(tmp_path / "p", [BROKEN / "entries" / "good-reference-entry.yaml"])
    entry = project / "entries" / "good-reference-entry.yaml"
    clean = entry.read_text(encoding="utf-8")
    # software's own TODO is left alone: a pattern and its example, a TODOV1 in the prose
    clean = (clean.replace("is {int}.\"\n", "is {int}. TODO\"\n").replace("currently supported.\"", "currently supported. TODO\"")
             .replace("root_cause: A reason.\n", "root_cause: A reason (the launcher's TODOV1 comment says so).\n"))
    entry.write_text(clean, encoding="utf-8")
    result = run_cli("--root", str(project), "check")
    assert result.returncode == 0, result.stdout.decode()
    scaffold = (clean.replace("title: A valid entry that others point at", "title: TODO what failed")
                .replace("root_cause: A reason", "root_cause: TODO the mechanism. A reason")
                .replace("  - Convert the checkpoint.\n", "  - step: TODO what to do\n    command: TODO the exact command\n")
                .replace("reviewed: 2026-11-30\n", "references:\n  - kind: source\n    title: TODO\n"
                         "    url: https://github.com/TODO\nreviewed: 2026-11-30\n"))
    entry.write_text(scaffold, encoding="utf-8")
    result = run_cli("--root", str(project), "check")
    out = result.stdout.decode()
    assert result.returncode == 1, out
    path = "entries/good-reference-entry.yaml"
    for position, field in (("2:8", "title"), ("15:13", "root_cause"), ("17:11", "fix.0.step"),
                            ("18:14", "fix.0.command"), ("21:12", "references.0.title"), ("22:10", "references.0.url")):
        assert (f"{path}:{position}: error[E058]: {field}: still holds the placeholder TODO that `rootcause new` "
                "wrote — ") in out, (field, out)
    assert "cite the real source: its title and its address" in out
    assert "write what it stands for, or remove the item; an entry is published as it stands" in out
    assert len(re.findall(r"error\[E058\]", out)) == 6, out
    assert run_cli("check", "--explain", "E058").stdout.decode().startswith("E058: a field still holds the TODO")


def test_bad_site_yml_is_reported_with_its_position(tmp_path: Path):
    shutil.copytree(BROKEN, tmp_path / "p")
    site = tmp_path / "p" / "site.yml"
    site.write_text(site.read_text().replace("url: https://", "url: ftp://").replace("recent: 8", "recnt: 8"))
    result = run_cli("--root", str(tmp_path / "p"), "check")
    assert result.returncode == 1
    out = result.stdout.decode()
    assert "site.yml:5:6: error[E015]: url: 'ftp://" in out
    assert "site.yml:9:1: error[E010]: unknown field 'recnt' — did you mean 'recent'?" in out


def test_new_scaffolds_an_entry_that_check_then_explains(tmp_path: Path):
    project = tmp_path / "p"
    shutil.copytree(BROKEN, project)
    for path in (project / "entries").glob("*.yaml"):
        if path.name != "good-reference-entry.yaml":
            path.unlink()
    (project / "content" / "bad-page.md").unlink()
    assert run_cli("--root", str(project), "new", "my-new-failure").returncode == 0
    assert run_cli("--root", str(project), "new", "Bad_Id").returncode == 2
    out = run_cli("--root", str(project), "check").stdout.decode()
    assert "entries/my-new-failure.yaml:6:11: error[E013]: category: 'TODO' is not in site.yml's categories" in out


def test_committed_json_schema_is_current():
    """Editors read entry.schema.json through each entry's first line; it must match the code."""
    from rootcause.config import load_config
    from rootcause.entries.schema import json_schema_text

    config, _ = load_config(REPO)
    assert (REPO / "entry.schema.json").read_text(encoding="utf-8") == json_schema_text(config), \
        "run `python build.py schema` and commit entry.schema.json"


def test_schema_has_vocabularies_as_enums():
    schema = json.loads((REPO / "entry.schema.json").read_text())
    assert "deepspeed" in schema["properties"]["systems"]["items"]["enum"]
    assert schema["additionalProperties"] is False


def test_an_entry_written_twice_is_a_warning_that_names_the_other(tmp_path: Path):
    from conftest import make_project

    project = make_project(tmp_path / "p", [REPO / "entries" / "cuda-out-of-memory.yaml"])
    text = (REPO / "entries" / "cuda-out-of-memory.yaml").read_text(encoding="utf-8")
    text = text.replace("id: cuda-out-of-memory", "id: gpu-memory-exhausted", 1)
    text = re.sub(r"(?m)^related:\n(?:  .*\n)+", "related: []\n", text)
    (project / "entries" / "gpu-memory-exhausted.yaml").write_text(text, encoding="utf-8")
    original = project / "entries" / "cuda-out-of-memory.yaml"
    original.write_text(re.sub(r"(?m)^related:\n(?:  .*\n)+", "related: []\n", original.read_text()), encoding="utf-8")
    result = run_cli("--root", str(project), "check")
    out = result.stdout.decode()
    assert ("entries/gpu-memory-exhausted.yaml:2:5: warning[W001]: reads like 'cuda-out-of-memory' "
            "(entries/cuda-out-of-memory.yaml): 100% of their search terms agree") in out, out
    assert "error[E035]" in out   # the copied examples also collide: that part is an error


def test_which_hash_numbers_count_as_citations():
    """A bare '#N' cites an issue, after a filler word or a bracket too; 'rank #3' or 'GPU #1' is no
    citation, and a sentence's full stop is not part of a repository's name."""
    from rootcause.entries.claims import _uncited

    threads = [("deepspeedai", "DeepSpeed", "pull", 5)]
    assert list(_uncited("see #1234 and (#596)", threads)) == ["#1234", "#596"]
    assert list(_uncited("it re-raises. #2386 replaced it", threads)) == ["#2386"]
    assert list(_uncited("rank #3 on GPU #1 at step #120", threads)) == []
    assert list(_uncited("DeepSpeed #5 and PR #5 and (#5)", threads)) == []
    assert list(_uncited("PR #6, issue #7, pytorch/torchtitan#3738", threads)) == ["PR #6", "issue #7",
                                                                                 "pytorch/torchtitan#3738"]


def test_near_duplicate_pairs_are_every_pair_a_brute_force_finds():
    """`similar_pairs` counts shared strong terms per entry (not per pair of a term's entries):
    the same pairs, with the same cosines, as comparing every pair of entries that share three
    of their twelve strongest terms (terms held by more than 200 entries excepted), summed
    exactly."""
    import itertools
    import math
    import random

    from rootcause.entries.catalog import similar_pairs

    rng = random.Random(7)
    common = [f"common{i}" for i in range(3)]   # among the strongest terms of every entry
    vectors = {}
    for n in range(260):
        terms = common + rng.sample([f"t{i}" for i in range(60)], 12) + [f"own{n}-{i}" for i in range(4)]
        weights = {term: rng.choice([0.5, 1.0, 1.0, 2.0]) * (5 if term in common else 1) for term in terms}
        norm = sum(w * w for w in weights.values()) ** 0.5
        vectors[f"e{n:03}"] = {term: w / norm for term, w in weights.items()}

    def strongest(vector):
        return sorted(vector, key=lambda t: -vector[t])[:12]

    holders: dict[str, int] = {}
    for vector in vectors.values():
        for term in strongest(vector):
            holders[term] = holders.get(term, 0) + 1
    expected = []
    for a, b in itertools.combinations(sorted(vectors), 2):
        shared = {t for t in strongest(vectors[a]) if holders[t] <= 200} & set(strongest(vectors[b]))
        cosine = math.fsum(x * vectors[b].get(t, 0.0) for t, x in vectors[a].items())
        if len(shared) >= 3 and cosine >= 0.45:
            expected.append((cosine, a, b))
    assert holders["common0"] == 260   # too common to count
    assert 10 < len(expected) < 2000
    assert similar_pairs(vectors, 0.45) == sorted(expected, reverse=True)
