"""An embedded Kubernetes-compatible API server (core/v1) that kubectl and the official client use unchanged.

``server.APIServer`` runs it; ``store`` keeps objects in SQLite; ``app`` is the HTTP layer; the pure
modules (``validation``, ``selectors``, ``patch``, ``tables``, ``discovery``, ``status``) model upstream.
"""

from __future__ import annotations

from typing import Any

__all__ = ["APIServer"]


def __getattr__(name: str) -> Any:  # lazy, so the pure modules import without aiohttp
    if name == "APIServer":
        from mockgpu.control.apiserver.server import APIServer

        return APIServer
    raise AttributeError(name)
