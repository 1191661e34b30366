"""The compiled signature index in the project's store: `diagnose` reads it instead of checking
every entry, reports exactly what the checked entries give, and never trusts a stale, corrupted
or forged one."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from cache_helpers import flip_byte, store_of
from conftest import REPO, make_project, run_cli

from rootcause import inputs
from rootcause.cache import RecordStore
from rootcause.encyclopedia import Encyclopedia, _from_cache
from rootcause.entries.project import open_project
from rootcause.entries.study import COLUMNS
from rootcause.site.diagnosis_index import HEAD, RECORDS, load, store

LOGS = sorted((REPO / "tests" / "logs").rglob("*.log"))
HEALTHY = "tests/logs/healthy"


def copy_project(folder: Path) -> Path:
    """The repository's project (site.yml with its healthy logs, every entry) in a folder of its own."""
    project = make_project(folder, sorted((REPO / "entries").glob("*.yaml")), healthy=True)
    shutil.copytree(REPO / HEALTHY, project / HEALTHY)
    return project


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return copy_project(tmp_path_factory.mktemp("index") / "project")


@pytest.fixture
def own_project(tmp_path: Path) -> Path:
    """A project of two real entries (their links to others removed), to edit freely."""
    names = ["ds-to-universal-zero3-multiple-subgroups", "zero3-state-dict-saved-without-gathering"]
    folder = make_project(tmp_path / "project", [REPO / "entries" / f"{n}.yaml" for n in names])
    for path in (folder / "entries").glob("*.yaml"):   # no links to entries this project lacks
        text = path.read_text(encoding="utf-8")
        if "\nrelated:" in text:
            start = text.index("\nrelated:")
            end = re.compile(r"\n[a-z_]+:").search(text, start + 1).start()
            path.write_text(text[:start] + text[end:], encoding="utf-8")
    assert not [d for d in open_project(folder)[1] if d.severity == "error"]
    return folder


def cache_file(root: Path) -> Path:
    """The index's head record."""
    return store_of(root) / RECORDS / HEAD


def head(root: Path) -> dict:
    return json.loads(RecordStore(root, RECORDS).get(HEAD))


def sections_of(root: Path) -> dict[str, bytes]:
    """Every section of the stored index, by name."""
    records = RecordStore(root, RECORDS)
    return {name: records.get(digest) for name, digest in head(root)["sections"].items()}


def section_file(root: Path, name: str) -> Path:
    return store_of(root) / RECORDS / head(root)["sections"][name]


def fresh(root: Path) -> bool:
    return load(root.resolve()) is not None


def test_every_log_gets_the_same_report_from_the_index_as_from_the_checked_entries(project: Path):
    slow = Encyclopedia.from_project(project, use_cache=False)   # checks every entry, then stores the index
    assert _from_cache(project) is not None, "the slow path stored no index"
    fast = Encyclopedia.from_project(project)
    assert fast.base_url == slow.base_url and fast.origin == slow.origin
    assert type(fast.infos).__name__ == "_IndexedInfos"   # really read from the compiled index
    assert len(LOGS) >= 25 and any("cases" in p.parts for p in LOGS)
    unknown = 0
    for log in LOGS:
        slow_report, fast_report = slow.diagnose_paths([log]), fast.diagnose_paths([log])
        assert fast_report == slow_report, log.name
        unknown += bool(slow_report["possible"])
    assert unknown, "no log exercised the 'possibly related' tier"


