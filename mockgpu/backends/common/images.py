"""mockgpu's own container image, which the kind and kubeconfig backends run their DaemonSets (and, on kind, the
workloads) in: ``mockgpu:<package version>``, built from the checkout's Dockerfile (never ``latest``)."""

from __future__ import annotations

from importlib import metadata


def package_version() -> str:
    """mockgpu's version, which is also the tag of its image (never ``latest``)."""
    try:
        return metadata.version("mockgpu")
    except metadata.PackageNotFoundError:  # running from a checkout that was never installed
        return "0.0.0.dev0"


def mockgpu_image() -> str:
    """The local image the device plugin DaemonSet runs, e.g. ``mockgpu:0.1.0``."""
    return f"mockgpu:{package_version()}"
