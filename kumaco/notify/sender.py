"""The notifications' sender: Apprise endpoints fed from a bounded queue by one thread.

Contract: :class:`Endpoint` is one ``--notify-url`` (an Apprise URL: Slack, Teams,
Discord, email, Matrix, ntfy, JSON/form webhooks, ...), refused at start-up with its flag
when Apprise does not know it; its :attr:`~Endpoint.name` is the URL with its
credentials masked (Apprise's privacy form), the only form that reaches a log or an
error message. :class:`Notifier` never blocks its caller: :meth:`~Notifier.publish`
puts a :class:`~kumaco.notify.messages.Message` on a bounded queue (a full queue drops
the message, logged and counted) and one worker thread delivers the messages in order,
each to every endpoint, retrying a failed delivery per the one retry policy of the I/O
edge (:func:`kumaco.kube.retry.retrying`, with :data:`RETRY`) and then dropping it with
a log line. Each delivery is counted by ``on_result(event, result)``, ``result`` one of
``sent``, ``failed`` (after the retries) or ``dropped`` (queue full, or still queued
when :meth:`~Notifier.close` gave up). :meth:`~Notifier.close` sends what is queued,
bounded by a timeout, and stops the thread: a leader calls it before it releases its
Lease. Apprise's own log lines are captured per delivery and logged by kumaco with the
masked endpoint (Apprise's logger does not propagate).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence

import apprise

from kumaco.core.errors import InvalidInput, error_text
from kumaco.kube.retry import RetryPolicy, retrying
from kumaco.notify.messages import Message, Moment, Templates

log = logging.getLogger("kumaco.notify")

#: Per delivery: three attempts within 30 s (Apprise's own timeouts bound each attempt:
#: ``cto``/``rto`` in the URL, 4 s each by default for HTTP endpoints).
RETRY = RetryPolicy(attempts=3, initial=1.0, maximum=10.0, deadline=30.0)
#: Messages waiting at most; past that a new one is dropped (logged and counted).
CAPACITY = 1000
SENT, FAILED, DROPPED = "sent", "failed", "dropped"
RESULTS = (SENT, FAILED, DROPPED)

# kumaco logs Apprise's complaints itself, with the endpoint's credentials masked.
logging.getLogger("apprise").propagate = False


class NotifyFailed(Exception):
    """An endpoint did not take the message; the text is Apprise's reason."""


def _scheme(url: str) -> str:
    return url.split("://", 1)[0] if "://" in url else "(none)"


class Endpoint:
    """One Apprise URL; see the module contract."""

    def __init__(self, url: str, flag: str = "--notify-url") -> None:
        obj = apprise.Apprise.instantiate(url.strip())
        if obj is None:
            raise InvalidInput(
                f"{flag}: a URL of scheme {_scheme(url)!r} that Apprise does not accept "
                "(unknown scheme, or a part missing: a token, a recipient); write it as "
                "Apprise's documentation for that service says, and try it with kumaco notify"
            )
        self.name: str = obj.url(privacy=True)
        self._apprise = apprise.Apprise()
        self._apprise.add(obj)

    def send(self, title: str, body: str) -> None:
        """Deliver once; :class:`NotifyFailed` with Apprise's reason if not delivered."""
        with apprise.LogCapture(level=logging.WARNING, fmt="%(message)s") as captured:
            ok = self._apprise.notify(body=body, title=title)
            said = captured.getvalue().strip()
        if not ok:
            reason = " ".join(said.split()) or "the endpoint did not accept the message"
            raise NotifyFailed(reason[:500])


def endpoints(urls: Iterable[str], flag: str = "--notify-url") -> tuple[Endpoint, ...]:
    """One :class:`Endpoint` per URL (a URL may list several, separated by commas or spaces)."""
    found: list[Endpoint] = []
    for text in urls:
        for url in text.replace(",", " ").split():
            found.append(Endpoint(url, flag))
    return tuple(found)


