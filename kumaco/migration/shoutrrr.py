"""kured v1's notifications (shoutrrr URLs, message templates) as kumaco's (Apprise URLs).

Contract: pure (no I/O). :data:`NOTIFY_FLAGS` are kured v1's notification flags, each a
string. :func:`convert_notify` takes the values given and returns what ``kumaco run``
gets instead (:class:`NotifyConversion`): an Apprise ``--notify-url`` for each shoutrrr
URL it maps, ``--message-template-admitted`` and ``--message-template-finished`` from
kured's drain and uncordon templates (``%s``, the node, becomes ``{node}``), notes for
what changes meaning and warnings for what cannot be kept. The schemes mapped
(:func:`to_apprise`):

* ``slack://[botname@]A/B/C`` (a webhook's three tokens) and kured's ``--slack-hook-url``
  (``https://hooks.slack.com/services/A/B/C``, with ``--slack-username`` and
  ``--slack-channel``) -> ``slack://[botname@]A/B/C[/#channel]``;
* ``teams://...`` is an Office 365 connector's incoming webhook, which Microsoft retired
  and Apprise no longer sends to: not converted, a warning says what replaces it (a Teams
  Workflows webhook, Apprise's ``workflows://HOST/WORKFLOW/SIGNATURE``);
* ``smtp://user:pass@host:port/?from=F&to=T1,T2&encryption=E`` -> ``mailtos://`` (``E``
  Auto or ExplicitTLS: STARTTLS; ImplicitTLS: ``mode=ssl``) or ``mailto://`` (``None``),
  with ``from``, ``to`` (and ``subject``) kept;
* ``generic://host/path`` (HTTPS; ``disabletls=yes``: HTTP) and ``generic+http(s)://``
  -> ``jsons://``/``json://`` at the same host and path: Apprise posts a JSON object with
  ``title`` and ``message``, not shoutrrr's body (a warning says so).

Any other scheme (Discord, Telegram, Pushover, Gotify, Mattermost, ...) is named in a
warning: Apprise has each of them under its own URL form, to be written by hand. A URL's
credentials are never part of a note or a warning, only of the converted flag.
"""

from __future__ import annotations

import shlex
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

#: kured v1's notification flags (all strings).
NOTIFY_FLAGS = (
    "--notify-url",
    "--slack-hook-url",
    "--slack-username",
    "--slack-channel",
    "--message-template-drain",
    "--message-template-reboot",
    "--message-template-uncordon",
)
#: kured v1's defaults for its templates.
KURED_TEMPLATES = {
    "--message-template-drain": "Draining node %s",
    "--message-template-reboot": "Rebooting node %s",
    "--message-template-uncordon": "Node %s rebooted & uncordoned successfully!",
}


@dataclass(frozen=True)
class NotifyConversion:
    """What kured v1's notification flags become for ``kumaco run``."""

    flags: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def _host(u: urllib.parse.SplitResult) -> str:
    """The host part as written (tokens are case-sensitive: ``hostname`` lowercases)."""
    return u.netloc.rsplit("@", 1)[-1]


def _q(params: Mapping[str, str]) -> str:
    kept = {k: v for k, v in params.items() if v}
    return ("?" + urllib.parse.urlencode(kept, safe="@,:/")) if kept else ""


def _slack(tokens: list[str], bot: str = "", channel: str = "") -> str | None:
    tokens = [t for t in tokens if t]
    if len(tokens) != 3:
        return None
    who = f"{bot}@" if bot else ""
    where = f"/#{channel.lstrip('#')}" if channel else ""
    return f"slack://{who}{'/'.join(tokens)}{where}"


def _smtp(u: urllib.parse.SplitResult, query: Mapping[str, str]) -> str | None:
    if not u.hostname or not query.get("to"):
        return None
    encryption = query.get("encryption", "Auto").lower()
    scheme = "mailto" if encryption == "none" else "mailtos"
    auth = ""
    if u.username:
        auth = urllib.parse.quote(urllib.parse.unquote(u.username), safe="")
        if u.password:
            auth += ":" + urllib.parse.quote(urllib.parse.unquote(u.password), safe="")
        auth += "@"
    port = f":{u.port}" if u.port else ""
    params = {
        "from": query.get("from", ""),
        "to": query["to"],
        "subject": query.get("subject", ""),
        "mode": "ssl" if encryption == "implicittls" else "",
    }
    return f"{scheme}://{auth}{u.hostname}{port}{_q(params)}"


