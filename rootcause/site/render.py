"""Entries and pages → HTML, with jinja2 templates from the theme.

Every link is relative to the page that contains it, so one build works at a domain root, under
a sub-path (a GitHub Pages project site) and from a file share alike; `site.yml`'s `url` is
used only where absolute addresses are required (canonical links, sitemap, feed, OpenGraph).
A site owner overrides any template or asset by putting a file of the same name in the folder
named by `theme:` in site.yml.
"""

from __future__ import annotations

import heapq
import posixpath
import re
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generator, cast
from pathlib import Path, PurePosixPath

import jinja2
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment
from markupsafe import Markup

from .. import jsonbytes
from ..config import SiteConfig
from ..entries.catalog import LoadedEntry
from ..entries.claims import thread_label
from ..entries.study import UNCLASSIFIED, ClassCount, Report, tally
from ..errors import Diagnostic, RootcauseError, display_path
from ..files import Refused, bundled_theme, read_regular
from ..matching.readable import readable
from ..text import plain
from .content import ContentPage, inline, markdown
from .highlight import highlight, mark_matches

MATERIAL_ICONS = ("magnify", "content-copy", "brightness-auto", "weather-sunny", "weather-night", "github",
                  "pencil-outline", "bug-outline", "stethoscope", "rss", "check", "file-upload-outline",
                  "shield-lock-outline")


def theme_folder() -> Path:
    """The bundled theme (templates/ and assets/)."""
    return bundled_theme()


def material_folder() -> Path:
    import material

    return Path(material.__file__).parent / "templates"


@dataclass
class Page:
    """One output HTML file: where it goes, which template, what it shows."""

    path: str                      # relative output path, e.g. "entries/x/index.html"
    template: str
    title: str
    description: str = ""
    context: dict = field(default_factory=dict)
    sitemap: bool = True
    absolute: bool = False         # links from the site root path instead of relative ones

    @property
    def directory(self) -> str:
        parent = PurePosixPath(self.path).parent.as_posix()
        return "" if parent == "." else parent + "/"

    @property
    def root(self) -> str:
        """Relative prefix from this page to the site root."""
        depth = self.directory.count("/")
        return "../" * depth

    @property
    def url_path(self) -> str:
        """Path part of the page's address, relative to the site root (index.html dropped)."""
        return self.path[: -len("index.html")] if self.path.endswith("index.html") else self.path


@dataclass(frozen=True)
class Card:
    """What list, hub and home pages show of an entry: small, plain data (cached between builds)."""

    id: str
    title: str
    summary: str          # plain text
    severity: str
    category: str
    systems: tuple[str, ...]
    phase: str
    tags: tuple[str, ...]
    reviewed: str         # ISO date
    signature: str        # the first signature as a message, its variable parts named (`readable`); ""
                          # for a failure that prints no error (role: symptom)
    fix: str              # the first fix step (Markdown)
    plain_title: str      # the title as plain text (the 404 page's suggestions)
    key: str = field(init=False, repr=False, compare=False)     # set by __post_init__
    place: str = field(init=False, repr=False, compare=False)   # set by __post_init__

    @classmethod
    def of(cls, loaded: LoadedEntry) -> "Card":
        e = loaded.entry
        return cls(e.id, e.title, plain(e.summary), e.severity, e.category, tuple(e.systems), e.phase,
                   tuple(e.tags), e.reviewed.isoformat(), _readable(e.signatures[0]) if e.signatures else "", e.fix[0].step,
                   plain(e.title))

    def __post_init__(self) -> None:
        """`key`: its id and a hash of every field, what a page key holds of each card on the page
        (the key of a list of 200 cards is then hashed from 200 short texts, not 200 whole cards);
        `place`: the fields that decide which lists show it and where (`card_lists`)."""
        import hashlib

        fields = repr(tuple(getattr(self, name) for name, f in self.__dataclass_fields__.items() if f.init))
        digest = hashlib.blake2b(fields.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
        object.__setattr__(self, "key", f"Card({self.id!r}, {digest})")
        object.__setattr__(self, "place", repr((self.id, self.severity, self.title, self.category, self.phase,
                                                self.systems, self.tags, self.reviewed)) + "\n")

    def __repr__(self) -> str:
        return self.key


class Cards(list):
    """A list of cards in a page's context: its `repr` (what the page's key is hashed from) joins
    the cards' keys without a call per card (a list page shows up to 200 of them)."""

    def __repr__(self) -> str:
        return "Cards[" + ", ".join([card.key for card in self]) + "]"


def _readable(signature) -> str:
    """A signature as hub tables show it: each step's message with named placeholders, never a regex."""
    return "\n".join(readable(step.pattern) if step.pattern is not None else readable(step.regex, regex=True)
                     for step in (signature.lines or [signature]))


#: icons are same-origin SVG files painted by CSS masks (`.rc-icon`), cached by the browser; an
#: icon named here would instead be defined once per page as an inline sprite and referenced
SPRITE_ICONS: tuple[str, ...] = ()
ICON_FOLDER = "assets/icons/"


def material_icon_files() -> dict[str, Path]:
    """Material's SVG icons that the theme uses, by name (copied into the site at build time)."""
    folder = material_folder() / ".icons" / "material"
    return {name: folder / f"{name}.svg" for name in MATERIAL_ICONS if name not in SPRITE_ICONS}


def _icons() -> tuple[dict[str, Markup], Markup]:
    """Markup for each icon, and the sprite of repeated ones. No request leaves the site."""
    folder = material_folder() / ".icons" / "material"
    icons: dict[str, Markup] = {}
    symbols = []
    for name in MATERIAL_ICONS:
        if name in SPRITE_ICONS:
            svg = (folder / f"{name}.svg").read_text(encoding="utf-8").strip()
            inner = svg[svg.index(">") + 1: svg.rindex("</svg>")]
            symbols.append(f'<symbol id="rc-i-{name}" viewBox="0 0 24 24">{inner}</symbol>')
            icons[name] = Markup(f'<svg aria-hidden="true" focusable="false"><use href="#rc-i-{name}"></use></svg>')
        else:
            icons[name] = Markup(f'<span class="rc-icon rc-i-{name}" aria-hidden="true"></span>')
    sprite = Markup('<svg xmlns="http://www.w3.org/2000/svg" class="rc-sprite" aria-hidden="true">' + "".join(symbols)
                    + "</svg>") if symbols else Markup("")
    return icons, sprite


_INDENT = re.compile(r"\n[ \t]+")
_PRE = re.compile(r"(<(pre|textarea|script)\b.*?</\2>)", re.S)


def squeeze(html: str) -> str:
    """Drop the templates' indentation (outside <pre>, <textarea> and <script>): bytes no reader sees."""
    parts = _PRE.split(html)
    out = []
    for i, part in enumerate(parts):
        kind = i % 3
        if kind == 0:
            out.append(_INDENT.sub("\n", part))
        elif kind == 1:
            out.append(part)
    return "".join(out)


MAX_TEMPLATE_BYTES = 1 << 20
#: shipped in a <meta> of every page (base.html): nothing loads from another host, no inline
#: script or style runs, no plugin, no <base> (frame-ancestors cannot be set from a <meta>)
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "object-src 'none'; base-uri 'none'; form-action 'self'")