def test_the_cli_prints_the_same_text_and_json_from_the_index(project: Path, tmp_path: Path):
    log = REPO / "tests" / "logs" / "repro" / "deepspeed-0.17.6.log"
    unknown = tmp_path / "unknown.log"
    unknown.write_text("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                       "RuntimeError: CUDA error: an illegal memory access was encountered in the gather\n")
    for args in (["--json", str(log)], [str(log)], ["--json", str(unknown)], [str(unknown)]):
        slow = run_cli("--root", str(project), "diagnose", "--no-cache", *args)
        fast = run_cli("--root", str(project), "diagnose", *args)
        assert fast.returncode == slow.returncode and fast.stdout == slow.stdout and fast.stdout


def test_the_fast_path_loads_no_schema_no_pydantic_and_nothing_that_renders(project: Path, tmp_path: Path):
    assert run_cli("--root", str(project), "check").returncode == 0
    assert fresh(project)
    log = tmp_path / "short.log"
    log.write_text("RuntimeError: something no entry knows\n")
    probe = ("import sys\nfrom rootcause.commands.cli import main\n"
             f"code = main(['--root', {str(project)!r}, 'diagnose', {str(log)!r}])\n"
             "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'jinja2', 'markdown_it', 'yaml')"
             " or m.startswith(('rootcause.entries.schema', 'rootcause.entries.catalog', 'rootcause.entries.project', "
             "'rootcause.config', 'rootcause.validation', 'rootcause.located_yaml', 'rootcause.site.render', "
             "'rootcause.site.content', 'rootcause.site.builder', 'http.server')))\n"
             "print('HEAVY', heavy, code)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert "HEAVY [] 3" in out.stdout, out.stdout + out.stderr


def test_check_and_build_store_the_index_and_a_failing_check_does_not(own_project: Path, tmp_path: Path):
    assert not cache_file(own_project).exists()
    assert run_cli("--root", str(own_project), "check").returncode == 0
    assert fresh(own_project)
    cached = store_of(own_project)
    shutil.rmtree(cached)
    assert run_cli("--root", str(own_project), "build", "-q", "--out", str(tmp_path / "site")).returncode == 0
    assert fresh(own_project)
    # the index holds the data of the built site's signatures.json and its search files
    site = json.loads((tmp_path / "site" / "search" / "signatures.json").read_bytes())
    read = sections_of(own_project)
    records = [json.loads(line) for line in read["records"].splitlines()]
    assert records == site["signatures"]
    count = sum(1 for name in read if name.startswith("entries."))
    rows = dict(json.loads(line) for k in range(count) for line in read[f"entries.{k}"].splitlines())
    assert rows == site["entries"] and json.loads(read["consequences"]) == site["consequences"]
    places = json.loads(read["search_index"])
    assert places and all((tmp_path / "site" / path).read_bytes() == read[f"search.{k}"][at:at + length]
                          for path, (k, at, length, _crc) in places.items())
    assert set(places) == {p.relative_to(tmp_path / "site").as_posix()
                           for p in (tmp_path / "site" / "search").rglob("*.json")} - {"search/signatures.json"}
    shutil.rmtree(cached)
    entry = next((own_project / "entries").glob("*.yaml"))
    entry.write_text(entry.read_text(encoding="utf-8").replace("\ntitle:", "\ntitle: [", 1), encoding="utf-8")
    assert run_cli("--root", str(own_project), "check").returncode == 1
    assert not cache_file(own_project).exists()
    failed = run_cli("--root", str(own_project), "diagnose", str(REPO / "tests" / "logs" / "repro" / "deepspeed-0.17.6.log"))
    assert failed.returncode == 2 and b"the entries have errors" in failed.stderr
    assert not cache_file(own_project).exists()


def _diagnose_json(root: Path, log: Path, *extra: str) -> dict:
    result = run_cli("--root", str(root), "diagnose", "--json", *extra, str(log))
    return json.loads(result.stdout)


def test_an_edited_entry_makes_the_index_stale_and_diagnose_reports_the_edit(own_project: Path):
    log = REPO / "tests" / "logs" / "repro" / "deepspeed-0.17.6.log"
    assert run_cli("--root", str(own_project), "check").returncode == 0
    entry = own_project / "entries" / "zero3-state-dict-saved-without-gathering.yaml"
    text = entry.read_text(encoding="utf-8")
    before = _diagnose_json(own_project, log)
    old_title = next(r["title"] for r in before["results"] if r["entry"] == entry.stem)
    entry.write_text(text.replace(f"title: {old_title}", "title: An edited title", 1)
                     if f"title: {old_title}" in text else text.replace("\ntitle: ", "\ntitle: Edited ", 1),
                     encoding="utf-8")
    assert not fresh(own_project)
    after = _diagnose_json(own_project, log)
    new_title = next(r["title"] for r in after["results"] if r["entry"] == entry.stem)
    assert new_title != old_title and "dited" in new_title
    assert fresh(own_project)   # the diagnose that checked the entries stored them again


@pytest.mark.parametrize("change", ["new entry", "removed entry", "site.yml", "healthy log", "study table",
                                    "same size edit",
                                    "entries folder replaced by a link"])
def test_any_change_to_an_input_is_seen(own_project: Path, change: str, tmp_path: Path):
    project = own_project
    text = (project / "site.yml").read_text(encoding="utf-8")
    (project / "site.yml").write_text(text.rstrip("\n") + "\nhealthy_logs: logs\nstudy: study\n", encoding="utf-8")
    (project / "logs").mkdir()
    (project / "logs" / "ok.log").write_text("step 1 loss 2.0\n")
    (project / "study").mkdir()
    (project / "study" / "pt.tsv").write_text("\t".join(COLUMNS) + "\n", encoding="utf-8")
    assert run_cli("--root", str(project), "check").returncode == 0 and fresh(project)
    entries = sorted((project / "entries").glob("*.yaml"))
    if change == "new entry":
        shutil.copy(entries[0], project / "entries" / "zzz-copy.yaml")
    elif change == "removed entry":
        entries[0].unlink()
    elif change == "site.yml":
        site = project / "site.yml"
        site.write_text(site.read_text(encoding="utf-8").replace("title:", "title: X", 1), encoding="utf-8")
    elif change == "study table":   # check reports a bad row (E046): the index must not outlive it
        with (project / "study" / "pt.tsv").open("a", encoding="utf-8") as table:
            table.write("not a row\n")
    elif change == "healthy log":
        (project / "logs" / "more.log").write_text("step 2 loss 1.9\n")
    elif change == "same size edit":   # and the old modification time put back: the hash still differs
        data = entries[0].read_bytes()
        stat = entries[0].stat()
        at = data.index(b"\ntitle: ") + 8
        entries[0].write_bytes(data[:at] + (b"Q" if data[at:at + 1] != b"Q" else b"R") + data[at + 1:])
        os.utime(entries[0], ns=(stat.st_atime_ns, stat.st_mtime_ns))
    else:
        elsewhere = tmp_path / "elsewhere"
        shutil.move(project / "entries", elsewhere)
        (project / "entries").symlink_to(elsewhere)
    assert not fresh(project), change


def test_a_touched_or_copied_project_is_still_fresh_and_takes_the_cheap_path_again(own_project: Path, tmp_path: Path):
    assert run_cli("--root", str(own_project), "check").returncode == 0
    for entry in (own_project / "entries").glob("*.yaml"):
        os.utime(entry)   # a checkout: new times, same bytes
    header = head(own_project)
    assert fresh(own_project)   # the cheap test failed, the hashes held: stored with the new stat keys
    refreshed = head(own_project)
    assert refreshed["stat_digest"] != header["stat_digest"] and refreshed["key"] == header["key"]
    copy = tmp_path / "copy"
    shutil.copytree(own_project, copy)   # another path: another store, so no index
    assert not fresh(copy)


def test_a_change_to_the_code_makes_the_index_stale(own_project: Path, tmp_path: Path, monkeypatch):
    package = tmp_path / "package"
    shutil.copytree(inputs.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__", "theme"))
    monkeypatch.setattr(inputs, "PACKAGE", package)
    project, _problems = open_project(own_project)
    assert store(project) and fresh(own_project)
    with (package / "matching" / "patterns.py").open("a") as stream:
        stream.write("\n# another version\n")
    assert not fresh(own_project)


def test_an_input_changed_while_it_was_checked_stores_nothing(own_project: Path):
    project, _problems = open_project(own_project)
    entry = next((own_project / "entries").glob("*.yaml"))
    entry.write_text(entry.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert not store(project)
    assert not cache_file(own_project).exists()


@pytest.mark.parametrize("changed", ["an entry hashed again", "an entry not hashed again"])
def test_an_index_stored_while_an_input_changed_is_never_fresh(own_project: Path, changed: str):
    """Only the files hashed by this store are stat-ed again: one that changed after its stat key
    was taken and was not hashed keeps the earlier hash under that key, so the next freshness
    test finds it changed."""
    entries = sorted((own_project / "entries").glob("*.yaml"))
    assert store(open_project(own_project)[0])
    if changed == "an entry hashed again":   # its stat key is new: store hashes it
        entries[0].write_text(entries[0].read_text(encoding="utf-8") + "\n", encoding="utf-8")
    project, _problems = open_project(own_project)
    entries[0].write_text(entries[0].read_text(encoding="utf-8") + "# and again\n", encoding="utf-8")
    stored = store(project)
    assert not fresh(own_project)
    assert stored is None if changed == "an entry hashed again" else stored


def _corrupt(root: Path, how: str) -> Path:
    """Damage the stored index as `how` says; returns the record file changed."""
    path = cache_file(root)
    if how.startswith("flipped byte in "):   # in the middle of one section
        section = how.rsplit(" ", 1)[1]
        if section == "search":   # in the manifest, which every query reads
            k, at, _length, _crc = json.loads(sections_of(root)["search_index"])["search/manifest.json"]
            return flip_byte(section_file(root, f"search.{k}"), into=at + 20)
        return flip_byte(section_file(root, "entries.0" if section == "entries" else section))
    data = path.read_bytes()
    if how == "cut short":
        path.write_bytes(data[:len(data) // 2])
    elif how == "longer":
        path.write_bytes(data + b"x")
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "garbage":
        path.write_bytes(os.urandom(5000))
    elif how == "header":   # another format, its hash right
        RecordStore(root, RECORDS).put(HEAD, data.split(b"\n", 1)[1].replace(b'"format":', b'"format":"x', 1))
    elif how == "link":
        target = path.with_name("elsewhere")
        path.rename(target)
        path.symlink_to(target.name)
    elif how == "folder link":
        folder = path.parent
        moved = folder.with_name("moved-cache")
        folder.rename(moved)
        folder.symlink_to(moved.name)
    return path


UNKNOWN = (b"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
           b"RuntimeError: CUDA error: an illegal memory access was encountered in the gather\n")


def _both_logs(tmp_path: Path) -> Path:
    """A log with a known failure (signature records, entry rows) and an unknown one (search files)."""
    log = tmp_path / "both.log"
    log.write_bytes((REPO / "tests" / "logs" / "repro" / "deepspeed-0.17.6.log").read_bytes() + UNKNOWN)
    return log


@pytest.mark.parametrize("how", ["cut short", "longer", "empty", "garbage", "header", "link",
                                 "folder link", "flipped byte in inputs", "flipped byte in table"])
def test_a_corrupted_index_is_never_trusted_and_is_rebuilt(own_project: Path, how: str, tmp_path: Path):
    log = _both_logs(tmp_path)
    expected = _diagnose_json(own_project, log, "--no-cache")
    assert expected["results"] and expected["possible"]
    assert fresh(own_project)
    _corrupt(own_project, how)
    if how == "flipped byte in inputs":   # read only when the cheap test fails
        os.utime(own_project / "site.yml")
    assert _from_cache(own_project) is None
    assert _diagnose_json(own_project, log) == expected
    if how != "folder link":   # nothing is written through a link either
        assert fresh(own_project)
    else:
        assert (store_of(own_project) / RECORDS).is_symlink() and not fresh(own_project)


@pytest.mark.parametrize("section", ["records", "entries", "entry_index", "consequences", "search_index", "search"])
def test_a_section_found_damaged_only_when_used_is_dropped_and_the_entries_checked(own_project: Path, section: str,
                                                                                   tmp_path: Path):
    """Signature records and entry rows are checked one by one as they are read (a CRC-32 each),
    the search files when an unknown error needs them: past the point where the log was read."""
    log = _both_logs(tmp_path)
    expected = run_cli("--root", str(own_project), "diagnose", "--no-cache", "--json", str(log))
    changed = _corrupt(own_project, f"flipped byte in {section}")
    damaged = changed.read_bytes()
    assert _from_cache(own_project) is not None   # whole as far as the cheap test can tell
    again = run_cli("--root", str(own_project), "diagnose", "--json", str(log))
    assert (again.returncode, again.stdout) == (expected.returncode, expected.stdout)
    assert fresh(own_project) and changed.read_bytes() != damaged   # found, dropped, stored anew
    # standard input is read once: the whole index is verified before a byte of it is
    changed = _corrupt(own_project, f"flipped byte in {section}")
    damaged = changed.read_bytes()
    piped = run_cli("--root", str(own_project), "diagnose", "--json", "-", stdin=log.read_bytes())
    assert (piped.returncode, piped.stdout) == (expected.returncode, expected.stdout)
    assert changed.read_bytes() != damaged


def test_a_whole_index_with_forged_contents_is_not_used(own_project: Path, tmp_path: Path):
    assert run_cli("--root", str(own_project), "check").returncode == 0
    sections = sections_of(own_project)
    header = head(own_project)
    log = _both_logs(tmp_path)
    expected = _diagnose_json(own_project, log, "--no-cache")
    table = json.loads(sections["table"])
    records = sections["records"].splitlines()
    forged = json.dumps({"entry": "x", "index": "one", "steps": []}).encode()   # checksummed, but no signature
    table["crc"] = [zlib.crc32(forged)] * len(records)
    table["offsets"] = [i * (len(forged) + 1) for i in range(len(records) + 1)]
    for forgery in ({"table": b'{"anchors": "not a list"}'}, {"consequences": b'["not", "a", "mapping"]'},
                    {"table": json.dumps(table).encode(), "records": b"\n".join([forged] * len(records)) + b"\n"}):
        records = RecordStore(own_project, RECORDS)
        digests = dict(header["sections"])
        for name, body in forgery.items():
            digests[name] = hashlib.sha256(body).hexdigest()
            assert records.put(digests[name], body)
        assert records.put(HEAD, json.dumps({**header, "sections": digests}).encode())
        assert load(own_project) is not None   # whole and fresh, but not a signature index
        assert _diagnose_json(own_project, log) == expected


def test_a_stale_index_is_rebuilt_from_the_build_caches_records_of_the_unchanged_entries(project: Path, tmp_path: Path,
                                                                                        monkeypatch):
    """After one entry is edited, diagnose's slow path parses and checks only that entry: the
    others come from the records `check` left (validated again; the checks across entries run).
    The report is the one `--no-cache`, which parses and checks every entry, gives."""
    from rootcause.entries import catalog

    own = tmp_path / "project"
    shutil.copytree(project, own)
    assert run_cli("--root", str(own), "check").returncode == 0
    entry = own / "entries" / "cuda-out-of-memory.yaml"
    entry.write_text(entry.read_text(encoding="utf-8").replace("\nsummary: >\n", "\nsummary: >\n  Edited.\n", 1),
                     encoding="utf-8")
    assert not fresh(own)
    parsed: list[str] = []
    real = catalog.load_entry

    def load_entry(path, *args, **kwargs):
        parsed.append(path.name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(catalog, "load_entry", load_entry)
    log = REPO / "tests" / "logs" / "repro" / "deepspeed-0.17.6.log"
    from rootcause.commands.cli import main

    def report(*flags: str) -> dict:
        out = tmp_path / "report.json"
        with open(out, "w", encoding="utf-8") as stream, pytest.MonkeyPatch.context() as m:
            m.setattr(sys, "stdout", stream)
            main(["--root", str(own), "diagnose", "--json", *flags, str(log)])
        return json.loads(out.read_text(encoding="utf-8"))

    with_records = report()
    assert parsed == ["cuda-out-of-memory.yaml"] and fresh(own)
    parsed.clear()
    assert report("--no-cache") == with_records
    assert len(parsed) == len(list((own / "entries").glob("*.yaml")))


def test_the_index_made_from_the_parts_is_the_one_made_from_signatures_json():
    """A build makes the index's sections from each entry's signature parts, one entry at a
    time (`index_sections_of_parts`); `check` and `diagnose` from a whole signatures.json. The
    same bytes, section for section."""
    from rootcause.entries.project import open_project
    from rootcause.site.diagnosis_index import index_sections, index_sections_of_parts
    from rootcause.site.search import assemble_signature_file, build_search_files, consequences_of, signature_parts

    catalog = open_project(REPO)[0].catalog
    search_files = build_search_files(catalog)
    parts = {entry_id: signature_parts(loaded) for entry_id, loaded in catalog.entries.items()}
    consequences = consequences_of({entry_id: [(r.id, r.relation) for r in loaded.entry.related]
                                    for entry_id, loaded in catalog.entries.items()})
    whole = index_sections(search_files, assemble_signature_file(parts, consequences))
    assert index_sections_of_parts(search_files, parts, consequences) == whole
    assert list(index_sections_of_parts(search_files, parts, consequences)) == list(whole)
    assert len(whole["records"].splitlines()) == sum(len(loaded.signatures) for loaded in catalog.entries.values())