def _generic(u: urllib.parse.SplitResult, query: Mapping[str, str]) -> str | None:
    if not u.hostname:
        return None
    tls = u.scheme != "generic+http" and query.get("disabletls", "no").lower() not in (
        "yes",
        "true",
        "1",
    )
    auth = f"{u.username}:{u.password}@" if u.username and u.password else ""
    port = f":{u.port}" if u.port else ""
    return f"{'jsons' if tls else 'json'}://{auth}{u.hostname}{port}{u.path}"


def to_apprise(url: str) -> tuple[str | None, str]:
    """The Apprise URL for a shoutrrr ``url`` (None if not mapped) and its scheme."""
    u = urllib.parse.urlsplit(url.strip())
    scheme = u.scheme.lower()
    query = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query).items()}
    if scheme == "slack":
        tokens = [_host(u), *[p for p in u.path.split("/") if p]]
        if u.username and not u.password and ":" not in u.netloc.split("@", 1)[0]:
            return _slack(tokens, u.username, query.get("channel", "")), scheme
        return _slack(tokens, "", query.get("channel", "")), scheme
    if scheme == "smtp":
        return _smtp(u, query), scheme
    if scheme in ("generic", "generic+https", "generic+http"):
        return _generic(u, query), scheme
    return None, scheme or "(none)"


def _template(text: str) -> str:
    """A template of kured's (Go's fmt.Sprintf, ``%s`` the node) as a ``{node}`` template."""
    escaped = text.replace("{", "{{").replace("}", "}}")
    return escaped.replace("%s", "{node}", 1).replace("%%", "%")


def convert_notify(values: Mapping[str, str]) -> NotifyConversion:
    """The notification flags of kured v1 given (flag -> value) as ``kumaco run``'s."""
    flags: list[str] = []
    notes: list[str] = []
    warnings: list[str] = []
    url = values.get("--notify-url", "")
    hook = values.get("--slack-hook-url", "")
    if hook and not url:
        parts = [p for p in urllib.parse.urlsplit(hook).path.split("/") if p]
        mapped = _slack(
            parts[-3:] if parts[:1] == ["services"] else [],
            values.get("--slack-username", ""),
            values.get("--slack-channel", ""),
        )
        if mapped is None:
            warnings.append(
                "--slack-hook-url: not a https://hooks.slack.com/services/A/B/C webhook; "
                "give kumaco run --notify-url slack://A/B/C (Apprise's form)"
            )
        else:
            flags.append(f"--notify-url={mapped}")
    elif hook:
        notes.append("--slack-hook-url: kured v1 ignores it when --notify-url is given")
    if url:
        mapped, scheme = to_apprise(url)
        if scheme == "teams":
            warnings.append(
                "--notify-url: shoutrrr's teams:// URL is an Office 365 connector webhook, "
                "which Microsoft retired and Apprise no longer sends to; in Teams, create a "
                "Workflows webhook (post to a channel when a webhook request is received) and "
                "give kumaco run --notify-url workflows://HOST/WORKFLOW/SIGNATURE, its URL's "
                "parts (kumaco notify tries it)"
            )
        elif mapped is None:
            warnings.append(
                f"--notify-url: shoutrrr's {scheme}:// URL is not converted; give kumaco run "
                f"--notify-url the Apprise URL of that service (Apprise's documentation lists "
                "them; kumaco notify tries it)"
            )
        else:
            flags.append(f"--notify-url={mapped}")
            if scheme.startswith("generic"):
                warnings.append(
                    "--notify-url: a generic webhook now receives Apprise's JSON object "
                    '({"title": ..., "message": ..., "type": ...}), not shoutrrr\'s body'
                )
    if flags:
        notes.append(
            "kumaco notifies the moments kured v1 did -- a node admitted (kured v2 then "
            "drains and reboots it) and its maintenance finished (rebooted, from which boot to "
            "which) -- and also a maintenance timed out and an invalid window "
            "(--notify-on); the URL carries a token: put it in a Secret and give "
            "--notify-url-file (the Helm chart's notifications.existingSecret)"
        )
    drain = values.get("--message-template-drain")
    reboot = values.get("--message-template-reboot")
    uncordon = values.get("--message-template-uncordon")
    if drain is not None:
        flags.append(f"--message-template-admitted={shlex.quote(_template(drain))}")
    if reboot is not None:
        notes.append(
            "--message-template-reboot: kumaco tells one moment where kured v1 told two "
            "(draining, rebooting): --message-template-admitted"
            + ("" if drain is not None else f" gets it ({_template(reboot)!r})")
        )
        if drain is None:
            flags.append(f"--message-template-admitted={shlex.quote(_template(reboot))}")
    if uncordon is not None:
        flags.append(f"--message-template-finished={shlex.quote(_template(uncordon))}")
    return NotifyConversion(tuple(flags), tuple(notes), tuple(warnings))
