"""Leader election on a ``coordination.k8s.io/v1`` Lease, with fencing and release.

Why not ``kubernetes.leaderelection`` + ``LeaseLock`` (kubernetes 37)?
It was the first choice and it falls short where kumaco needs it most:

* ``LeaseLock`` builds ``client.CoordinationV1Api()`` on the *global* default
  client, so it ignores the configured client (its kubeconfig, its per-replica
  user agent) unless process-wide state is mutated;
* it measures lease expiry and the renew deadline with ``time.time()``: a
  wall-clock step (NTP) can make a follower take over early or a leader renew
  late -- the clock cannot be injected for tests either;
* a single Lease request has no timeout, so a leader can hang in one renew
  far past its deadline while it still believes it leads;
* it offers no "do I still hold the lease, and until when?" query, so writes
  cannot be fenced;
* it never releases the Lease on shutdown, so every rollout costs a full
  lease duration of leaderlessness;
* it neither keeps ``leaseTransitions`` nor lets the caller stop the
  follower loop.

So this module implements client-go's algorithm directly on raw Lease JSON
through :class:`kumaco.kube.client.Kube` (create or update with resourceVersion
preconditions, so two candidates can never both win one round), with:

* a monotonic clock (injected): a follower judges expiry by when *it* saw the
  record last change plus ``leaseDurationSeconds``, never by comparing clocks;
* fencing: :meth:`LeaseElection.write_deadline` is the monotonic instant
  until which the leader may write -- the start of its last successful renew
  plus the renew deadline, which ends before any follower can consider the
  lease expired (renew deadline < lease duration). Each Lease request is
  bounded by the time left;
* loss: when the renew deadline passes without a renew, writing stops at once
  and ``on_stopped_leading`` runs (the controller then exits, as
  controller-runtime does);
* release: :meth:`LeaseElection.release` clears ``holderIdentity`` (with a
  resourceVersion precondition) so a follower takes over within one retry
  period, as client-go's ``ReleaseOnCancel``. It first waits for an election
  round in flight (bounded by the renew deadline): a SIGTERM that lands while
  an acquiring PUT is on the wire must still release what that PUT wins, or
  the rollout costs a full lease duration.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kumaco.core.errors import error_text
from kumaco.core.objects.lease import LeaseRecord, lease_object, micro_time, parse_lease, released
from kumaco.kube.client import Kube
from kumaco.kube.errors import ApiError, TransportError

log = logging.getLogger("kumaco.kube.election")


@dataclass
class LeaseElection:
    """One candidate. Run :meth:`run` in a thread; ask :meth:`write_deadline` before writing."""

    kube: Kube
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    on_started_leading: Callable[[], None] = lambda: None
    on_stopped_leading: Callable[[], None] = lambda: None
    on_new_leader: Callable[[str], None] = lambda _identity: None
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if not self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("need retry_period < renew_deadline < lease_duration")
        self._lock = threading.Lock()
        # Held for one whole election round (GET + PUT + becoming leader), so
        # release() never judges "not leading" while an acquiring PUT is in flight.
        self._round = threading.Lock()
        # Set when release() finds a round in flight and waits for it (a test hook: the
        # ordering of a SIGTERM and an acquiring PUT is then explicit, not slept for).
        self.release_waits = threading.Event()
        self._leading = False
        self._renewed_at: float | None = None
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._resource_version: str | None = None
        self.leader: str | None = None
        #: When this replica took the Lease over: the previous holder's ``renewTime``.
        self.took_over_after: str | None = None
        self.heartbeat = self.clock()
        self.stop = threading.Event()

    @property
    def path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{self.name}"

    # ------------------------------------------------------------------ queries

    @property
    def is_leader(self) -> bool:
        with self._lock:
            return self._leading

    def write_deadline(self) -> float | None:
        """Monotonic instant until which this replica may write; None if it must not."""
        with self._lock:
            if not self._leading or self._renewed_at is None:
                return None
            deadline = self._renewed_at + self.renew_deadline
        return deadline if self.clock() < deadline else None

    def healthy(self, now: float | None = None) -> bool:
        """False when the election loop has not turned for too long (stuck)."""
        now = self.clock() if now is None else now
        return now - self.heartbeat < self.lease_duration + 2 * self.retry_period

    # ------------------------------------------------------------------ the loop

    def run(self) -> None:
        """Follow until elected, then lead until stopped or the renew deadline passes."""
        while not self.stop.is_set():
            self.heartbeat = self.clock()
            became = lost = False
            with self._round:
                if self.stop.is_set():
                    break
                if self.is_leader:
                    lost = self._renew_round()
                elif self.try_acquire_or_renew():
                    with self._lock:
                        self._leading = became = True
            if became:
                self._set_leader(self.identity)
                log.info("became leader", extra={"identity": self.identity, "lease": self.name})
                self.on_started_leading()
                continue
            if lost:
                log.error(
                    "leadership lost: the lease was not renewed within the renew deadline",
                    extra={"identity": self.identity, "lease": self.name},
                )
                self.on_stopped_leading()
            self.stop.wait(self.retry_period * (1.0 + 0.2 * self.rng.random()))

    def _renew_round(self) -> bool:
        """Renew once; True if leadership was lost in this round (the caller reports it)."""
        if self.try_acquire_or_renew():
            return False
        if self.write_deadline() is not None:
            return False
        with self._lock:
            was_leading, self._leading = self._leading, False
        return was_leading

    def _request_timeout(self) -> float:
        """A Lease request may never outlive this replica's right to act."""
        deadline = self.write_deadline()
        if deadline is None:
            # A follower's request is safe however late it lands (a won lease is fenced
            # from the round's start), so it may take as long as a renew may: on an API
            # server answering 2 s late a retry-period bound would never let one win.
            return max(0.5, self.renew_deadline)
        return max(0.2, min(self.renew_deadline / 2, deadline - self.clock()))

    def try_acquire_or_renew(self) -> bool:
        """One round of client-go's tryAcquireOrRenew; True if we hold the lease now."""
        started = self.clock()
        now_wall = micro_time(self.wall())
        timeout = self._request_timeout()
        try:
            current = self.kube.request("GET", self.path, timeout=timeout, retry=False)
        except ApiError as exc:
            if exc.status != 404:
                log.warning(
                    "cannot read the lease", extra={"lease": self.name, "error": error_text(exc)}
                )
                return False
            return self._create(started, now_wall, timeout)
        except TransportError as exc:
            log.warning(
                "cannot read the lease", extra={"lease": self.name, "error": error_text(exc)}
            )
            return False

        record = parse_lease(current)
        rv = (current.get("metadata") or {}).get("resourceVersion")
        if record != self._observed:
            self._observed, self._observed_at = record, self.clock()
        if record.holder != self.leader:
            self._set_leader(record.holder or None)
        expired = self._observed_at + max(record.duration, 1) <= self.clock()
        if record.holder and record.holder != self.identity and not expired:
            return False
        mine = record.holder == self.identity
        spec = LeaseRecord(
            holder=self.identity,
            duration=round(self.lease_duration),
            acquire_time=record.acquire_time if mine and record.acquire_time else now_wall,
            renew_time=now_wall,
            transitions=record.transitions if mine else record.transitions + 1,
        )
        body = lease_object(self.name, self.namespace, spec, rv)
        if not mine:
            # The previous holder's last word (its release, or its last renewal before it
            # died), set before the write that may make us leader: what it saw before
            # then, it told; a new leader tells what came after (controller.moments).
            self.took_over_after = record.renew_time
        return self._write("PUT", self.path, body, started, timeout, "cannot update the lease")

    def _create(self, started: float, now_wall: str, timeout: float) -> bool:
        spec = LeaseRecord(self.identity, round(self.lease_duration), now_wall, now_wall, 0)
        body = lease_object(self.name, self.namespace, spec)
        path = f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases"
        return self._write("POST", path, body, started, timeout, "cannot create the lease")

    def _write(
        self,
        method: str,
        path: str,
        body: dict[str, Any],
        started: float,
        timeout: float,
        failure: str,
    ) -> bool:
        """Send one Lease write (never retried); a 409 is a lost race, said by no warning."""
        try:
            written = self.kube.request(method, path, body=body, timeout=timeout, retry=False)
        except (ApiError, TransportError) as exc:
            if not (isinstance(exc, ApiError) and exc.status == 409):
                log.warning(failure, extra={"lease": self.name, "error": error_text(exc)})
            return False
        self._won(written, started)
        return True

    def _won(self, lease: dict[str, Any], started: float) -> None:
        record = parse_lease(lease)
        with self._lock:
            self._observed, self._observed_at = record, self.clock()
            self._resource_version = (lease.get("metadata") or {}).get("resourceVersion")
            # Fence from when the request was *sent*: a follower cannot have seen it earlier.
            self._renewed_at = started

    def _set_leader(self, identity: str | None) -> None:
        if identity != self.leader:
            self.leader = identity
            log.info("leader observed", extra={"leader": identity or "", "lease": self.name})
            self.on_new_leader(identity or "")

    # ------------------------------------------------------------------ shutdown

    def release(self) -> bool:
        """Give the lease up if we hold it, so a follower takes over within one retry period.

        Waits (at most the renew deadline) for an election round in flight: its
        PUT may be winning the lease right now. If the round does not end in
        time the lease is left to expire, which is safe, only slower.
        """
        self.stop.set()
        if not self._round.acquire(blocking=False):
            self.release_waits.set()  # a round is in flight: observable by the tests
            if not self._round.acquire(timeout=self.renew_deadline):
                log.warning(
                    "an election round is still in flight; the lease is left to expire",
                    extra={"lease": self.name},
                )
                return False
        try:
            return self._release_held()
        finally:
            self._round.release()

    def _release_held(self) -> bool:
        with self._lock:
            leading, rv = self._leading, self._resource_version
            self._leading = False
        if not leading or rv is None:
            return False
        now_wall = micro_time(self.wall())
        transitions = self._observed.transitions if self._observed else 0
        body = lease_object(self.name, self.namespace, released(transitions, now_wall), rv)
        try:
            self.kube.request("PUT", self.path, body=body, timeout=2.0, retry=False)
        except (ApiError, TransportError) as exc:
            log.warning(
                "could not release the lease", extra={"lease": self.name, "error": error_text(exc)}
            )
            return False
        log.info("released the lease", extra={"identity": self.identity, "lease": self.name})
        return True


class AlwaysLeader:
    """``--leader-elect=false``: a single active replica (development only; unsafe with more)."""

    identity = ""
    leader: str | None = None

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.heartbeat = time.monotonic()

    @property
    def is_leader(self) -> bool:
        return True

    def write_deadline(self) -> float | None:
        return float("inf")

    def healthy(self, now: float | None = None) -> bool:
        return True

    def run(self) -> None:
        self.stop.wait()

    def release(self) -> bool:
        self.stop.set()
        return False
