"""Issue 32: the memoised pipeline against the cold build, byte for byte.

A build reuses each checked entry and each rendered page whose inputs did not change (records of
the project's store keyed by a hash of those inputs); nothing else is incremental. Each step
here edits one to three random entries (summary, title, severity, tags, review date, a related
link added, dropped or only its `relation:` changed, another entry's log line put into an
example), builds, and compares every file of the site with a cold build of the same input, and
the diagnosis index with one made from the cold build's files. An edit the project rejects (a
collision, E035) must be rejected with the cold check's messages, and is undone.
`ROOTCAUSE_RANDOM_SEEDS` and `ROOTCAUSE_RANDOM_STEPS` run more and longer sequences.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import time
from pathlib import Path

import pytest

from conftest import copy_bundled_project, files_of

from rootcause.config import load_config
from rootcause.errors import RootcauseError
from rootcause.site import diagnosis_index
from rootcause.site.builder import build, site_files
from rootcause.site.diagnosis_index import index_sections
from rootcause.site.search import SIGNATURES, is_search_file

STEPS = int(os.environ.get("ROOTCAUSE_RANDOM_STEPS", "5"))
SEEDS = [int(s) for s in os.environ.get("ROOTCAUSE_RANDOM_SEEDS", "1,2").split(",")]


def _summary(text: str, rng: random.Random, vocab, ids, logs) -> str:
    word = rng.choice(["Briefly:", "In short,", "Note:", "Seen often:"])
    return re.sub(r"(?m)^(summary: >-?\n  )", lambda m: m.group(1) + word + " ", text, count=1)


def _title(text: str, rng: random.Random, vocab, ids, logs) -> str:
    mark = rng.choice(["(again)", "(rare)", "(edited)"])
    return re.sub(r'(?m)^title: (")?(.*?)(")?$', lambda m: f"title: {m.group(1) or ''}{m.group(2)} {mark}{m.group(3) or ''}",
                  text, count=1)


def _severity(text: str, rng: random.Random, vocab, ids, logs) -> str:
    return re.sub(r"(?m)^severity: \S+$", "severity: " + rng.choice(list(vocab.severities)), text, count=1)


def _tags(text: str, rng: random.Random, vocab, ids, logs) -> str:
    tags = rng.sample(sorted(vocab.tags), rng.randint(1, 3))
    return re.sub(r"(?m)^tags: \[.*\]$", "tags: [" + ", ".join(tags) + "]", text, count=1)


def _reviewed(text: str, rng: random.Random, vocab, ids, logs) -> str:
    day = dt.date(2026, 12, 1) - dt.timedelta(days=rng.randint(0, 400))
    return re.sub(r"(?m)^reviewed: \S+$", f"reviewed: {day.isoformat()}", text, count=1)


def _related(text: str, rng: random.Random, vocab, ids, logs) -> str:
    if "\nrelated:\n" in text and rng.random() < 0.5:   # drop the first link
        return re.sub(r"\nrelated:\n  - id: \S+\n    relation: \S+\n", "\nrelated:\n", text, count=1)
    own = re.search(r"(?m)^id: (\S+)$", text).group(1)
    target = rng.choice([i for i in ids if i != own])
    link = f"  - id: {target}\n    relation: see-also\n"
    if "\nrelated:\n" in text:
        return text.replace("\nrelated:\n", "\nrelated:\n" + link, 1)
    return text.rstrip("\n") + "\nrelated:\n" + link


def _relation(text: str, rng: random.Random, vocab, ids, logs) -> str:
    """Only the `relation:` of the first link changes: the linked page shows it too."""
    found = re.search(r"\nrelated:\n  - id: \S+\n    relation: (\S+)\n", text)
    if found is None:
        return text
    other = rng.choice([r for r in vocab.relations if r != found.group(1)])
    return text[:found.start(1)] + other + text[found.end(1):]


def _example_line(text: str, rng: random.Random, vocab, ids, logs) -> str:
    """Put a line of another entry's example at the top of this one's first example: often a
    collision (E035) that both builds must report alike, sometimes a harmless line."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.strip() == "- log: |"]
    if not starts:
        return text
    at = starts[0]
    indent = len(lines[at + 1]) - len(lines[at + 1].lstrip())
    lines.insert(at + 1, " " * indent + rng.choice(logs))
    return "\n".join(lines)


