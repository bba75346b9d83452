"""kumaco's kwok configuration: one KwokConfiguration and four node Stages that never overlap,
whose every patch merges by condition type (so foreign conditions survive)."""

from __future__ import annotations

import yaml

from tests.support.env.kwok import REBOOT, REBOOT_UNTIL, STOPPED, KwokSettings, kwok_config


def _docs(settings: KwokSettings) -> list[dict]:  # type: ignore[type-arg]
    return list(yaml.safe_load_all(kwok_config(settings)))


def test_one_configuration_with_every_option_kwok_needs() -> None:
    conf, *stages = _docs(KwokSettings(lease_seconds=40, parallelism=8, scope="kumaco.test/run=x"))
    assert conf["kind"] == "KwokConfiguration"
    opts = conf["options"]
    # With such a document kwok applies no defaults: parallelism 0 would make it exit.
    assert opts["nodePlayStageParallelism"] == 8
    assert opts["nodeLeaseParallelism"] == 8
    assert opts["nodeLeaseDurationSeconds"] == 40
    assert opts["manageNodesWithLabelSelector"] == f"kumaco.test/run=x,!{STOPPED}"
    assert [s["metadata"]["name"] for s in stages] == [
        "kumaco-node-ready",
        "kumaco-node-heartbeat",
        "kumaco-node-reboot",
        "kumaco-node-boot",
    ]


def test_every_patch_is_a_strategic_merge_of_the_status_subresource() -> None:
    for stage in _docs(KwokSettings())[1:]:
        assert stage["spec"]["resourceRef"] == {"apiGroup": "v1", "kind": "Node"}
        for step in stage["spec"]["steps"]:
            patch = step["patch"]
            assert patch["type"] == "strategic"  # merge or json would replace the whole list
            assert patch["subresource"] == "status"


def test_the_stages_exclude_each_other() -> None:
    stages = {
        s["metadata"]["name"]: s["spec"]["selector"]["matchExpressions"]
        for s in _docs(KwokSettings())[1:]
    }

    def rules(name: str) -> set[tuple[str, str, tuple[str, ...]]]:
        return {
            (e["jq"]["key"], e["jq"]["operator"], tuple(e["jq"].get("values", ())))
            for e in stages[name]
        }

    ready, beat = rules("kumaco-node-ready"), rules("kumaco-node-heartbeat")
    assert {(k, op) for k, op, _v in ready ^ beat} == {
        ('.status.conditions.[] | select(.type == "Ready") | .status', "NotIn"),
        ('.status.conditions.[] | select(.type == "Ready") | .status', "In"),
    }
    not_rebooting = {
        (f'.metadata.annotations["{REBOOT}"]', "DoesNotExist", ()),
        (f'.metadata.annotations["{REBOOT_UNTIL}"]', "DoesNotExist", ()),
    }
    assert not_rebooting <= ready and not_rebooting <= beat
    assert (f'.metadata.annotations["{REBOOT_UNTIL}"]', "DoesNotExist", ()) in rules(
        "kumaco-node-reboot"
    )
    assert (f'.metadata.annotations["{REBOOT_UNTIL}"]', "Exists", ()) in rules("kumaco-node-boot")


def test_the_heartbeat_is_due_one_period_after_the_last_and_touches_only_heartbeats() -> None:
    beat = next(
        s
        for s in _docs(KwokSettings(status_period=300, status_jitter=0.1))[1:]
        if s["metadata"]["name"] == "kumaco-node-heartbeat"
    )
    delay = beat["spec"]["delay"]
    assert delay["durationMilliseconds"] == 300_000
    assert delay["jitterDurationMilliseconds"] == 330_000
    assert (
        "lastHeartbeatTime | fromdateiso8601 + 300 |" in delay["durationFrom"]["jq"]["expression"]
    )
    template = beat["spec"]["steps"][0]["patch"]["template"]
    assert "lastHeartbeatTime" in template
    for field in ("status:", "reason:", "message:", "lastTransitionTime"):
        assert field not in template


def test_no_leases_is_zero() -> None:
    assert _docs(KwokSettings(lease_seconds=0))[0]["options"]["nodeLeaseDurationSeconds"] == 0
