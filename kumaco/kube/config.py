"""Where kumaco's credentials and default namespace come from.

Contract: :func:`load_configuration` gives the official client's
``Configuration`` from the first of, in kubectl's and controller-runtime's order:
``--kubeconfig``; the files named by ``$KUBECONFIG`` (merged as kubectl merges);
in-cluster (the pod's service account); ``~/.kube/config``. The Configuration
never picks a proxy from the environment itself (:mod:`kumaco.kube.proxy` decides,
with client-go's rules); a kubeconfig ``proxy-url`` is kept in ``.proxy``.
:func:`own_namespace`
is the pod's namespace (``POD_NAMESPACE`` or the service-account file).
:func:`context_namespace` and :func:`default_namespace` tell which namespace a
``kubectl kumaco`` command means when none is given, as kubectl decides (the
kubeconfig context's, merged from ``$KUBECONFIG`` as kubectl merges).
These read files and the environment they are given; nothing else does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from kubernetes import client as k8s_client

SA_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE = "default"


def credential_source(kubeconfig: str | None, env: Mapping[str, str]) -> str | None:
    """Where credentials come from: a kubeconfig path list, or None for in-cluster-else-default.

    ``--kubeconfig`` wins, then ``$KUBECONFIG`` (a ``:``-separated list); None means
    "in-cluster if this is a pod, else ``~/.kube/config``".
    """
    if kubeconfig:
        return kubeconfig
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    return os.pathsep.join(listed) if listed else None


def load_configuration(
    kubeconfig: str | None, context: str | None = None, env: Mapping[str, str] | None = None
) -> k8s_client.Configuration:
    """``--kubeconfig``; else ``$KUBECONFIG``; else in-cluster; else ``~/.kube/config``."""
    # Imported here: the offline commands read this module's namespace helpers without
    # ever loading the Kubernetes client.
    from kubernetes import client as k8s_client  # noqa: PLC0415
    from kubernetes import config as k8s_config  # noqa: PLC0415

    env = os.environ if env is None else env
    # proxy="" and no_proxy="": the library must not read the proxy environment itself
    # (it would with urllib's rules, which differ from client-go's).
    cfg = k8s_client.Configuration(proxy="", no_proxy="")
    files = credential_source(kubeconfig, env)
    if files is not None:
        k8s_config.load_kube_config(config_file=files, context=context, client_configuration=cfg)
        return cfg
    try:
        k8s_config.load_incluster_config(client_configuration=cfg)
    except k8s_config.ConfigException:
        home = Path(env.get("HOME") or Path.home())
        k8s_config.load_kube_config(
            config_file=str(home / ".kube" / "config"),
            context=context,
            client_configuration=cfg,
        )
    return cfg


def own_namespace(env: Mapping[str, str], sa_file: Path = SA_NAMESPACE_FILE) -> str | None:
    """``POD_NAMESPACE``, else the service-account namespace file, else None."""
    if env.get("POD_NAMESPACE"):
        return env["POD_NAMESPACE"]
    try:
        return sa_file.read_text().strip() or None
    except OSError:
        return None


def _kubeconfig_files(kubeconfig: str | None, env: Mapping[str, str]) -> list[Path]:
    if kubeconfig:
        return [Path(kubeconfig).expanduser()]
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [Path(p).expanduser() for p in listed]
    return [Path(env.get("HOME") or Path.home()) / ".kube" / "config"]


def context_namespace(
    kubeconfig: str | None, context: str | None = None, env: Mapping[str, str] | None = None
) -> tuple[str | None, str | None]:
    """The kubeconfig context's name and its namespace (None where unset or unreadable).

    The files are ``kubeconfig``, else ``$KUBECONFIG`` (merged as kubectl
    does: the first ``current-context`` and the first definition of a
    context win), else ``~/.kube/config``. ``context`` overrides the current one.
    """
    env = os.environ if env is None else env
    current: str | None = None
    contexts: dict[str, Mapping[str, Any]] = {}
    for path in _kubeconfig_files(kubeconfig, env):
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if not isinstance(doc, Mapping):
            continue
        cur = doc.get("current-context")
        if current is None and isinstance(cur, str) and cur:
            current = cur
        for entry in doc.get("contexts") or ():
            if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                body = entry.get("context")
                contexts.setdefault(entry["name"], body if isinstance(body, Mapping) else {})
    name = context or current
    if name is None:
        return None, None
    ns = contexts.get(name, {}).get("namespace")
    return name, ns if isinstance(ns, str) and ns else None


def default_namespace(
    kubeconfig: str | None, context: str | None, env: Mapping[str, str] | None = None
) -> tuple[str | None, str]:
    """The context name and the namespace to use when none is given, as kubectl decides.

    Without ``--kubeconfig`` and ``$KUBECONFIG``, inside a pod (where
    :func:`load_configuration` uses the service account) it is the pod's
    namespace; otherwise the kubeconfig context's namespace; else ``default``.
    """
    env = os.environ if env is None else env
    if credential_source(kubeconfig, env) is None and env.get("KUBERNETES_SERVICE_HOST"):
        own = own_namespace(env)
        if own:
            return None, own
    name, ns = context_namespace(kubeconfig, context, env)
    return name, ns or DEFAULT_NAMESPACE
