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
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import grimp
import pytest

import kumaco

ROOT = Path(__file__).resolve().parents[3]


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
        "kumaco.notify",
        "kumaco.kube",
        "kumaco.migration",
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
    in that package's row, by its name in backticks (``stem``, ``file.py`` or
    ``sub/stem``): naming its subpackage is not naming it.
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
            names = {path.stem, path.name, inner.as_posix(), inner.with_suffix("").as_posix()}
            if not any(f"`{n}`" in row for n in names):
                missing.append(f"{path.relative_to(ROOT)} (row {package})")
    assert missing == [], "name them in CONTRIBUTING.md's code map:\n" + "\n".join(missing)


# ----------------------------------------------------------------------------- the tests' layout

#: Where Python modules live that could import a test module.
_TEST_TREES = ("tests", "tools", "hack")


def _is_test_module(dotted: str) -> bool:
    """``tests.unit.test_x`` or any ``conftest``: a module pytest collects, not a library."""
    parts = dotted.split(".")
    return parts[0] == "tests" and any(p.startswith("test_") or p == "conftest" for p in parts)


def _imports(source: str, package: str) -> list[tuple[int, str]]:
    """Every module ``source`` (a module of ``package``) imports, relative ones resolved."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                up = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def test_the_import_finder_sees_plain_from_relative_and_nested_imports() -> None:
    source = (
        "import tests.unit.test_a\n"
        "from tests.unit import test_b as harness\n"
        "from .test_c import thing\n"
        "from . import conftest\n"
        "from tests.support.builders.kubeobjects import node\n"
        "import hypothesis\n"
        "def f():\n"
        "    from tests.e2e.test_d import x\n"
    )
    found = [name for _, name in _imports(source, "tests.unit") if _is_test_module(name)]
    assert found == [
        "tests.unit.test_a",
        "tests.unit.test_b",
        "tests.unit.test_c",
        "tests.unit.test_c.thing",
        "tests.unit.conftest",
        "tests.e2e.test_d",
        "tests.e2e.test_d.x",
    ]


def test_no_module_imports_a_test_module() -> None:
    """What two tests share is a builder, a fake or a judge in tests/support, never a test module.

    A test module imported as a library (``from tests.unit import test_controller as
    harness``) ties tests to each other's helpers, collects its fixtures twice and breaks
    when the test is moved; tests, tools and hack/ import from ``tests.support`` instead.
    """
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for tree in _TEST_TREES
        for path in sorted((ROOT / tree).rglob("*.py"))
        for line, name in _imports(
            path.read_text(), ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
        )
        if _is_test_module(name)
    ]
    assert offenders == [], "move what they share into tests/support:\n" + "\n".join(offenders)


# ----------------------------------------------------------------------------- no issue numbers

#: The word "issue" (or "issues", any case) then a number, with or without "#": this
#: project's tracker number, which a newcomer cannot look up. An upstream project's issue keeps its own form, ``owner/repo#N``
#: (``kured#173``, ``kubernetes/kubernetes#1234``), which says where to look.
_ISSUE = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)

#: Files still naming an issue number, each being rewritten elsewhere at the time of
#: writing; an entry goes once its file is clean (the test below says so).


def _prose(source: str) -> list[tuple[int, str]]:
    """The comments and docstrings of a Python module, each with its first line."""
    out = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                out.append((node.body[0].lineno, doc))
    return out


def test_the_prose_finder_reads_comments_and_docstrings_only() -> None:
    source = (
        '"""Module: issue 28\'s rules."""\n'
        "X = 'issue 5'  # see issue #7\n"
        "def f():\n"
        '    """Issues 15 and 21; kured#173 and kubernetes/kubernetes#1234 are upstream."""\n'
    )
    hits = [(line, m[0]) for line, text in _prose(source) for m in _ISSUE.finditer(text)]
    assert sorted(hits) == [(1, "issue 28"), (2, "issue #7"), (4, "Issues 15")]


def _issue_mentions() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for tree in ("kumaco", "tests", "tools", "hack"):
        for path in sorted((ROOT / tree).rglob("*.py")):
            for line, text in _prose(path.read_text()):
                for m in _ISSUE.finditer(text):
                    found.setdefault(path.relative_to(ROOT).as_posix(), []).append(
                        f"{line}: {m[0]}"
                    )
    for path in [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        *sorted((ROOT / "docs").glob("*.md")),
    ]:
        for n, line_text in enumerate(path.read_text().splitlines(), 1):
            for m in _ISSUE.finditer(line_text):
                found.setdefault(path.relative_to(ROOT).as_posix(), []).append(f"{n}: {m[0]}")
    return found


def test_no_docstring_comment_or_doc_names_an_issue_number() -> None:
    """Say what is meant (the fleet rules, the exactly-once rule), not which issue asked for it."""
    found = _issue_mentions()
    assert found == {}, "say what is meant instead of the issue number:\n" + "\n".join(
        f"{path}:{hit}" for path, hits in found.items() for hit in hits
    )
