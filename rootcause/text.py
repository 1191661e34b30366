"""Text as both the site's search and the log matcher see it: search tokens and Markdown → plain text.

Tokens. Text is cut into runs of `[A-Za-z0-9_]`; each run is kept whole (lower-cased) and, when
it is an identifier, also split into its parts at `_` and camelCase boundaries, so that
`CUDA_VISIBLE_DEVICES` is found by `cuda_visible_devices` and by `visible`. Volatile tokens are
dropped on both sides (numbers of two digits or more, hex addresses and hashes), as are a few
stop words (English function words and the question words readers type: "why does ... hang");
plural words are reduced to the singular (`stem`); one-digit numbers stay, since
`torch.Size([0])` or ZeRO stage `3` tell failures apart: a pasted message with other numbers,
paths and names still finds its entry. A word joined to a short number by a hyphen or an
underscore also gives the two written together: `ZeRO-3`, `zero-3` and `zero_3` all give `zero3`,
which is what a reader types. theme/assets/search.js implements the same `tokens()`;
the tests compare the two.

This module sits below entries, matching and site (it imports nothing of rootcause), so the
loader can precompute an entry's search terms and the site can index them without a loop.
"""

from __future__ import annotations

import re
from functools import lru_cache

STOPWORDS = frozenset("""a an and are as at be but by for from has have if in into is it its no not of on or
that the their then there these this to was were will with you your
how what why when where which do does did can could should would my me we our after while during using get got
""".split())
_RUN = re.compile(r"[A-Za-z0-9_]+")
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# addresses (0x7f3a2c...) and hashes (8+ hex digits, at least one a digit); short hex-looking
# words such as bf16 or a100 are real terms
_HEXISH = re.compile(r"^(?:0x[0-9a-f]+|(?=[0-9a-f]*[0-9])[0-9a-f]{8,})$")
# a word and a short number written with a hyphen or underscore between them ("ZeRO-3", "zero_3",
# "sm_120") is also one token without it ("zero3", "sm120"), the way readers type it
# (a match starts where a run of letters does: the lookbehind spares the quadratic retries
# inside every word that follows no hyphen)
_JOIN = re.compile(r"(?<![A-Za-z])([A-Za-z]+)[-_]([0-9]{1,3})(?![0-9A-Za-z])")



def _volatile(token: str) -> bool:
    """Numbers of two digits or more, hex addresses and hashes: they differ from run to run."""
    return (token.isdigit() and len(token) > 1) or bool(_HEXISH.match(token))


def _keep(token: str) -> bool:
    return (len(token) >= 2 or token.isdigit()) and token not in STOPWORDS and not _volatile(token)


def stem(token: str) -> str:
    """Plural to singular, roughly ('weights' → 'weight', 'entries' → 'entry'): the same on both sides."""
    if not token.isalpha():
        return token
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


@lru_cache(maxsize=1 << 18)
def _run_tokens(run: str) -> tuple[str, ...]:
    """The tokens of one `[A-Za-z0-9_]+` run; words repeat across entries, so this is memoised."""
    whole = run.lower()
    if _volatile(whole):
        return ()
    out = [stem(whole)] if _keep(whole) else []
    # parts of a chunk split at a case or digit change keep only words of 3 letters or more, and
    # digits: "OutOfMemoryError" gives out, memory, error, "ZeRO" no "ze" and "ro"
    parts = []
    for chunk in run.split("_"):
        pieces = _PART.findall(chunk)
        parts.extend(pieces if len(pieces) == 1 else [p for p in pieces if len(p) >= 3 or p.isdigit()])
    out.extend(stem(p.lower()) for p in parts if _keep(p.lower()) and p.lower() != whole)
    return tuple(out)


def tokens(text: str) -> list[str]:
    """Search tokens of a text, in order, with repeats (see the module docstring). A word joined
    to a short number by `-` or `_` first adds the two written together, so that "zero-3" gives
    the tokens (and pairs) of "zero3": zero3, zero, 3."""
    joins = [(m.start(), m.group(1).lower() + m.group(2)) for m in _JOIN.finditer(text)] \
        if ("-" in text or "_" in text) else []
    if not joins:   # most texts: the runs' tokens, one after the other
        run_tokens = _run_tokens
        return [token for run in _RUN.findall(text) for token in run_tokens(run)]
    out: list[str] = []
    j = 0
    for match in _RUN.finditer(text):
        while j < len(joins) and joins[j][0] < match.end():
            out.append(joins[j][1])
            j += 1
        out.extend(_run_tokens(match.group()))
    return out


def terms(text: str) -> list[str]:
    """Tokens plus each pair of neighbouring tokens ("size+0" for `torch.Size([0])`): pairs tell
    apart messages made of the same words, like the shapes of two size-mismatch errors. A word
    is not paired with its own part ("state_dict" and "state", "zero3" and "zero")."""
    found = tokens(text)
    return found + [f"{a}+{b}" for a, b in zip(found, found[1:]) if not (a.startswith(b) or b.startswith(a))]


NAME_TOKENS = 8  # a name (an alias, a short query) has at most this many tokens


def name_key(text: str) -> str | None:
    """The search term of a whole short name: "~" and its distinct tokens, read without case and
    sorted, joined by "+", an identifier by its parts: "ZeRO-3", "zero_3" and "zero3" all give
    "~3+zero+zero3", "NCCL segfault" and "segfault in NCCL" both "~nccl+segfault", "state_dict"
    and "state dict" both "~dict+state". An entry's aliases are indexed under it, and a query that is exactly an
    alias finds its entry first. None for text of more than NAME_TOKENS tokens, or none."""
    found = sorted({t for t in tokens(text.lower()) if "_" not in t})  # an identifier counts by its parts
    return "~" + "+".join(found) if 0 < len(found) <= NAME_TOKENS else None


