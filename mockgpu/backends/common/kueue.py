"""Kueue on kind (``spec.kueue: {enabled: true}``): the image that carries the same build the upstream backend runs,
and the release manifests pointed at it.

``scripts/kind-images kueue`` packs what ``scripts/upstream-build kueue`` made, offline (``FROM scratch``, as
Kueue's own image is a static binary on distroless ``static:nonroot``): the manager at ``/manager`` (uid 65532, as
Kueue's Dockerfile) and the release manifests rendered from the module at ``/kueue/manifests.yaml``. The kind backend
reads the manifests out of that image (``docker create`` + ``docker cp``: one artifact, so the manifests always
match the binary), loads the image into the nodes and applies the release unchanged except the manager's image
(ours, ``imagePullPolicy: Never``: it was loaded, never pushed). In a kind cluster everything else works as a release
install does: Kueue's internal certificate management, its Services, the visibility APIService.

The version is ``KUEUE_VERSION`` of the upstream build's ``versions.env`` (read as a file: the build, both backends
and the image script share it).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

VERSIONS_FILE = Path(__file__).resolve().parents[1] / "upstream" / "versions.env"
MANIFESTS_IN_IMAGE = "/kueue/manifests.yaml"
DEPLOYMENT = "kueue-controller-manager"
NAMESPACE = "kueue-system"
MANAGER_CONTAINER = "manager"


def kueue_version() -> str:
    for line in VERSIONS_FILE.read_text().splitlines():
        if line.startswith("KUEUE_VERSION="):
            return line.split("=", 1)[1].strip()
    raise ValueError(f"{VERSIONS_FILE} pins no KUEUE_VERSION")


def kueue_image() -> str:
    """The local image ``scripts/kind-images kueue`` builds, e.g. ``mockgpu/kueue:v0.17.0`` (never ``latest``)."""
    return f"mockgpu/kueue:{kueue_version()}"


def kind_manifests(release: list[dict[str, Any]], image: str) -> list[dict[str, Any]]:
    """The release with the manager's container on ``image`` (loaded into the nodes: ``imagePullPolicy: Never``)."""
    out = copy.deepcopy(release)
    found = False
    for doc in out:
        meta = doc.get("metadata") or {}
        if doc.get("kind") == "Deployment" and meta.get("name") == DEPLOYMENT:
            for c in doc["spec"]["template"]["spec"]["containers"]:
                if c.get("name") == MANAGER_CONTAINER:
                    c["image"], c["imagePullPolicy"] = image, "Never"
                    found = True
    if not found:
        raise ValueError(f"the Kueue manifests have no Deployment {DEPLOYMENT} with a container {MANAGER_CONTAINER}")
    return out
