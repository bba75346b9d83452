"""helm, for the tests of the Helm chart (charts/kumaco): found or built like kwok.

Contract: :func:`ensure_helm` returns the path of a ``helm`` binary, looked up as the
control plane's assets are (:func:`~tests.support.env.controlplane.find_tool`):
``TEST_ASSET_HELM``, ``$KUBEBUILDER_ASSETS/helm``, then kumaco's assets cache
(``$KUMACO_CACHE_DIR/assets/helm-HELM_VERSION/helm``); otherwise it is built there with
``go install helm.sh/helm/v3/cmd/helm@HELM_VERSION`` from the Go module proxy (this
machine's toolchain, ``GOTOOLCHAIN=local``). ``hack/controlplane.py assets`` calls it,
so CI builds it before the tests. A failed build raises RuntimeError.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.env.controlplane import cache_dir, ensure_tool, go_install_tool

#: Helm 3's newest release the Go module proxy serves here (v3.22.0 is served but not
#: approved for this project); the chart is apiVersion v2, which Helm 3 and 4 both read.
HELM_VERSION = "v3.21.4"
HELM_PACKAGE = "helm.sh/helm/v3/cmd/helm"
#: What helm's Makefile sets with -X: its version, and the Kubernetes version it assumes
#: without a cluster (``helm template``, ``helm lint``): that of the client-go it is built
#: with (v0.36.2 for v3.21.4: Kubernetes 1.36), else helm's source default, 1.20.
HELM_LDFLAGS = (
    f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION}",
    *(
        f"-X helm.sh/helm/v3/pkg/{pkg}.k8sVersion{part}={value}"
        for pkg in ("lint/rules", "chartutil")
        for part, value in (("Major", "1"), ("Minor", "36"))
    ),
)


def _helm_cache() -> Path:
    return cache_dir() / "assets" / f"helm-{HELM_VERSION}" / "helm"


def build_helm() -> Path:
    """``go install helm.sh/helm/v3/cmd/helm@HELM_VERSION`` into the cache."""
    return go_install_tool("helm", HELM_PACKAGE, HELM_VERSION, _helm_cache(), HELM_LDFLAGS)


def ensure_helm() -> Path:
    """The helm binary, built from the Go module proxy if it is nowhere to be found."""
    return ensure_tool("helm", _helm_cache(), build_helm)
