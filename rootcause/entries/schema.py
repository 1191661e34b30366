"""The entry schema: one YAML file describes one failure. Every field is documented here.

`rootcause schema` turns these models into the JSON Schema that editors use (the
`# yaml-language-server: $schema=...` line at the top of each entry), with the vocabularies
of site.yml filled in as enums. Markdown is allowed in fields marked "Markdown".
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..config import KEBAB, SiteConfig, check_url
from ..matching.patterns import PatternError, compile_pattern, compile_regex
from ..text import NAME_TOKENS, name_key, tokens

SCHEMA_FILE = "entry.schema.json"

Text = Annotated[str, Field(min_length=1)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _step_from_text(value: Any) -> Any:
    """Allow a plain string where a step with an optional command is expected."""
    return {"step": value} if isinstance(value, str) else value


def _related_from_text(value: Any) -> Any:
    return {"id": value} if isinstance(value, str) else value


def _pattern_error(exc: PatternError) -> PydanticCustomError:
    return PydanticCustomError("pattern", exc.args[0], {"code": exc.code, "hint": exc.hint})


class Matcher(Strict):
    """One line-pattern: exactly one of `pattern` (placeholder language) or `regex`."""

    pattern: str | None = Field(None, description="The error text as printed, with placeholders {int}, {float}, "
                                "{hex}, {shape}, {ints}, {path}, {name}, {word}, {host}, {dtype}, {any} for the parts "
                                "that vary. A literal brace is written {{ or }}.")
    regex: str | None = Field(None, description="Escape hatch: a regular expression limited to features that RE2 and "
                              "JavaScript share (no lookaround, backreferences, named groups, inline flags, \\s).")

    @model_validator(mode="after")
    def _exactly_one(self) -> "Matcher":
        if (self.pattern is None) == (self.regex is None):
            raise PydanticCustomError("pattern", "give exactly one of 'pattern' or 'regex'",
                                      {"code": "E030", "hint": "prefer 'pattern'; use 'regex' only when placeholders cannot say it"})
        return self

    @field_validator("pattern")
    @classmethod
    def _compile_pattern(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not _recorded(info):
            try:
                compile_pattern(value)
            except PatternError as exc:
                raise _pattern_error(exc) from None
        return value

    @field_validator("regex")
    @classmethod
    def _compile_regex(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not _recorded(info):
            try:
                compile_regex(value)
            except PatternError as exc:
                raise _pattern_error(exc) from None
        return value

    def compiled(self):
        return compile_pattern(self.pattern) if self.pattern is not None else compile_regex(self.regex)  # type: ignore[arg-type]


def _recorded(info: ValidationInfo) -> bool:
    """Validating an entry from the build cache's record (`catalog.from_record`): its patterns
    compiled when the record was made, by the same code (the record's key holds the code's
    version), and the record carries what they compiled to: they are not compiled again here."""
    return isinstance(info.context, dict) and bool(info.context.get("recorded"))


def _example_from_text(value: Any) -> Any:
    """A bare string is read as a log without an origin, so `check` can point at it (E042)."""
    return {"log": value} if isinstance(value, str) else value


#: The three ways an example can be true, and what each must name.
ORIGINS = ("posted", "reproduced", "assembled")
_VERSION = re.compile(r"\d+\.\d+")
_SOURCE_FILE = re.compile(r"[\w./-]+\.(?:py|pyx|cc|cpp|cu|cuh|c|h|hpp|rs|go|sh|js|ts)\b")


class LogExample(Strict):
    """One log excerpt and where it comes from: exactly one of `posted`, `reproduced`, `assembled`.

    The site labels each example by its origin, so a reader knows whether a release really
    printed it; only `posted` and `reproduced` are shown as real logs.
    """

    log: Text = Field(description="The excerpt exactly as printed: traceback frames, rank prefixes, timestamps.")
    posted: str | None = Field(None, description="The address of the public thread or page where this output was "
                               "posted (a comment link is best).")
    reproduced: str | None = Field(None, description="Reproduced by the authors: the exact versions and the command, "
                                   "e.g. 'torch 2.13.0+cpu, Python 3.12: torchrun --nproc-per-node 2 repro.py'.")
    assembled: str | None = Field(None, description="Assembled from the source, not copied from a run: the upstream "
                                  "file and line or function each printed line comes from.")

    _posted = field_validator("posted")(lambda cls, v: v if v is None else check_url(v))

    @field_validator("reproduced")
    @classmethod
    def _names_versions(cls, value: str | None) -> str | None:
        if value is not None and not _VERSION.search(value):
            raise PydanticCustomError("origin", "'reproduced' must name the versions it was reproduced with",
                                      {"code": "E043", "hint": "e.g. 'torch 2.13.0+cpu, Python 3.12: torchrun "
                                       "--nproc-per-node 2 repro.py'"})
        return value

    @field_validator("assembled")
    @classmethod
    def _names_source_file(cls, value: str | None) -> str | None:
        if value is not None and not _SOURCE_FILE.search(value):
            raise PydanticCustomError("origin", "'assembled' must name the upstream source file the text comes from",
                                      {"code": "E043", "hint": "e.g. 'torch/distributed/elastic/multiprocessing/"
                                       "errors/__init__.py, ChildFailedError.format_msg'"})
        return value

    @model_validator(mode="after")
    def _one_origin(self) -> "LogExample":
        given = [name for name in ORIGINS if getattr(self, name) is not None]
        if len(given) != 1:
            found = "none" if not given else " and ".join(given)
            raise PydanticCustomError(
                "origin", "a log example must say where it comes from with exactly one of posted, reproduced or "
                "assembled (found {found})",
                {"found": found, "code": "E042",
                 "hint": "write the example as 'log: |' plus 'posted: <thread URL>', 'reproduced: <versions and "
                         "command>' or 'assembled: <upstream file and line>'"})
        return self

    @property
    def origin(self) -> str:
        return next(name for name in ORIGINS if getattr(self, name) is not None)

    @property
    def real(self) -> bool:
        """Printed by a release: posted in a thread or reproduced here."""
        return self.assembled is None


LogExampleItem = Annotated[LogExample, BeforeValidator(_example_from_text)]


class Frame(Strict):
    """The frame that raises a signature's exception: a traceback cut before its message line is
    still this failure when it stops in this frame."""

    file: str = Field(pattern=r"^[A-Za-z0-9_.\-]{1,100}(/[A-Za-z0-9_.\-]{1,100}){1,12}\.(?:py|cpp|cc|cu|h)$",
                      description="The raising file's path from its package folder, e.g. "
                      "`torch/amp/grad_scaler.py`: a frame matches when its file ends with it. A C++ source "
                      "file (`distributed/c10d/ProcessGroupNCCL.cpp`) names the frame of a C++ backtrace: "
                      "c10's `Exception raised from F at FILE:N`, or a `frame #N:` line whose function is "
                      "qualified by the file's name (`c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout`).")
    function: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,100}$",
                          description="The function that raises, as a traceback's `in ...` names it (for C++, "
                          "its name without class or namespace).")
    releases: Text = Field(description="The releases in which this file and function raise the exception, "
                           "from upstream source (e.g. 'torch 2.3 and later; torch/cuda/amp/ before').")


class Signature(Strict):
    """A searchable error text with the real log lines it must match.

    Single-line: give `pattern` or `regex`. Multi-line: give `lines`, patterns that must appear
    in this order within `within` lines of one process's output. `unless` patterns veto the match
    when they appear in that window.
    """

    pattern: str | None = Field(None, description="Single-line signature (see Matcher.pattern).")
    regex: str | None = Field(None, description="Single-line signature as a portable regex (see Matcher.regex).")
    lines: list[Matcher] | None = Field(None, min_length=2, description="Multi-line signature: these patterns, "
                                        "in order, within `within` lines of the same rank.")
    within: int = Field(40, ge=2, le=500, description="Window of a multi-line signature, in lines.")
    core: str | None = Field(None, description="Single-line signature only: the shortest span of its literal text "
                             "that identifies the failure alone. A line that holds it matches, less surely than "
                             "the whole pattern, when the message is cut after it, printed behind another "
                             "exception class or none, or with its variable parts elided. Derived from a `pattern` "
                             "when not given (the first clause of its message that names something or is six "
                             "words long; a `regex` has none unless given); give it where the derived one is "
                             "wrong, or '' for none. "
                             "Checked: no other entry's example may hold it (E035).")
    alert_line: int | None = Field(None, ge=1, description="Multi-line signature only: the one of its `lines` "
                                   "(1 for the first) that identifies the failure alone, which `rootcause export` "
                                   "turns into an alert rule. Without it the signature is not exported: a line "
                                   "filter sees one line at a time, and a multi-line signature means its lines "
                                   "together. Checked: it must match no healthy log and no other entry's example "
                                   "(E055).")
    frames: list[Frame] = Field(default_factory=list, max_length=8, description="Single-line signature only: the "
                                "frames that raise its exception. A Python traceback whose exception line is not in "
                                "the log (an excerpt cut short), or whose message is cut before the pattern can "
                                "match, is this failure when its last frame is one of these; the exception class, "
                                "when the line shows one, must be the pattern's. Checked: an example shows each frame "
                                "right above the signature's line (E057), and no other entry names it (E057).")
    unless: list[Matcher] = Field(default_factory=list, description="Patterns that veto a match when they appear "
                                  "within the window around it.")
    examples: list[LogExampleItem] = Field(min_length=1, description="Log excerpts (as printed, with traceback "
                                           "frames and rank prefixes), each with its origin, that this signature "
                                           "must match. Checked by every build.")
    counter_examples: list[Text] = Field(default_factory=list, description="Log excerpts that look similar but must "
                                         "not match, e.g. the healthy variant of the message.")
    source: Text = Field(description="Where the text comes from: the upstream file and function that prints it, or "
                         "the issue thread where users posted it.")

    @model_validator(mode="before")
    @classmethod
    def _one_form(cls, data: Any) -> Any:
        if isinstance(data, dict):
            forms = [key for key in ("pattern", "regex", "lines") if data.get(key) is not None]
            if len(forms) != 1:
                raise PydanticCustomError("pattern", "give exactly one of 'pattern', 'regex' or 'lines'",
                                          {"code": "E030", "hint": "one signature is one error text; add another "
                                           "signature for another text"})
        return data

    @model_validator(mode="after")
    def _core_is_literal_text(self) -> "Signature":
        if self.core:
            if self.lines is not None:
                raise PydanticCustomError("core", "'core' is for a single-line signature",
                                          {"code": "E030", "hint": "remove it, or make the signature single-line"})
            from ..matching.patterns import core_problem, literal_pieces

            source = self.pattern if self.pattern is not None else self.regex
            assert source is not None   # `_one_form`: a signature without `lines` has one of the two
            problem = core_problem(self.core, literal_pieces(source, self.pattern is None))
            if problem:
                raise PydanticCustomError("core", "{problem}", {"problem": problem, "code": "E030",
                                          "hint": "copy a span of the pattern's own text between its placeholders"})
        return self

    def core_text(self) -> str:
        """The declared core, else the one derived from a placeholder pattern; "" for a multi-line
        signature, or a regex (whose alternatives the derivation cannot read) without one."""
        if self.lines is not None:
            return ""
        if self.core is not None:
            return self.core
        if self.pattern is None:
            return ""
        from ..matching.patterns import derive_core, literal_pieces

        return derive_core(literal_pieces(self.pattern, False), self.counter_examples)

    @model_validator(mode="after")
    def _frames_need_a_single_line(self) -> "Signature":
        if self.frames and self.lines is not None:
            raise PydanticCustomError("frames", "'frames' is for a single-line signature",
                                      {"code": "E030", "hint": "give the frames to the signature of the exception "
                                       "line they raise"})
        return self

    def raises(self) -> str:
        """The exception class the pattern begins with ("" for none): what a frame match requires
        of an exception line the log does show."""
        text = self.pattern if self.pattern is not None else ""
        found = re.match(r"(?:[A-Za-z_][A-Za-z0-9_]*\.)*([A-Za-z_][A-Za-z0-9_]*(?:Error|Exception)): ", text)
        return found.group(1) if found else ""

    @model_validator(mode="after")
    def _alert_line_is_a_line(self) -> "Signature":
        if self.alert_line is not None and (self.lines is None or self.alert_line > len(self.lines)):
            raise PydanticCustomError(
                "alert_line", "'alert_line' names one of the signature's 'lines' (1 to {count})",
                {"count": len(self.lines or []), "code": "E012",
                 "hint": "give it only to a multi-line signature, as the number of the line that is distinctive "
                         "alone"})
        return self

    @field_validator("pattern")
    @classmethod
    def _compile_pattern(cls, value: str | None, info: ValidationInfo) -> str | None:
        return Matcher._compile_pattern(value, info)

    @field_validator("regex")
    @classmethod
    def _compile_regex(cls, value: str | None, info: ValidationInfo) -> str | None:
        return Matcher._compile_regex(value, info)

    @property
    def example_logs(self) -> list[str]:
        return [example.log for example in self.examples]

    def compiled_steps(self) -> list:
        if self.lines is not None:
            return [step.compiled() for step in self.lines]
        return [compile_pattern(self.pattern) if self.pattern is not None else compile_regex(self.regex)]

    @property
    def display(self) -> str:
        """The text shown to readers (the searchable error signature)."""
        if self.lines is not None:
            return "\n".join(step.pattern or step.regex or "" for step in self.lines)
        return self.pattern or self.regex or ""


class Symptom(Strict):
    observed: Text = Field(description="What you see (Markdown).")
    why: Text = Field(description="Why it happens (Markdown).")


class Misdiagnosis(Strict):
    assumption: Text = Field(description="What people wrongly conclude and chase (Markdown).")
    reality: Text = Field(description="Why that is wrong here, and what tells the two apart (Markdown).")


class Step(Strict):
    step: Text = Field(description="What to do or check (Markdown).")
    command: str | None = Field(None, description="A command or config snippet to copy.")
    language: Literal["bash", "python", "json", "yaml", "text"] = Field("bash", description="Language of `command`.")


StepItem = Annotated[Step, BeforeValidator(_step_from_text)]


class CodeExample(Strict):
    stack: str = Field(description="Which stack the code is for: a system id from site.yml (pytorch, deepspeed, ...).")
    title: Text = Field(description="What the code shows.")
    language: Literal["python", "json", "yaml", "bash", "text"] = "python"
    code: Text = Field(description="The code, runnable or nearly so.")
    explanation: str | None = Field(None, description="Why it works (Markdown).")

    _stack = field_validator("stack")(lambda cls, v, info: _in_vocabulary(v, info, "systems"))


class Question(Strict):
    question: Text
    answer: Text = Field(description="Markdown.")


class Related(Strict):
    id: str = Field(pattern=KEBAB, description="The other entry's id.")
    relation: str = Field("see-also", description="caused-by (this is a consequence of that), causes, "
                          "often-confused-with, or see-also.")

    _relation = field_validator("relation")(lambda cls, v, info: _in_vocabulary(v, info, "relations"))


RelatedItem = Annotated[Related, BeforeValidator(_related_from_text)]


class Reference(Strict):
    kind: Literal["docs", "issue", "pull-request", "source", "paper", "discussion", "release-notes"]
    title: Text
    url: str

    _url = field_validator("url")(lambda cls, v: check_url(v))


class Affected(Strict):
    """OSV-style version range of one system; only what a cited source says."""

    system: str = Field(description="A system id from site.yml.")
    introduced: str | None = Field(None, description="First affected version.")
    fixed: str | None = Field(None, description="First version with the fix.")
    last_affected: str | None = Field(None, description="Last known affected version when no fix exists.")
    note: str | None = Field(None, description="Context, e.g. which pull request changed it (Markdown).")
    ref: str | None = Field(None, description="The URL of one of the entry's `references` that states this range "
                            "(a pull request, release note or the source at a tag).")

    _ref = field_validator("ref")(lambda cls, v: v if v is None else check_url(v))
    _system = field_validator("system")(lambda cls, v, info: _in_vocabulary(v, info, "systems"))


class Persistent(Strict):
    """When a warning stops being benign: its signatures matched on at least `count` lines within
    `within` consecutive lines of the log (e.g. a loss-scale warning on every step rather than a
    burst during warm-up)."""

    count: int = Field(ge=2, le=5000, description="How many matched lines make the warning a failure.")
    within: int = Field(ge=2, le=1_000_000, description="Window, in log lines, in which `count` matches must fall.")


ALIAS_CHARS = 60


def _check_alias(value: str) -> str:
    """One name readers search by: a short line with at least one searchable word."""
    hint = ("an alias is a short name readers type for this failure, e.g. 'OOM', 'ZeRO-3', 'EADDRINUSE', "
            "'NCCL timeout'")
    if "\n" in value or "\r" in value or not value.strip():
        raise PydanticCustomError("alias", "an alias must be one non-empty line", {"code": "E054", "hint": hint})
    if len(value) > ALIAS_CHARS:
        raise PydanticCustomError("alias", "an alias of {length} characters is too long (at most {most})",
                                  {"length": len(value), "most": ALIAS_CHARS, "code": "E054", "hint": hint})
    found = set(tokens(value.lower()))
    if not found:
        raise PydanticCustomError("alias", "alias '{alias}' has no searchable word (only stop words, punctuation or "
                                  "long numbers)", {"alias": value, "code": "E054", "hint": hint})
    if len(found) > NAME_TOKENS:
        raise PydanticCustomError("alias", "alias '{alias}' has {count} search words; a name has at most {most}",
                                  {"alias": value, "count": len(found), "most": NAME_TOKENS, "code": "E054",
                                   "hint": hint})
    return value


Alias = Annotated[str, AfterValidator(_check_alias)]


class Entry(Strict):
    """One failure."""

    id: str = Field(pattern=KEBAB, description="Stable kebab-case id; equals the file name and is the page URL.")
    title: Text = Field(max_length=120, description="What failed, in words a reader would search for.")
    summary: Text = Field(max_length=600, description="The quick answer: cause and fix in one or two sentences (Markdown).")
    category: str = Field(description="A category id from site.yml.")
    systems: list[str] = Field(min_length=1, description="System ids from site.yml, most specific first.")
    phase: str = Field(description="A phase id from site.yml: where the failure surfaces.")
    severity: str = Field(description="A severity id from site.yml.")
    tags: list[str] = Field(default_factory=list, description="Tag ids from site.yml.")
    aliases: list[Alias] = Field(default_factory=list, max_length=12, description="Other names readers search for "
                                 "this failure by, when the title does not contain them: abbreviations and true "
                                 "synonyms such as 'OOM', 'ZeRO-3', 'EADDRINUSE', 'NCCL timeout'. Searched like the "
                                 "title and listed under it on the page; at most 60 characters each.")
    role: Literal["cause", "consequence", "warning", "symptom"] = Field(
        description="What a match of this entry's signatures means in a log. `cause`: a failure in its own right. "
        "`consequence`: printed by ranks or launchers because something failed elsewhere (peer errors, watchdog "
        "timeouts, ChildFailedError); diagnosis looks for the cause before it. `warning`: benign unless it persists "
        "(see `persistent`); reported as a note, never as the failure. `symptom`: the failure prints no error "
        "(slow throughput, a loss that does not fall, results that differ); it has no signatures, is recognised by "
        "its `symptoms` and the measurements in `confirm`, and is found by search, never by diagnosis.")
    persistent: Persistent | None = Field(None, description="Only for `role: warning`: how often the warning must "
                                          "appear before it counts as a failure.")
    signatures: list[Signature] = Field(default_factory=list, validate_default=True, description="Error texts that "
                                        "identify this failure: at least one, except for `role: symptom`, which "
                                        "has none.")
    symptoms: list[Symptom] = Field(default_factory=list, description="What you observe | why it happens.")
    root_cause: Text = Field(description="The mechanism, precisely (Markdown).")
    misdiagnosis: list[Misdiagnosis] = Field(default_factory=list, description="Wrong explanations people chase.")
    confirm: list[StepItem] = Field(default_factory=list, description="Checklist that proves this is the cause.")
    fix: list[StepItem] = Field(min_length=1, description="Steps that fix it, with exact commands.")
    prevention: list[Text] = Field(default_factory=list, description="How not to hit it again (Markdown).")
    examples: list[CodeExample] = Field(default_factory=list, description="Code per stack.")
    faq: list[Question] = Field(default_factory=list, description="Questions specific to this failure.")
    related: list[RelatedItem] = Field(default_factory=list, description="Links to other entries.")
    references: list[Reference] = Field(default_factory=list, description="Where the facts come from.")
    affected: list[Affected] = Field(default_factory=list, description="Affected versions, per system.")
    added: dt.date | None = Field(None, description="Date the entry was first published (defaults to `reviewed`).")
    reviewed: dt.date = Field(description="Date the facts were last checked, YYYY-MM-DD.")
    authors: list[Text] = Field(default_factory=list, description="Who wrote or reviewed the entry.")

    _vocabularies = field_validator("category", "systems", "phase", "severity", "tags")(
        lambda cls, value, info: _in_vocabulary(value, info, {
            "category": "categories", "systems": "systems", "phase": "phases",
            "severity": "severities", "tags": "tags"}[info.field_name]))

    @field_validator("aliases")
    @classmethod
    def _distinct_aliases(cls, value: list[str]) -> list[str]:
        seen: dict[str | None, str] = {}
        for alias in value:
            key = name_key(alias)
            if key in seen:
                raise PydanticCustomError("alias", "aliases '{first}' and '{second}' are searched as the same words",
                                          {"first": seen[key], "second": alias, "code": "E054",
                                           "hint": "keep one of them: case, hyphens and plurals do not matter to "
                                                   "search"})
            seen[key] = alias
        return value

    @field_validator("persistent")
    @classmethod
    def _persistent_only_for_warnings(cls, value, info: ValidationInfo):
        role = info.data.get("role")
        if value is not None and role is not None and role != "warning":
            raise PydanticCustomError("role", "'persistent' is only meaningful for role: warning, not {role}",
                                      {"role": role, "code": "E038", "hint": "remove 'persistent', or set role: warning"})
        return value

    @field_validator("signatures")
    @classmethod
    def _signatures_by_role(cls, value: list, info: ValidationInfo):
        role = info.data.get("role")
        if role is None:
            return value   # the role itself is missing or invalid, and reported as such
        if role == "symptom" and value:
            raise PydanticCustomError(
                "role", "an entry with role: symptom has no signatures; this one lists {count}",
                {"count": len(value), "code": "E053", "at": ("role",),
                 "hint": "a failure that prints a recognisable text is a cause, consequence or warning: set that "
                         "role, or remove the signatures"})
        if role != "symptom" and not value:
            raise PydanticCustomError(
                "role", "an entry with role: {role} needs at least one signature",
                {"role": role, "code": "E053", "at": ("role",),
                 "hint": "add the error text the failure prints under 'signatures'; if it prints none (slow "
                         "throughput, a loss that does not fall), set role: symptom and describe what to measure "
                         "under 'symptoms' and 'confirm'"})
        return value

    @model_validator(mode="after")
    def _symptom_entries_say_what_to_measure(self) -> Entry:
        if self.role == "symptom":
            for name in ("symptoms", "confirm"):
                if not getattr(self, name):
                    raise PydanticCustomError(
                        "role", "an entry with role: symptom needs '{field}': without an error text, it is "
                        "recognised only by what is observed and measured",
                        {"field": name, "code": "E053", "at": (name,), "fallback": ("role",),
                         "hint": "list what the reader observes (symptoms) and the commands that measure it "
                                 "(confirm)"})
        return self

    @model_validator(mode="after")
    def _share_fields_sets(self) -> Entry:
        """pydantic gives each of an entry's 20-odd models a set of the fields it was given,
        which only `exclude_unset` and `model_fields_set` read (this package reads neither):
        about 8 of the 24 KB an entry holds in memory. The models are frozen, so those sets
        never change: each becomes one `SharedFields` for every model given the same fields."""
        _share_sets(self)
        return self

    @property
    def is_symptom(self) -> bool:
        """A failure that prints no error: not matched in logs, recognised by its symptoms."""
        return self.role == "symptom"

    @property
    def published(self) -> dt.date:
        return self.added or self.reviewed


class SharedFields(set):
    """A model's fields set shared with the models given the same fields: still a `set` for
    pydantic (`model_dump(exclude_unset=True)` reads it), refusing every change."""

    __slots__ = ()

    def _refuse(self, *args, **kwargs):
        raise TypeError("a shared fields set cannot change (the entry models are frozen)")

    add = discard = remove = pop = clear = update = _refuse
    difference_update = intersection_update = symmetric_difference_update = _refuse
    __ior__ = __iand__ = __isub__ = __ixor__ = _refuse

    def __reduce__(self):
        """Copied (`model_copy`, which may update it, `copy`, `deepcopy`) or pickled: a set of
        its own."""
        return set, (list(self),)


_SHARED_SETS: dict[frozenset, SharedFields] = {}


def _share_sets(value: Any) -> None:
    if isinstance(value, Strict):
        fields = value.__pydantic_fields_set__
        if type(fields) is not SharedFields:
            key = frozenset(fields)
            shared = _SHARED_SETS.get(key)
            if shared is None:
                shared = _SHARED_SETS[key] = SharedFields(key)
            object.__setattr__(value, "__pydantic_fields_set__", shared)
        for item in value.__dict__.values():
            if isinstance(item, (Strict, list)):
                _share_sets(item)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (Strict, list)):
                _share_sets(item)


def _in_vocabulary(value: Any, info: ValidationInfo, vocab_name: str) -> Any:
    """Check ids against site.yml (passed as validation context); skipped when no config is given."""
    config: SiteConfig | None = (info.context or {}).get("config")
    if config is None:
        return value
    known = getattr(config.vocabularies, vocab_name)
    for item in value if isinstance(value, list) else [value]:
        if item not in known:
            raise _vocabulary_error(item, vocab_name, known)
    return value


def _vocabulary_error(item: str, vocab_name: str, known: dict) -> PydanticCustomError:
    close = difflib.get_close_matches(item, list(known), n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'?" if close else f"use one of: {', '.join(known)} (or add it to site.yml)"
    return PydanticCustomError("vocabulary", "'{item}' is not in site.yml's {vocab}",
                               {"item": item, "vocab": vocab_name, "code": "E013", "hint": hint})


def json_schema(config: SiteConfig | None = None) -> dict:
    """The JSON Schema of an entry, with site.yml's vocabularies as enums when given."""
    schema = Entry.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "rootcause entry"
    props = schema["properties"]
    for name in ("confirm", "fix", "related"):  # a plain string is accepted as shorthand
        item = props[name]["items"]
        props[name]["items"] = {"anyOf": [{"type": "string"}, item]}
    # E053 for editors: a symptom entry has no signatures and says what to observe and measure;
    # every other role needs at least one signature
    schema["allOf"] = [{
        "if": {"properties": {"role": {"const": "symptom"}}, "required": ["role"]},
        "then": {"properties": {"signatures": {"maxItems": 0}, "symptoms": {"minItems": 1},
                                "confirm": {"minItems": 1}}, "required": ["symptoms", "confirm"]},
        "else": {"properties": {"signatures": {"minItems": 1}}, "required": ["signatures"]},
    }]
    if config is not None:
        vocab = config.vocabularies
        props["category"]["enum"] = list(vocab.categories)
        props["phase"]["enum"] = list(vocab.phases)
        props["severity"]["enum"] = list(vocab.severities)
        props["systems"]["items"] = {"enum": list(vocab.systems)}
        props["tags"]["items"] = {"enum": list(vocab.tags)}
        defs = schema.get("$defs", {})
        defs["Related"]["properties"]["relation"]["enum"] = list(vocab.relations)
        defs["CodeExample"]["properties"]["stack"]["enum"] = list(vocab.systems)
        defs["Affected"]["properties"]["system"]["enum"] = list(vocab.systems)
    return schema


