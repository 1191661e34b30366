"""The fast Markdown path (markdown-it-pyrs) must render exactly what markdown-it-py renders."""

from __future__ import annotations

import pytest
import yaml
from markdown_it import MarkdownIt

from conftest import REPO
from rootcause.site.content import inline, markdown
from rootcause.text import plain

REFERENCE = MarkdownIt("commonmark", {"html": False}).enable("table")


def prose_fields() -> list[tuple[str, str, str]]:
    """(entry, field, text) for every Markdown field of every bundled entry."""
    found = []
    for path in sorted((REPO / "entries").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        block = [("root_cause", data.get("root_cause", "")), ("summary", data["summary"])]
        block += [("faq", q["answer"]) for q in data.get("faq", [])]
        block += [("example", e["explanation"]) for e in data.get("examples", []) if e.get("explanation")]
        one_line = [("title", data["title"])]
        one_line += [("symptom", s[k]) for s in data.get("symptoms", []) for k in ("observed", "why")]
        one_line += [("step", s if isinstance(s, str) else s["step"]) for s in data.get("confirm", []) + data.get("fix", [])]
        one_line += [("prevention", p) for p in data.get("prevention", [])]
        found += [(path.stem, "block:" + name, text) for name, text in block]
        found += [(path.stem, "inline:" + name, text) for name, text in one_line]
    return found


def test_fast_markdown_matches_the_reference_on_every_entry():
    fields = prose_fields()
    assert len(fields) > 1000
    different = []
    for entry, field, text in fields:
        if field.startswith("block:"):
            ours, reference = str(markdown(text)), REFERENCE.render(text)
        else:
            ours, reference = str(inline(text)), REFERENCE.renderInline(text)
        if ours != reference:
            different.append((entry, field, text[:80]))
    assert different == []


@pytest.mark.parametrize("text", [
    "1. starts like a list", "# starts like a heading", "a <script>alert(1)</script> b", "x &amp; y",
    "`code` and **bold** and [link](https://example.org)", "line one\nline two", "trailing  \nbreak",
])
def test_edge_cases_match_the_reference(text: str):
    assert str(inline(text)) == REFERENCE.renderInline(text)
    assert str(markdown(text)) == REFERENCE.render(text)
    assert "<script" not in str(markdown(text))


def test_plain_text_drops_markup_but_keeps_code():
    assert plain("Use `zero_pp_rank_0` with **care**, see [docs](https://x.org)") == \
        "Use zero_pp_rank_0 with care, see docs"