def example_lines(paths: list[Path]) -> list[str]:
    """Every line of every example log of the entries (the text under `- log: |`)."""
    found = []
    for path in paths:
        lines = path.read_text(encoding="utf-8").split("\n")
        for i, line in enumerate(lines):
            if line.strip() == "- log: |":
                indent = len(lines[i + 1]) - len(lines[i + 1].lstrip())
                for body in lines[i + 1:]:
                    if body.strip() and len(body) - len(body.lstrip()) < indent:
                        break
                    if body.strip():
                        found.append(body.strip())
    return found


EDITS = [_summary, _title, _severity, _tags, _reviewed, _related, _relation, _example_line]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_bundled_project(tmp_path / "project")


def _index_as_cold(project: Path, cold: dict[str, bytes]) -> None:
    """The diagnosis index the build stored holds what one made from the cold build's files does."""
    index = diagnosis_index.load(project)
    assert index is not None
    search = {path: body for path, body in cold.items() if is_search_file(path)}
    expected = index_sections(search, cold[SIGNATURES])
    assert {name: index.section(name) for name in expected} == expected


def test_a_changed_relation_reaches_the_linked_page(project: Path):
    """Only a link's `relation:` changes: the page of the entry linked to shows the relation, and
    must be rendered again (its key holds its incoming links, relation included)."""
    build(project, progress=False)
    source = next(p for p in sorted((project / "entries").glob("*.yaml"))
                  if re.search(r"\nrelated:\n  - id: \S+\n    relation: see-also\n", p.read_text(encoding="utf-8")))
    text = source.read_text(encoding="utf-8")
    target = re.search(r"\nrelated:\n  - id: (\S+)\n    relation: see-also\n", text).group(1)
    before = (project / "site" / "entries" / target / "index.html").read_bytes()
    source.write_text(re.sub(r"(\nrelated:\n  - id: \S+\n    relation: )see-also\n", r"\1causes\n", text, count=1),
                      encoding="utf-8")
    result = build(project, progress=False)
    assert result.checked == 1
    after = (project / "site" / "entries" / target / "index.html").read_bytes()
    assert after != before
    assert files_of(project / "site") == site_files(project)


def _serve_build(project: Path, kept):
    """A build as `serve` makes it: in a forked child, over the results of the last one kept in
    memory (`memo.Kept`), the output written in place; the diagnosis index stored after it."""
    from rootcause.commands import serve

    outcome, result = serve._build_apart(project, None, False, kept)
    while serve._last:
        serve._last.pop().wait()
    if outcome == "failed":
        raise RootcauseError(result)
    assert outcome == "built", result
    return result


