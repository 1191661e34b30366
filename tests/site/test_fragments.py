"""Issue 12: the HTML a theme's macro made of a card is kept (`rootcause.site.fragments`) and used
again only where it is the HTML the macro would make: same card, same other arguments, and a
`link` that answers the macro's questions alike. Whatever the cache holds, the site is the one a
cold build writes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import jinja2
import pytest

from conftest import REPO

from rootcause.errors import RootcauseError
from rootcause.site import fragments, render
from rootcause.site.builder import build, site_files
from rootcause.site.render import Card, card_data

CARD = "nccl-watchdog-collective-timeout"


def files_of(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("entries", "content", "study"):
        shutil.copytree(REPO / name, project / name)
    shutil.copytree(REPO / "tests" / "logs" / "healthy", project / "tests" / "logs" / "healthy")
    shutil.copy(REPO / "site.yml", project / "site.yml")
    return project


def stored(project: Path) -> list[tuple[bytes, bytes, bytes]]:
    """The fragments file's records: (key, card digest, record)."""
    from rootcause.cache import read_cache

    cached = read_cache(project, fragments.NAME, fragments.KIND)
    assert cached is not None
    index, records = cached.section("index"), cached.section("records")
    cached.close()
    return [(key, digest, records[offset:offset + length])
            for key, digest, offset, length, _crc in fragments._ROW.iter_unpack(index)]


def digest_of(project: Path, entry_id: str) -> bytes:
    from rootcause.entries.project import open_project

    loaded = open_project(project)[0].catalog.entries[entry_id]
    return fragments.card_digest(repr(card_data(Card.of(loaded))))


def prepend_summary(project: Path, words: str) -> None:
    path = project / "entries" / f"{CARD}.yaml"
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("summary:"))
    indent = len(lines[at + 1]) - len(lines[at + 1].lstrip())
    lines[at + 1] = lines[at + 1][:indent] + words + " " + lines[at + 1][indent:]
    path.write_text("\n".join(lines), encoding="utf-8")


def test_a_changed_card_replaces_its_fragments(project: Path):
    assert not build(project, progress=False).in_place
    before = digest_of(project, CARD)
    records = stored(project)
    # one per card and place (the all-entries page, the category and tag pages, the home page)
    assert len(records) >= len(list((project / "entries").glob("*.yaml"))) * 2
    assert any(digest == before for _k, digest, _r in records)
    assert all(b'<li class="rc-card"' in record for _k, _d, record in records)
    prepend_summary(project, "Rewritten here.")
    result = build(project, progress=False)
    assert result.in_place
    assert files_of(project / "site") == site_files(project)
    after = digest_of(project, CARD)
    digests = [digest for _k, digest, _r in stored(project)]
    assert before not in digests and after in digests
    assert any(b"Rewritten here." in record for _k, digest, record in stored(project) if digest == after)


def test_a_damaged_fragment_is_made_again(project: Path):
    build(project, progress=False)
    path = project / ".rootcause-cache" / fragments.NAME
    data = bytearray(path.read_bytes())
    at = data.rindex(b'class="rc-card__summary"')   # inside a record: the card's summary
    data[at + 30] ^= 0x01
    path.write_bytes(bytes(data))
    prepend_summary(project, "Edited.")
    assert build(project, progress=False).in_place
    assert files_of(project / "site") == site_files(project)


def test_fragments_of_another_stamp_are_not_used(project: Path):
    build(project, progress=False)
    site_yml = project / "site.yml"
    text = site_yml.read_text()
    assert "\nrecent: 8\n" in text
    site_yml.write_text(text.replace("\nrecent: 8\n", "\nrecent: 3\n"))
    assert not build(project, progress=False).in_place
    assert files_of(project / "site") == site_files(project)


def test_a_theme_macro_is_kept_by_what_link_answered(project: Path, monkeypatch):
    """A card macro that links to its tag's page asks `link` a question whose answer differs
    between a category page and a tag page at the same depth: each gets its own HTML, the same
    as when nothing is kept."""
    macros = (REPO / "theme" / "templates" / "_macros.html").read_text(encoding="utf-8")
    start = macros.index("{% macro entry_card(e, link) %}")
    end = macros.index("{% endmacro %}", start) + len("{% endmacro %}")
    card = ('{% macro entry_card(e, link, note="") %}<li class="rc-card"><a href="{{ link(\'entries/\' ~ e.id ~ \'/\') }}">'
            '{{ e.title | inline }}</a>{% for t in e.tags %} <a href="{{ link(\'tags/\' ~ t ~ \'/\') }}">{{ t }}</a>'
            '{% endfor %}{{ note }}</li>{% endmacro %}')
    theme = project / "mytheme" / "templates"
    theme.mkdir(parents=True)
    (theme / "_macros.html").write_text(macros[:start] + card + macros[end:], encoding="utf-8")
    (project / "site.yml").write_text((project / "site.yml").read_text() + "\ntheme: mytheme\n")

    made = []
    real = fragments.Fragments.put
    monkeypatch.setattr(fragments.Fragments, "put", lambda self, *a: made.append(a) or real(self, *a))
    kept = site_files(project)
    monkeypatch.undo()
    monkeypatch.setattr(render._Template, "_get_default_module", jinja2.Template._get_default_module)
    plain = site_files(project)
    assert kept == plain
    keys = [key for key, *_rest in made]
    assert len(set(keys)) < len(keys)   # one key, several answers: a card's tag links differ by page
    tag_page = next(p for p in plain if p.startswith("tags/") and b'href="./"' in plain[p])
    assert b'<li class="rc-card">' in plain[tag_page]


def test_a_template_cannot_change_a_value_it_is_given(project: Path):
    """Macros are kept by their arguments only because no template can change one: the sandbox
    refuses a list's `append` with the file and line."""
    theme = project / "mytheme" / "templates"
    theme.mkdir(parents=True)
    text = (REPO / "theme" / "templates" / "list.html").read_text(encoding="utf-8")
    (theme / "list.html").write_text(text.replace("{% block content %}", "{% block content %}{{ items.append(1) }}", 1),
                                     encoding="utf-8")
    (project / "site.yml").write_text((project / "site.yml").read_text() + "\ntheme: mytheme\n")
    with pytest.raises(RootcauseError) as caught:
        site_files(project)
    message = str(caught.value.diagnostics[0])
    assert "mytheme/templates/list.html:" in message and "E041" in message and "append" in message