class TemplateLoader(jinja2.BaseLoader):
    """Templates by name from the site's theme folder, then the bundled one. Like jinja2's
    FileSystemLoader (no '..' in a name), and a template must be a regular file: a symbolic link,
    pipe or device is refused without being opened (see `rootcause.files`)."""

    def __init__(self, folders: list[Path]):
        self.folders = folders

    def get_source(self, environment, template):
        parts = jinja2.loaders.split_template_path(template)
        for folder in self.folders:
            path = folder.joinpath(*parts)
            try:
                data = read_regular(path, MAX_TEMPLATE_BYTES)
            except FileNotFoundError:
                continue
            except Refused as refused:
                raise jinja2.TemplateError(f"template {template}: {refused.message}") from None
            try:
                source = data.decode("utf-8")
            except UnicodeDecodeError:
                raise jinja2.TemplateError(f"template {template} is not UTF-8 text") from None
            return source, str(path), lambda: True  # a Renderer lives for one build
        raise jinja2.TemplateNotFound(template)


# -- what a theme's template may spend --------------------------------------------------------------
# A theme may come by pull request. jinja2's sandbox keeps its templates from Python's internals
# but not from the machine's time and memory: two nested `range(100000)` loops never end, and
# `'x' * 10**12` asks for a terabyte. So a sandboxed template runs within a budget per page (the
# build's own templates, without a theme folder, run outside the sandbox and are not limited):
# - time: PAGE_CPU_SECONDS of the thread's CPU time, checked at every loop iteration, macro,
#   block, template, call, attribute and operator (`_Sandbox.tick`, compiled into the template:
#   `_tick`), every TICKS_PER_CHECK ticks;
# - size: no string, list or number a template makes by repeating, joining, padding or
#   formatting may exceed MAX_SIZE characters, items or (numbers) bits, refused before it is
#   made; a page's output may not exceed MAX_PAGE_CHARS;
# - memory: where the system allows, the address space may not grow by more than
#   PAGE_MEMORY_BYTES while a page renders (`resource.RLIMIT_AS`), so that whatever the other
#   checks miss ends in a MemoryError, reported like the rest.
# A page over its budget fails the build with E041, naming the template file and line; the
# renderer then refuses every later page at once (a worker given a hundred such pages gives up
# after the first), and the last site stays as it was.
PAGE_CPU_SECONDS = 5.0
TICKS_PER_CHECK = 64
MAX_SIZE = 1 << 24
MAX_BITS = 1 << 16
MAX_PAGE_CHARS = 64 << 20
PAGE_MEMORY_BYTES = 1 << 30


class OverBudget(jinja2.TemplateError):
    """A sandboxed template went past its page's budget (`message`: what it spent, `fix`: how to
    stay within it)."""

    def __init__(self, message: str, fix: str):
        super().__init__(message)
        self.fix = fix


def _too_big(what: str, limit: int = MAX_SIZE) -> OverBudget:
    return OverBudget(f"the template makes {what}, more than the {limit:,} a template may make",
                      "make the value smaller: a theme's template renders the values it is given, "
                      "it does not build large ones")


def _sized(value):
    """`value`, once its size is known to be within MAX_SIZE (strings, lists, numbers)."""
    if isinstance(value, (str, bytes, list, tuple)) and len(value) > MAX_SIZE:
        raise _too_big(f"a string of {len(value):,} characters" if isinstance(value, str)
                       else f"a {type(value).__name__} of {len(value):,} items")
    if type(value) is int and value.bit_length() > MAX_BITS:
        raise _too_big(f"a number of {value.bit_length():,} bits", MAX_BITS)
    return value


def _small_numbers(values) -> None:
    """Refuses a number argument past MAX_SIZE (a width, a count, a repetition)."""
    for value in values:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > MAX_SIZE:
            raise _too_big(f"a width or count of {value:,.0f}")


_PRINTF_WIDTHS = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\d*)(?:\.(\d*))?")
_FORMAT_FIELD = re.compile(r"\{[^{}]*\}")
_NESTED_FIELD = re.compile(r"\{[^{}]*\{")
#: the filters whose number arguments are widths or counts (what they make grows with them)
_SIZING_FILTERS = frozenset({"center", "indent", "wordwrap", "truncate", "batch", "slice", "round"})


def _small_printf(spec: str, args) -> None:
    """A `%` format whose widths and precisions are within MAX_SIZE (those taken from the
    arguments, `%*d`, too)."""
    for match in _PRINTF_WIDTHS.finditer(spec):
        _small_numbers(int(digits) for digits in match.groups() if digits)
    if "*" in spec:
        _small_numbers(args.values() if isinstance(args, dict) else args if isinstance(args, tuple) else (args,))


def _small_format(spec: str, args, kwargs) -> None:
    """A `str.format` whose fields' widths are within MAX_SIZE (those taken from the arguments,
    `{:{}}`, too)."""
    for field_text in _FORMAT_FIELD.findall(spec):
        _small_numbers(int(digits) for digits in re.findall(r"\d+", field_text))
    if _NESTED_FIELD.search(spec):
        _small_numbers(args)
        _small_numbers(kwargs.values())


def _repeated_size(left, right) -> int | None:
    """The length of `left * right` when it repeats a sequence, before it is made."""
    for sequence, count in ((left, right), (right, left)):
        if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(count, (int, float)) \
                and not isinstance(count, bool):
            return int(len(sequence) * max(count, 0))
    return None


