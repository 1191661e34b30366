"""The signature pattern language: literal text with typed placeholders, or a portable regex.

A contributor writes the error text as the software prints it and replaces the parts that vary
with placeholders:

    size mismatch for {name}: copying a param with shape {shape} from checkpoint

Each pattern compiles to one regular expression that behaves identically in RE2 (Python, used
for diagnosis on the command line) and in RE2JS (the linear-time JavaScript port of RE2 that the
browser's matcher runs, theme/assets/re2js.js), and that a JavaScript RegExp reads the same way
too: only features all of them share are produced or accepted (`check_portable`). Matching is a
search within one log line (after launcher prefixes are removed, see `logline`), case-sensitive.

Every compiled pattern also carries its *anchor*: the longest piece of literal text every
matching line must contain. Scanners look for anchors first (fast literal search) and run the
full expression only on lines that contain one.
"""

from __future__ import annotations

import re
import re._constants as sre_c  # noqa: PLC2701 - the stdlib parser is the reference grammar here
import re._parser as sre_parse  # noqa: PLC2701
from dataclasses import dataclass
from collections.abc import Sequence
from functools import lru_cache

import re2

#: Placeholders: name → (regex, what it matches, an example). Regexes use only ASCII classes
#: spelled out explicitly, so RE2 and JavaScript agree on every character.
#: what a person pastes in place of a number or a name they elide: N, X, ..., …, <redacted>, ***
ELIDED = r"N|X+|\.\.\.|…|<[A-Za-z0-9_ .:-]{1,40}>|\*{3,}"
PLACEHOLDERS: dict[str, tuple[str, str, str]] = {
    "int": (r"[-+]?[0-9]+|" + ELIDED, "a whole number, optionally signed (or elided: N, ..., <redacted>)", "-12"),
    "float": (r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?(?:nan|inf|NaN|Inf)|" + ELIDED,
              "a decimal number, integer, scientific notation, nan or inf (or elided)", "1.5e-05"),
    "hex": (r"(?:0[xX])?[0-9a-fA-F]+|" + ELIDED, "a hexadecimal number, with or without 0x (or elided)", "0x7f3a2c"),
    "shape": (r"torch\.Size\(\[[0-9, ]*\]\)", "a PyTorch shape", "torch.Size([1024, 256])"),
    "ints": (r"[\[(][-0-9, ]*[\])]", "a bracketed list or tuple of integers", "[8, 1024]"),
    "path": (r"[^ \t\"'<>]+", "a file or directory path (no spaces)", "/data/ckpt/global_step100"),
    "name": (r"[A-Za-z0-9_][A-Za-z0-9_.\-]*|" + ELIDED, "an identifier, dotted name or kebab name (or elided)",
             "module.l1.weight"),
    "word": (r"[^ \t]+", "any run of non-blank characters", "cuda:0"),
    "host": (r"[A-Za-z0-9][A-Za-z0-9.\-]*|" + ELIDED, "a host name or IPv4 address (or elided)", "node-17"),
    "dtype": (r"(?:torch\.)?[a-z]+[0-9]*", "a dtype name", "torch.bfloat16"),
    "any": (r".*?", "anything on the rest of the line, possibly nothing (use sparingly)", "..."),
}

MIN_ANCHOR = 8        # the longest literal piece must be at least this long
MIN_LITERAL = 12      # all literal text together must be at least this long
MAX_ANY = 2           # `{any}` at most this many times in one pattern
MAX_REPEAT = 1000     # RE2's own bound on counted repetition
MAX_PATTERN = 600     # characters
_PLACEHOLDER = re.compile(r"\{([a-z]*)\}")
_ESCAPES = str.maketrans({ch: "\\" + ch for ch in "\\.^$|?*+()[]{}/"})


def escape(text: str) -> str:
    """Escape literal text so that both RE2 and JavaScript (without the u flag) read it literally."""
    return text.translate(_ESCAPES)


