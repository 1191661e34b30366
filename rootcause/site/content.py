"""Markdown: the prose fields of entries and the free pages in content/*.md.

CommonMark with tables, raw HTML disabled (entries come from pull requests: nothing a
contributor writes may inject markup or scripts). markdown-it-py is the reference; its Rust port
markdown-it-pyrs (same project family, same rules) renders about eight times faster and is used
for everything it can express: whole documents, and inline text that renders as one paragraph.
tests/test_markdown.py checks that both give the same HTML for every prose field of every entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import markdown_it_pyrs
from markdown_it import MarkdownIt
from markupsafe import Markup

from ..errors import Diagnostic, display_path
from ..located_yaml import load_yaml, read_text

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
#: the CommonMark rules without raw HTML (html_block, html_inline), plus tables: as `_md`
_FAST_RULES = ["blockquote", "code", "fence", "heading", "hr", "lheading", "list", "paragraph", "reference",
               "autolink", "backticks", "emphasis", "entity", "escape", "image", "link", "newline", "table"]
_fast = markdown_it_pyrs.MarkdownIt("zero").enable_many(_FAST_RULES)


@lru_cache(maxsize=8192)
def markdown(text: str) -> Markup:
    """Block Markdown → safe HTML."""
    return Markup(_fast.render(text or ""))


@lru_cache(maxsize=32768)
def inline(text: str) -> Markup:
    """One paragraph of Markdown without the <p>: for titles, table cells, list items."""
    html = _fast.render(text or "")
    if html.startswith("<p>") and html.endswith("</p>\n") and html.count("<p>") == 1:
        return Markup(html[3:-5])
    return Markup(_md.renderInline(text or ""))  # block syntax (a leading "1." or "#"): keep it inline


@dataclass
class ContentPage:
    """A free page from content/: about, contributing, writing entries..."""

    slug: str
    title: str
    description: str
    body: Markup
    order: int
    source: str
    tab: str = ""   # short label for the header's section tabs; no tab when empty


def load_content(root: Path) -> tuple[list[ContentPage], list[Diagnostic]]:
    pages, problems = [], []
    for path in sorted((root / "content").glob("*.md")):
        shown = display_path(path, root)
        text, read_problems = read_text(path, shown)
        if text is None:
            problems.extend(read_problems)
            continue
        meta: dict = {}
        body = text
        if text.startswith("---\n"):
            end = text.find("\n---\n", 4)
            if end < 0:
                problems.append(Diagnostic(shown, 1, 1, "E040", "front matter is not closed",
                                           "end it with a line holding only ---"))
                continue
            located, yaml_problems = load_yaml(path, shown, text=text[4:end + 1])
            if located is None:
                problems.extend(Diagnostic(p.path, p.line + 1, p.column, p.code, p.message, p.hint) for p in yaml_problems)
                continue
            if not isinstance(located.data, dict):
                problems.append(Diagnostic(shown, 2, 1, "E040", "front matter must be a mapping",
                                           "write 'title: ...' lines between the --- lines"))
                continue
            meta = located.data
            unknown = sorted(set(meta) - {"title", "description", "order", "tab"})
            for key in unknown:
                line, col = located.where((key,), key=True)
                problems.append(Diagnostic(shown, line + 1, col, "E040", f"unknown front matter key '{key}'",
                                           "use title, description, order or tab"))
            body = text[end + 5:]
        title = meta.get("title")
        if not title:
            heading = re.search(r"^# (.+)$", body, re.M)
            if not heading:
                problems.append(Diagnostic(shown, 1, 1, "E040", "page has no title",
                                           "add a '# Title' line or 'title:' in front matter"))
                continue
            title = heading.group(1).strip()
            body = body[:heading.start()] + body[heading.end():]
        pages.append(ContentPage(slug=path.stem, title=str(title), description=str(meta.get("description", "")),
                                 body=markdown(body), order=int(meta.get("order", 100)), source=shown,
                                 tab=str(meta.get("tab", ""))))
    pages.sort(key=lambda p: (p.order, p.slug))
    return pages, problems
