"""A message that a terminal, a form or a logger wrapped over three or more physical lines is read
as one line (issue #31): hard-wrapped at a column (cut inside a word, no space at the break) or
soft-wrapped at a space, its prefixes those of its first line. Lines of a log that were not
wrapped stay lines of their own, and the mutation check holds every example to a wrap at 60, 80
and 100 columns."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from conftest import REPO, copy_bundled_project, run_cli
from rootcause.encyclopedia import Encyclopedia
from rootcause.entries.mutations import WRAP_WIDTHS, _wrapped, mutations
from rootcause.matching.anchors import MIN_WRAPPED, wrap_pieces
from rootcause.matching.scanner import wrap_texts

#: issue #31's example: the first example of the watchdog entry, as torchrun printed it
WATCHDOG = ("[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
            "Timeout(ms)=600000) ran for 600020 milliseconds before timing out.")


@pytest.fixture(scope="module")
def bundled():
    return Encyclopedia.open(root=REPO)


def named(encyclopedia, text: str) -> str | None:
    report = encyclopedia.diagnose_text(text, 3)
    return report["results"][0]["entry"] if report["results"] and report["status"] != "none" else None


def test_the_watchdog_example_is_an_entry_example():
    yaml = (REPO / "entries" / "nccl-watchdog-collective-timeout.yaml").read_text(encoding="utf-8")
    assert WATCHDOG in yaml


@pytest.mark.parametrize("width", [60, 80, 100])
def test_a_watchdog_line_hard_wrapped_over_three_or_more_lines_is_named(bundled, width):
    wrapped = _wrapped(WATCHDOG, width)
    lines = wrapped.split("\n")
    assert len(lines) >= 3 and all(len(line) == width for line in lines[:-1])
    # the anchor and the SeqNum are cut where no space stands: the lines hold neither whole
    assert not any("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" in line for line in lines)
    assert named(bundled, wrapped) == "nccl-watchdog-collective-timeout"
    report = bundled.diagnose_text(wrapped, 3)
    line = report["results"][0]["lines"][0]
    # one line, numbered as its first physical line, with that line's prefixes (rank 1)
    assert line["line"] == 1 and line["rank"] == 1
    assert "WorkNCCL(SeqNum=808, OpType=ALLREDUCE" in line["text"] and line["text"].endswith("before timing out.")


def test_a_watchdog_line_soft_wrapped_at_spaces_and_repeating_its_prefix_is_named(bundled):
    """A logger that wraps at spaces before the launcher prefixes every physical line."""
    body = WATCHDOG[len("[rank1]:"):]
    wrapped = "\n".join("[rank1]:" + piece for piece in textwrap.wrap(body, 60))
    assert len(wrapped.split("\n")) >= 4
    assert named(bundled, wrapped) == "nccl-watchdog-collective-timeout"


def test_ordinary_short_lines_are_not_joined(bundled):
    """Lines that no wrap cut (shorter than a wrap's width) are read one by one: a signature
    whose words lie on several of them matches none."""
    short = ["[rank1]: Watchdog caught collective", "[rank1]: operation timeout:", "[rank1]: WorkNCCL(SeqNum=808,",
             "[rank1]: OpType=ALLREDUCE) ran for", "[rank1]: 600020 milliseconds before", "[rank1]: timing out."]
    assert all(len(line) < MIN_WRAPPED for line in short)
    assert named(bundled, "\n".join(short)) is None


def test_lines_of_a_log_that_end_short_of_the_width_are_not_joined(bundled):
    """Long lines, each ended where its message ended (well short of the widest): no join glues a
    message of one with the next, although the two read as one would match a signature."""
    lines = ["[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
             "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523)",
             "training step 1200 finished, loss 2.31",
             "ran for 600020 milliseconds before timing out."]
    text = "\n".join(lines)
    report = bundled.diagnose_text(text, 3)
    assert all("ran for 600020" not in hit["text"] for result in report["results"] for hit in result["lines"])


def test_a_join_reads_each_break_as_a_space_and_as_nothing():
    from rootcause.matching.logline import parse_line

    first = "[rank2]: RuntimeError: CUDA error: an illegal memory acce"
    joins = wrap_texts(parse_line(first), [first], ["ss was encountered"])
    assert joins == [("RuntimeError: CUDA error: an illegal memory acce ss was encountered",
                      "RuntimeError: CUDA error: an illegal memory access was encountered", "ss was encountered")]
    # a line of another process, or with a timestamp of its own, is another message
    assert wrap_texts(parse_line(first), [first], ["[rank3]: ss was encountered"]) == []
    assert wrap_texts(parse_line(first), [first], ["2025-03-01 10:00:00,123 ss was encountered"]) == []


def test_an_anchor_has_pieces_one_of_which_any_wrap_leaves_whole():
    anchor = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum="
    pieces = wrap_pieces(anchor)
    assert pieces and all(piece in anchor for piece in pieces)
    for width in range(MIN_WRAPPED, 101):
        for offset in range(width):   # where the anchor begins on its first physical line
            cuts = range(width - offset, len(anchor), width)
            segments = [anchor[a:b] for a, b in zip([0, *cuts], [*cuts, len(anchor)])]
            assert any(piece in segment for piece in pieces for segment in segments), (width, offset)


def test_the_wrap_mutations_cut_every_line_at_the_width():
    example = "Traceback (most recent call last):\n" + WATCHDOG
    found = dict(mutations(example, 1, "Watchdog caught collective operation timeout"))
    for width in WRAP_WIDTHS:
        wrapped = found[f"wrapped at {width} columns"]
        assert wrapped.replace("\n", "") == example.replace("\n", "")
        assert max(len(line) for line in wrapped.split("\n")) == width
    # an example with no line longer than the width is not mutated so
    assert not any(name.startswith("wrapped") for name, _ in mutations("RuntimeError: short", 0, ""))


def test_check_reports_an_example_a_wrap_makes_name_nothing(tmp_path: Path):
    """A signature whose anchor is too short for wrap pieces (`zqxv probe `), on an example line
    that a wrap at 60 columns cuts inside that anchor: no line holds it whole and none holds an
    event, so the wrapped example names nothing. E056 at the example, naming the wrap."""
    project = copy_bundled_project(tmp_path / "p")
    path = project / "entries" / "bitsandbytes-no-gpu.yaml"
    text = path.read_text(encoding="utf-8")
    pattern = '  - pattern: "The installed version of bitsandbytes was compiled without GPU support."'
    assert pattern in text
    text = text.replace(pattern, '  - pattern: "zqxv probe {int} of {int} xq"')
    start = text.index("    examples:\n", text.index("zqxv probe"))
    end = text.index("  - pattern:", start)
    line = "x" * 57 + " zqxv probe 3 of 4 xq"   # cut at 60 columns: "... zq" and "xv probe 3 of 4 xq"
    text = text[:start] + ("    examples:\n      - log: |\n          " + line + "\n"
                           '        reproduced: "torch 2.13.0+cpu, Python 3.12: python probe.py"\n') + text[end:]
    path.write_text(text, encoding="utf-8")
    assert not any(piece for piece in wrap_pieces("zqxv probe "))
    result = run_cli("--root", str(project), "check")
    assert result.returncode == 1
    errors = [l for l in result.stdout.decode().splitlines() if "E056" in l]
    assert len(errors) == 1, result.stdout.decode()[-2000:]
    where = errors[0].split(": error[E056]: ")[0]
    example_at = next(n for n, l in enumerate(text.splitlines(), 1) if l.strip() == "- log: |" and n > 20)
    assert where == f"entries/bitsandbytes-no-gpu.yaml:{example_at}:9"
    assert "example 1 of signature 1, wrapped at 60 columns, names no entry instead of this entry" in errors[0]


def test_a_message_wrapped_across_a_chunk_of_the_log_is_joined_as_in_one_piece(bundled, monkeypatch):
    """The command line reads a log in chunks (4 MiB), the browser in one piece: the lines a
    join around a chunk's last lines may read are carried to the next chunk, so the report is the
    same wherever a chunk ends. A wrapped example between healthy lines, read with the chunk's
    end at every few bytes of the message."""
    from rootcause.matching import scanner

    filler = "".join(f"step {i} loss 1.{i:02d} lr 3e-4 tokens/s 51234 mem 40.1GiB grad_norm 0.{i}\n" for i in range(30))
    for entry in ("autograd-inplace-modified-variable", "accelerate-launch-no-config-crash",
                  "nccl-watchdog-collective-timeout"):
        data = yaml.safe_load((REPO / "entries" / f"{entry}.yaml").read_text(encoding="utf-8"))
        wrapped = _wrapped(data["signatures"][0]["examples"][0]["log"].rstrip("\n"), 60)
        text = filler + wrapped + "\n" + filler
        whole = bundled.diagnose_text(text, 5)
        assert named(bundled, text) == entry
        for end in range(len(filler) + 1, len(filler) + len(wrapped.encode("utf-8")), 5):
            monkeypatch.setattr(scanner, "CHUNK", end)
            assert bundled.diagnose_text(text, 5) == whole, (entry, end)


def test_the_edge_filter_keeps_every_line_that_holds_a_cut_anchor(bundled, monkeypatch):
    """After many searches for a cut anchor, a line is first asked whether it begins or ends
    inside an anchor (`anchors._GramBits`): a saving only. Every physical line of every bundled
    example wrapped at 60, 80 and 100 columns gets the same answer with the filter as without."""
    from rootcause.matching import anchors
    from rootcause.matching.scanner import Scanner

    lines = set()
    for path in sorted((REPO / "entries").glob("*.yaml")):
        for sig in yaml.safe_load(path.read_text(encoding="utf-8")).get("signatures") or []:
            for example in sig.get("examples") or []:
                for width in WRAP_WIDTHS:
                    lines.update(_wrapped(example["log"], width).split("\n"))
    monkeypatch.setattr(anchors, "EDGES_AFTER_CHECKS", 10 ** 9)
    plain = Scanner(bundled.signatures).table
    answers = {line: plain.holds_cut_anchor(line) for line in sorted(lines)}
    assert plain._edge_bits is None and sum(answers.values()) > 100
    monkeypatch.setattr(anchors, "EDGES_AFTER_CHECKS", 0)
    filtered = Scanner(bundled.signatures).table
    assert {line: filtered.holds_cut_anchor(line) for line in sorted(lines)} == answers
    edges = filtered._edges
    assert any(not (edges.holds(0, line[:anchors.PREFIX]) or edges.holds(1, line[-anchors.PREFIX:]))
               for line in lines if len(line) >= anchors.PREFIX)   # (it does turn lines away)
