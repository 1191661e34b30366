"""Issue 12: a rebuild after a few entries changed is done in place, in proportion to the change
(`rootcause.site.incremental`), and writes exactly the bytes a cold build of the same input
writes. Whatever the model cannot answer (an error to report, a collision, an added entry, a
damaged model, a site changed by hand) is left to the full build, which reports as a cold one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cache_helpers import flip_byte
from conftest import copy_bundled_project, files_of

from rootcause.errors import RootcauseError
from rootcause.site import diagnosis_index
from rootcause.site.builder import build, site_files
from rootcause.site.write import state_name


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the bundled project (entries, content, healthy logs, study), built once."""
    project = copy_bundled_project(tmp_path / "project")
    assert not build(project, progress=False).in_place
    return project


def entry(project: Path, entry_id: str) -> Path:
    return project / "entries" / f"{entry_id}.yaml"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def prepend(path: Path, key: str, words: str) -> None:
    """Put `words` at the start of a top-level text field (a block scalar's first line)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
    if lines[at].rstrip().endswith((">", "|", ">-", "|-")):
        indent = len(lines[at + 1]) - len(lines[at + 1].lstrip())
        lines[at + 1] = lines[at + 1][:indent] + words + " " + lines[at + 1][indent:]
    else:
        lines[at] = lines[at].replace(f"{key}: ", f"{key}: {words} ", 1)
    path.write_text("\n".join(lines), encoding="utf-8")


def add_log_line(path: Path, line: str) -> None:
    """Put `line` at the top of the entry's first example log."""
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, text in enumerate(lines) if text.strip() == "- log: |")
    indent = len(lines[at + 1]) - len(lines[at + 1].lstrip())
    lines.insert(at + 1, " " * indent + line)
    path.write_text("\n".join(lines), encoding="utf-8")


def add_signature(project: Path, pattern: str, example: str, assembled: str) -> None:
    """Give nccl-topo-xml-missing-attribute a first signature `pattern` with a one-line example."""
    edit(entry(project, "nccl-topo-xml-missing-attribute"), "\nsignatures:\n",
         f'\nsignatures:\n  - pattern: "{pattern}"\n    source: a test\n    examples:\n      - log: |\n'
         f"          {example}\n        assembled: {assembled}\n")


OOM_LINE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78 GiB. GPU 0 has a total capacity "
            "of 31.47 GiB of which 12.73 GiB is free.")


def cold_check(project: Path) -> list:
    """Every diagnostic of the project, checked without any cache."""
    from rootcause.entries.project import open_project

    return open_project(project)[1]


def same_as_cold(project: Path) -> None:
    assert files_of(project / "site") == site_files(project)


def test_a_summary_edit_is_rebuilt_in_place(project: Path):
    path = entry(project, "nccl-watchdog-collective-timeout")
    prepend(path, "summary", "Rewritten here.")
    result = build(project, progress=False)
    assert result.in_place and result.checked == 1
    assert "rebuilt 1 changed entry of" in result.summary()
    # its page, the list pages showing its card, the pages linking to it, search and signatures
    assert 3 < result.written < 60
    same_as_cold(project)
    index = diagnosis_index.load(project)   # diagnose reads the new summary without checking anything
    assert index is not None and index.entry("nccl-watchdog-collective-timeout")["summary"].startswith("Rewritten here.")
    assert build(project, progress=False).up_to_date


def test_every_link_is_read_only_when_a_step_needs_them_all(project: Path, monkeypatch):
    """A summary edit reads the links of the changed entry's bucket alone (the consequences come
    from the last signatures.json); an edit of a link reads them all, before and after."""
    from rootcause.site import incremental

    read, by_entry = [], incremental._by_entry
    monkeypatch.setattr(incremental, "_by_entry", lambda state, model, kind: read.append(kind) or
                        by_entry(state, model, kind))
    monkeypatch.setattr(os, "fork", lambda: (_ for _ in ()).throw(OSError("no fork: every step here")))
    prepend(entry(project, "nccl-watchdog-collective-timeout"), "summary", "Links untouched.")
    result = build(project, progress=False)
    assert result.in_place and read.count("related") == 1   # the entry pages, rendered here, need them all
    same_as_cold(project)
    read.clear()
    monkeypatch.undo()
    monkeypatch.setattr(incremental, "_by_entry", lambda state, model, kind: read.append(kind) or
                        by_entry(state, model, kind))
    prepend(entry(project, "cuda-out-of-memory"), "summary", "Links untouched, child forked.")
    result = build(project, progress=False)
    assert result.in_place and "related" not in read   # the child reads them for the entry pages, not this process
    same_as_cold(project)


