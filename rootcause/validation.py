"""Turn pydantic's validation errors into positioned diagnostics with stable codes.

Shared by `config` (site.yml) and `schema` (entries): both are pydantic models validated from
data that `load` located, and both must report `file:line:col: error[Exxx]: what — how to fix`.
"""

from __future__ import annotations

import difflib
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import Diagnostic
from .located_yaml import Located

M = TypeVar("M", bound=BaseModel)

_CODE_BY_TYPE = {
    "extra_forbidden": "E010",
    "missing": "E011",
    "url": "E015",
    "date_from_datetime_parsing": "E016",
    "date_parsing": "E016",
    "date_type": "E016",
    "date_from_datetime_inexact": "E016",
    "vocabulary": "E013",
}


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The pydantic model that owns the field at `loc` (to suggest its field names)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if fields is None or part not in fields:
            return current if fields is not None else None
        annotation = fields[part].annotation
        current = _innermost_model(annotation)
        if current is None:
            return None
    return current


def _innermost_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _innermost_model(arg)
        if found is not None:
            return found
    return None


def _describe_input(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _place(located: Located, loc: tuple, ctx: dict) -> tuple:
    """Where to point: the error's own place when the file has it; else the first of the places a
    validator named in its context (`at`, then `fallback`) that the file has; else the nearest
    ancestor of its own place. A rule across fields (signatures required by the role) is best
    shown at a key that is there when the other is missing."""
    candidates = [loc] if loc else []
    candidates += [tuple(ctx[name]) for name in ("at", "fallback") if isinstance(ctx.get(name), (tuple, list))]
    for place in candidates:
        if place in located.values or place in located.keys:
            return place
    return loc


def diagnostics_from(error: ValidationError, model: type[BaseModel], located: Located, shown: str) -> list[Diagnostic]:
    """One diagnostic per pydantic error, placed at the offending key or value."""
    found: list[Diagnostic] = []
    for item in error.errors(include_url=False):
        loc = tuple(part for part in item["loc"] if not (isinstance(part, str) and part.startswith("function-")))
        kind = item["type"]
        ctx = item.get("ctx") or {}
        code = ctx.get("code") or _CODE_BY_TYPE.get(kind, "E012")
        field_name = ".".join(str(p) for p in loc) or "(top level)"
        if kind == "extra_forbidden":
            owner = _model_at(model, loc[:-1])
            known = sorted(owner.model_fields) if owner else []
            close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else (
                f"allowed fields here: {', '.join(known)}" if known else "remove it")
            line, col = located.where(loc, key=True)
            found.append(Diagnostic(shown, line, col, code, f"unknown field '{loc[-1]}'", hint))
        elif kind == "missing":
            line, col = located.where(loc[:-1])
            parent = ".".join(str(p) for p in loc[:-1])
            where = f" in {parent}" if parent else ""
            found.append(Diagnostic(shown, line, col, code, f"required field '{loc[-1]}' is missing{where}",
                                    f"add '{loc[-1]}:' (see the schema: `rootcause schema`)"))
        else:
            place = _place(located, loc, ctx)
            if not loc and isinstance(ctx.get("at"), (tuple, list)):   # a rule across fields names its field
                field_name = ".".join(str(p) for p in ctx["at"])
            line, col = located.where(place)
            message = item["msg"]
            if message.startswith("Value error, "):
                message = message[len("Value error, "):]
            hint = ctx.get("hint", "")
            if kind == "too_short":
                need = ctx.get("min_length", 1)
                message = f"needs at least {need} item{'s' if need != 1 else ''}"
                hint = "add one; see the schema or an existing entry for the form"
            elif kind == "too_long" or kind == "string_too_long":
                message = f"is too long (at most {ctx.get('max_length')})"
                hint = "shorten it"
            if not hint:
                hint = f"got {_describe_input(item.get('input'))}; see the schema for '{field_name}'"
            found.append(Diagnostic(shown, line, col, code, f"{field_name}: {message}", hint))
    return found


def validate(model: type[M], located: Located, shown: str, context: dict | None = None) -> tuple[M | None, list[Diagnostic]]:
    """Validate located data against `model`; never raises for bad input."""
    if not isinstance(located.data, dict):
        line, col = located.where(())
        return None, [Diagnostic(shown, line, col, "E007",
                                 f"the file holds {_describe_input(located.data)}, not a mapping of fields",
                                 "start the file with 'id: ...' and the other fields, one per line")]
    try:
        return model.model_validate(located.data, context=context), []
    except ValidationError as error:
        return None, diagnostics_from(error, model, located, shown)
