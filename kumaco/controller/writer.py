"""The status writer: the planner's changes onto ``nodes/status``, fenced, in the safe order.

Contract
--------
:meth:`StatusWriter.apply` sends the writes of a
:class:`~kumaco.core.planning.planner.Changes`: every revocation (and every other
change that grants nothing) first, in parallel; the grants of
MaintenanceInProgress only after all of those landed. So the number of nodes
in progress never exceeds the ceiling, even transiently. It answers whether
every write landed; when not, the caller plans again from fresh state.

* Each write is a strategic merge patch of the changed conditions only
  (merged by condition ``type``: kubelet's, node-problem-detector's and
  kured's conditions are never touched), carrying the node's
  ``resourceVersion`` as a precondition: 409 means the node changed since the
  decision -- it is re-read and the decision taken again.
* Fencing: nothing is sent unless the election grants a write deadline (the
  fencing deadline of the Lease term in force when that write starts: a batch
  longer than one term -- 50,000 nodes -- goes on under each renewal's
  deadline); every attempt checks it again and carries a client ``timeout``
  (the whole request: connect, send, answer) and a server-side ``timeout`` that
  end at that deadline, and no retry starts or sleeps past it. So a write's
  total time, retries included, ends before the deadline of the term it was
  issued under. No write is started with less than :data:`MIN_WRITE_WINDOW` of
  the term left (:class:`Fenced`: the batch stops sending, and the loop looks
  again after a retry period, under the next renewal's deadline).
* Precondition: the decision's ``resourceVersion``, or a newer one the watch
  delivered meanwhile if everything the planner reads of the node is still
  what it was then (:meth:`NodeStore.fresh_version`): a kubelet heartbeat in
  between does not turn the write into a 409.
* Bounded: ``concurrency`` workers take the batch's writes in order; nothing is
  queued per write, so a batch of 50,000 costs no more memory than one of 16.
* Write once: a write is retried only where it cannot have reached the API
  server (a 429, or no connection at all). A write that timed out, broke after
  sending, or got a 5xx may have been applied: its outcome is *unknown*. It is
  never sent again; the node is re-read and the decision taken again on the next
  pass (``kumaco_condition_writes_total{result="unknown"}``).
* 404: the node is gone (forgotten). Any other refusal is terminal for exactly
  that write: it is not sent again until the node or the decision changes
  (:meth:`StatusWriter.pending`).
* A landed write is stored through (the stored node becomes what was sent,
  at the resourceVersion the server answered), so its watch echo wakes nobody.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kumaco.controller.metrics import Metrics
from kumaco.controller.stores import NodeStore
from kumaco.core.errors import error_text
from kumaco.core.objects.nodes import Condition
from kumaco.core.planning.changes import Changes, NodeChange
from kumaco.core.planning.policy import Desired
from kumaco.kube.errors import ApiError, TransportError
from kumaco.kube.resources import Resources
from kumaco.kube.retry import RetryPolicy, retrying
from kumaco.kube.wire import leading_resource_version

log = logging.getLogger("kumaco.controller")


class Election(Protocol):
    """What the controller needs of leader election."""

    @property
    def is_leader(self) -> bool: ...

    def write_deadline(self) -> float | None: ...

    def healthy(self, now: float | None = None) -> bool: ...

    def release(self) -> bool: ...


class Fenced(Exception):
    """The replica may no longer write: its lease deadline passed (or is too close)."""


#: A write is not started with less of the lease term left than this: on a healthy API
#: server the leader renews every retry period and has most of its renew deadline left;
#: less than this means a slow one, where the write would time out at the deadline with
#: its outcome unknown (a re-read and a pass wasted). The next renewal is awaited instead.
MIN_WRITE_WINDOW = 1.0


class StatusWriter:
    """Sends node status writes for one controller; see the module contract."""

    def __init__(
        self,
        api: Resources,
        store: NodeStore,
        election: Election,
        metrics: Metrics,
        *,
        field_manager: str,
        in_progress: str,
        concurrency: int,
        monotonic: Callable[[], float],
        stop: threading.Event,
    ) -> None:
        self.api = api
        self.store = store
        self.election = election
        self.metrics = metrics
        self.field_manager = field_manager
        self.in_progress = in_progress
        self.monotonic = monotonic
        self.stop = stop
        self.concurrency = concurrency
        self._pool = concurrent.futures.ThreadPoolExecutor(concurrency, "write")
        # node -> (resourceVersion, desired) of a write the server refused for good
        self._terminal: dict[str, tuple[str | None, tuple[Desired, ...]]] = {}

    def shutdown(self) -> None:
        """Finish the writes in flight; send no more."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def pending(self, changes: Changes) -> Changes:
        """``changes`` without the writes refused for good on the same node version and decision.

        A node that needs no write any more is forgotten, so a refusal never
        outlives the situation it was about.
        """
        names = {c.name for c in changes}
        for name in [n for n in self._terminal if n not in names]:
            del self._terminal[name]

        def keep(c: NodeChange) -> bool:
            return self._terminal.get(c.name) != (c.resource_version, c.desired)

        return Changes(
            tuple(filter(keep, changes.revocations)), tuple(filter(keep, changes.grants))
        )

    def apply(self, changes: Changes) -> bool:
        """Revocations first, grants only after all of them landed; True if every write landed.

        Raises :class:`Fenced` when the election grants no write deadline.
        """
        if changes.revocations and not self._batch(changes.revocations):
            return False
        return not changes.grants or self._batch(changes.grants)

    def write_out_of_scope(self, change: NodeChange) -> bool:
        """One fenced write on a node outside the scope (nothing is stored through)."""
        return self._batch([change], store=False)

    def _batch(self, writes: Sequence[NodeChange], store: bool = True) -> bool:
        """Write all, ``concurrency`` at a time, each fenced; True if every write landed.

        Raises :class:`Fenced` (nothing sent) when no write could start now. A
        write fenced later -- the lease was not renewed in time -- stops the
        batch: what was not started is not sent.
        """
        self._issued_deadline()
        todo = iter(writes)
        take = threading.Lock()
        fenced = threading.Event()

        def worker() -> bool:
            ok = True
            while not (fenced.is_set() or self.stop.is_set()):
                with take:
                    w = next(todo, None)
                if w is None:
                    return ok
                try:
                    ok = self._write(w, store) and ok
                except Fenced:
                    fenced.set()
            return False

        workers = [self._pool.submit(worker) for _ in range(min(self.concurrency, len(writes)))]
        landed = [f.result() for f in workers]  # wait for every worker, not just the first False
        ok = all(landed)
        summary: dict[str, int] = {}
        for w in writes:
            for c in w.conditions:
                key = f"{c.type}={c.status}"
                summary[key] = summary.get(key, 0) + 1
        log.info(
            "status writes", extra={"nodes": len(writes), "allLanded": ok, "conditions": summary}
        )
        return ok

    def _issued_deadline(self) -> float:
        """The fencing deadline of a write starting now; :class:`Fenced` if too close."""
        deadline = self.election.write_deadline()
        if deadline is None or deadline - self.monotonic() < MIN_WRITE_WINDOW:
            raise Fenced
        return deadline

    def _sleep(self, seconds: float) -> None:
        self.stop.wait(seconds)

    def _write(self, w: NodeChange, store: bool = True) -> bool:
        deadline = self._issued_deadline()
        # One retry policy per write, bounded by the deadline it is issued under; for a
        # PATCH it retries only what cannot have reached the server.
        retry = retrying(
            RetryPolicy(deadline=max(0.1, deadline - self.monotonic())),
            sleep=self._sleep,
            method="PATCH",
        )
        body: dict[str, Any] = {"status": {"conditions": [c.as_json() for c in w.conditions]}}
        version = self.store.fresh_version(w.name, w.resource_version) if store else None
        if version is None:
            version = w.resource_version
        if version is not None:
            body = {"metadata": {"resourceVersion": version}, **body}

        def once() -> Any:
            remaining = deadline - self.monotonic()
            if remaining < MIN_WRITE_WINDOW or self.election.write_deadline() is None:
                raise Fenced
            # The server gives up at the same time as the client (see patch_node_status).
            t = min(remaining, self.api.timeout)
            return self.api.patch_node_status(
                w.name, body, field_manager=self.field_manager, timeout=t
            )

        try:
            answer = retry(once)
        except ApiError as exc:
            if exc.status >= 500:
                return self._unknown(w, exc)
            return self._failed(w, exc)
        except TransportError as exc:
            if exc.sent:
                return self._unknown(w, exc)
            self.metrics.writes.labels(result="error").inc()
            log.warning("status write failed", extra={"node": w.name, "error": error_text(exc)})
            return False
        rv = leading_resource_version(answer)
        written = [
            Condition(c.type, c.status, c.reason, c.message, c.last_transition_time)
            for c in w.conditions
        ]
        if store and (rv is None or not self.store.put_written(w.name, rv, written)):
            self.store.put(json.loads(answer))
        self.metrics.writes.labels(result="ok").inc()
        conditions = {c.type: f"{c.status} ({c.reason})" for c in w.conditions}
        # A window opening writes every node it covers: those go in the batch summary;
        # a change of MaintenanceInProgress (what kured acts on) is logged per node.
        level = (
            logging.INFO if any(c.type == self.in_progress for c in w.conditions) else logging.DEBUG
        )
        log.log(level, "conditions written", extra={"node": w.name, "conditions": conditions})
        return True

    def _reread(self, name: str) -> None:
        """Replace the stored node with the server's (best effort: the next pass tries again)."""
        with contextlib.suppress(ApiError, TransportError):
            self.store.put(self.api.get_node(name))

    def _unknown(self, w: NodeChange, exc: Exception) -> bool:
        """A write that may have been applied: never sent again; re-read, decide again."""
        self.metrics.writes.labels(result="unknown").inc()
        log.warning(
            "status write outcome unknown (it may have been applied): not sent again; "
            "re-reading the node",
            extra={"node": w.name, "error": error_text(exc)},
        )
        self._reread(w.name)
        return False

    def _failed(self, w: NodeChange, exc: ApiError) -> bool:
        if exc.status == 409:
            self.metrics.writes.labels(result="conflict").inc()
            log.info("status write conflicted; re-reading the node", extra={"node": w.name})
            self._reread(w.name)
            return False
        if exc.status == 404:
            self.store.forget(w.name)
            return False
        self.metrics.writes.labels(result="error").inc()
        self._terminal[w.name] = (w.resource_version, w.desired)
        log.error(
            "status write refused; not retried until the node changes",
            extra={
                "node": w.name,
                "status": exc.status,
                "reason": exc.reason,
                "error": error_text(exc.message),
            },
        )
        return False
