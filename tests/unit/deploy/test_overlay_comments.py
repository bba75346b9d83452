"""The overlays' comments never tell to apply them as they are.

The image the base names is not published (docs/deploy.md): an overlay applied as
it is deploys a pod that cannot pull. Each overlay's comment says so and shows the
way that works -- an overlay of one's own taking it, with ``kustomize edit set
image`` mapping the base's image (by the name kustomize sees) to one's own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
KUSTOMIZE = REPO / "kustomize"
OVERLAYS = sorted(p.parent.name for p in (KUSTOMIZE / "overlays").glob("*/kustomization.yaml"))


def published_name() -> str:
    """The image name the base maps ``kumaco`` to: what an overlay of one's own must map."""
    base = yaml.safe_load((KUSTOMIZE / "base" / "kustomization.yaml").read_text())
    (image,) = [i for i in base["images"] if i["name"] == "kumaco"]
    return str(image["newName"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_an_overlay_comment_sets_the_image_before_applying(overlay: str) -> None:
    text = (KUSTOMIZE / "overlays" / overlay / "kustomization.yaml").read_text()
    comment = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    assert not re.search(r"apply\b.*-k\s+\S*kustomize/overlays", comment), (
        f"{overlay}: tells to apply the overlay as it is, with an unpublished image"
    )
    create = comment.index(f"kustomize create --resources ../kumaco/kustomize/overlays/{overlay}")
    set_image = comment.index(f"kustomize edit set image {published_name()}=")
    apply = comment.index("kubectl apply --server-side -k .")
    assert create < set_image < apply
    prose = " ".join(line.lstrip("#").strip() for line in comment.splitlines())
    assert "ghcr.io/kubereboot/kumaco:0.1.0, is not published" in prose


def test_there_are_overlays_to_check() -> None:
    assert {"delegated", "kured", "single-namespace"} <= set(OVERLAYS)
