"""How every command prints diagnostics: `path:line:col: error[CODE]: ...`, JSON, or GitHub
workflow commands (annotations on a pull request)."""

from __future__ import annotations

import json
import sys

from ..errors import Diagnostic


def print_diagnostics(diagnostics: list[Diagnostic], fmt: str, stream=None) -> None:
    stream = stream or sys.stdout
    if fmt == "json":
        json.dump([d.as_dict() for d in diagnostics], stream, indent=2)
        stream.write("\n")
        return
    for d in diagnostics:
        if fmt == "github":
            message = f"{d.code}: {d.message} — {d.hint}".replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            stream.write(f"::{d.severity} file={d.path},line={d.line},col={d.column},title={d.code}::{message}\n")
        else:
            stream.write(f"{d}\n")
