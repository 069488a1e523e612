"""Container logs: where the kubelet writes them, and ``GET pods/<name>/log`` (with follow) reading them.

Layout (the contract with the kubelet), as the kubelet's ``/var/log/pods``:
``<state>/logs/<namespace>_<pod>_<uid>/<container>/<restart>.log`` in the CRI format, rotated to
``<restart>.log.<timestamp>`` (``kubelet.containerlogs``). The highest ``<restart>`` is the current
container's log, the one before it ``previous=true``'s. A pod's dir lives as long as the pod: the kubelet
removes it once the pod is deleted (``kubelet.podlogsgc``). Served as the kubelet serves them
(``pkg/kubelet/kuberuntime/logs``): ``tailLines`` and ``limitBytes`` read from the end of the current file (not
the whole file), ``sinceSeconds``/``sinceTime`` and ``timestamps`` from the CRI timestamps, ``follow`` across a
rotation until the container ends; the query is validated as upstream's ``ValidatePodLogOptions`` (422).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiohttp import web

from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.store import Obj
from mockgpu.control.kubelet.containerlogs import LogReader

POLL_S = 0.05


def logs_root(state_dir: str | Path) -> Path:
    """Where every pod's log dir is (the kubelet's ``/var/log/pods``)."""
    return Path(state_dir) / "logs"


def log_dir(state_dir: str | Path, namespace: str, pod: str, uid: str) -> Path:
    return logs_root(state_dir) / f"{namespace}_{pod}_{uid}"


def container_log_dir(state_dir: str | Path, namespace: str, pod: str, uid: str, container: str) -> Path:
    """The dir a container's ``<restart>.log`` files go to; the kubelet writes them, the API server reads them."""
    return log_dir(state_dir, namespace, pod, uid) / container


def run_logs(directory: Path) -> list[Path]:
    """The ``<restart>.log`` files of a container, oldest run first."""
    try:
        names = [p.name for p in directory.iterdir()]
    except (FileNotFoundError, NotADirectoryError):
        return []
    runs = sorted(int(n[:-4]) for n in names if n.endswith(".log") and n[:-4].isdigit())
    return [directory / f"{r}.log" for r in runs]


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


def _int(q, name: str) -> int | None:  # noqa: ANN001 - a MultiDictProxy
    if name not in q:
        return None
    try:
        return int(q[name])
    except ValueError:
        raise st.bad_request(f'strconv.ParseInt: parsing "{q[name]}": invalid syntax') from None


def _bool(q, name: str) -> bool:  # noqa: ANN001
    """apimachinery's Convert_Slice_string_To_bool: absent, "0" or "false" (any case) are false, all else true."""
    v = q.get(name)
    return v is not None and v != "0" and v.lower() != "false"


def log_options(q, name: str) -> dict:  # noqa: ANN001
    """The query as PodLogOptions, validated as upstream's ``ValidatePodLogOptions`` (``name``: the pod's name
    in the URL, which the 422 names; the API server calls this before it looks the pod up, as upstream does)."""
    tail, limit, since_s = _int(q, "tailLines"), _int(q, "limitBytes"), _int(q, "sinceSeconds")
    since_time = None
    if "sinceTime" in q:
        try:
            since_time = datetime.fromisoformat(q["sinceTime"].replace("Z", "+00:00"))
        except ValueError:
            v = q["sinceTime"]  # Go's text names the first element it could not parse; here always the year
            raise st.bad_request(f'parsing time "{v}" as "2006-01-02T15:04:05Z07:00": cannot parse "{v}" as "2006"') \
                from None
    causes: list[st.FieldError] = []
    if tail is not None and tail < 0:
        causes.append(st.field_invalid("tailLines", tail, "must be greater than or equal to 0"))
    if limit is not None and limit < 1:
        causes.append(st.field_invalid("limitBytes", limit, "must be greater than 0"))
    if since_s is not None and since_time is not None:
        causes.append(st.field_forbidden("[]", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif since_s is not None and since_s < 1:
        causes.append(st.field_invalid("sinceSeconds", since_s, "must be greater than 0"))
    if causes:
        raise st.invalid("PodLogOptions", name, causes)
    since = since_time if since_time is not None else \
        datetime.now(UTC) - timedelta(seconds=since_s) if since_s is not None else None
    return {"tail": tail, "limit": limit, "since": since, "timestamps": _bool(q, "timestamps"),
            "follow": _bool(q, "follow"), "previous": _bool(q, "previous")}


async def serve_log(request: web.Request, state_dir: Path, pod: Obj,
                    current: Callable[[], Obj | None], opts: dict | None = None) -> web.StreamResponse:
    """The log of one container; ``follow`` streams new output until the container ends or the client leaves.
    ``opts``: the request's :func:`log_options`, when the caller decoded them already."""
    q = request.query
    meta = pod["metadata"]
    if opts is None:
        opts = log_options(q, meta["name"])
    container = pick_container(pod, q.get("container"))
    if not (pod.get("spec") or {}).get("nodeName"):  # upstream LogLocation: no host yet, an empty log
        return web.Response(body=b"", content_type="text/plain")
    runs = run_logs(container_log_dir(state_dir, meta["namespace"], meta["name"], meta["uid"], container))
    if opts["previous"]:
        if len(runs) < 2:
            raise st.bad_request(f'previous terminated container "{container}" in pod "{meta["name"]}" not found')
        path, follow = runs[-2], False  # a terminated container's log does not grow
    elif not runs:
        if not container_finished(pod, container):
            raise st.bad_request(f'container "{container}" in pod "{meta["name"]}" is waiting to start: '
                                 f"{_waiting_reason(pod, container)}")
        return web.Response(body=b"", content_type="text/plain")
    else:
        path, follow = runs[-1], opts["follow"]
    try:
        reader = LogReader(path, timestamps=opts["timestamps"], since=opts["since"], tail=opts["tail"],
                           limit=opts["limit"])
    except FileNotFoundError:  # removed since listed (pod deleted)
        return web.Response(body=b"", content_type="text/plain")
    with reader:
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        while not reader.done():
            chunk = reader.read()
            if chunk:
                await resp.write(chunk)
                continue
            if not follow:
                break
            if reader.rotated():  # the kubelet rotated the file: the rest of the old one, then the new one
                while chunk := reader.read():
                    await resp.write(chunk)
                reader.reopen()
                continue
            if container_finished(current(), container):
                while chunk := reader.read():
                    await resp.write(chunk)
                break
            if request.transport is None or request.transport.is_closing():
                break
            await asyncio.sleep(POLL_S)
        await resp.write_eof()
        return resp