def _bounded_filter(env: "_Sandbox", name: str, function):
    """`function`, a filter, with its budget checked (see `_Sandbox.bound_filters`)."""
    import functools

    # the value filtered comes after what jinja2 passes first (context, eval context, environment)
    first = 2 if getattr(function, "jinja_pass_arg", None) is not None else 1

    @functools.wraps(function)
    def bounded(*args, **kwargs):
        env.tick()
        if name in _SIZING_FILTERS:
            _small_numbers(args[first:])
            _small_numbers(kwargs.values())
        if name == "join" and len(args) >= first:   # a thousand strings of MAX_SIZE, joined
            items = list(args[first - 1])
            glue = args[first] if len(args) > first else kwargs.get("d", "")
            size = sum(len(item) for item in items if isinstance(item, str)) + len(str(glue)) * len(items)
            if size > MAX_SIZE:
                raise _too_big(f"a string of {size:,} characters by joining")
            args = (*args[:first - 1], items, *args[first:])
        elif name == "format" and len(args) >= first and isinstance(args[first - 1], str):
            _small_printf(args[first - 1], kwargs or tuple(args[first:]))
        return _sized(function(*args, **kwargs))

    return bounded


def _tick(lineno: int) -> jinja2.nodes.ExprStmt:
    """A check of the page's budget, compiled at the start of every loop iteration, macro,
    block and template of a sandboxed template (`_Sandbox._parse`). jinja2 allows no node type
    of one's own: this is an expression statement (which templates cannot write: that takes the
    `do` extension) of a marker constant."""
    return jinja2.nodes.ExprStmt(jinja2.nodes.Const(_TICK, lineno=lineno), lineno=lineno)


_TICK = "__rootcause_tick"


class _BoundedCode(jinja2.compiler.CodeGenerator):
    """The sandbox's code: `_tick` calls the environment's `tick`, and `~` checks what it joins."""

    def visit_ExprStmt(self, node, frame) -> None:
        if isinstance(node.node, jinja2.nodes.Const) and node.node.value == _TICK:
            self.writeline("environment.tick()", node)
        else:
            super().visit_ExprStmt(node, frame)

    def visit_Concat(self, node, frame) -> None:
        self.write("environment.sized(")
        super().visit_Concat(node, frame)
        self.write(")")


class _Sandbox(SandboxedEnvironment):
    """jinja2's sandbox with its attribute test remembered per (type, name): the test reads only
    the name and, through isinstance, the object's class, which is its type unless a class
    in its MRO defines `__class__` (such types are tested every time). And with a budget per page
    (see PAGE_CPU_SECONDS above): `start_page` sets it, `tick` checks it."""

    code_generator_class = _BoundedCode
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._safe: dict[tuple[type, str], bool] = {}
        self._ticks = TICKS_PER_CHECK
        self._deadline = float("inf")
        self.sized = _sized

    # -- the budget
    def start_page(self) -> None:
        import time

        self._ticks = TICKS_PER_CHECK
        self._deadline = time.thread_time() + PAGE_CPU_SECONDS

    def tick(self) -> None:
        self._ticks -= 1
        if self._ticks > 0:
            return
        import time

        self._ticks = TICKS_PER_CHECK
        if time.thread_time() > self._deadline:
            self._deadline = float("-inf")   # every later check fails too, however it is caught
            raise OverBudget(f"the page took more than {PAGE_CPU_SECONDS:g} s of CPU time to render",
                             "make the template do less per page: no nested loops over large ranges, "
                             "no macro that calls itself without end")

    def _parse(self, source, name, filename):
        tree = super()._parse(source, name, filename)
        for node in tree.find_all((jinja2.nodes.For, jinja2.nodes.Macro, jinja2.nodes.CallBlock,
                                   jinja2.nodes.Block)):
            node.body.insert(0, _tick(node.lineno))
        tree.body.insert(0, _tick(1))
        return tree

    # -- every step a template takes
    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (jinja2's signature)
        __self.tick()
        if isinstance(getattr(__obj, "__self__", None), (str, bytes)):   # "x".ljust(10**9)
            _small_numbers(args)
            _small_numbers(kwargs.values())
        return _sized(super().call(__context, __obj, *args, **kwargs))

    def call_binop(self, context, operator, left, right):
        self.tick()
        if operator == "*":
            size = _repeated_size(left, right)
            if size is not None and size > MAX_SIZE:
                raise _too_big(f"a sequence of {size:,} items by repetition")
        elif operator == "**":
            if isinstance(left, int) and isinstance(right, int) and right > 0 \
                    and left.bit_length() * right > MAX_BITS:
                raise _too_big(f"a number of about {left.bit_length() * right:,} bits", MAX_BITS)
        elif operator == "%" and isinstance(left, str):
            _small_printf(left, right)
        return _sized(super().call_binop(context, operator, left, right))

    def getattr(self, obj, attribute):
        self.tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj, argument):
        self.tick()
        return super().getitem(obj, argument)

    def wrap_str_format(self, value):
        wrapper = super().wrap_str_format(value)
        if wrapper is None:
            return None
        spec = value.__self__
        is_map = value.__name__ == "format_map"

        def bounded(*args, **kwargs):
            _small_format(spec, () if is_map else args, args[0] if is_map and args and isinstance(args[0], dict)
                          else kwargs)
            return _sized(wrapper(*args, **kwargs))

        return bounded

    def bound_filters(self) -> None:
        """Every filter checked: its number arguments within MAX_SIZE, what it makes too (`join`
        and `format` before they make it)."""
        for name, function in list(self.filters.items()):
            self.filters[name] = _bounded_filter(self, name, function)


    def is_safe_attribute(self, obj, attr: str, value) -> bool:
        key = (type(obj), attr)
        safe = self._safe.get(key)
        if safe is None:
            safe = super().is_safe_attribute(obj, attr, value)
            if not any("__class__" in vars(kind) for kind in type(obj).__mro__[:-1]):
                self._safe[key] = safe
        return safe


