"""Command line: `rootcause build|check|serve|schema|diagnose|new` (also `python build.py ...`).

Exit codes: 0 success; 1 the input has problems (check/build) or no known failure was found
(diagnose); 2 usage or unreadable input. Bad input never produces a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .errors import CODES, Diagnostic, RootcauseError


def _print_diagnostics(diagnostics: list[Diagnostic], fmt: str, stream=None) -> None:
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


def _summary(diagnostics: list[Diagnostic], checked: int) -> str:
    errors = sum(1 for d in diagnostics if d.severity == "error")
    files = len({d.path for d in diagnostics})
    if not errors:
        return f"checked {checked} entry files: no problems"
    return (f"checked {checked} entry files: {errors} error{'s' if errors != 1 else ''} "
            f"in {files} file{'s' if files != 1 else ''}")


def cmd_check(args) -> int:
    from .project import open_project

    if args.explain:
        code = args.explain.upper()
        if code not in CODES:
            print(f"unknown code {args.explain}; known codes: {', '.join(CODES)}", file=sys.stderr)
            return 2
        print(f"{code}: {CODES[code]}")
        return 0
    project, diagnostics = open_project(Path(args.root))
    if project is not None:
        from .content import load_content

        diagnostics = sorted(diagnostics + load_content(project.root)[1])
    _print_diagnostics(diagnostics, args.format)
    if args.format == "text":
        from .catalog import entry_paths

        print(_summary(diagnostics, len(entry_paths(Path(args.root)))), file=sys.stderr)
    return 1 if any(d.severity == "error" for d in diagnostics) else 0


def cmd_build(args) -> int:
    from .builder import build

    try:
        result = build(Path(args.root), out=Path(args.out) if args.out else None, progress=not args.quiet,
                       force=args.force)
    except RootcauseError as error:
        _print_diagnostics(error.diagnostics, "text", sys.stderr)
        print(f"build failed: {len(error.diagnostics)} problem(s); the previous site was left as it was",
              file=sys.stderr)
        return 1
    print(result.summary())
    return 0


def cmd_serve(args) -> int:
    from .serve import serve

    return serve(Path(args.root), host=args.host, port=args.port, open_browser=args.open)


def cmd_schema(args) -> int:
    from .config import SiteConfig, load_config
    from .schema import SCHEMA_FILE, json_schema_text

    root = Path(args.root)
    if args.config:
        text = json.dumps(SiteConfig.model_json_schema(), indent=2, sort_keys=True) + "\n"
    else:
        config, problems = load_config(root)
        if config is None:
            _print_diagnostics(problems, "text", sys.stderr)
            return 1
        text = json_schema_text(config)
    if args.stdout:
        sys.stdout.write(text)
        return 0
    target = Path(args.out) if args.out else root / SCHEMA_FILE
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")
    return 0


def cmd_diagnose(args) -> int:
    from .diagnosis_cli import run_diagnose

    return run_diagnose(args)


def cmd_new(args) -> int:
    from .scaffold import new_entry

    return new_entry(Path(args.root), args.id)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rootcause", description="Build and check the rootcause encyclopedia of "
                                     "ML training failures, and diagnose training logs against it.")
    parser.add_argument("--root", default=".", help="project folder holding site.yml and entries/ (default: .)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("build", help="validate everything and write the static site")
    p.add_argument("--out", help="output folder (default: site.yml's 'output', usually site/)")
    p.add_argument("--force", action="store_true", help="ignore the build cache and rebuild every page")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("check", help="validate site.yml, entries and pages; print every problem")
    p.add_argument("--format", choices=["text", "json", "github"], default="text",
                   help="github prints workflow commands that show as annotations on a pull request")
    p.add_argument("--explain", metavar="CODE", help="explain an error code, e.g. E033")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("serve", help="build, serve on 127.0.0.1, rebuild and reload on every change")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--open", action="store_true", help="open the site in a web browser")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("schema", help="write the JSON Schema of entries (for editors)")
    p.add_argument("--out", help="file to write (default: entry.schema.json in the project)")
    p.add_argument("--stdout", action="store_true", help="print instead of writing a file")
    p.add_argument("--config", action="store_true", help="the schema of site.yml instead")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("diagnose", help="find known failures in training logs (files, .gz, or - for stdin)")
    p.add_argument("logs", nargs="*", default=["-"], metavar="LOG")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--top", type=int, default=5, help="how many entries to report (default 5)")
    p.add_argument("--site", help="use a built site's signature index instead of the project's entries")
    p.set_defaults(func=cmd_diagnose)

    p = sub.add_parser("new", help="create a new entry file from a template")
    p.add_argument("id", help="kebab-case id, e.g. nccl-watchdog-timeout")
    p.set_defaults(func=cmd_new)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