class PatternError(ValueError):
    """A pattern that cannot be used; `code` is the diagnostic code, `column` 1-based in the pattern."""

    def __init__(self, code: str, message: str, hint: str, column: int = 1):
        super().__init__(message)
        self.code = code
        self.hint = hint
        self.column = column


@dataclass(frozen=True)
class Compiled:
    """A pattern ready for both engines."""

    source: str          # the pattern or regex as written
    regex: str           # portable regular expression (RE2 = JavaScript)
    anchor: str          # longest literal every match contains
    literal_chars: int   # total literal characters: a measure of specificity

    def compile_re2(self) -> "re2._Regexp":
        return _compile_re2(self.regex)


@lru_cache(maxsize=64)
def _compile_re2(regex: str):
    """A compiled RE2 object. Checking an entry compiles each of its expressions twice, at once:
    when the schema asks whether RE2 accepts it (`compile_pattern`) and for the example checks
    that follow; the last few dozen are kept for that, not thousands of entries' expressions
    (callers keep the ones they use, `CompiledSignature.step_regexes`, and drop them after)."""
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 1 << 20  # one line at a time needs little DFA memory
    return re2.compile(regex, options)


def split_pattern(pattern: str) -> list[tuple[str, str]]:
    """Pattern → [("lit", text) | ("ph", name)], validating braces and placeholder names."""
    parts: list[tuple[str, str]] = []
    literal: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "{" and pattern.startswith("{{", i):
            literal.append("{")
            i += 2
            continue
        if ch == "}" and pattern.startswith("}}", i):
            literal.append("}")
            i += 2
            continue
        if ch == "{":
            match = _PLACEHOLDER.match(pattern, i)
            if not match:
                raise PatternError("E030", f"unclosed or malformed placeholder at '{pattern[i:i + 12]}'",
                                   "write a placeholder as {int}, {name}, ...; a literal brace as {{ or }}", i + 1)
            name = match.group(1)
            if name not in PLACEHOLDERS:
                raise PatternError("E030", f"unknown placeholder '{{{name}}}'",
                                   f"use one of {', '.join('{' + p + '}' for p in PLACEHOLDERS)}, "
                                   "or write a literal brace as {{ or }}", i + 1)
            if literal:
                parts.append(("lit", "".join(literal)))
                literal = []
            parts.append(("ph", name))
            i = match.end()
            continue
        if ch == "}":
            raise PatternError("E030", "single '}' in pattern", "write a literal brace as }}", i + 1)
        literal.append(ch)
        i += 1
    if literal:
        parts.append(("lit", "".join(literal)))
    return parts


@lru_cache(maxsize=65536)
def compile_pattern(pattern: str) -> Compiled:
    """Compile the placeholder language. Raises PatternError with a code and a hint."""
    _check_common(pattern)
    parts = split_pattern(pattern)
    if sum(1 for kind, name in parts if kind == "ph" and name == "any") > MAX_ANY:
        raise PatternError("E034", f"more than {MAX_ANY} {{any}} placeholders",
                           "replace {any} by typed placeholders or literal text")
    # a search finds a match anywhere in the line, so {any} at either end adds nothing but
    # backtracking work in JavaScript: leave it out of the expression
    core = list(parts)
    while core and core[0] == ("ph", "any"):
        core.pop(0)
    while core and core[-1] == ("ph", "any"):
        core.pop()
    # a message behind an exception class matches behind another class, or none: releases and
    # wrappers re-raise the same message as another type (`torch.OutOfMemoryError:`,
    # `torch.cuda.OutOfMemoryError:`, `RuntimeError:`) -- unless the rest is too short to stand alone
    lead = ""
    literals = [text for kind, text in parts if kind == "lit"]
    counted = literals   # the class counts as evidence: a line behind the same class is as sure a match
    if core and core[0][0] == "lit":
        prefix = _CLASS_PREFIX.match(core[0][1])
        rest = [text for kind, text in core if kind == "lit"]
        rest[0] = rest[0][prefix.end():] if prefix else rest[0]
        if prefix and _literal_enough(rest):
            lead = ANY_CLASS
            core = [("lit", core[0][1][prefix.end():])] + core[1:]
            literals = rest   # what every matching line holds: the anchor is taken from these
    regex = lead + "".join(escape(text) if kind == "lit" else f"(?:{PLACEHOLDERS[text][0]})" for kind, text in core)
    return _finish(pattern, regex, literals, counted)


