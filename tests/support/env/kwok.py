"""Simulated kubelets for the test control plane: kwok with kumaco's own node Stages.

kwok (``sigs.k8s.io/kwok``, built by :func:`tests.support.env.controlplane.ensure_kwok`)
plays the kubelet of every Node it manages, driven by *Stages*: a selector on
the Node and a patch to apply after a delay. kwok's own example Stages do not
fit the Nodes this project seeds (they wait for ``status.phase``, reset every
condition's ``lastTransitionTime`` and restart their timer on any write), so
:func:`kwok_config` writes ours, one multi-document YAML: a
``KwokConfiguration`` and four Stages on ``v1/Node``, with selectors that
exclude each other, every step a *strategic* merge patch of ``nodes/status``
(merged by condition ``type``: the conditions of kumaco, kured or
node-problem-detector are never in a patch, so they survive every heartbeat):

* ``kumaco-node-ready`` -- a Node whose ``Ready`` is not ``True`` (and that is
  not rebooting) gets the four kubelet conditions, as a kubelet that starts
  posting status; a condition whose status does not change keeps its
  ``lastTransitionTime``.
* ``kumaco-node-heartbeat`` -- a Ready Node gets ``lastHeartbeatTime`` (and
  nothing else) of the kubelet's conditions refreshed, due one status period
  after its current ``lastHeartbeatTime``: the kubelet's
  ``nodeStatusReportFrequency`` (5 minutes when nothing changed). Anchored on
  the Node's own time, so other writers do not postpone it and a kwok restart
  keeps the cadence.
* ``kumaco-node-reboot`` -- a Node annotated ``kumaco.test/reboot=<Go
  duration>`` goes ``Ready=False`` (``KubeletNotReady``; ``Unknown`` when
  ``kumaco.test/reboot-ready-status=Unknown``) and gets the absolute deadline
  ``kumaco.test/reboot-until``, in one write (a Node's status subresource
  keeps metadata changes).
* ``kumaco-node-boot`` -- at that deadline the Node is ``Ready=True`` again with
  a new ``bootID``, the reboot annotations removed and
  ``kumaco.test/last-reboot`` set. An absolute deadline, because kwok
  restarts a relative delay on every change of the Node.

With ``KwokSettings.pods`` two Stages on ``v1/Pod`` play the pods bound to the Nodes kwok
manages (kwok's own pod Stages are not loaded either):

* ``kumaco-pod-running`` -- a pod not terminating and without ``status.startTime`` (kwok
  never started it; a test that writes a pod's status itself sets one) becomes
  ``Running``, its containers started, ``Ready`` and ``ContainersReady`` ``True`` -- or
  ``False`` when annotated :data:`POD_READY` ``=false`` -- with a ``hostIP`` (kwok's
  ``NodeIPWith``) and a random ``podIP`` (kwok's pool of pod IPs holds 254);
* ``kumaco-pod-delete`` -- a terminating pod without finalizers is deleted, as a
  kubelet confirms a pod's end.

kwok manages only Nodes without the label :data:`STOPPED` (label the Node to
stop its "kubelet": no heartbeat, no Lease renewal), and kwok ignores Nodes
without any label. It renews each node Lease every ``lease_seconds / 4``
(the kubelet's 40 s Lease renewed every 10 s) unless ``lease_seconds`` is 0.

:class:`Kwok` runs the binary against a :class:`~tests.support.env.controlplane.ControlPlane`:
node Leases left by an earlier kwok are deleted first (a new kwok has a new
holder identity and would wait for them to expire, ~70 s with 5,000 nodes),
``$HOME`` is a private directory and ``KWOK_*`` variables are dropped (kwok
reads ``~/.kwok/kwok.yaml`` and its environment silently), and it logs at
``WARN`` (at ``INFO`` it logs every heartbeat).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.env.controlplane import ControlPlane, ensure_kwok
from tests.support.env.process import exchange, log_tail, spawn, stop_process, wait_ready

PREFIX = "kumaco.test"
STOPPED = f"{PREFIX}/kubelet-stopped"
REBOOT = f"{PREFIX}/reboot"
REBOOT_UNTIL = f"{PREFIX}/reboot-until"
REBOOT_READY = f"{PREFIX}/reboot-ready-status"
LAST_REBOOT = f"{PREFIX}/last-reboot"
POD_READY = f"{PREFIX}/pod-ready"
NODE_LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"

#: The conditions a kubelet owns: (type, healthy status, reason, message).
KUBELET_CONDITIONS = (
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)


@dataclass(frozen=True)
class KwokSettings:
    """How the simulated kubelets behave (defaults: a kubelet's own, see docs/benchmarks.md)."""

    #: Seconds between status reports of an unchanged node (nodeStatusReportFrequency: 5m).
    status_period: float = 300.0
    #: The report is due in [period, period * (1 + jitter)].
    status_jitter: float = 0.1
    #: Node Lease duration; renewed every quarter of it (kubelet: 40 s, every 10 s). 0: no Leases.
    lease_seconds: int = 40
    #: kwok's workers for Stages and for Leases (8 keep 5,000 Leases renewed on 2 cores).
    parallelism: int = 8
    #: A label selector narrowing the Nodes kwok manages (a test's own), ANDed with ``!STOPPED``.
    scope: str = ""
    #: Also play the pods bound to those Nodes (the two pod Stages).
    pods: bool = False


# ----------------------------------------------------------------------------- Stages

_READY_STATUS = '.status.conditions.[] | select(.type == "Ready") | .status'
_READY_HEARTBEAT = (
    '.status.conditions.[] | select(.type == "Ready") | .lastHeartbeatTime | fromdateiso8601'
)


def _annotation(key: str) -> str:
    return f'.metadata.annotations["{key}"]'


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    rule: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        rule["values"] = list(values)
    return {"jq": rule}


_NOT_REBOOTING = [
    _expr(_annotation(REBOOT), "DoesNotExist"),
    _expr(_annotation(REBOOT_UNTIL), "DoesNotExist"),
]

# Go templates (with sprig) over the Node as kwok sees it; they render YAML.
_READY_TEMPLATE = """\
{{ $now := Now }}
{{ $seen := dict }}
{{ range .status.conditions }}{{ $_ := set $seen .type . }}{{ end }}
conditions:
{{ range $c := list %(rows)s }}
{{ $type := index $c 0 }}{{ $status := index $c 1 }}{{ $old := get $seen $type }}
- type: {{ $type | Quote }}
  status: {{ $status | Quote }}
  reason: {{ index $c 2 | Quote }}
  message: {{ index $c 3 | Quote }}
  lastHeartbeatTime: {{ $now | Quote }}
  {{ if and $old (eq (get $old "status") $status) }}
  lastTransitionTime: {{ get $old "lastTransitionTime" | Quote }}
  {{ else }}
  lastTransitionTime: {{ $now | Quote }}
  {{ end }}
{{ end }}
"""

_HEARTBEAT_TEMPLATE = """\
{{ $now := Now }}
conditions:
{{ range .status.conditions }}{{ if has .type (list %(types)s) }}
- type: {{ .type | Quote }}
  lastHeartbeatTime: {{ $now | Quote }}
{{ end }}{{ end }}
"""

_REBOOT_TEMPLATE = """\
{{ $now := Now }}
{{ $notes := or .metadata.annotations dict }}
{{ $for := get $notes "%(reboot)s" }}
{{ if not (regexMatch "^([0-9]+(\\\\.[0-9]+)?(ms|s|m|h))+$" $for) }}{{ $for = "30s" }}{{ end }}
{{ $ready := get $notes "%(ready)s" }}
{{ if ne $ready "Unknown" }}{{ $ready = "False" }}{{ end }}
metadata:
  annotations:
    %(until)s: {{ dateInZone "2006-01-02T15:04:05.000Z07:00" (dateModify (print "+" $for) now) "UTC" | Quote }}
status:
  conditions:
  - type: Ready
    status: {{ $ready | Quote }}
    {{ if eq $ready "Unknown" }}
    reason: NodeStatusUnknown
    message: Kubelet stopped posting node status.
    {{ else }}
    reason: KubeletNotReady
    message: the node is rebooting
    {{ end }}
    lastHeartbeatTime: {{ $now | Quote }}
    lastTransitionTime: {{ $now | Quote }}
"""

_BOOT_TEMPLATE = """\
{{ $now := Now }}
metadata:
  annotations:
    %(reboot)s: null
    %(until)s: null
    %(ready)s: null
    %(last)s: {{ $now | Quote }}
status:
  nodeInfo:
    bootID: {{ uuidv4 | Quote }}
  conditions:
  - type: Ready
    status: "True"
    reason: KubeletReady
    message: kubelet is posting ready status
    lastHeartbeatTime: {{ $now | Quote }}
    lastTransitionTime: {{ $now | Quote }}
"""


_POD_RUNNING_TEMPLATE = """\
{{ $now := Now }}
{{ $notes := or .metadata.annotations dict }}
{{ $ready := "True" }}
{{ if eq (get $notes "%(ready)s") "false" }}{{ $ready = "False" }}{{ end }}
phase: Running
startTime: {{ $now | Quote }}
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ printf "10.%%d.%%d.%%d" (randInt 0 256) (randInt 0 256) (randInt 1 255) | Quote }}
conditions:
{{ range $c := list "PodReadyToStartContainers" "Initialized" "PodScheduled" }}
- type: {{ $c }}
  status: "True"
  lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
{{ range $c := list "ContainersReady" "Ready" }}
- type: {{ $c }}
  status: {{ $ready | Quote }}
  lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: {{ printf "%%s@sha256:%%s" .image (sha256sum .image) | Quote }}
  containerID: {{ printf "containerd://%%s" (sha256sum (print $now .name)) | Quote }}
  ready: {{ eq $ready "True" }}
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
"""


def _stage(
    name: str,
    match: list[dict[str, Any]],
    template: str | None,
    *,
    root: str,
    delay: dict[str, Any] | None = None,
    immediate: bool = False,
    kind: str = "Node",
    patch_type: str = "strategic",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceRef": {"apiGroup": "v1", "kind": kind},
        "selector": {"matchExpressions": match},
    }
    if delay is not None:
        spec["delay"] = delay
    spec["steps"] = [
        {"delete": True}
        if template is None
        else {
            "patch": {
                "subresource": "status",
                "root": root,
                "type": patch_type,
                "template": template,
            }
        }
    ]
    if immediate:
        spec["immediateNextStage"] = True
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": spec,
    }


