"""A folder of entries that all collide with each other prints a bounded page of E035, in bounded
memory, and still fails: a bad pull request cannot flood or exhaust CI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import SEED_ENTRY, make_project

from rootcause.entries import catalog as catalog_module
from rootcause.entries.project import open_project


def colliding_project(folder: Path, n: int, examples: int = 1) -> Path:
    """n copies of one entry under n ids: every example matches every other copy's signature."""
    project = make_project(folder)
    text = SEED_ENTRY.read_text(encoding="utf-8")
    start, end = text.index("\nrelated:"), text.index("\nreferences:")
    text = text[:start] + text[end:]
    block_start = text.index("    examples:\n") + len("    examples:\n")
    block = text[block_start:text.index("    counter_examples:")]
    text = text[:block_start] + block * examples + text[block_start + len(block):]
    for number in range(n):
        entry_id = f"collide-{number:03d}"
        (project / "entries" / f"{entry_id}.yaml").write_text(
            text.replace(f"id: {SEED_ENTRY.stem}\n", f"id: {entry_id}\n", 1), encoding="utf-8")
    return project


def test_hundreds_of_colliding_entries_print_a_bounded_page_in_bounded_memory(tmp_path: Path):
    n = 300
    project = colliding_project(tmp_path / "p", n)
    # a parent of its own, so that the peak resident size measured is this check's alone
    probe = ("import resource, subprocess, sys\n"
             f"r = subprocess.run([sys.executable, '-m', 'rootcause', '--root', {str(project)!r}, 'check'], "
             "capture_output=True)\n"
             "sys.stdout.buffer.write(r.stdout)\n"
             "sys.stderr.buffer.write(r.stderr)\n"
             "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, 'RC', r.returncode)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600, check=False)
    lines = result.stdout.splitlines()
    peak, code = re.fullmatch(r"PEAK (\d+) RC (\d+)", lines.pop()).groups()
    assert code == "1"
    e035 = [line for line in lines if "error[E035]" in line]
    assert len(e035) == len(lines) == catalog_module.MAX_E035 + 1, lines[:5]
    # every collision is counted: each of the n examples matches the n - 1 other entries
    assert f"… and {n * (n - 1) - catalog_module.MAX_E035} more E035 between " \
           f"{n * (n - 1) - catalog_module.MAX_E035} pairs of entries, not listed" in e035[-1]
    assert int(peak) < 400_000, f"peak resident size {int(peak) // 1024} MB"   # KiB on Linux
    assert "checked 300 entry files: 201 errors in" in result.stderr


def test_repeated_collisions_of_one_pair_are_counted_not_listed(tmp_path: Path):
    project = colliding_project(tmp_path / "p", 4, examples=5)
    _project, diagnostics = open_project(project)
    cores = [d for d in diagnostics if d.code == "E035" and d.message.startswith("the core ")]
    assert sorted(d.path for d in cores) == [f"entries/collide-{n:03d}.yaml" for n in range(4)]   # one line each
    e035 = [d for d in diagnostics if d.code == "E035" and d not in cores]
    per_pair = catalog_module.MAX_E035_PER_PAIR
    assert len(e035) == 4 * 3 * (per_pair + 1)
    first = [d.message for d in e035 if d.path == "entries/collide-000.yaml"]
    assert sum("of 'collide-001'" in m for m in first) == per_pair
    assert f"… and {5 - per_pair} more E035 between 'collide-000' and 'collide-001' " \
           "(examples of this entry that 'collide-001' also matches)" in first


def test_the_count_past_the_cap_is_a_lower_bound_once_counting_would_cost_too_much(tmp_path: Path, monkeypatch):
    project = colliding_project(tmp_path / "p", 12)
    monkeypatch.setattr(catalog_module, "MAX_E035", 10)
    monkeypatch.setattr(catalog_module, "E035_COUNT_BUDGET", 20)
    _project, diagnostics = open_project(project)
    e035 = [d for d in diagnostics if d.code == "E035"]
    assert len(e035) == 11
    assert re.search(r"… and at least (\d+) more E035 between at least \d+ pairs of entries, not listed",
                     e035[-1].message)
    assert int(re.search(r"at least (\d+)", e035[-1].message).group(1)) < 12 * 11 - 10


def test_a_signature_matching_a_healthy_log_many_times_is_one_line(tmp_path: Path):
    project = make_project(tmp_path / "p", [SEED_ENTRY])
    text = (project / "entries" / SEED_ENTRY.name).read_text(encoding="utf-8")
    start, end = text.index("\nrelated:"), text.index("\nreferences:")
    (project / "entries" / SEED_ENTRY.name).write_text(text[:start] + text[end:], encoding="utf-8")
    site = project / "site.yml"
    site.write_text(site.read_text(encoding="utf-8") + "healthy_logs: logs\n", encoding="utf-8")
    (project / "logs").mkdir()
    line = ("size mismatch for l1.weight: copying a param with shape torch.Size([0]) from checkpoint, "
            "the shape in current model is torch.Size([1024, 256]).\n")
    (project / "logs" / "noisy.log").write_text(("step\n" * 50 + line) * 30, encoding="utf-8")
    _project, diagnostics = open_project(project)
    e036 = [d for d in diagnostics if d.code == "E036"]
    assert len(e036) == 1
    assert e036[0].message.startswith("signature 1 matches line 51 of the healthy log noisy.log (and ")
