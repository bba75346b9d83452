"""The package's layout holds: layers, no import cycles, every module importable on its own and in the code map.

The same two checks of each module hold for the test library (tests/support) and the
programs (tools/): each imports alone in a fresh interpreter and states its contract.

import-linter (``.importlinter``, run by ``hack/test.sh``) enforces which layer may
import which; this checks what it does not: that no two modules import each other
(directly or through others), that each module imports cleanly in a fresh
interpreter (a cycle that "works" only in one import order fails here), and that
the package docstring names the layers in the order of the contract.
"""

from __future__ import annotations

import ast
import configparser
import re
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

import kumaco

ROOT = Path(__file__).resolve().parents[2]


def _modules(*folders: str) -> list[str]:
    return sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for folder in folders
        for p in (ROOT / folder).rglob("*.py")
        if p.name != "__main__.py"
    )


MODULES = _modules("kumaco")
#: The test library and the programs: the tests' layers (.importlinter) stand on these.
SUPPORT_MODULES = _modules("tests/support", "tools")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_among_kumaco_modules() -> None:
    g = grimp.build_graph("kumaco")
    graph = {
        m: {i for i in g.find_modules_directly_imported_by(m) if i.startswith("kumaco")}
        for m in g.modules
        if m.startswith("kumaco")
    }
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("module", MODULES + SUPPORT_MODULES)
def test_every_module_imports_alone_in_a_fresh_interpreter(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("module", MODULES + SUPPORT_MODULES)
def test_every_module_states_its_contract(module: str) -> None:
    path = ROOT / Path(*module.split("."))
    source = (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text()
    doc = ast.get_docstring(ast.parse(source))
    assert doc and len(doc.split()) >= 12, f"{module} has no docstring stating its contract"


def test_the_package_docstring_names_the_layers_of_the_contract_in_order() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    layers = [
        name.strip()
        for line in config["importlinter:contract:layers"]["layers"].strip().splitlines()
        for name in line.split("|")
    ]
    assert layers == [
        "kumaco.cmd",
        "kumaco.controller",
        "kumaco.views",
        "kumaco.kube",
        "kumaco.core",
    ]
    doc = kumaco.__doc__ or ""
    positions = [doc.index(f"``{layer}``") for layer in layers]
    assert positions == sorted(positions)
    subpackages = sorted(
        p.name for p in (ROOT / "kumaco").iterdir() if (p / "__init__.py").exists()
    )
    assert sorted(layer.split(".")[1] for layer in layers) == subpackages


#: The code map's rows (CONTRIBUTING.md): a package, then what lives there.
_MAP_ROW = re.compile(r"^\| `(?P<package>[a-z_/]+/)` \|(?P<text>[^|]*)\|", re.MULTILINE)


def test_every_module_is_in_the_code_map() -> None:
    """A module is as long as its concept; the code map names every one of them.

    Each Python or shell file under a package the map lists (subpackages included) appears
    in that package's row, by its name in backticks (``stem``, ``file.py`` or ``sub/``).
    """
    text = (ROOT / "CONTRIBUTING.md").read_text()
    rows = {m["package"]: m["text"] for m in _MAP_ROW.finditer(text)}
    assert {"kumaco/core/", "kumaco/cmd/", "tests/support/env/", "tools/", "hack/"} <= set(rows)
    missing = []
    for package, row in rows.items():
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix not in (".py", ".sh") or path.stem == "__init__":
                continue
            inner = path.relative_to(ROOT / package)
            names = {path.stem, path.name, inner.as_posix(), f"{inner.parts[0]}/"}
            if not any(f"`{n}`" in row for n in names):
                missing.append(f"{path.relative_to(ROOT)} (row {package})")
    assert missing == [], "name them in CONTRIBUTING.md's code map:\n" + "\n".join(missing)