class Renderer:
    def __init__(self, config: SiteConfig, root: Path, asset_names: dict[str, str],
                 content_tabs: Sequence[tuple[str, str]] = (), keep_compiled: bool = False):
        """`keep_compiled`: load and keep compiled templates in the user's cache folder
        (`template_cache`), as builds that write the build cache do (`--force` too: the code is
        checked against the template's source, so it is never stale); with the cache off they
        are compiled afresh."""
        self.config = config
        self.root = root
        folders = []
        if config.theme:  # checked by site.yml's loader: a folder inside the project
            folders.append(root / config.theme / "templates")
        folders.append(theme_folder() / "templates")
        # A theme folder comes with the site, possibly by pull request: its templates run in
        # jinja2's sandbox, where they can read the values they are given but reach no Python
        # internals (no `__globals__`, no `os`), so they cannot run commands during a build. Then
        # the bundled templates run there too (a theme overrides some and includes the others).
        # Without a theme folder only the bundled templates, part of this package, are rendered:
        # outside the sandbox, whose checks of every attribute and call cost a sixth of the time.
        from .template_cache import bytecode_cache

        self.env = (_Sandbox if config.theme else jinja2.Environment)(
            loader=TemplateLoader(folders),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            bytecode_cache=bytecode_cache(sandboxed=bool(config.theme)) if keep_compiled else None,
        )
        self.env.filters.update(markdown=markdown, inline=inline, plain=plain, tojson_ld=_json_ld,
                                thread_label=thread_label, highlight=highlight, mark_matches=mark_matches)
        icons, sprite = _icons()
        self.env.globals.update(site=config, vocab=config.vocabularies, icons=icons, sprite=sprite, assets=asset_names,
                                content_tabs=list(content_tabs), csp=CONTENT_SECURITY_POLICY)
        self.sandboxed = isinstance(self.env, _Sandbox)
        if isinstance(self.env, _Sandbox):
            self.env.bound_filters()
        self._over_budget: Diagnostic | None = None   # the first page that went past its budget

    def set_assets(self, asset_names: dict[str, str]) -> None:
        """The assets' names of this build (a renderer kept from the last build has its names)."""
        self.env.globals["assets"] = asset_names

    def render(self, page: Page) -> bytes:
        # a 404 page is served at any address, so only absolute paths work there
        root = self.config.base_path if page.absolute else page.root

        here = PurePosixPath(page.path).parent.as_posix()
        here_parts = _plain_parts(here) if here != "." else []

        def link(target: str) -> str:
            """A site-relative target ("entries/x/") as the shortest link relative to this page
            ("../x/" between two entries); from the 404 page, an absolute path."""
            if page.absolute or target.startswith("#"):
                return (root + target) if (root + target) else "./"
            path, hash_, fragment = target.partition("#")
            parts = _plain_parts(path) if type(target) is str and here_parts is not None else None
            if parts is None or here_parts is None:   # (parts is None when here_parts is)
                relative = posixpath.relpath(path or ".", here if here != "." else ".")
            else:  # what relpath gives for plain relative paths, without its two abspath calls
                shared = 0
                for mine, theirs in zip(parts, here_parts):
                    if mine != theirs:
                        break
                    shared += 1
                relative = "/".join([".."] * (len(here_parts) - shared) + parts[shared:]) or "."
            relative = "./" if relative == "." else relative + ("/" if path.endswith("/") or not path else "")
            return relative + hash_ + fragment

        if not self.sandboxed:
            try:
                template = self.env.get_template(page.template)
                html = template.render(page=page, link=link, root=root, **page.context)
            except jinja2.TemplateError as exc:
                raise RootcauseError([template_diagnostic(exc, page.template, self.root)]) from None
            return squeeze(html).encode("utf-8")
        if self._over_budget is not None:   # one page over budget fails the build: the others are not tried
            raise RootcauseError([self._over_budget])
        try:
            html = self._render_within_budget(page, link=link, root=root)
        except OverBudget as exc:
            self._over_budget = template_diagnostic(exc, page.template, self.root, page.path)
            raise RootcauseError([self._over_budget]) from None
        except MemoryError as exc:
            self._over_budget = template_diagnostic(exc, page.template, self.root, page.path)
            raise RootcauseError([self._over_budget]) from None
        except Exception as exc:   # noqa: BLE001 - a theme's template fails as positioned errors, never a traceback
            raise RootcauseError([template_diagnostic(exc, page.template, self.root)]) from None
        return squeeze(html).encode("utf-8")

    def _render_within_budget(self, page: Page, **names) -> str:
        """A sandboxed page, within its budget of time, memory and output (PAGE_CPU_SECONDS)."""
        limit = _limit_memory()
        sandbox = self.env
        assert isinstance(sandbox, _Sandbox)   # only a theme's templates run under a budget
        try:
            sandbox.start_page()
            template = sandbox.get_template(page.template)
            stream = cast(Generator[str, None, None], template.generate(page=page, **names, **page.context))
            parts = []
            size = 0
            for part in stream:
                size += len(part)
                if size > MAX_PAGE_CHARS:   # raised where the template is, for its line
                    stream.throw(OverBudget(f"the page's output exceeds {MAX_PAGE_CHARS >> 20} MiB",
                                            "make the template write less per page"))
                parts.append(part)
            return "".join(parts)
        finally:
            _restore_memory(limit)


