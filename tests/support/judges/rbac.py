"""kumaco's ServiceAccount was never refused: judged from the API server's audit log.

:func:`assert_no_forbidden` asserts that the audit log shows kumaco's ServiceAccount
(``NS/kumaco``) doing its whole job since an instant (:data:`FIRST_RUN`: node status,
its watches, Events; a Lease written) and not one 403, and that kumaco's own log names no
forbidden request either.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tests.support.env.admin import Cluster
from tests.support.judges.audit import forbidden, requests_of

FIRST_RUN = (("patch", "nodes/status"), ("watch", "nodes"), ("create", "events"))


def assert_no_forbidden(
    cluster: Cluster,
    ns: str,
    since: float,
    log: str,
    did_at_least: Sequence[tuple[str, str]] = FIRST_RUN,
) -> None:
    """The API server never refused kumaco's ServiceAccount (``ns/kumaco``) since ``since``.

    Judged from the API server's audit log, which records every request of a
    ServiceAccount with its response code (tests/support/judges/audit.py), not from kumaco's
    own account: the log must show kumaco doing its whole job (node status, Lease,
    Events, its watches) and not one 403. kumaco's own log, which names every API
    error as '<status> <reason>: <message>', is a second opinion.
    """
    user = f"system:serviceaccount:{ns}:kumaco"
    seen = requests_of(cluster.cp.audit_log, user, since)
    did = {(e.verb, e.resource + ("/" + e.subresource if e.subresource else "")) for e in seen}
    for needed in did_at_least:
        assert needed in did, f"the audit log shows no {needed} by {user}: {sorted(did)}"
    assert any(r == "leases" and v in ("create", "update") for v, r in did), sorted(did)
    denied = forbidden(cluster.cp.audit_log, user, since)
    assert denied == [], f"the API server refused {user}: {denied}"
    bad = [
        line
        for line in log.splitlines()
        if re.search(r"\b403 Forbidden\b", line) or "forbidden" in line.lower()
    ]
    assert not bad, "kumaco was denied something:\n" + "\n".join(bad)
