"""A signature as a reader reads it: the message with its variable parts named (`exits with return
code = N`), never a regular expression. Hub tables show it.

Patterns: each placeholder becomes its name (`{int}` → N, `{path}` → PATH, `{any}` → …); literal
braces are single again. Regexes, over the portable subset that `patterns.check_portable` admits,
read through the standard library's parser: literal characters stay; a repeated class of digits is
N, of hex digits HEX, of identifier characters NAME; anything else repeated (`.*`, `[^']*`) and
any class repeated zero or more times is …; anchors vanish; an optional group is shown in square
brackets; alternatives of single words are joined by /, other alternatives shown as (a | b), and
more than three as the first one and …. The result is for reading, not matching.
"""

from __future__ import annotations

import re
from functools import lru_cache

try:   # Python 3.11 and later
    import re._constants as sre_c
    import re._parser as sre_parse
except ImportError:  # pragma: no cover
    import sre_constants as sre_c
    import sre_parse

from .patterns import split_pattern

#: what each placeholder reads as
NAMES = {"int": "N", "float": "X", "hex": "HEX", "shape": "SHAPE", "ints": "[N, …]", "path": "PATH",
         "name": "NAME", "word": "WORD", "host": "HOST", "dtype": "DTYPE", "any": "…"}

_DIGITS = set("0123456789")
_HEX = _DIGITS | set("abcdefABCDEF")
_WORDISH = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def readable(text: str, regex: bool = False) -> str:
    """A signature's pattern (or, with `regex`, its regex) as a message with named placeholders."""
    return _regex(text) if regex else "".join(NAMES[v] if kind == "ph" else v for kind, v in split_pattern(text))


@lru_cache(maxsize=4096)
def _regex(regex: str) -> str:
    try:
        tree = sre_parse.parse(_marked_alternatives(regex))
    except Exception:   # a regex check refused: shown as written, never hidden
        return regex
    # `[A-Z][a-z]*`: a name, not a name and then anything
    return re.sub(" {2,}", " ", _render(tree)).replace("NAME…", "NAME").strip()


def _marked_alternatives(regex: str) -> str:
    """The regex with a different control character at the start of each alternative of a group:
    the standard parser pulls a prefix that all alternatives share out of the group
    (`(evaluate_x|evaluation_y)` → `evaluat(e_x|ion_y)`), which would read as nonsense. The
    portable subset holds no control character, and `_render` drops them."""
    out, counters, at, in_class = [], [0], 0, False
    while at < len(regex):
        ch = regex[at]
        if ch == "\\":
            out.append(regex[at:at + 2])
            at += 2
            continue
        if in_class:
            in_class = ch != "]" or regex[at - 1] == "["
        elif ch == "[":
            in_class = True
            if regex.startswith("[]", at) or regex.startswith("[^]", at):
                out.append(regex[at:at + (2 if regex[at + 1] == "]" else 3)])
                at += 2 if regex[at + 1] == "]" else 3
                continue
        elif ch == "(":
            counters.append(0)
            close = regex.index(":", at) + 1 if regex.startswith("(?:", at) else at + 1
            out.append(regex[at:close] + "\x01")
            at = close
            continue
        elif ch == ")":
            counters.pop()
        elif ch == "|":
            counters[-1] += 1
            out.append("|" + chr(2 + counters[-1] % 30))
            at += 1
            continue
        out.append(ch)
        at += 1
    return "".join(out)


def _chars(items) -> set[str] | None:
    """The characters a class holds, or None when it is negated or holds a category (\\d, \\w)."""
    out: set[str] = set()
    for op, arg in items:
        if op is sre_c.LITERAL:
            out.add(chr(arg))
        elif op is sre_c.RANGE:
            if arg[1] - arg[0] > 200:
                return None
            out.update(chr(c) for c in range(arg[0], arg[1] + 1))
        elif op is sre_c.CATEGORY and arg is sre_c.CATEGORY_DIGIT:
            out.update(_DIGITS)
        elif op is sre_c.CATEGORY and arg is sre_c.CATEGORY_WORD:
            out.update(_WORDISH - {".", "-"})
        else:
            return None
    return out


def _class_name(op, arg) -> str:
    """What a repeated single-character item reads as."""
    chars = _chars(arg) if op is sre_c.IN else {chr(arg)} if op is sre_c.LITERAL else None
    if chars is None and op is sre_c.CATEGORY:
        chars = _chars([(op, arg)])
    if chars:
        if chars <= _DIGITS | {".", ","}:
            return "N"
        if chars <= _HEX | {"x", "X"}:
            return "HEX"
        if chars <= _WORDISH | {"<", ">", "/"}:
            return "NAME"
    return "…"


def _single(op, arg) -> str:
    """One character, not repeated."""
    if op is sre_c.LITERAL:
        return chr(arg) if arg >= 0x20 else ""
    if op is sre_c.IN:
        chars = _chars(arg)
        literals = [chr(a) for o, a in arg if o is sre_c.LITERAL]
        if chars is not None and len(literals) == len(arg):
            if len({c.lower() for c in literals}) == 1 or not any(c.isalnum() for c in literals):
                return literals[0]   # [Tt]: the word as first spelt; [,.]: the first mark
            return "/".join(literals)
        return _class_name(op, arg) if chars else "…"
    return "…" if op in (sre_c.ANY, sre_c.NOT_LITERAL) else _class_name(op, arg)


def _render(tree) -> str:
    out: list[str] = []
    for op, arg in tree:
        if op is sre_c.AT:
            continue
        if op is sre_c.SUBPATTERN:
            out.append(_render(arg[-1]))
        elif op is sre_c.BRANCH:
            out.append(_alternatives([_render(branch) for branch in arg[1]]))
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
            low, high, body = arg
            single = len(body) == 1 and body[0][0] in (sre_c.IN, sre_c.ANY, sre_c.NOT_LITERAL, sre_c.CATEGORY,
                                                      sre_c.LITERAL)
            if single and body[0][0] is sre_c.LITERAL:   # a* reads as nothing, a? as [a], a+ as a
                char = chr(body[0][1])
                out.append(char * low if low else f"[{char}]" if high == 1 else "")
            elif single:
                out.append(_class_name(*body[0]) if low else "…")
            elif low == 0 and high == 1:
                inner = _render(body)
                out.append(f"[{inner}]" if inner.strip() else "")
            else:
                out.append(_render(body) * max(low, 1))
        else:
            out.append(_single(op, arg))
    return "".join(out)


def _alternatives(options: list[str]) -> str:
    present = [o for o in options if o.strip()]
    if len(present) < len(options):   # (^|...) or (x|): the rest is optional
        return f"[{_alternatives(present)}]" if present else ""
    if len(options) == 1:
        return options[0]
    if len(options) > 3:
        return f"{options[0]} | …" if " " in options[0] else f"{options[0]}/…"
    if all(o and " " not in o for o in options):
        return "/".join(options)
    return "(" + " | ".join(options) + ")"