def pod_stages() -> list[dict[str, Any]]:
    """kumaco's two pod Stages (see the module docstring)."""
    not_terminating = _expr(".metadata.deletionTimestamp", "DoesNotExist")
    return [
        _stage(
            "kumaco-pod-running",
            [not_terminating, _expr(".status.startTime", "DoesNotExist")],
            _POD_RUNNING_TEMPLATE % {"ready": POD_READY},
            root="status",
            kind="Pod",
            patch_type="merge",
        ),
        _stage(
            "kumaco-pod-delete",
            [
                _expr(".metadata.deletionTimestamp", "Exists"),
                _expr(".metadata.finalizers", "DoesNotExist"),
            ],
            None,
            root="",
            kind="Pod",
        ),
    ]


def stages(settings: KwokSettings) -> list[dict[str, Any]]:
    """kumaco's four node Stages, and the pod Stages when asked (see the module docstring)."""
    quoted = " ".join(f'"{t}"' for t, *_ in KUBELET_CONDITIONS)
    rows = " ".join(f'(list "{t}" "{s}" "{r}" "{m}")' for t, s, r, m in KUBELET_CONDITIONS)
    period = settings.status_period
    latest = period * (1 + settings.status_jitter)
    names = {"reboot": REBOOT, "until": REBOOT_UNTIL, "ready": REBOOT_READY, "last": LAST_REBOOT}
    return [
        _stage(
            "kumaco-node-ready",
            [_expr(_READY_STATUS, "NotIn", "True"), *_NOT_REBOOTING],
            _READY_TEMPLATE % {"rows": rows},
            root="status",
        ),
        _stage(
            "kumaco-node-heartbeat",
            [_expr(_READY_STATUS, "In", "True"), *_NOT_REBOOTING],
            _HEARTBEAT_TEMPLATE % {"types": quoted},
            root="status",
            # Due at the Ready condition's lastHeartbeatTime + the period; the milliseconds
            # apply when the expression yields nothing.
            delay={
                "durationMilliseconds": int(period * 1000),
                "jitterDurationMilliseconds": int(latest * 1000),
                "durationFrom": {
                    "jq": {"expression": f"{_READY_HEARTBEAT} + {period:g} | todateiso8601"}
                },
                "jitterDurationFrom": {
                    "jq": {"expression": f"{_READY_HEARTBEAT} + {latest:g} | todateiso8601"}
                },
            },
            immediate=True,
        ),
        _stage(
            "kumaco-node-reboot",
            [
                _expr(_annotation(REBOOT), "Exists"),
                _expr(_annotation(REBOOT_UNTIL), "DoesNotExist"),
            ],
            _REBOOT_TEMPLATE % names,
            root="",
        ),
        _stage(
            "kumaco-node-boot",
            [_expr(_annotation(REBOOT_UNTIL), "Exists")],
            _BOOT_TEMPLATE % names,
            root="",
            delay={
                "durationMilliseconds": 0,
                "durationFrom": {"jq": {"expression": _annotation(REBOOT_UNTIL)}},
            },
        ),
        *(pod_stages() if settings.pods else ()),
    ]


