"""The pull-request path: GitHub workflows, the issue form and the pre-commit hook are valid, and
the commands they run work here exactly as written."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def validate(schema: str, *files: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
                            capture_output=True, timeout=120)
    assert result.returncode == 0, (result.stdout + result.stderr).decode()


def test_workflows_issue_form_and_hooks_are_valid():
    assert {p.name for p in WORKFLOWS} >= {"pull-request.yml", "pages.yml", "tests.yml"}
    validate("vendor.github-workflows", *WORKFLOWS)
    validate("vendor.github-issue-forms", REPO / ".github" / "ISSUE_TEMPLATE" / "report-a-failure.yml")
    validate("vendor.github-issue-config", REPO / ".github" / "ISSUE_TEMPLATE" / "config.yml")
    result = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest", str(REPO / ".pre-commit-hooks.yaml")],
                            capture_output=True, timeout=120)
    assert result.returncode == 0, (result.stdout + result.stderr).decode()


def test_the_issue_form_offers_exactly_site_yml_vocabularies():
    site = yaml.safe_load((REPO / "site.yml").read_text())["vocabularies"]
    form = yaml.safe_load((REPO / ".github" / "ISSUE_TEMPLATE" / "report-a-failure.yml").read_text())
    fields = {f.get("id"): f for f in form["body"]}
    assert fields["system"]["attributes"]["options"] == [v["title"] for v in site["systems"].values()]
    assert fields["phase"]["attributes"]["options"] == [v["title"] for v in site["phases"].values()]
    for required in ("log", "error", "versions"):
        assert fields[required]["validations"]["required"] is True


def rootcause_steps(workflow: Path) -> list[str]:
    data = yaml.safe_load(workflow.read_text())
    return [step["run"] for job in data["jobs"].values() for step in job.get("steps", [])
            if str(step.get("run", "")).startswith("rootcause ")]


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The repository's tracked files, as a runner's checkout has them."""
    target = tmp_path_factory.mktemp("checkout") / "repo"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        source = REPO / name.decode()
        if source.is_file():
            (target / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name.decode())
    return target


@pytest.mark.parametrize("workflow", ["pull-request.yml", "pages.yml"])
def test_the_workflow_commands_run_here_as_written(clone: Path, workflow: str):
    steps = rootcause_steps(REPO / ".github" / "workflows" / workflow)
    assert steps and steps[0] == "rootcause check --format github"
    for command in steps:
        argv = shlex.split(command)
        result = subprocess.run([sys.executable, "-m", "rootcause", *argv[1:]], cwd=clone, capture_output=True,
                                timeout=300)
        assert result.returncode == 0, (command, result.stdout.decode()[-2000:], result.stderr.decode()[-2000:])
        assert b"Traceback" not in result.stderr
    data = yaml.safe_load((REPO / ".github" / "workflows" / workflow).read_text())
    uploads = [s["with"]["path"] for job in data["jobs"].values() for s in job.get("steps", [])
               if str(s.get("uses", "")).startswith(("actions/upload-artifact", "actions/upload-pages-artifact"))]
    assert uploads
    for path in uploads:
        assert (clone / path / "index.html").is_file() and (clone / path / "search" / "signatures.json").is_file()


def test_the_pre_commit_hook_runs_check_on_the_files_it_claims(clone: Path):
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    files = re.compile(hook["files"])
    for path in ("entries/cuda-out-of-memory.yaml", "site.yml", "study/pytorch-nccl.tsv", "content/about.md"):
        assert files.search(path), path
    assert not files.search("rootcause/site/render.py")
    argv = shlex.split(hook["entry"])
    result = subprocess.run([sys.executable, "-m", "rootcause", *argv[1:]], cwd=clone, capture_output=True, timeout=300)
    assert result.returncode == 0, result.stdout.decode()


def test_third_party_actions_are_pinned_by_commit_and_jobs_get_least_permissions():
    """A tag can be moved to other code; a commit cannot. Each `uses:` names a full 40-character
    commit with its release tag in a comment; no workflow grants anything at its top, and each job
    names what it needs: read access to the repository, and only the Pages deployment writes."""
    writes = {}
    for workflow in WORKFLOWS:
        text = workflow.read_text(encoding="utf-8")
        for line in re.findall(r"(?m)^\s*(?:-\s+)?uses:\s*(.+)$", text):
            if line.startswith("./"):
                continue   # an action of this repository
            assert re.fullmatch(r"[\w.-]+/[\w.-]+(?:/[\w./-]+)?@[0-9a-f]{40}\s+#\s+v\d+\.\d+\.\d+", line), \
                (workflow.name, line)
        data = yaml.safe_load(text)
        assert data["permissions"] == {}, workflow.name
        for name, job in data["jobs"].items():
            assert "permissions" in job, (workflow.name, name)
            granted = job["permissions"]
            assert set(granted.values()) <= {"read", "write"}, (workflow.name, name, granted)
            writes.update({(workflow.name, name, scope): level for scope, level in granted.items() if level == "write"})
    assert set(writes) == {("pages.yml", "deploy", "pages"), ("pages.yml", "deploy", "id-token")}
