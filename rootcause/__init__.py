"""rootcause: an encyclopedia of ML training failures, the static-site generator that builds it,
and the matcher that names the entry a training log shows.

As a library (for fleet scans and tools of your own)::

    import rootcause
    report = rootcause.diagnose_text(log_text, site="path/to/built/site")   # = `diagnose --json`
    matcher = rootcause.Matcher(site="path/to/built/site")                  # load once, scan many
    for path in paths:
        report = matcher.diagnose_file(path)

`Matcher(root=PROJECT)` reads the project instead, as `diagnose` does: its compiled signature
index in `.rootcause-cache/` when that is fresh, else the entries, validated first;
`rootcause.Scanner.from_site(folder)` is the low-level scanner alone.
"""

from .api import Matcher, Scanner, diagnose_file, diagnose_text
from .version import __version__

__all__ = ["Matcher", "Scanner", "diagnose_file", "diagnose_text", "__version__"]
