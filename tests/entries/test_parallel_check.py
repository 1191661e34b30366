"""Issue 12: on a large site the entries are checked by this process and forked workers together
(this process takes every other chunk on two cores and reads the workers' results back from
their records); the catalog and every diagnostic are exactly those of checking them one by one
in this process. Broken entries sit in both shares."""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path

import pytest

from conftest import REPO

from rootcause.config import load_config
from rootcause.entries import catalog as catalog_module
from rootcause.entries.catalog import load_catalog


def generate(n: int, folder: Path) -> Path:
    """bench/synth.py's synthetic project of n entries."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from synth import generate as synthetic
    finally:
        sys.path.remove(str(REPO / "bench"))
    return synthetic(n, folder, only={"rootcause"})["rootcause"]


@pytest.mark.skipif((os.cpu_count() or 1) < 2 or "fork" not in multiprocessing.get_all_start_methods(),
                    reason="workers need two cores and fork")
def test_checking_in_workers_gives_what_checking_here_gives(tmp_path: Path):
    project = generate(450, tmp_path)
    entries = sorted((project / "entries").glob("*.yaml"))
    # one broken entry in this process's first chunk, one in the worker's, one in its second chunk
    chunk = catalog_module.CHUNK
    entries[3].write_text(entries[3].read_text(encoding="utf-8").replace("\nsummary:", "\nsummary: [unclosed\n", 1),
                          encoding="utf-8")
    entries[chunk + 5].write_text(entries[chunk + 5].read_text(encoding="utf-8") + "no_such_field: 1\n", encoding="utf-8")
    entries[2 * chunk + 1].write_text(entries[2 * chunk + 1].read_text(encoding="utf-8").replace(
        "\nseverity: ", "\nseverity: unheard-of-", 1), encoding="utf-8")
    config, problems = load_config(project)
    assert config is not None and problems == []
    together = load_catalog(project, config, workers=2)
    alone = load_catalog(project, config, workers=1)
    assert together.checked == alone.checked == 450
    assert together.diagnostics == alone.diagnostics
    assert {d.path for d in together.diagnostics if d.severity == "error"} >= {
        f"entries/{entries[i].name}" for i in (3, chunk + 5, 2 * chunk + 1)}
    assert together.unloadable == alone.unloadable and len(together.unloadable) == 3
    assert list(together.entries) == list(alone.entries) and len(together.entries) == 447
    for entry_id, loaded in together.entries.items():
        other = alone.entries[entry_id]
        assert loaded.entry == other.entry and loaded.path == other.path
        assert loaded.located.values == other.located.values and loaded.located.keys == other.located.keys
        assert loaded.search_weights == other.search_weights
        assert [(s.steps, s.unless, s.within, s.marks) for s in loaded.signatures] == \
               [(s.steps, s.unless, s.within, s.marks) for s in other.signatures]


@pytest.mark.skipif((os.cpu_count() or 1) < 2 or "fork" not in multiprocessing.get_all_start_methods(),
                    reason="workers need two cores and fork")
def test_a_check_worker_that_dies_leaves_its_entries_to_this_process(tmp_path: Path, monkeypatch):
    """A worker killed while checking (the out-of-memory killer, say) used to end the check with
    a traceback; the entries it had not sent back are checked here instead."""
    project = generate(450, tmp_path)
    victim = sorted((project / "entries").glob("*.yaml"))[catalog_module.CHUNK + 7]
    parent, real = os.getpid(), catalog_module.load_entry

    def load_entry(path, *args, **kwargs):
        if os.getpid() != parent and path == victim:
            os._exit(9)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(catalog_module, "load_entry", load_entry)
    config = load_config(project)[0]
    together = load_catalog(project, config, workers=2)
    alone = load_catalog(project, config, workers=1)
    assert together.checked == 450 and together.diagnostics == alone.diagnostics == []
    assert list(together.entries) == list(alone.entries) and len(together.entries) == 450