def test_prose_only_on_its_page_writes_one_page(project: Path, monkeypatch):
    from rootcause.site import incremental

    planned = []
    monkeypatch.setattr(incremental, "_list_pages", lambda *args: planned.append(args))
    path = entry(project, "nccl-watchdog-collective-timeout")
    prepend(path, "root_cause", "Put briefly, a collective never finished.")
    result = build(project, progress=False)
    # its page alone is rendered; besides it only search shards whose term weights moved are
    # written; its card is as it was, so no list page is planned (no child is forked for them)
    assert result.in_place and result.rendered == 1 and 1 <= result.written <= 4
    assert planned == []
    same_as_cold(project)


def test_links_and_signatures_changed_in_place(project: Path):
    """A new `related` link (the other entry's backlinks and the declared consequences change)
    and signatures removed (the diagnosis index's table is compiled again)."""
    path = entry(project, "cuda-out-of-memory")
    text = path.read_text(encoding="utf-8")
    assert "related:\n" in text
    edit(path, "related:\n", "related:\n  - id: dataloader-worker-killed\n    relation: often-confused-with\n")
    result = build(project, progress=False)
    assert result.in_place
    same_as_cold(project)
    signatures = json.loads((project / "site" / "search" / "signatures.json").read_bytes())
    before = sum(1 for s in signatures["signatures"] if s["entry"] == "cuda-out-of-memory")
    data = path.read_text(encoding="utf-8")
    start = data.index("signatures:\n")
    second = data.index("\n  - ", data.index("\n  - ", start) + 1)   # the second signature's item: it and the rest go
    end = min(i for i in (data.find("\n" + key, second) for key in
                          ("symptoms:", "root_cause:", "misdiagnosis:", "confirm:", "fix:")) if i > 0)
    path.write_text(data[:second] + data[end:], encoding="utf-8")
    result = build(project, progress=False)
    assert result.in_place
    same_as_cold(project)
    signatures = json.loads((project / "site" / "search" / "signatures.json").read_bytes())
    assert before > 1 and sum(1 for s in signatures["signatures"] if s["entry"] == "cuda-out-of-memory") == 1
    index = diagnosis_index.load(project)
    assert index is not None and len(index.table()) == len(signatures["signatures"])


def test_a_touched_file_writes_nothing(project: Path):
    path = entry(project, "nccl-watchdog-collective-timeout")
    os.utime(path, (1_000_000_000, 1_000_000_000))
    result = build(project, progress=False)
    assert result.in_place and result.written == 0 and result.checked == 0
    assert build(project, progress=False).up_to_date


def test_an_error_is_reported_as_a_cold_build_reports_it(project: Path):
    before = files_of(project / "site")
    edit(entry(project, "nccl-watchdog-collective-timeout"), "severity: critical", "severity: dire")
    with pytest.raises(RootcauseError) as raised:
        build(project, progress=False)
    assert raised.value.diagnostics == cold_check(project)
    assert [d.path for d in raised.value.diagnostics] == ["entries/nccl-watchdog-collective-timeout.yaml"]
    assert files_of(project / "site") == before


def test_a_changed_example_that_another_signature_matches(project: Path):
    """E035 one way: the changed entry's example also matches an unrelated entry's signature."""
    add_log_line(entry(project, "nccl-topo-xml-missing-attribute"), OOM_LINE)
    with pytest.raises(RootcauseError) as raised:
        build(project, progress=False)
    assert raised.value.diagnostics == cold_check(project)
    assert [d.code for d in raised.value.diagnostics] == ["E035"]
    assert "cuda-out-of-memory" in raised.value.diagnostics[0].message


