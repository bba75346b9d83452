"""The command registry of ``kumaco`` and ``kubectl kumaco``: each command defined once.

Contract: a :class:`Command` is a name, a body, its flags and the programs that
offer it (with its one-line help in each). Its body is written once against a
:class:`Source` -- where its windows and nodes come from: files for ``kumaco``
(:class:`~kumaco.cmd.common.FilesSource`, what :class:`Files` says it reads),
the cluster for ``kubectl kumaco`` (:class:`~kumaco.cmd.cluster.ClusterSource`).
A :class:`Program` lists its commands and builds its parser from them, in one
shape for all: the input (file arguments, or the connection flags), the
command's flags, ``--configmap-selector`` (offline), then the policy flags.
Every command's help shows each flag's default (:class:`HelpFormatter`); a flag has
one metavar in both programs. The commands that read ``KUMACO_<FLAG>`` (``run``,
``plan``, ``forecast``, offline) refuse a ``KUMACO_*`` variable that sets no flag,
naming the closest one (:func:`~kumaco.cmd.flags.unknown_env`).
For ``kubectl kumaco``, the settings of kumaco's Deployment that the connection
read (:mod:`kumaco.cmd.deployed`) become the values of the command's flags that
its command line did not give, named in one line on standard error. Its
:meth:`Program.main` runs the chosen body: a
:class:`~kumaco.cmd.flags.UsageError` is exit status 2 and a
:class:`~kumaco.cmd.cluster.ClusterError` 1, each one line on standard error
naming the program and the command; a closed pipe is success.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TextIO

from kumaco import __version__
from kumaco.cmd.cluster import Cluster, ClusterError, ClusterSource
from kumaco.cmd.common import EXIT_OK, EXIT_USAGE, FilesSource, add_input_flags
from kumaco.cmd.flags import (
    UsageError,
    add_policy_flags,
    apply_env_defaults,
    env_names,
    unknown_env,
)
from kumaco.core.objects.disruptions import Refusals
from kumaco.core.objects.nodes import NodeSet
from kumaco.core.planning.policy import Policy
from kumaco.core.planning.rulebook import RULEBOOK, Rulebook
from kumaco.core.windows.window import InvalidWindow, Window

EXIT_CLUSTER = 1
#: The two programs, by the name they are invoked as.
KUMACO, KUBECTL = "kumaco", "kubectl kumaco"
NODES_HELP = "the nodes, as kubectl get nodes -o yaml|json prints them"
PODS_HELP = "the Pods in FILE, as kubectl get pods -A -o yaml|json prints them"
PDBS_HELP = "the PodDisruptionBudgets in FILE, as kubectl get pdb -A -o yaml|json prints them"
WINDOWS_HELP = "window ConfigMaps, as kubectl get cm -o yaml|json prints them ('-': standard input)"


ENV_EPILOG = (
    "Every flag can also be set as an environment variable KUMACO_<FLAG> (e.g. "
    "KUMACO_MAX_IN_PROGRESS=2; a repeatable flag takes a comma-separated value); the command "
    "line wins, and a KUMACO_* variable that sets no flag is an error."
)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, with every flag's default shown: ``(default: X)`` unless its help says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        if text is None or text == argparse.SUPPRESS or not action.option_strings:
            return text
        default = action.default
        if "default" in text or action.required or default in (None, argparse.SUPPRESS, []):
            return text
        if isinstance(default, bool):
            shown = str(default).lower()
        elif isinstance(default, list | tuple):
            shown = ",".join(str(d) for d in default)
        else:
            shown = str(default) if default != "" else '""'
        return f"{text} (default: {shown.replace('%', '%%')})"


class Source(Protocol):
    """Where a command's input comes from: files or the cluster."""

    def windows(self, err: TextIO) -> list[Window | InvalidWindow]:
        """The window ConfigMaps, valid or not (notes about the input on ``err``)."""
        ...

    @property
    def has_nodes(self) -> bool:
        """Whether there are nodes to read."""
        ...

    def nodes(self, owned: tuple[str, ...] = ()) -> NodeSet:
        """The nodes (``owned``: the condition types whose writers to keep)."""
        ...

    def refusals(self, policy: Policy) -> Refusals:
        """With ``--respect-pdbs``: node -> the PodDisruptionBudgets refusing its drain now."""
        ...

    def origin(self, detailed: bool = False) -> str:
        """What the input was, for a caption (``detailed``: with the selectors)."""
        ...


