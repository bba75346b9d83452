"""``kumaco convert`` of kured v1's notifications: shoutrrr URLs become Apprise URLs kumaco accepts."""

from __future__ import annotations

import json

import pytest

from kumaco.notify.sender import Endpoint
from tests.support.builders.cli import kumaco


def converted(*args: str) -> dict:
    done = kumaco("convert", *args, "-o", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    doc["stderr"] = done.stderr
    return doc


def notify_flags(doc: dict) -> list[str]:
    return [f for f in doc["kumaco"] if f.startswith(("--notify", "--message-template"))]


@pytest.mark.parametrize(
    ("shoutrrr", "apprise"),
    [
        ("slack://TokA/TokB/TokC", "slack://TokA/TokB/TokC"),
        ("slack://kured@TokA/TokB/TokC?channel=ops", "slack://kured@TokA/TokB/TokC/#ops"),
        (
            "smtp://me:p%40ss@mail.example.com:587/?from=kured@example.com&to=a@example.com,b@example.com",
            "mailtos://me:p%40ss@mail.example.com:587?from=kured@example.com&to=a@example.com,b@example.com",
        ),
        (
            "smtp://u:p@mail.example.com:465/?from=k@example.com&to=a@example.com&encryption=ImplicitTLS",
            "mailtos://u:p@mail.example.com:465?from=k@example.com&to=a@example.com&mode=ssl",
        ),
        (
            "smtp://mail.example.com:25/?from=k@example.com&to=a@example.com&encryption=None",
            "mailto://mail.example.com:25?from=k@example.com&to=a@example.com",
        ),
        ("generic://hooks.example.com/kured", "jsons://hooks.example.com/kured"),
        ("generic://hooks.example.com/kured?disabletls=yes", "json://hooks.example.com/kured"),
        ("generic+http://hooks.example.com:8080/kured", "json://hooks.example.com:8080/kured"),
    ],
)
def test_each_mapped_shoutrrr_scheme_becomes_an_apprise_url_kumaco_accepts(
    shoutrrr: str, apprise: str
) -> None:
    doc = converted("--notify-url", shoutrrr)
    assert notify_flags(doc) == [f"--notify-url={apprise}"]
    Endpoint(apprise)  # Apprise accepts it, as kumaco run will
    assert any("--notify-url-file" in note for note in doc["notes"])
    generic = shoutrrr.startswith("generic")
    assert any("Apprise's JSON object" in w for w in doc["warnings"]) == generic


def test_kureds_slack_hook_url_with_username_and_channel() -> None:
    doc = converted(
        "--slack-hook-url",
        "https://hooks.slack.com/services/T000/B000/XXXX",
        "--slack-username",
        "kured",
        "--slack-channel",
        "#ops",
    )
    assert notify_flags(doc) == ["--notify-url=slack://kured@T000/B000/XXXX/#ops"]


def test_a_teams_connector_url_says_what_replaces_it_without_its_token() -> None:
    doc = converted("--notify-url", "teams://grp@tnt/s3cr3t/Own2?host=contoso.webhook.office.com")
    assert notify_flags(doc) == []
    (warning,) = [w for w in doc["warnings"] if "--notify-url" in w]
    assert "Microsoft retired" in warning
    assert "workflows://HOST/WORKFLOW/SIGNATURE" in warning
    assert "s3cr3t" not in json.dumps(doc)
    Endpoint("workflows://prod-01.westus.logic.azure.com:443/abc123/s1gnature")


def test_an_unmapped_scheme_is_named_in_a_warning_without_its_token() -> None:
    doc = converted("--notify-url", "discord://s3cr3t@12345")
    assert notify_flags(doc) == []
    (warning,) = [w for w in doc["warnings"] if "--notify-url" in w]
    assert "shoutrrr's discord:// URL is not converted" in warning
    assert "s3cr3t" not in json.dumps(doc)
    assert f"warning: {warning}" in doc["stderr"]


def test_kureds_templates_become_kumacos_with_the_node_field() -> None:
    doc = converted(
        "--notify-url",
        "slack://A/B/C",
        "--message-template-drain",
        "Draining %s {now}",
        "--message-template-reboot",
        "Rebooting %s",
        "--message-template-uncordon",
        "Node %s is back",
    )
    assert notify_flags(doc)[1:] == [
        "--message-template-admitted='Draining {node} {{now}}'",
        "--message-template-finished='Node {node} is back'",
    ]
    assert any(
        n.startswith("--message-template-reboot: kumaco tells one moment") for n in doc["notes"]
    )
    done = kumaco(
        "run",
        "--namespaces",
        "x",
        "--kubeconfig",
        "/nonexistent",
        "--message-template-admitted",
        "Draining {node} {{now}}",
        "--leader-elect=false",
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
    )
    assert "--message-template-admitted" not in done.stderr  # the template is accepted