def test_a_changed_signature_that_matches_another_example(project: Path):
    """E035 the other way: an unchanged entry's example matches the changed signature (whose own
    example the other entry's signature does not match)."""
    add_signature(project, "Tried to allocate {float} GiB. GPU {int} has a total capacity",
                  "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 8.00 GiB",
                  "torch c10/cuda/CUDACachingAllocator.cpp, a test")
    with pytest.raises(RootcauseError) as raised:
        build(project, progress=False)
    assert raised.value.diagnostics == cold_check(project)
    assert {d.code for d in raised.value.diagnostics} == {"E035"}
    assert "entries/cuda-out-of-memory.yaml" in {d.path for d in raised.value.diagnostics}
    assert all(d.path != "entries/nccl-topo-xml-missing-attribute.yaml" and "nccl-topo-xml-missing-attribute" in d.message
               for d in raised.value.diagnostics)


def test_a_link_taken_away_uncovers_a_collision(project: Path):
    """E035 through the links alone: the relation that allowed two entries to share a line
    becomes one that does not, and nothing else in the file changes."""
    path = entry(project, "autograd-inplace-modified-variable")
    edit(path, "  - id: inductor-backend-compile-error\n    relation: often-confused-with\n",
         "  - id: inductor-backend-compile-error\n    relation: see-also\n")
    with pytest.raises(RootcauseError) as raised:
        build(project, progress=False)
    assert raised.value.diagnostics == cold_check(project)
    assert {d.code for d in raised.value.diagnostics} == {"E035"}
    assert any("inductor-backend-compile-error" in d.message for d in raised.value.diagnostics)


def test_the_checks_against_other_entries_run_when_signatures_or_links_changed(project: Path, monkeypatch):
    """E035 and E036 read only signatures and links: an edit to anything else skips them."""
    from rootcause.site import incremental

    calls = []
    collides, healthy = incremental._collides, incremental._healthy_match
    monkeypatch.setattr(incremental, "_collides", lambda *a: calls.append("E035") or collides(*a))
    monkeypatch.setattr(incremental, "_healthy_match", lambda *a: calls.append("E036") or healthy(*a))
    prepend(entry(project, "cuda-out-of-memory"), "summary", "Reworded.")
    prepend(entry(project, "nccl-watchdog-collective-timeout"), "root_cause", "Put briefly, a collective never finished.")
    assert build(project, progress=False).in_place and calls == []
    same_as_cold(project)
    edit(entry(project, "cuda-out-of-memory"), "related:\n",
         "related:\n  - id: dataloader-worker-killed\n    relation: see-also\n")
    assert build(project, progress=False).in_place and calls == ["E035", "E036"]
    same_as_cold(project)
    calls.clear()
    add_log_line(entry(project, "nccl-watchdog-collective-timeout"), "[rank0]: one more line of the log")
    assert build(project, progress=False).in_place and calls == ["E035", "E036"]
    same_as_cold(project)


def test_an_added_entry_takes_the_full_build(project: Path):
    text = entry(project, "loss-plateau-not-learning").read_text(encoding="utf-8")   # role: symptom, no examples
    before = len(list((project / "entries").glob("*.yaml")))
    (project / "entries" / "loss-plateau-copy.yaml").write_text(
        text.replace("id: loss-plateau-not-learning", "id: loss-plateau-copy"), encoding="utf-8")
    result = build(project, progress=False)
    assert not result.in_place and result.entries == before + 1
    same_as_cold(project)


def test_a_damaged_model_is_not_trusted(project: Path):
    state = project / ".rootcause-cache" / state_name(project / "site")
    flip_byte(state, "cards.0")
    prepend(entry(project, "nccl-watchdog-collective-timeout"), "summary", "Again.")
    result = build(project, progress=False)
    assert not result.in_place
    same_as_cold(project)


def test_an_upgraded_library_takes_the_full_build(project: Path, tmp_path: Path, monkeypatch):
    """The model's code version is trusted only while the inputs besides the entries, which
    include the folders of the cached libraries, are as its build saw them: an upgrade there
    (its metadata folder renamed) and an edit take the full build, which checks every entry
    under the version read again."""
    import time

    from cache_helpers import installed_fake_library
    from rootcause.site import builder

    metadata = installed_fake_library(tmp_path / "elsewhere", monkeypatch)
    assert not build(project, progress=False).in_place   # a folder the last build did not watch
    prepend(entry(project, "nccl-watchdog-collective-timeout"), "summary", "First.")
    assert build(project, progress=False).in_place
    time.sleep(0.01)   # past the folder's last time on a file system of coarse times
    metadata.rename(metadata.parent / "fakelib-3.0.dist-info")
    monkeypatch.setattr(builder, "build_version", lambda: "the code with fakelib 3.0")
    prepend(entry(project, "nccl-watchdog-collective-timeout"), "summary", "Second.")
    result = build(project, progress=False)
    assert not result.in_place and result.checked == result.entries
    same_as_cold(project)


