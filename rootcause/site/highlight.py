"""Code and logs on the page: commands and code highlighted at build time with Pygments, and in
example logs the text the signature matched marked.

Only the tokens a reader scans for are wrapped (keywords, strings, comments, numbers, builtins,
function, class and key names, shell prompts), with Pygments' short class names that Material's
stylesheet colours under `.highlight`: a span around every name and operator would add a third to
a page's bytes for no reading gain.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from functools import lru_cache

from html import escape as _escape
from pathlib import Path

from markupsafe import Markup

from ..matching.signatures import marked_lines


def escape(text: str) -> str:
    """Text-node escaping: quotes need none there, and code is full of them."""
    return _escape(text, quote=False)

#: the language names entries use → Pygments lexer names
LEXERS = {"python": "python", "bash": "bash", "yaml": "yaml", "json": "json"}
#: Pygments' short class names that are kept (by prefix of the short name)
KEPT = ("k", "s", "c", "m", "nb", "nf", "nc", "nd", "nt", "na", "gp", "bp")


@lru_cache(maxsize=None)
def _lexer(language: str):
    from pygments.lexers import get_lexer_by_name

    return get_lexer_by_name(LEXERS[language], stripnl=False, ensurenl=False)


@lru_cache(maxsize=None)
def _kept_class(token) -> str | None:
    """The short class a token type is wrapped in, or None (a token type's answer never changes)."""
    from pygments.token import STANDARD_TYPES

    short = _short(token, STANDARD_TYPES)
    return short if short and short.startswith(KEPT) else None


#: the build cache's store of highlighted blocks while a build renders (`kept_in`)
_kept = None


@contextmanager
def kept_in(store):
    """Highlighted blocks read from and put in `store` (a `cache.RecordStore`) while this runs,
    each under a hash of the highlighter's version, its language and its text: a page rendered
    again because something else on it changed (a linked entry's title, a template) does not
    pay for building Pygments' lexers (the Python one costs more than a whole page) or for
    lexing its code again. Forked render workers inherit it."""
    global _kept
    before, _kept = _kept, store
    try:
        yield
    finally:
        _kept = before


@lru_cache(maxsize=None)
def highlighter_version() -> str:
    """What a highlighted block depends on besides its text: this module's source, Pygments'
    version and Python's. Narrower than the build's version on purpose: a block stays valid
    through changes to the rest of the code, so an upgrade or a development checkout neither
    highlights every block again nor piles up a store's worth of records per code change."""
    import sys

    from pygments import __version__ as pygments_version

    try:
        source = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    except OSError:   # no source to hash: the whole package's version stands in for it
        from ..inputs import code_version

        source = code_version()
    return repr((source, pygments_version, sys.version_info[:2]))


#: the same commands recur across entries (`pip list | grep torch`, `nvidia-smi`), and Pygments is
#: the slowest part of a page; typed, since Markup text is escaped otherwise than the same str
@lru_cache(maxsize=4096, typed=True)
def highlight(code: str, language: str = "text") -> Markup:
    """`code` as HTML, its meaningful tokens in spans; plain escaped text for other languages."""
    if language not in LEXERS:
        return Markup(escape(code))
    kept, key = _kept, None
    if kept is not None:
        key = hashlib.blake2b(repr((highlighter_version(), language, isinstance(code, Markup), str(code))).encode(
            "utf-8", "surrogateescape"), digest_size=20).hexdigest()
        body = kept.get(key)
        if body is not None:
            try:
                return Markup(body.decode("utf-8"))
            except UnicodeDecodeError:
                pass   # not what was put: made again
    html = _highlighted(code, language)
    if kept is not None and key is not None:
        kept.put(key, html.encode("utf-8", "surrogateescape"))
    return Markup(html)


def _highlighted(code: str, language: str) -> str:
    out: list[str] = []
    run_class: str | None = None
    run_text: list[str] = []

    def flush() -> None:
        text = escape("".join(run_text))
        out.append(f'<span class="{run_class}">{text}</span>' if run_class else str(text))

    for token, value in _lexer(language).get_tokens(code):
        kept = _kept_class(token)
        cls = kept if kept and not value.isspace() else None
        if cls != run_class and run_text:
            flush()
            run_text = []
        run_class = cls
        run_text.append(value)
    if run_text:
        flush()
    html = "".join(out)
    return html[:-1] if html.endswith("\n") and not code.endswith("\n") else html


def _short(token, standard) -> str | None:
    while token is not None and token not in standard:
        token = token.parent
    return standard.get(token) if token is not None else None


#: lines of an example log shown around its first matched line; the whole log is in the entry file
LOG_WINDOW_BEFORE, LOG_WINDOW_AFTER = 5, 3


def mark_matches(log: str, signature, compact: int = 0) -> Markup:
    """An example log with each stretch a step of `signature` (a CompiledSignature) matched in a
    line wrapped in <mark>: the reader sees at once which printed words the entry is about. A
    long log is cut to the lines around the first match, and says how many it leaves out
    (`compact` 1, 2, 3: fewer and fewer, down to the matched line alone: a page shows every
    example, and cuts them shorter the more signatures and examples it has)."""
    physical = log.rstrip("\n").split("\n")
    marked = signature.marks.get(log)
    if marked is None:   # a text the entry's check did not see (a theme's own call)
        marked = marked_lines(signature, log)
    spans = {number: (start, end) for number, start, end in marked}
    hits = [number for number, _start, _end in marked]
    first = hits[0] if hits else len(physical) - 1
    before, after, most = ((LOG_WINDOW_BEFORE, LOG_WINDOW_AFTER, 16), (2, 2, 6), (1, 1, 4), (0, 0, 1))[min(int(compact), 3)]
    start = max(0, first - before)
    stop = min(len(physical), max(first, hits[-1] if hits else first) + after + 1, start + most)
    if stop - start >= len(physical) - 2:   # cutting one or two lines saves nothing
        start, stop = 0, len(physical)
    lines = [f"⋯ {start} line{'s' if start != 1 else ''} above"] if start else []
    for number in range(start, stop):
        line = physical[number]
        begin, end = spans.get(number, (-1, -1))   # one mark per line: the first match
        lines.append(f"{escape(line[:begin])}<mark>{escape(line[begin:end])}</mark>{escape(line[end:])}"
                     if begin >= 0 else str(escape(line)))
    if stop < len(physical):
        lines.append(f"⋯ {len(physical) - stop} line{'s' if len(physical) - stop != 1 else ''} below")
    return Markup("\n".join(lines))