Body = Callable[[argparse.Namespace, Source, TextIO, TextIO], int]
#: A parsed command line's handler: ``(args, out, err, stdin) -> exit status``.
Handler = Callable[[argparse.Namespace, TextIO, TextIO, TextIO], int]


@dataclass(frozen=True)
class Files:
    """What a command reads offline: the window files and maybe a node list.

    The window files are ``FILE...`` or ``--windows FILE...``, either way for every
    command (both together: all of them, positional first); ``nodes``: ``--nodes
    FILE``'s help (None: no ``--nodes``), required or not; ``budgets``: ``--pods FILE``
    and ``--pdbs FILE`` (read with ``--respect-pdbs``).
    """

    nodes: str | None = None
    nodes_required: bool = False
    budgets: bool = False

    def add_flags(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("windows", nargs="*", metavar="FILE", help=WINDOWS_HELP)
        p.add_argument(
            "--windows",
            dest="windows_files",
            nargs="+",
            action="extend",
            default=[],
            metavar="FILE",
            help="window ConfigMaps, the same as FILE (default: none; one of the two is needed)",
        )
        if self.nodes is not None:
            p.add_argument("--nodes", required=self.nodes_required, metavar="FILE", help=self.nodes)
        if self.budgets:
            p.add_argument(
                "--pods", metavar="FILE", help=f"with --respect-pdbs: {PODS_HELP} (default: none)"
            )
            p.add_argument(
                "--pdbs", metavar="FILE", help=f"with --respect-pdbs: {PDBS_HELP} (default: none)"
            )

    @staticmethod
    def paths(args: argparse.Namespace) -> list[str]:
        """The window files named, positional first; a usage error when there is none."""
        paths = [*args.windows, *args.windows_files]
        if not paths:
            raise UsageError(
                "no window file given: name it as FILE or --windows FILE ('-' reads standard "
                f"input), e.g. kubectl get cm -n maintenance -o yaml | kumaco {args.command} -"
            )
        return paths


#: What ``plan`` and ``forecast`` read offline: the window files and ``--nodes FILE`` (and
#: ``--pods FILE``, ``--pdbs FILE`` with ``--respect-pdbs``).
PLANNER_INPUT = Files(nodes=NODES_HELP, nodes_required=True, budgets=True)


def _no_flags(_p: argparse.ArgumentParser, _cluster: bool) -> None:
    return None


@dataclass(frozen=True)
class Command:
    """One command, for every program that offers it.

    ``help``: the program (:data:`KUMACO`, :data:`KUBECTL`) -> the command's one-line
    help there. ``flags(parser, cluster)`` adds its own flags (``cluster``: for
    ``kubectl kumaco``). ``files``: what it reads offline (None: no input files, so
    no ``--configmap-selector`` either). ``policy``: it takes the policy flags.
    ``env``: offline, ``KUMACO_<FLAG>`` sets its flags' defaults.
    """

    name: str
    run: Body
    help: Mapping[str, str]
    flags: Callable[[argparse.ArgumentParser, bool], None] = _no_flags
    files: Files | None = None
    policy: bool = False
    env: bool = False
    #: ``kubectl kumaco``: the command lists nodes with ``--node-selector``.
    reads_nodes: bool = False


@dataclass(frozen=True)
class Program:
    """``kumaco`` (offline: files) or ``kubectl kumaco`` (the cluster), and its commands.

    ``label`` names it in messages (``kumaco``, ``kubectl-kumaco``); ``connection``
    adds its connection flags to the top parser and each command's (cluster only).
    """

    name: str
    label: str
    description: str
    commands: Sequence[Command]
    connection: Callable[[argparse.ArgumentParser], None] | None = None
    connect: Callable[[argparse.Namespace], Cluster] | None = None
    #: The admission rules its policy flags configure (a test's may add one of its own).
    rulebook: Rulebook = RULEBOOK

    def build_parser(self) -> argparse.ArgumentParser:
        """The argument parser of every command of the program."""
        parser = argparse.ArgumentParser(
            prog=self.name, description=self.description, formatter_class=HelpFormatter
        )
        parser.add_argument("--version", action="version", version=f"{self.label} {__version__}")
        if self.connection is not None:
            self.connection(parser)
        sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
        with_env: list[argparse.ArgumentParser] = []
        for command in self.commands:
            env = command.env and self.connection is None
            p = sub.add_parser(
                command.name,
                help=command.help[self.name],
                description=command.help[self.name],
                formatter_class=HelpFormatter,
                epilog=ENV_EPILOG if env else None,
            )
            self._add_flags(p, command)
            p.set_defaults(func=self._bind(command))
            if env:
                with_env.append(p)
        # KUMACO_<FLAG> sets any flag's default: all of run's, and the policy flags of plan and
        # forecast (the same flags, with the same meaning, as the operator's environment).
        # Every variable any of them reads is known to each: KUMACO_LEADER_ELECT in the
        # controller's environment is no typo for ``kumaco plan`` run there.
        known: dict[str, str] = {}
        for p in with_env:
            known.update(env_names(p))
        try:
            for p in with_env:
                apply_env_defaults(p, os.environ)
                p.set_defaults(env_names_=known)
        except UsageError as exc:
            parser.error(str(exc))
        return parser

    def _add_flags(self, p: argparse.ArgumentParser, command: Command) -> None:
        cluster = self.connection is not None
        if self.connection is not None:
            self.connection(p)
        elif command.files is not None:
            command.files.add_flags(p)
        command.flags(p, cluster)
        if not cluster and command.files is not None:
            add_input_flags(p)
        if command.policy:
            add_policy_flags(p, self.rulebook)

    def _bind(self, command: Command) -> Handler:
        """The command's body with its source: the files named, or a cluster connection."""
        connect, files = self.connect, command.files

        def offline(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
            paths: Sequence[str] = Files.paths(args) if files is not None else ()
            nodes = args.nodes if files is not None and files.nodes is not None else None
            return command.run(args, FilesSource(paths, nodes, args, stdin), out, err)

        def online(args: argparse.Namespace, out: TextIO, err: TextIO, _stdin: TextIO) -> int:
            from kumaco.kube.errors import ApiError, TransportError  # noqa: PLC0415

            assert connect is not None
            cluster = connect(args)
            try:
                if cluster.deployed is not None:
                    self._take_deployed(cluster, args, err)
                source = ClusterSource(cluster, args, command.reads_nodes)
                return command.run(args, source, out, err)
            except TransportError as exc:
                raise ClusterError(f"cannot reach the API server: {exc}") from None
            except ApiError as exc:
                raise ClusterError(f"{exc.status} {exc.reason}: {exc.message}") from None
            finally:
                cluster.close()

        return offline if connect is None else online

    def _take_deployed(self, cluster: Cluster, args: argparse.Namespace, err: TextIO) -> None:
        """The deployed settings as the values of the flags ``args.argv`` did not give."""
        deployed = cluster.deployed
        assert deployed is not None
        parser = self.build_parser()
        for action in parser._actions:  # every default suppressed: what remains was given
            action.default = argparse.SUPPRESS
        (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        sub = commands.choices[args.command]
        for action in sub._actions:
            action.default = argparse.SUPPRESS
        given = set(vars(parser.parse_args(args.argv)))
        taken = deployed.apply(args, given, sub)
        if not (getattr(args, "namespace", None) or getattr(args, "namespaces", None)):
            taken.insert(0, f"--namespaces={','.join(cluster.namespaces)}")
        note = f"settings of Deployment {deployed.key}: {' '.join(taken) or 'the defaults'}"
        if deployed.unresolved:
            note += f" (not read, set from other objects: {', '.join(deployed.unresolved)})"
        err.write(f"{self.label} {args.command}: {note}\n")

    def main(self, argv: Sequence[str] | None = None, stdin: TextIO | None = None) -> int:
        """Parse ``argv``, run the command, turn its errors into exit codes."""
        out, err = sys.stdout, sys.stderr
        argv = list(sys.argv[1:] if argv is None else argv)
        args = self.build_parser().parse_args(argv)
        args.argv = argv
        try:
            known = getattr(args, "env_names_", None)
            if known is not None:  # a command that reads KUMACO_<FLAG>: no unknown one
                unknown_env(os.environ, known, args.command)
            rc: int = args.func(args, out, err, stdin or sys.stdin)
        except UsageError as exc:
            err.write(f"{self.label} {args.command}: {exc}\n")
            return EXIT_USAGE
        except ClusterError as exc:
            err.write(f"{self.label} {args.command}: {exc}\n")
            return EXIT_CLUSTER
        except BrokenPipeError:  # e.g. `kumaco windows ... | head`
            return EXIT_OK
        return rc