def _limit_memory():
    """Caps this process's address space at its present size plus PAGE_MEMORY_BYTES, where the
    system has such a limit; returns what `_restore_memory` puts back (None: nothing was set)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm", "rb") as statm:
            used = int(statm.read().split()[0]) * resource.getpagesize()
        cap = used + PAGE_MEMORY_BYTES
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        if soft != resource.RLIM_INFINITY and soft <= cap:
            return None   # a tighter limit is in place already
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        return soft, hard
    except (ImportError, AttributeError, OSError, ValueError):   # no such limit here: the other checks stand
        return None


def _restore_memory(limit) -> None:
    if limit is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, limit)


def _plain_parts(path: str) -> list[str] | None:
    """The segments of a relative path that `posixpath.relpath` would not normalise (no '.',
    '..', empty or absolute segment; one trailing slash allowed), else None."""
    parts = path.split("/")
    if parts[-1] == "":
        parts.pop()
    if "" in parts or "." in parts or ".." in parts:
        return None
    return parts


def _json_ld(data: dict) -> Markup:
    """JSON-LD inside a <script type="application/ld+json"> block: escape '<' so it cannot close the tag."""
    text = jsonbytes.dumps(data, sort_keys=True).decode("utf-8").replace("<", "\\u003c")
    return Markup(text)


# -- what each entry page shows beyond the raw fields -------------------------------------------

def derived_faq(loaded: LoadedEntry, config: SiteConfig) -> list[tuple[str, str]]:
    """Questions answered from structured data, only where that data says something about this
    entry: whether a fix was released, when an `affected` range records the release that has it
    (and its note says what changed); what to search the logs for, when a signature is a message
    that `grep -F` finds as printed. Never "not fixed as of <date>" for want of data, and nothing
    to grep for a failure that prints no error (role: symptom)."""
    entry = loaded.entry
    questions: list[tuple[str, str]] = []
    systems = config.vocabularies.systems
    fixed = [a for a in entry.affected if a.fixed]
    if fixed:   # the Affected table lists the ranges; the FAQ answers the question readers ask
        parts: list[str] = []
        for a in fixed:
            name = systems[a.system].title if a.system in systems else a.system
            note = " ".join(a.note.split()) if a.note else ""
            parts.append(f"{'Yes, in' if not parts else 'In'} {name} {a.fixed} and later." + (f" {note}" if note else ""))
        questions.append(("Is it fixed upstream?", " ".join(parts)))
    texts = greppable_texts(loaded)
    if texts:
        grep = " ".join(f"-e {_shell_quote(text)}" for text in texts)
        questions.append(("What text should I search for in my logs?",
                          f"{_code(f'grep -n -F {grep} train.log')}, or paste the log into the diagnose page of this "
                          "site, which also tells which rank failed first."))
    return questions


#: the shortest literal text offered to `grep -F` as a message, once trimmed
GREPPABLE_MIN = 12
_TRIM = " \t,.:;'\"`"


def _trimmed(piece: str) -> str:
    """A literal piece without the punctuation and half brackets that cut it out of its line:
    ") is killed by signal: Killed. " → "is killed by signal: Killed"."""
    text = piece.strip(_TRIM)
    while text and (text[0] in ")]}" or text[-1] in "([{"):
        text = (text[1:] if text[0] in ")]}" else text[:-1]).strip(_TRIM)
    return text


def greppable_texts(loaded: LoadedEntry, limit: int = 3) -> list[str]:
    """Up to `limit` literal texts, one per signature, that `grep -F` finds in a log showing this
    failure: the longest literal piece of a single-line `pattern`, or of the pattern a multi-line
    signature names as its `alert_line` (the line that identifies the failure alone), trimmed of
    the punctuation around it. Regular expressions, the other lines of a multi-line signature
    (frames, context) and pieces too short to be a message give none."""
    if loaded.entry.role == "symptom":
        return []
    texts: list[str] = []
    for spec, compiled in zip(loaded.entry.signatures, loaded.signatures):
        if spec.pattern is not None:
            step = compiled.steps[0]
        elif spec.lines and spec.alert_line and spec.lines[spec.alert_line - 1].pattern is not None:
            step = compiled.steps[spec.alert_line - 1]
        else:
            continue
        text = _trimmed(step.anchor)
        if len(text) < GREPPABLE_MIN or not any(c.isalpha() for c in text):
            continue
        if any(chosen in text for chosen in texts):
            continue   # a grep for the shorter one finds this one's lines too
        texts = [chosen for chosen in texts if text not in chosen] + [text]
        if len(texts) == limit:
            break
    return texts


def _code(text: str) -> str:
    """A Markdown code span that survives backticks inside the text."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def entry_json_ld(loaded: LoadedEntry, config: SiteConfig, url: str) -> list[dict]:
    entry = loaded.entry
    article = {
        "@context": "https://schema.org",
        "@type": "TechArticle",
        "headline": entry.title,   # the description is the page's <meta name="description">
        "url": url,
        "datePublished": entry.published.isoformat(),
        "dateModified": entry.reviewed.isoformat(),
        "keywords": ", ".join([entry.category, *entry.systems, *entry.tags]),
        "author": [{"@type": "Organization" if "maintainers" in a else "Person", "name": a} for a in entry.authors]
        or [{"@type": "Organization", "name": config.title}],
        "publisher": {"@type": "Organization", "name": config.title},
    }
    # No FAQPage block: search engines show FAQ rich results only for a few authoritative
    # government and health sites since 2023, and the block repeated the page's FAQ (2-3 KB).
    return [article]


# -- the pages of a site ------------------------------------------------------------------------

def entry_links(entry_id: str, related: tuple, cards: dict[str, Card],
                incoming: dict[str, list[tuple[str, str]]]) -> tuple[list[tuple[str, Card]], int]:
    """What an entry page shows of the entries it links with: (relation, card) for its own links
    (`related`: its (id, relation) pairs), then for the links other entries make to it; and how
    many of them are its own."""
    own = [(relation, cards[target]) for target, relation in related if target in cards]
    own_links = {target for target, _relation in related}
    backlinks = [(_inverse(relation), cards[other]) for other, relation in incoming.get(entry_id, [])
                 if other not in own_links and other in cards]
    return own + backlinks, len(own)


def entry_page(loaded: LoadedEntry, config: SiteConfig, cards: dict[str, Card],
               incoming: dict[str, list[tuple[str, str]]]) -> Page:
    """The page of one entry. Depends on the entry and the cards of the entries it links with."""
    entry = loaded.entry
    base = config.base_url
    faq_own = [(q.question, q.answer) for q in entry.faq]
    faq_derived = derived_faq(loaded, config)
    links, own = entry_links(entry.id, tuple((r.id, r.relation) for r in entry.related), cards, incoming)
    url = base + f"entries/{entry.id}/"
    return Page(
        path=f"entries/{entry.id}/index.html", template="entry.html", title=entry.title,
        description=plain(entry.summary),
        context={"loaded": loaded, "entry": entry, "faq_own": faq_own, "faq_derived": faq_derived,
                 "links": links, "link_groups": _group_links(links, own, tuple(config.vocabularies.severities)),
                 "canonical": url,
                 "json_ld": entry_json_ld(loaded, config, url),
                 "edit_url": f"{config.repository.rstrip('/')}/edit/{config.branch}/{loaded.path}",
                 "source_url": f"{config.repository.rstrip('/')}/blob/{config.branch}/{loaded.path}",
                 "compact_examples": compact_examples(entry),
                 "report_url": _report_url(config, loaded)},
    )


#: links an entry page shows per relation that other entries declare towards it: a consequence
#: such as ChildFailedError is the target of dozens, and its page must stay small
BACKLINKS_SHOWN = 5
LINKS_PER_RELATION = 36   # a relation's line at most: the entry's own links, then backlinks up to it


