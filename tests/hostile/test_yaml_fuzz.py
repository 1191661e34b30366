"""The YAML loader under random input: data or Diagnostics, never an exception, never a hang.

Every entry, page front matter and site.yml goes through `rootcause.located_yaml`, so whatever
bytes a pull request holds must come back as (Located, []) or (None, [positioned diagnostics])
within a time bound. Random bytes exercise the reader (NUL, invalid UTF-8, BOMs); random
YAML-ish text, built from YAML's own syntax, exercises the parser and the composer (tags,
anchors, aliases, flow and block collections, directives, huge numbers, duplicate keys).
"""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rootcause.errors import CODES, Diagnostic
from rootcause.located_yaml import Located, load_yaml, read_text

SHOWN = "entries/fuzz.yaml"
PATH = Path(SHOWN)
FUZZ = settings(max_examples=200, deadline=1000, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])

PIECES = st.sampled_from([
    "id", "title", "key", "- ", "-", ": ", ":", "? ", "  ", "    ", "\t", "\n", "\r\n", "[", "]", "{", "}", ",",
    "&a ", "*a", "&b ", "*b", "!!python/object:os.system ", "!!binary ", "!!str ", "!!int ", "!!float ", "!custom ",
    "!", "|", "|-", ">", ">+", "---", "...", "%YAML 1.1\n", "%TAG ! tag:x,2000:\n", "#", " # comment", "'", '"',
    "\\", "\\e", "\\0", "\\x41", "\\u202e", "0x", "0o7", "1_000", "1:20:30", "9" * 5000, "1:" * 300 + "0",
    "1e309", ".inf", "-.nan", "~", "null", "true", "yes", "No", "2026-13-45", "2026-01-15", "<<", "=", "@", "`",
    "\u00e9", "\u202e", "\ufeff", "\x85", "\u2028", "\x00", "\x07", "\x1b[31m",
])
YAMLISH = st.lists(PIECES | st.text(max_size=8), max_size=60).map("".join)


def assert_loaded_or_diagnosed(result, budget: float, started: float) -> None:
    assert time.perf_counter() - started < budget
    located, problems = result
    if located is not None:
        assert isinstance(located, Located) and problems == []
        return
    assert problems and all(isinstance(d, Diagnostic) for d in problems)
    for d in problems:
        assert d.path == SHOWN and d.line >= 1 and d.column >= 1 and d.code in CODES and d.message
        assert "\n" not in str(d)


@FUZZ
@given(st.binary(max_size=2048))
def test_random_bytes_give_data_or_diagnostics(raw: bytes):
    started = time.perf_counter()
    text, problems = read_text(PATH, SHOWN, raw=raw)
    if text is None:
        assert_loaded_or_diagnosed((None, problems), 1.0, started)
        return
    assert_loaded_or_diagnosed(load_yaml(PATH, SHOWN, text=text), 1.0, started)


@FUZZ
@given(YAMLISH)
def test_random_yaml_ish_text_gives_data_or_diagnostics(text: str):
    started = time.perf_counter()
    assert_loaded_or_diagnosed(load_yaml(PATH, SHOWN, text=text), 1.0, started)


@FUZZ
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=30))
def test_any_plain_data_dumped_as_yaml_loads_back(data):
    """What PyYAML itself writes (quoting, escapes, flow style) loads as PyYAML reads it back."""
    import yaml

    text = yaml.safe_dump({"root": data}, allow_unicode=True)
    located, problems = load_yaml(PATH, SHOWN, text=text)
    assert problems == [] and located is not None
    assert located.data == yaml.safe_load(text)  # == {"root": data}, but for YAML's line breaks (U+0085)
