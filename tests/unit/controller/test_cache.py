"""The stores (kumaco.controller.stores): change detection, write-through, echoes, stale events, config hash."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kumaco.controller.stores import ConfigMapStore, NodeStore
from kumaco.core.objects.nodes import Condition
from kumaco.core.windows.configmaps import config_digest, config_hash, describe_config_change
from kumaco.kube.wire import leading_resource_version, newer_or_equal


def node(name: str, rv: str, labels: dict[str, str] | None = None, **conds: str) -> dict[str, Any]:
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": "u-" + name,
            "resourceVersion": rv,
            "labels": labels or {},
        },
        "status": {
            "conditions": [
                {"type": t, "status": s, "lastHeartbeatTime": f"2026-01-01T00:00:{rv[-2:]}Z"}
                for t, s in conds.items()
            ],
            "images": [{"names": ["x"], "sizeBytes": 1}] * 50,
        },
    }


def event(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode()


def test_only_changes_that_matter_wake_the_loop() -> None:
    wakes: list[int] = []
    store = NodeStore(on_change=lambda: wakes.append(1))
    store.replace([store.trim(node("a", "10", Ready="True"))])
    assert wakes == [1]  # the first sync
    store.apply("MODIFIED", store.trim(node("a", "11", Ready="True")))  # only a heartbeat moved
    assert wakes == [1]
    store.apply("MODIFIED", store.trim(node("a", "12", {"zone": "a"}, Ready="True")))
    assert wakes == [1, 1]
    store.apply("DELETED", store.trim(node("a", "13")))
    assert wakes == [1, 1, 1]
    assert len(store) == 0


def test_a_stale_event_never_overwrites_a_newer_write_through() -> None:
    store = NodeStore()
    store.replace([store.trim(node("a", "10", Ready="True"))])
    assert store.put_written(
        "a", "20", [Condition("kured.dev/UnderMaintenance", "True", "R", "m", "t")]
    )
    store.apply("MODIFIED", store.trim(node("a", "15", Ready="True")))  # older than 20
    with store.read() as (nodes, rvs):
        view = nodes.get("a")
        assert view is not None
        assert view.is_true("kured.dev/UnderMaintenance")
        assert rvs["a"] == "20"


def test_write_through_keeps_other_conditions_and_labels() -> None:
    store = NodeStore()
    store.replace([store.trim(node("a", "10", {"zone": "a"}, Ready="True", Foo="False"))])
    store.put_written("a", "11", [Condition("kured.dev/UnderMaintenance", "True", "R", "m", "t")])
    with store.read() as (nodes, _rvs):
        view = nodes.get("a")
        assert view is not None
        assert dict(view.labels) == {"zone": "a"}
        assert set(view.conditions) == {"Ready", "Foo", "kured.dev/UnderMaintenance"}
        assert [n.name for n in nodes if n.is_true("kured.dev/UnderMaintenance")] == ["a"]
    assert not store.put_written("missing", "1", [])


def test_leading_resource_version_reads_the_objects_own() -> None:
    raw = json.dumps(node("a", "1234"), separators=(",", ":")).encode()
    assert leading_resource_version(raw) == "1234"
    assert leading_resource_version(b"{}") is None


def test_resource_version_order() -> None:
    assert newer_or_equal("10", "9")
    assert not newer_or_equal("9", "10")
    assert newer_or_equal("10", "10")
    assert newer_or_equal(None, "10")
    assert newer_or_equal("abc", "10")  # opaque: applied


def test_config_hash_covers_data_only_and_names_what_changed() -> None:
    store = ConfigMapStore(("ns",))
    sink = store.sink("ns")

    def cm(name: str, data: dict[str, str], label: str = "x") -> dict[str, Any]:
        return {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": name,
                "resourceVersion": "1",
                "labels": {"l": label},
            },
            "data": data,
        }

    sink.replace(
        [sink.trim(cm("a", {"startTime": "0 3 * * *"})), sink.trim(cm("b", {"duration": "1h"}))]
    )
    before = config_digest(store.snapshot())
    sink.apply(
        "MODIFIED", sink.trim(cm("a", {"startTime": "0 3 * * *"}, label="y"))
    )  # metadata only
    assert config_hash(config_digest(store.snapshot())) == config_hash(before)
    sink.apply("MODIFIED", sink.trim(cm("a", {"startTime": "0 4 * * *"})))
    sink.apply("DELETED", sink.trim(cm("b", {})))
    sink.apply("ADDED", sink.trim(cm("c", {})))
    after = config_digest(store.snapshot())
    assert describe_config_change(before, after) == {
        "added": ["ns/c"],
        "removed": ["ns/b"],
        "edited": ["ns/a"],
    }


def test_dropping_images_changes_nothing_else() -> None:
    import random

    from kumaco.core.objects.nodes import node_view
    from kumaco.kube.wire import drop_images
    from tests.support.env.controlplane import node_object

    objs = [node_object(i, random.Random(i)) for i in range(5)]
    objs[0]["status"]["images"] = []
    del objs[1]["status"]["images"]
    page = {"kind": "NodeList", "metadata": {"resourceVersion": "9"}, "items": objs}
    raw = json.dumps(page, separators=(",", ":")).encode()
    shrunk = drop_images(raw)
    assert len(shrunk) < len(raw) / 2
    decoded = json.loads(shrunk)
    for before, after in zip(objs, decoded["items"], strict=True):
        assert "images" not in after["status"]
        expected = {k: v for k, v in before["status"].items() if k != "images"}
        assert after["status"] == expected
        assert after["metadata"] == before["metadata"]
        assert node_view(after) == node_view(before)
    one = json.dumps({"type": "MODIFIED", "object": objs[2]}, separators=(",", ":")).encode()
    assert (
        json.loads(drop_images(one))["object"]["status"]["conditions"]
        == objs[2]["status"]["conditions"]
    )
    assert drop_images(b'{"a":1}') == b'{"a":1}'


def test_dropping_images_leaves_unexpected_shapes_alone() -> None:
    from kumaco.kube.wire import drop_images

    for raw in (
        b'{"status":{"x":1,"images":[{"names":["a"]}]xyz}',  # not followed by , or }
        b'{"status":{"x":1,"images":[{"names":["a"],"sizeBytes":1}',  # cut short
    ):
        assert drop_images(raw) == raw
    assert drop_images(b'{"status":{"x":1,"images":[],"y":2}}') == b'{"status":{"x":1,"y":2}}'


_image = st.fixed_dictionaries(
    {
        "names": st.lists(
            st.text(alphabet="abc/:@.-_0123456789", min_size=1, max_size=20), max_size=3
        )
    },
    optional={"sizeBytes": st.integers(0, 10**10)},
)
_noise = st.dictionaries(
    st.sampled_from(["a", "b", "conditions", "addresses"]),
    st.lists(st.dictionaries(st.sampled_from(["type", "x"]), st.text(max_size=5)), max_size=3),
)


@given(
    st.lists(
        st.tuples(_noise, st.one_of(st.none(), st.lists(_image, max_size=5)), _noise), max_size=4
    )
)
def test_dropping_images_is_exactly_removing_the_key(
    nodes: list[tuple[dict, list | None, dict]],
) -> None:
    from kumaco.kube.wire import drop_images

    items, expected = [], []
    for before, images, after in nodes:
        status: dict[str, object] = {"capacity": {"cpu": "1"}, **before}
        if images is not None:
            status["images"] = images
        status.update({f"z{k}": v for k, v in after.items()})
        items.append({"metadata": {"name": "n"}, "status": status})
        expected.append(
            {
                "metadata": {"name": "n"},
                "status": {k: v for k, v in status.items() if k != "images"},
            }
        )
    raw = json.dumps({"items": items}, separators=(",", ":")).encode()
    assert json.loads(drop_images(raw)) == {"items": expected}


def test_a_decision_carries_the_newest_version_only_while_the_view_is_unchanged() -> None:
    store = NodeStore()
    store.replace([store.trim(node("a", "10", Ready="True")), store.trim(node("b", "10"))])
    assert store.fresh_version("a", "10") == "10"
    store.apply("MODIFIED", store.trim(node("a", "11", Ready="True")))  # a heartbeat
    store.apply("MODIFIED", store.trim(node("a", "14", Ready="True")))  # and another
    assert store.fresh_version("a", "10") == "14"  # the decision on 10 holds at 14
    store.apply("MODIFIED", store.trim(node("a", "15", {"zone": "b"}, Ready="True")))
    assert store.fresh_version("a", "10") == "10"  # relabelled since: decide again (409)
    assert store.fresh_version("a", "15") == "15"
    store.apply("MODIFIED", store.trim(node("a", "16", {"zone": "b"}, Ready="False")))
    assert store.fresh_version("a", "15") == "15"
    # A write-through is a change of the view at the version the server answered.
    assert store.put_written("b", "20", [Condition("kured.dev/UnderMaintenance", "True")])
    assert store.fresh_version("b", "10") == "10"
    assert store.fresh_version("b", "20") == "20"
    store.apply("MODIFIED", store.trim(node("b", "21", Ready="Unknown")))
    assert store.fresh_version("b", "20") == "20"  # changed again at 21
    # Unknown nodes, unknown and opaque versions: the decision's own.
    assert store.fresh_version("zz", "10") == "10"
    assert store.fresh_version("a", None) is None
    opaque = NodeStore()
    opaque.replace([opaque.trim(node("c", "abc"))])
    opaque.apply("MODIFIED", opaque.trim(node("c", "abd")))
    assert opaque.fresh_version("c", "xyz") == "xyz"
    assert opaque.fresh_version("c", "abc") == "abd"  # the same version it changed at


def test_an_event_that_cannot_change_the_store_is_known_from_its_first_bytes() -> None:
    store = NodeStore()
    store.replace([store.trim(node("a", "10", Ready="True"))])
    assert store.put_written("a", "20", [Condition("kured.dev/UnderMaintenance", "True")])
    assert store.known(event("MODIFIED", node("a", "20", Ready="True"))) == "20"  # the echo
    assert store.known(event("MODIFIED", node("a", "15", Ready="True"))) == "15"  # older
    assert store.known(event("MODIFIED", node("a", "21", Ready="True"))) is None  # news
    assert store.known(event("DELETED", node("a", "20"))) is None  # always decoded
    assert store.known(event("ADDED", node("a", "20"))) is None
    assert store.known(event("MODIFIED", node("b", "5"))) is None  # not stored
    assert store.known(b'{"type":"MODIFIED","object":{}}') is None
    opaque = NodeStore()
    opaque.replace([opaque.trim(node("c", "abc"))])
    assert opaque.known(event("MODIFIED", node("c", "1"))) is None
