"""Issue 9, item 2: symbolic links and special files among a project's files are refused, never read.

A link to /dev/zero read without end, a dangling or looping link gave a traceback, a link to
/etc/passwd echoed that file's first line in the error, a link to an entry outside the
repository was published, and a FIFO blocked `check` forever. Each is now E008 at path:1:1,
within a bounded time, and the site already built is left as it was. Links and FIFOs are made
here, in tmp_path (git holds no FIFO, and no link pointing out of the repository is committed).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from conftest import REPO, SEED_ENTRY, run_cli

TIMEOUT = 60  # seconds: every command here must end, whatever the files are
PASSWD = Path("/etc/passwd")


def site_files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def built(project: Path) -> dict[str, bytes]:
    result = run_cli("--root", str(project), "build", "-q", timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr.decode()
    return site_files(project / "site")


def e008(path: str, kind: str) -> str:
    return f"{path}:1:1: error[E008]: is {kind}, not a regular file; it was not read"


def test_links_pipes_and_folders_among_entries_are_refused_unread(small_project: Path, tmp_path: Path):
    before = built(small_project)
    entries = small_project / "entries"
    outside = tmp_path / "outside-the-repository"
    outside.mkdir()
    shutil.copy(REPO / "entries" / "cuda-out-of-memory.yaml", outside / "cuda-out-of-memory.yaml")
    (entries / "zero.yaml").symlink_to("/dev/zero")
    (entries / "dangling.yaml").symlink_to(tmp_path / "no-such-file.yaml")
    (entries / "loop.yaml").symlink_to("loop.yaml")
    (entries / "passwd.yaml").symlink_to(PASSWD)
    (entries / "cuda-out-of-memory.yaml").symlink_to(outside / "cuda-out-of-memory.yaml")
    os.mkfifo(entries / "pipe.yaml")  # nobody ever writes to it: opening it to read would block
    (entries / "folder.yaml").mkdir()

    result = run_cli("--root", str(small_project), "check", timeout=TIMEOUT)
    assert result.returncode == 1
    out = result.stdout.decode()
    assert [line.split(" — ")[0] for line in out.splitlines()] == sorted([
        e008("entries/cuda-out-of-memory.yaml", "a symbolic link"),
        e008("entries/dangling.yaml", "a symbolic link"),
        e008("entries/folder.yaml", "a folder"),
        e008("entries/loop.yaml", "a symbolic link"),
        e008("entries/passwd.yaml", "a symbolic link"),
        e008("entries/pipe.yaml", "a named pipe"),
        e008("entries/zero.yaml", "a symbolic link"),
    ])
    first_line = PASSWD.read_text().splitlines()[0] if PASSWD.exists() else "root:x:0:0"
    assert first_line not in out + result.stderr.decode()  # nothing of a link's target is echoed
    assert str(tmp_path) not in out  # nor where it points

    result = run_cli("--root", str(small_project), "build", timeout=TIMEOUT)
    assert result.returncode == 1
    assert e008("entries/cuda-out-of-memory.yaml", "a symbolic link") in result.stderr.decode()
    after = site_files(small_project / "site")
    assert after == before  # the outside entry is not published; the site built before is whole
    assert "entries/cuda-out-of-memory/index.html" not in after


def test_links_and_pipes_in_content_healthy_logs_and_theme_are_refused(small_project: Path):
    before = built(small_project)
    (small_project / "content" / "passwd.md").symlink_to(PASSWD)
    os.mkfifo(small_project / "content" / "pipe.md")
    healthy = small_project / "healthy"
    healthy.mkdir()
    (healthy / "zero.log").symlink_to("/dev/zero")
    os.mkfifo(healthy / "pipe.log")
    theme = small_project / "my-theme"
    (theme / "templates").mkdir(parents=True)
    (theme / "assets").mkdir()
    (theme / "templates" / "404.html").symlink_to(PASSWD)
    os.mkfifo(theme / "assets" / "extra.css")
    site_yml = small_project / "site.yml"
    site_yml.write_text(site_yml.read_text() + "theme: my-theme\nhealthy_logs: healthy\n")

    expected = sorted([
        e008("content/passwd.md", "a symbolic link"),
        e008("content/pipe.md", "a named pipe"),
        e008("healthy/pipe.log", "a named pipe"),
        e008("healthy/zero.log", "a symbolic link"),
        e008("my-theme/assets/extra.css", "a named pipe"),
        e008("my-theme/templates/404.html", "a symbolic link"),
    ])
    result = run_cli("--root", str(small_project), "check", timeout=TIMEOUT)
    assert result.returncode == 1
    assert [line.split(" — ")[0] for line in result.stdout.decode().splitlines()] == expected
    result = run_cli("--root", str(small_project), "build", timeout=TIMEOUT)
    assert result.returncode == 1
    assert e008("healthy/zero.log", "a symbolic link") in result.stderr.decode()
    assert site_files(small_project / "site") == before


def test_a_theme_refuses_links_even_once_the_rest_is_clean(small_project: Path):
    """With entries, pages and logs clean, a linked template still stops the build (it is never
    handed to jinja2, which would follow it)."""
    before = built(small_project)
    theme = small_project / "my-theme" / "templates"
    theme.mkdir(parents=True)
    (theme / "entry.html").symlink_to(PASSWD)
    site_yml = small_project / "site.yml"
    site_yml.write_text(site_yml.read_text() + "theme: my-theme\n")
    result = run_cli("--root", str(small_project), "build", timeout=TIMEOUT)
    assert result.returncode == 1
    assert result.stderr.decode().startswith(e008("my-theme/templates/entry.html", "a symbolic link"))
    assert site_files(small_project / "site") == before


def test_site_yml_and_the_entries_folder_must_not_lead_elsewhere(small_project: Path, tmp_path: Path):
    before = built(small_project)
    site_yml = small_project / "site.yml"
    real = tmp_path / "real-site.yml"
    site_yml.rename(real)
    site_yml.symlink_to("/dev/zero")
    for verb in ("check", "build"):
        result = run_cli("--root", str(small_project), verb, timeout=TIMEOUT)
        assert result.returncode == 1
        assert e008("site.yml", "a symbolic link") in (result.stdout + result.stderr).decode()
    site_yml.unlink()
    real.rename(site_yml)

    elsewhere = tmp_path / "elsewhere"
    (small_project / "entries").rename(elsewhere)
    (small_project / "entries").symlink_to(elsewhere)
    result = run_cli("--root", str(small_project), "check", timeout=TIMEOUT)
    assert result.returncode == 1
    assert result.stdout.decode().startswith("entries/:1:1: error[E008]: the entries/ folder is a symbolic link "
                                             "leading out of the project")
    assert site_files(small_project / "site") == before


def test_reading_a_regular_file_is_bounded_and_never_follows_a_link(tmp_path: Path):
    """The reader under all of the above, directly: a link is refused before its target is opened
    (a FIFO behind a link would block), a file over the limit is refused by its size."""
    import pytest

    from rootcause.files import Refused, read_regular

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    (tmp_path / "link").symlink_to(pipe)
    for name, kind in (("pipe", "a named pipe"), ("link", "a symbolic link")):
        with pytest.raises(Refused) as refused:
            read_regular(tmp_path / name, 1024)
        assert (refused.value.code, refused.value.message) == ("E008", f"is {kind}, not a regular file; it was not read")
    (tmp_path / "big").write_bytes(b"x" * 2048)
    with pytest.raises(Refused) as refused:
        read_regular(tmp_path / "big", 1024)
    assert refused.value.code == "E002"
    assert read_regular(SEED_ENTRY, 1 << 20) == SEED_ENTRY.read_bytes()
