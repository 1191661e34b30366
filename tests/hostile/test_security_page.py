"""SECURITY.md says what a pull request, a log and a dump are trusted to do; every file, test and
diagnostic code it names as the thing that holds a promise must exist, or the page promises
what nothing checks."""

from __future__ import annotations

import re

from conftest import REPO

from rootcause.errors import CODES


def test_every_file_and_code_the_security_page_names_exists():
    text = (REPO / "SECURITY.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:tests|matching|rootcause)/[\w/.]+\.py)`", text))
    named |= {m.rstrip(",") for m in re.findall(r"`([\w]+\.py)`", text)}
    assert "tests/hostile/test_planted_cache.py" in named and "located_yaml.py" in named
    missing = [name for name in named
               if not any(path.is_file() for path in (REPO / name, REPO / "rootcause" / name))]
    assert missing == [], missing
    codes = set(re.findall(r"\bE\d{3}\b", text))
    assert {"E017", "E041", "E050", "E059"} <= codes
    assert codes <= set(CODES), codes - set(CODES)
