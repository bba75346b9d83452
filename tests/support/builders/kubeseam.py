"""A recording fake of the kube seam, and the controller built on it (the ``make`` fixture).

The seam is the typed API (:class:`kumaco.kube.resources.Resources`): :class:`FakeApi`
over a :class:`World` (the nodes and ConfigMaps of a fake cluster) records every request
the controller makes, in order, as a typed action (``PatchNodeStatus("a", body, ...)``),
as sample-controller's tests record a fake clientset's actions. ``make`` is a pytest
fixture: bind it in a test module (``make = kubeseam.make``) and each test gets a builder
of a :class:`~kumaco.controller.loop.Controller` over a fresh world, with a
:class:`FakeElection` and a settable clock; writes go one at a time
(``write_concurrency=1``) so their order is the order the controller chose.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from kumaco.controller.loop import Controller, Planner
from kumaco.controller.metrics import Metrics
from kumaco.controller.options import ControllerOptions
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import Policy
from kumaco.core.time.durations import SECOND
from kumaco.kube.errors import ApiError
from kumaco.kube.resources import Collection, Streamed
from tests.support.builders.kubeobjects import (
    MANAGER,
    NS,
    SELECTOR,
)
from tests.support.builders.policies import policy_of

OPEN = int(dt.datetime(2026, 12, 1, 2, 30, tzinfo=dt.UTC).timestamp()) * SECOND  # 02:00-05:00
CLOSED = int(dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC).timestamp()) * SECOND


class FakeElection:
    """Leadership and fencing as the controller sees them."""

    def __init__(self) -> None:
        self.is_leader = True
        self.deadline: float | None = 1e12
        self.renewing: Callable[[], float] | None = None  # a deadline that moves with renewals
        self.released = 0

    def write_deadline(self) -> float | None:
        if not self.is_leader:
            return None
        return self.renewing() if self.renewing is not None else self.deadline

    def healthy(self, now: float | None = None) -> bool:
        return True

    def release(self) -> bool:
        self.released += 1
        return True


# What the controller asked of the API server (kumaco.kube.resources.Resources), one
# action per request. ``World.calls()`` shows them without their payload (body, field
# manager, timeout); ``World.actions`` keeps everything that was sent.


@dataclass(frozen=True)
class ListNodes:
    selector: str = ""


@dataclass(frozen=True)
class ListConfigMaps:
    namespace: str
    selector: str = SELECTOR


@dataclass(frozen=True)
class GetNode:
    name: str


@dataclass(frozen=True)
class PatchNodeStatus:
    name: str
    body: Any = None
    field_manager: str | None = None
    timeout: float | None = None


@dataclass(frozen=True)
class CreateEvent:
    namespace: str
    body: Any = None


@dataclass(frozen=True)
class PatchEvent:
    namespace: str
    name: str
    body: Any = None


Action = ListNodes | ListConfigMaps | GetNode | PatchNodeStatus | CreateEvent | PatchEvent


PAYLOAD = ("body", "field_manager", "timeout")


class _Collection:
    """A fake collection: its LIST is recorded as ``listed``, then answered from the world."""

    def __init__(self, world: World, listed: Action, items: Callable[[], list[Any]]) -> None:
        self.world, self.listed, self.items = world, listed, items

    def list_pages(self, page: int = 250, shrink: Any = None) -> Iterator[Any]:
        self.world.actions.append(self.listed)
        return iter([(self.items(), "1")])

    def list_all(self) -> tuple[list[Any], str]:
        self.world.actions.append(self.listed)
        return self.items(), "1"

    def watch(self, *_: Any, **__: Any) -> Iterator[Any]:
        raise AssertionError("the unit tests run passes, not watches")


class FakeApi:
    """A fake :class:`~kumaco.kube.resources.Resources` over a :class:`World`: records actions."""

    timeout = 30.0

    def __init__(self, world: World) -> None:
        self.world = world

    def nodes(self, label_selector: str = "") -> _Collection:
        w = self.world

        def copies() -> list[Any]:
            return [json.loads(json.dumps(n)) for n in w.nodes.values()]

        return _Collection(w, ListNodes(label_selector), copies)

    def configmaps(self, namespace: str, label_selector: str = "") -> _Collection:
        w = self.world
        return _Collection(w, ListConfigMaps(namespace, label_selector), lambda: list(w.cms))

    def pods(self) -> Streamed:
        raise AssertionError("the unit tests feed the pod store directly, never list pods")

    def poddisruptionbudgets(self) -> Collection:
        raise AssertionError("the unit tests feed the budget store directly, never list PDBs")

    def get_node(self, name: str) -> Any:
        w = self.world
        w.actions.append(GetNode(name))
        if name not in w.nodes:
            raise ApiError(404, "NotFound", f'nodes "{name}" not found')
        return w.nodes[name]

    def patch_node_status(
        self, name: str, body: dict[str, Any], *, field_manager: str, timeout: float
    ) -> bytes:
        w = self.world
        w.actions.append(PatchNodeStatus(name, body, field_manager, timeout))
        if name in w.refuse:
            raise w.refuse.pop(name)
        w.monotonic[0] += w.write_seconds
        for hook in w.while_writing.pop(name, []):
            hook()
        want = body.get("metadata", {}).get("resourceVersion")
        if want is not None and want != w.nodes[name]["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")  # as the server
        w.rv += 1
        doc = w.nodes[name]
        current = {c["type"]: c for c in doc["status"]["conditions"]}
        current.update({c["type"]: c for c in body["status"]["conditions"]})
        doc["status"]["conditions"] = list(current.values())
        doc["metadata"]["resourceVersion"] = str(w.rv)
        return json.dumps(doc).encode()

    def create_event(self, namespace: str, body: dict[str, Any]) -> Any:
        self.world.actions.append(CreateEvent(namespace, body))
        return {}

    def patch_event(self, namespace: str, name: str, body: dict[str, Any]) -> Any:
        self.world.actions.append(PatchEvent(namespace, name, body))
        return {}


class World:
    """The fake cluster behind the typed API (:class:`FakeApi`), and what was asked of it."""

    def __init__(self, nodes: list[dict[str, Any]], cms: list[dict[str, Any]]):
        self.actions: list[Action] = []
        self.monotonic = [1000.0]
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.cms = cms
        self.rv = 100
        self.refuse: dict[str, ApiError] = {}
        # What happens in the cluster while a node is being written (its PATCH in flight).
        self.while_writing: dict[str, list[Callable[[], None]]] = {}
        self.write_seconds = 0.0  # how long each write takes on the monotonic clock
        self.api = FakeApi(self)

    # ------------------------------------------------------------------ what was sent

    def patches(self) -> list[PatchNodeStatus]:
        """Every status write in order, with its payload."""
        return [a for a in self.actions if isinstance(a, PatchNodeStatus)]

    def writes(self) -> list[tuple[str, dict[str, tuple[str, str]]]]:
        """Each status write in order: the node and {condition type: (status, reason)}."""
        return [
            (
                a.name,
                {c["type"]: (c["status"], c["reason"]) for c in a.body["status"]["conditions"]},
            )
            for a in self.patches()
        ]

    def events(self) -> list[tuple[type[Action], str, str]]:
        """Each Event created or patched, in order: the action, reason, note."""
        return [
            (type(a), a.body.get("reason", ""), a.body.get("note", ""))
            for a in self.actions
            if isinstance(a, (CreateEvent, PatchEvent))
        ]

    def calls(self) -> list[Action]:
        """Every request in order, without its payload."""
        return [
            replace(a, **{f: None for f in PAYLOAD if hasattr(a, f)})  # type: ignore[arg-type]
            for a in self.actions
        ]

    def reset(self) -> None:
        self.actions.clear()


@pytest.fixture
def make() -> Any:
    def build(
        nodes: list[dict[str, Any]],
        cms: list[dict[str, Any]],
        *,
        now: int = OPEN,
        policy: Policy | None = None,
        planner: Planner = plan,
        outbox: Any = None,
    ) -> tuple[Controller, World, FakeElection, list[int]]:
        world = World(nodes, cms)
        election = FakeElection()
        clock = [now]
        world.monotonic = [1000.0]
        options = ControllerOptions(
            namespaces=(NS,),
            configmap_selector=SELECTOR,
            node_selector="",
            lease_name="kumaco",
            identity="test_replica",
            field_manager="kumaco",
            write_concurrency=1,
            event_lookback=300.0,
            retry_period=2.0,
            config_settle=2.0,
        )
        c = Controller(
            options,
            policy or policy_of(manager=MANAGER),
            world.api,
            election,
            Metrics(),
            now_ns=lambda: clock[0],
            monotonic=lambda: world.monotonic[0],
            planner=planner,
            outbox=outbox,
        )
        # What the reflectors would have delivered before the first pass.
        c.configmaps.sink(NS).replace([c.configmaps.trim(o) for o in cms])
        c.nodes.replace([c.nodes.trim(n) for n in nodes])
        return c, world, election, clock

    return build


def samples(c: Controller, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Every sample of metric ``name`` on the controller's registry, by its labels."""
    out = {}
    for family in c.metrics.registry.collect():
        for s in family.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out
