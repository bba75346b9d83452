"""kumaco installed on the real cluster as docs/deploy.md tells a deployer.

Contract. :func:`install_kumaco` builds (or reuses) hack/image.sh's image, imports it into
every real node (no registry), writes a deployer's own overlay in ``workdir`` -- the
``resources`` it is given (default the delegated overlay), the ``components`` (default
``components/ha``), the image named through ``images:``, and any ``extra`` kustomization
text (patches) -- applies it with ``kubectl apply --server-side -k`` and waits for the
rollout of ``deployment/kumaco`` in ``namespace``. It returns the image reference.
:func:`kumaco_pods` lists the Deployment's pods. (The Lease's writes and the judge of
"one holder at a time" are :func:`tests.support.judges.audit.lease_writes` and
:func:`~tests.support.judges.audit.two_holders_at_once`.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.support.env.cluster import Cluster
from tests.support.env.image import REPO, build_image

NAMESPACE = "kumaco-system"
SELECTOR = "app.kubernetes.io%2Fname%3Dkumaco"


def install_kumaco(
    cluster: Cluster,
    workdir: Path,
    *,
    resources: Sequence[str] = ("overlays/delegated",),
    components: Sequence[str] = ("components/ha",),
    extra: str = "",
    namespace: str = NAMESPACE,
    timeout: float = 240,
) -> str:
    """hack/image.sh's image imported, the deployer's overlay applied and rolled out."""
    ref, _, _ = build_image()
    cluster.import_podman_image(ref)
    name, tag = ref.rsplit(":", 1)
    overlay = workdir / "my-kumaco"
    overlay.mkdir(parents=True, exist_ok=True)
    rel = os.path.relpath(REPO / "kustomize", overlay)
    text = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
    text += "".join(f"  - {rel}/{r}\n" for r in resources)
    if components:
        text += "components:\n" + "".join(f"  - {rel}/{c}\n" for c in components)
    text += (
        f'images:\n  - name: ghcr.io/kubereboot/kumaco\n    newName: {name}\n    newTag: "{tag}"\n'
    )
    (overlay / "kustomization.yaml").write_text(text + extra)
    cluster.kubectl("apply", "--server-side", "-k", str(overlay))
    cluster.kubectl(
        "-n",
        namespace,
        "rollout",
        "status",
        "deployment/kumaco",
        f"--timeout={int(timeout)}s",
        timeout=timeout + 20,
    )
    return ref


def kumaco_pods(cluster: Cluster, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The Deployment's pods, as the API server has them."""
    assert cluster.cp is not None
    status, body = cluster.cp.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector={SELECTOR}")
    assert status == 200, body[:300]
    pods: list[dict[str, Any]] = json.loads(body)["items"]
    return pods
