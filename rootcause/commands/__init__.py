"""The verbs, each with `add_parser(subparsers)` and `run(args)`.

Modules: `cli` (the argparse front and exit codes), `output` (diagnostics as text, JSON or
GitHub commands), `build`, `check`, `schema`, `serve` (with `livereload`, its HTTP side),
`diagnose`, `run`, `export`, `new`.

The only layer that ties entries, matching and the site together; the other layers never import
it (only `rootcause.__main__`, `build.py` and the console script do).
"""
