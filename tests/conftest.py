"""Session-wide test settings: hypothesis profiles and the published figures.

Hypothesis profiles (``HYPOTHESIS_PROFILE``, or pytest's ``--hypothesis-profile``):

* ``ci`` -- what CI runs (``.ci/run`` sets it): derandomized (each test draws the
  same examples on every run, so a CI run is reproducible and a red build is red
  again when rerun) and without the example database (nothing carried over between
  runs). Each test runs the number of examples its ``@settings`` asks. No deadline:
  an example's wall time on a loaded CI machine is not a property of the code (a
  200 ms deadline missed at 370 ms once, 0.14 ms on retry); speed is the benchmarks'.
* ``dev`` -- the default for local runs: fresh random examples each run, the example
  database on (a failure found once is replayed first next time), and
  :data:`DEV_FACTOR` times the examples each test asks; no deadline either (the README's
  test command runs this profile, on machines as loaded as CI's). Random seeds find real bugs
  (tests/unit/core/windows/test_windows.py::test_the_state_of_a_run_does_not_depend_on_the_instant_asked_before
  was one); CI's fixed examples only keep them fixed.

In ``dev`` the session draws one seed (or takes ``--hypothesis-seed``), prints it in
the header and again after a failing test: ``--hypothesis-seed=N`` replays the run.

Figures: the session fixture ``figures`` (:class:`tests.support.judges.figures.Figures`) collects
what the tests measure; with ``KUMACO_FIGURES`` set the session writes them there.
Under pytest-xdist the workers write parts of it and of the e2e proof
(``KUMACO_E2E_PROOF``), which the controller merges when the session ends.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.support.env.workers import clear, merge_figures, merge_proofs, per_worker
from tests.support.judges.figures import ENV as FIGURES_ENV
from tests.support.judges.figures import Figures

PROOF_ENV = "KUMACO_E2E_PROOF"

DEV_FACTOR = 3
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None)
settings.register_profile("dev", print_blob=True, deadline=None)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")
settings.load_profile(PROFILE)

_SESSION: dict[str, int] = {}  # the seed drawn in dev


def pytest_configure(config: pytest.Config) -> None:
    """In ``dev``, fix one seed for the session so that a failure can be replayed."""
    from hypothesis import core

    if settings.default.derandomize:
        return
    given = config.getoption("hypothesis_seed", None)
    seed = int(given) if given is not None else random.SystemRandom().randrange(2**32)
    core.global_force_seed = seed  # what --hypothesis-seed does
    _SESSION["seed"] = seed


def pytest_report_header(config: pytest.Config) -> str:
    name = settings.get_current_profile_name()
    if settings.default.derandomize:
        return f"hypothesis: profile {name!r}, derandomized, example database off"
    seed = _SESSION.get("seed")
    return (
        f"hypothesis: profile {name!r}, seed {seed} (replay: --hypothesis-seed={seed}), "
        f"examples x{DEV_FACTOR}"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """In ``dev``, run :data:`DEV_FACTOR` times the examples each hypothesis test asks."""
    if settings.get_current_profile_name() != "dev":
        return
    done: set[int] = set()  # a parametrized test's items share one function
    for item in items:
        fn: Any = getattr(item, "obj", None)
        inner = getattr(getattr(fn, "hypothesis", None), "inner_test", None)
        if inner is None or id(fn) in done:
            continue
        done.add(id(fn))
        current = getattr(fn, "_hypothesis_internal_use_settings", None)
        if current is None:
            continue
        fn._hypothesis_internal_use_settings = settings(
            current, max_examples=current.max_examples * DEV_FACTOR
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    seed = _SESSION.get("seed")
    if report.failed and seed is not None and item.get_closest_marker("hypothesis"):
        report.sections.append(("hypothesis seed", f"this run's seed: --hypothesis-seed={seed}"))


@pytest.fixture(scope="session")
def figures() -> Iterator[Figures]:
    """What the tests measure, written to ``$KUMACO_FIGURES`` at the end of the session.

    Under pytest-xdist each worker writes its part and the controller merges them
    (tests/support/env/workers.py).
    """
    recorded = Figures()
    yield recorded
    target = os.environ.get(FIGURES_ENV)
    if target and recorded.sections:
        recorded.write(
            per_worker(Path(target)), os.environ.get("KUMACO_FIGURES_COMMAND", "hack/test.sh")
        )


def _results() -> list[tuple[Path, Callable[[Path], bool]]]:
    """The session's result files (named by the environment) and how to merge their parts."""
    out: list[tuple[Path, Callable[[Path], bool]]] = []
    for env, merge in ((FIGURES_ENV, merge_figures), (PROOF_ENV, merge_proofs)):
        if target := os.environ.get(env):
            out.append((Path(target), merge))
    return out


def pytest_sessionstart(session: pytest.Session) -> None:
    """The controller (or a serial session) starts with no result file of an earlier run."""
    if not hasattr(session.config, "workerinput"):
        for path, _merge in _results():
            clear(path)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The xdist controller merges what its workers wrote."""
    if not hasattr(session.config, "workerinput"):
        for path, merge in _results():
            merge(path)
