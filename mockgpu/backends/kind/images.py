"""Which container images a kind cluster uses: the pinned ``kindest/node`` images and our own.

kind's release notes say "You must use the @sha256 digest to guarantee an image built for this
release", so every node image is pinned by digest. The digests below were not read from kind's
release notes here (no network); they are the values that several independent public repositories
pin for the same tag (cross-checked, all agreeing). ``docs/kind.md`` says so too.

``MOCKGPU_KIND_NODE_IMAGE`` names a locally built node image instead (e.g. ``mockgpu/kind-node:v1.37.2``,
made with ``kind build node-image``): used by its plain name, without a digest, since it was never pushed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mockgpu.errors import MockgpuError


@dataclass(frozen=True)
class NodeImage:
    kubernetes: str  # e.g. "v1.35.0" ("" for a local image)
    kind_release: str  # the kind release that published it (use this kind or newer)
    digest: str = ""  # empty for a local image
    local: str = ""  # a locally built image's name, e.g. "mockgpu/kind-node:v1.37.2"

    @property
    def name(self) -> str:
        """The image without its digest, for messages."""
        return self.local or f"kindest/node:{self.kubernetes}"

    @property
    def ref(self) -> str:
        """What the kind config names: pinned by digest, or a local image by its plain name."""
        return self.local or f"kindest/node:{self.kubernetes}@sha256:{self.digest}"


NODE_IMAGES: dict[str, NodeImage] = {
    "1.34": NodeImage("v1.34.0", "v0.30.0", "7416a61b42b1662ca6ca89f02028ac133a309a2a30ba309614e8ec94d976dc5a"),
    "1.35": NodeImage("v1.35.0", "v0.31.0", "452d707d4862f52530247495d180205e029056831160e22870e37e3f6c1ac31f"),
    "1.36": NodeImage("v1.36.1", "v0.32.0", "3489c7674813ba5d8b1a9977baea8a6e553784dab7b84759d1014dbd78f7ebd5"),
}
DEFAULT_KUBERNETES = "1.35"
VERSION_ENV = "MOCKGPU_KIND_K8S_VERSION"  # e.g. MOCKGPU_KIND_K8S_VERSION=1.36
LOCAL_IMAGE_ENV = "MOCKGPU_KIND_NODE_IMAGE"  # e.g. MOCKGPU_KIND_NODE_IMAGE=mockgpu/kind-node:v1.37.2
# The kind a local node image is assumed to need. A guess: nothing in the image says which kind built it;
# v0.33.0 is the newest kind release this project names.
LOCAL_IMAGE_KIND_RELEASE = "v0.33.0"


def node_image(version: str | None = None) -> NodeImage:
    """The node image: the pinned one for a Kubernetes minor ("1.35"; a leading "v" and a patch are
    accepted), else the local image in ``MOCKGPU_KIND_NODE_IMAGE``, else the pinned default."""
    local = os.environ.get(LOCAL_IMAGE_ENV, "").strip()
    if version is None and local:
        return NodeImage("", LOCAL_IMAGE_KIND_RELEASE, local=local)
    want = version or os.environ.get(VERSION_ENV) or DEFAULT_KUBERNETES
    minor = ".".join(want.removeprefix("v").split(".")[:2])
    if minor not in NODE_IMAGES:
        raise MockgpuError(
            f"no pinned kindest/node image for Kubernetes {want} (supported: {', '.join(NODE_IMAGES)})", exit_code=2
        )
    return NODE_IMAGES[minor]