def read_url_file(path: str, flag: str = "--notify-url-file") -> list[str]:
    """The URLs in a file (a mounted Secret): one or more a line, ``#`` starts a comment."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise InvalidInput(f"{flag}: cannot read {path}: {exc.strerror or exc}") from None
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


class Notifier:
    """A bounded queue and one sending thread; see the module contract."""

    def __init__(
        self,
        targets: Sequence[Endpoint],
        *,
        on_result: Callable[[str, str], None] = lambda _event, _result: None,
        policy: RetryPolicy = RETRY,
        capacity: int = CAPACITY,
    ) -> None:
        self.targets = tuple(targets)
        self.on_result = on_result
        self.policy = policy
        self._queue: queue.Queue[Message] = queue.Queue(capacity)
        self._lock = threading.Condition()
        self._unfinished = 0  # queued or being delivered
        self._abort = threading.Event()
        self._thread = threading.Thread(target=self._work, name="notify", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def publish(self, message: Message) -> None:
        """Queue ``message`` for every endpoint; never blocks (a full queue drops it)."""
        with self._lock:
            try:
                self._queue.put_nowait(message)
            except queue.Full:
                self._dropped(message, "the queue is full")
                return
            self._unfinished += 1

    def pending(self) -> int:
        """Messages queued or being delivered."""
        with self._lock:
            return self._unfinished

    def close(self, timeout: float) -> int:
        """Deliver what is queued within ``timeout`` seconds, then stop; the number left."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._unfinished and (left := deadline - time.monotonic()) > 0:
                self._lock.wait(left)
            remaining = self._unfinished
        self._abort.set()
        while True:
            try:
                message = self._queue.get_nowait()
            except queue.Empty:
                break
            self._dropped(message, "kumaco stopped before it was sent")
        if remaining:
            log.warning(
                "stopping with notifications not delivered",
                extra={"notifications": remaining, "timeoutSeconds": timeout},
            )
        return remaining

    def _dropped(self, message: Message, why: str) -> None:
        for t in self.targets:
            self.on_result(message.event, DROPPED)
            log.warning(
                "notification dropped",
                extra={"event": message.event, "endpoint": t.name, "error": why},
            )

    def _work(self) -> None:
        while not self._abort.is_set():
            try:
                message = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self.deliver(message)
            except Exception:  # the thread must survive anything
                log.exception("notification failed")
            finally:
                with self._lock:
                    self._unfinished -= 1
                    self._lock.notify_all()

    def _sleep(self, seconds: float) -> None:
        self._abort.wait(seconds)  # a close that gave up cuts a backoff short

    def _retryable(self, exc: BaseException) -> bool:
        return isinstance(exc, NotifyFailed) and not self._abort.is_set()

    def deliver(self, message: Message) -> None:
        """Send ``message`` to every endpoint with retries; count each result."""
        for t in self.targets:

            def retried(exc: BaseException, wait: float, t: Endpoint = t) -> None:
                log.info(
                    "notification failed; retrying",
                    extra={"endpoint": t.name, "error": error_text(exc), "wait": wait},
                )

            try:
                for attempt in retrying(
                    self.policy, sleep=self._sleep, on_retry=retried, retryable=self._retryable
                ):
                    with attempt:
                        t.send(message.title, message.body)
            except NotifyFailed as exc:
                self.on_result(message.event, FAILED)
                log.warning(
                    "notification not delivered; dropped",
                    extra={"event": message.event, "endpoint": t.name, "error": str(exc)},
                )
            else:
                self.on_result(message.event, SENT)
                log.info("notification sent", extra={"event": message.event, "endpoint": t.name})


class Outbox:
    """The controller's side: the chosen events' moments, rendered and published.

    :meth:`tell` never blocks (:meth:`Notifier.publish`); :meth:`close` sends what is
    queued within the flush timeout and stops the sending thread.
    """

    def __init__(
        self,
        notifier: Notifier,
        templates: Templates,
        events: Iterable[str],
        flush_timeout: float,
    ) -> None:
        self.notifier = notifier
        self.templates = templates
        self.events = frozenset(events)
        self.flush_timeout = flush_timeout

    def wants(self, event: str) -> bool:
        return event in self.events

    def tell(self, moments: Iterable[Moment]) -> None:
        for m in moments:
            if m.event in self.events:
                self.notifier.publish(self.templates.render(m))

    def start(self) -> None:
        self.notifier.start()

    def close(self) -> int:
        """Deliver what is queued within the flush timeout; the number left undelivered."""
        return self.notifier.close(self.flush_timeout)
