"""Issue 36, item 9: `new --from-log` reads a log as `diagnose` does.

It read the log a second time line by line, without bounds, for the lines around the failure: a
gzip bomb or a single line of 2 GiB each peaked at 6 GB (`diagnose` reads both in 40 MB). Raw
escape sequences and control characters of the log landed in the draft entry, where they recolour
the terminal that shows it and make YAML refuse the file. Now the lines come from the scanner's
own reader (`scanner.LineBlocks`: a chunk and a line's head at a time), with `diagnose`'s errors
for a log it cannot read, and each line is cleaned as the draft writes it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import yaml

from conftest import REPO, make_project

HOSTILE = Path(__file__).resolve().parent
FAILURE = (b"Traceback (most recent call last):\n"
           b'  File "train.py", line 3, in <module>\n'
           b"    x = torch.ones(10**12, device='cuda')\n"
           b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.73 TiB. GPU 0 has a total capacity "
           b"of 79.10 GiB of which 78.00 GiB is free.\n")

#: runs a command and prints the peak resident size of its largest process, in KiB
PEAK = ("import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, capture_output=True)\n"
        "sys.stderr.buffer.write(r.stdout + r.stderr)\n"
        "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, 'RC', r.returncode)\n")


def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project", [REPO / "entries" / "cuda-out-of-memory.yaml"])


def new_from_log(root: Path, entry_id: str, log: Path) -> tuple[int, int, str]:
    """(peak resident size in KiB, exit status, everything printed) of `new --from-log`."""
    done = subprocess.run([sys.executable, "-c", PEAK, sys.executable, "-m", "rootcause", "--root", str(root), "new",
                           entry_id, "--from-log", str(log)], capture_output=True, timeout=600)
    words = done.stdout.split()
    assert words[0] == b"PEAK" and words[2] == b"RC", done.stderr.decode(errors="replace")
    return int(words[1]), int(words[3]), done.stderr.decode(errors="replace")


def test_a_gzip_bomb_before_the_failure_is_read_in_bounded_memory(tmp_path: Path):
    """512 MiB without a line break (a 500 KB .gz), then a failure: the draft is written, and
    memory stays in tens of MB (the whole first line was read, then decoded, before)."""
    log = tmp_path / "bomb.log.gz"
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)   # 31: a gzip member
    block = b"A" * (1 << 20)
    with open(log, "wb") as out:
        for _ in range(512):
            out.write(packer.compress(block))
        out.write(packer.compress(b"\n" + FAILURE))
        out.write(packer.flush())
    assert log.stat().st_size < 2 << 20
    root = project(tmp_path)
    peak, code, said = new_from_log(root, "bomb-failure", log)
    assert code == 0, said
    assert "Traceback" not in said
    draft = (root / "entries" / "bomb-failure.yaml").read_text(encoding="utf-8")
    assert "CUDA out of memory" in draft
    assert peak < 150_000, f"peak resident size {peak // 1024} MB"   # KiB on Linux


def test_a_single_line_of_a_gigabyte_is_read_in_bounded_memory(tmp_path: Path):
    """A log whose first line is 1 GiB long (a sparse file: no disk is spent on it), then a
    failure."""
    log = tmp_path / "long-line.log"
    with open(log, "wb") as out:
        out.truncate(1 << 30)
        out.seek(1 << 30)
        out.write(b"\n" + FAILURE)
    root = project(tmp_path)
    peak, code, said = new_from_log(root, "long-line-failure", log)
    assert code == 0, said
    assert "CUDA out of memory" in (root / "entries" / "long-line-failure.yaml").read_text(encoding="utf-8")
    assert peak < 150_000, f"peak resident size {peak // 1024} MB"


def test_a_corrupt_gzip_is_refused_in_words(tmp_path: Path):
    root = project(tmp_path)
    for log in (HOSTILE / "corrupt-deflate.log.gz",):
        _peak, code, said = new_from_log(root, "corrupt", log)
        assert code == 2, said
        assert said.startswith(f"{log}: the compressed log is not valid gzip data"), said
        assert "gzip -dc" in said and "Traceback" not in said and "zlib" not in said
        assert not (root / "entries" / "corrupt.yaml").exists()


#: what a log line may hold that must not reach the draft: colour, a window title (OSC), a bell,
#: NUL, a C1 control, a bidirectional override, and the line breaks only YAML sees
HOSTILE_LINE = ("\x1b[31m\x1b]0;owned\x07torch.OutOfMemoryError:\x00 CUDA out of memory.\x9b2J Tried to allocate "
                "3.73 TiB.\u202e GPU 0\u2028 has a total capacity of 79.10 GiB\x1b[0m\r")


def test_escape_sequences_and_control_characters_never_reach_the_draft(tmp_path: Path):
    log = tmp_path / "coloured.log"
    log.write_bytes(FAILURE.rsplit(b"\n", 2)[0] + b"\n" + HOSTILE_LINE.encode("utf-8") + b"\n")
    root = project(tmp_path)
    _peak, code, said = new_from_log(root, "coloured-failure", log)
    assert code == 0, said
    raw = (root / "entries" / "coloured-failure.yaml").read_bytes()
    text = raw.decode("utf-8")
    bad = re.findall("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]", text)
    assert bad == [], bad
    entry = yaml.safe_load(text)
    [signature] = entry["signatures"]
    example = signature["examples"][0]["log"]
    assert example.splitlines()[-1] == ("torch.OutOfMemoryError: CUDA out of memory.2J Tried to allocate 3.73 TiB. "
                                        "GPU 0  has a total capacity of 79.10 GiB")
    assert "owned" not in text
    # the pattern proposed from the cleaned line still matches the example it came from
    assert "CUDA out of memory" in signature["pattern"]
