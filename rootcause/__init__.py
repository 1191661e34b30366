"""rootcause: an encyclopedia of ML training failures, the static-site generator that builds it,
and the matcher that names the entry a training log shows.

As a library (for fleet scans and tools of your own)::

    import rootcause
    report = rootcause.diagnose_text(log_text, site="path/to/built/site")   # = `diagnose --json`
    matcher = rootcause.Matcher(site="path/to/built/site")                  # load once, scan many
    for path in paths:
        report = matcher.diagnose_file(path)

`Matcher(root=PROJECT)` reads the project instead, as `diagnose` does: its compiled signature
index in the project's store when that is fresh, else the entries, validated first; with neither,
the project in the current folder or else the encyclopedia bundled with rootcause. Every report
says which answered (`report["encyclopedia"]`). Failures raise `rootcause.DiagnosisError`;
`rootcause.Scanner.from_site(folder)` is the low-level scanner alone.

The package map. Top-level modules, by what they are:

- Primitives: `version`, `errors` (the one diagnostic type), `explanations` (the long text of
  each diagnostic code, for `check --explain` and the contributor guide), `text` (decoration, tokens,
  printable text), `jsonbytes` (JSON as bytes).
- Contributor inputs: `files` (reading untrusted files), `located_yaml` (YAML with positions),
  `validation` (pydantic errors as positioned diagnostics), `config` (`site.yml`), `inputs` (the
  input files, their stat keys and hashes: freshness).
- Build runtime: `cache` (the store: records by key, outside the project), `memo` (the server's
  last build's results, in memory), `collector` (garbage collector and malloc housekeeping),
  `forked` (work in a forked child), `timings` (`build --timings`).
- Service: `encyclopedia` (the diagnosis service: a bundled, project or built-site encyclopedia
  → reports; above the site subpackage, below the commands).
- Faces: `api` (the library), `__main__`.

Subpackages, one layer each: `matching` < `entries` < `site` < (`encyclopedia`) < `commands`.
"""

from .version import __version__

__all__ = ["DiagnosisError", "Encyclopedia", "EntriesHaveErrors", "Matcher", "NoEncyclopedia", "Origin",
           "RootcauseUnavailable", "Scanner", "UnreadableLog", "diagnose_file", "diagnose_text", "__version__"]


def __getattr__(name: str):
    """The library's names, imported when first used: `rootcause build` and every other command
    import this package too, and need none of the matcher (0.04 s of imports)."""
    if name in __all__ and name != "__version__":
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'rootcause' has no attribute {name!r}")
