"""Compiled templates kept between processes, in the user's own cache folder.

Compiling the theme's templates costs every fresh process time that a small build notices.
jinja2 can keep the compiled code
(`FileSystemBytecodeCache`); it loads it with `marshal` and `pickle`, so whoever can write that
folder can run code in the next build. That is why it is never under
the project, where a pull request could add files: it is `$XDG_CACHE_HOME/rootcause/`
(`~/.cache/rootcause/` by default), a folder only this user can write, checked to be theirs and
closed to others before it is used. jinja2 compiles a template again whenever its source differs
from the one the code was made from (the source's SHA-1 is stored with it), or another jinja2 or
Python made it. The folder's name also carries the environment's kind (plain or sandboxed, whose
code differs) and a hash of the module that sets the environment's options, so that code made
under other options is never loaded. A file that cannot be read or written is compiled again,
never an error.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import jinja2

from ..cache import mark_used, user_cache_folder


class _Tolerant(jinja2.FileSystemBytecodeCache):
    """jinja2's cache, for which an unreadable or damaged file is a miss and an unwritable folder
    is no cache."""

    def load_bytecode(self, bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:   # cut short, or not what jinja2 wrote: compiled again
            bucket.reset()

    def dump_bytecode(self, bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _options_digest() -> str:
    """A hash of `render.py`, the module that sets the environments' options."""
    return hashlib.sha256(Path(__file__).with_name("render.py").read_bytes()).hexdigest()[:16]


def bytecode_cache(sandboxed: bool) -> jinja2.BytecodeCache | None:
    """The cache for one kind of environment, or None when there is no folder of this user's own
    to keep it in (`cache.user_cache_folder`)."""
    kind = "sandboxed" if sandboxed else "plain"
    tag = f"{jinja2.__version__}-py{sys.version_info[0]}{sys.version_info[1]}-{_options_digest()}"
    folder = user_cache_folder(f"templates-{kind}-{tag}")
    if folder is not None:
        mark_used(folder)   # `cache.sweep` removes template caches idle for a month
    return _Tolerant(os.fspath(folder), "%s.cache") if folder is not None else None