#: any exception class in front of a message, or none (see `compile_pattern`)
ANY_CLASS = r"(?:(?:[A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception)|[A-Z][A-Za-z0-9]* error)[ \t]*:[ \t]*)?"


def _literal_enough(literals: list[str]) -> bool:
    """Does the message stand without its class: literal enough for E034, and a piece of it
    distinctive as a core must be (`out of memory` alone is not; `CUDA error: out of memory` is)?"""
    return len(max(literals, key=len, default="").strip()) >= MIN_ANCHOR and \
        sum(len(text.strip()) for text in literals) >= MIN_LITERAL and \
        any(_distinctive(text.strip(" \t.:;,!?'\"`[(")) for text in literals)


@lru_cache(maxsize=65536)
def compile_regex(regex: str) -> Compiled:
    """Compile the escape hatch: a regex limited to what RE2 and JavaScript both do in linear time."""
    _check_common(regex)
    try:
        tree = sre_parse.parse(regex)
    except re.error as exc:
        raise PatternError("E032", f"regular expression does not parse: {exc.msg}",
                           "fix the syntax, or write a placeholder pattern instead",
                           (exc.pos or 0) + 1) from None
    if tree.state.flags & ~(sre_c.SRE_FLAG_UNICODE):
        raise PatternError("E031", "inline flags such as (?i) are not portable",
                           "remove the flag; spell out alternatives like [Ee]rror")
    if tree.state.groupdict:
        raise PatternError("E031", "named groups are not portable (Python and JavaScript spell them differently)",
                           "use a plain group (...) or (?:...)")
    _check_tree(tree, regex, depth=0)
    literals = _required_literals(tree)
    return _finish(regex, regex, literals)


def check_portable(regex: str) -> None:
    """Raise PatternError unless `regex` is in the portable subset: what RE2, RE2JS and a
    JavaScript RegExp all read the same way (the checks of `compile_regex`, without its demands on
    literal text). The differential test in tests/matching/ generates regexes from this subset."""
    _check_common(regex)
    try:
        tree = sre_parse.parse(regex)
    except re.error as exc:
        raise PatternError("E032", f"regular expression does not parse: {exc.msg}",
                           "fix the syntax", (exc.pos or 0) + 1) from None
    if tree.state.flags & ~(sre_c.SRE_FLAG_UNICODE) or tree.state.groupdict:
        raise PatternError("E031", "inline flags and named groups are not portable", "remove them")
    _check_tree(tree, regex, depth=0)


_SURROGATE = re.compile("[\ud800-\udfff]")
_LINE_BREAK = re.compile("[\n\r]")


def _check_common(text: str) -> None:
    surrogate = _SURROGATE.search(text)
    if surrogate:
        lone = surrogate.start()
        raise PatternError("E039", f"a lone UTF-16 surrogate (U+{ord(text[lone]):04X}) at character {lone + 1}: "
                           "RE2 cannot encode it, while the browser's engine would match it in pasted text",
                           "write the whole character, not half of its surrogate pair (YAML's \\U0001F600, "
                           "not \\ud83d\\ude00)", lone + 1)
    if not text.strip():
        raise PatternError("E030", "pattern is empty", "write the error text as the software prints it")
    if len(text) > MAX_PATTERN:
        raise PatternError("E030", f"pattern is {len(text)} characters; the limit is {MAX_PATTERN}",
                           "keep the distinctive part of the message")
    line_break = _LINE_BREAK.search(text)
    if line_break:
        raise PatternError("E030", "a pattern is one line",
                           "split it into a multi-line signature with 'lines:'", line_break.start() + 1)


