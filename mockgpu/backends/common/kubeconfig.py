"""The kubeconfig of an embedded cluster: cluster, user and context ``mockgpu-<name>``, mode 0600.

Writing into an existing kubeconfig merges (replacing only our three entries and the current context),
as ``kind`` does; removing takes our entries out again and deletes a file left empty.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml

from mockgpu.errors import MockgpuError


def entry_name(cluster: str) -> str:
    return f"mockgpu-{cluster}"


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise MockgpuError(f"cannot read kubeconfig {path}: {exc}") from None
    if not isinstance(data, dict):
        raise MockgpuError(f"{path} is not a kubeconfig (not a YAML mapping)")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(data, fh, sort_keys=False)
    os.chmod(tmp, 0o600)
    tmp.replace(path)


def _replace(items: Any, name: str, entry: dict[str, Any] | None) -> list[dict[str, Any]]:
    out = [i for i in (items or []) if isinstance(i, dict) and i.get("name") != name]
    return out + ([entry] if entry else [])


def write_kubeconfig(path: Path, cluster: str, server: str, token: str, ca_pem: bytes) -> Path:
    """Add (or update) the cluster's entries in ``path`` and make it the current context."""
    data = _read(path)
    name = entry_name(cluster)
    data.setdefault("apiVersion", "v1")
    data.setdefault("kind", "Config")
    data["clusters"] = _replace(data.get("clusters"), name, {"name": name, "cluster": {
        "certificate-authority-data": base64.b64encode(ca_pem).decode(), "server": server}})
    data["contexts"] = _replace(data.get("contexts"), name, {
        "name": name, "context": {"cluster": name, "user": name, "namespace": "default"}})
    data["current-context"] = name
    data["users"] = _replace(data.get("users"), name, {"name": name, "user": {"token": token}})
    data.setdefault("preferences", {})
    _write(path, data)
    return path


def remove_kubeconfig(path: Path, cluster: str) -> None:
    """Take the cluster's entries out of ``path``; delete the file if nothing else is left in it."""
    if not path.exists():
        return
    data = _read(path)
    name = entry_name(cluster)
    for key in ("clusters", "contexts", "users"):
        data[key] = _replace(data.get(key), name, None)
    if data.get("current-context") == name:
        data["current-context"] = ""
    if not any(data.get(k) for k in ("clusters", "contexts", "users")):
        path.unlink()
    else:
        _write(path, data)


def api_client_for(url: str, cert_file: Path, token: str, *, pool_size: int | None = None) -> Any:
    """A ``kubernetes.client.ApiClient`` for an embedded cluster: its URL, its CA certificate, its token."""
    from kubernetes import client  # imported here: the CLI should not pay for it on every command

    cfg = client.Configuration()
    cfg.host = url
    cfg.ssl_ca_cert = str(cert_file)
    cfg.api_key = {"authorization": token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    if pool_size is not None:
        cfg.connection_pool_maxsize = pool_size
    return client.ApiClient(cfg)
