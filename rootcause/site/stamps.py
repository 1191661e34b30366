"""What a build depends on, and the keys its results are memoised under: the input files and
their cheap fingerprint (sizes and modification times), the theme's assets under content-hashed
names, the version of the code and libraries, and the key of each rendered page.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..cache import RecordStore
from ..inputs import PACKAGE, code_files, listing
from ..version import __version__
from ..errors import RootcauseError, display_path
from ..files import Refused, bundled_theme, folder_problem, read_regular, walk_regular

if TYPE_CHECKING:
    from ..config import SiteConfig

MAX_ASSET_BYTES = 64 << 20


def _names(folder: str, suffix: str) -> list[str]:
    """The paths `folder/*<suffix>` as `Path.glob` gives them (hidden names included), sorted, as
    text (10,000 `Path` objects cost more than the walk itself)."""
    return [f"{folder}/{name}" for name in listing(folder, suffix)]


def _input_files(root: Path, settings: dict) -> list[str]:
    base = os.fspath(root)
    files = [f"{base}/site.yml"]
    files += _names(f"{base}/entries", ".yaml")
    files += _names(f"{base}/content", ".md")
    for key in INPUT_KEYS:
        value = settings.get(key)
        # unvalidated here: a folder that is not plainly inside the project is not walked (the
        # build then reports it, E017); links inside are not followed
        if isinstance(value, str) and folder_problem(root, value) is None:
            files += [os.fspath(p) for p in walk_regular(root / value, root)[0]]
    theme = bundled_theme()
    files += sorted(os.fspath(p) for p in theme.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    # the whole package, not only the site's modules: a change to how entries are checked or
    # logs matched is a reason to build again as much as one to how pages are rendered
    package = os.fspath(PACKAGE)
    files += [f"{package}/{name}" for name in code_files()]
    return files


def quick_settings(root: Path) -> dict:
    """The few site.yml keys that locate inputs and output, read without validating anything.

    Used only to decide that nothing changed; any real build validates site.yml in full. Read by
    the same careful loader as everything else (a regular file, bounded, no aliases).
    """
    from ..located_yaml import load_yaml

    located, _problems = load_yaml(root / "site.yml", "site.yml")
    data = located.data if located is not None else None
    return data if isinstance(data, dict) else {}


#: the site.yml keys that decide which files are inputs (besides the fixed ones)
INPUT_KEYS = ("healthy_logs", "theme", "study")


def same_inputs(settings: dict, other: dict) -> bool:
    """Do two readings of site.yml name the same input folders (so one walk serves both)?"""
    return all(settings.get(key) == other.get(key) for key in INPUT_KEYS)


def input_fingerprint(root: Path, settings: dict, taken: dict | None = None,
                      changed: set[str] | None = None) -> str:
    """A cheap identity of every input: paths, sizes and modification times, no file read, a
    symbolic link identified as itself, never by what it points at (the up-to-date test).
    `taken` gets each file's stat key (`inputs.key_of`) by path, for a build that follows.

    `changed` (`serve`, woken by its watcher): the paths the watcher reported. Only those (and
    any input this process has not seen before) are stat-ed again; every other input's stat is
    the one this process took at its last walk with `taken` of the same inputs (`_WALKED`).
    Without it every input is stat-ed, and that walk is remembered: `serve` makes one on every
    tick the watcher reports nothing, so a change it did not report is still seen a tick later."""
    from ..inputs import key_of

    every = hashlib.blake2b(digest_size=16)
    every.update(f"{__version__}\0".encode())
    lstat = os.lstat
    lines = []
    memory = (os.fspath(root), repr([settings.get(key) for key in INPUT_KEYS]))
    last = _WALKED.get(memory) if changed is not None and taken is not None else None
    reported = changed if changed is not None else set()
    seen: dict[str, tuple[str, tuple]] | None = {} if taken is not None else None
    for path in _input_files(root, settings):
        if last is not None and path not in reported:
            known = last.get(path)
            if known is not None:
                lines.append(known[0])
                taken[path] = known[1]   # type: ignore[index]
                seen[path] = known   # type: ignore[index]
                continue
        try:
            stat = lstat(path)
        except OSError:
            continue
        line = f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_mode}\n"
        lines.append(line)
        if taken is not None:
            key = taken[path] = key_of(stat)
            seen[path] = (line, key)   # type: ignore[index]
    if seen is not None:
        _WALKED.clear()   # one project's walk at a time: the server's
        _WALKED[memory] = seen
    every.update("".join(lines).encode("utf-8", "surrogateescape"))
    every.update(_library_folders())
    return every.hexdigest()


#: the last walk with stat keys (`input_fingerprint`'s `taken`), by project and input folders:
#: {path: (its line of the fingerprint, its stat key)}
_WALKED: dict[tuple[str, str], dict[str, tuple[str, tuple]]] = {}


def _library_folders() -> bytes:
    """Python's version and the modification time of the folder each cached library is installed
    in (`LIBRARY_MODULES`, found without importing them): installing, upgrading or removing one
    (Pygments, jinja2, Material's stylesheets) renames its metadata folder there, so the site is
    not taken as up to date with what the old one made. An lstat each: reading the libraries'
    versions (`build_version`) costs a tenth of a nothing-to-do build."""
    from importlib.util import find_spec

    folders = set()
    for module in LIBRARY_MODULES:
        try:
            spec = find_spec(module)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin:
            # a package's origin is its __init__.py: the folder it is installed in is above it
            place = os.path.dirname(spec.origin)
            folders.add(os.path.dirname(place) if spec.submodule_search_locations else place)
    lines = [sys.version]
    for folder in sorted(folders):
        try:
            lines.append(f"{folder}\0{os.lstat(folder).st_mtime_ns}")
        except OSError:
            lines.append(folder)
    return "\n".join(lines).encode("utf-8", "surrogateescape")


def theme_files(root: Path, config: "SiteConfig") -> tuple[list[Path], list]:
    """The regular files of the site's theme folder, and an E008 for each link or special file."""
    if not config.theme:
        return [], []
    return walk_regular(root / config.theme, root)


def collect_assets(root: Path, config: "SiteConfig") -> tuple[dict[str, str], dict[str, bytes]]:
    """Theme assets (a site override wins) and Material's stylesheets, under content-hashed names."""
    from .render import ICON_FOLDER, material_folder, material_icon_files, theme_folder

    sources: dict[str, Path] = {}
    for folder in [theme_folder() / "assets"] + ([root / config.theme / "assets"] if config.theme else []):
        for path in walk_regular(folder, root)[0]:  # links and special files: refused by render_site
            sources[path.relative_to(folder).as_posix()] = path
    stylesheets = material_folder() / "assets" / "stylesheets"
    sources["material/main.css"] = next(stylesheets.glob("main.*.min.css"))
    sources["material/palette.css"] = next(stylesheets.glob("palette.*.min.css"))
    names: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for name, path in material_icon_files().items():  # stable names: the stylesheet refers to them
        files[f"{ICON_FOLDER}{name}.svg"] = path.read_bytes()
    for logical, path in sorted(sources.items()):
        try:
            data = read_regular(path, MAX_ASSET_BYTES)
        except Refused as refused:
            raise RootcauseError([refused.diagnostic(display_path(path, root))]) from None
        if logical == "material/palette.css":
            data += dark_without_javascript(data)
        stem, dot, suffix = logical.rpartition(".")
        name = f"assets/{stem}.{hashlib.sha256(data).hexdigest()[:10]}.{suffix}" if dot else f"assets/{logical}"
        names[logical] = name
        files[name] = data
    return names, files


def dark_without_javascript(palette: bytes) -> bytes:
    """Material's dark ("slate") scheme, applied by `prefers-color-scheme` while <html> still has
    class "no-js": with JavaScript off, a dark-mode reader gets the dark theme too (with it on,
    palette.js sets the scheme before the first paint and removes "no-js")."""
    import re

    css = palette.decode("utf-8")
    blocks = [m.group(2) for m in re.finditer(r"(\[data-md-color-scheme=slate\](?:\[data-md-color-primary=indigo\])?)"
                                              r"\{([^{}]*)\}", css)]
    if not blocks:
        return b""
    selector = "html.no-js [data-md-color-scheme=default]"
    rules = "".join(f"{selector}{{{block}}}" for block in blocks)
    return f"\n@media (prefers-color-scheme:dark){{{rules}}}\n".encode("utf-8")


#: the libraries whose output the build cache holds (parsed entries, rendered pages): their
#: versions are part of its keys, with the package's own source
CACHED_LIBRARIES = ("pydantic", "pydantic-core", "jinja2", "markupsafe", "markdown-it-py", "markdown-it-pyrs",
                    "mdit-py-plugins", "pygments", "mkdocs-material", "pyyaml", "google-re2")
#: their top-level modules, in the same order: the folders holding them are watched by the cheap
#: fingerprint (`_library_folders`)
LIBRARY_MODULES = ("pydantic", "pydantic_core", "jinja2", "markupsafe", "markdown_it", "markdown_it_pyrs",
                   "mdit_py_plugins", "pygments", "material", "yaml", "re2")


def build_version() -> str:
    """The version of everything besides the project that a cached entry or page depends on."""
    from importlib import metadata

    from ..inputs import code_version
    from .render import theme_folder

    versions: list[tuple[str, str | None]] = []
    for name in CACHED_LIBRARIES:
        try:
            versions.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            versions.append((name, None))
    theme = theme_folder()
    bundled = [(p.relative_to(theme).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
               for p in sorted(theme.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    return code_version((__version__, versions, bundled))


#: the build cache's two record stores (`cache.RecordStore`), shared by every process that reads
#: or writes them: entries by their file's key, rendered pages by their page key
ENTRY_RECORDS = "build-entries"
PAGE_RECORDS = "build-pages"
#: highlighted code blocks (`highlight.kept_in`), by a hash of the highlighter's version (not the
#: whole code's: `highlight.highlighter_version`), their language and text
CODE_RECORDS = "build-code"
CODE_IDLE_DAYS = 7


def code_store(root: Path, enabled: bool = True, read: bool = True) -> RecordStore:
    """The store of highlighted code blocks: forked workers read and write it, so a block is kept
    a week after a build last used it (`RecordStore`'s `idle_days`), not one build's worth."""
    return RecordStore(root, CODE_RECORDS, enabled=enabled, read=read, idle_days=CODE_IDLE_DAYS)

#: the one asset name that changes with the entries (signatures.json's hash), and the template
#: that names it: only that page's key includes it, unless another template names it too
VOLATILE_ASSET = "signatures.json"
VOLATILE_TEMPLATE = "diagnose.html"


def render_stamp(root: Path, config, asset_names: dict, tabs: list, version: str) -> tuple[str, str]:
    """Everything besides the page's own context that a page depends on: the code's and the
    bundled theme's version, site.yml, the assets' names, the header's tabs and the site's own
    templates, by content. Returns (the stamp of every page, the stamp of the pages that name
    the entries' signatures file), as digests; equal when every page names that file. The
    first does not depend on the signatures file's name when only `VOLATILE_TEMPLATE` names it
    (`volatile_only`): then it is the same without that name in `asset_names`."""
    from .render import theme_folder

    folders = [root / config.theme / "templates"] if config.theme else []
    templates = [(str(p.relative_to(root)), p.read_bytes())
                 for folder in folders if folder.is_dir() for p in sorted(folder.glob("*"))
                 if p.is_file() and not p.is_symlink()]
    bundled = [(p.name, p.read_bytes()) for p in sorted((theme_folder() / "templates").glob("*")) if p.is_file()]
    naming = _naming(templates + bundled)
    names = dict(asset_names)
    volatile = names.pop(VOLATILE_ASSET, "")
    common = repr((version, config.model_dump_json(), sorted(names.items()),
                   [(name, hashlib.sha256(text).hexdigest()) for name, text in templates], tabs))
    # hashed once here: the stamp is kilobytes (site.yml's settings), and part of every page's key
    naming_page = _digest(common + volatile)
    return (_digest(common) if naming <= {VOLATILE_TEMPLATE} else naming_page), naming_page


def _naming(templates: list[tuple[str, bytes]]) -> set[str]:
    return {Path(name).name for name, text in templates if VOLATILE_ASSET.encode() in text}


def volatile_only(root: Path, config) -> bool:
    """Does no template but `VOLATILE_TEMPLATE` name the signatures file (so that every other
    page can be keyed and rendered before that file is made)?"""
    from .render import theme_folder

    folders = ([root / config.theme / "templates"] if config.theme else []) + [theme_folder() / "templates"]
    templates = [(p.name, p.read_bytes()) for folder in folders if folder.is_dir() for p in sorted(folder.glob("*"))
                 if p.is_file() and not p.is_symlink()]
    return _naming(templates) <= {VOLATILE_TEMPLATE}


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=20).hexdigest()


def entry_page_key(stamps: tuple[str, str], loaded, links: list) -> str:
    """`page_key` of an entry's page, from the entry and its `render.entry_links` alone: what
    a build computes for every entry, while it makes only the pages it renders."""
    own = loaded.source_key or loaded.entry.model_dump_json()
    return _digest(repr((stamps[0], f"entries/{loaded.entry_id}/index.html", loaded.path, own, links)))


def page_key(page, stamps: tuple[str, str]) -> str | None:
    """A hash of everything `page` is rendered from, or None when that cannot be told (a value
    whose text form is not its content)."""
    stamp = stamps[1] if page.template == VOLATILE_TEMPLATE else stamps[0]
    if page.template == "entry.html":
        return entry_page_key(stamps, page.context["loaded"], page.context["links"])
    else:
        text = repr((stamp, page.path, page.template, page.title, page.description, page.sitemap, page.absolute,
                     sorted(page.context.items())))
        if " at 0x" in text:
            return None
    return _digest(text)