def compact_examples(entry) -> int:
    """How short the first example log of each signature is cut around its match (`mark_matches`'
    `compact`; the others one step shorter, and at least to 3 lines): a page shows every example,
    real ones first, so one with many signatures cuts them shorter and stays within budget (the
    whole logs are in the entry's file)."""
    return min(3, max(0, len(entry.signatures) - 2))


def _group_links(links: list[tuple[str, "Card"]], own: int = 0,
                 severities: tuple[str, ...] = ()) -> list[tuple[str, list["Card"], int]]:
    """Links by relation, in the vocabulary's order of first appearance: one line per relation,
    with how many more there are. The first `own` links are the entry's own and always shown;
    declared by other entries, at most BACKLINKS_SHOWN per relation and no more than the line has
    room for (LINKS_PER_RELATION: a hub that lists dozens of causes itself stays within its page
    budget however many entries name it), the most severe first (in the order of site.yml's
    `severities`)."""
    rank = {key: i for i, key in enumerate(severities)}
    groups: dict[str, list[Card]] = {}
    incoming: dict[str, list[Card]] = {}
    for number, (relation, card) in enumerate(links):
        if card not in groups.setdefault(relation, []) and card not in incoming.get(relation, []):
            (groups[relation] if number < own else incoming.setdefault(relation, [])).append(card)
    out = []
    for relation, cards in groups.items():
        extra = sorted(incoming.pop(relation, []), key=lambda c: (rank.get(c.severity, len(rank)), c.title.lower()))
        room = max(0, min(BACKLINKS_SHOWN, LINKS_PER_RELATION - len(cards)))
        out.append((relation, cards + extra[:room], len(extra) - room))
    return out



def _inverse(relation: str) -> str:
    return {"caused-by": "causes", "causes": "caused-by"}.get(relation, relation)


def incoming_links(related: dict[str, tuple]) -> dict[str, list[tuple[str, str]]]:
    """entry id → [(id of an entry that links to it, relation)], from each entry's (id, relation)
    links (`catalog.related_of`), by id in order."""
    incoming: dict[str, list[tuple[str, str]]] = {}
    for other_id, links in related.items():
        for target, relation in links:
            incoming.setdefault(target, []).append((other_id, relation))
    return incoming


@dataclass(frozen=True)
class CardLists:
    """Which cards each list shows, by id and in order, and the counts the home and coverage
    pages show: all `aggregate_pages` reads of the cards besides the cards themselves. A
    function of each card's `place` alone (an edit of a card's summary leaves it as it is)."""

    every: tuple[str, ...]                            # most severe first, then by title
    by_category: dict[str, tuple[str, ...]]
    by_system: dict[str, tuple[tuple[str, str], ...]]   # (phase, id), grouped by phase
    by_tag: dict[str, tuple[str, ...]]
    recent: tuple[str, ...]
    counts: dict


def card_lists(config: SiteConfig, cards: dict[str, Card]) -> CardLists:
    vocab = config.vocabularies
    severity_order = {k: i for i, k in enumerate(vocab.severities)}
    # most severe first, then by title: sorted once, so that every list taken from it in order is
    # sorted too (the sort is stable: ties stay in id order, as sorting each list would leave them)
    every = sorted(cards.values(), key=lambda c: (severity_order[c.severity], c.title.lower()))

    counts: dict[str, Any] = {
        "categories": {k: 0 for k in vocab.categories}, "systems": {k: 0 for k in vocab.systems},
        "tags": {k: 0 for k in vocab.tags}, "phases": {k: 0 for k in vocab.phases},
        "severities": {k: 0 for k in vocab.severities},
        "matrix": {s: {p: 0 for p in vocab.phases} for s in vocab.systems},
    }
    by_category: dict[str, list[str]] = {k: [] for k in vocab.categories}
    by_system: dict[str, list[Card]] = {k: [] for k in vocab.systems}
    by_tag: dict[str, list[str]] = {k: [] for k in vocab.tags}
    # one pass over every card, with each table bound to a name
    of_category, of_phase, of_severity = counts["categories"], counts["phases"], counts["severities"]
    of_system, of_tag, matrix = counts["systems"], counts["tags"], counts["matrix"]
    for c in every:
        category, phase = c.category, c.phase
        of_category[category] += 1
        of_phase[phase] += 1
        of_severity[c.severity] += 1
        by_category[category].append(c.id)
        for s in c.systems:
            of_system[s] += 1
            matrix[s][phase] += 1
            by_system[s].append(c)
        for t in c.tags:
            of_tag[t] += 1
            by_tag[t].append(c.id)
    phase_order = {p: i for i, p in enumerate(vocab.phases)}
    # each system's cards grouped by phase, most severe first within one (a stable sort)
    systems = {key: tuple(sorted(((c.phase, c.id) for c in found), key=lambda row: phase_order[row[0]]))
               for key, found in by_system.items()}
    recent = heapq.nlargest(config.recent, every, key=lambda c: (c.reviewed, c.id))   # ids are unique: as a sort
    return CardLists(tuple(c.id for c in every), {k: tuple(v) for k, v in by_category.items()}, systems,
                     {k: tuple(v) for k, v in by_tag.items()}, tuple(c.id for c in recent), counts)


