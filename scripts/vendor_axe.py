#!/usr/bin/env python3
"""Vendor axe-core, the accessibility checker the browser tests run, from the npm registry.

tests/site/test_accessibility.py injects axe-core (https://github.com/dequelabs/axe-core,
MPL-2.0) into every kind of page and fails on any WCAG 2.2 AA violation. It is a test
dependency, not part of the site: the minified build and its licences live in tests/vendor/,
pinned in scripts/axe-core.lock.json by version, the registry's integrity hash of the tarball and
the SHA-256 of each vendored file (the scheme of scripts/npm_vendor.py, as for RE2JS).

    python scripts/vendor_axe.py                   # re-fetch the pinned version; refuse any byte that differs
    python scripts/vendor_axe.py --version 4.14.1  # move the pin to another version (then run the tests)
    python scripts/vendor_axe.py --check           # offline: the vendored files are the pinned ones
"""

from __future__ import annotations

import sys

from npm_vendor import REPO, Package, main

PACKAGE = Package("axe-core", REPO / "scripts" / "axe-core.lock.json", {
    "tests/vendor/axe.min.js": "package/axe.min.js",
    "tests/vendor/axe-LICENSE.txt": "package/LICENSE",                       # MPL-2.0
    "tests/vendor/axe-LICENSE-3RD-PARTY.txt": "package/LICENSE-3RD-PARTY.txt",  # what the bundle includes
})

if __name__ == "__main__":
    sys.exit(main(PACKAGE, __doc__.split("\n\n")[0]))
