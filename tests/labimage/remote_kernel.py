"""Run a notebook's code cells on a remote Jupyter server, through its REST API and its kernel websocket (the
Jupyter messaging protocol v5.3 over ``/api/kernels/<id>/channels``), as JupyterLab's front end does: open a
session for the notebook (the kernel starts in the notebook's folder), send each code cell as an
``execute_request`` and wait for its ``execute_reply``. Used to make learners run a lab through a JupyterHub (the
hub's proxy in front of each learner's single-user server)."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect


@dataclass
class CellResult:
    index: int
    status: str  # the execute_reply's: ok, error, aborted
    error: str = ""
    seconds: float = 0.0


@dataclass
class Run:
    cells: list[CellResult] = field(default_factory=list)
    session_id: str = ""  # the notebook's session (its kernel still running when run_notebook kept it)

    @property
    def ok(self) -> bool:
        return bool(self.cells) and all(c.status == "ok" for c in self.cells)

    def failures(self) -> list[str]:
        return [f"cell {c.index}: {c.status} {c.error}" for c in self.cells if c.status != "ok"]


def _message(msg_type: str, content: dict, session: str) -> dict:
    return {"header": {"msg_id": uuid.uuid4().hex, "username": "test", "session": session, "msg_type": msg_type,
                       "version": "5.3", "date": datetime.now(UTC).isoformat()},
            "parent_header": {}, "metadata": {}, "content": content, "channel": "shell", "buffers": []}


async def _api(base: str, token: str, method: str, path: str, body: dict | None = None) -> dict:
    req = HTTPRequest(f"{base}{path}", method=method, headers={"Authorization": f"token {token}"},
                      body=json.dumps(body) if body is not None else None, request_timeout=120)
    resp = await AsyncHTTPClient().fetch(req)
    return json.loads(resp.body) if resp.body else {}


async def close_session(base: str, token: str, session_id: str) -> None:
    """Delete a notebook's session: its kernel stops (and the lab's cluster with it)."""
    await _api(base, token, "DELETE", f"/api/sessions/{session_id}")


async def run_notebook(base: str, token: str, path: str, cell_timeout: float = 600, keep_kernel: bool = False) -> Run:
    """Execute the code cells of ``path`` (relative to the server's root) on the server at ``base`` (e.g.
    ``http://127.0.0.1:8000/user/alice``) with API token ``token``; stop at the first failing cell. The kernel is
    shut down at the end unless ``keep_kernel`` (then ``close_session(..., run.session_id)``)."""
    nb = await _api(base, token, "GET", f"/api/contents/{path}?content=1")
    cells = [(i, "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
             for i, c in enumerate(nb["content"]["cells"]) if c["cell_type"] == "code"]
    sess = await _api(base, token, "POST", "/api/sessions", {"path": path, "type": "notebook",
                                                             "name": path.rsplit("/", 1)[-1],
                                                             "kernel": {"name": "python3"}})
    kernel_id = sess["kernel"]["id"]
    ws_url = base.replace("http", "ws", 1) + f"/api/kernels/{kernel_id}/channels"
    ws = await websocket_connect(HTTPRequest(ws_url, headers={"Authorization": f"token {token}"}),
                                 max_message_size=64 << 20)
    run, session = Run(session_id=sess["id"]), uuid.uuid4().hex
    loop = asyncio.get_running_loop()
    try:
        for index, source in cells:
            msg = _message("execute_request", {"code": source, "silent": False, "store_history": True,
                                               "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
                           session)
            await ws.write_message(json.dumps(msg))
            t0, error, status = loop.time(), "", None
            while status is None:
                left = cell_timeout - (loop.time() - t0)
                if left <= 0:
                    status, error = "timeout", f"no execute_reply in {cell_timeout} s"
                    break
                raw = await asyncio.wait_for(ws.read_message(), left)
                if raw is None:
                    status, error = "closed", "the kernel's websocket closed"
                    break
                if isinstance(raw, bytes):
                    continue  # binary frames (widget buffers)
                reply = json.loads(raw)
                if reply.get("parent_header", {}).get("msg_id") != msg["header"]["msg_id"]:
                    continue
                if reply["msg_type"] == "error":
                    error = f"{reply['content']['ename']}: {reply['content']['evalue']}"
                elif reply["msg_type"] == "execute_reply":
                    status = reply["content"]["status"]
            run.cells.append(CellResult(index, status, error, loop.time() - t0))
            if status != "ok":
                break
    finally:
        ws.close()
        if not keep_kernel:
            await close_session(base, token, sess["id"])
    return run
