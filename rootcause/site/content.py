"""Markdown: the prose fields of entries and the free pages in content/*.md.

CommonMark with tables, raw HTML disabled (entries come from pull requests: nothing a
contributor writes may inject markup or scripts). markdown-it-py is the reference; its Rust port
markdown-it-pyrs (same project family, same rules) renders about eight times faster and is used
for everything it can express: whole documents, and inline text that renders as one paragraph.
tests/test_markdown.py checks that both give the same HTML for every prose field of every entry.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from html import unescape
from functools import lru_cache
from pathlib import Path

import markdown_it_pyrs
from markupsafe import Markup

from ..errors import Diagnostic, display_path
from ..files import is_inside
from ..located_yaml import load_yaml, read_text
from ..text import markdown_images


@lru_cache(maxsize=1)
def _commonmark():
    """markdown-it-py's CommonMark renderer, for the one thing the fast renderer lacks (inline
    rendering of text that starts like a block). Made on first use: importing markdown-it-py
    costs a fresh process about 45 ms, and most builds never need it. Images are off too: no
    request may leave the site (`check` refuses them with E018; should one get through,
    `![alt](src)` renders as "!" and a link, which loads nothing)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table") \
        .disable("image")


#: the CommonMark rules without raw HTML (html_block, html_inline) and images, plus tables: as
#: `_commonmark()`
_FAST_RULES = ["blockquote", "code", "fence", "heading", "hr", "lheading", "list", "paragraph", "reference",
               "autolink", "backticks", "emphasis", "entity", "escape", "link", "newline", "table"]
_fast = markdown_it_pyrs.MarkdownIt("zero").enable_many(_FAST_RULES)  # type: ignore[arg-type]
#: the only attribute either renderer writes a style into (aligned table columns): a class
#: instead, so pages hold no inline style and work under the `style-src 'self'` policy. Raw HTML
#: is off, so this text can only come from the renderer (a writer's quote is `&quot;`).
_ALIGN = re.compile(r' style="text-align:(left|right|center)"')


def _no_inline_style(html: str) -> str:
    return _ALIGN.sub(r' class="rc-align-\1"', html) if ' style="' in html else html


#: block texts seldom repeat (a full build of the bundled entries finds 26 of 823 in the memo),
#: and each one kept costs about 800 bytes in every rendering process
@lru_cache(maxsize=1024)
def markdown(text: str) -> Markup:
    """Block Markdown → safe HTML."""
    return Markup(_no_inline_style(_fast.render(text or "")))


@lru_cache(maxsize=32768)
def inline(text: str) -> Markup:
    """One paragraph of Markdown without the <p>: for titles, table cells, list items."""
    if not text:
        return Markup("")   # as either renderer gives; markdown-it-py, imported for it, costs 15 ms
    html = _fast.render(text)
    if html.startswith("<p>") and html.endswith("</p>\n") and html.count("<p>") == 1:
        return Markup(_no_inline_style(html[3:-5]))
    return Markup(_no_inline_style(_commonmark().renderInline(text)))  # block syntax (a leading "1." or "#"): keep it inline


_HEADING = re.compile(r"<h([2-4])>(.*?)</h\1>", re.S)
_TAG = re.compile(r"<[^>]+>")
#: ids the page around a content page already uses (base.html): a heading of that name gets `-1`
_TEMPLATE_IDS = ("content", "rc-q", "rc-results")