def test_a_site_changed_by_hand_is_built_again(project: Path):
    page = project / "site" / "entries" / "cuda-out-of-memory" / "index.html"
    page.write_bytes(page.read_bytes() + b"<!-- edited -->")
    prepend(entry(project, "nccl-watchdog-collective-timeout"), "summary", "Once more.")
    result = build(project, progress=False)
    assert not result.in_place
    same_as_cold(project)


def test_a_changed_signature_that_matches_a_healthy_log(project: Path):
    """E036: a changed signature fires on a log of a run that did not fail."""
    add_signature(project, "cuda available: False | gloo: {word}", "torch 2.13.0+cpu | cuda available: False | gloo: True",
                  "torch torch/cuda/__init__.py, a test of the healthy-log check")
    with pytest.raises(RootcauseError) as raised:
        build(project, progress=False)
    assert raised.value.diagnostics == cold_check(project)
    assert {d.code for d in raised.value.diagnostics} == {"E036"}


def test_check_between_edit_and_build_keeps_the_rebuild_in_place(project: Path):
    """The contributor's loop: edit, `check` (which stores a diagnosis index of the edited
    entries), build. The model owns its copy of the signature table, so this stays in place."""
    from rootcause.entries.project import open_project

    prepend(entry(project, "nccl-watchdog-collective-timeout"), "summary", "Checked first.")
    opened, problems = open_project(project)
    assert not problems and diagnosis_index.store(opened)
    result = build(project, progress=False)
    assert result.in_place
    same_as_cold(project)
    index = diagnosis_index.load(project)
    assert index is not None and index.entry("nccl-watchdog-collective-timeout")["summary"].startswith("Checked first.")


def dying_in_a_child(work, calls: list):
    """`work`, which ends any forked child that runs it (as if killed), and notes each call
    made in this process in `calls`."""
    parent = os.getpid()

    def dies_in_the_child(*args):
        if os.getpid() != parent:
            os._exit(9)
        calls.append(True)
        return work(*args)

    return dies_in_the_child


def test_list_pages_done_here_when_their_child_dies(project: Path, monkeypatch):
    """The list pages are planned and rendered in a forked child: one that dies (killed, out of
    memory) leaves the work to the rebuilding process, which writes the same site."""
    from rootcause.site import incremental

    calls: list = []
    monkeypatch.setattr(incremental, "_list_pages", dying_in_a_child(incremental._list_pages, calls))
    prepend(entry(project, "nccl-watchdog-collective-timeout"), "summary", "Done here.")
    result = build(project, progress=False)
    assert result.in_place and calls == [True]
    same_as_cold(project)


def test_the_inputs_walked_here_when_their_child_dies(project: Path, monkeypatch):
    """A command-line build walks its inputs in a forked child while it imports the schema: one
    that dies leaves the walk to the building process, whose fingerprint and stat keys are the
    same (the edit is found, the rebuild runs in place, and the next build has nothing to do)."""
    from rootcause.cache import Inputs, stat_key
    from rootcause.site import builder

    walk, calls = builder.input_fingerprints, []
    monkeypatch.setattr(builder, "input_fingerprints", dying_in_a_child(walk, calls))
    prepend(entry(project, "nccl-watchdog-collective-timeout"), "summary", "Walked here.")
    result = build(project, progress=False)
    assert result.in_place and calls == [True]
    same_as_cold(project)
    monkeypatch.undo()
    assert build(project, progress=False).up_to_date
    root = project.resolve()
    settings = {"healthy_logs": "tests/logs/healthy", "study": ["not", "a", "folder"]}   # the latter no folder name
    fingerprint, others, inputs = builder._walk(root, settings)
    assert (fingerprint, others) == walk(root, {"healthy_logs": "tests/logs/healthy"})
    assert inputs.folders == [["tests/logs/healthy", ""]]
    assert inputs.stats == Inputs.take(root, [["tests/logs/healthy", ""]]).stats
    assert inputs.stats["site.yml"] == stat_key(project / "site.yml")
    assert sum(name.startswith("tests/logs/healthy/") for name in inputs.stats) > 3