def json_schema_text(config: SiteConfig | None = None) -> str:
    return json.dumps(json_schema(config), indent=2, sort_keys=True) + "\n"


def prose_fields(entry: Entry):
    """(path, text) of every field rendered as Markdown on the site, for checks on the prose."""
    yield ("title",), entry.title
    yield ("summary",), entry.summary
    yield ("root_cause",), entry.root_cause
    for i, sig in enumerate(entry.signatures):
        yield ("signatures", i, "source"), sig.source
    for i, symptom in enumerate(entry.symptoms):
        yield ("symptoms", i, "observed"), symptom.observed
        yield ("symptoms", i, "why"), symptom.why
    for i, item in enumerate(entry.misdiagnosis):
        yield ("misdiagnosis", i, "assumption"), item.assumption
        yield ("misdiagnosis", i, "reality"), item.reality
    for name in ("confirm", "fix"):
        for i, step in enumerate(getattr(entry, name)):
            yield (name, i, "step"), step.step
    for i, text in enumerate(entry.prevention):
        yield ("prevention", i), text
    for i, example in enumerate(entry.examples):
        yield ("examples", i, "title"), example.title
        if example.explanation:
            yield ("examples", i, "explanation"), example.explanation
    for i, question in enumerate(entry.faq):
        yield ("faq", i, "question"), question.question
        yield ("faq", i, "answer"), question.answer
    for i, affected in enumerate(entry.affected):
        if affected.note:
            yield ("affected", i, "note"), affected.note