_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_STRONG = re.compile(r"(\*\*|\*)(?=\S)(.+?)(?<=\S)\1", re.S)
_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9_])(__|_)(?=\S)(.+?)(?<=\S)\1(?![A-Za-z0-9_])", re.S)
_SPACE = re.compile(r"\s+")


@lru_cache(maxsize=32768)
def plain(text: str) -> str:
    """Inline Markdown → plain text (meta descriptions, the search index, the feed, the CLI).

    A few regular expressions instead of a full parse: this runs several times per entry.
    Code spans are kept verbatim (their `_` and `*` are literal); links keep their text.
    """
    pieces = []
    last = 0
    for match in _CODE_SPAN.finditer(text or ""):
        pieces.append(_plain_prose(text[last:match.start()]))
        pieces.append(match.group(2).strip())
        last = match.end()
    pieces.append(_plain_prose((text or "")[last:]))
    return _SPACE.sub(" ", "".join(pieces)).strip()


def _plain_prose(text: str) -> str:
    text = _LINK.sub(r"\1", text)
    text = _STRONG.sub(r"\2", text)
    return _UNDERSCORE.sub(r"\2", text)


# -- decoration ----------------------------------------------------------------------------------
# The one normalisation of a log line, applied alike to logs, to signature examples (through
# `matching.logline.parse_line`) and to pasted search queries; theme/assets/matcher.js and
# search.js apply the same. What terminals, `rich`, notebooks, loggers and issue threads add to a
# message and what is taken away:
# - ANSI escape sequences anywhere in the line (colours, cursor moves, OSC titles and links);
# - carriage returns, and the `^M` that a copy of one shows, become a space (progress bars
#   redraw themselves with `\r`; the message after it is kept);
# - a Markdown quote `> ` (or `>> `) at the start, as when a log is quoted in an issue;
# - the frame of a `rich` panel or traceback box (`│ ... │`, `┃`, `║`) around the text;
# - a tqdm progress bar at the start (`  2%|██▏  | 13/620 [01:17<58:26,  5.78s/it]`): a bar is
#   drawn without a newline, so the next record a process prints is glued behind it;
# - trailing white space.
# Messages wrapped onto several lines are joined by the scanner, not here (see matching.scanner).
DECORATION_RULES: list[tuple[str, str, str]] = [   # (name, regex, replacement), applied in order
    ("ansi", r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)|[@-Z\\-_])", ""),
    ("carriage-return", r"\r|\^M", " "),
    ("quote", r"^(?:> ?){1,8}(?=\S|$)", ""),
    ("box", r"^[ \t]*[│┃║](?: |$)|[ \t]*[│┃║][ \t]*$", ""),
    ("progress", r"^[^|\n]{0,80}?[0-9]{1,3}%\|[^|\n]{0,200}\|[^\[\n|]{0,40}\[[^\]\n]{0,200}\][ \t]*", ""),
]
_DECORATION = [(re.compile(regex), replacement) for _, regex, replacement in DECORATION_RULES]
#: a cheap test per rule before its regex runs: most lines have no decoration at all
DECORATION_NEEDS = (("\x1b",), ("\r", "^M"), (">",), ("\u2502", "\u2503", "\u2551"), ("%|",))
_TRAILING = " \t\f\v"
#: any rule's mark: one search tells that a line needs none of them (most lines)
_ANY_NEED = re.compile("|".join(re.escape(mark) for marks in DECORATION_NEEDS for mark in marks))


def undecorate(line: str) -> str:
    """A log line without the decoration listed above (see the comment before DECORATION_RULES)."""
    if _ANY_NEED.search(line) is None:
        return line.rstrip(_TRAILING)
    for (regex, replacement), marks in zip(_DECORATION, DECORATION_NEEDS):
        if any(mark in line for mark in marks):  # noqa: SIM110 - a cheap test before the regex
            line = regex.sub(replacement, line)
    return line.rstrip(_TRAILING)


# ANSI escape sequences (CSI "ESC [ ... final", OSC "ESC ] ... BEL|ESC \", and two-character
# "ESC x") are removed whole, so a coloured log line loses its colour codes, not just the ESC.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and
# isolates that reorder what a terminal shows (U+202A-U+202E, U+2066-U+2069)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile("[\t\n]")


def printable(text: str, *, one_line: bool = False) -> str:
    """Text that came from an entry, a log or a file name, made safe to print on a terminal or in
    a CI log: escape sequences and control characters are dropped (they could recolour, retitle or
    clear the terminal, hide text, or reorder it). With `one_line`, tabs and newlines become
    spaces, so one record stays one line."""
    text = _CONTROL.sub("", _ANSI.sub("", text))
    return _LINE_BREAKS.sub(" ", text) if one_line else text


_MAYBE_IMAGE = re.compile(r"!\[")


def markdown_images(text: str) -> list[str]:
    """The address of every image in a Markdown text (inline `![alt](src)` and reference forms),
    as CommonMark parses it: a quick test first, since almost no prose holds `![` at all."""
    if not text or not _MAYBE_IMAGE.search(text):
        return []
    from markdown_it import MarkdownIt  # the site's reference renderer (site/content.py)

    found: list[str] = []
    stack = list(MarkdownIt("commonmark").enable("table").parse(text))
    while stack:
        token = stack.pop()
        if token.type == "image":
            found.append(str(token.attrGet("src") or ""))
        stack.extend(token.children or ())
    return sorted(found)