@pytest.mark.parametrize("how", ["build", "serve"])
@pytest.mark.parametrize("seed, page_size", [(seed, None) for seed in SEEDS] + [(SEEDS[-1] + 100, 10)])
def test_random_edits_build_what_a_cold_build_does(project: Path, seed: int, page_size: int | None, how: str):
    """`build`: each build a fresh process's, over the store's records; `serve`: each build over
    the last one's results in memory, writing in place."""
    from rootcause.memo import Kept

    if page_size:   # lists cut into pages of 10: edits of tags and severities move cards between pages
        with open(project / "site.yml", "a", encoding="utf-8") as stream:
            stream.write(f"page_size: {page_size}\n")
    rng = random.Random(seed)
    vocab = load_config(project)[0].vocabularies
    paths = sorted((project / "entries").glob("*.yaml"))
    ids = [p.stem for p in paths]
    logs = example_lines(paths)
    kept = Kept()
    rebuild = (lambda: build(project, progress=False)) if how == "build" else (lambda: _serve_build(project, kept))
    rebuild()
    rejected = 0
    for step in range(STEPS):
        chosen = rng.sample(paths, rng.randint(1, 3))
        before = {path: path.read_text(encoding="utf-8") for path in chosen}
        for path in chosen:
            edit = rng.choice(EDITS)
            path.write_text(edit(path.read_text(encoding="utf-8"), rng, vocab, ids, logs), encoding="utf-8")
        try:
            result = rebuild()
        except RootcauseError as error:
            with pytest.raises(RootcauseError) as cold:
                site_files(project)
            assert str(cold.value) == str(error)
            rejected += 1
            for path, text in before.items():
                path.write_text(text, encoding="utf-8")
            continue
        assert result.checked <= len(chosen) and result.rendered < result.pages
        if how == "serve":   # written in place: only what changed
            assert result.written < result.files / 4
        cold = site_files(project)
        assert files_of(project / "site") == cold, f"step {step}: {[p.name for p in chosen]}"
        _index_as_cold(project, cold)
    assert rejected < STEPS


def test_serve_builds_follow_entries_added_removed_and_site_yml(project: Path):
    """`serve`'s builds over kept results, written in place: an entry removed (its page and its
    folder go), put back, a copy of one under another name (a collision: rejected, the site
    left as it was), site.yml changed; each time the site a cold build makes."""
    from rootcause.memo import Kept

    kept = Kept()
    _serve_build(project, kept)
    paths = sorted((project / "entries").glob("*.yaml"))
    linked = {line.split(": ", 1)[1].strip() for p in paths for line in p.read_text(encoding="utf-8").splitlines()
              if line.startswith("  - id: ")}
    loose = next(p for p in reversed(paths) if p.stem not in linked)
    text = loose.read_text(encoding="utf-8")
    loose.unlink()
    _serve_build(project, kept)
    assert not (project / "site" / "entries" / loose.stem).exists()
    assert files_of(project / "site") == site_files(project)
    loose.write_text(text, encoding="utf-8")
    result = _serve_build(project, kept)
    assert result.checked <= 1 and files_of(project / "site") == site_files(project)   # (its record is in the store)
    before = files_of(project / "site")
    copy = project / "entries" / f"{loose.stem}-again.yaml"
    copy.write_text(text.replace(f"id: {loose.stem}\n", f"id: {loose.stem}-again\n", 1), encoding="utf-8")
    with pytest.raises(RootcauseError) as caught:
        _serve_build(project, kept)
    with pytest.raises(RootcauseError) as cold:
        site_files(project)
    assert str(caught.value) == str(cold.value) and "E035" in str(caught.value)
    assert files_of(project / "site") == before
    copy.unlink()
    with open(project / "site.yml", "a", encoding="utf-8") as stream:
        stream.write("page_size: 10\n")
    result = _serve_build(project, kept)
    assert result.written > 0 and files_of(project / "site") == site_files(project)


def test_serve_build_repairs_an_output_changed_by_hand(project: Path):
    """A `serve` build checks the output in another process while it loads and plans
    (`InPlaceWriter`'s gate): a page changed by hand, and a file added, since the last build
    make it write the whole site anew, nothing written in place first."""
    from rootcause.memo import Kept

    kept = Kept()
    _serve_build(project, kept)
    paths = sorted((project / "entries").glob("*.yaml"))
    other = project / "site" / "entries" / paths[-1].stem / "index.html"
    time.sleep(0.01)
    other.write_text("changed by hand", encoding="utf-8")
    (project / "site" / "entries" / "stray.html").write_text("stray", encoding="utf-8")
    paths[0].write_text(paths[0].read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    result = _serve_build(project, kept)
    assert result.written >= 1
    assert files_of(project / "site") == site_files(project)
    assert not (project / "site" / "entries" / "stray.html").exists()
