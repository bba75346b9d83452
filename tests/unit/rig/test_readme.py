"""README.md's console examples of the offline commands are real output.

Every ```console block whose commands are all ``kumaco ...`` (or ``echo $?``) is run
(README.md's and docs/migrating-from-kured-v1.md's: :data:`PAGES`)
in docs/examples with the installed console script, standard error merged into
standard output as a terminal shows them, and must print exactly what the README
shows. Blocks with other commands (``kubectl``, the demo) are not run: they need a
cluster. The indented ``kubectl kumaco status`` block of docs/observability.md (it was
the README's, in "Debugging") is checked against its source instead: it must be, line
for line once its indentation is removed, the transcript of the same command in
docs/status.md, both captured by ``python hack/capture_status.py`` from the test control
plane with kumaco running. The quick start's offline step (docs/deploy.md: the window
file and ``kumaco validate``) runs here as written too.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "docs" / "examples"
STATUS_COMMAND = "$ kubectl kumaco status -n maintenance\n"
KUMACO = shutil.which("kumaco", path=str(Path(sys.executable).parent))
#: The pages whose console examples are run.
PAGES = ("README.md", "docs/migrating-from-kured-v1.md")


def blocks(page: str = "README.md") -> list[list[tuple[str, str]]]:
    """The checked console blocks of ``page``, each a list of (command, expected output)."""
    found = []
    for body in re.findall(r"```console\n(.*?)```", (ROOT / page).read_text(), re.S):
        steps: list[tuple[str, list[str]]] = []
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line)
        if steps and all(c.startswith(("kumaco ", "echo $?")) for c, _ in steps):
            found.append([(c, "".join(o + "\n" for o in out)) for c, out in steps])
    return found


def test_the_readme_has_checked_examples() -> None:
    commands = {c.split()[1] for b in blocks() for c, _ in b if c.startswith("kumaco ")}
    assert {"validate", "windows", "plan", "forecast"} <= commands


def test_the_migration_page_has_checked_examples() -> None:
    assert any(c.startswith("kumaco convert ") for b in blocks(PAGES[1]) for c, _ in b)


@pytest.mark.parametrize(
    "block", [b for page in PAGES for b in blocks(page)], ids=lambda b: b[0][0][:60]
)
def test_a_readme_example_prints_what_the_readme_shows(block: list[tuple[str, str]]) -> None:
    assert KUMACO, "the kumaco console script is not installed"
    rc = 0
    for command, expected in block:
        if command.startswith("echo $?"):
            got = f"{rc}\n"
        else:
            argv = shlex.split(command)
            done = subprocess.run(
                [KUMACO, *argv[1:]],
                cwd=EXAMPLES,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=120,
                check=False,
            )
            rc, got = done.returncode, done.stdout
        assert got == expected, f"$ {command}"


def indented_status_block(doc: str) -> str:
    """The indented console block of ``kubectl kumaco status`` in ``doc``, indentation removed."""
    m = re.search(r"```console\n(  \$ kubectl kumaco status .*?)\n  ```\n", doc, re.S)
    assert m, "docs/observability.md has no indented `kubectl kumaco status` console block"
    lines = m.group(1).split("\n")
    assert all(line.startswith("  ") for line in lines), "a line of the block is not indented"
    return "".join(line[2:] + "\n" for line in lines)


def captured_status(status_md: str) -> str:
    """docs/status.md's transcript of ``kubectl kumaco status -n maintenance`` (text)."""
    start = status_md.index(STATUS_COMMAND)
    return status_md[start : status_md.index("```", start)]


def test_the_observability_status_block_is_the_captured_transcript() -> None:
    block = indented_status_block((ROOT / "docs" / "observability.md").read_text())
    assert block.startswith(STATUS_COMMAND)
    assert block == captured_status((ROOT / "docs" / "status.md").read_text())


def test_the_quick_starts_offline_step_runs_as_written(tmp_path: Path) -> None:
    """docs/deploy.md's quick start, step 4 without its cluster line: the file, ``kumaco validate``.

    (Its cluster steps run as written in tests/e2e/test_quickstart.py.)
    """
    doc = (ROOT / "docs" / "deploy.md").read_text()
    m = re.search(r"<!-- quickstart: window -->\n```sh\n(.*?)```\n", doc, re.S)
    assert m, "docs/deploy.md has no quick-start window block"
    offline = [line for line in m.group(1).splitlines() if not line.startswith("kubectl ")]
    assert "kumaco validate first-window.yaml" in offline
    assert KUMACO, "the kumaco console script is not installed"
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", "\n".join(offline)],
        cwd=tmp_path,
        env={"PATH": f"{Path(KUMACO).parent}:/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "valid maintenance/first-window\n",
        "",
    )


def test_the_quick_start_blocks_are_all_accounted_for() -> None:
    """Every block of docs/deploy.md's quick start is one that a test runs (the offline one
    here, the others as written in tests/e2e/test_quickstart.py), in the order written."""
    names = re.findall(r"<!-- quickstart: ([\w-]+) -->", (ROOT / "docs" / "deploy.md").read_text())
    assert names == [
        "cli",
        "image",
        "overlay",
        "rollout",
        "window",
        "watch",
        "upgrade-image",
        "upgrade",
        "uninstall",
        "conditions",
    ]


def test_the_readme_is_short_and_reaches_every_page() -> None:
    """The README stays a front page: at most 300 lines; every page of docs/ and CONTRIBUTING.md linked from it."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 300, len(text.splitlines())
    pages = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "docs").glob("*.md"))]
    unlinked = [p for p in [*pages, "CONTRIBUTING.md"] if f"]({p}" not in text]
    assert unlinked == []
