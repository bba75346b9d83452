"""kumaco.core.time.durations against Go's own ``time.ParseDuration`` (the oracle in hack/oracle).

Every accepted string must give the same nanoseconds and every rejected one
Go's own message (Go prefixes ``time: ``).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kumaco.core.errors import InvalidInput
from kumaco.core.time.durations import parse_go_duration
from tests.support.judges.oracle import Oracle

pytestmark = pytest.mark.oracle

_PIECES = st.sampled_from(
    [
        "0",
        "1",
        "9",
        "12",
        ".",
        "5",
        "00",
        "9223372036854775807",
        "2562047",
        "h",
        "m",
        "s",
        "ms",
        "us",
        "µs",
        "μs",
        "ns",
        "d",
        "H",
        " ",
        "-",
        "+",
        "e",
        "é",
        "\x00",
        "１",
        "1.5",
        ".5",
        "h1",
        "47",
        "16.854775807",
    ]
)


def _compare(oracle: Oracle, text: str) -> None:
    go = oracle.duration(text)
    try:
        ours = parse_go_duration(text)
    except InvalidInput as exc:
        assert "error" in go, f"kumaco rejects {text!r} ({exc.reason}) but Go accepts it as {go}"
        assert go["error"] == f"time: {exc.reason}", (text, go["error"], exc.reason)
        return
    assert "ns" in go, f"kumaco accepts {text!r} as {ours}ns but Go says {go}"
    assert go["ns"] == ours, text


@settings(
    max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_PIECES, min_size=0, max_size=7).map("".join))
def test_grammar_pieces_agree_with_go(robfig_oracle: Oracle, text: str) -> None:
    _compare(robfig_oracle, text)


@settings(
    max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.integers(min_value=0, max_value=10**20),
    st.integers(min_value=0, max_value=10**25),
    st.sampled_from(["h", "m", "s", "ms", "us", "ns"]),
)
def test_fractions_round_like_go(robfig_oracle: Oracle, whole: int, frac: int, unit: str) -> None:
    _compare(robfig_oracle, f"{whole}.{frac}{unit}")


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=12))
def test_arbitrary_text_agrees_with_go(robfig_oracle: Oracle, text: str) -> None:
    _compare(robfig_oracle, text)
