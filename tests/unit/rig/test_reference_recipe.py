"""docs/reference.md's local-run recipe puts the windows where its kumaco looks.

The recipe starts the test control plane (which has only ``default`` and
``kube-system``), applies the example windows and runs kumaco on one namespace: the
windows must be applied to that namespace, which the recipe must create first, and
the Lease must live there too.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def recipe() -> list[list[str]]:
    text = (ROOT / "docs" / "reference.md").read_text()
    section = text.split("### On the local test control plane", 1)[1]
    m = re.search(r"```sh\n(.*?)```", section, re.S)
    assert m, "docs/reference.md's local-run recipe has no sh block"
    return [shlex.split(line, comments=True) for line in m.group(1).splitlines() if line]


def flag(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words else None


def test_the_recipe_applies_the_windows_to_the_namespace_its_kumaco_watches() -> None:
    lines = recipe()
    run = next(w for w in lines if w[:2] == ["kumaco", "run"])
    watched = flag(run, "--namespaces")
    assert watched and "," not in watched
    assert flag(run, "--leader-election-namespace") == watched
    apply = next(w for w in lines if w[0] == "kubectl" and "apply" in w)
    assert "kustomize/examples/windows.yaml" in apply
    assert flag(apply, "-n") == watched, "the windows would land in another namespace"
    create = next(i for i, w in enumerate(lines) if w[-3:] == ["create", "namespace", watched])
    assert create < lines.index(apply) < lines.index(run)


def test_the_example_windows_name_no_namespace_of_their_own() -> None:
    """``-n`` decides where they land only if the file does not: it must not."""
    text = (ROOT / "kustomize" / "examples" / "windows.yaml").read_text()
    assert not re.search(r"^\s+namespace:", text, re.M)
