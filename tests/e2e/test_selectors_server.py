"""Differential test: kumaco's label-selector semantics against the real kube-apiserver.

A population of Nodes with random labels (from the shared vocabulary of
``tests/support/judges/strategies.py``) is created once; then, for hypothesis-generated
selector strings, a LIST with ``labelSelector`` is compared with
:func:`kumaco.core.labels.selectors.parse_selector` + ``matches``: the same nodes must
match, and exactly the selectors the server rejects (400) must be rejected,
with the server's message.
"""

from __future__ import annotations

import json
import random
import urllib.parse
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings

from kumaco.core.errors import InvalidInput
from kumaco.core.labels.selectors import parse_selector
from tests.support.env.controlplane import ControlPlane
from tests.support.judges.strategies import VALID_KEYS, VALID_VALUES, selector_texts

POPULATION = 60


@pytest.fixture(scope="module")
def population(control_plane: ControlPlane) -> Iterator[dict[str, dict[str, str]]]:
    rng = random.Random(5683)
    run = uuid.uuid4().hex[:6]
    nodes: dict[str, dict[str, str]] = {}
    for i in range(POPULATION):
        labels = {
            rng.choice(VALID_KEYS): rng.choice(VALID_VALUES) for _ in range(rng.randint(0, 6))
        }
        nodes[f"sel-{run}-{i:03d}"] = labels
    conn = control_plane.connection()
    for name, labels in nodes.items():
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
        conn.request(
            "POST",
            "/api/v1/nodes",
            body=json.dumps(body),
            headers={"Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        assert resp.status == 201, resp.read()[:300]
        resp.read()
    conn.close()
    yield nodes
    conn = control_plane.connection()
    for name in nodes:
        conn.request("DELETE", f"/api/v1/nodes/{name}")
        conn.getresponse().read()
    conn.close()


def _server_select(cp: ControlPlane, selector: str) -> tuple[int, set[str], str]:
    conn = cp.connection()
    try:
        query = urllib.parse.urlencode({"labelSelector": selector})
        conn.request("GET", f"/api/v1/nodes?{query}")
        resp = conn.getresponse()
        doc = json.loads(resp.read())
    finally:
        conn.close()
    if resp.status != 200:
        return resp.status, set(), str(doc.get("message", ""))
    return 200, {item["metadata"]["name"] for item in doc["items"]}, ""


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(selector=selector_texts())
def test_kumaco_matches_exactly_what_the_server_lists(
    control_plane: ControlPlane, population: dict[str, dict[str, str]], selector: str
) -> None:
    status, listed, message = _server_select(control_plane, selector)
    try:
        parsed = parse_selector(selector)
    except InvalidInput as exc:
        assert status == 400, (
            f"kumaco rejects {selector!r} ({exc.reason}) but the server accepts it"
        )
        # kumaco escapes unprintable characters and shortens huge literals in its messages.
        if selector.isprintable() and len(selector) <= 400:
            assert exc.reason in message, (exc.reason, message)
        return
    assert status == 200, f"the server rejects {selector!r} ({message}) but kumaco accepts it"
    ours = {name for name, labels in population.items() if parsed.matches(labels)}
    assert ours == listed & set(population), selector


@pytest.mark.parametrize(
    "selector",
    [
        "",
        "  ",
        "app",
        "!app",
        "app=",
        "tier notin ()",
        "a.b/c in (x,,y)",
        "n>5,n<10",
        "n>-1",
        "x=y=z",
        "a in (b",
    ],
)
def test_hand_picked_selectors_agree_with_the_server(
    control_plane: ControlPlane, population: dict[str, dict[str, str]], selector: str
) -> None:
    status, listed, message = _server_select(control_plane, selector)
    try:
        parsed = parse_selector(selector)
    except InvalidInput as exc:
        assert status == 400
        assert exc.reason in message, (exc.reason, message)
        return
    assert status == 200, message
    assert {n for n, labels in population.items() if parsed.matches(labels)} == listed & set(
        population
    )