_ALLOWED_AT = {sre_c.AT_BEGINNING, sre_c.AT_END, sre_c.AT_BOUNDARY, sre_c.AT_NON_BOUNDARY}
_ALLOWED_CATEGORIES = {sre_c.CATEGORY_DIGIT, sre_c.CATEGORY_NOT_DIGIT, sre_c.CATEGORY_WORD, sre_c.CATEGORY_NOT_WORD}


def _check_tree(tree, regex: str, depth: int) -> None:
    """Whitelist the regex features both engines share; refuse nested unbounded repetition."""
    for op, arg in tree:
        if op in (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.ANY):
            if op != sre_c.ANY and arg > 0x7F:
                raise PatternError("E031", "non-ASCII characters in a regex are not portable",
                                   "use the placeholder language, which handles any text")
            continue
        if op is sre_c.IN:
            for item_op, item_arg in arg:
                if item_op is sre_c.CATEGORY and item_arg not in _ALLOWED_CATEGORIES:
                    raise PatternError("E031", "\\s and \\S differ between RE2 and JavaScript",
                                       "write [ \\t] or [^ \\t] instead")
                highest = item_arg[1] if item_op is sre_c.RANGE else item_arg if item_op is sre_c.LITERAL else 0
                if highest > 0xFFFF:
                    raise _astral_class(regex, highest)
            continue
        if op is sre_c.AT:
            if arg not in _ALLOWED_AT:
                raise PatternError("E031", "\\A and \\Z are not portable", "use ^ and $")
            continue
        if op is sre_c.BRANCH:
            for branch in arg[1]:
                _check_tree(branch, regex, depth)
            continue
        if op is sre_c.SUBPATTERN:
            _group, add_flags, del_flags, body = arg
            if add_flags or del_flags:
                raise PatternError("E031", "inline flags are not portable", "remove the flag")
            _check_tree(body, regex, depth)
            continue
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
            low, high, body = arg
            unbounded = high is sre_c.MAXREPEAT
            if (not unbounded and high > MAX_REPEAT) or low > MAX_REPEAT:
                raise PatternError("E031", f"repetition count above {MAX_REPEAT}", "use a smaller bound or *")
            if unbounded and depth > 0:
                raise PatternError("E031", "nested unbounded repetition such as (a+)+ can take exponential "
                                   "time in JavaScript", "rewrite without a repeated group inside a repetition")
            _check_tree(body, regex, depth + (1 if unbounded else 0))
            continue
        if op in (sre_c.CATEGORY,):
            if arg not in _ALLOWED_CATEGORIES:
                raise PatternError("E031", "\\s and \\S differ between RE2 and JavaScript",
                                   "write [ \\t] or [^ \\t] instead")
            continue
        names = {sre_c.ASSERT: "lookahead", sre_c.ASSERT_NOT: "negative lookaround",
                 sre_c.GROUPREF: "backreference", sre_c.GROUPREF_EXISTS: "conditional group"}
        what = names.get(op, str(op).lower().replace("_", " "))
        raise PatternError("E031", f"{what} is not supported by RE2",
                           "rewrite without it; an 'unless' pattern can veto a match instead of a lookaround")


def _astral_class(regex: str, highest: int) -> PatternError:
    """E039: a character class holding characters beyond U+FFFF, such as [😀-😂]. RE2 and RE2JS
    read such a class by code points, but a JavaScript string holds each of these characters as
    two UTF-16 code units, and any JavaScript that reads signatures.json with a RegExp (the
    browser's matcher did, before RE2JS; a site's own theme may still) sees [😀-😂] as the units
    \\uD83D, \\uDE00-\\uD83D, \\uDE02: a range out of order, a SyntaxError that fails every
    diagnosis on the site, or, without a range, a class that matches half a character. The
    escape hatch is ASCII-only for literals already (E031); a class may hold any character of the
    Basic Multilingual Plane, which every engine reads alike, and nothing beyond it."""
    at = next((i for i, ch in enumerate(regex) if ord(ch) > 0xFFFF), None)
    shown = chr(highest) if at is None else regex[at]
    where = f" at character {at + 1}" if at is not None else ""
    return PatternError("E039", f"a character class holds '{shown}' (U+{ord(shown):04X}){where}, beyond U+FFFF: "
                        "a JavaScript string holds it as two UTF-16 code units, so JavaScript's RegExp does not "
                        "read the class as RE2 does",
                        "write the text with the placeholder language (pattern:), which takes any character "
                        "literally, or keep such characters out of the class", (at or 0) + 1)


