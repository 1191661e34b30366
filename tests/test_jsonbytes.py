"""`jsonbytes`: orjson writes what the standard json module wrote (the files of earlier builds,
the records of the cache), reads what it reads, and fails where it did, as ValueError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rootcause import jsonbytes

from conftest import copy_bundled_project


def _standard(value, sort_keys: bool = False) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys).encode("utf-8")


TEXTS = ["", "plain", "é ü 😀 中文", "\u2028\u2029\ufeff", "quote \" backslash \\ slash /",
         "".join(chr(i) for i in range(0x20)) + "\x7f", "<script>", "\U0010ffff"]


@pytest.mark.parametrize("text", TEXTS)
def test_text_is_written_as_the_json_module_writes_it(text: str):
    assert jsonbytes.dumps(text) == _standard(text)
    assert jsonbytes.loads(jsonbytes.dumps(text)) == text


def test_containers_numbers_and_key_order_as_the_json_module():
    value = {"z": [1, -2, 0, 2 ** 63 - 1, 1.5, 0.25, 1e16, 123456789.0, True, False, None],
             "a": {"é": (1, 2), "E": {}, "b": []}, 3: "number key", None: "null key"}
    assert jsonbytes.dumps(value) == _standard(value)
    sortable = {k: v for k, v in value.items() if isinstance(k, str)}
    assert jsonbytes.dumps(sortable, sort_keys=True) == _standard(sortable, sort_keys=True)
    assert jsonbytes.dumps(sortable, sort_keys=True).startswith(b'{"a":{"E":{},"b":[],"\xc3\xa9":[1,2]}')


def test_a_small_float_is_written_otherwise_and_reads_back_the_same():
    assert (jsonbytes.dumps(1e-05), _standard(1e-05)) == (b"0.00001", b"1e-05")
    assert (jsonbytes.dumps(1e-06), _standard(1e-06)) == (b"1e-6", b"1e-06")
    assert jsonbytes.dumps(0.0001) == _standard(0.0001) == b"0.0001"
    for x in (1e-05, 7.62280082457942e-09, 5e-324, 0.1, 1.7976931348623157e308):
        assert json.loads(jsonbytes.dumps(x)) == x == jsonbytes.loads(_standard(x))


def test_what_orjson_cannot_write_the_json_module_writes():
    assert jsonbytes.dumps([2 ** 70, -(2 ** 80)]) == b"[1180591620717411303424,-1208925819614629174706176]"
    # read back, an integer of more than 64 bits is a float (the build writes none)
    assert jsonbytes.loads(b"[1180591620717411303424, 18446744073709551615]") == [float(2 ** 70), 2 ** 64 - 1]


def test_a_lone_surrogate_fails_as_it_did():
    with pytest.raises(UnicodeEncodeError):
        _standard("\udcff")
    with pytest.raises(UnicodeEncodeError):
        jsonbytes.dumps("\udcff")


@pytest.mark.parametrize("data", [b"", b"{", b"\xff\xfe", b"NaN", b"[1,]", b"[" * 2000 + b"]" * 2000, b'{"a":1}x'])
def test_what_is_not_json_is_a_value_error(data: bytes):
    with pytest.raises(ValueError):
        jsonbytes.loads(data)


def test_the_built_sites_json_files_read_as_the_json_module_reads_them(tmp_path: Path):
    from rootcause.site.builder import build

    project = copy_bundled_project(tmp_path / "project")
    build(project, progress=False, out=tmp_path / "site")
    files = sorted((tmp_path / "site").rglob("*.json"))
    assert len(files) > 20
    for path in files:
        data = path.read_bytes()
        assert jsonbytes.loads(data) == json.loads(data), path


def test_a_short_text_takes_its_own_size_not_the_writers_buffer():
    """orjson's bytes keep the 4 KB (or larger) buffer they were written into; kept by the
    thousand, as an entry's signature parts are, that was tens of megabytes at 10,000 entries."""
    import tracemalloc

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [jsonbytes.dumps({"entry": f"id-{i}", "steps": [["a regex", "an anchor"]]}) for i in range(1000)]
        per_text = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    finally:
        tracemalloc.stop()
    assert len(kept[0]) < 60 and per_text < 200, per_text
