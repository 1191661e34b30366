"""Issue 36, item 7: `output:` in site.yml cannot point a build at anything but a folder of its own.

site.yml arrives by pull request like any entry: with `output: ../victim/site` a maintainer's
`rootcause build` wrote outside the project and the victim folder's other files were deleted.
`output:` must now name a folder inside the project that is neither the project itself, nor
one holding or inside its inputs, nor one holding another project; anything else is refused by
`check` and `build` at the `output:` key, before anything is written or deleted. `--out`, typed
by whoever runs the build, still chooses any place.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import SEED_ENTRY, make_project, run_cli


def project(folder: Path, output: str) -> Path:
    root = make_project(folder)
    text = SEED_ENTRY.read_text(encoding="utf-8")
    text = text[:text.index("\nrelated:")] + text[text.index("\nreferences:"):]
    (root / "entries" / SEED_ENTRY.name).write_text(text, encoding="utf-8")
    lines = (root / "site.yml").read_text(encoding="utf-8").splitlines(True)
    lines = [f"output: {output}\n" if line.startswith("output:") else line for line in lines]
    assert f"output: {output}\n" in lines
    (root / "site.yml").write_text("".join(lines), encoding="utf-8")
    return root


def victim(folder: Path) -> dict[str, bytes]:
    """A folder of someone's files, beside the project; what it holds."""
    (folder / "notes").mkdir(parents=True)
    (folder / "keep.txt").write_text("mine\n")
    (folder / "notes" / "a.txt").write_text("also mine\n")
    (folder / "site").mkdir()
    (folder / "site" / "index.html").write_text("<p>my own site</p>\n")
    return files(folder)


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def output_line(root: Path) -> int:
    return next(n for n, line in enumerate((root / "site.yml").read_text().splitlines(), 1) if line.startswith("output:"))


@pytest.mark.parametrize("output, code, why", [
    ("../victim/site", "E017", "climbs out with '..'"),
    ("../victim", "E017", "climbs out with '..'"),
    ("ABSOLUTE", "E017", "is an absolute path"),
    ("linked", "E017", "leads out of the project folder"),
])
def test_an_output_outside_the_project_is_refused_and_the_victim_survives(tmp_path: Path, output: str, code: str,
                                                                          why: str):
    before = victim(tmp_path / "victim")
    if output == "ABSOLUTE":
        output = str(tmp_path / "victim" / "site")
    root = project(tmp_path / "project", output)
    os.symlink(tmp_path / "victim", root / "linked")
    for command in (["check"], ["build", "-q"], ["build", "-q", "--force"]):
        result = run_cli("--root", str(root), *command)
        said = result.stdout.decode() + result.stderr.decode()
        assert result.returncode != 0, said
        assert f"site.yml:{output_line(root)}:1: error[{code}]: output: '{output}' {why}" in said, said
        assert "e.g. 'output: site'" in said and "Traceback" not in said
        assert files(tmp_path / "victim") == before
    assert not (root / "site").exists()


@pytest.mark.parametrize("output, why", [
    (".", "is the project folder itself"),
    ("entries", "is or holds the project's entries"),
    ("content/site", "lies inside the project's content"),
    ("other", "holds entries/*.yaml, as a project does"),
])
def test_an_output_over_the_project_or_another_one_is_refused(tmp_path: Path, output: str, why: str):
    root = project(tmp_path / "project", output)
    (root / "other" / "entries").mkdir(parents=True)
    (root / "other" / "entries" / "x.yaml").write_text("id: x\n")
    before = files(root)
    result = run_cli("--root", str(root), "build", "-q")
    said = result.stderr.decode()
    assert result.returncode != 0 and "Traceback" not in said, said
    assert f"site.yml:{output_line(root)}:1: error[E050]: output: '{output}' {why}" in said, said
    assert files(root) == before


def test_an_output_of_its_own_still_builds_and_out_still_goes_anywhere(tmp_path: Path):
    root = project(tmp_path / "project", "public/site")
    assert run_cli("--root", str(root), "build", "-q").returncode == 0
    assert (root / "public" / "site" / "diagnose" / "index.html").is_file()
    elsewhere = tmp_path / "elsewhere" / "site"
    assert run_cli("--root", str(root), "build", "-q", "--out", str(elsewhere)).returncode == 0
    assert (elsewhere / "index.html").is_file()
