"""Which proxy a request to the API server goes through, decided as client-go decides.

Contract: :func:`choose_proxy` answers, for an API server URL, the kubeconfig's
``proxy-url`` (if any) and an environment, the proxy to use (or none) and why.
Pure: no I/O; the environment is passed in.

The rules are client-go's (kubectl, controller-runtime), so kumaco behaves like
every other client in the same pod:

* a kubeconfig ``proxy-url`` wins and is used for every request; ``NO_PROXY`` is not
  consulted for it (``http``, ``https`` and ``socks5`` are its allowed schemes);
* otherwise ``HTTPS_PROXY`` (for an ``https`` server; ``HTTP_PROXY`` for ``http``),
  the upper-case name first, a value without a scheme meaning ``http://``; no
  ``ALL_PROXY``;
* ``localhost`` and loopback IP literals are never proxied;
* ``NO_PROXY`` with Go's ``golang.org/x/net/http/httpproxy`` semantics, entries
  compared lower-case: ``*`` (nothing is proxied); a CIDR (``10.96.0.0/12``, matches
  IP-literal hosts in it); an IP with an optional port (``10.0.0.1``,
  ``10.0.0.1:6443``, ``[fd00::1]:6443``); a domain (``example.com``: it and every
  subdomain); ``.svc`` or ``*.svc`` (subdomains only, not ``svc`` itself); each with
  an optional ``:port`` (the URL's port, or its scheme's default). Names are never
  resolved, and a name never matches a CIDR.

The ``kubernetes`` client's own matcher differs in each of these points (it strips
a leading dot, knows no ``*.``, no loopback exemption, no default port, lower-case
names first, ``ALL_PROXY``, and applies ``NO_PROXY`` to ``proxy-url`` too); see
docs/network.md.
"""

from __future__ import annotations

import contextlib
import ipaddress
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT_PORTS = {"http": "80", "https": "443"}
#: The schemes client-go accepts in a kubeconfig's ``proxy-url``.
PROXY_SCHEMES = ("http", "https", "socks5")

_Ip = ipaddress.IPv4Address | ipaddress.IPv6Address
_Net = ipaddress.IPv4Network | ipaddress.IPv6Network


class ProxyConfigError(ValueError):
    """A proxy setting that cannot be used (the message names it and says why)."""


def _first(env: Mapping[str, str], *names: str) -> str:
    for name in names:
        value = env.get(name, "")
        if value:
            return value
    return ""


def parse_proxy(value: str, source: str) -> str:
    """A proxy URL as Go reads it: ``host:port`` means ``http://host:port``."""
    u = urllib.parse.urlsplit(value.strip())
    if not u.scheme or not u.netloc:
        u = urllib.parse.urlsplit("http://" + value.strip())
    if u.scheme not in PROXY_SCHEMES:
        raise ProxyConfigError(
            f"{source}: unsupported proxy scheme {u.scheme!r} in {value!r} "
            f"(use one of {', '.join(s + '://' for s in PROXY_SCHEMES)})"
        )
    if not u.hostname:
        raise ProxyConfigError(f"{source}: no host in proxy URL {value!r}")
    try:
        u.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise ProxyConfigError(
            f"{source}: the port of proxy URL {value!r} is not a number"
        ) from None
    return urllib.parse.urlunsplit(u)


def _split_host_port(entry: str) -> tuple[str, str] | None:
    """Go's ``net.SplitHostPort`` for a NO_PROXY entry (``h:p``, ``[v6]:p``); None: no port."""
    if entry.startswith("["):
        end = entry.find("]")
        if end < 0 or not entry[end + 1 :].startswith(":"):
            return None
        return entry[1:end], entry[end + 2 :]
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, port
    return None


@dataclass(frozen=True)
class NoProxy:
    """A parsed ``NO_PROXY`` value (see the module docstring for its semantics)."""

    everything: bool = False
    networks: tuple[_Net, ...] = ()
    addresses: tuple[tuple[_Ip, str], ...] = ()
    #: (".suffix", port or "", whether the bare name matches too)
    domains: tuple[tuple[str, str, bool], ...] = field(default=())

    @classmethod
    def parse(cls, value: str) -> NoProxy:
        networks: list[_Net] = []
        addresses: list[tuple[_Ip, str]] = []
        domains: list[tuple[str, str, bool]] = []
        for raw in value.split(","):
            entry = raw.strip().lower()
            if not entry:
                continue
            if entry == "*":
                return cls(everything=True)
            if "/" in entry:
                # As Go: an unparsable CIDR matches nothing.
                with contextlib.suppress(ValueError):
                    networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            split = _split_host_port(entry)
            host, port = split if split is not None else (entry, "")
            if not host:
                continue
            try:
                addresses.append((ipaddress.ip_address(host), port))
                continue
            except ValueError:
                pass
            if host.startswith("*."):
                host = host[1:]
            bare = not host.startswith(".")
            domains.append(("." + host if bare else host, port, bare))
        return cls(False, tuple(networks), tuple(addresses), tuple(domains))

    def bypass(self, host: str, port: str) -> bool:
        """True if a request to ``host:port`` must not use the proxy."""
        host = host.strip().lower().strip("[]")
        if host == "localhost":
            return True
        ip: _Ip | None
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            ip = None
        if ip is not None and ip.is_loopback:
            return True
        if self.everything:
            return True
        if ip is not None:
            if any(ip in net for net in self.networks):
                return True
            if any(ip == a and (not p or p == port) for a, p in self.addresses):
                return True
        for suffix, p, bare in self.domains:
            if (host.endswith(suffix) or (bare and host == suffix[1:])) and (not p or p == port):
                return True
        return False


@dataclass(frozen=True)
class ProxyChoice:
    """The proxy for the API server (None: connect directly) and where the decision came from.

    ``source`` is ``kubeconfig`` (proxy-url), ``environment`` (HTTPS_PROXY/HTTP_PROXY),
    ``no_proxy`` (the environment names a proxy, but NO_PROXY or the loopback rule
    exempts the server) or ``none``.
    """

    proxy: str | None
    source: str


def choose_proxy(server: str, kubeconfig_proxy: str | None, env: Mapping[str, str]) -> ProxyChoice:
    """The proxy for requests to ``server``, as client-go chooses it; raises ProxyConfigError."""
    if kubeconfig_proxy:
        return ProxyChoice(parse_proxy(kubeconfig_proxy, "kubeconfig proxy-url"), "kubeconfig")
    u = urllib.parse.urlsplit(server)
    scheme = u.scheme or "https"
    if scheme == "https":
        names = ("HTTPS_PROXY", "https_proxy")
    else:
        names = ("HTTP_PROXY", "http_proxy")
        if env.get("REQUEST_METHOD"):
            return ProxyChoice(None, "none")  # Go ignores HTTP_PROXY under CGI
    value = _first(env, *names)
    if not value:
        return ProxyChoice(None, "none")
    name = next(n for n in names if env.get(n))
    proxy = parse_proxy(value, name)
    port = str(u.port) if u.port else DEFAULT_PORTS.get(scheme, "")
    if NoProxy.parse(_first(env, "NO_PROXY", "no_proxy")).bypass(u.hostname or "", port):
        return ProxyChoice(None, "no_proxy")
    return ProxyChoice(proxy, "environment")