def lists_key(config: SiteConfig, cards: dict[str, Card]) -> str:
    """What `card_lists` is made from, hashed: each card's `place` and the settings it reads."""
    import hashlib

    digest = hashlib.sha256(repr((config.vocabularies, config.recent)).encode())
    digest.update("".join([card.place for card in cards.values()]).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def aggregate_pages(config: SiteConfig, cards: dict[str, Card], pages: list[ContentPage],
                    study: list[Report] | None = None, lists: CardLists | None = None) -> list[Page]:
    """Home, lists, hubs, coverage, frequency, search, diagnose, content pages, 404: built from
    cards (and the study's rows) only. `lists`: their `card_lists`, when made already."""
    vocab = config.vocabularies
    base = config.base_url
    lists = lists or card_lists(config, cards)
    counts = lists.counts
    every = [cards[i] for i in lists.every]
    total = len(every)
    recent = Cards([cards[i] for i in lists.recent])
    size = config.page_size
    planned = [Page("index.html", "home.html", config.title, config.description,
                    {"recent": recent, "counts": counts, "total": total, "threads": len(study or ()),
                     "canonical": base})]
    # the entries index: most severe first; once it runs over several pages, each page names the
    # page where every severity begins, and the first page keeps the #severity-<key> anchors that
    # entry pages link to (on the item of a severity that begins further on)
    begins: dict[str, int] = {}
    for n, c in enumerate(every):
        begins.setdefault(c.severity, n // size)
    for number, (directory, cards_here, pager) in enumerate(_paged("entries/", every, size)):
        starts = [(key, term, counts["severities"][key], _page_directory("entries/", begins[key]),
                   number == 0 and begins[key] != 0) for key, term in vocab.severities.items() if key in begins] \
            if pager else []
        planned.append(Page(directory + "index.html", "entries.html", _numbered("All entries", pager),
                            _numbered(f"All {total} entries.", pager),
                            {"by_severity": [(key, term, Cards([c for c in cards_here if c.severity == key]))
                                             for key, term in vocab.severities.items()],
                             "total": total, "pager": pager, "starts": starts, "canonical": base + directory}))
    for folder, key, heading, term, ids in (
            [("categories", key, term.title, term, lists.by_category[key]) for key, term in vocab.categories.items()] +
            [("tags", key, f"Tag: {term.title}", term, lists.by_tag[key]) for key, term in vocab.tags.items()]):
        items = [cards[i] for i in ids]
        for directory, cards_here, pager in _paged(f"{folder}/{key}/", items, size):
            planned.append(Page(directory + "index.html", "list.html", _numbered(heading, pager), term.description,
                                {"heading": heading, "intro": term.description, "items": Cards(cards_here),
                                 "total": len(items), "pager": pager, "canonical": base + directory},
                                sitemap=folder == "categories" or bool(items)))
    for key, term in vocab.systems.items():
        # grouped by phase, most severe first within one: paged in that order, and each page's
        # phase links go to the page where the phase begins
        rows = [(p, cards[i]) for p, i in lists.by_system[key]]
        first: dict[str, int] = {}
        for n, (p, _c) in enumerate(rows):
            first.setdefault(p, n // size)
        phase_counts = {p: 0 for p in vocab.phases}
        for p, _c in rows:
            phase_counts[p] += 1
        for number, (directory, rows_here, pager) in enumerate(_paged(f"systems/{key}/", rows, size)):
            nav = [(p, vocab.phases[p], phase_counts[p],
                    None if first[p] == number else _page_directory(f"systems/{key}/", first[p])) for p in first]
            by_phase = [(p, phase, Cards([c for q, c in rows_here if q == p])) for p, phase in vocab.phases.items()]
            planned.append(Page(directory + "index.html", "system.html", _numbered(term.title, pager), term.description,
                                {"system_key": key, "system": term, "items": Cards([c for _p, c in rows_here]), "total": len(rows),
                                 "phase_nav": nav,
                                 "by_phase": [group for group in by_phase if group[2]], "pager": pager,
                                 "canonical": base + directory}))
    planned.append(Page("coverage/index.html", "coverage.html", "Coverage",
                        "How many entries cover each system, category and phase.",
                        {"counts": counts, "total": total, "canonical": base + "coverage/"}))
    if study:
        planned.append(frequency_page(config, cards, study))
    planned.append(Page("search/index.html", "search.html", "Search", "Search error messages and symptoms.",
                        {"canonical": base + "search/"}))
    planned.append(diagnose_page(config))
    for content in pages:
        planned.append(Page(f"{content.slug}/index.html", "page.html", content.title, content.description,
                            {"content": content, "canonical": base + f"{content.slug}/",
                             "edit_url": f"{config.repository.rstrip('/')}/edit/{config.branch}/{content.source}"}))
    script = Markup(not_found_script())
    planned.append(Page("404.html", "404.html", "Page not found", "",
                        {"canonical": base + "404.html", "inline_script": script, "inline_hash": script_hash(script),
                         "suggest": [[i, cards[i].plain_title] for i in sorted(cards)]},
                        sitemap=False, absolute=True))
    return planned


def _page_directory(directory: str, number: int) -> str:
    """The folder of page `number` (from 0) of a list whose first page is `directory`."""
    return directory if number == 0 else f"{directory}page/{number + 1}/"


def _paged(directory: str, items: list, size: int) -> list[tuple[str, list, dict | None]]:
    """A list cut into pages of `size`: each page's folder, its items and its pager (None when
    the list fits on one page, so that a short list renders as it always did). The pager names
    the first and last page, two on either side of this one, and None for a gap."""
    count = max(1, -(-len(items) // size))
    if count == 1:
        return [(directory, items, None)]
    pages: list[tuple[str, list, dict | None]] = []
    for number in range(count):
        shown = sorted({0, count - 1, *range(max(0, number - 2), min(count, number + 3))})
        links: list[tuple[int | None, str | None]] = []
        for before, n in zip([None, *shown], shown):
            if before is not None and n != before + 1:
                links.append((None, None))
            links.append((n + 1, _page_directory(directory, n)))
        pages.append((_page_directory(directory, number), items[number * size:(number + 1) * size],
                      {"number": number + 1, "count": count, "links": links,
                       "first": number * size + 1, "last": min(len(items), (number + 1) * size),
                       "prev": _page_directory(directory, number - 1) if number else None,
                       "next": _page_directory(directory, number + 1) if number + 1 < count else None}))
    return pages


def _numbered(text: str, pager: dict | None) -> str:
    """A page's title or description, with its page number when the list runs over several."""
    if pager is None or pager["number"] == 1:
        return text
    return f"{text.rstrip('.')}, page {pager['number']} of {pager['count']}" + ("." if text.endswith(".") else "")


def diagnose_page(config: SiteConfig) -> Page:
    """The one page that names the entries' signatures file (its address carries the file's hash)."""
    return Page("diagnose/index.html", "diagnose.html", "Diagnose a log",
                "Paste a training log and find the failures it shows, in your browser.",
                {"canonical": config.base_url + "diagnose/"})


FREQUENCY_TITLE = "What people hit"
FREQUENCY_LINKS = 5   # threads linked per class and system; the table in the repository has them all
#: classes drawn as bars at the top of the frequency page, at most: fewer where the next class has
#: as many threads as the last one drawn, so that a tie is never cut by the order of names
CHART_BARS = 20


@dataclass(frozen=True)
class ChartBar:
    """One class's bar in the frequency page's picture. The picture has no viewBox, so that its
    text keeps the page's size at any width: lengths are in % of its width, heights in em."""

    failure: str
    count: int
    covered: bool   # an entry explains it
    width: str      # the bar's length
    top: str        # the top of its row


@dataclass(frozen=True)
class FrequencyChart:
    """The picture that opens the frequency page: one bar of the threads that show their failure,
    the part of them an entry explains filled; under it the classes reported most, one bar each."""

    threads: int
    covered: int
    covered_width: str
    bars: tuple[ChartBar, ...]
    least: int       # threads of the shortest class bar
    height: str


#: where the class bars begin (under the share bar and the line naming them) and the height of
#: each one's row (its name over its bar), in em
_CLASSES_TOP, _CLASS_ROW = 5.8, 2.6


def frequency_chart(classified: list[ClassCount], cards: dict[str, Card]) -> FrequencyChart:
    """`classified`: the study's classes that name a failure, most reported first (`tally`)."""
    drawn = classified[:CHART_BARS]
    if len(classified) > CHART_BARS:
        drawn = [c for c in drawn if c.count > classified[CHART_BARS].count] or drawn
    longest = max((c.count for c in drawn), default=1)
    threads = sum(c.count for c in classified)
    covered = sum(c.count for c in classified if c.failure in cards)
    # 88 %: the longest bar leaves room for its count after it
    bars = tuple(ChartBar(c.failure, c.count, c.failure in cards, f"{88 * c.count / longest:.2f}",
                          f"{_CLASSES_TOP + n * _CLASS_ROW:.2f}") for n, c in enumerate(drawn))
    return FrequencyChart(threads, covered, f"{100 * covered / threads if threads else 0:.2f}", bars,
                          drawn[-1].count if drawn else 0, f"{_CLASSES_TOP + len(bars) * _CLASS_ROW:.2f}")


def frequency_page(config: SiteConfig, cards: dict[str, Card], study: list[Report]) -> Page:
    """What people report, per system: classes by count, the entry that covers each (or none yet)."""
    tallies = tally(study)
    overall = tallies.pop("")
    classified = [c for c in overall if c.failure not in UNCLASSIFIED]
    chart = frequency_chart(classified, cards)
    systems = [(key, term, tallies[key]) for key, term in config.vocabularies.systems.items() if key in tallies]
    named = {c.failure for c in overall} | {c.failure for _key, _term, rows in systems for c in rows}
    return Page("frequency/index.html", "frequency.html", FREQUENCY_TITLE,
                f"The failures {len(study)} public issue threads report, per system, and the entries that cover them.",
                {"overall": overall, "systems": systems, "threads": len(study),
                 "cards": {failure: cards[failure] for failure in sorted(named) if failure in cards},
                 "unclassified": UNCLASSIFIED,
                 "gaps": [c for c in classified if c.failure not in cards and c.count >= 3],
                 "links": FREQUENCY_LINKS, "repository": config.repository.rstrip("/"), "branch": config.branch,
                 "folder": config.study, "chart": chart, "canonical": config.base_url + "frequency/"})


def header_tabs(content_pages: list[ContentPage], study: list[Report]) -> list[tuple[str, str]]:
    """The header's tabs after its own (home, entries, diagnose, coverage), as (folder, label):
    the frequency page when the study has a row (as `aggregate_pages` makes it), then each
    content page with a `tab`. Part of every page's key (`render_stamp`): every page has the header."""
    return ([("frequency", FREQUENCY_TITLE)] if study else []) + [(c.slug, c.tab) for c in content_pages if c.tab]


def not_found_script() -> str:
    """The 404 page's script, inlined: at a domain root or under `serve` the page's own links to
    scripts cannot work until it has moved them (theme/assets/not-found.js says how)."""
    return (theme_folder() / "assets" / "not-found.js").read_text(encoding="utf-8").replace("</", "<\\/")


def script_hash(script: str) -> str:
    """The CSP source expression that allows exactly this inline script."""
    import base64
    import hashlib

    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


def _report_url(config: SiteConfig, loaded: LoadedEntry) -> str:
    from urllib.parse import quote

    title = quote(f"Problem with entry: {loaded.entry.id}")
    body = quote(f"Entry: {loaded.path}\n\nWhat is wrong or missing:\n\n")
    return f"{config.repository.rstrip('/')}/issues/new?title={title}&body={body}"


def check_templates(renderer: Renderer, planned: list[Page], rendered: dict | None = None) -> list[Diagnostic]:
    """Render each template once so a broken override is reported, not a traceback (the pages
    rendered on the way go into `rendered`, by path, for the caller to use)."""
    problems = []
    seen = set()
    for page in planned:
        if page.template in seen:
            continue
        seen.add(page.template)
        try:
            data = renderer.render(page)
            if rendered is not None:
                rendered[page.path] = data
        except RootcauseError as error:
            problems.extend(error.diagnostics)
    return problems


def template_diagnostic(exc: Exception, template: str, root: Path, page_path: str = "") -> Diagnostic:
    if isinstance(exc, jinja2.TemplateSyntaxError):
        where = display_path(Path(exc.filename), root) if exc.filename else (exc.name or template)
        return Diagnostic(where, exc.lineno or 1, 1, "E041", exc.message or "syntax error",
                          "fix the template syntax")
    where, line = template, 1
    for frame in traceback.extract_tb(exc.__traceback__):  # jinja2 maps frames to template lines
        if frame.filename.endswith(".html") and frame.lineno:
            where, line = display_path(Path(frame.filename), root), frame.lineno
            if where.startswith("/"):  # a bundled template: its name is enough
                where = Path(frame.filename).name
    if isinstance(exc, SecurityError):
        return Diagnostic(where, line, 1, "E041", f"the template reached outside the sandbox: {exc}",
                          "templates may use the values they are given, not Python internals")
    if isinstance(exc, OverBudget):
        return Diagnostic(where, line, 1, "E041", f"{exc} (page {page_path})" if page_path else str(exc), exc.fix)
    if isinstance(exc, MemoryError):
        return Diagnostic(where, line, 1, "E041", f"the page needed more than {PAGE_MEMORY_BYTES >> 20} MiB of memory "
                          f"to render" + (f" (page {page_path})" if page_path else ""),
                          "make the template build smaller values")
    if isinstance(exc, RecursionError):
        return Diagnostic(where, line, 1, "E041", "the template calls or includes itself without end",
                          "give the macro or include a case that stops")
    if not isinstance(exc, jinja2.TemplateError):
        return Diagnostic(where, line, 1, "E041", f"the template failed: {type(exc).__name__}: {exc}",
                          "fix the template")
    return Diagnostic(where, line, 1, "E041", str(exc), "fix the template")
