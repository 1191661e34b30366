"""The verbs: the argparse front (`cli`) and one module per verb (`build`, `check`, `serve`,
`schema`, `diagnose`, `new`), each with `add_parser(subparsers)` and `run(args)`.

The only layer that ties entries, matching and the site together; the other layers never import
it (only `rootcause.__main__`, `build.py` and the console script do).
"""
