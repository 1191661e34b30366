"""The YAML loader keeps positions and refuses what would hang or mislead."""

from __future__ import annotations

import time
from pathlib import Path

from rootcause.located_yaml import MAX_FILE_BYTES, load_yaml


def load(text: str):
    return load_yaml(Path("x.yaml"), "x.yaml", text=text)


def test_values_keep_their_line_and_column():
    located, problems = load("id: a\nlist:\n  - one\n  - {k: v}\n")
    assert problems == []
    assert located.data == {"id": "a", "list": ["one", {"k": "v"}]}
    assert located.where(("list", 1, "k")) == (4, 9)
    assert located.where(("list",), key=True) == (2, 1)


def test_scalars_resolve_like_yaml_but_dates_stay_text():
    located, _ = load("a: 1\nb: 1.5\nc: true\nd: null\ne: 2026-11-30\nf: '1'\n")
    assert located.data == {"a": 1, "b": 1.5, "c": True, "d": None, "e": "2026-11-30", "f": "1"}


def test_duplicate_key_is_an_error_at_the_second_key():
    located, problems = load("title: a\nsummary: b\ntitle: c\n")
    assert located is None
    assert [(p.code, p.line, p.column) for p in problems] == [("E004", 3, 1)]
    assert "first defined on line 1" in problems[0].message


def test_billion_laughs_is_refused_at_once():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9))
    started = time.perf_counter()
    located, problems = load(bomb)
    assert time.perf_counter() - started < 1
    assert located is None and problems[0].code == "E005"


def test_deep_nesting_is_refused(tmp_path: Path):
    started = time.perf_counter()
    located, problems = load("x: " + "[" * 100_000 + "]" * 100_000)
    assert time.perf_counter() - started < 1
    assert located is None and problems[0].code == "E006"


def test_huge_file_is_refused_without_reading_it(tmp_path: Path):
    path = tmp_path / "big.yaml"
    with open(path, "wb") as f:
        f.truncate(100 * 1024 * 1024)  # 100 MB, sparse: costs no disk
    started = time.perf_counter()
    located, problems = load_yaml(path, "big.yaml")
    assert time.perf_counter() - started < 1
    assert located is None and problems[0].code == "E002"
    assert f"{MAX_FILE_BYTES:,}" in problems[0].message


def test_binary_junk_is_refused_with_its_position(tmp_path: Path):
    path = tmp_path / "junk.yaml"
    path.write_bytes(b"id: x\ntitle: \xff\xfe\x00garbage")
    located, problems = load_yaml(path, "junk.yaml")
    assert located is None
    assert (problems[0].code, problems[0].line) == ("E001", 2)


def test_unknown_tags_are_refused():
    located, problems = load("a: !!python/object:os.system x\n")
    assert located is None and problems[0].code == "E012"


def test_several_documents_are_refused():
    located, problems = load("a: 1\n---\nb: 2\n")
    assert located is None and (problems[0].code, problems[0].line) == ("E003", 2)
