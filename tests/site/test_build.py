"""`rootcause build` on the bundled entries: the pages, the hubs, the feeds and the index, checked
on the real output; and the promises of the writer (atomic, deterministic, contained)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import os
import shutil
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from conftest import REPO, SEED_ENTRY, make_project, run_cli
from rootcause.site.builder import build
from rootcause.errors import RootcauseError

ENTRY_SECTIONS = ["quick-answer", "signatures", "no-error", "symptoms", "root-cause", "misdiagnosis", "confirm", "fix",
                  "prevention", "examples", "affected", "faq", "related", "references"]


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The bundled project, built once for the whole session."""
    out = tmp_path_factory.mktemp("built") / "site"
    build(REPO, out=out, progress=False)
    return out


def html(path: Path) -> HTMLParser:
    return HTMLParser(path.read_text(encoding="utf-8"))


def bundled_ids() -> list[str]:
    return sorted(p.stem for p in (REPO / "entries").glob("*.yaml"))


def test_every_entry_has_a_page_with_its_sections_in_order(site: Path):
    for entry_id in bundled_ids():
        tree = html(site / "entries" / entry_id / "index.html")
        sections = [node.attributes["id"] for node in tree.css("article section[id]")]
        assert sections == [s for s in ENTRY_SECTIONS if s in sections], entry_id
        # a failure that prints no error (role: symptom) says so instead of listing signatures,
        # and has no derived "what to search for in the logs" question
        symptom = "\nrole: symptom" in (REPO / "entries" / f"{entry_id}.yaml").read_text(encoding="utf-8")
        # (no FAQ is required: an entry without questions of its own and without data for the
        # derived ones has none, rather than generic ones)
        required = ("quick-answer", "no-error", "symptoms", "root-cause", "confirm", "fix") if symptom else \
            ("quick-answer", "signatures", "root-cause", "fix")
        for name in required:
            assert name in sections, (entry_id, name)
        assert ("signatures" in sections) != symptom, entry_id


def test_seed_entry_page_shows_its_facts(site: Path):
    tree = html(site / "entries" / SEED_ENTRY.stem / "index.html")
    assert tree.css_first("h1").text().startswith("ZeRO-3 weights saved with model.state_dict()")
    badges = [a.text() for a in tree.css(".rc-badges > *")]
    assert badges[:4] == ["High", "Checkpointing", "DeepSpeed", "PyTorch"]
    signature = tree.css_first("#signatures pre code").text()
    assert signature.startswith("size mismatch for {name}: copying a param with shape torch.Size([0])")
    assert tree.css_first("#signatures [data-copy]") is not None
    rows = tree.css("#symptoms tbody tr")
    assert len(rows) == 3
    fix_commands = [c.text() for c in tree.css("#fix pre code")]
    assert "python <checkpoint_dir>/zero_to_fp32.py <checkpoint_dir> <output_dir> --safe_serialization" in fix_commands
    questions = [s.text() for s in tree.css("#faq summary")]
    assert "Which versions are affected?" not in questions   # the Affected table says it
    assert "What text should I search for in my logs?" in questions
    # `affected` records only when the check was introduced, no release with a fix: nothing to answer
    assert "Is it fixed upstream?" not in questions
    links = {a.text().strip(): a.attributes["href"] for a in tree.css(".rc-meta a")}
    assert links["Edit this page"] == \
        "https://github.com/rootcause/rootcause/edit/main/entries/zero3-state-dict-saved-without-gathering.yaml"
    assert links["Report a problem with this entry"].startswith("https://github.com/rootcause/rootcause/issues/new?title=")


def faq_of(site: Path, entry_id: str) -> dict[str, str]:
    """question → answer text, as the built page of a bundled entry shows its FAQ."""
    tree = html(site / "entries" / entry_id / "index.html")
    return {d.css_first("summary").text(): d.text() for d in tree.css("#faq details")}


