"""Settings of kumaco run (kumaco.cmd.settings): flags, KUMACO_* env vars, validation, identity."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import yaml

from kumaco.cmd.settings import (
    UsageError,
    add_run_flags,
    apply_env_defaults,
    make_identity,
    own_namespace,
    parse_bind_address,
    settings_from_args,
)


def settings(argv: list[str], env: dict[str, str] | None = None, tmp: Path | None = None):  # type: ignore[no-untyped-def]
    env = {"POD_NAMESPACE": "kumaco-system", "POD_NAME": "kumaco-abc", **(env or {})}
    p = argparse.ArgumentParser()
    add_run_flags(p)
    apply_env_defaults(p, env)
    return settings_from_args(p.parse_args(argv), env, sa_file=(tmp or Path("/nonexistent")) / "ns")


def test_defaults_follow_controller_runtime() -> None:
    s = settings([])
    assert (s.lease_duration, s.renew_deadline, s.retry_period) == (15.0, 10.0, 2.0)
    assert s.leader_elect is True
    assert s.leader_election_id == "kumaco"
    assert s.namespaces == ("kumaco-system",)
    assert s.leader_election_namespace == "kumaco-system"
    assert s.configmap_selector == "kured.dev/maintenance-window"
    assert s.max_in_progress is None
    assert (s.metrics_bind_address, s.health_probe_bind_address) == (":8080", ":8081")
    assert s.identity.startswith("kumaco-abc_")
    assert s.user_agent.startswith("kumaco/") and s.identity in s.user_agent


def test_every_flag_can_come_from_the_environment_and_the_command_line_wins() -> None:
    env = {
        "KUMACO_NAMESPACES": "a,b",
        "KUMACO_MAX_IN_PROGRESS": "10%",
        "KUMACO_REQUIRE_CONDITION": "kured.dev/RebootRequired, x/Y",
        "KUMACO_LEADER_ELECT": "false",
        "KUMACO_LEADER_ELECT_RETRY_PERIOD": "500ms",
        "KUMACO_LOG_FORMAT": "text",
    }
    s = settings(["--namespaces", "c"], env)
    assert s.namespaces == ("c",)
    assert str(s.max_in_progress) == "10%"
    assert s.require_conditions == ("kured.dev/RebootRequired", "x/Y")
    assert s.leader_elect is False
    assert s.retry_period == 0.5
    assert s.log_format == "text"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--node-selector", "a in (b"], "--node-selector"),
        (["--configmap-selector", "=x"], "--configmap-selector"),
        (["--max-in-progress", "-1"], "--max-in-progress"),
        (["--leader-elect-lease-duration", "1d"], "--leader-elect-lease-duration"),
        (
            ["--leader-elect-renew-deadline", "20s"],
            "retry-period < renew-deadline < lease-duration",
        ),
        (["--write-concurrency", "0"], "--write-concurrency"),
    ],
)
def test_bad_values_name_the_flag(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        settings(argv)


def test_a_bad_environment_value_names_the_variable() -> None:
    p = argparse.ArgumentParser()
    add_run_flags(p)
    with pytest.raises(UsageError, match="KUMACO_LEADER_ELECT"):
        apply_env_defaults(p, {"KUMACO_LEADER_ELECT": "maybe"})


def test_own_namespace_falls_back_to_the_service_account_file(tmp_path: Path) -> None:
    f = tmp_path / "namespace"
    f.write_text("from-file\n")
    assert own_namespace({}, f) == "from-file"
    assert own_namespace({"POD_NAMESPACE": "env"}, f) == "env"
    assert own_namespace({}, tmp_path / "missing") is None
    with pytest.raises(UsageError, match="--namespaces"):
        settings([], {"POD_NAMESPACE": ""}, tmp_path)


def test_identities_are_unique_per_process() -> None:
    assert make_identity({"POD_NAME": "p"}) != make_identity({"POD_NAME": "p"})


@pytest.mark.parametrize(
    ("text", "address"),
    [
        (":8080", ("0.0.0.0", 8080)),
        ("127.0.0.1:9", ("127.0.0.1", 9)),
        ("[::1]:80", ("::1", 80)),
        ("0", None),
        ("", None),
    ],
)
def test_bind_addresses(text: str, address: tuple[str, int] | None) -> None:
    assert parse_bind_address(text) == address


def test_a_bad_bind_address() -> None:
    with pytest.raises(UsageError):
        parse_bind_address(":http")


# ----------------------------------------------------------------------------- credentials


def _kubeconfig(path: Path, server: str, proxy_url: str | None = None) -> Path:
    cluster: dict[str, str] = {"server": server, "insecure-skip-tls-verify": "true"}
    if proxy_url:
        cluster["proxy-url"] = proxy_url
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


def test_credentials_come_from_kubeconfig_then_KUBECONFIG_then_in_cluster_then_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kumaco.kube.config import load_configuration

    flag = _kubeconfig(tmp_path / "flag", "https://flag.test:6443")
    listed = _kubeconfig(tmp_path / "listed", "https://listed.test:6443")
    (tmp_path / ".kube").mkdir()
    _kubeconfig(tmp_path / ".kube" / "config", "https://home.test:6443")
    # In a pod (the in-cluster variables are set) with $KUBECONFIG: $KUBECONFIG wins,
    # as kubectl and controller-runtime decide; --kubeconfig wins over both.
    pod = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    env = {**pod, "KUBECONFIG": f"{tmp_path / 'missing'}:{listed}", "HOME": str(tmp_path)}
    assert load_configuration(str(flag), env=env).host == "https://flag.test:6443"
    assert load_configuration(None, env=env).host == "https://listed.test:6443"
    # Not in a pod, no $KUBECONFIG: ~/.kube/config.
    for name in pod:
        monkeypatch.delenv(name, raising=False)
    assert load_configuration(None, env={"HOME": str(tmp_path)}).host == "https://home.test:6443"


def test_the_client_library_never_picks_a_proxy_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kumaco.kube.config import load_configuration

    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    monkeypatch.setenv("https_proxy", "http://env-proxy:3128")
    plain = _kubeconfig(tmp_path / "plain", "https://api.test:6443")
    assert not load_configuration(str(plain), env={}).proxy  # kumaco.kube.proxy decides
    with_url = _kubeconfig(tmp_path / "url", "https://api.test:6443", "socks5://bastion:1080")
    assert load_configuration(str(with_url), env={}).proxy == "socks5://bastion:1080"


def test_watch_silence_timeout_defaults_to_two_bookmark_periods_and_a_margin() -> None:
    assert settings([]).watch_silence_timeout == 130.0
    assert settings([]).controller_options().watch_silence == 130.0
    assert settings([], {"KUMACO_WATCH_SILENCE_TIMEOUT": "6s"}).watch_silence_timeout == 6.0
    with pytest.raises(UsageError, match="--watch-silence-timeout"):
        settings(["--watch-silence-timeout", "0s"])


def test_notify_waiting_after_defaults_to_the_alerts_eight_days_and_reaches_the_controller() -> (
    None
):
    assert settings([]).controller_options().notify_waiting_after == 8 * 86400.0
    given = settings(["--notify-waiting-after", "36h30m"])
    assert given.controller_options().notify_waiting_after == 36 * 3600.0 + 1800.0
    from_env = settings([], {"KUMACO_NOTIFY_WAITING_AFTER": "2h"})
    assert from_env.controller_options().notify_waiting_after == 7200.0


def test_notify_waiting_after_default_is_the_alert_rules_threshold() -> None:

    rule = Path(__file__).parents[3] / "kustomize/components/monitoring/prometheusrule.yaml"
    doc = yaml.safe_load(rule.read_text())
    (expr,) = [
        r["expr"]
        for g in doc["spec"]["groups"]
        for r in g["rules"]
        if r.get("alert") == "KumacoNodeWaitingTooLong"
    ]
    days, day = expr.rsplit(">", 1)[1].split("*")
    assert int(days) * int(day) == settings([]).controller_options().notify_waiting_after