def test_list_pages_without_fork(project: Path, monkeypatch):
    def no_fork():
        raise OSError("no fork here")

    monkeypatch.setattr(os, "fork", no_fork)
    prepend(entry(project, "nccl-watchdog-collective-timeout"), "summary", "Not forked.")
    result = build(project, progress=False)
    assert result.in_place
    same_as_cold(project)


def without_study(project: Path) -> Path:
    """The project without its study (and so without the frequency page, which shows every
    card), built once: its model keeps the list pages' plan."""
    settings = project / "site.yml"
    settings.write_text("".join(line for line in settings.read_text(encoding="utf-8").splitlines(True)
                                if not line.startswith("study:")), encoding="utf-8")
    assert not build(project, progress=False).in_place
    return project


SUMMARY_EDIT = (lambda path: prepend(path, "summary", "Placed alike."))
SEVERITY_EDIT = (lambda path: edit(path, "severity: critical", "severity: high"))


@pytest.mark.parametrize("change, study, plans", [
    # shown on the lists, but neither where nor under which count: only the pages showing it are
    # rendered, from one plan
    (SUMMARY_EDIT, True, 1),
    # it moves to another place in every list, and the severity counts change: the old and the
    # new plan are compared
    (SEVERITY_EDIT, True, 2),
    # with no study the model keeps the plan: a card kept in its place has its pages from there,
    # nothing is planned
    (SUMMARY_EDIT, False, 0),
    # moved: the lists it is on are planned before and after, then every list, for the new plan
    (SEVERITY_EDIT, False, 3),
])
def test_list_pages_planned_once_when_the_card_stays_in_place(project: Path, monkeypatch, change, study, plans):
    from rootcause.site import incremental

    if not study:
        without_study(project)
    planned, plan = [], incremental.aggregate_pages

    def counted(*args):
        planned.append(args[4] if len(args) > 4 else None)   # the lists it was asked for
        return plan(*args)

    monkeypatch.delattr(os, "fork")   # the child's work done here, where it can be counted
    monkeypatch.setattr(incremental, "aggregate_pages", counted)
    change(entry(project, "nccl-watchdog-collective-timeout"))
    result = build(project, progress=False)
    assert result.in_place and len(planned) == plans
    assert planned[:1] in ([], [{"categories/communication", "systems/nccl", "systems/pytorch", "tags/timeout",
                                 "tags/watchdog", "tags/hang", "tags/collectives"}])
    assert result.rendered > 1   # its own page and the list pages showing it
    same_as_cold(project)
    # and the next edit starts from the model this one left, which a full build leaves too
    prepend(entry(project, "nccl-watchdog-collective-timeout"), "summary", "Again.")
    assert build(project, progress=False).in_place
    same_as_cold(project)


def test_kept_plan_reads_back_as_planned(project: Path):
    """Every page of the plan that shows a card is kept, and each card's pages read back from the
    kept plan are exactly the planned pages holding it, with equal contexts."""
    from rootcause.config import load_config
    from rootcause.site.content import load_content
    from rootcause.site.incremental import _kept_pages, plan_sections
    from rootcause.site.render import Card, aggregate_pages
    from rootcause.entries.project import open_project

    class Sections(dict):
        def section(self, name, verify=True):
            return self.get(name)

    without_study(project)
    config = load_config(project)[0]
    catalog = open_project(project)[0].catalog
    cards = {entry_id: Card.of(loaded) for entry_id, loaded in catalog.entries.items()}
    planned = aggregate_pages(config, cards, load_content(project)[0])
    sections = Sections(plan_sections(planned, config))
    plan = json.loads(sections["plan"])
    assert set(plan["paths"]) == {"index.html", "entries/index.html"} | {
        page.path for page in planned if page.template in ("list.html", "system.html") and page.context["items"]}
    for entry_id, card in cards.items():
        holding = [page for page in planned if page.path in plan["paths"] and _holds(page.context, card)]
        kept = _kept_pages(sections, plan, [entry_id], cards, config.vocabularies)
        assert [(p.path, p.template, p.title, p.description, p.sitemap, p.absolute, p.context) for p in kept] == \
            [(p.path, p.template, p.title, p.description, p.sitemap, p.absolute, p.context) for p in holding]
        assert "entries/index.html" in [page.path for page in kept]   # the index shows every card


