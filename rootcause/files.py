"""Reading files that arrive by pull request: regular files inside the project, and nothing else.

Entries, content pages, `site.yml`, healthy logs and theme files come from contributors. A
symbolic link among them could point at `/dev/zero` (a read without end), at `/etc/passwd`
(whose first line would be echoed in an error message), at an entry outside the repository
(which would be published), or nowhere at all; a named pipe would block a read forever. So
every such file is looked at with `lstat` first and opened with `O_NOFOLLOW | O_NONBLOCK`: a
symbolic link, folder, pipe, device or socket is refused (E008) without its target ever being
opened, and a regular file is read to a byte limit only. Folders named in `site.yml` must
resolve to a folder inside the project (E017).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePath

from .errors import Diagnostic

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def kind_of(mode: int) -> str:
    """What a file is, in words, from its `st_mode`."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


class Refused(Exception):
    """A file that cannot be used: not a regular file (E008), too large (E002) or unreadable (E001)."""

    def __init__(self, code: str, message: str, hint: str):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint

    def diagnostic(self, shown: str) -> Diagnostic:
        return Diagnostic(shown, 1, 1, self.code, self.message, self.hint)


def not_regular(kind: str) -> Refused:
    if kind == "a symbolic link":
        hint = "commit the file itself, not a link to it: a link is never followed"
    elif kind == "a folder":
        hint = "rename or move the folder: only files are read here"
    else:
        hint = "remove it: only regular files are read"
    return Refused("E008", f"is {kind}, not a regular file; it was not read", hint)


def read_regular(path: Path, limit: int, too_large_hint: str = "") -> bytes:
    """The bytes of a regular file of at most `limit` bytes, never through a symbolic link and
    never blocking. Raises Refused; a missing file raises FileNotFoundError."""
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Refused("E001", f"cannot read file: {exc.strerror}", "check that the file exists and is readable") from None
    if not stat.S_ISREG(before.st_mode):
        raise not_regular(kind_of(before.st_mode))
    if before.st_size > limit:
        raise _too_large(before.st_size, limit, too_large_hint)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP: replaced by a link since the lstat
        raise Refused("E001", f"cannot read file: {exc.strerror}", "check that the file exists and is readable") from None
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode):
            raise not_regular(kind_of(now.st_mode))
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise Refused("E001", f"cannot read file: {exc.strerror}", "check that the file exists and is readable") from None
    finally:
        os.close(fd)
    if size > limit:
        raise _too_large(size, limit, too_large_hint)
    return b"".join(chunks)


def _too_large(size: int, limit: int, hint: str) -> Refused:
    return Refused("E002", f"file is {size:,} bytes; the limit is {limit:,}", hint or "make the file smaller")


def is_inside(root: Path, path: Path) -> bool:
    """Does `path`, with every symbolic link resolved, lie within `root` (itself resolved)?"""
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def relative_path_problem(value: str) -> str | None:
    """Why a folder named in site.yml is not a plain relative path, or None when it is one."""
    if not value.strip():
        return "is empty"
    if "\x00" in value:
        return "holds a NUL character"
    pure = PurePath(value)
    if pure.is_absolute() or value.startswith(("/", "\\", "~")) or (len(value) > 1 and value[1] == ":"):
        return "is an absolute path"
    if ".." in pure.parts or ".." in value.replace("\\", "/").split("/"):
        return "climbs out with '..'"
    return None


def folder_problem(root: Path, value: str) -> str | None:
    """Why `value` (from site.yml) does not name a folder inside the project, or None."""
    problem = relative_path_problem(value)
    if problem:
        return problem
    folder = root / value
    if not is_inside(root, folder):
        return "leads out of the project folder (through a symbolic link)"
    try:
        mode = os.stat(folder).st_mode
    except OSError:
        return "does not exist"
    if not stat.S_ISDIR(mode):
        return "is not a folder"
    return None


def walk_regular(folder: Path, shown_root: Path, limit_files: int = 100_000) -> tuple[list[Path], list[Diagnostic]]:
    """Every regular file under `folder`, sorted, without following symbolic links; each link,
    pipe, device or socket met is a diagnostic (E008), named relative to `shown_root`."""
    files: list[Path] = []
    problems: list[Diagnostic] = []
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                if entry.name != "__pycache__":
                    stack.append(path)
            elif stat.S_ISREG(mode):
                files.append(path)
                if len(files) > limit_files:
                    problems.append(Diagnostic(_shown(folder, shown_root), 1, 1, "E002",
                                               f"more than {limit_files:,} files in this folder",
                                               "a theme or log folder holds a few files"))
                    return sorted(files), problems
            else:
                problems.append(not_regular(kind_of(mode)).diagnostic(_shown(path, shown_root)))
    return sorted(files), problems


def _shown(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def bundled_theme() -> Path:
    """The theme that comes with rootcause (templates/ and assets/): the `theme/` folder of the
    checkout this package was imported from when it is a source checkout (so that a second
    checkout, such as a git worktree run with PYTHONPATH, renders its own templates rather than
    those of the checkout an editable install points at), else the installed `rootcause.theme`."""
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "theme" / "templates" / "entry.html").is_file():
        return checkout / "theme"
    from importlib import resources

    return Path(str(resources.files("rootcause.theme")))
