"""Signatures compiled for matching, and the one definition of what "a signature matches" means.

Semantics (the JavaScript matcher in theme/assets/matcher.js implements the same):
- A log is a sequence of lines; each is split by `logline.parse_line` into its stream (host and
  rank) and its message text. Patterns search the message text.
- A single-line signature matches a line whose text its pattern finds.
- A multi-line signature matches when its patterns are found in order, on increasing lines of
  the same stream, the last no more than `within` lines after the first (the earliest start and
  the earliest completion win). A line without launcher prefix (stream "") may belong to any
  process, so it fits any stream; the match takes the first named stream among its lines.
- `unless` patterns veto a match if one is found in the match's stream (or on an unprefixed line)
  between `within` lines before the first matched line and `within` lines after the last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from .logline import LogLine, parse_line
from .patterns import Compiled

MULTILINE_BONUS = 20


@dataclass(frozen=True)
class CompiledSignature:
    entry_id: str
    index: int                  # position in the entry's `signatures` list
    steps: tuple[Compiled, ...]
    unless: tuple[Compiled, ...] = ()
    within: int = 40
    #: a single-line signature's core (`patterns.derive_core`, or declared): a line holding it is
    #: this failure printed otherwise (cut after it, another exception class, elided parts), a
    #: match that is less sure than the whole pattern's; "" for none
    core: str = ""
    #: the frames that raise its exception, as (file suffix, function), and the class the pattern
    #: names ("" for none): a traceback cut before its message that stops in one is this failure
    frames: tuple[tuple[str, str], ...] = ()
    raises: str = ""
    #: an example log → its `marked_lines`, filled where the entry is checked (the regexes are
    #: compiled then) so that its page marks them without compiling them again
    marks: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def multiline(self) -> bool:
        return len(self.steps) > 1

    @property
    def specificity(self) -> int:
        """Literal characters matched: longer literal text is stronger evidence."""
        return sum(step.literal_chars for step in self.steps) + (MULTILINE_BONUS if self.multiline else 0)

    @cached_property
    def step_regexes(self):
        return [step.compile_re2() for step in self.steps]

    @cached_property
    def unless_regexes(self):
        return [step.compile_re2() for step in self.unless]

    def release(self) -> "CompiledSignature":
        """Forget the compiled expressions (recompiled on next use): a large catalog keeps
        thousands of signatures but needs their regexes only while checking or scanning."""
        self.__dict__.pop("step_regexes", None)
        self.__dict__.pop("unless_regexes", None)
        return self

    def as_json(self) -> dict:
        data = {
            "entry": self.entry_id,
            "index": self.index,
            "steps": [[step.regex, step.anchor] for step in self.steps],
            "specificity": self.specificity,
        }
        if self.unless:
            data["unless"] = [[step.regex, step.anchor] for step in self.unless]
        if self.multiline or self.unless:
            data["within"] = self.within
        if self.core:
            data["core"] = self.core
        if self.frames:
            data["frames"] = [list(frame) for frame in self.frames]
            data["raises"] = self.raises
        return data


def marked_lines(signature: CompiledSignature, log: str, regexes=None) -> tuple[tuple[int, int, int], ...]:
    """Where the signature's steps are found in a log as printed (split on newlines, nothing
    removed): (line, start, end) for each line a step whose anchor it holds finds, with the
    first non-empty match of those steps, or start = end = -1 when each found only an empty one.
    What an entry page marks in an example log (`highlight.mark_matches`)."""
    regexes = regexes if regexes is not None else [step.compile_re2() for step in signature.steps]
    steps = [(step.anchor, regex) for step, regex in zip(signature.steps, regexes)]
    marked = []
    for number, line in enumerate(log.rstrip("\n").split("\n")):
        matches = [m for anchor, regex in steps if anchor in line and (m := regex.search(line))]
        if matches:
            spans = sorted({m.span() for m in matches if m.end() > m.start()})
            marked.append((number, *spans[0]) if spans else (number, -1, -1))
    return tuple(marked)


def anchors_of(sig: CompiledSignature) -> list[str]:
    """The literals that bring a line to a signature: its steps', its `unless` patterns' and its core."""
    return [step.anchor for step in sig.steps + sig.unless] + ([sig.core] if sig.core else [])


def compile_signature(entry_id: str, index: int, signature, cores: bool = True) -> CompiledSignature:
    """`cores`: derive a core where the signature declares none (not for a benign warning, whose
    lines are counted)."""
    return CompiledSignature(
        entry_id=entry_id,
        index=index,
        steps=tuple(signature.compiled_steps()),
        unless=tuple(step.compiled() for step in signature.unless),
        within=signature.within,
        core=signature.core_text() if cores or signature.core is not None else "",
        frames=tuple((frame.file, frame.function) for frame in signature.frames),
        raises=signature.raises() if signature.frames else "",
    )


@dataclass
class Match:
    signature: CompiledSignature
    lines: list[int] = field(default_factory=list)   # line numbers (0-based) of the matched lines
    stream: str = ""
    by_core: bool = False   # the line holds the signature's core, not its whole pattern
    by_frame: bool = False  # a traceback cut before its message stops in the signature's raising frame


Numbered = list[tuple[int, LogLine]]


def find_matches(signature: CompiledSignature, numbered: Numbered, first_only: bool = True,
                 wrap: int = 1) -> list[Match]:
    """Matches of one signature among numbered lines, per the semantics above.

    `numbered` may omit lines that no pattern can match (the scanner keeps only lines holding an
    anchor): windows are measured in line numbers, so the result is the same. `wrap`: a log whose
    messages a wrap cut into up to this many physical lines (the scanner joined them) is read
    with windows this many times as wide: the wrap cut the lines between the steps as well.
    """
    within = signature.within * wrap
    regexes = signature.step_regexes
    # a step matches only a line holding its anchor (literal text every match contains, see
    # `patterns`): a substring test spares RE2's call on the other lines
    anchors = [step.anchor for step in signature.steps]
    found: list[Match] = []
    if not signature.multiline:
        anchor, core = anchors[0], signature.core
        for position, (number, line) in enumerate(numbered):
            whole = anchor in line.text and regexes[0].search(line.text)
            if (whole or (core and core in line.text)) and \
                    not _vetoed(signature, numbered, position, position, line.stream, within):
                found.append(Match(signature, [number], line.stream, by_core=not whole))
                if first_only:
                    break
        return found
    busy_until: dict[str, int] = {}
    for position, (start, line) in enumerate(numbered):
        if start <= busy_until.get(line.stream, -1) or anchors[0] not in line.text or not regexes[0].search(line.text):
            continue
        matched = [start]
        stream = line.stream
        last_position = position
        step = 1
        for later in range(position + 1, len(numbered)):
            number, other = numbered[later]
            if number > start + within:
                break
            if (not other.stream or not stream or other.stream == stream) and anchors[step] in other.text \
                    and regexes[step].search(other.text):
                matched.append(number)
                stream = stream or other.stream
                last_position = later
                step += 1
                if step == len(regexes):
                    break
        if step == len(regexes) and not _vetoed(signature, numbered, position, last_position, stream, within):
            found.append(Match(signature, matched, stream))
            busy_until[line.stream] = matched[-1]
            if first_only:
                break
    return found


def _vetoed(signature: CompiledSignature, numbered: Numbered, first: int, last: int, stream: str,
            within: int | None = None) -> bool:
    """Is an `unless` pattern found in the match's stream within the window around positions
    first..last (`within` lines, the signature's own by default)?"""
    if not signature.unless:
        return False
    within = signature.within if within is None else within
    low = numbered[first][0] - within
    high = numbered[last][0] + within
    position = first
    while position > 0 and numbered[position - 1][0] >= low:
        position -= 1
    for number, line in numbered[position:]:
        if number > high:
            break
        if (not line.stream or not stream or line.stream == stream) and \
                any(step.anchor in line.text and regex.search(line.text)
                    for step, regex in zip(signature.unless, signature.unless_regexes)):
            return True
    return False


def parse_text(text: str) -> Numbered:
    """Number and parse every line of a short text (an example, a pasted log)."""
    return [(number, parse_line(raw)) for number, raw in enumerate(text.splitlines())]


class AnchorIndex:
    """Which signatures could match a line: an Aho-Corasick automaton over every signature step's
    anchor (pyahocorasick). Anchors are literal text, so a set of RE2 literals gives the same
    answers, but at 10,000 entries (22,000 anchors) RE2's set held about 310 MB and matched the
    examples in 1.4 s; the automaton holds about 70 MB and takes 0.9 s."""

    def __init__(self, signatures: list[CompiledSignature]):
        import ahocorasick   # here: only `check` and `build` compare every signature with every example

        self.anchors: list[str] = []
        self.by_anchor: list[list[CompiledSignature]] = []
        position: dict[str, int] = {}   # anchor → its index
        automaton = ahocorasick.Automaton()
        for sig in signatures:
            for anchor in anchors_of(sig):
                if anchor not in position:
                    position[anchor] = len(self.anchors)
                    automaton.add_word(anchor, len(self.anchors))
                    self.anchors.append(anchor)
                    self.by_anchor.append([])
                bucket = self.by_anchor[position[anchor]]
                if not bucket or bucket[-1] is not sig:
                    bucket.append(sig)
        if self.anchors:
            automaton.make_automaton()
        self._automaton = automaton

    def candidates(self, text: str) -> list[CompiledSignature]:
        found: dict[int, CompiledSignature] = {}
        if not self.anchors:
            return []
        for _end, index in self._automaton.iter(text):
            for sig in self.by_anchor[index]:
                found[id(sig)] = sig
        return list(found.values())
