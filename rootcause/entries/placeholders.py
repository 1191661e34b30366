"""Text a scaffold leaves for its author: the check that no `TODO` is published (E058).

`rootcause new` writes `TODO` wherever the author has to write something: the title, the
summary, the root cause, the fix steps and commands, the reference and its address, and with
`--from-log` the signature's source and the example's origin too. The schema accepts most of
them (a title is any text, `https://github.com/TODO` is an address), so without this check a
scaffold whose vocabulary ids were filled in passed `check` and was published with its
placeholders. Every field an author writes is searched; the text copied from software (the
patterns, the log examples, the code examples) is not, since a program may print "TODO" itself.
"""

from __future__ import annotations

import re
from typing import Iterator

from ..errors import Diagnostic
from ..located_yaml import Located
from .schema import Entry, prose_fields

#: the scaffold's placeholder, as a word: "TODO the mechanism", "github.com/TODO", not "TODOV1"
PLACEHOLDER = re.compile(r"(?<![A-Za-z0-9_])TODO(?![A-Za-z0-9_])")


def _authored(entry: Entry) -> Iterator[tuple[tuple, str]]:
    """(path, text) of every field an author writes, beyond the prose: commands, references,
    the origins of the log examples."""
    yield from prose_fields(entry)
    for name in ("confirm", "fix"):
        for i, step in enumerate(getattr(entry, name)):
            if step.command:
                yield (name, i, "command"), step.command
    for i, reference in enumerate(entry.references):
        yield ("references", i, "title"), reference.title
        yield ("references", i, "url"), reference.url
    for i, signature in enumerate(entry.signatures):
        for j, example in enumerate(signature.examples):
            yield ("signatures", i, "examples", j, example.origin), getattr(example, example.origin)
    for i, alias in enumerate(entry.aliases):
        yield ("aliases", i), alias
    for i, author in enumerate(entry.authors):
        yield ("authors", i), author


def placeholder_problems(entry: Entry, located: Located, shown: str) -> list[Diagnostic]:
    """E058 for each field that still holds `TODO`, at that field."""
    problems = []
    for where, text in _authored(entry):
        if text and PLACEHOLDER.search(text):
            line, col = located.where(where)
            hint = ("cite the real source: its title and its address" if where[0] == "references" else
                    "write what it stands for, or remove the item")
            problems.append(Diagnostic(shown, line, col, "E058",
                                       f"{'.'.join(map(str, where))}: still holds the placeholder TODO that "
                                       "`rootcause new` wrote", hint + "; an entry is published as it stands"))
    return problems
