"""The deployed kumaco's settings, read from its Deployment: the defaults of ``kubectl kumaco``.

Contract: :func:`deployment_ref` reads ``--deployment NAMESPACE/NAME`` (default
:data:`DEFAULT_DEPLOYMENT`, where every overlay installs kumaco; empty: read none).
:func:`deployed_settings` turns a Deployment, as the API server returns it, into
:class:`Deployed`: the flags of ``kumaco run`` exactly as the ``kumaco run`` of its
container parses them -- the container's literal ``KUMACO_<FLAG>`` variables as the
flags' defaults, its ``args`` (or the arguments after ``run`` in its ``command``) on
top, ``POD_NAMESPACE`` its namespace (:func:`~kumaco.cmd.settings.settings_from_args`)
-- and from them the namespaces it watches and its Lease's namespace. Variables set
``valueFrom`` another object (a ConfigMap, a Secret) are not read: they are named in
:attr:`Deployed.unresolved`. :meth:`Deployed.apply` sets a command's flags that its
command line did not give to the deployed values (a flag given wins, as a flag wins
over ``KUMACO_<FLAG>`` in ``kumaco run``) and says which it set. A Deployment kumaco
itself would refuse (a bad flag or value) raises :class:`DeploymentError` naming it.
Pure: the caller reads the Deployment (:func:`kumaco.kube.reader.get_deployment`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from kumaco.cmd.flags import UsageError, apply_env_defaults
from kumaco.cmd.settings import add_run_flags, settings_from_args

#: Where the overlays (and the Helm chart's defaults) install kumaco.
DEFAULT_DEPLOYMENT = "kumaco-system/kumaco"
#: The container kumaco runs in (kustomize/base/deployment.yaml).
CONTAINER = "kumaco"
#: Flags of ``kubectl kumaco`` that are the connection's, never a deployed setting.
CONNECTION = frozenset(
    {"kubeconfig", "context", "as_", "as_group", "request_timeout", "namespace", "namespaces"}
)
#: What the validation of a Deployment's settings takes as its notification endpoints:
#: none (``--notify-url-file`` names a file in the pod, its URLs carry tokens).
NOT_NOTIFYING: dict[str, Any] = {"notify_url": [], "notify_url_file": None}
#: No service-account file: the Deployment's namespace is POD_NAMESPACE.
_NO_FILE = Path("/nonexistent/kumaco/serviceaccount/namespace")


class DeploymentError(Exception):
    """The Deployment cannot be read as kumaco's: exit status 1, naming it."""


def deployment_ref(text: str) -> tuple[str, str] | None:
    """``NAMESPACE/NAME`` of ``--deployment``; None for an empty value (read none)."""
    text = text.strip()
    if not text:
        return None
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise UsageError(
            f"--deployment: {text!r} is not NAMESPACE/NAME (e.g. {DEFAULT_DEPLOYMENT}; "
            "'' reads none)"
        )
    return namespace, name


class _RunParser(argparse.ArgumentParser):
    """``kumaco run``'s flags; an error raises instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


@dataclass(frozen=True)
class Deployed:
    """What the kumaco of a Deployment runs with."""

    key: str
    #: ``kumaco run``'s parsed flags (dest -> value), the Lease's namespace resolved.
    values: Mapping[str, Any]
    namespaces: tuple[str, ...]
    lease_namespace: str
    unresolved: tuple[str, ...] = ()
    #: ``kumaco run``'s own defaults: a value equal to its default is not named.
    run_defaults: Mapping[str, Any] = field(default_factory=dict)

    def apply(
        self, args: argparse.Namespace, given: set[str], parser: argparse.ArgumentParser
    ) -> list[str]:
        """Set each flag of ``parser`` not ``given`` to its deployed value; the flags it set.

        Returned as ``--flag=value`` for those the Deployment sets (not ``kumaco run``'s
        own default).
        """
        taken: list[str] = []
        for action in parser._actions:
            dest = action.dest
            if dest in given or dest in CONNECTION or dest not in self.values:
                continue
            value = self.values[dest]
            setattr(args, dest, value)
            if value != self.run_defaults.get(dest) and action.option_strings:
                taken.append(f"{action.option_strings[-1]}={value_text(value)}")
        return taken


def value_text(value: Any) -> str:
    """A flag's value as typed on a command line (a list comma-separated, a bool lower case)."""
    if isinstance(value, bool):
        return str(value).lower()
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _container(key: str, pod: Mapping[str, Any]) -> Mapping[str, Any]:
    containers: Sequence[Mapping[str, Any]] = pod.get("containers") or []
    named = [c for c in containers if c.get("name") == CONTAINER]
    if named:
        return named[0]
    if len(containers) == 1:
        return containers[0]
    names = ", ".join(str(c.get("name")) for c in containers) or "none"
    raise DeploymentError(
        f"Deployment {key} has no container named {CONTAINER} (containers: {names})"
    )


def _run_arguments(key: str, container: Mapping[str, Any]) -> list[str]:
    """The arguments of ``kumaco run`` in the container: its args, after ``run`` in a command."""
    args = [str(a) for a in container.get("args") or []]
    command = [str(c) for c in container.get("command") or []]
    if not command:  # the image's ENTRYPOINT, ["kumaco", "run"]
        return args
    if "run" not in command:
        raise DeploymentError(
            f"Deployment {key}: its command {' '.join(command)!r} does not run `kumaco run`"
        )
    return command[command.index("run") + 1 :] + args


def deployed_settings(deployment: Mapping[str, Any]) -> Deployed:
    """The settings of the kumaco a Deployment runs (:class:`DeploymentError` if it cannot)."""
    meta = deployment.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    key = f"{namespace}/{name}"
    pod = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    container = _container(key, pod)
    env: dict[str, str] = {}
    unresolved: list[str] = []
    for entry in container.get("env") or []:
        variable = str(entry.get("name", ""))
        if not variable.startswith("KUMACO_"):
            continue
        if "valueFrom" in entry:
            unresolved.append(variable)
        else:
            env[variable] = str(entry.get("value", ""))
    parser = _RunParser(prog=f"Deployment {key}", add_help=False)
    add_run_flags(parser)
    run_defaults = {a.dest: a.default for a in parser._actions}
    try:
        apply_env_defaults(parser, env)
        parsed = parser.parse_args(_run_arguments(key, container))
        # The notifications' URLs are the pod's secrets (a file mounted there): not read here.
        validated = argparse.Namespace(**{**vars(parsed), **NOT_NOTIFYING})
        settings = settings_from_args(validated, {"POD_NAMESPACE": namespace}, _NO_FILE)
    except UsageError as exc:
        raise DeploymentError(f"Deployment {key}: kumaco would refuse it: {exc}") from None
    values = dict(vars(parsed))
    values["leader_election_namespace"] = settings.leader_election_namespace
    return Deployed(
        key,
        values,
        settings.namespaces,
        settings.leader_election_namespace,
        tuple(unresolved),
        run_defaults,
    )
