"""The package's layers, read from the source: no import circle, and no import from a lower layer
into a higher one (the base modules < matching < entries < site < the diagnosis service < commands)."""

from __future__ import annotations

import ast
import re
import importlib
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "rootcause"
#: each module's layer: a module may import only modules of its own layer or lower ones
LAYERS = {"base": 0, "matching": 1, "entries": 2, "site": 3, "service": 4, "commands": 5, "api": 6}
SUBPACKAGES = ("entries", "matching", "site", "commands")


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in SUBPACKAGES:
        return LAYERS[parts[1]]
    if module == "rootcause.encyclopedia":   # the diagnosis service: loads what site/ and entries/ make
        return LAYERS["service"]
    if module in ("rootcause.__main__",):
        return LAYERS["commands"]
    if module in ("rootcause", "rootcause.api"):   # the library face: above everything it offers
        return LAYERS["api"]
    return LAYERS["base"]


def imports_of(path: Path) -> set[str]:
    """Every rootcause module a file imports, at the top or inside a function (lazy imports count)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("rootcause"):
                continue
            for alias in node.names:  # `from . import build` names a module, `from .x import f` a name
                candidate = f"{target}.{alias.name}"
                found.add(candidate if _is_module(candidate) else target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("rootcause"))
    found.discard(name)
    return found


def _is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (REPO / relative).with_suffix(".py").exists() or (REPO / relative / "__init__.py").exists()


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_subpackages_import_and_say_what_they_own():
    for sub in SUBPACKAGES:
        module = importlib.import_module(f"rootcause.{sub}")
        doc = module.__doc__ or ""
        assert "never" in doc and len(doc) > 80, f"rootcause.{sub}: the docstring says what it owns and must not import"


def test_no_import_from_a_lower_layer_into_a_higher_one():
    wrong = sorted(f"{m} ({layer(m)}) imports {t} ({layer(t)})"
                   for m, targets in graph().items() for t in targets if layer(t) > layer(m))
    assert not wrong, "\n".join(wrong)


def test_no_import_circle():
    edges = graph()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert not cycles, "import circles: " + "; ".join(" → ".join(c) for c in cycles)


def test_the_walk_sees_relative_lazy_imports():
    # the checker itself: a lazy `from ..site.builder import build` inside a function is seen
    assert "rootcause.site.builder" in graph()["rootcause.commands.build"]
    assert "rootcause.matching.scanner" in graph()["rootcause.entries.catalog"]


def _listed(doc: str, heading: str) -> list[str]:
    """The backquoted module names of the paragraph or list that starts with `heading`."""
    found = []
    for block in re.split(r"\n\s*\n", doc):
        for item in re.split(r"\n- ", "\n" + block):
            if item.strip().startswith(heading):
                found += re.findall(r"`([a-z_]+)`", item.split(":", 1)[1] if ":" in item else item)
    return found


def test_every_subpackage_lists_exactly_its_modules():
    for sub in SUBPACKAGES:
        doc = importlib.import_module(f"rootcause.{sub}").__doc__ or ""
        listed = _listed(doc, "Modules:")
        modules = sorted(p.stem for p in (PACKAGE / sub).glob("*.py") if p.stem != "__init__")
        assert sorted(listed) == modules, f"rootcause.{sub}: its docstring lists {sorted(listed)}"


def test_the_package_map_lists_every_top_level_module_once():
    import rootcause

    doc = rootcause.__doc__ or ""
    listed = [name for heading in ("Primitives:", "Contributor inputs:", "Build runtime:", "Service:",
                                          "Faces:")
              for name in _listed(doc, heading)]
    modules = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert sorted(listed) == modules and len(set(listed)) == len(listed)


def test_the_architecture_page_stays_short():
    """Issue #32: a newcomer reads ARCHITECTURE.md in one sitting (at most 1,500 words, not
    counting table rules and diagram strokes)."""
    text = (PACKAGE.parent / "ARCHITECTURE.md").read_text(encoding="utf-8")
    words = [w for w in text.split() if re.search(r"\w", w)]
    assert len(words) <= 1500, f"ARCHITECTURE.md has {len(words)} words"
    assert "## Where a field goes" in text