def test_faq_has_no_generic_questions_without_data(site: Path):
    for entry_id in bundled_ids():
        entry = yaml.safe_load((REPO / "entries" / f"{entry_id}.yaml").read_text(encoding="utf-8"))
        faq = faq_of(site, entry_id)
        # asked only where a release with the fix is recorded; never "not fixed as of <date>"
        released = any(a.get("fixed") for a in entry.get("affected") or [])
        assert ("Is it fixed upstream?" in faq) == released, entry_id
        assert not any("Not as of" in answer for answer in faq.values()), entry_id
        if entry["role"] == "symptom":
            assert "What text should I search for in my logs?" not in faq, entry_id


def test_the_fixed_upstream_answer_names_the_release_and_what_changed(site: Path):
    faq = faq_of(site, "deepspeed-launcher-empty-master-addr")   # affected: fixed 0.8.0, with a note
    answer = faq["Is it fixed upstream?"]
    assert "Yes, in DeepSpeed 0.8.0 and later." in answer
    assert "an empty lookup stops the launch with a clear error" in answer   # the range's note
    # a guard whose message only changed says so rather than "upgrade"
    faq = faq_of(site, "deepspeed-train-batch-size-mismatch")
    assert "the check itself is intended behaviour" in faq["Is it fixed upstream?"]
    assert "Upgrading" not in faq["Is it fixed upstream?"]


def test_affected_ranges_without_a_fixed_release_ask_nothing(site: Path):
    # introduced only (the seed entry), last_affected only: the Affected table says it, the FAQ does not
    for entry_id in ("zero3-state-dict-saved-without-gathering", "nccl-socket-interface-not-found"):
        text = (REPO / "entries" / f"{entry_id}.yaml").read_text(encoding="utf-8")
        assert "\naffected:" in text and "    fixed:" not in text
        assert "Is it fixed upstream?" not in faq_of(site, entry_id), entry_id
        assert html(site / "entries" / entry_id / "index.html").css_first("#affected") is not None


def test_the_grep_question_only_for_a_plain_message(site: Path):
    # a single-line pattern: its text, as grep -F finds it
    answer = faq_of(site, "zero3-state-dict-saved-without-gathering")["What text should I search for in my logs?"]
    assert "grep -n -F -e 'copying a param with shape torch.Size([0]) from checkpoint, the shape in current model is'" \
        in answer
    # the literal piece is cut clean of the punctuation around it: no ") is killed ..."
    answer = faq_of(site, "dataloader-worker-killed")["What text should I search for in my logs?"]
    assert "-e 'is killed by signal: Killed'" in answer
    # a multi-line signature through its alert_line only (the exception, not the frame before it)
    answer = faq_of(site, "deepspeed-fp16-loss-scale-at-minimum")["What text should I search for in my logs?"]
    assert "Current loss scale already at minimum - cannot decrease scale anymore" in answer
    assert "update_scale(has_overflow)" not in answer
    # only regular expressions (cuda-oom-fragmentation), only frames next to the generic OOM line
    # with no alert_line (cuda-oom-during-evaluation), no signature at all (a symptom): no question
    for entry_id in ("cuda-oom-fragmentation", "cuda-oom-during-evaluation", "distributed-training-slow-throughput"):
        assert "What text should I search for in my logs?" not in faq_of(site, entry_id), entry_id


def test_entry_pages_carry_metadata_for_search_engines(site: Path):
    tree = html(site / "entries" / SEED_ENTRY.stem / "index.html")
    canonical = tree.css_first('link[rel="canonical"]').attributes["href"]
    assert canonical == f"https://rootcause.github.io/rootcause/entries/{SEED_ENTRY.stem}/"
    assert tree.css_first('meta[property="og:type"]').attributes["content"] == "article"
    blocks = [json.loads(s.text()) for s in tree.css('script[type="application/ld+json"]')]
    assert [b["@type"] for b in blocks] == ["TechArticle"]
    reviewed = re.search(r"(?m)^reviewed: (\S+)$", SEED_ENTRY.read_text()).group(1)
    assert blocks[0]["dateModified"] == reviewed


