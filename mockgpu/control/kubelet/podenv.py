"""A container's environment from its pod spec: literal values and ``fieldRef``s (downward API).

Secret and config map references need the API server and are refused with ``ConfigError``, which
the pod worker shows as the kubelet does: the container waits with ``CreateContainerConfigError``.
"""

from __future__ import annotations

import re

_FIELD_LABEL = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


class ConfigError(Exception):
    """The container's config cannot be built (CreateContainerConfigError)."""


def resolve_env(container: dict, pod: dict, node_name: str) -> dict[str, str]:
    """The container's env list as a dict; ``fieldRef`` resolved from the pod; other refs raise."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    fields = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", "default"),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName") or node_name,
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.hostIP": "127.0.0.1",
        "status.podIP": "127.0.0.1",
    }
    env: dict[str, str] = {}
    for item in container.get("env") or []:
        name, src = item["name"], item.get("valueFrom")
        if src is None:
            env[name] = str(item.get("value", ""))
            continue
        path = (src.get("fieldRef") or {}).get("fieldPath")
        m = _FIELD_LABEL.match(path or "")
        if m:
            env[name] = (meta.get(m.group(1)) or {}).get(m.group(2), "")
        elif path in fields:
            env[name] = fields[path]
        else:
            kind = next(iter(src), "valueFrom")
            raise ConfigError(f"env {name}: {kind} is not supported by the mockgpu embedded kubelet")
    return env
