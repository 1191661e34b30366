"""One error type for every stage, so the CLI can print all problems of a run the same way.

A problem is a `Diagnostic`: where (file, line, column), a stable code, what is wrong and how to
fix it. Stages collect diagnostics instead of raising on the first one, because a contributor
wants every problem of an entry in one run. `CODES` names every code in one line; the long
explanations (`rootcause check --explain E012`, and the codes section of
content/writing-entries.md) are in `explanations.py`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .text import printable

#: Every diagnostic code, with a one-line title. Codes are stable: never renumber, only add.
CODES: dict[str, str] = {
    "E001": "file cannot be read as UTF-8 text",
    "E002": "file is too large",
    "E003": "YAML syntax error",
    "E004": "duplicate key in a mapping",
    "E005": "YAML anchors and aliases are not allowed",
    "E006": "data nested too deeply",
    "E007": "document is not a mapping",
    "E008": "not a regular file: a symbolic link, folder, named pipe, device or socket",
    "E010": "unknown field",
    "E011": "required field is missing",
    "E012": "value has the wrong type or form",
    "E013": "value is not in the vocabulary declared in site.yml",
    "E014": "id does not match the file name",
    "E015": "malformed URL",
    "E016": "malformed date",
    "E017": "a path in site.yml leaves the project folder or is not a folder",
    "E018": "an image in Markdown: no request may leave the site",
    "E020": "two entries share an id",
    "E021": "related entry does not exist",
    "E022": "entry is related to itself",
    "E030": "signature pattern is malformed",
    "E031": "regular expression uses a feature that is not portable between RE2 and JavaScript",
    "E032": "regular expression does not compile",
    "E033": "signature does not match its own example",
    "E034": "signature has too little literal text",
    "E035": "an example matches another entry's signature",
    "E036": "signature matches a healthy training log",
    "E037": "counter-example matches its own signature",
    "E038": "'persistent' given for an entry whose role is not warning",
    "E039": "pattern that JavaScript reads differently from RE2 (a class beyond U+FFFF, a lone surrogate)",
    "E040": "content page is malformed",
    "E041": "template error",
    "E042": "a log example does not say where it comes from (posted, reproduced or assembled)",
    "E043": "a log example's origin does not name what it must (a URL, the versions, the source file)",
    "E044": "an affected version range names no reference, or one the entry does not list",
    "E045": "a version number in the prose is not tied to any reference, affected range or example origin",
    "E046": "a row of the frequency study is malformed",
    "E047": "a GitHub reference address is not canonical, or not of the kind the reference claims",
    "E048": "a reference is listed twice",
    "E049": "an issue or pull request cited in the prose is not among the references",
    "E050": "output folder is unsafe",
    "W001": "two entries read alike: possibly one failure written twice",
    "W002": "retired: an untied version in the prose is now the error E045",
    "W003": "retired: an uncited issue or pull request in the prose is now the error E049",
    "E051": "the output folder, the schema or a new entry cannot be written",
    "E052": "another build is writing the output folder",
    "E053": "signatures do not fit the role: none for a cause, consequence or warning; some for a symptom (or a symptom without symptoms or confirm steps)",
    "E054": "an alias is empty, too long, more than one line, without a searchable word, or a repeat",
    "E055": "the alert rule `export` writes for an entry matches a healthy log or another entry's example",
    "E056": "an example pasted otherwise (prefixed, quoted, cut after its core, re-classed, numbers elided) names another entry or none",
    "E057": "a declared raising frame is shown by no example of its signature, or is declared by two entries",
    "E058": "a field still holds the TODO placeholder that `rootcause new` wrote",
    "E059": "a content page is named like one of the site's own pages or files (diagnose, entries, search, ...)",
}


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem at one place. Sorts by file, then position, so output is stable."""

    path: str
    line: int
    column: int
    code: str
    message: str
    hint: str = ""
    severity: str = field(default="error", compare=False)

    def __str__(self) -> str:
        """One line, safe for a terminal: a file name or a key from an entry may hold control
        characters or a newline, which must neither reach the terminal nor forge a second line."""
        text = f"{self.path}:{self.line}:{self.column}: {self.severity}[{self.code}]: {self.message}"
        return printable(f"{text} — {self.hint}" if self.hint else text, one_line=True)

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "hint": self.hint,
        }


class RootcauseError(Exception):
    """Raised when a stage cannot go on; carries every diagnostic found so far."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = sorted(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))

    def __reduce__(self):  # raised in a forked render worker, it must arrive whole
        return (type(self), (self.diagnostics,))


def display_path(path: Path, root: Path | None = None) -> str:
    """Paths in messages are relative to the project root when possible, with forward slashes."""
    if root is not None:
        # the file's own name is never resolved: a symbolic link is shown as itself, not as the
        # file it points at (which may be anywhere, and is none of the reader's business)
        # resolved only when the plain absolute paths do not nest (resolving costs a system
        # call per folder of the path, for each of thousands of entries)
        for pair in (lambda: (Path(os.path.abspath(path)), Path(os.path.abspath(root))),
                     lambda: (path.parent.resolve() / path.name, root.resolve())):
            shown, base = pair()
            try:
                return shown.relative_to(base).as_posix()
            except ValueError:
                pass
    return path.as_posix()