def with_heading_ids(html: str) -> Markup:
    """A content page's HTML with an id and a permalink on every h2-h4, made as GitHub makes them
    (the text lower-cased, what is not a letter, digit, space, `_` or `-` dropped, spaces as `-`,
    `-1`, `-2`... after a repeat): `[the store](internals.md#the-store)` in the repository and
    `../internals/#the-store` on the site reach the same heading."""
    seen = dict.fromkeys(_TEMPLATE_IDS, 1)

    def anchor(match: re.Match) -> str:
        slug = re.sub(r"[^\w\- ]", "", unescape(_TAG.sub("", match.group(2))).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        slug = f"{slug}-{n}" if n else slug
        return (f'<h{match.group(1)} id="{slug}">{match.group(2)}<a class="headerlink" href="#{slug}" '
                f'aria-label="Permalink">#</a></h{match.group(1)}>')

    return Markup(_HEADING.sub(anchor, html))


#: a link to another page of content/ by its file name, as it works where the repository is read
#: (`[the store](internals.md#the-store)` on GitHub)
_PAGE_LINK = re.compile(r'href="([A-Za-z0-9][\w-]*)\.md(#[^"]*)?"')


def with_page_links(html: str) -> Markup:
    """Links to sibling pages by file name (`internals.md#x`) made into the site's (`../internals/#x`),
    so that one source reads right in the repository and on the site."""
    return Markup(_PAGE_LINK.sub(lambda m: f'href="../{m.group(1)}/{m.group(2) or ""}"', html))


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


#: The site's own top-level names: what every build writes at the root of the site (`render.plan`,
#: `builder.site_files`), with what each is. A content page is published at `<its name>/`, so one
#: named like these would replace a built-in page (`content/diagnose.md` at /diagnose/) or collide
#: with a built-in file; compared without case, as a case-insensitive disk would
#: (`tests/hostile/test_reserved_pages.py` holds this table to what a build writes).
RESERVED = {
    "index.html": "home page", "404.html": "page-not-found page", "entries": "index of all entries",
    "categories": "category lists", "tags": "tag lists", "systems": "system pages", "coverage": "coverage page",
    "frequency": "frequency page", "search": "search page and index", "diagnose": "diagnose page",
    "assets": "styles and scripts", "sitemap.xml": "sitemap", "robots.txt": "robots.txt", "feed.xml": "Atom feed",
    ".nojekyll": ".nojekyll marker", "entry.schema.json": "entry schema",
}


def reserved_name_problem(path: Path, shown: str) -> Diagnostic | None:
    """E059 when a content page's name is one of the site's own (`RESERVED`)."""
    slug = path.stem
    what = RESERVED.get(slug.lower())
    if what is None:
        return None
    return Diagnostic(shown, 1, 1, "E059",
                      f"content page '{path.name}' would be published at /{slug}/, where the site writes its own {what}",
                      f"rename the file, e.g. to content/{slug.lower()}-guide.md; a content page may not be named "
                      + ", ".join(sorted(name for name in RESERVED)))


def load_content(root: Path) -> tuple[list[ContentPage], list[Diagnostic]]:
    pages, problems = [], []
    folder = root / "content"
    if os.path.lexists(folder) and not is_inside(root, folder):
        return [], [Diagnostic("content/", 1, 1, "E008", "the content/ folder is a symbolic link leading out of the project",
                               "make content/ a real folder of the project; its files are not read")]
    for path in sorted(folder.glob("*.md")):
        shown = display_path(path, root)
        reserved = reserved_name_problem(path, shown)
        if reserved is not None:
            problems.append(reserved)
            continue
        text, read_problems = read_text(path, shown)
        if text is None:
            problems.extend(read_problems)
            continue
        # line ends as Markdown reads them: a page saved with CRLF (or CR) ends is the same page,
        # its front matter found and its lines numbered alike
        text = text.replace("\r\n", "\n").replace("\r", "\n")
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
            wrong = _wrong_front_matter(meta)
            for key, why in wrong:
                line, col = located.where((key,))
                problems.append(Diagnostic(shown, line + 1, col, "E040", f"front matter '{key}' {why}",
                                           "order is a whole number, e.g. order: 20; title, description "
                                           "and tab are text"))
            if wrong:
                continue
            body = text[end + 5:]
            body_line = text.count("\n", 0, end + 5) + 1
        else:
            body_line = 1
        images = markdown_images(body)
        if images:
            at = max(body.find(images[0]), 0) if images[0] else 0
            problems.append(Diagnostic(shown, body_line + body.count("\n", 0, at), 1, "E018", f"image '{images[0][:80]}' in Markdown",
                                       "the site loads nothing from elsewhere and holds no pictures: describe it "
                                       "in words, or link to it with [text](address)"))
            continue
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
                                 body=with_page_links(with_heading_ids(markdown(body))),
                                 order=meta.get("order", 100), source=shown, tab=str(meta.get("tab", ""))))
    pages.sort(key=lambda p: (p.order, p.slug))
    return pages, problems


def _wrong_front_matter(meta: dict) -> list[tuple[str, str]]:
    wrong = []
    order = meta.get("order", 100)
    if isinstance(order, bool) or not isinstance(order, int) or not -10**6 <= order <= 10**6:
        wrong.append(("order", f"must be a whole number, not {str(order)[:40]!r}"))
    for key in ("title", "description", "tab"):
        value = meta.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int, float))):
            wrong.append((key, "must be text"))
    return wrong