def configuration(settings: KwokSettings) -> dict[str, Any]:
    """The KwokConfiguration document.

    With such a document present kwok v0.8.0 applies none of its defaults, so
    every option it needs is set here (parallelism 0 makes it exit).
    """
    return {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokConfiguration",
        "options": {
            "manageNodesWithLabelSelector": ",".join(filter(None, (settings.scope, f"!{STOPPED}"))),
            "nodeLeaseDurationSeconds": settings.lease_seconds,
            "nodeLeaseParallelism": settings.parallelism,
            "nodePlayStageParallelism": settings.parallelism,
            # kwok recycles a deleted pod's IP into the pool of this range (its default is
            # empty and logs an error per pod); kumaco's pod Stage picks IPs in it.
            **(
                {"podPlayStageParallelism": settings.parallelism, "cidr": "10.0.0.1/8"}
                if settings.pods
                else {}
            ),
        },
    }


class _Literal(str):
    """A string dumped as a YAML block literal (the templates stay readable)."""


def _literal(dumper: yaml.SafeDumper, value: _Literal) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style="|")


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Literal, _literal)


def _blocks(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _blocks(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_blocks(v) for v in doc]
    if isinstance(doc, str) and "\n" in doc:
        return _Literal(doc)
    return doc


def kwok_config(settings: KwokSettings) -> str:
    """The whole config kwok is started with: the KwokConfiguration, then the Stages."""
    docs = [configuration(settings), *stages(settings)]
    return "# kumaco's kwok configuration (tests/support/env/kwok.py)\n" + yaml.dump_all(
        [_blocks(d) for d in docs], Dumper=_Dumper, sort_keys=False, width=1000
    )


# ----------------------------------------------------------------------------- the process


class Kwok:
    """One kwok process managing the control plane's Nodes (see the module docstring)."""

    def __init__(
        self, cp: ControlPlane, workdir: Path, settings: KwokSettings | None = None
    ) -> None:
        self.cp = cp
        self.workdir = workdir
        self.settings = settings or KwokSettings()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "kwok.log"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "kwok was not started"
        return self.proc.pid

    def delete_node_leases(self) -> None:
        status, body = exchange(self.cp.connection(), "DELETE", NODE_LEASES)
        if status not in (200, 404):
            raise RuntimeError(f"deleting node Leases: {status} {body[:300]!r}")

    def start(self) -> Kwok:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "kwok.yaml"
        config.write_text(kwok_config(self.settings))
        kubeconfig = self.cp.write_kubeconfig(self.workdir / "kwok.kubeconfig")
        home = self.workdir / "home"
        home.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KWOK_")}
        env["HOME"] = str(home)
        self.delete_node_leases()
        cmd = [
            str(ensure_kwok()),
            "--kubeconfig",
            str(kubeconfig),
            "--config",
            str(config),
            "--v",
            "WARN",
        ]
        self.proc = spawn(cmd, self.log_path, env)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        return log_tail(self.log_path, lines)

    def node_leases(self) -> int:
        """How many node Leases exist (kwok creates one per managed Node when Leases are on)."""
        status, body = exchange(self.cp.connection(), "GET", f"{NODE_LEASES}?limit=1")
        if status != 200:
            return 0
        doc = yaml.safe_load(body)
        meta = doc.get("metadata") or {}
        return len(doc.get("items") or []) + int(meta.get("remainingItemCount") or 0)

    def wait_leases(self, count: int, timeout: float) -> float:
        """Wait until ``count`` node Leases exist (kwok took every Node over); seconds waited."""
        what = f"kwok to take {count} Nodes over"
        ready = self.node_leases
        return wait_ready(lambda: ready() >= count, timeout, what, self.proc, self.log_path, 0.5)

    def stop(self) -> None:
        stop_process(self.proc, timeout=15)

    def __enter__(self) -> Kwok:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
