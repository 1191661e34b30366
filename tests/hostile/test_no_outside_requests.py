"""Issue 9, item 10: "no request leaves the site" is enforced, not hoped for.

A Markdown image in any prose field loaded from any host. Images are refused by `check` (E018,
at the field), are no longer rendered at all, and every page carries a Content-Security-Policy
`<meta>` that it satisfies: no inline style or script (the browser side is in
tests/site/test_browser.py, which fails on any violation on every kind of page).
"""

from __future__ import annotations

import base64
import hashlib

import shutil
from pathlib import Path

import pytest
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from conftest import REPO, run_cli

HOSTILE = Path(__file__).resolve().parent
TIMEOUT = 60
HINT = ("the site loads nothing from elsewhere and holds no pictures: describe it in words, or link to it "
        "with [text](address)")


def test_images_in_an_entrys_prose_are_refused_where_they_are(small_project: Path):
    shutil.copy(HOSTILE / "markdown-image.yaml", small_project / "entries")
    result = run_cli("--root", str(small_project), "check", timeout=TIMEOUT)
    assert result.returncode == 1
    assert result.stdout.decode().splitlines() == [
        f"entries/markdown-image.yaml:5:10: error[E018]: summary: image 'https://tracker.example/p.png?reader=1' "
        f"in Markdown — {HINT}",
        f"entries/markdown-image.yaml:17:13: error[E018]: root_cause: image 'https://cdn.example/diagram.svg' "
        f"in Markdown — {HINT}",
    ]  # the link and the `![code](x)` code span in the fix step are fine


def test_images_in_a_content_page_are_refused(small_project: Path):
    shutil.copy(HOSTILE / "image-page.md", small_project / "content")
    result = run_cli("--root", str(small_project), "check", timeout=TIMEOUT)
    assert result.returncode == 1
    assert result.stdout.decode() == (f"content/image-page.md:7:1: error[E018]: image "
                                      f"'https://images.example/chart.png' in Markdown — {HINT}\n")


def test_markdown_renders_no_image_and_no_inline_style():
    from rootcause.site.content import _commonmark, inline, markdown

    for render in (markdown, inline, _commonmark().render):
        html = str(render("![pixel](https://tracker.example/p.png) ![ref][r]\n\n[r]: https://e.example/x.png\n"))
        assert "<img" not in html and "<a href=\"https://tracker.example/p.png\">pixel</a>" in html
    table = str(markdown("| a | b | c |\n| :-- | --: | :-: |\n| 1 | 2 | 3 |\n"))
    assert 'style="' not in table
    assert '<th class="rc-align-left">a</th>' in table and '<td class="rc-align-center">3</td>' in table
    # a writer's own text cannot pass for the renderer's attribute: raw HTML is escaped
    assert 'class="rc-align' not in str(markdown('<td style="text-align:left">x</td>'))


@pytest.fixture(scope="module")
def bundled_site(tmp_path_factory) -> Path:
    from rootcause.site.builder import build

    out = tmp_path_factory.mktemp("csp") / "site"
    build(REPO, out=out, progress=False)
    return out


def test_every_page_carries_the_policy_first_and_holds_no_inline_style_or_script(bundled_site: Path):
    from rootcause.site.render import CONTENT_SECURITY_POLICY

    assert CONTENT_SECURITY_POLICY == ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' "
                                       "data:; object-src 'none'; base-uri 'none'; form-action 'self'")
    pages = sorted(bundled_site.rglob("*.html"))
    assert len(pages) > 100
    for page in pages:
        tree = HTMLParser(page.read_text(encoding="utf-8"))
        head = [node for node in tree.css("head > *")]
        assert head[0].tag == "meta" and head[0].attributes.get("charset") == "utf-8", page
        assert head[1].attributes.get("http-equiv") == "Content-Security-Policy", page  # before any load
        inline = [s for s in tree.css("script") if not s.attributes.get("src")
                  and s.attributes.get("type") not in ("application/ld+json", "application/json")]
        if page.name == "404.html":
            # exactly one inline script, allowed by its hash and by nothing wider
            [script] = inline
            digest = base64.b64encode(hashlib.sha256(script.text().encode()).digest()).decode()
            assert head[1].attributes["content"] == CONTENT_SECURITY_POLICY.replace(
                "script-src 'self'", f"script-src 'self' 'sha256-{digest}'")
        else:
            assert head[1].attributes["content"] == CONTENT_SECURITY_POLICY
            assert inline == [], page
        assert tree.css("[style]") == [], f"inline style in {page}"
        assert tree.css("img") == [], page
        for node in tree.css("[href], [src]"):
            ref = node.attributes.get("href") or node.attributes.get("src") or ""
            assert not ref.startswith("//"), (page, ref)  # protocol-relative: another host
