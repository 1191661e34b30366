"""Read one YAML file into plain Python data plus the line and column of every key and value.

PyYAML's own loaders lose positions, accept duplicate keys silently and expand aliases without
bound. This module composes values straight from libyaml's event stream instead, so that
- every value keeps its source position (for `file:line:col` messages later),
- a duplicate key, an alias, absurd nesting, a huge or binary file is an error, not a hang,
- it stays fast: events come from the C parser; nothing is parsed twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode

from .errors import Diagnostic
from .files import Refused, read_regular

MAX_FILE_BYTES = 512 * 1024
MAX_DEPTH = 32
MAX_NODES = 50_000
#: longer integers are refused (E012) rather than computed: Python itself refuses to convert more
#: than 4,300 digits, and a long base-60 number (`1:2:3:...`) would take quadratic time
MAX_NUMBER_CHARS = 100
TOO_LARGE_HINT = "an entry is a page of text: move long logs out and keep a few example lines"

Path_ = tuple  # a path into the data: keys and list indices, e.g. ("signatures", 0, "pattern")

try:  # libyaml's C parser: an order of magnitude faster than the pure-Python one
    from yaml.cyaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _Parser = None
_Resolver = yaml.resolver.Resolver()
_constructor = SafeConstructor()
_ScalarEvent = yaml.ScalarEvent


@dataclass
class Located:
    """Loaded data and the (line, column) of each value and key, both 1-based."""

    data: Any
    values: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)

    def slim(self, keep) -> "Located":
        """A copy without the data and with only the positions `keep(path)` selects: what later
        checks need, at a fraction of the memory (a large site holds thousands of these)."""
        return Located(None, {p: v for p, v in self.values.items() if keep(p)},
                       {p: v for p, v in self.keys.items() if keep(p)})

    def where(self, path: Path_, *, key: bool = False) -> tuple[int, int]:
        """Position of `path`, falling back to the nearest ancestor that has one."""
        table = self.keys if key else self.values
        path = tuple(path)
        while path:
            if path in table:
                return table[path]
            if not key and path in self.keys:
                return self.keys[path]
            path = path[:-1]
        return self.values.get((), (1, 1))


class _Stop(Exception):
    def __init__(self, diagnostic: Diagnostic):
        self.diagnostic = diagnostic


def _position_of_offset(raw: bytes, offset: int) -> tuple[int, int]:
    line = raw.count(b"\n", 0, offset) + 1
    column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return line, column


def read_text(path: Path, shown: str, raw: bytes | None = None) -> tuple[str | None, list[Diagnostic]]:
    """Bytes → text, refusing what is too big, not text, or not a regular file (a symbolic link,
    a pipe, a device: never opened, see `files`), before any parser sees it."""
    if raw is None:
        try:
            raw = read_regular(path, MAX_FILE_BYTES, TOO_LARGE_HINT)
        except Refused as refused:
            return None, [refused.diagnostic(shown)]
        except OSError as exc:
            return None, [Diagnostic(shown, 1, 1, "E001", f"cannot read file: {exc.strerror}",
                                     "check that the file exists and is readable")]
    if len(raw) > MAX_FILE_BYTES:
        return None, [Diagnostic(shown, 1, 1, "E002", f"file is {len(raw):,} bytes; the limit is {MAX_FILE_BYTES:,}",
                                 TOO_LARGE_HINT)]
    nul = raw.find(b"\x00")
    if nul >= 0:
        line, col = _position_of_offset(raw, nul)
        return None, [Diagnostic(shown, line, col, "E001", "file contains a NUL byte: it is binary, not text",
                                 "save the file as UTF-8 text")]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, col = _position_of_offset(raw, exc.start)
        return None, [Diagnostic(shown, line, col, "E001", f"invalid UTF-8 byte 0x{raw[exc.start]:02x}",
                                 "save the file as UTF-8 text")]
    return text, []


def load_yaml(path: Path, shown: str | None = None, text: str | None = None) -> tuple[Located | None, list[Diagnostic]]:
    """Load one YAML document. Returns (located data, []) or (None, [the error that stopped it])."""
    shown = shown or path.as_posix()
    if text is None:
        text, problems = read_text(path, shown)
        if text is None:
            return None, problems
    try:
        return _Composer(text, shown).compose(), []
    except _Stop as stop:
        return None, [stop.diagnostic]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = exc.problem or exc.context or "invalid YAML"
        if "nesting depth" in what:
            return None, [Diagnostic(shown, line, col, "E006", f"data nested too deeply ({what})",
                                     "entries are at most a few levels deep; check the brackets")]
        if exc.context and exc.problem:
            what = f"{exc.problem} ({exc.context})"
        return None, [Diagnostic(shown, line, col, "E003", what,
                                 "check indentation here, and quote strings that contain ': ' or ' #' "
                                 "or start with one of { [ * & ! % @ `")]
    except yaml.YAMLError as exc:
        return None, [Diagnostic(shown, 1, 1, "E003", str(exc).splitlines()[0], "check the YAML syntax")]


class _Composer:
    """Builds Python values from parser events, recording positions as it goes."""

    def __init__(self, text: str, shown: str):
        self.text = text
        self.shown = shown
        self.located = Located(None)
        self.nodes = 0

    def fail(self, mark, code: str, message: str, hint: str) -> None:
        raise _Stop(Diagnostic(self.shown, mark.line + 1, mark.column + 1, code, message, hint))

    def compose(self) -> Located:
        parser = _Parser(self.text) if _Parser else yaml.SafeLoader(self.text)
        get = parser.get_event
        first = get()  # StreamStart
        assert isinstance(first, yaml.StreamStartEvent)
        event = get()
        if isinstance(event, yaml.StreamEndEvent):
            self.located.data = None
            return self.located
        self.located.data = self._value(get(), get, (), 0)  # the document's root node
        get()  # DocumentEnd
        after = get()
        if isinstance(after, yaml.DocumentStartEvent):
            self.fail(after.start_mark, "E003", "more than one YAML document in the file",
                      "an entry is one document: remove the '---' separator and what follows")
        return self.located

    # events are of these exact classes (from the C parser and the Python one alike): compared
    # by `type(...) is`, which costs less than isinstance on every event of every entry
    def _value(self, event, get, path: tuple, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self.fail(event.start_mark, "E006", f"more than {MAX_NODES:,} values in one file",
                      "an entry should be a page of text; split or shorten it")
        if depth > MAX_DEPTH:
            self.fail(event.start_mark, "E006", f"data nested more than {MAX_DEPTH} levels deep",
                      "entries are at most a few levels deep; check the indentation")
        mark = event.start_mark
        self.located.values[path] = (mark.line + 1, mark.column + 1)
        kind = type(event)
        if kind is _ScalarEvent:
            return self._scalar(event)
        if kind is yaml.AliasEvent:
            self.fail(mark, "E005", f"alias '*{event.anchor}' is not allowed",
                      "write the value out in full; entries do not use anchors or aliases")
        if kind is yaml.SequenceStartEvent:
            items: list = []
            while type(event := get()) is not yaml.SequenceEndEvent:
                items.append(self._value(event, get, path + (len(items),), depth + 1))
            return items
        if kind is yaml.MappingStartEvent:
            mapping: dict = {}
            keys = self.located.keys
            while type(event := get()) is not yaml.MappingEndEvent:
                if type(event) is not _ScalarEvent:
                    self.fail(event.start_mark, "E012", "mapping keys must be plain text",
                              "use a simple word as the key")
                key = event.value
                kmark = event.start_mark
                if key in mapping:
                    first_line = keys[path + (key,)][0]
                    self.fail(kmark, "E004", f"duplicate key '{key}' (first defined on line {first_line})",
                              "remove one of the two, or merge them")
                keys[path + (key,)] = (kmark.line + 1, kmark.column + 1)
                mapping[key] = self._value(get(), get, path + (key,), depth + 1)
            return mapping
        raise AssertionError(f"unexpected YAML event {event!r}")  # pragma: no cover

    def _scalar(self, event) -> Any:
        value = event.value
        tag = event.tag
        if tag in (None, "!"):
            if tag == "!" or not event.implicit[0]:
                return value  # quoted or explicitly non-specific: a string
            resolvers = _Resolver.yaml_implicit_resolvers   # by first character; None: any
            if value and value[0] not in resolvers and None not in resolvers and not _Resolver.yaml_path_resolvers:
                return value  # what resolve() gives when no implicit type can start with this character
            tag = _Resolver.resolve(ScalarNode, value, (True, False))
        if tag == "tag:yaml.org,2002:str":
            return value
        if tag == "tag:yaml.org,2002:timestamp":
            return value  # dates stay text; the schema parses and checks them
        if tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float") and len(value) > MAX_NUMBER_CHARS:
            self.fail(event.start_mark, "E012", f"a number of {len(value):,} characters is too long",
                      "numbers here are small; quote the value if it is meant as text")
        if tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                   "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"):
            try:
                return _constructor.construct_object(ScalarNode(tag, value), deep=False)
            except (ValueError, ArithmeticError, LookupError, TypeError, yaml.YAMLError):  # e.g. "!!int" alone
                self.fail(event.start_mark, "E012", f"'{value[:40]}' is not a usable number",
                          "write a plain number, or quote the value if it is meant as text")
        self.fail(event.start_mark, "E012", f"YAML tag '{tag}' is not allowed",
                  "remove the tag; entries use plain strings, numbers, lists and mappings")
