"""`rootcause diagnose` on real-looking logs: ranking, ranks, formats, exit codes, streaming."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import yaml

from conftest import REPO, run_cli
from rootcause.matching.ranking import rank, report_json
from rootcause.matching.scanner import Scanner
from rootcause.entries.project import open_project

CASES = REPO / "tests" / "logs" / "cases"
REPRO = REPO / "tests" / "logs" / "repro"


@pytest.fixture(scope="module")
def catalog():
    project, problems = open_project(REPO)
    assert project is not None and not [d for d in problems if d.severity == "error"], problems[:5]
    return project.catalog


@pytest.fixture(scope="module")
def scanner(catalog):
    return Scanner(catalog.signatures())


def diagnose(scanner, catalog, path: Path) -> dict:
    return report_json(rank(scanner.scan_paths([path]), catalog.consequences()), {}, 5)


def case_files() -> list[Path]:
    return sorted(CASES.glob("*.log"))


def test_there_are_at_least_fifteen_whole_log_cases():
    assert len(case_files()) >= 15


@pytest.mark.parametrize("log", case_files(), ids=lambda p: p.stem)
def test_whole_log_names_the_right_entry_first(log: Path, scanner, catalog):
    expect = yaml.safe_load(log.with_suffix(".expect.yaml").read_text())
    report = diagnose(scanner, catalog, log)
    assert report["results"], f"{log.name}: nothing found"
    assert report["results"][0]["entry"] == expect["entry"], [r["entry"] for r in report["results"]]
    if "first_rank" in expect:
        assert report["first_failure"]["rank"] == expect["first_rank"]


def test_seed_repro_logs_are_recognised(scanner, catalog):
    old = diagnose(scanner, catalog, REPRO / "deepspeed-0.17.6.log")
    found = [r["entry"] for r in old["results"]]
    assert "zero3-state-dict-saved-without-gathering" in found
    assert "ds-to-universal-zero3-multiple-subgroups" in found
    new = diagnose(scanner, catalog, REPRO / "deepspeed-0.18.0.log")
    assert "ds-to-universal-zero3-multiple-subgroups" not in [r["entry"] for r in new["results"]]


def test_cli_reads_plain_gzip_and_stdin_the_same(tmp_path: Path):
    log = REPRO / "deepspeed-0.17.6.log"
    packed = tmp_path / "train.log.gz"
    packed.write_bytes(gzip.compress(log.read_bytes()))
    plain = json.loads(run_cli("diagnose", "--json", str(log)).stdout)
    zipped = json.loads(run_cli("diagnose", "--json", str(packed)).stdout)
    piped = json.loads(run_cli("diagnose", "--json", "-", stdin=log.read_bytes()).stdout)
    assert plain["results"] == zipped["results"] == piped["results"]
    assert plain["results"][0]["lines"][0]["line"] > 1


def test_cli_exit_codes(tmp_path: Path):
    healthy = tmp_path / "ok.log"
    healthy.write_text("step 1 loss 2.0\nstep 2 loss 1.9\n")
    assert run_cli("diagnose", str(REPRO / "deepspeed-0.17.6.log")).returncode == 0
    assert run_cli("diagnose", str(healthy)).returncode == 1
    missing = run_cli("diagnose", str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and b"no such file" in missing.stderr
    assert run_cli("diagnose", "--top", "0", str(healthy)).returncode == 2
    folder = run_cli("diagnose", str(tmp_path))
    assert folder.returncode == 2 and b"is a folder" in folder.stderr
    truncated = tmp_path / "cut.log.gz"
    truncated.write_bytes(gzip.compress(b"x" * 100000)[:50])
    assert run_cli("diagnose", str(truncated)).returncode == 2


def test_cli_uses_a_built_site_without_the_entries(tmp_path: Path):
    out = tmp_path / "site"
    assert run_cli("build", "--out", str(out)).returncode == 0
    from_site = json.loads(run_cli("diagnose", "--site", str(out), "--json", str(REPRO / "deepspeed-0.17.6.log"),
                                   cwd=tmp_path).stdout)
    from_project = json.loads(run_cli("diagnose", "--json", str(REPRO / "deepspeed-0.17.6.log")).stdout)
    assert from_site["results"] == from_project["results"]


def test_text_report_names_entry_lines_and_fix():
    out = run_cli("diagnose", "--top", "1", str(REPRO / "deepspeed-0.17.6.log")).stdout.decode()
    assert "1. " in out and "Then fix:" in out and "entries/" in out


def test_memory_stays_flat_on_a_long_log(tmp_path: Path, scanner, catalog):
    """A 60 MB log of healthy lines with one failure at the end: found, with bounded memory."""
    import resource
    import subprocess
    import sys

    log = tmp_path / "long.log"
    line = b"[rank0]: step 100 | loss 2.3135 | lr 3.0e-04 | grad_norm 0.91 | tokens/s 181234\n"
    with open(log, "wb") as f:
        for _ in range(60):
            f.write(line * (1_000_000 // len(line) * 1))
        f.write((REPRO / "deepspeed-0.17.6.log").read_bytes())
    code = ("import resource,sys;from rootcause.commands.cli import main;"
            "rc=main(['diagnose','--json',sys.argv[1]]);"
            "sys.stderr.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss));sys.exit(rc)")
    short = tmp_path / "short.log"
    short.write_bytes((REPRO / "deepspeed-0.17.6.log").read_bytes())

    def peak(path: Path) -> int:
        result = subprocess.run([sys.executable, "-c", code, str(path)], cwd=REPO, capture_output=True)
        assert result.returncode == 0
        return int(result.stderr.decode().strip().splitlines()[-1])

    # flat in the size of the log: 60 MB more of it costs no more than a few chunks (the rest of
    # the peak is loading the entries, which grows with the corpus, not with the log)
    grown_kb = peak(log) - peak(short)
    assert grown_kb < 40_000, grown_kb


def test_hostile_logs_end_quickly_with_bounded_memory(tmp_path: Path, scanner, catalog):
    """A 20 MB line with no newline, binary junk and lines packed with anchors: no hang, no blow-up."""
    import time

    anchors = " ".join(scanner.index.anchors[:200])
    cases = {
        "one-line.log": b"x" * (20 * 1024 * 1024),
        "binary.log": bytes(range(256)) * 40_000,
        "anchors.log": (anchors + "\n").encode() * 2_000,
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        started = time.perf_counter()
        report = rank(scanner.scan_paths([path]), catalog.consequences())
        assert time.perf_counter() - started < 20, name
        assert len(report.matches) <= len(scanner.signatures) * 20