def _required_literals(tree) -> list[str]:
    """Runs of literal characters at the top level of the regex: text every match contains."""
    runs: list[str] = []
    current: list[str] = []
    for op, arg in tree:
        if op is sre_c.LITERAL:
            current.append(chr(arg))
            continue
        if op is sre_c.SUBPATTERN and len(arg[3]) and all(o is sre_c.LITERAL for o, _ in arg[3]):
            current.extend(chr(a) for _, a in arg[3])
            continue
        if current:
            runs.append("".join(current))
            current = []
        if op is sre_c.SUBPATTERN:
            runs.extend(_required_literals(arg[3]))
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) and arg[0] >= 1:
            runs.extend(_required_literals(arg[2]))
    if current:
        runs.append("".join(current))
    return runs


def _finish(source: str, regex: str, literals: list[str], counted: list[str] | None = None) -> Compiled:
    anchor = max(literals, key=len, default="")
    literal_chars = sum(len(text.strip()) for text in (literals if counted is None else counted))
    if len(anchor.strip()) < MIN_ANCHOR or literal_chars < MIN_LITERAL:
        raise PatternError("E034", f"too little literal text (longest literal piece '{anchor.strip()}', "
                           f"{literal_chars} literal characters in all)",
                           f"keep at least {MIN_ANCHOR} characters of the message verbatim in one piece and "
                           f"{MIN_LITERAL} in all, so the pattern cannot match unrelated lines")
    try:
        _compile_re2(regex)
    except re2.error as exc:
        raise PatternError("E032", f"RE2 rejects the expression: {exc}", "fix the expression") from None
    return Compiled(source=source, regex=regex, anchor=anchor, literal_chars=literal_chars)


# -- the core of a signature -----------------------------------------------------------------------
#: a core is at least this long, in characters and in words: shorter spans are not distinctive
CORE_MIN_CHARS = 16
CORE_MIN_WORDS = 4
#: an exception class or a library's "X error:" in front of a message: other releases and other
#: wrappers print the same message behind another one, or none (`torch.cuda.OutOfMemoryError:`,
#: `torch.OutOfMemoryError:`, `RuntimeError:`, `CUDA error:`)
_CLASS_PREFIX = re.compile(r"^[ \t]*(?:[A-Za-z_][\w.]*(?:Error|Exception|Warning)|[A-Z][A-Za-z0-9]* error)[ \t]*:[ \t]*")
#: where a message's clauses end: a sentence, a colon, a semicolon, a parenthesis, a dash, a comma
_CLAUSE_END = re.compile(r"(?<=[.:;!?])[ \t]+|[ \t]+\(|\)[ \t]*|[ \t]+-[ \t]+|,[ \t]+")
_WORD = re.compile(r"[A-Za-z0-9_]+")


#: the messages of CPython's own exceptions (Objects/*.c, Python/*.c) and of the C and C++
#: runtimes (libstdc++'s terminate handler, the shell's signal reports): any program prints them,
#: so without a name of its own beside them they identify no failure
RUNTIME_MESSAGES = ("terminate called after throwing an instance of", "terminate called without an active exception",
                    "Segmentation fault", "core dumped", "Fatal Python error",
                    "got an unexpected keyword argument", "positional argument", "required positional argument",
                    "object has no attribute", "object is not subscriptable", "object is not callable",
                    "object is not iterable", "index out of range", "values to unpack", "unsupported operand type",
                    "No module named", "cannot import name", "is not defined", "invalid literal for int",
                    "division by zero", "maximum recursion depth exceeded", "must be str, not",
                    "can only concatenate", "unhashable type")


