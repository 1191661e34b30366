"""The files around the pages: sitemap.xml, robots.txt and an Atom feed of new and updated entries.

All dates come from the entries themselves (`added`, `reviewed`), never from the clock, so two
builds of the same input are byte-identical.
"""

from __future__ import annotations

from ..config import SiteConfig
from ..text import plain
from .render import Page

FEED_SIZE = 50


def sitemap(pages: list[Page], base: str, reviewed: dict[str, str]) -> bytes:
    """`reviewed`: entry id → the ISO date it was last reviewed (its page's lastmod)."""
    from xml.sax.saxutils import escape   # here: it imports urllib.request, 7 ms a rebuild that needs no sitemap

    lastmod = {f"entries/{i}/": date for i, date in reviewed.items()}
    rows = ['<?xml version="1.0" encoding="UTF-8"?>',
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    for page in sorted(pages, key=lambda p: p.url_path):
        if not page.sitemap:
            continue
        row = f"<url><loc>{escape(base + page.url_path)}</loc>"
        if page.url_path in lastmod:
            row += f"<lastmod>{lastmod[page.url_path]}</lastmod>"
        rows.append(row + "</url>")
    rows.append("</urlset>")
    return ("\n".join(rows) + "\n").encode("utf-8")


def robots(base: str) -> bytes:
    return f"User-agent: *\nAllow: /\nSitemap: {base}sitemap.xml\n".encode("utf-8")


def feed_key(reviewed: str, published: str, entry_id: str) -> tuple[str, str, str]:
    """What orders the feed, newest first (the dates in ISO form, which sort as dates do)."""
    return reviewed, published, entry_id


def newest(keys: dict[str, tuple[str, str, str]]) -> list[str]:
    """The ids the feed lists, newest first, from each entry's `feed_key`."""
    return sorted(keys, key=keys.__getitem__, reverse=True)[:FEED_SIZE]


def atom(config: SiteConfig, loaded_entries) -> bytes:
    """The feed of the FEED_SIZE newest of `loaded_entries` (all of them, or at least those)."""
    from xml.sax.saxutils import escape, quoteattr

    base = config.base_url
    by_id = {e.entry.id: e for e in loaded_entries}
    entries = [by_id[i] for i in newest({i: feed_key(e.entry.reviewed.isoformat(), e.entry.published.isoformat(), i)
                                          for i, e in by_id.items()})]
    updated = max((e.entry.reviewed for e in entries), default=None)
    stamp = f"{updated.isoformat()}T00:00:00Z" if updated else "1970-01-01T00:00:00Z"
    out = ['<?xml version="1.0" encoding="utf-8"?>',
           '<feed xmlns="http://www.w3.org/2005/Atom">',
           f"<title>{escape(config.title)}: new and updated entries</title>",
           f"<subtitle>{escape(config.description)}</subtitle>",
           f"<link href={quoteattr(base + 'feed.xml')} rel=\"self\"/>",
           f"<link href={quoteattr(base)}/>",
           f"<id>{escape(base)}</id>",
           f"<updated>{stamp}</updated>"]
    for loaded in entries:
        e = loaded.entry
        url = f"{base}entries/{e.id}/"
        authors = e.authors or [config.title]
        out.append("<entry>")
        out.append(f"<title>{escape(e.title)}</title>")
        out.append(f"<link href={quoteattr(url)}/>")
        out.append(f"<id>{escape(url)}</id>")
        out.append(f"<published>{e.published.isoformat()}T00:00:00Z</published>")
        out.append(f"<updated>{e.reviewed.isoformat()}T00:00:00Z</updated>")
        out.extend(f"<author><name>{escape(a)}</name></author>" for a in authors)
        out.append(f"<category term={quoteattr(e.category)}/>")
        out.append(f"<summary>{escape(plain(e.summary))}</summary>")
        out.append("</entry>")
    out.append("</feed>")
    return ("\n".join(out) + "\n").encode("utf-8")
