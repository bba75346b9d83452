"""Proxy choice with client-go's rules (kumaco.kube.proxy).

The expected answers are Go's: the table's rows are the cases where the
``kubernetes`` Python client's own matcher answers otherwise (marked ``k8s
differs``, the reason kumaco decides itself) and their neighbours; the oracle
test at the end compares kumaco with golang.org/x/net/http/httpproxy (what
client-go uses), built by hack/oracle, on generated environments and URLs.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kumaco.kube.proxy import NoProxy, ProxyConfigError, choose_proxy
from tests.support.judges.oracle import Oracle

P = "http://proxy.corp:3128"
NO = "10.96.0.0/12,.svc,*.cluster.local,example.com:6443,api.example.com,192.168.1.5:6443,[fd00::1]:6443,fd00::2"

CASES = [
    # (NO_PROXY, server, Go's answer)
    (NO, "https://10.96.0.1", None),
    (NO, "https://10.112.0.1:6443", P),
    (NO, "https://kubernetes.default.svc", None),
    (NO, "https://svc", P),  # k8s differs: ".svc" is subdomains only
    (NO, "https://example.com:6443", None),
    (NO, "https://api.example.com", None),
    (NO, "https://notexample.com", P),
    (NO, "https://api.cluster.local", None),  # k8s differs: "*." is understood
    (NO, "https://cluster.local", P),
    (NO, "https://192.168.1.5:6443", None),
    (NO, "https://192.168.1.5", P),
    (NO, "https://[fd00::1]:6443", None),
    (NO, "https://[fd00::2]:6443", None),
    (NO, "https://[2001:db8::1]:6443", P),
    (NO, "https://127.0.0.1:6443", None),  # k8s differs: loopback is never proxied
    (NO, "https://localhost:6443", None),  # k8s differs
    (NO, "https://[::1]:6443", None),  # k8s differs
    ("api.example.com:443", "https://api.example.com", None),  # k8s differs: default port
    ("api.example.com:443", "https://api.example.com:443", None),
    ("api.example.com:443", "https://api.example.com:6443", P),
    ("10.0.0.1", "https://10.0.0.1:6443", None),
    ("*", "https://10.0.0.1:6443", None),
    ("", "https://10.0.0.1:6443", P),
    ("10.0.0.0/8", "https://kubernetes.test", P),  # a name never matches a CIDR
    ("127.1", "https://127.1:6443", None),  # not an IP literal in Go: a name, matched by name
]


@pytest.mark.parametrize(("no_proxy", "server", "expected"), CASES)
def test_no_proxy_as_go_reads_it(no_proxy: str, server: str, expected: str | None) -> None:
    choice = choose_proxy(server, None, {"HTTPS_PROXY": P, "NO_PROXY": no_proxy})
    assert choice.proxy == expected


def test_the_environment_as_go_reads_it() -> None:
    server = "https://10.0.0.1:6443"
    # Upper case wins (urllib: lower case wins).
    both = {"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2"}
    assert choose_proxy(server, None, both).proxy == "http://upper:2"
    assert choose_proxy(server, None, {"https_proxy": "http://lower:1"}).proxy == "http://lower:1"
    # A value without a scheme is http://.
    assert choose_proxy(server, None, {"HTTPS_PROXY": "proxy.corp:3128"}).proxy == P
    # No ALL_PROXY; HTTP_PROXY is for http:// servers only.
    assert choose_proxy(server, None, {"ALL_PROXY": "socks5://s:1080"}).proxy is None
    assert choose_proxy(server, None, {"HTTP_PROXY": P}).proxy is None
    assert choose_proxy("http://10.0.0.1:8080", None, {"HTTP_PROXY": P}).proxy == P
    # Lower-case no_proxy counts when NO_PROXY is absent.
    assert choose_proxy(server, None, {"HTTPS_PROXY": P, "no_proxy": "10.0.0.1"}).proxy is None


def test_a_kubeconfig_proxy_url_wins_and_ignores_no_proxy() -> None:
    env = {"HTTPS_PROXY": "http://env:1", "NO_PROXY": "*"}
    choice = choose_proxy("https://127.0.0.1:6443", "socks5://bastion:1080", env)
    assert (choice.proxy, choice.source) == ("socks5://bastion:1080", "kubeconfig")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ftp://proxy:21", "unsupported proxy scheme 'ftp'"),
        ("http://proxy:port", "is not a number"),
        ("http://:3128", "no host"),
    ],
)
def test_a_bad_proxy_url_names_the_setting(value: str, message: str) -> None:
    with pytest.raises(ProxyConfigError, match=message) as failed:
        choose_proxy("https://10.0.0.1", None, {"HTTPS_PROXY": value})
    assert str(failed.value).startswith("HTTPS_PROXY: ")


def test_garbage_in_no_proxy_matches_nothing_and_raises_nothing() -> None:
    np = NoProxy.parse(" , 10.0.0.0/99 ,[::1,:6443, .,*.")
    assert not np.bypass("10.0.0.1", "443")
    assert not np.bypass("example.com", "443")


# ----------------------------------------------------------------------------- against Go

_HOSTS = st.sampled_from(
    [
        "10.96.0.1",
        "10.112.0.1",
        "127.0.0.1",
        "127.1",
        "[::1]",
        "[fd00::1]",
        "[2001:db8::1]",
        "localhost",
        "kubernetes.default.svc",
        "svc",
        "api.cluster.local",
        "cluster.local",
        "example.com",
        "api.example.com",
        "notexample.com",
        "API.Example.COM",
        "192.168.1.5",
    ]
)
_ENTRIES = st.sampled_from(
    [
        "*",
        "10.96.0.0/12",
        "10.0.0.0/8",
        "127.0.0.0/8",
        "fd00::/8",
        ".svc",
        "*.cluster.local",
        "cluster.local",
        "example.com",
        ".example.com",
        "example.com:6443",
        "api.example.com:443",
        "192.168.1.5:6443",
        "[fd00::1]:6443",
        "fd00::1",
        "127.1",
        "EXAMPLE.com",
        " ",
        "",
        "[::1",
        "10.0.0.0/99",
    ]
)


@pytest.mark.oracle
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    host=_HOSTS,
    port=st.sampled_from(["", ":443", ":6443", ":8080"]),
    scheme=st.sampled_from(["https", "http"]),
    entries=st.lists(_ENTRIES, max_size=4),
    upper=st.booleans(),
)
def test_proxy_choice_equals_go(
    robfig_oracle: Oracle, host: str, port: str, scheme: str, entries: list[str], upper: bool
) -> None:
    url = f"{scheme}://{host}{port}"
    name = ("HTTPS_PROXY" if scheme == "https" else "HTTP_PROXY").lower()
    env = {(name.upper() if upper else name): P, "NO_PROXY": ",".join(entries)}
    go = robfig_oracle.proxy(env, url)
    assert "error" not in go, go
    assert choose_proxy(url, None, env).proxy == go["proxy"], (env, url)
