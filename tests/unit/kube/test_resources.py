"""The typed resource API (kumaco.kube.resources.KubeResources): each method's request on the wire.

The client underneath is ``create_autospec(Kube)``: what is asserted is the exact
request each typed call becomes -- method, path, query, body, content type,
timeout and whether it goes through the retrying :meth:`Kube.request` or the
send-once :meth:`Kube.request_raw` -- the requests the controller sent itself
before it spoke in typed calls.
"""

from __future__ import annotations

from typing import Any
from unittest.mock import call

import pytest
from pytest_mock import MockerFixture

from kumaco.kube.client import Kube
from kumaco.kube.resources import KubeResources


@pytest.fixture
def kube(mocker: MockerFixture) -> Any:
    k = mocker.create_autospec(Kube, instance=True)
    k.timeout = 30.0
    return k


def test_a_status_patch_is_a_strategic_merge_sent_once_with_the_field_manager(kube: Any) -> None:
    body = {"metadata": {"resourceVersion": "10"}, "status": {"conditions": []}}
    kube.request_raw.return_value = b"{}"
    api = KubeResources(kube)
    assert api.patch_node_status("a", body, field_manager="kumaco", timeout=1.2345) == b"{}"
    assert kube.mock_calls == [
        call.request_raw(
            "PATCH",
            "/api/v1/nodes/a/status",
            {"fieldManager": "kumaco", "timeout": "1234ms"},
            body,
            "application/strategic-merge-patch+json",
            timeout=1.2345,
        )
    ]
    assert api.timeout == 30.0


def test_a_node_is_read_with_a_retried_get(kube: Any) -> None:
    kube.request.return_value = {"metadata": {"name": "a"}}
    assert KubeResources(kube).get_node("a") == {"metadata": {"name": "a"}}
    assert kube.mock_calls == [call.request("GET", "/api/v1/nodes/a")]


def test_events_are_posted_and_aggregated_with_merge_patches(kube: Any) -> None:
    api = KubeResources(kube)
    api.create_event("ns", {"reason": "WindowLoaded"})
    api.patch_event("ns", "w.0123", {})
    api.patch_event("ns", "w.0123", {"series": {"count": 2}})
    events = "/apis/events.k8s.io/v1/namespaces/ns/events"
    assert kube.mock_calls == [
        call.request("POST", events, body={"reason": "WindowLoaded"}),
        call.request(
            "PATCH", f"{events}/w.0123", body={}, content_type="application/merge-patch+json"
        ),
        call.request(
            "PATCH",
            f"{events}/w.0123",
            body={"series": {"count": 2}},
            content_type="application/merge-patch+json",
        ),
    ]


def test_collections_list_and_watch_their_path_with_their_selector(kube: Any) -> None:
    def shrink(raw: bytes) -> bytes:
        return raw

    def known(raw: bytes) -> str | None:
        return None

    api = KubeResources(kube)
    nodes, cms = api.nodes("pool=x"), api.configmaps("maintenance", "kured.dev/maintenance-window")
    nodes.list_pages(shrink=shrink)
    nodes.list_pages(100, None)
    cms.list_all()
    cms.watch("41", 300, known=known, shrink=shrink, silence=5.0)
    api.nodes().watch("42", 600)
    cm_path = "/api/v1/namespaces/maintenance/configmaps"
    assert kube.mock_calls == [
        call.list_pages("/api/v1/nodes", "pool=x", 250, shrink),
        call.list_pages("/api/v1/nodes", "pool=x", 100, None),
        call.list_all(cm_path, "kured.dev/maintenance-window"),
        call.watch(
            cm_path,
            "41",
            "kured.dev/maintenance-window",
            300,
            known=known,
            shrink=shrink,
            silence=5.0,
        ),
        call.watch("/api/v1/nodes", "42", "", 600, known=None, shrink=None, silence=130.0),
    ]


def test_a_lease_is_a_collection_of_one_named_by_a_field_selector(kube: Any) -> None:
    lease = KubeResources(kube).lease("maintenance", "kumaco")
    lease.list_pages()
    lease.list_all()
    lease.watch("7", 300, silence=5.0)
    path = "/apis/coordination.k8s.io/v1/namespaces/maintenance/leases"
    named = "metadata.name=kumaco"
    assert kube.mock_calls == [
        call.list_pages(path, "", 250, None, field_selector=named),
        call.list_all(path, "", field_selector=named),
        call.watch(path, "7", "", 300, known=None, shrink=None, silence=5.0, field_selector=named),
    ]
