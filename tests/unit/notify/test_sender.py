"""The sender against real receivers on loopback: json://, form:// and mailto:// bodies."""

from __future__ import annotations

import pytest

from kumaco.core.errors import InvalidInput
from kumaco.kube.retry import RetryPolicy
from kumaco.notify.messages import ADMITTED, FINISHED, Message, Moment, Templates
from kumaco.notify.sender import DROPPED, FAILED, SENT, Endpoint, Notifier, endpoints
from tests.support.judges.receivers import HttpReceiver, SmtpReceiver

FAST = RetryPolicy(attempts=3, initial=0.01, maximum=0.02, deadline=5.0)


def _admitted(node: str) -> Message:
    moment = Moment(ADMITTED, node, (("node", node), ("windows", "maint/w"), ("boot", "b1")))
    return Templates(instance="kumaco").render(moment)


def test_json_receiver_gets_title_body_and_type() -> None:
    with HttpReceiver() as rx:
        Endpoint(rx.url("json")).send("the title", "the body")
        (got,) = rx.wait_for(1)
    assert got.path == "/hook"
    assert got.headers["Content-Type"].startswith("application/json")
    payload = got.json()
    assert payload["title"] == "the title"
    assert payload["message"] == "the body"
    assert payload["type"] == "info"


def test_form_receiver_gets_the_rendered_moment() -> None:
    message = _admitted("node-a")
    with HttpReceiver() as rx:
        Endpoint(rx.url("form")).send(message.title, message.body)
        (got,) = rx.wait_for(1)
    form = got.form()
    assert form["title"] == "kumaco (kumaco): admitted node-a"
    assert form["message"] == (
        "Node node-a admitted to maintenance (window maint/w): it may now be drained and rebooted."
    )


def test_mailto_reaches_a_real_smtp_server() -> None:
    with SmtpReceiver() as smtp:
        Endpoint(smtp.url()).send("kumaco: finished node-b", "Node node-b finished.")
        (mail,) = smtp.wait_for(1)
    assert mail["Subject"] == "kumaco: finished node-b"
    assert mail["To"] == "oncall@example.com"
    body = mail.get_body(preferencelist=("plain",))
    assert body is not None
    assert "Node node-b finished." in body.get_content()
    assert smtp.envelopes[0][1] == ["oncall@example.com"]


def test_a_refusing_endpoint_raises_its_reason_without_credentials() -> None:
    with HttpReceiver(status=500) as rx:
        url = rx.url("json").replace("json://", "json://user:s3cret@")
        target = Endpoint(url)
        with pytest.raises(Exception, match="500") as info:
            target.send("t", "b")
    assert "s3cret" not in str(info.value)
    assert "s3cret" not in target.name
    assert "user" in target.name


def test_an_unknown_scheme_is_refused_naming_the_flag_and_not_the_url() -> None:
    with pytest.raises(InvalidInput) as info:
        endpoints(["nosuch://token-abc@host/x"], "--notify-url")
    assert info.value.reason.startswith("--notify-url: a URL of scheme 'nosuch'")
    assert "token-abc" not in info.value.reason


def test_one_url_text_may_list_several_endpoints() -> None:
    found = endpoints(["json://127.0.0.1:1/a, form://127.0.0.1:1/b"])
    assert [e.name.split("://")[0] for e in found] == ["json", "form"]


def test_notifier_delivers_in_order_to_every_endpoint_and_counts() -> None:
    results: list[tuple[str, str]] = []
    with HttpReceiver() as a, HttpReceiver() as b:
        n = Notifier(
            endpoints([a.url("json"), b.url("form")]),
            on_result=lambda e, r: results.append((e, r)),
            policy=FAST,
        )
        n.start()
        for node in ("n1", "n2", "n3"):
            n.publish(_admitted(node))
        assert n.close(timeout=10) == 0
        assert [r.json()["message"].split()[1] for r in a.bodies()] == ["n1", "n2", "n3"]
        assert [r.form()["message"].split()[1] for r in b.bodies()] == ["n1", "n2", "n3"]
    assert results == [(ADMITTED, SENT)] * 6


def test_a_failing_endpoint_is_retried_per_the_policy_then_dropped_and_counted() -> None:
    results: list[tuple[str, str]] = []
    with HttpReceiver(status=503) as bad, HttpReceiver() as good:
        n = Notifier(
            endpoints([bad.url("json"), good.url("json")]),
            on_result=lambda e, r: results.append((e, r)),
            policy=FAST,
        )
        n.start()
        n.publish(_admitted("n1"))
        assert n.close(timeout=10) == 0
        assert len(bad.bodies()) == FAST.attempts
        assert len(good.bodies()) == 1
    assert results == [(ADMITTED, FAILED), (ADMITTED, SENT)]


def test_publish_never_blocks_and_a_full_queue_drops() -> None:
    results: list[tuple[str, str]] = []
    with HttpReceiver(silent=True) as hung:
        n = Notifier(
            endpoints([hung.url("json", query="rto=5&cto=5")]),
            on_result=lambda e, r: results.append((e, r)),
            policy=FAST,
            capacity=2,
        )
        n.start()
        n.publish(_admitted("n1"))
        hung.wait_for(1)  # n1 is being sent, to an endpoint that never answers
        for node in ("n2", "n3", "n4"):
            n.publish(_admitted(node))
        # n1 is being sent (hung), n2 and n3 wait: n4 found the queue full
        assert results == [(ADMITTED, DROPPED)]
        left = n.close(timeout=0.2)
    assert left == 3
    assert results.count((ADMITTED, DROPPED)) == 3  # n4, then n2 and n3 at close


def test_close_waits_for_what_is_queued() -> None:
    results: list[tuple[str, str]] = []
    with HttpReceiver(delay=0.2) as slow:
        n = Notifier(
            endpoints([slow.url("json")]),
            on_result=lambda e, r: results.append((e, r)),
            policy=FAST,
        )
        n.start()
        n.publish(_admitted("n1"))
        n.publish(Message(FINISHED, "t", "b"))
        assert n.close(timeout=10) == 0
    assert results == [(ADMITTED, SENT), (FINISHED, SENT)]
