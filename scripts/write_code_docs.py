"""Write the section "Checks and error codes" of content/writing-entries.md from
`rootcause.explanations`, the one source that `rootcause check --explain` also prints.

Run after editing an explanation: `python scripts/write_code_docs.py`. The section is the page's
last; everything above it is kept as written. `tests/test_explanations.py` fails while the page
and the explanations differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rootcause.explanations import HEADING, page_section  # noqa: E402

PAGE = REPO / "content" / "writing-entries.md"


def written(text: str) -> str:
    """The page's text with its codes section generated afresh."""
    at = text.index(f"\n{HEADING}\n")
    return text[:at + 1] + page_section()


if __name__ == "__main__":
    old = PAGE.read_text(encoding="utf-8")
    new = written(old)
    if new != old:
        PAGE.write_text(new, encoding="utf-8")
        print(f"rewrote {PAGE.relative_to(REPO)}")
