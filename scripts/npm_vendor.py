"""Vendoring a pinned npm package's files into the repository: the one scheme both
`vendor_re2js.py` (the browser's regex engine, served by the site) and `vendor_axe.py` (the
accessibility checker the browser tests inject) follow.

A package is pinned in a lock file by version, the registry's integrity hash of its tarball and
the SHA-256 of each vendored file. The tarball comes from `npm pack NAME@VERSION` (npm checks it
against the registry's integrity hash, and so does `pack`); only the named files are taken out of
it, as regular files.
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
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Package:
    name: str                  # on the npm registry
    lock: Path
    files: dict[str, str]      # vendored file (relative to the repository) → member of the npm tarball


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_lock(pkg: Package) -> dict:
    return json.loads(pkg.lock.read_text(encoding="utf-8"))


def check(pkg: Package) -> list[str]:
    """Problems with the vendored files, measured against the lock (empty: all as pinned)."""
    lock = read_lock(pkg)
    problems = []
    for name in pkg.files:
        path = REPO / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif sha256(path.read_bytes()) != lock["files"][name]["sha256"]:
            problems.append(f"{name} differs from {pkg.name} {lock['version']} as pinned in {pkg.lock.relative_to(REPO)}")
    return problems


def pack(pkg: Package, version: str, folder: Path) -> tuple[Path, str]:
    """`npm pack` the version into folder; returns the tarball and the integrity npm reports."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is not installed (Debian: apt-get install npm)")
    done = subprocess.run([npm, "pack", f"{pkg.name}@{version}", "--json", "--pack-destination", str(folder)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"npm pack {pkg.name}@{version} failed:\n{done.stderr.strip()}")
    info = json.loads(done.stdout)[0]
    tarball = folder / info["filename"]
    algorithm, _, digest = info["integrity"].partition("-")
    actual = base64.b64encode(hashlib.new(algorithm, tarball.read_bytes()).digest()).decode()
    if actual != digest:
        raise SystemExit(f"{tarball.name} does not match the integrity npm reported ({info['integrity']})")
    return tarball, info["integrity"]


def extract(pkg: Package, tarball: Path) -> dict[str, bytes]:
    out = {}
    with tarfile.open(tarball, "r:gz") as archive:
        for name, member_name in pkg.files.items():
            member = archive.getmember(member_name)
            if not member.isfile():
                raise SystemExit(f"{member_name} in {tarball.name} is not a regular file")
            out[name] = archive.extractfile(member).read()  # type: ignore[union-attr]
    return out


def main(pkg: Package, description: str, argv: list[str] | None = None) -> int:
    """The command line of a vendoring script (`description`: its docstring's first line)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--version", help=f"move the pin to this version of {pkg.name}")
    parser.add_argument("--check", action="store_true", help="only check the vendored files against the lock")
    args = parser.parse_args(argv)
    if args.check:
        problems = check(pkg)
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    lock = read_lock(pkg) if pkg.lock.exists() else None
    version = args.version or (lock and lock["version"])
    if not version:
        raise SystemExit("no pinned version yet: give --version")
    with tempfile.TemporaryDirectory() as tmp:
        tarball, integrity = pack(pkg, version, Path(tmp))
        files = extract(pkg, tarball)
    repin = args.version is not None and (lock is None or args.version != lock["version"])
    if not repin:
        if integrity != lock["integrity"]:
            raise SystemExit(f"the registry's {pkg.name} {version} is not the pinned one: integrity {integrity}, "
                             f"pinned {lock['integrity']}")
        for name, data in files.items():
            if sha256(data) != lock["files"][name]["sha256"]:
                raise SystemExit(f"{pkg.files[name]} of {pkg.name} {version} differs from the pinned file")
    for name, data in files.items():
        (REPO / name).parent.mkdir(parents=True, exist_ok=True)
        (REPO / name).write_bytes(data)
    if repin:
        pkg.lock.write_text(json.dumps({
            "package": pkg.name, "version": version, "integrity": integrity,
            "files": {name: {"from": pkg.files[name], "sha256": sha256(data)} for name, data in files.items()},
        }, indent=2) + "\n", encoding="utf-8")
    print(f"vendored {pkg.name} {version}: " + ", ".join(pkg.files), file=sys.stderr)
    return 0