@lru_cache(maxsize=1)
def _errno_messages() -> tuple[str, ...]:
    """Every errno's message (`os.strerror`), folded: the same for every span `_generic` tests."""
    import errno
    import os

    return tuple(sorted({os.strerror(code).lower() for code in errno.errorcode} - {""}))


def _generic(text: str) -> bool:
    """An operating system's own message (`No such file or directory`, `Address already in use`:
    printed by every program that meets that errno), or one of CPython's with no name beside it
    (`__init__() got an unexpected keyword argument`): it identifies no failure."""
    folded = text.lower()
    if any(len(message) >= 8 and message in folded for message in _errno_messages()):
        return True
    for message in RUNTIME_MESSAGES:
        at = text.find(message)
        if at >= 0 and not _MARKED.search(_DUNDER.sub("", text[:at] + " " + text[at + len(message):])):
            return True
    return False


def _distinctive(span: str) -> bool:
    """Long enough, and marked as this failure's own words rather than common ones: a name
    (`state_dict`, `torch.Size`, `NCCL`, `DeepSpeedCPUAdam`, `sm_90`, a path), or a sentence of
    six words or more; never an operating system's generic message."""
    words = _WORD.findall(span)
    if len(span) < CORE_MIN_CHARS or len(words) < CORE_MIN_WORDS or _generic(span):
        return False
    if span.count("/") >= 2 and len(words) < 6:   # a path: every traceback through that module prints it
        return False
    return len(words) >= 6 or bool(_MARKED.search(_DUNDER.sub("", span)))


#: Python's special names (`__init__`): every class has them, so they name nothing
_DUNDER = re.compile(r"__[A-Za-z0-9]+__")
#: a word that names something: with `_`, `.`, `/` or a digit inside, CamelCase, or capitals
_MARKED = re.compile(r"[A-Za-z0-9]{2}[_./][A-Za-z0-9]{2}|_[A-Za-z0-9]|[A-Za-z][0-9]|[a-z][A-Z]|\b[A-Z]{3,}\b")


def derive_core(literals: list[str], avoid: Sequence[str] = ()) -> str:
    """The core of a single-line signature: the shortest start of a piece of its literal text,
    ending at a clause boundary, that identifies the failure alone (`_distinctive`); "" when no
    piece has one. A line holding the core is the same failure printed otherwise: cut after it,
    behind another exception class or none, wrapped, or with its variable parts elided. `avoid`:
    texts the core must not be in (the signature's counter-examples)."""
    for piece in literals:
        text = piece
        while True:
            stripped = _CLASS_PREFIX.sub("", text, count=1)
            if stripped == text:
                break
            text = stripped
        ends = [m.start() for m in _CLAUSE_END.finditer(text)] + [len(text)]
        for end in ends:
            span = text[:end].strip(" \t.:;,!?'\"`[")
            if _distinctive(span) and not any(span in other for other in avoid):
                return span
    return ""


def literal_pieces(source: str, regex_form: bool) -> list[str]:
    """The literal text of a pattern or a regex, piece by piece, in order."""
    if regex_form:
        return _required_literals(sre_parse.parse(source))
    return [text for kind, text in split_pattern(source) if kind == "lit"]


def core_problem(core: str, pieces: list[str]) -> str | None:
    """Why a declared core cannot be used, or None: it must be a piece of the signature's own
    literal text, and long enough to identify a failure."""
    if not any(core in piece for piece in pieces):
        return "a core must be literal text of the signature's own pattern (a span between its placeholders)"
    if len(core) < CORE_MIN_CHARS or len(_WORD.findall(core)) < CORE_MIN_WORDS:
        return f"a core needs at least {CORE_MIN_CHARS} characters and {CORE_MIN_WORDS} words to identify a failure"
    return None
