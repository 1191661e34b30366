"""The files around the pages: sitemap.xml, robots.txt and an Atom feed of new and updated entries.

All dates come from the entries themselves (`added`, `reviewed`), never from the clock, so two
builds of the same input are byte-identical.
"""

from __future__ import annotations

from ..config import SiteConfig
from ..text import plain

FEED_SIZE = 50


def sitemap(urls: list[str], base: str, reviewed: dict[str, str]) -> bytes:
    """`urls`: the address of every page the sitemap lists, relative to the site's root;
    `reviewed`: entry id → the ISO date it was last reviewed (its page's lastmod)."""
    from xml.sax.saxutils import escape   # here: it imports urllib.request, 7 ms a rebuild that needs no sitemap

    lastmod = {f"entries/{i}/": date for i, date in reviewed.items()}
    rows = ['<?xml version="1.0" encoding="UTF-8"?>',
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    for url in sorted(urls):
        row = f"<url><loc>{escape(base + url)}</loc>"
        if url in lastmod:
            row += f"<lastmod>{lastmod[url]}</lastmod>"
        rows.append(row + "</url>")
    rows.append("</urlset>")
    return ("\n".join(rows) + "\n").encode("utf-8")


def robots(base: str) -> bytes:
    return f"User-agent: *\nAllow: /\nSitemap: {base}sitemap.xml\n".encode("utf-8")


def feed_key(reviewed: str, published: str, entry_id: str) -> tuple[str, str, str]:
    """What orders the feed, newest first (the dates in ISO form, which sort as dates do)."""
    return reviewed, published, entry_id


def newest(keys: dict[str, tuple[str, str, str]]) -> list[str]:
    """The ids the feed lists, newest first, from each entry's `feed_key` (`heapq.nlargest`: as
    sorting them all and taking the first, in one pass)."""
    import heapq

    return heapq.nlargest(FEED_SIZE, keys, key=keys.__getitem__)


def feed_entry(loaded, config: SiteConfig) -> tuple[tuple[str, str, str], str]:
    """One entry's `feed_key` and its <entry> element in the feed."""
    from xml.sax.saxutils import escape, quoteattr

    e = loaded.entry
    url = f"{config.base_url}entries/{e.id}/"
    authors = e.authors or [config.title]
    out = ["<entry>",
           f"<title>{escape(e.title)}</title>",
           f"<link href={quoteattr(url)}/>",
           f"<id>{escape(url)}</id>",
           f"<published>{e.published.isoformat()}T00:00:00Z</published>",
           f"<updated>{e.reviewed.isoformat()}T00:00:00Z</updated>"]
    out.extend(f"<author><name>{escape(a)}</name></author>" for a in authors)
    out.append(f"<category term={quoteattr(e.category)}/>")
    out.append(f"<summary>{escape(plain(e.summary))}</summary>")
    out.append("</entry>")
    return feed_key(e.reviewed.isoformat(), e.published.isoformat(), e.id), "\n".join(out)


def atom(config: SiteConfig, items: dict[str, tuple[tuple[str, str, str], str]]) -> bytes:
    """The feed of the FEED_SIZE newest entries, from every entry's `feed_entry` by id."""
    from xml.sax.saxutils import escape, quoteattr

    base = config.base_url
    chosen = newest({entry_id: key for entry_id, (key, _text) in items.items()})
    updated = max((items[i][0][0] for i in chosen), default=None)   # ISO dates: in order as text
    stamp = f"{updated}T00:00:00Z" if updated else "1970-01-01T00:00:00Z"
    out = ['<?xml version="1.0" encoding="utf-8"?>',
           '<feed xmlns="http://www.w3.org/2005/Atom">',
           f"<title>{escape(config.title)}: new and updated entries</title>",
           f"<subtitle>{escape(config.description)}</subtitle>",
           f"<link href={quoteattr(base + 'feed.xml')} rel=\"self\"/>",
           f"<link href={quoteattr(base)}/>",
           f"<id>{escape(base)}</id>",
           f"<updated>{stamp}</updated>"]
    out.extend(items[i][1] for i in chosen)
    out.append("</feed>")
    return ("\n".join(out) + "\n").encode("utf-8")