def test_kept_contexts_keep_tuples_markup_and_texts_that_look_like_cards():
    from markupsafe import Markup

    from rootcause.site.incremental import _Unstorable, _decode, _encode

    context = {"rows": [("a", 1, None), ("b", 2.5, True)], "html": Markup("<b>x</b>"), "text": "\0not-a-card"}
    kept = json.loads(json.dumps(_encode(context, {}, {})))
    assert _decode(kept, {}, None) == context
    assert type(_decode(kept, {}, None)["rows"][0]) is tuple and type(_decode(kept, {}, None)["html"]) is Markup
    for odd in (float("nan"), float("inf"), {1: "a key that is not text"}, object()):
        with pytest.raises(_Unstorable):
            _encode({"value": odd}, {}, {})


def _holds(value, card) -> bool:
    if value is card:
        return True
    if isinstance(value, dict):
        return any(_holds(item, card) for item in value.values())
    return isinstance(value, (list, tuple)) and any(_holds(item, card) for item in value)


def test_a_site_with_a_study_keeps_no_plan(project: Path):
    from rootcause.site.write import open_state

    state = open_state(project / "site", project)
    try:
        assert json.loads(state.section("plan")) is None
    finally:
        state.close()


def test_pages_rendered_again_in_place_build_no_lexer(project: Path, monkeypatch, tmp_path: Path):
    """A summary edit renders the entry's page and the pages linking with it again (in the list
    pages' forked child: a lexer built there is noted in a file); their code is what the cache
    holds from the full build, so no Pygments lexer is built."""
    from rootcause.site import highlight

    highlight.highlight.cache_clear()   # the fixture's build may have found these blocks in memory
    assert not build(project, progress=False, force=True).in_place
    built, lexer = tmp_path / "lexers-built", highlight._lexer

    def noted(language):
        with built.open("a", encoding="utf-8") as note:
            note.write(f"{os.getpid()} {language}\n")
        return lexer(language)

    monkeypatch.setattr(highlight, "_lexer", noted)
    highlight.highlight.cache_clear()
    noted("python")   # the note works: this process's own line
    prepend(entry(project, "cuda-out-of-memory"), "summary", "Again.")
    result = build(project, progress=False)
    assert result.in_place and result.rendered > 1
    assert built.read_text(encoding="utf-8") == f"{os.getpid()} python\n"
    monkeypatch.undo()
    same_as_cold(project)


def test_a_theme_naming_signatures_json_outside_the_diagnose_page_takes_the_full_build(project: Path):
    """Only the diagnose page may name signatures.json (its address, with the file's hash, changes
    with any entry): with a site template that names it too, every page would change, and a
    summary edit takes the full build, which renders them all."""
    from rootcause.files import bundled_theme

    templates = project / "mytheme" / "templates"
    templates.mkdir(parents=True)
    entry_html = (bundled_theme() / "templates" / "entry.html").read_text(encoding="utf-8")
    (templates / "entry.html").write_text(entry_html.replace(
        "{% block content %}", "{% block content %}<!-- {{ assets['signatures.json'] }} -->", 1), encoding="utf-8")
    settings = project / "site.yml"
    settings.write_text(settings.read_text(encoding="utf-8") + "theme: mytheme\n", encoding="utf-8")
    assert not build(project, progress=False).in_place
    prepend(entry(project, "cuda-out-of-memory"), "summary", "Named.")
    result = build(project, progress=False)
    assert not result.in_place
    page = (project / "site" / "entries" / "nccl-watchdog-collective-timeout" / "index.html").read_text(encoding="utf-8")
    assert "search/signatures.json?v=" in page
    same_as_cold(project)


def test_a_doc_shard_changed_by_hand_under_its_old_time_is_not_trusted(project: Path):
    """A changed entry's doc shard is the last build's file with its row replaced: a file that is
    no longer what that build wrote (its time put back, so the site looks intact) is not spliced."""
    entry_id = "nccl-watchdog-collective-timeout"
    shard = next(path for path in (project / "site" / "search" / "d").iterdir()
                 if f'"{entry_id}"'.encode() in path.read_bytes())
    before = shard.stat()
    shard.write_bytes(shard.read_bytes().replace(b"[[", b"[ [", 1))
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))
    prepend(entry(project, entry_id), "summary", "Shard.")
    result = build(project, progress=False)
    assert not result.in_place
    same_as_cold(project)
