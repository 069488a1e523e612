"""Container logs: where the kubelet writes them, and ``GET pods/<name>/log`` (with follow) reading them.

Layout (the contract with the kubelet): ``<state>/logs/<namespace>_<pod>_<uid>/<container>.log``, the
container's output as plain text, appended across restarts (like kubelet's ``/var/log/pods`` folder
without the CRI timestamp prefix; ``timestamps=true`` and ``previous=true`` are therefore not served).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.store import Obj

POLL_S = 0.05


def log_dir(state_dir: str | Path, namespace: str, pod: str, uid: str) -> Path:
    return Path(state_dir) / "logs" / f"{namespace}_{pod}_{uid}"


def log_path(state_dir: str | Path, namespace: str, pod: str, uid: str, container: str) -> Path:
    """The file a container's output goes to; the kubelet creates it, the API server reads it."""
    return log_dir(state_dir, namespace, pod, uid) / f"{container}.log"


def pick_container(pod: Obj, container: str | None) -> str:
    """The container asked for, or the only one; upstream's 400 messages otherwise."""
    name = pod["metadata"]["name"]
    spec = pod.get("spec") or {}
    names = [c.get("name") for c in spec.get("containers") or []]
    init = [c.get("name") for c in spec.get("initContainers") or []]
    if not container:
        if len(names) == 1:
            return names[0]
        raise st.bad_request(f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
                             + (f" or one of the init containers: [{' '.join(init)}]" if init else ""))
    if container not in names and container not in init:
        raise st.bad_request(f"container {container} is not valid for pod {name}")
    return container


def container_finished(pod: Obj | None, container: str) -> bool:
    """Whether no more output can come: pod gone, pod terminal, or the container terminated."""
    if pod is None:
        return True
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if cs.get("name") == container and "terminated" in (cs.get("state") or {}):
            return True
    return False


def _waiting_reason(pod: Obj, container: str) -> str:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == container:
            return ((cs.get("state") or {}).get("waiting") or {}).get("reason") or "ContainerCreating"
    return "ContainerCreating"


def _tail(data: bytes, lines: int) -> bytes:
    if lines <= 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])


async def serve_log(request: web.Request, state_dir: Path, pod: Obj,
                    current: Callable[[], Obj | None]) -> web.StreamResponse:
    """The log of one container; ``follow`` streams new output until the container ends or the client leaves."""
    q = request.query
    container = pick_container(pod, q.get("container"))
    if not (pod.get("spec") or {}).get("nodeName"):  # upstream LogLocation: no host yet, an empty log
        return web.Response(body=b"", content_type="text/plain")
    meta = pod["metadata"]
    path = log_path(state_dir, meta["namespace"], meta["name"], meta["uid"], container)
    follow = q.get("follow") in ("1", "t", "T", "true", "TRUE", "True")
    if not path.exists():
        if not container_finished(pod, container):
            raise st.bad_request(f'container "{container}" in pod "{meta["name"]}" is waiting to start: '
                                 f"{_waiting_reason(pod, container)}")
        return web.Response(body=b"", content_type="text/plain")
    try:
        tail = int(q["tailLines"]) if "tailLines" in q else None
        limit = int(q["limitBytes"]) if "limitBytes" in q else None
    except ValueError as exc:
        raise st.bad_request(f"invalid query parameter: {exc}") from None
    with path.open("rb") as fh:
        data = fh.read()
        if tail is not None:
            data = _tail(data, tail)
        if limit is not None:
            data = data[:max(0, limit)]
        if not follow:
            return web.Response(body=data, content_type="text/plain")
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        sent = len(data)
        if data:
            await resp.write(data)
        while limit is None or sent < limit:
            chunk = fh.read()
            if chunk:
                if limit is not None:
                    chunk = chunk[:limit - sent]
                sent += len(chunk)
                await resp.write(chunk)
                continue
            if container_finished(current(), container):
                rest = fh.read()
                if rest:
                    await resp.write(rest)
                break
            if request.transport is None or request.transport.is_closing():
                break
            await asyncio.sleep(POLL_S)
        await resp.write_eof()
        return resp
