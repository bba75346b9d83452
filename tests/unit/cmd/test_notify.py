"""``kumaco notify``: a test message through the console script, to real loopback receivers."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.builders.cli import kumaco
from tests.support.judges.receivers import HttpReceiver, SmtpReceiver


def test_notify_sends_the_message_to_every_endpoint_and_exits_0(tmp_path: Path) -> None:
    with HttpReceiver() as rx, SmtpReceiver() as smtp:
        done = kumaco(
            "notify",
            "--notify-url",
            rx.url("json"),
            "--notify-url",
            smtp.url(),
            "--message",
            "hello from the deployer",
        )
        assert done.returncode == 0, done.stderr
        (got,) = rx.wait_for(1)
        (mail,) = smtp.wait_for(1)
    assert got.json()["message"] == "hello from the deployer"
    assert mail["Subject"] == "kumaco: test notification"
    assert done.stdout.splitlines()[0].startswith("sent to json://127.0.0.1:")
    assert len(done.stdout.splitlines()) == 2


def test_notify_exits_1_with_the_endpoints_error_and_no_secret() -> None:
    with HttpReceiver(status=403) as rx:
        url = rx.url("json").replace("json://", "json://bot:tok3n@")
        done = kumaco("notify", "--notify-url", url)
    assert done.returncode == 1
    assert "tok3n" not in done.stderr + done.stdout
    assert done.stderr.startswith("kumaco notify: json://bot:****@127.0.0.1:")
    assert "not delivered" in done.stderr
    assert "403" in done.stderr


def test_notify_reads_urls_from_a_file_and_from_the_environment(tmp_path: Path) -> None:
    with HttpReceiver() as a, HttpReceiver() as b:
        secret = tmp_path / "urls"
        secret.write_text(f"# the team's webhook\n{a.url('form')}\n")
        env = {**os.environ, "KUMACO_NOTIFY_URL": b.url("json")}
        done = kumaco("notify", "--notify-url-file", str(secret), env=env)
        assert done.returncode == 0, done.stderr
        assert len(a.wait_for(1)) == 1
        assert len(b.wait_for(1)) == 1


def test_notify_usage_errors_name_the_flag() -> None:
    done = kumaco("notify")
    assert done.returncode == 2
    assert "no endpoint: give --notify-url URL or --notify-url-file PATH" in done.stderr
    done = kumaco("notify", "--notify-url", "nosuch://abc")
    assert done.returncode == 2
    assert "--notify-url: a URL of scheme 'nosuch'" in done.stderr
    done = kumaco("notify", "--notify-url-file", "/nonexistent/urls")
    assert done.returncode == 2
    assert "--notify-url-file: cannot read /nonexistent/urls" in done.stderr
    assert "Traceback" not in done.stderr


def test_run_refuses_a_template_with_an_unknown_field_naming_the_fields() -> None:
    done = kumaco(
        "run", "--namespaces", "maint", "--message-template-finished", "{node} took {tmie}"
    )
    assert done.returncode == 2
    assert "--message-template-finished: unknown field {tmie}" in done.stderr
    assert "{duration}" in done.stderr
    done = kumaco("run", "--namespaces", "maint", "--notify-on", "admitted,rebooted")
    assert done.returncode == 2
    assert "--notify-on: unknown event 'rebooted'" in done.stderr


def test_run_refuses_a_bad_notify_waiting_after_naming_the_flag() -> None:
    done = kumaco("run", "--namespaces", "maint", "--notify-waiting-after", "8days")
    assert done.returncode == 2
    assert "--notify-waiting-after: " in done.stderr
    assert "(e.g. 90s, 10m, 1h30m)" in done.stderr
    done = kumaco("run", "--namespaces", "maint", "--notify-waiting-after", "0s")
    assert done.returncode == 2
    assert "--notify-waiting-after: must be greater than 0" in done.stderr
    env = {**os.environ, "KUMACO_NOTIFY_WAITING_AFTER": "-1h"}
    done = kumaco("run", "--namespaces", "maint", env=env)
    assert done.returncode == 2
    assert "--notify-waiting-after: must not be negative" in done.stderr
    assert "Traceback" not in done.stderr
    done = kumaco(
        "run", "--namespaces", "maint", "--message-template-waiting-too-long", "{node} {waitd}"
    )
    assert done.returncode == 2
    assert "--message-template-waiting-too-long: unknown field {waitd}" in done.stderr
    assert "{waited}, {since}, {reason}" in done.stderr
