"""Issue 36, item 4: a content page cannot replace a built-in page.

`printf '# Hijack\\n' > content/diagnose.md; rootcause build` exited 0 and published a page of
the contributor's choosing at /diagnose/ (so did entries.md, search.md, coverage.md and
frequency.md). A content page named like any of the site's own top-level pages or files is now
refused by `check` and `build` (E059), naming the file and how to fix it, and the site already
built stays as it was.
"""

from __future__ import annotations

from pathlib import Path

from conftest import REPO, SEED_ENTRY, make_project, run_cli
from rootcause.site.content import RESERVED

def project(folder: Path) -> Path:
    """A project of one entry, its related links (to entries not here) left out."""
    root = make_project(folder)
    text = SEED_ENTRY.read_text(encoding="utf-8")
    text = text[:text.index("\nrelated:")] + text[text.index("\nreferences:"):]
    (root / "entries" / SEED_ENTRY.name).write_text(text, encoding="utf-8")
    return root


NAMES = ("diagnose", "entries", "search", "coverage", "frequency", "Diagnose", "assets", "categories", "sitemap.xml",
         "404.html", "index.html")


def test_check_refuses_every_built_in_name_with_its_place_and_fix(tmp_path: Path):
    root = project(tmp_path / "project")
    for name in NAMES:
        (root / "content" / f"{name}.md").write_text("# Hijack\n\nA page of the contributor's choosing.\n",
                                                     encoding="utf-8")
    result = run_cli("--root", str(root), "check")
    assert result.returncode == 1
    err = result.stdout.decode() + result.stderr.decode()
    assert "Traceback" not in err
    for name in NAMES:
        line = next((row for row in err.splitlines() if row.startswith(f"content/{name}.md:1:1: error[E059]: ")), None)
        assert line is not None, (name, err)
        assert f"would be published at /{name}/" in line and "rename the file" in line, line
    assert run_cli("check", "--explain", "E059").stdout.decode().startswith("E059: a content page is named like")


def test_build_refuses_a_hijacking_page_and_keeps_the_built_site(tmp_path: Path):
    root = project(tmp_path / "project")
    out = tmp_path / "site"
    assert run_cli("--root", str(root), "build", "-q", "--out", str(out)).returncode == 0
    before = (out / "diagnose" / "index.html").read_bytes()
    assert b"Hijack" not in before
    (root / "content" / "diagnose.md").write_text("# Hijack\n", encoding="utf-8")
    result = run_cli("--root", str(root), "build", "-q", "--out", str(out))
    assert result.returncode != 0
    err = result.stderr.decode()
    assert "content/diagnose.md:1:1: error[E059]" in err and "Traceback" not in err, err
    assert (out / "diagnose" / "index.html").read_bytes() == before

    # the table of reserved names is what a build writes at the site's root, content pages aside
    (root / "content" / "diagnose.md").unlink()
    assert run_cli("--root", str(root), "build", "-q", "--out", str(out)).returncode == 0
    pages = {path.stem for path in (root / "content").glob("*.md")}
    written = {path.name for path in out.iterdir()} - pages
    assert written <= set(RESERVED), written - set(RESERVED)
    assert set(RESERVED) - written == {"frequency"}   # written only with a study, which this project has not
    assert {path.name for path in (REPO / "content").glob("*.md")}.isdisjoint(f"{n}.md" for n in RESERVED)
