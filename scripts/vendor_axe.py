#!/usr/bin/env python3
"""Vendor axe-core, the accessibility checker the browser tests run, from the npm registry.

tests/site/test_accessibility.py injects axe-core (https://github.com/dequelabs/axe-core,
MPL-2.0) into every kind of page and fails on any WCAG 2.2 AA violation. It is a test
dependency, not part of the site: the minified build and its licences live in tests/vendor/,
pinned in scripts/axe-core.lock.json by version, the registry's integrity hash of the tarball and
the SHA-256 of each vendored file (the same scheme as scripts/vendor_re2js.py).

    python scripts/vendor_axe.py                   # re-fetch the pinned version; refuse any byte that differs
    python scripts/vendor_axe.py --version 4.14.1  # move the pin to another version (then run the tests)
    python scripts/vendor_axe.py --check           # offline: the vendored files are the pinned ones

The tarball comes from `npm pack axe-core@VERSION` (npm checks it against the registry's
integrity hash); only the named files are taken out of it, as regular files.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCK = REPO / "scripts" / "axe-core.lock.json"
PACKAGE = "axe-core"
#: vendored file (relative to the repository) → member of the npm tarball
FILES = {
    "tests/vendor/axe.min.js": "package/axe.min.js",
    "tests/vendor/axe-LICENSE.txt": "package/LICENSE",                       # MPL-2.0
    "tests/vendor/axe-LICENSE-3RD-PARTY.txt": "package/LICENSE-3RD-PARTY.txt",  # what the bundle includes
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_lock() -> dict:
    return json.loads(LOCK.read_text(encoding="utf-8"))


def check() -> list[str]:
    """Problems with the vendored files, measured against the lock (empty: all as pinned)."""
    lock = read_lock()
    problems = []
    for name in FILES:
        path = REPO / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif sha256(path.read_bytes()) != lock["files"][name]["sha256"]:
            problems.append(f"{name} differs from {PACKAGE} {lock['version']} as pinned in {LOCK.relative_to(REPO)}")
    return problems


def pack(version: str, folder: Path) -> tuple[Path, str]:
    """`npm pack` the version into folder; returns the tarball and the integrity npm reports."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is not installed (Debian: apt-get install npm)")
    done = subprocess.run([npm, "pack", f"{PACKAGE}@{version}", "--json", "--pack-destination", str(folder)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"npm pack {PACKAGE}@{version} failed:\n{done.stderr.strip()}")
    info = json.loads(done.stdout)[0]
    tarball = folder / info["filename"]
    algorithm, _, digest = info["integrity"].partition("-")
    actual = base64.b64encode(hashlib.new(algorithm, tarball.read_bytes()).digest()).decode()
    if actual != digest:
        raise SystemExit(f"{tarball.name} does not match the integrity npm reported ({info['integrity']})")
    return tarball, info["integrity"]


def extract(tarball: Path) -> dict[str, bytes]:
    out = {}
    with tarfile.open(tarball, "r:gz") as archive:
        for name, member_name in FILES.items():
            member = archive.getmember(member_name)
            if not member.isfile():
                raise SystemExit(f"{member_name} in {tarball.name} is not a regular file")
            out[name] = archive.extractfile(member).read()  # type: ignore[union-attr]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", help="move the pin to this version of axe-core")
    parser.add_argument("--check", action="store_true", help="only check the vendored files against the lock")
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    lock = read_lock() if LOCK.exists() else None
    version = args.version or (lock and lock["version"])
    if not version:
        raise SystemExit("no pinned version yet: give --version")
    with tempfile.TemporaryDirectory() as tmp:
        tarball, integrity = pack(version, Path(tmp))
        files = extract(tarball)
    repin = args.version is not None and (lock is None or args.version != lock["version"])
    if not repin:
        if integrity != lock["integrity"]:
            raise SystemExit(f"the registry's {PACKAGE} {version} is not the pinned one: integrity {integrity}, "
                             f"pinned {lock['integrity']}")
        for name, data in files.items():
            if sha256(data) != lock["files"][name]["sha256"]:
                raise SystemExit(f"{FILES[name]} of {PACKAGE} {version} differs from the pinned file")
    for name, data in files.items():
        (REPO / name).parent.mkdir(parents=True, exist_ok=True)
        (REPO / name).write_bytes(data)
    if repin:
        LOCK.write_text(json.dumps({
            "package": PACKAGE, "version": version, "integrity": integrity,
            "files": {name: {"from": FILES[name], "sha256": sha256(data)} for name, data in files.items()},
        }, indent=2) + "\n", encoding="utf-8")
    print(f"vendored {PACKAGE} {version}: " + ", ".join(FILES), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
