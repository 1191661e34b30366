"""Issue 36, item 6: a theme's template cannot hang the build or exhaust the machine.

jinja2's sandbox kept a theme's templates (which may come by pull request) from Python's
internals, not from the machine's time and memory: two nested `range(100000)` loops never ended
(and `check` passed, as it renders no template), `'x' * 6e9` reached 15.7 GB, `'x' * 10**12` gave a
`MemoryError` traceback, and under `serve` such a build blocked every later rebuild. Now every
page of a sandboxed template renders within a budget (`rootcause.site.render`: CPU time, the
size of what it makes, its output, its memory): past it the build fails with E041 naming the
template file, line and what to do, exit 1, no traceback, and the last site stays as it was.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import SEED_ENTRY, fetch, run_cli

TIMEOUT = 120


def site_files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def with_theme(project: Path, body: str) -> None:
    """A theme whose 404 page holds `body` on its line 3."""
    templates = project / "hostile-theme" / "templates"
    templates.mkdir(parents=True, exist_ok=True)
    (templates / "404.html").write_text('{% extends "base.html" %}\n{% block content %}\n' + body
                                        + "\n{% endblock %}\n")
    site_yml = project / "site.yml"
    if "theme: hostile-theme" not in site_yml.read_text():
        site_yml.write_text(site_yml.read_text() + "theme: hostile-theme\n")


SIZE = "make the value smaller: a theme's template renders the values it is given, it does not build large ones"


@pytest.mark.parametrize("body, message, fix", [
    ("{{ 'x' * 10**12 }}", "the template makes a sequence of 1,000,000,000,000 items by repetition, more than the "
     "16,777,216 a template may make (page 404.html)", SIZE),
    ("{{ 'x' * 6e9 }}", "the template makes a sequence of 6,000,000,000 items by repetition", SIZE),
    ("{{ [0] * 10**9 }}", "the template makes a sequence of 1,000,000,000 items by repetition", SIZE),
    ("{{ 10 ** 100000000 }}", "the template makes a number of about 400,000,000 bits, more than the 65,536", SIZE),
    ("{% set ns = namespace(s='x') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
     "the template makes a string of 33,554,432 characters", SIZE),
    ("{{ 'x' | center(10**9) }}", "the template makes a width or count of 1,000,000,000", SIZE),
    ("{{ 'x'.ljust(10**9) }}", "the template makes a width or count of 1,000,000,000", SIZE),
    ("{{ '%0999999999d' % 1 }}", "the template makes a width or count of 999,999,999", SIZE),
    ("{{ '{:>999999999}'.format(1) }}", "the template makes a width or count of 999,999,999", SIZE),
    ("{{ (['x' * 10**7] * 100) | join }}", "the template makes a string of 1,000,000,000 characters by joining", SIZE),
    # what no check foresees ends in a MemoryError at the page's memory cap, reported the same way
    ("{{ ('x' * 10**7) | replace('x', 'x' * 10**7) }}",
     "the page needed more than 1024 MiB of memory to render (page 404.html)", "make the template build smaller values"),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "the template calls or includes itself without end",
     "give the macro or include a case that stops"),
    ("{{ 1 / 0 }}", "the template failed: ZeroDivisionError: division by zero", "fix the template"),
    ("{{ range(10**6) }}", "the template failed: OverflowError: Range too big.", "fix the template"),
])
def test_a_template_over_its_budget_fails_the_build_with_its_line(small_project: Path, body: str, message: str,
                                                                 fix: str):
    assert run_cli("--root", str(small_project), "build", "-q", timeout=TIMEOUT).returncode == 0
    before = site_files(small_project / "site")
    with_theme(small_project, body)
    started = time.monotonic()
    result = run_cli("--root", str(small_project), "build", timeout=TIMEOUT)   # no traceback (run_cli)
    assert time.monotonic() - started < 60
    stderr = result.stderr.decode()
    assert result.returncode == 1, stderr
    first = stderr.splitlines()[0]
    assert first.startswith(f"hostile-theme/templates/404.html:3:1: error[E041]: {message}"), stderr
    assert first.endswith(f" — {fix}"), stderr
    assert site_files(small_project / "site") == before


def test_nested_loops_stop_at_the_pages_cpu_budget(small_project: Path):
    """Two nested `range(100000)` loops (10^10 iterations, no call inside) end at the page's
    budget of CPU time, not hours later."""
    from rootcause.site.render import PAGE_CPU_SECONDS

    with_theme(small_project, "{% set many = range(100000) | list %}\n"
               "{% for a in many %}{% for b in many %}{% endfor %}{% endfor %}")
    started = time.monotonic()
    result = run_cli("--root", str(small_project), "build", timeout=TIMEOUT)
    assert time.monotonic() - started < TIMEOUT
    assert result.returncode == 1
    assert result.stderr.decode().startswith(
        f"hostile-theme/templates/404.html:4:1: error[E041]: the page took more than {PAGE_CPU_SECONDS:g} s of CPU "
        "time to render (page 404.html) — make the template do less per page: no nested loops over large ranges, "
        "no macro that calls itself without end")
    assert not (small_project / "site").exists()


def test_once_a_page_is_over_budget_the_renderer_refuses_the_rest_at_once(small_project: Path, monkeypatch):
    """A worker given a hundred pages whose template loops gives up after the first (each would
    spend the whole budget), so that a failed build ends in one budget, not one per page."""
    from rootcause.config import load_config
    from rootcause.errors import RootcauseError
    from rootcause.site import render

    monkeypatch.setattr(render, "PAGE_CPU_SECONDS", 0.2)
    with_theme(small_project, "")
    (small_project / "hostile-theme" / "templates" / "loop.html").write_text(
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}")
    config, _ = load_config(small_project)
    renderer = render.Renderer(config, small_project, {})
    page = render.Page("loop/index.html", "loop.html", "Loop")
    with pytest.raises(RootcauseError) as first:
        renderer.render(page)
    assert "the page took more than 0.2 s of CPU time" in str(first.value.diagnostics[0])
    started = time.thread_time()
    for _ in range(20):
        with pytest.raises(RootcauseError) as again:
            renderer.render(page)
        assert again.value.diagnostics == first.value.diagnostics
    assert time.thread_time() - started < 0.2


def test_serve_outlives_a_hanging_template_and_rebuilds_once_it_is_fixed(small_project: Path):
    from test_serve_survives import serving

    with_theme(small_project, "<p>first</p>")
    with serving(small_project) as (server, output, port):
        page = f"http://127.0.0.1:{port}/entries/{SEED_ENTRY.stem}/"
        missing = f"http://127.0.0.1:{port}/404.html"
        output.wait_for("serving ", timeout=60)
        status, good = fetch(page)
        assert status == 200 and "<p>first</p>" in fetch(missing)[1]

        with_theme(small_project, "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}")
        output.wait_for("hostile-theme/templates/404.html:3:1: error[E041]: the page took more than", timeout=90)
        output.wait_for("still serving the last good site", timeout=30)
        assert fetch(page) == (200, good) and server.poll() is None

        with_theme(small_project, "<p>fixed</p>")   # the next build runs, and is served
        deadline = time.monotonic() + 60
        while "<p>fixed</p>" not in fetch(missing)[1]:
            assert time.monotonic() < deadline, output.text()
            time.sleep(0.2)
        assert server.poll() is None
