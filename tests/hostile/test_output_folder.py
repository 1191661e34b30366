"""Issue 9, item 3: builds into one output folder cannot corrupt it, for a while or for good.

Two concurrent builds with different inputs both exited 0 and left a mixed site, which a later
`build --force` kept ("0 written"): reuse trusted the manifest, not the bytes. A file corrupted by
hand was never repaired, and staging folders of killed builds stayed forever. Now one build at a
time holds a lock next to the output, a reused file is compared byte for byte first, `--force`
reuses nothing, and leftovers of dead builds are removed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO, SEED_ENTRY, make_project, run_cli

TIMEOUT = 120


def files_of(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def assert_whole(out: Path, *projects: Path) -> dict:
    """The folder is exactly what the state of the last build into it says (kept in the
    building project's store, not in the folder): every listed file with its hash,
    no other."""
    from rootcause.site.write import read_manifest

    states = [read_manifest(out, project) for project in projects or (out.parent,)]
    manifest = max(states, key=lambda state: state.get("written_ns", -1))
    files = files_of(out)
    assert sorted(files) == sorted(manifest["files"])
    wrong = [name for name, data in files.items()
             if hashlib.sha256(data).hexdigest()[:32] != manifest["files"][name]]
    assert wrong == [], wrong[:5]
    return manifest


def project_with_title(folder: Path, title: str) -> Path:
    project = make_project(folder)
    text = SEED_ENTRY.read_text(encoding="utf-8")
    text = text[:text.index("\nrelated:")] + text[text.index("\nreferences:"):]
    text = text.replace("\ntitle: ", f"\ntitle: {title} ", 1)
    (project / "entries" / SEED_ENTRY.name).write_text(text, encoding="utf-8")
    return project


def start_build(project: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rootcause", "--root", str(project), "build", "-q",
                             "--out", str(out), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(process: subprocess.Popen) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=TIMEOUT)
    assert b"Traceback" not in err, err.decode()
    return process.returncode, out.decode(), err.decode()


def entry_title(out: Path) -> str:
    page = (out / "entries" / SEED_ENTRY.stem / "index.html").read_text(encoding="utf-8")
    return re.search(r"<h1[^>]*>(\S+)", page).group(1)


def test_concurrent_builds_of_different_inputs_leave_one_whole_site_and_force_rebuilds_it(tmp_path: Path):
    first = project_with_title(tmp_path / "first", "FIRST")
    second = project_with_title(tmp_path / "second", "SECOND")
    out = tmp_path / "shared" / "site"
    for _round in range(2):  # the second round starts from a site one of them wrote
        builds = [start_build(first, out), start_build(second, out)]
        results = [finish(b) for b in builds]
        assert [code for code, _out, _err in results] == [0, 0], results
        assert_whole(out, first, second)
        assert entry_title(out) in ("FIRST", "SECOND")
    assert [p.name for p in out.parent.iterdir() if ".staging-" in p.name or ".old-" in p.name] == []
    assert not (out / ".site.lock").exists() and (out.parent / ".site.lock").exists()  # not deployed

    code, summary, _err = finish(start_build(first, out, "--force"))
    assert code == 0
    assert ", 0 unchanged)" in summary  # --force writes every file anew
    reference = tmp_path / "reference"
    assert finish(start_build(first, reference))[0] == 0
    assert files_of(out) == files_of(reference)
    assert entry_title(out) == "FIRST"


def test_a_second_build_waits_for_the_first_then_builds_its_own_inputs(small_project: Path):
    assert run_cli("--root", str(small_project), "build", "-q", timeout=TIMEOUT).returncode == 0
    out = small_project / "site"
    before = files_of(out)
    entry = small_project / "entries" / SEED_ENTRY.name
    entry.write_text(entry.read_text().replace("\ntitle: ", "\ntitle: Waited ", 1))
    with open(small_project / ".site.lock", "a+") as lock:  # another build, as far as it can tell
        fcntl.flock(lock, fcntl.LOCK_EX)
        waiting = start_build(small_project, out)
        time.sleep(2)
        assert waiting.poll() is None, "the build did not wait for the lock"
        assert files_of(out) == before
        fcntl.flock(lock, fcntl.LOCK_UN)
        code, _out, err = finish(waiting)
    assert code == 0
    assert "waiting for another build into" in err
    assert entry_title(out) == "Waited"
    assert_whole(out, small_project)


def test_a_build_that_cannot_get_the_lock_in_time_fails_clearly(small_project: Path):
    assert run_cli("--root", str(small_project), "build", "-q", timeout=TIMEOUT).returncode == 0
    out = small_project / "site"
    before = files_of(out)
    entry = small_project / "entries" / SEED_ENTRY.name
    entry.write_text(entry.read_text().replace("\ntitle: ", "\ntitle: Never ", 1))
    with open(small_project / ".site.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.truncate(0)
        lock.write("4242")
        lock.flush()
        started = time.monotonic()
        result = run_cli("--root", str(small_project), "build", "--wait", "0.5", timeout=TIMEOUT)
        assert time.monotonic() - started < 30
    assert result.returncode == 1
    err = result.stderr.decode()
    assert f"{out.as_posix()}:1:1: error[E052]: another build (pid 4242) is writing this output folder" in err
    assert files_of(out) == before


def test_a_file_corrupted_by_hand_is_repaired(small_project: Path):
    assert run_cli("--root", str(small_project), "build", "-q", timeout=TIMEOUT).returncode == 0
    out = small_project / "site"
    good = files_of(out)
    page = out / "entries" / SEED_ENTRY.stem / "index.html"

    page.write_bytes(b"defaced")  # an edit: the next build notices, although no input changed
    result = run_cli("--root", str(small_project), "build", "-q", timeout=TIMEOUT)
    assert "up to date" not in result.stdout.decode()
    assert files_of(out) == good

    # the same size and modification time as before: the manifest still names the right hash,
    # so only comparing the bytes on disk tells that the file must not be reused
    stat = page.stat()
    page.write_bytes(b"X" * stat.st_size)
    os.utime(page, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    entry = small_project / "entries" / SEED_ENTRY.name
    entry.write_text(entry.read_text().replace("are empty torch.Size([0]) placeholders", "are EMPTY placeholders"))
    assert run_cli("--root", str(small_project), "build", "-q", timeout=TIMEOUT).returncode == 0
    assert b"are EMPTY placeholders" in page.read_bytes()
    assert_whole(out, small_project)
    # and --force rewrites a forged file whose inputs did not change at all
    css = next((out / "assets").glob("rootcause.*.css"))
    stat = css.stat()
    css.write_bytes(b"Y" * stat.st_size)
    os.utime(css, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    result = run_cli("--root", str(small_project), "build", "-q", "--force", timeout=TIMEOUT)
    assert result.returncode == 0 and ", 0 unchanged)" in result.stdout.decode()
    assert_whole(out, small_project)


def test_leftovers_of_killed_builds_are_removed_when_their_process_is_gone(small_project: Path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftovers = [small_project / f".site.staging-{dead.pid}", small_project / f".site.old-{dead.pid}"]
    for folder in leftovers:
        (folder / "entries").mkdir(parents=True)
        (folder / "entries" / "half.html").write_text("half a site")
    alive = small_project / f".site.staging-{os.getpid()}"  # a build still running (this process)
    alive.mkdir()
    other_output = small_project / f".elsewhere.staging-{dead.pid}"  # not this output's
    other_output.mkdir()
    assert run_cli("--root", str(small_project), "build", "-q", timeout=TIMEOUT).returncode == 0
    assert [p.exists() for p in leftovers] == [False, False]
    assert alive.is_dir() and other_output.is_dir()
    assert_whole(small_project / "site", small_project)


def test_the_writer_keeps_its_promises_in_process(tmp_path: Path):
    """write_site (tests and tools) takes the same lock and compares bytes before reusing."""
    from rootcause.site.write import write_site

    out = tmp_path / "out"
    assert write_site(out, {"a.html": b"one", "b.html": b"two"}) == (2, 0)
    (out / "a.html").write_bytes(b"ONE")
    assert write_site(out, {"a.html": b"one", "b.html": b"two"}) == (1, 1)  # a.html again, b.html linked
    assert (out / "a.html").read_bytes() == b"one"
    assert (tmp_path / ".out.lock").is_file()


def test_unchanged_inputs_still_build_nothing(small_project: Path):
    """The up-to-date shortcut survives the checks above (it walks the output, reads nothing)."""
    from rootcause.site.builder import build

    assert not build(small_project, progress=False).up_to_date
    started = time.perf_counter()
    assert build(small_project, progress=False).up_to_date
    assert time.perf_counter() - started < 5
    assert REPO.exists()


def test_a_build_killed_at_any_moment_leaves_the_old_site_or_the_new_one_whole(small_project: Path):
    """Issue #36, item 8: kill -9 during a rebuild left a mix of old and new pages and a
    `.index.html.PID.tmp` in the site. A CLI build writes a staging folder beside the output and
    swaps it in with one rename, so whenever it dies the output is one whole site."""
    assert run_cli("--root", str(small_project), "build", "-q", timeout=TIMEOUT).returncode == 0
    out = small_project / "site"
    old = files_of(out)
    entry = small_project / "entries" / SEED_ENTRY.name
    entry.write_text(entry.read_text().replace("\ntitle: ", "\ntitle: Killed ", 1))
    started = time.monotonic()
    new_dir = small_project.parent / "reference"
    assert finish(start_build(small_project, new_dir, "--force"))[0] == 0
    duration = time.monotonic() - started
    new = files_of(new_dir)
    assert new != old
    for fraction in (0.1, 0.3, 0.5, 0.7, 0.85, 0.95):   # moments across a whole build's time
        build = start_build(small_project, out, "--force")
        time.sleep(duration * fraction)
        build.kill()
        build.wait()
        now = files_of(out)
        assert now in (old, new), f"killed at {fraction:.0%} of a build: a mixed site"
        assert not [name for name in now if name.endswith(".tmp")]
    assert finish(start_build(small_project, out))[0] == 0
    assert files_of(out) == new
    assert [p.name for p in small_project.iterdir() if ".staging-" in p.name or ".old-" in p.name] == []
