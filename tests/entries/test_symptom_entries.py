"""Failures that print no error (`role: symptom`): entries without signatures, checked by E053,
shown as such on their page, found by search and never by diagnosis, and counted by the
frequency study as covered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from conftest import REPO, make_project, run_cli
from rootcause.site.builder import build

#: the classes the study reports three times or more whose failure prints no error
SYMPTOM_CLASSES = ("distributed-training-slow-throughput", "training-loss-regression-after-upgrade",
                   "loss-plateau-not-learning", "deepspeed-zero-stage-results-differ",
                   "peft-lora-slower-than-full-finetune")

ENTRY = """\
id: {id}
title: Training much slower on two nodes than on one
summary: Nothing fails; the all-reduce crosses a slow network. Measure it and fix the transport.
category: communication
systems: [nccl]
phase: communication
severity: medium
role: {role}
{signatures}symptoms:
  - observed: Samples per second fall when a second node is added.
    why: Every step waits for the gradient all-reduce.
root_cause: NCCL uses TCP sockets between the nodes.
confirm:
  - step: Read the network NCCL chose.
    command: NCCL_DEBUG=INFO torchrun train.py 2>&1 | grep "Using network"
fix:
  - Give NCCL the fast fabric.
reviewed: 2026-12-01
"""

SIGNATURE = """\
signatures:
  - pattern: "Training much slower than expected on node {int}"
    source: a test
    examples:
      - log: "Training much slower than expected on node 3"
        assembled: "tests/entries/test_symptom_entries.py, SIGNATURE"
