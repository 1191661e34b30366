#!/usr/bin/env python3
"""Vendor RE2JS, the browser's regular-expression engine, from the npm registry.

The diagnose page matches signatures with RE2JS (https://github.com/le0pard/re2js, MIT): a
JavaScript port of RE2 that runs in linear time, so a signature that is linear for the command
line's RE2 is linear in the browser too. The site serves its own copy (no request leaves the
site), so the package's browser build and its licence live in theme/assets/, pinned in
scripts/re2js.lock.json by version, the registry's integrity hash of the tarball and the
SHA-256 of each vendored file.

    python scripts/vendor_re2js.py                  # re-fetch the pinned version; refuse any byte that differs
    python scripts/vendor_re2js.py --version 2.11.0 # move the pin to another version (then run the tests)
    python scripts/vendor_re2js.py --check          # offline: the vendored files are the pinned ones
"""

from __future__ import annotations

import sys

from npm_vendor import REPO, Package, main

PACKAGE = Package("re2js", REPO / "scripts" / "re2js.lock.json", {
    "theme/assets/re2js.js": "package/build/index.umd.js",        # browser global, worker importScripts, Node require
    "theme/assets/re2js-LICENSE.txt": "package/LICENSE",
})

if __name__ == "__main__":
    sys.exit(main(PACKAGE, __doc__.split("\n\n")[0]))
