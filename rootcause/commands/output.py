"""How every command prints diagnostics: `path:line:col: error[CODE]: ...`, JSON, or GitHub
workflow commands (annotations on a pull request).

File names and messages come from contributors: a file name may hold a newline, which in a CI
log would start a workflow command of its own (`::add-mask::`, `::stop-commands::`...), or a
terminal escape. Text lines are stripped of control characters (`Diagnostic.__str__`); workflow
commands escape '%', CR and LF as GitHub's runner reads them back, and drop the other controls.
"""

from __future__ import annotations

import json
import sys

from ..errors import Diagnostic
from ..text import printable


def escape_data(text: str) -> str:
    """A workflow command's message: '%', CR and LF escaped (GitHub's `escapeData`)."""
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    """A workflow command's property value (file, title): also ':' and ',' (`escapeProperty`)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_command(d: Diagnostic) -> str:
    properties = ",".join(f"{key}={escape_property(str(value))}" for key, value in
                          (("file", d.path), ("line", d.line), ("col", d.column), ("title", d.code)))
    message = f"{d.code}: {d.message} — {d.hint}" if d.hint else f"{d.code}: {d.message}"
    return f"::{escape_property(d.severity)} {properties}::{escape_data(message)}"


def print_diagnostics(diagnostics: list[Diagnostic], fmt: str, stream=None) -> None:
    stream = stream or sys.stdout
    if fmt == "json":
        json.dump([d.as_dict() for d in diagnostics], stream, indent=2)  # ASCII: every control escaped
        stream.write("\n")
        return
    for d in diagnostics:
        stream.write(f"{github_command(d) if fmt == 'github' else d}\n")
