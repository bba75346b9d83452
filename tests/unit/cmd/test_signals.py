"""kumaco.cmd.signals: a signal's action runs in the relay's thread, never waiting on the main one.

The first two tests run in a child interpreter (a hang there is a failed test, not a
hung suite): the hazard the relay exists for, then the relay in the same spot.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from kumaco.cmd.signals import SignalRelay

# The main thread holds the lock inside the Event it would wait on (as Event.wait does
# while it enters Condition.wait) when the signal arrives.
_HOLDING = """
import os, signal, threading, time
ev = threading.Event()
{install}
with ev._cond:
    os.kill(os.getpid(), signal.SIGUSR1)
    for _ in range(1000):  # bytecodes: the handler runs here, with the lock held
        pass
    time.sleep(0.05)
print("set" if ev.wait(5) else "not set", flush=True)
"""


def _child(install: str) -> subprocess.CompletedProcess[str]:
    code = _HOLDING.format(install=textwrap.dedent(install).strip())
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=20, check=False
    )


def test_a_handler_that_sets_the_event_its_own_thread_holds_hangs_the_process() -> None:
    """The hazard: what the status watch's and the controller's handlers used to do."""
    code = _HOLDING.format(install="signal.signal(signal.SIGUSR1, lambda *_: ev.set())")
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=3, check=False)


def test_the_relay_acts_on_a_signal_that_arrives_while_the_main_thread_holds_the_lock() -> None:
    done = _child(
        """
        from kumaco.cmd.signals import SignalRelay
        relay = SignalRelay({signal.SIGUSR1: lambda _s: ev.set()})
        relay.__enter__()
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "set\n"


def test_actions_run_in_the_relay_thread_in_arrival_order_and_inline_ones_in_the_handler() -> None:
    seen: list[tuple[str, str, str]] = []
    both = threading.Event()

    def action(s: signal.Signals) -> None:
        seen.append(("action", threading.current_thread().name, s.name))
        if len([x for x in seen if x[0] == "action"]) == 2:
            both.set()

    def inline(s: signal.Signals) -> None:
        seen.append(("inline", threading.current_thread().name, s.name))

    actions = {signal.SIGUSR1: action, signal.SIGUSR2: action}
    with SignalRelay(actions, inline={signal.SIGUSR2: inline}, name="test-relay"):
        os.kill(os.getpid(), signal.SIGUSR1)
        os.kill(os.getpid(), signal.SIGUSR2)
        assert both.wait(5), seen
    assert [x for x in seen if x[0] == "action"] == [
        ("action", "test-relay", "SIGUSR1"),
        ("action", "test-relay", "SIGUSR2"),
    ]
    assert ("inline", "MainThread", "SIGUSR2") in seen


def test_leaving_restores_the_handlers_and_closes_the_pipe() -> None:
    before = signal.getsignal(signal.SIGUSR1)
    fds_before = set(os.listdir("/proc/self/fd"))
    relay = SignalRelay({signal.SIGUSR1: lambda _s: None})
    with relay:
        assert signal.getsignal(signal.SIGUSR1) == relay._handler
    assert signal.getsignal(signal.SIGUSR1) == before
    assert relay._thread is not None and not relay._thread.is_alive()
    assert set(os.listdir("/proc/self/fd")) <= fds_before
