"""The matching rules both matchers read, declared once in `shared.json`: this package's
modules bind them to names, and the site ships the file inside `search/signatures.json`
("shared") for theme/assets/matcher.js. A value written in one place cannot drift between the
command line and the browser."""

from __future__ import annotations

import json
from pathlib import Path

SHARED: dict = json.loads(Path(__file__).with_name("shared.json").read_text(encoding="utf-8"))