def test_pages_have_no_inline_script_and_no_outside_requests(site: Path):
    for page in site.rglob("*.html"):
        tree = html(page)
        for script in tree.css("script"):
            if script.attributes.get("type") in ("application/ld+json", "application/json"):
                continue   # data, never run
            if page.name == "404.html" and not script.attributes.get("src"):
                # the one inline script: allowed by its hash in the page's own policy
                policy = tree.css_first('meta[http-equiv="Content-Security-Policy"]').attributes["content"]
                digest = base64.b64encode(hashlib.sha256(script.text().encode()).digest()).decode()
                assert f"'sha256-{digest}'" in policy
                continue
            assert script.attributes.get("src"), f"inline script in {page}"
            assert not script.attributes["src"].startswith(("http:", "https:", "//")), page
        for node in tree.css("link[rel=stylesheet], img, link[rel=icon]"):
            ref = node.attributes.get("href") or node.attributes.get("src")
            assert not ref.startswith(("http:", "https:", "//")), (page, ref)


def test_entry_pages_are_under_30_kb(site: Path):
    sizes = {p.parent.name: p.stat().st_size for p in (site / "entries").glob("*/index.html")}
    assert max(sizes.values()) < 30 * 1024, max(sizes.items(), key=lambda kv: kv[1])


def test_links_resolve_inside_the_site(site: Path):
    """Every relative link on every page points at a file of the built site: works under any sub-path."""
    broken = []
    for page in site.rglob("*.html"):
        if page.name == "404.html":
            continue
        for a in html(page).css("a[href], link[href], script[src]"):
            ref = a.attributes.get("href") or a.attributes.get("src")
            if ref.startswith(("http:", "https:", "#", "mailto:")):
                continue
            target = (page.parent / ref.split("#")[0].split("?")[0]).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append((page.relative_to(site).as_posix(), ref))
    assert broken == []


def test_404_page_links_from_the_configured_sub_path(site: Path):
    """Its assets are written for the configured sub-path, inside an inert <template> that its
    script adds to the page under the path the site is really at: none is requested before."""
    text = (site / "404.html").read_text(encoding="utf-8")
    head = text[text.index("<head>"):text.index("</head>")]
    kept = head[head.index('<template id="rc-assets">'):head.index("</template>")]
    outside = head.replace(kept, "")
    assert not re.search(r"<link [^>]*rel=\"(?:stylesheet|icon)\"|<script src=", outside), outside
    hrefs = re.findall(r'(?:href|src)="([^"]+)"', kept)
    assert len(hrefs) == 7 and all(h.startswith("/rootcause/") for h in hrefs), hrefs
    assert all((site / h[len("/rootcause/"):]).is_file() for h in hrefs), hrefs


