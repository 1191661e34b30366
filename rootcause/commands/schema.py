"""`rootcause schema`: write the JSON Schema that editors use to complete and check entries."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .output import print_diagnostics


def add_parser(sub) -> None:
    p = sub.add_parser("schema", help="write the JSON Schema of entries (for editors)")
    p.add_argument("--out", help="file to write (default: entry.schema.json in the project)")
    p.add_argument("--stdout", action="store_true", help="print instead of writing a file")
    p.add_argument("--config", action="store_true", help="the schema of site.yml instead")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..config import SiteConfig, load_config
    from ..entries.schema import SCHEMA_FILE, json_schema_text

    root = Path(args.root)
    if args.config:
        text = json.dumps(SiteConfig.model_json_schema(), indent=2, sort_keys=True) + "\n"
    else:
        config, problems = load_config(root)
        if config is None:
            print_diagnostics(problems, "text", sys.stderr)
            return 1
        text = json_schema_text(config)
    if args.stdout:
        sys.stdout.write(text)
        return 0
    target = Path(args.out) if args.out else root / SCHEMA_FILE
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"{target}:1:1: error[E051]: cannot write the schema: {exc.strerror or exc} — choose a folder you "
              "can write with --out, or print it with --stdout", file=sys.stderr)
        return 2
    print(f"wrote {target}")
    return 0
