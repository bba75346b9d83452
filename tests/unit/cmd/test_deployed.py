"""kumaco's Deployment read as the defaults of ``kubectl kumaco``.

:func:`kumaco.cmd.deployed.deployed_settings` on the Deployments the overlays render
(``kubectl kustomize``, no server): the namespaces kumaco watches, its Lease's
namespace and its policy, exactly as ``kumaco run`` in that container reads them;
args over environment, a command that runs ``kumaco run``, what cannot be read named,
and a Deployment kumaco would refuse refused naming it. The console script against a
real API server: tests/e2e/test_viewer.py.
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import pytest

from kumaco.cmd.deployed import (
    Deployed,
    DeploymentError,
    deployed_settings,
    deployment_ref,
)
from kumaco.cmd.flags import UsageError
from kumaco.cmd.kubectl import build_parser
from tests.support.env.manifests import one, render


def deployment(overlay: str, tmp: Path, components: tuple[str, ...] = ()) -> dict[str, Any]:
    return one(render(f"overlays/{overlay}", tmp, components), "Deployment")


def container(d: dict[str, Any]) -> dict[str, Any]:
    (c,) = d["spec"]["template"]["spec"]["containers"]
    return dict(c)


def test_the_delegated_layout_watches_maintenance_and_keeps_its_lease_at_home(
    tmp_path: Path,
) -> None:
    found = deployed_settings(deployment("delegated", tmp_path))
    assert found.key == "kumaco-system/kumaco"
    assert found.namespaces == ("maintenance",)
    assert found.lease_namespace == "kumaco-system"
    assert found.values["leader_election_id"] == "kumaco"
    assert found.values["max_in_progress"] is None and found.unresolved == ()
    single = deployed_settings(deployment("single-namespace", tmp_path))
    assert (single.namespaces, single.lease_namespace) == (("kumaco-system",), "kumaco-system")


def test_notifications_from_a_secret_in_the_pod_are_not_read_here(tmp_path: Path) -> None:
    found = deployed_settings(deployment("delegated", tmp_path, ("notifications",)))
    assert found.values["notify_url_file"] == "/etc/kumaco/notify/urls"
    assert found.namespaces == ("maintenance",)


def test_the_kured_policy_is_read_from_the_environment(tmp_path: Path) -> None:
    found = deployed_settings(deployment("delegated", tmp_path, ("kured-v2",)))
    values = found.values
    assert values["max_in_progress"] == "1"
    assert values["require_condition"] == ["kured.dev/reboot-required"]
    assert values["block_condition"] == ["kured.dev/reboot-inhibited"]
    assert values["under_maintenance_condition"] == "kured.dev/under-maintenance-window"
    assert values["in_progress_condition"] == "kured.dev/maintenance-in-progress"
    assert values["count_released_unavailable"] == "30m"
    assert values["count_unavailable"] is False


def test_args_win_over_the_environment_and_a_command_must_run_kumaco_run(
    tmp_path: Path,
) -> None:
    d = deployment("delegated", tmp_path, ("kured-v2",))
    c = container(d)
    c["args"] = ["--max-in-progress=2", "--leader-election-id", "other"]
    d["spec"]["template"]["spec"]["containers"] = [c]
    found = deployed_settings(d)
    assert found.values["max_in_progress"] == "2"
    assert found.values["leader_election_id"] == "other"
    c["command"] = ["/opt/kumaco/bin/kumaco", "run", "--node-selector", "pool=a"]
    assert deployed_settings(d).values["node_selector"] == "pool=a"
    c["command"] = ["sleep", "infinity"]
    with pytest.raises(DeploymentError, match=r"kumaco-system/kumaco: its command 'sleep"):
        deployed_settings(d)


def test_what_cannot_be_read_is_named_and_what_kumaco_refuses_is_refused(
    tmp_path: Path,
) -> None:
    d = deployment("delegated", tmp_path)
    c = container(d)
    c["env"] = [
        *c["env"],
        {
            "name": "KUMACO_NODE_SELECTOR",
            "valueFrom": {"configMapKeyRef": {"name": "x", "key": "y"}},
        },
    ]
    d["spec"]["template"]["spec"]["containers"] = [c]
    assert deployed_settings(d).unresolved == ("KUMACO_NODE_SELECTOR",)

    bad = copy.deepcopy(d)
    bad["spec"]["template"]["spec"]["containers"][0]["env"].append(
        {"name": "KUMACO_MAX_IN_PROGRESS", "value": "lots"}
    )
    with pytest.raises(DeploymentError, match=r"^Deployment kumaco-system/kumaco: kumaco would"):
        deployed_settings(bad)
    bad["spec"]["template"]["spec"]["containers"][0]["name"] = "app"
    bad["spec"]["template"]["spec"]["containers"].append({"name": "sidecar"})
    with pytest.raises(DeploymentError, match=r"no container named kumaco \(containers: app"):
        deployed_settings(bad)


def test_flags_given_win_and_the_flags_taken_are_named(tmp_path: Path) -> None:
    found = deployed_settings(deployment("delegated", tmp_path, ("kured-v2",)))
    parser = build_parser()
    argv = ["plan", "--max-in-progress", "3"]
    args = parser.parse_args(argv)
    (sub,) = [
        a.choices["plan"] for a in parser._actions if isinstance(a, argparse._SubParsersAction)
    ]
    taken = found.apply(args, {"max_in_progress", "command"}, sub)
    assert args.max_in_progress == "3"  # given: kept
    assert args.require_condition == ["kured.dev/reboot-required"]
    assert taken == [  # plan has no Lease flag, and the namespaces are the connection's
        "--require-condition=kured.dev/reboot-required",
        "--block-condition=kured.dev/reboot-inhibited",
        "--count-released-unavailable=30m",
        "--under-maintenance-condition=kured.dev/under-maintenance-window",
        "--in-progress-condition=kured.dev/maintenance-in-progress",
    ]
    assert isinstance(found, Deployed)


def test_the_deployment_flag_is_namespace_slash_name() -> None:
    assert deployment_ref("kumaco-system/kumaco") == ("kumaco-system", "kumaco")
    assert deployment_ref("") is None
    for bad in ("kumaco", "/kumaco", "a/", "a/b/c"):
        with pytest.raises(UsageError, match=r"--deployment: .* is not NAMESPACE/NAME"):
            deployment_ref(bad)
