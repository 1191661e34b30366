#!/usr/bin/env python3
"""Differential check of the two matchers: the command line's and the browser's (matcher.js in
Node) must write the same report for every log (issue #31 item 10). The benchmark compares them
on the real logs as posted; this compares them on the same kinds of text changed the ways a paste
changes it, to find a difference before a reader does:

- every example of every entry, mutated as `check`'s mutation check mutates it (rank, Slurm, host
  and time prefixes, `> ` quoting, CRLF, cut after its core, exception class swapped or dropped,
  numbers elided), cut at a random point, wrapped at 60, 80 or 100 columns, coloured with ANSI;
- every dev-half log of bench/real_logs/ cut to random slices (a paste rarely starts or ends on a
  line break) and with its lines shuffled. The sealed half is never used.

    python bench/twin_fuzz.py                 # seed 1; prints the count and the first differences
    python bench/twin_fuzz.py --seed 7 --json differences.json

Exit status 1 when any report differs. A difference is a bug in one matcher: fix the mechanism
(and add the smallest text that shows it to the matcher tests), never the text.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import diagnose_quality as quality  # noqa: E402

def example_texts(catalog, rng: random.Random) -> list[tuple[str, str]]:
    from rootcause.entries.mutations import _wrapped, mutations

    out = []
    for entry_id, loaded in catalog.entries.items():
        for sig in loaded.entry.signatures:
            for number, example in enumerate(sig.examples):
                log = example.log
                lines = log.split("\n")
                name = f"{entry_id} example {number + 1}"
                out += [(f"{name}, {how}", text) for how, text in mutations(log, len(lines) - 1, "")]
                out.append((f"{name}, cut at random", log[:rng.randrange(1, len(log) + 1)]))
                width = rng.choice((60, 80, 100))
                out.append((f"{name}, wrapped at {width}", _wrapped(log, width)))
                out.append((f"{name}, coloured", "\n".join(f"\x1b[31m{line}\x1b[0m" for line in lines)))
    return out


def dev_log_texts(rng: random.Random) -> list[tuple[str, str]]:
    out = []
    for case in quality.load_cases():
        if quality.half(case) != "dev":
            continue
        text = case["text"]
        for k in range(3):
            start = rng.randrange(0, len(text) + 1)
            out.append((f"{case['name']}, slice {k + 1}", text[start:rng.randrange(start, len(text) + 1)]))
        lines = text.split("\n")
        rng.shuffle(lines)
        out.append((f"{case['name']}, lines shuffled", "\n".join(lines)))
    return out


def differences(texts: list[tuple[str, str]]) -> list[dict]:
    from rootcause.site.builder import build

    cli = quality.Cli()
    python = [cli.report(text) for _, text in texts]
    with tempfile.TemporaryDirectory() as tmp:
        build(REPO, out=Path(tmp) / "site", progress=False)
        browser = quality.Browser(Path(tmp) / "site").reports([text for _, text in texts])
    out = []
    for (name, text), py, js in zip(texts, python, browser):
        py = {k: v for k, v in py.items() if k not in quality.CLI_ONLY}
        if py != js:
            fields = sorted(k for k in set(py) | set(js) if py.get(k) != js.get(k))
            out.append({"name": name, "text": text, "fields": fields,
                        "cli": {k: py.get(k) for k in fields}, "browser": {k: js.get(k) for k in fields}})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write every difference (text, fields, both values) to this file")
    args = parser.parse_args(argv)
    from rootcause.entries.project import open_project

    project, problems = open_project(REPO)
    if project is None:
        print("\n".join(map(str, problems)), file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    texts = example_texts(project.catalog, rng) + dev_log_texts(rng)
    found = differences(texts)
    print(f"seed {args.seed}: the browser's report differs from the command line's on {len(found)} of {len(texts)} texts")
    for item in found[:20]:
        print(f"  {item['name']}: {', '.join(item['fields'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1, default=str), encoding="utf-8")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