def _entries_of_system() -> dict[str, dict[str, str]]:
    """system key → {entry id: phase}, read from the bundled entries' YAML."""
    import yaml

    systems: dict[str, dict[str, str]] = {}
    for path in sorted((REPO / "entries").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for system in data["systems"]:
            systems.setdefault(system, {})[data["id"]] = data["phase"]
    return systems


def test_system_hubs_list_each_entry_once_grouped_by_phase_in_one_table(site: Path):
    """A hub is one compact table: a row group per phase (site.yml's order), each entry once,
    as a link in its row header; no second listing of cards. The HTML stays small."""
    import yaml

    phase_order = list(yaml.safe_load((REPO / "site.yml").read_text(encoding="utf-8"))["vocabularies"]["phases"])
    for system, members in _entries_of_system().items():
        path = site / "systems" / system / "index.html"
        tree = html(path)
        assert tree.css("li.rc-card") == [], system
        tables = tree.css("article table.rc-compare")
        assert len(tables) == 1, system
        listed = [a.attributes["href"].rstrip("/").rsplit("/", 1)[-1]
                  for a in tree.css("article a[href*='entries/']")]
        assert sorted(listed) == sorted(members), system   # each entry exactly once
        groups = [th.attributes["id"].removeprefix("phase-") for th in tables[0].css("tbody > tr.rc-hub__phase > th")]
        assert groups == [p for p in phase_order if p in set(members.values())], system
        for body in tables[0].css("tbody"):
            phase = body.css_first("tr.rc-hub__phase > th").attributes["id"].removeprefix("phase-")
            for a in body.css("th[scope=row] a"):
                assert members[a.attributes["href"].rstrip("/").rsplit("/", 1)[-1]] == phase, (system, a.text())
        assert [a.attributes["href"] for a in tree.css("nav.rc-phases a")] == [f"#phase-{p}" for p in groups]
        assert path.stat().st_size < 8_000 + 700 * len(members), (system, path.stat().st_size)


def test_home_lists_categories_systems_and_recent(site: Path):
    tree = html(site / "index.html")
    assert tree.css_first("#rc-home-q") is not None
    assert [h.attributes["id"] for h in tree.css("h2")] == ["categories", "systems", "recent"]
    assert len(tree.css("#recent + ul li.rc-card")) >= 1


def test_sitemap_lists_every_entry_with_absolute_urls(site: Path):
    root = ET.parse(site / "sitemap.xml").getroot()
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    locs = [u.find("s:loc", ns).text for u in root.findall("s:url", ns)]
    for entry_id in bundled_ids():
        assert f"https://rootcause.github.io/rootcause/entries/{entry_id}/" in locs
    assert all(loc.startswith("https://rootcause.github.io/rootcause/") for loc in locs)
    assert "Sitemap: https://rootcause.github.io/rootcause/sitemap.xml" in (site / "robots.txt").read_text()


def test_feed_is_atom_with_the_entries(site: Path):
    root = ET.parse(site / "feed.xml").getroot()
    ns = {"a": "http://www.w3.org/2005/Atom"}
    titles = [e.find("a:title", ns).text for e in root.findall("a:entry", ns)]
    assert len(titles) == min(50, len(bundled_ids()))
    assert root.find("a:updated", ns).text.endswith("T00:00:00Z")


def test_search_index_is_sharded_and_finds_an_error_message(site: Path):
    from rootcause.site.search import decode_keys, doc_path, shard_key, shard_path
    from rootcause.text import terms

    manifest = json.loads((site / "search" / "manifest.json").read_text())
    keys = decode_keys(manifest["shards"])
    assert manifest["entries"] == len(bundled_ids())
    query = terms("size mismatch for decoder.layers.3.weight: copying a param with shape torch.Size([0]) from checkpoint")
    scores: dict[int, float] = {}
    matched: dict[int, int] = {}
    unique = set(query)
    for token in unique:  # the ranking search.js applies: summed scores times query coverage
        key = shard_key(keys, token)
        if key is None:
            continue
        shard = json.loads((site / shard_path(key)).read_text())
        flat = shard.get(token, [])
        for doc, score in zip(flat[::2], flat[1::2]):
            scores[doc] = scores.get(doc, 0) + score
            matched[doc] = matched.get(doc, 0) + 1
    best = max(scores, key=lambda d: scores[d] * (1 + matched[d] / len(unique)))
    per = manifest["docs_per_shard"]
    rows = json.loads((site / doc_path(best // per)).read_text())
    assert dict(zip(manifest["doc_fields"], rows[best % per]))["id"] == SEED_ENTRY.stem
    biggest = max(p.stat().st_size for p in (site / "search" / "t").glob("*.json"))
    assert biggest < 32 * 1024


def test_tokens_find_identifiers_whole_and_by_parts():
    from rootcause.text import tokens

    assert tokens("CUDA_VISIBLE_DEVICES") == ["cuda_visible_devices", "cuda", "visible", "device"]
    # a word joined to a short number by "_" or "-" comes first also written together (rank_0 → rank0)
    assert tokens("zero_pp_rank_0_mp_rank_00_model_states.pt")[:8] == [
        "rank0", "rank00", "zero_pp_rank_0_mp_rank_00_model_states", "zero", "pp", "rank", "0", "mp"]
    assert tokens("weights entries process") == ["weight", "entry", "process"]
    # short hex-looking words are terms; a case or digit change leaves no two-letter scrap ("bf")
    assert tokens("bf16 on an A100") == ["bf16", "a100"]
    assert tokens("ChildFailedError") == ["childfailederror", "child", "failed", "error"]
    assert tokens("at 0x7f3a2c4d 12345 the deadbeef42 step") == ["step"]  # volatile tokens and stop words dropped
    assert tokens("torch.Size([0]) stage 3") == ["torch", "size", "0", "stage", "3"]


def test_two_builds_are_byte_identical(tmp_path: Path, site: Path):
    again = tmp_path / "again"
    build(REPO, out=again, progress=False, force=True)
    first = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*") if p.is_file()}
    assert first.keys() == second.keys()
    assert [k for k in first if first[k] != second[k]] == []


def test_unchanged_inputs_build_nothing(small_project: Path):
    first = build(small_project, progress=False)
    assert not first.up_to_date and first.entries == 1
    second = build(small_project, progress=False)
    assert second.up_to_date


def test_a_change_anywhere_in_the_package_is_a_reason_to_build(small_project: Path, tmp_path: Path):
    """The up-to-date test stats every module of the package, not only the site's: in a copy of
    the checkout, an edit to the entry schema or to the matcher makes the next build run."""
    import subprocess
    import sys

    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "rootcause", checkout / "rootcause", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "theme", checkout / "theme")
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONSAFEPATH": "1"}

    def run() -> str:
        done = subprocess.run([sys.executable, "-m", "rootcause.commands.cli", "--root", str(small_project), "build",
                               "-q"], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr

    assert "built 1 entries" in run()
    assert "up to date" in run()
    for module in ("entries/schema.py", "matching/patterns.py"):
        with open(checkout / "rootcause" / module, "a", encoding="utf-8") as source:
            source.write("\n# edited\n")
        assert "built 1 entries" in run(), module
        assert "up to date" in run()


def test_a_library_installed_or_upgraded_is_a_reason_to_build(small_project: Path, tmp_path: Path, monkeypatch):
    """Pages are made by libraries (Pygments, jinja2, Material's stylesheets): a change to the
    folder a cached library is installed in (an upgrade renames its metadata folder there) makes
    the next build run, through the build cache's version check."""
    from cache_helpers import installed_fake_library
    from rootcause.site import stamps

    metadata = installed_fake_library(tmp_path / "elsewhere", monkeypatch)
    assert str(metadata.parent).encode() in stamps._library_folders()
    assert not build(small_project, progress=False).up_to_date
    assert build(small_project, progress=False).up_to_date
    time.sleep(0.01)   # past the folder's last time on a file system of coarse times
    metadata.rename(metadata.parent / "fakelib-3.0.dist-info")
    assert not build(small_project, progress=False).up_to_date
    assert build(small_project, progress=False).up_to_date


@pytest.mark.parametrize("change", ["edit", "add", "add-folder", "remove", "rename", "link"])
def test_a_site_changed_by_hand_is_not_up_to_date(small_project: Path, change: str):
    """`output_intact` reads no file and lists no folder: each of these changes must still show,
    in a file's or a folder's modification time or type, and the next build restores the site."""
    build(small_project, progress=False)
    out = small_project / "site"
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    page = next(out.glob("entries/*/index.html"))
    time.sleep(0.01)   # past the build's recorded end on a file system of coarse times
    if change == "edit":
        page.write_bytes(page.read_bytes() + b"<!-- edited -->")
    elif change == "add":
        (page.parent / "extra.html").write_text("planted")
    elif change == "add-folder":
        (page.parent / "extra").mkdir()
    elif change == "remove":
        page.unlink()
    elif change == "rename":
        page.rename(page.parent / "moved.html")
    else:
        text = page.read_bytes()
        page.unlink()
        (small_project / "outside.html").write_bytes(text)
        page.symlink_to(small_project / "outside.html")
    result = build(small_project, progress=False)
    assert not result.up_to_date
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() or p.is_symlink()}
    assert after == before and not page.is_symlink() and not (page.parent / "extra").exists()


def test_failed_build_leaves_the_previous_site_intact(small_project: Path):
    build(small_project, progress=False)
    out = small_project / "site"
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    entry = small_project / "entries" / SEED_ENTRY.name
    entry.write_text(entry.read_text().replace("severity: high", "severity: catastrophic"))
    result = run_cli("--root", str(small_project), "build")
    assert result.returncode == 1
    assert "error[E013]: severity: 'catastrophic' is not in site.yml's severities" in result.stderr.decode()
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    # no staging folder is left behind; the lock file next to the output is the builds' own
    assert [p.name for p in small_project.iterdir() if p.name.startswith(".site") and p.name != ".site.lock"] == []


def test_build_refuses_to_replace_a_folder_it_did_not_write(small_project: Path):
    foreign = small_project / "elsewhere"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep me")
    with pytest.raises(RootcauseError) as info:
        build(small_project, out=foreign, progress=False)
    assert info.value.diagnostics[0].code == "E050"
    assert (foreign / "precious.txt").read_text() == "keep me"
    with pytest.raises(RootcauseError):
        build(small_project, out=small_project, progress=False)


def test_writer_refuses_paths_outside_the_output(tmp_path: Path):
    from rootcause.site.write import write_site

    with pytest.raises(RootcauseError):
        write_site(tmp_path / "out", {"../escape.html": b"x"})
    assert not (tmp_path / "escape.html").exists()
    assert not (tmp_path / "out").exists()


def test_theme_override_replaces_a_template(small_project: Path):
    theme = small_project / "my-theme" / "templates"
    theme.mkdir(parents=True)
    (theme / "404.html").write_text('{% extends "base.html" %}{% block content %}<h1>Custom lost page</h1>{% endblock %}')
    site_yml = small_project / "site.yml"
    site_yml.write_text(site_yml.read_text() + "theme: my-theme\n")
    build(small_project, progress=False)
    assert "Custom lost page" in (small_project / "site" / "404.html").read_text()


def test_material_styles_are_served_from_the_site(site: Path):
    css = list((site / "assets" / "material").glob("main.*.css"))
    assert len(css) == 1 and css[0].stat().st_size > 50_000
    assert b"fonts.googleapis" not in (site / "index.html").read_bytes()


def test_code_is_highlighted_and_example_logs_mark_what_the_signature_matched(site: Path):
    tree = html(site / "entries" / "cuda-out-of-memory" / "index.html")
    python = [c for c in tree.css("div.highlight code.language-python")]
    assert python and any(span.attributes.get("class") in ("k", "kn", "nb", "s1", "s2", "mi", "c1")
                          for code in python for span in code.css("span"))
    marks = [m.text() for m in tree.css(".rc-example pre mark")]
    assert marks and all(m.startswith("CUDA") or "out of memory" in m or "CUBLAS" in m for m in marks), marks
    # every shown example log is cut to the lines around its match (at most 16; a log only one or
    # two lines longer is shown whole), saying how many it leaves out
    cut = 0
    for entry in bundled_ids():
        for log in html(site / "entries" / entry / "index.html").css(".rc-example pre code"):
            lines = log.text().split("\n")
            kept = [line for line in lines if not line.startswith("⋯ ")]
            assert len(kept) <= 18, (entry, len(kept))
            cut += len(kept) < len(lines)
    assert cut > 0


def test_every_example_log_is_shown_with_its_match_marked_and_long_ones_collapsible(site: Path):
    """Not one example per signature and a pointer to the YAML: every example, real ones first,
    each with the text its signature matched in a <mark>; a log of more than 8 lines shown in a
    <details> (open), so that a reader can fold it away."""
    import yaml

    folded = 0
    for entry in bundled_ids():
        data = yaml.safe_load((REPO / "entries" / f"{entry}.yaml").read_text(encoding="utf-8"))
        tree = html(site / "entries" / entry / "index.html")
        assert "the entry's file" not in tree.css_first("#signatures").text() if data.get("signatures") else True
        for number, signature in enumerate(data.get("signatures") or [], 1):
            figures = tree.css(f"#signature-{number} .rc-example figure")
            assert len(figures) == len(signature["examples"]), (entry, number)
            origins = [f.css_first("figcaption").attributes["class"] for f in figures]
            real = sum(1 for ex in signature["examples"] if "assembled" not in ex)
            assert origins[:real] == [o for o in origins if o != "rc-origin--assembled"], (entry, origins)
            for figure in figures:
                code = figure.css_first("pre code")
                assert code.css("mark"), (entry, number, code.text()[:200])
                lines = code.text().count("\n") + 1
                folder = figure.css_first("details")
                assert (folder is not None) == (lines > 8), (entry, number, lines)
                if folder is not None:
                    assert "open" in folder.attributes and folder.css_first("summary").text() == f"{lines} lines"
                    folded += 1
    assert folded > 0


def test_hub_tables_show_signatures_as_messages_never_as_regexes(site: Path):
    cells = [code.text() for page in sorted((site / "systems").glob("*/index.html"))
             for code in html(page).css("td code")]
    assert len(cells) > 100
    for text in cells:
        assert not re.search(r"\\|\[0-9|\[A-Za-z|\[\^|\(\?:|[)\]][?*+]|\{(int|name|path|any|float)\}", text), text
    assert "'] exits with return code = N" in cells


def test_backlinks_are_capped_per_relation_and_the_rest_counted(site: Path):
    from rootcause.site.render import BACKLINKS_SHOWN, LINKS_PER_RELATION

    tree = html(site / "entries" / "torchrun-child-failed-error" / "index.html")
    own = set(re.findall(r"(?m)^  - id: (\S+)", (REPO / "entries" / "torchrun-child-failed-error.yaml").read_text()))
    incoming = [p.stem for p in (REPO / "entries").glob("*.yaml")
                if re.search(r"(?m)^  - id: torchrun-child-failed-error$", p.read_text()) and p.stem not in own]
    assert len(incoming) > BACKLINKS_SHOWN   # the case the cap is for
    items = tree.css("#related li")
    shown = sum(len(li.css("a")) for li in items)
    more = sum(int(m) for li in items for m in re.findall(r"and (\d+) more", li.text()))
    assert shown + more == len(own | set(incoming))
    for li in items:
        links = [a.attributes["href"].strip("./").split("/")[-1] for a in li.css("a")]
        assert len([l for l in links if l not in own]) <= BACKLINKS_SHOWN
        assert len(links) <= max(LINKS_PER_RELATION, len([l for l in links if l in own]))


def test_content_headings_get_githubs_anchors_and_links_by_file_name_reach_the_page():
    from rootcause.site.content import markdown, with_heading_ids, with_page_links

    html = str(with_heading_ids(markdown("## The report (`diagnose --json`)\n\n### Search\n\n## Search\n\n## Content\n")))
    assert '<h2 id="the-report-diagnose---json">The report (<code>diagnose --json</code>)<a class="headerlink" ' \
           'href="#the-report-diagnose---json" aria-label="Permalink">#</a></h2>' in html
    assert 'id="search"' in html and 'id="search-1"' in html
    assert 'id="content-1"' in html and 'id="content"' not in html   # base.html's <main id="content">
    linked = str(with_page_links(markdown("[a](internals.md#the-store) [b](measurements.md) [c](../x.md) "
                                          "[d](https://example.com/y.md)")))
    assert 'href="../internals/#the-store"' in linked and 'href="../measurements/"' in linked
    assert 'href="../x.md"' in linked and 'href="https://example.com/y.md"' in linked


def test_the_readmes_links_exist_and_its_pages_and_headings_are_on_the_site(site: Path):
    """The README links pages of content/ by their path in the repository (read on GitHub); the
    site renders the same files, with the same heading anchors."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert len(links) >= 8
    for link in links:
        if link.startswith("https://"):
            continue
        path, _, fragment = link.partition("#")
        assert (REPO / path).exists(), link
        if path.startswith("content/"):
            page = site / Path(path).stem / "index.html"
            assert page.is_file(), link
            if fragment:
                assert f'id="{fragment}"' in page.read_text(encoding="utf-8"), link
