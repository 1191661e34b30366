"""`pip install rootcause` carries the encyclopedia: the wheel, built from this checkout and
installed into a fresh virtualenv, diagnoses, runs, exports and serves the library in an empty
folder, with no project anywhere near."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import REPO

OOM = ("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
       "capacity of 79.15 GiB of which 1.21 GiB is free.\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """A fresh virtualenv with the wheel (and dask, for the fleet example), and an empty folder."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(REPO)],
                   check=True, capture_output=True, timeout=600)
    [wheel] = dist.glob("rootcause-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel), "dask"], capture_output=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    empty = base / "training"
    empty.mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(base / "cache"), "PYTHONPATH": ""}
    return {"wheel": wheel, "bin": venv / "bin", "cwd": empty, "env": env}


def run(installed: dict, *args: str, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(list(args), cwd=installed["cwd"], env=installed["env"], capture_output=True,
                            timeout=300, **kwargs)
    assert b"Traceback (most recent call last)" not in result.stderr, result.stderr.decode()
    return result


def test_the_wheel_carries_the_entries_site_yml_and_what_it_names(installed: dict):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    entries = {Path(n).name for n in names if n.startswith("rootcause/bundled/entries/")}
    assert entries == {p.name for p in (REPO / "entries").glob("*.yaml")}
    config = yaml.safe_load((REPO / "site.yml").read_text(encoding="utf-8"))
    assert "rootcause/bundled/site.yml" in names
    for folder in (config["healthy_logs"], config["study"]):
        shipped = {Path(n).name for n in names if n.startswith(f"rootcause/bundled/{folder}/")}
        assert shipped and shipped == {p.name for p in (REPO / folder).iterdir() if p.is_file()}


def test_diagnose_in_an_empty_folder_answers_from_the_bundled_encyclopedia(installed: dict):
    log = installed["cwd"] / "train.log"
    log.write_text("step 10 loss 2.1\n" + OOM)
    result = run(installed, str(installed["bin"] / "rootcause"), "diagnose", "--json", "train.log")
    assert result.returncode == 0, result.stderr.decode()
    data = json.loads(result.stdout)
    assert data["results"][0]["entry"] == "cuda-out-of-memory" and data["first_failure"]["rank"] == 3
    origin = data["encyclopedia"]
    assert origin["kind"] == "bundled" and "site-packages/rootcause/bundled" in origin["path"]
    text = run(installed, str(installed["bin"] / "rootcause"), "diagnose", "train.log").stdout.decode()
    assert "Answered by the encyclopedia bundled with rootcause" in text
    log.unlink()
    assert not list(installed["cwd"].iterdir())   # nothing was written into the user's folder


def test_run_and_the_library_and_export_work_there_too(installed: dict):
    code = f"import sys; print('step 1', flush=True); sys.stderr.write({OOM!r}); sys.exit(1)"
    report = installed["cwd"] / "report.json"
    result = run(installed, str(installed["bin"] / "rootcause"), "run", "--report", "report.json", "--",
                 str(installed["bin"] / "python"), "-c", code)
    assert result.returncode == 1 and result.stdout == b"step 1\n"
    assert json.loads(report.read_text())["results"][0]["entry"] == "cuda-out-of-memory"
    report.unlink()
    library = ("import rootcause, json; r = rootcause.diagnose_text(" + repr(OOM) + "); "
               "print(json.dumps([r['results'][0]['entry'], r['encyclopedia']['kind']]))")
    assert json.loads(run(installed, str(installed["bin"] / "python"), "-c", library).stdout) == \
        ["cuda-out-of-memory", "bundled"]
    result = run(installed, str(installed["bin"] / "rootcause"), "export", "--format", "loki", "-o", "rules.yaml")
    assert result.returncode == 0, result.stderr.decode()
    rules = yaml.safe_load((installed["cwd"] / "rules.yaml").read_text(encoding="utf-8"))
    assert len(rules["groups"][0]["rules"]) > 100
    (installed["cwd"] / "rules.yaml").unlink()


def test_the_fleet_example_runs_on_the_installed_package(installed: dict):
    logs = installed["cwd"] / "logs"
    logs.mkdir()
    (logs / "job1.log").write_text(OOM)
    (logs / "job2.log").write_text("step 1 loss 2.0\nstep 2 loss 1.9\n")
    result = run(installed, str(installed["bin"] / "python"), str(REPO / "examples" / "fleet_scan_dask.py"),
                 "--scheduler", "synchronous", "logs")
    assert result.returncode == 0, result.stderr.decode()
    rows = {Path(r["job"]).name: r for r in map(json.loads, result.stdout.decode().splitlines())}
    assert rows["job1.log"]["entry"] == "cuda-out-of-memory"
    assert rows["job1.log"]["url"] == "https://rootcause.github.io/rootcause/entries/cuda-out-of-memory/"
    assert rows["job2.log"]["entry"] is None and rows["job2.log"]["status"] == "none"
    assert "Top causes across 2 jobs:" in result.stderr.decode()
