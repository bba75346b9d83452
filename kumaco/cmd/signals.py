"""Signal handling that takes no lock: a signal is relayed to a thread that acts on it.

Contract
--------
A Python signal handler runs in the main thread between two bytecodes -- possibly
while that thread holds a lock, such as the one inside the :class:`threading.Event`
it is waiting on (``Event.wait`` holds it while it enters ``Condition.wait``). A
handler that then calls ``Event.set()``, logs, or takes any other lock that thread
holds waits for itself: the process hangs. (Seen: ``kubectl kumaco status --watch``
froze on SIGWINCH on a loaded machine; the controller's SIGTERM handler had the same
shape.)

:class:`SignalRelay` installs, for each signal it is given, a handler that only
writes the signal's number into a pipe -- one system call, no lock, safe at any
bytecode -- and a daemon thread that reads the pipe and calls that signal's action
in an ordinary thread, where taking locks, logging and setting events are safe.
Actions run one at a time, in the order the signals arrived; a signal that arrives
while the relay's pipe is full (64 KiB of unread signals: the relay thread is
stuck) is dropped rather than blocking the handler. ``inline`` actions, for what
must happen in the main thread itself (raising to abort a blocking set-up), run
inside the handler and must take no lock.

Use it as a context manager from the main thread: entering installs the handlers
and starts the thread, leaving restores the previous handlers, drains what is
still in the pipe and stops the thread.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Mapping
from types import FrameType, TracebackType
from typing import Any

#: What the relay thread calls for a signal (in an ordinary thread: locks are fine).
Action = Callable[[signal.Signals], None]
#: What runs inside the handler itself, in the main thread (must take no lock).
Inline = Callable[[signal.Signals], None]

_STOP = 0  # no signal has number 0: the relay thread's "stop"


class SignalRelay:
    """Handlers that write to a pipe; a thread that runs each signal's action."""

    def __init__(
        self,
        actions: Mapping[signal.Signals, Action],
        *,
        inline: Mapping[signal.Signals, Inline] | None = None,
        name: str = "signals",
    ) -> None:
        self.actions = dict(actions)
        self.inline = dict(inline or {})
        self.name = name
        self._old: dict[signal.Signals, Any] = {}
        self._read = -1
        self._write = -1
        self._thread: threading.Thread | None = None

    def _handler(self, signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):  # full (dropped) or closed: never block, never raise
            os.write(self._write, bytes((signum,)))
        inline = self.inline.get(signal.Signals(signum))
        if inline is not None:
            inline(signal.Signals(signum))

    def _relay(self) -> None:
        while True:
            try:
                data = os.read(self._read, 512)
            except OSError:
                return
            for signum in data:
                if signum == _STOP:
                    return
                action = self.actions.get(signal.Signals(signum))
                if action is not None:
                    action(signal.Signals(signum))
            if not data:
                return

    def __enter__(self) -> SignalRelay:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._thread = threading.Thread(target=self._relay, name=self.name, daemon=True)
        self._thread.start()
        for s in {*self.actions, *self.inline}:
            self._old[s] = signal.signal(s, self._handler)
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        for s, old in self._old.items():
            signal.signal(s, old)
        self._old.clear()
        with contextlib.suppress(OSError):
            os.set_blocking(self._write, True)
            os.write(self._write, bytes((_STOP,)))  # after the signals already in the pipe
        if self._thread is not None:
            self._thread.join(timeout=5)
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)
