"""`rootcause check`: validate site.yml, every entry and every page; print every problem at once.

When the entries are valid, their compiled signature index is stored in the project's
store for `diagnose` (`rootcause.site.diagnosis_index`)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import CODES, Diagnostic
from .output import print_diagnostics


def add_parser(sub) -> None:
    p = sub.add_parser("check", help="validate site.yml, entries and pages; print every problem")
    p.add_argument("--format", choices=["text", "json", "github"], default="text",
                   help="github prints workflow commands that show as annotations on a pull request")
    p.add_argument("--explain", metavar="CODE", help="explain a code in full, with a wrong and a right "
                   "example, e.g. E033")
    p.set_defaults(func=run)


def _summary(diagnostics: list[Diagnostic], checked: int) -> str:
    errors = sum(1 for d in diagnostics if d.severity == "error")
    warnings = len(diagnostics) - errors
    files = len({d.path for d in diagnostics if d.severity == "error"})
    if not errors:
        return (f"checked {checked} entry files: no errors, {warnings} warning{'s' if warnings != 1 else ''}"
                if warnings else f"checked {checked} entry files: no problems")
    return (f"checked {checked} entry files: {errors} error{'s' if errors != 1 else ''} "
            f"in {files} file{'s' if files != 1 else ''}")


def run(args) -> int:
    from ..entries.project import open_project

    if args.explain:
        from ..explanations import EXPLANATIONS
        from ..text import printable

        code = args.explain.strip().upper()
        if code not in CODES:
            print(f"unknown code {printable(args.explain, one_line=True)!r}: codes are E001 to "
                  f"{max(c for c in CODES if c.startswith('E'))} and W001 to "
                  f"{max(c for c in CODES if c.startswith('W'))}; known: {', '.join(sorted(CODES))}", file=sys.stderr)
            return 2
        sys.stdout.write(EXPLANATIONS[code].as_text())
        return 0
    from ..cache import RecordStore
    from ..site.stamps import ENTRY_RECORDS, build_version

    # the build cache's entry records (see `catalog.load_catalog`): an entry whose file, path,
    # site.yml and code are those of a record is validated again from it, not parsed and checked
    # again; the checks across entries always run. Records are added, never pruned here: the
    # next build may still need the ones of entries edited since the last build.
    records = RecordStore(Path(args.root), ENTRY_RECORDS)
    project, diagnostics = open_project(Path(args.root), store=records, version=build_version())
    if project is not None and not any(d.severity == "error" for d in diagnostics):
        from ..site.diagnosis_index import store

        store(project)   # the entries are valid: `diagnose` can read them compiled from now on
    if project is not None:
        from ..site.stamps import theme_files
        from ..site.content import load_content

        diagnostics = sorted(diagnostics + load_content(project.root)[1] +
                             theme_files(project.root, project.config)[1])
        if not any(d.severity == "error" for d in diagnostics):
            from ..entries.alerts import export_problems
            from ..entries.mutations import mutation_problems

            # E055, E056: they diagnose every example, so only once the entries are otherwise sound
            diagnostics = sorted(diagnostics + export_problems(project) + mutation_problems(project.catalog))
    print_diagnostics(diagnostics, args.format)
    if args.format == "text":
        from ..entries.catalog import entry_paths

        print(_summary(diagnostics, len(entry_paths(Path(args.root)))), file=sys.stderr)
    return 1 if any(d.severity == "error" for d in diagnostics) else 0
