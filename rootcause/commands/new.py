"""`rootcause new ID`: start an entry from a template that lists every field, so a contributor
fills in text instead of looking up the schema."""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
from pathlib import Path

TEMPLATE = """\
# yaml-language-server: $schema=../entry.schema.json
id: {id}
title: TODO what failed, in the words a reader would search for
summary: >
  TODO the quick answer: the cause and the fix in one or two sentences.
category: TODO  # one of: {categories}
systems: [TODO]  # from: {systems}
phase: TODO  # one of: {phases}
severity: TODO  # one of: {severities}
tags: []

signatures:
  - pattern: "TODO the error text as printed, with {{int}}, {{name}}, {{path}}... for the parts that vary"
    source: TODO the upstream file and function that prints it, or the issue thread
    examples:
      - |
        TODO paste real log lines here, exactly as printed

symptoms:
  - observed: TODO what you see
    why: TODO why it happens

root_cause: |
  TODO the mechanism, precisely.

misdiagnosis:
  - assumption: TODO what people wrongly conclude
    reality: TODO why that is wrong here

confirm:
  - TODO a check that proves this is the cause

fix:
  - step: TODO what to do
    command: TODO the exact command

prevention:
  - TODO how not to hit it again

examples: []
faq: []
related: []
references:
  - kind: source
    title: TODO
    url: https://github.com/TODO

reviewed: {today}
authors: []
"""


def add_parser(sub) -> None:
    p = sub.add_parser("new", help="create a new entry file from a template")
    p.add_argument("id", help="kebab-case id, e.g. nccl-watchdog-timeout")
    p.set_defaults(func=run)


def run(args) -> int:
    return new_entry(Path(args.root), args.id)


def new_entry(root: Path, entry_id: str) -> int:
    from ..config import KEBAB, load_config

    if not re.fullmatch(KEBAB, entry_id):
        print(f"'{entry_id}' is not a kebab-case id (lowercase words joined by '-'), e.g. nccl-watchdog-timeout",
              file=sys.stderr)
        return 2
    config, problems = load_config(root)
    if config is None:
        for d in problems:
            print(d, file=sys.stderr)
        return 1
    path = root / "entries" / f"{entry_id}.yaml"
    if os.path.lexists(path):
        print(f"{path} already exists", file=sys.stderr)
        return 1
    vocab = config.vocabularies
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x", encoding="utf-8") as stream:  # never through a link planted there
            stream.write(TEMPLATE.format(
                id=entry_id, today=dt.date.today().isoformat(),
                categories=", ".join(vocab.categories), systems=", ".join(vocab.systems),
                phases=", ".join(vocab.phases), severities=", ".join(vocab.severities)))
    except OSError as exc:
        print(f"{path}:1:1: error[E051]: cannot write the entry: {exc.strerror or exc} — check that entries/ "
              "can be written", file=sys.stderr)
        return 2
    print(f"wrote {path}; fill in the TODOs, then run `rootcause check`")
    return 0
