"""tests/support/env/workers.py: the per-worker result files of an xdist session, merged exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.env.workers import clear, merge_figures, merge_proofs, parts, per_worker


def _figures(path: Path, sections: dict[str, dict[str, object]]) -> None:
    doc = {"command": "hack/test.sh", "date": "d", "commit": "c", "figures": sections}
    path.write_text(json.dumps(doc))


def test_a_worker_writes_its_own_part_and_a_serial_session_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "proof.json"
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert per_worker(target) == target
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    assert per_worker(target) == tmp_path / "proof-gw3.json"


def test_proofs_merge_into_one_with_every_passed_test(tmp_path: Path) -> None:
    target = tmp_path / "proof.json"
    server = {"gitVersion": "v1.37.2"}
    for i, passed in enumerate((["a", "b"], ["c"])):
        (tmp_path / f"proof-gw{i}.json").write_text(
            json.dumps({"server": server, "passed": passed})
        )
    (tmp_path / "proof-gw10.json").write_text(json.dumps({"server": server, "passed": ["d"]}))
    assert [p.name for p in parts(target)] == [
        "proof-gw0.json",
        "proof-gw1.json",
        "proof-gw10.json",
    ]
    assert merge_proofs(target)
    assert json.loads(target.read_text()) == {
        "server": server,
        "passed": ["a", "b", "c", "d"],
        "artifacts": [],
        "real_server": [],
    }
    assert parts(target) == []
    assert not merge_proofs(target)  # nothing left to merge: the file stays


def test_proofs_of_different_servers_are_an_error(tmp_path: Path) -> None:
    for i, v in enumerate(("v1.37.2", "v1.36.0")):
        (tmp_path / f"p-gw{i}.json").write_text(
            json.dumps({"server": {"gitVersion": v}, "passed": []})
        )
    with pytest.raises(ValueError, match="different servers"):
        merge_proofs(tmp_path / "p.json")


def test_figures_merge_as_record_merges_and_keep_an_earlier_session(tmp_path: Path) -> None:
    target = tmp_path / "figures.json"
    _figures(target, {"unit": {"score": 5}})  # the unit tier's session, already merged
    _figures(tmp_path / "figures-gw0.json", {"cp": {"start_s": [1.0]}, "a": {"x": 1}})
    _figures(tmp_path / "figures-gw1.json", {"cp": {"start_s": [2.0]}, "a": {"x": 2, "y": 3}})
    assert merge_figures(target)
    merged = json.loads(target.read_text())["figures"]
    assert merged == {"unit": {"score": 5}, "cp": {"start_s": [1.0, 2.0]}, "a": {"x": 2, "y": 3}}


def test_clear_removes_only_the_parts(tmp_path: Path) -> None:
    target = tmp_path / "figures.json"
    _figures(target, {})
    _figures(tmp_path / "figures-gw0.json", {})
    clear(target)
    assert target.exists() and parts(target) == []