"""


def write(project: Path, entry_id: str, role: str, signatures: str = "", text: str | None = None) -> Path:
    path = project / "entries" / f"{entry_id}.yaml"
    path.write_text(text or ENTRY.format(id=entry_id, role=role, signatures=signatures), encoding="utf-8")
    return path


def check(project: Path) -> tuple[int, str]:
    result = run_cli("--root", str(project), "check")
    return result.returncode, result.stdout.decode()


def test_a_symptom_entry_without_signatures_is_valid(tmp_path: Path):
    project = make_project(tmp_path / "p")
    write(project, "slow-two-nodes", "symptom")
    code, out = check(project)
    assert code == 0, out
    assert "E053" not in out


def test_a_cause_without_signatures_is_refused_at_its_role(tmp_path: Path):
    project = make_project(tmp_path / "p")
    write(project, "slow-two-nodes", "cause")
    code, out = check(project)
    assert code == 1
    # no 'signatures' key: the error points at the role that requires them (line 8, column 7)
    assert ("entries/slow-two-nodes.yaml:8:7: error[E053]: signatures: an entry with role: cause needs at "
            "least one signature — add the error text the failure prints under 'signatures'; if it prints "
            "none (slow throughput, a loss that does not fall), set role: symptom") in out, out


def test_an_empty_signature_list_is_refused_where_it_is_written(tmp_path: Path):
    project = make_project(tmp_path / "p")
    write(project, "slow-two-nodes", "consequence", signatures="signatures: []\n")
    code, out = check(project)
    assert code == 1
    assert "entries/slow-two-nodes.yaml:9:13: error[E053]: signatures: an entry with role: consequence needs" in out, out


def test_a_symptom_entry_with_signatures_is_refused(tmp_path: Path):
    project = make_project(tmp_path / "p")
    write(project, "slow-two-nodes", "symptom", signatures=SIGNATURE)
    code, out = check(project)
    assert code == 1
    assert ("entries/slow-two-nodes.yaml:10:3: error[E053]: signatures: an entry with role: symptom has no "
            "signatures; this one lists 1") in out, out
    # the same text as a cause is a valid entry
    write(project, "slow-two-nodes", "cause", signatures=SIGNATURE)
    assert check(project)[0] == 0


def test_a_symptom_entry_must_say_what_to_observe_and_measure(tmp_path: Path):
    project = make_project(tmp_path / "p")
    text = ENTRY.format(id="slow-two-nodes", role="symptom", signatures="")
    start, end = text.index("confirm:"), text.index("fix:")
    write(project, "slow-two-nodes", "symptom", text=text[:start] + text[end:])
    code, out = check(project)
    assert code == 1
    assert ("entries/slow-two-nodes.yaml:8:7: error[E053]: confirm: an entry with role: symptom needs 'confirm'"
            in out), out


def test_e049_is_documented_and_in_the_editor_schema():
    from rootcause.errors import CODES

    assert "E053" in CODES
    docs = (REPO / "content" / "writing-entries.md").read_text(encoding="utf-8")
    assert "\n### E053: " in docs and "role: symptom" in docs
    schema = json.loads((REPO / "entry.schema.json").read_text(encoding="utf-8"))
    assert "symptom" in schema["properties"]["role"]["enum"]
    rule = schema["allOf"][0]
    assert rule["if"]["properties"]["role"] == {"const": "symptom"}
    assert rule["then"]["properties"]["signatures"] == {"maxItems": 0}
    assert rule["else"]["required"] == ["signatures"]


def test_editor_schema_accepts_a_symptom_entry_and_refuses_a_cause_without_signatures():
    import jsonschema
    import yaml

    schema = json.loads((REPO / "entry.schema.json").read_text(encoding="utf-8"))
    symptom = yaml.safe_load(ENTRY.format(id="slow-two-nodes", role="symptom", signatures=""))
    symptom["reviewed"] = "2026-12-01"
    jsonschema.validate(symptom, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**symptom, "role": "cause"}, schema)


def test_new_symptom_scaffolds_an_entry_without_signatures(tmp_path: Path):
    project = make_project(tmp_path / "p")
    assert run_cli("--root", str(project), "new", "slow-thing", "--symptom").returncode == 0
    text = (project / "entries" / "slow-thing.yaml").read_text(encoding="utf-8")
    assert "role: symptom" in text and "\nsignatures:" not in text and "\nconfirm:" in text
    out = check(project)[1]
    assert "E013" in out and "E053" not in out and "E011" not in out   # only the TODO vocabulary ids remain
    assert run_cli("--root", str(project), "new", "x", "--symptom", "--from-log", "a.log").returncode == 2


def test_a_project_of_symptom_entries_only_builds_and_diagnoses_nothing(tmp_path: Path):
    project = make_project(tmp_path / "p")
    write(project, "slow-two-nodes", "symptom")
    out = tmp_path / "site"
    build(project, out=out, progress=False)
    data = json.loads((out / "search" / "signatures.json").read_text(encoding="utf-8"))
    # no signature to match; a row, so that a report can name the entry for what a log shows
    # without an error line (metrics.loss_symptom)
    assert data["signatures"] == [] and list(data["entries"]) == ["slow-two-nodes"]
    assert data["entries"]["slow-two-nodes"]["role"] == "symptom"
    assert (out / "entries" / "slow-two-nodes" / "index.html").is_file()
    log = tmp_path / "train.log"
    log.write_text("Training much slower than expected on node 3\n", encoding="utf-8")
    result = run_cli("--root", str(project), "diagnose", "--json", str(log))
    assert result.returncode == 1, result.stderr.decode()    # nothing found: no entry can match
    assert "slow-two-nodes" not in result.stdout.decode()
    exported = run_cli("--root", str(project), "export", "--format", "loki").stdout.decode()
    assert "slow-two-nodes: prints no error (role: symptom)" in exported


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("built") / "site"
    build(REPO, out=out, progress=False)
    return out


def test_the_five_symptom_classes_have_entries_of_role_symptom():
    for entry_id in SYMPTOM_CLASSES:
        text = (REPO / "entries" / f"{entry_id}.yaml").read_text(encoding="utf-8")
        assert "\nrole: symptom\n" in text and "\nsignatures:" not in text, entry_id


def test_a_symptom_entry_page_says_it_prints_no_error(site: Path):
    page = site / "entries" / "distributed-training-slow-throughput" / "index.html"
    tree = HTMLParser(page.read_text(encoding="utf-8"))
    assert tree.css_first("#signatures") is None
    section = tree.css_first("#no-error")
    assert section.css_first("h2").text().startswith("No error message")
    assert "This failure prints no error" in section.text()
    assert section.css_first('a[href="#confirm"]') is not None
    toc = [a.attributes["href"] for a in tree.css(".rc-toc a")]
    assert toc[:2] == ["#no-error", "#symptoms"]
    assert len(tree.css("#symptoms tbody tr")) >= 3
    assert any("all_reduce_perf" in code.text() for code in tree.css("#confirm pre code"))
    questions = [s.text() for s in tree.css("#faq summary")]
    assert "What text should I search for in my logs?" not in questions
    assert page.stat().st_size < 30 * 1024
    # the system hub's comparison table says so instead of showing a signature
    hub = HTMLParser((site / "systems" / "nccl" / "index.html").read_text(encoding="utf-8"))
    row = next(tr for tr in hub.css(".rc-compare tbody tr")   # the phase rows hold no link
               if tr.css_first("a") is not None
               and tr.css_first("a").attributes["href"].endswith("distributed-training-slow-throughput/"))
    assert row.css("td")[1].text() == "prints no error"   # severity, signature, first fix step


def test_symptom_entries_are_searchable_and_have_a_row_but_no_signature(site: Path):
    from rootcause.site.search import SearchIndex

    index = SearchIndex.from_folder(site)
    for query, expected in [("two nodes slower than one node NCCL Using network Socket", SYMPTOM_CLASSES[0]),
                            ("loss worse after upgrading transformers", SYMPTOM_CLASSES[1]),
                            ("training loss not decreasing stuck", SYMPTOM_CLASSES[2]),
                            ("ZeRO stages different loss", SYMPTOM_CLASSES[3]),
                            ("LoRA slower than full fine-tuning", SYMPTOM_CLASSES[4])]:
        assert index.query(query, 3)[0]["id"] == expected, query
    data = json.loads((site / "search" / "signatures.json").read_text(encoding="utf-8"))
    assert all(data["entries"][entry_id]["role"] == "symptom" for entry_id in SYMPTOM_CLASSES)   # a row, no signature
    assert not any(entry_id in json.dumps(data["signatures"]) for entry_id in SYMPTOM_CLASSES)


def test_the_frequency_page_shows_the_five_classes_covered(site: Path):
    page = HTMLParser((site / "frequency" / "index.html").read_text(encoding="utf-8"))
    gaps = page.css_first("#gaps")
    gap_text = gaps.next.text() if gaps is not None and gaps.next is not None else ""
    rows = {}   # of every table: the overall one and the one of each system
    for tr in page.css("table.rc-frequency tbody tr"):
        link = tr.css_first("td a")
        if link is not None:
            rows[link.attributes["href"]] = tr
    for entry_id in SYMPTOM_CLASSES:
        assert f"../entries/{entry_id}/" in rows, entry_id
        assert "no entry yet" not in rows[f"../entries/{entry_id}/"].text()
        assert entry_id not in gap_text
