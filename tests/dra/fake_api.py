"""A tiny Kubernetes API for the DRA driver tests: Nodes (read), ResourceSlices (list with field selectors,
create, read, replace, delete) and ResourceClaims (read), JSON over plain HTTP, errors as ``Status`` objects.
Enough for the official client; the embedded API server's ``resource.k8s.io/v1`` is built on another branch."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIM = re.compile(r"^/apis/resource\.k8s\.io/v1/namespaces/([^/]+)/resourceclaims/([^/]+)$")


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": reason,
            "code": code}


class FakeAPI:
    def __init__(self) -> None:
        self.nodes: dict[str, dict] = {}
        self.slices: dict[str, dict] = {}
        self.claims: dict[tuple[str, str], dict] = {}
        self.writes: list[tuple[str, str]] = []  # (verb, slice name)
        self._rv = 0
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def _send(self, code: int, obj: dict) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict:
                return json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")

            def do_GET(self) -> None:  # noqa: N802
                u = urlparse(self.path)
                with api.lock:
                    self._send(*api.get(u.path, parse_qs(u.query)))

            def do_POST(self) -> None:  # noqa: N802
                body = self._body()
                with api.lock:
                    self._send(*api.create(urlparse(self.path).path, body))

            def do_PUT(self) -> None:  # noqa: N802
                body = self._body()
                with api.lock:
                    self._send(*api.replace(urlparse(self.path).path, body))

            def do_DELETE(self) -> None:  # noqa: N802
                self._body()
                with api.lock:
                    self._send(*api.delete(urlparse(self.path).path))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FakeAPI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def kubeconfig(self, path: Path) -> Path:
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": "t"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}]}))
        return path

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    # -- verbs --------------------------------------------------------------------------------------
    def get(self, path: str, query: dict) -> tuple[int, dict]:
        if path.startswith("/api/v1/nodes/"):
            name = path.rsplit("/", 1)[1]
            if name not in self.nodes:
                return 404, status(404, "NotFound", f'nodes "{name}" not found')
            return 200, self.nodes[name]
        if path == SLICES:
            want = dict(t.split("=", 1) for t in (query.get("fieldSelector") or [""])[0].split(",") if t)
            items = [s for s in self.slices.values()
                     if all(s["spec"].get(k.removeprefix("spec.")) == v for k, v in want.items())]
            return 200, {"kind": "ResourceSliceList", "apiVersion": "resource.k8s.io/v1", "metadata": {},
                         "items": items}
        if path.startswith(SLICES + "/"):
            name = path.rsplit("/", 1)[1]
            if name not in self.slices:
                return 404, status(404, "NotFound", f'resourceslices.resource.k8s.io "{name}" not found')
            return 200, self.slices[name]
        m = CLAIM.match(path)
        if m:
            claim = self.claims.get((m.group(1), m.group(2)))
            if claim is None:
                return 404, status(404, "NotFound", f'resourceclaims.resource.k8s.io "{m.group(2)}" not found')
            return 200, claim
        return 404, status(404, "NotFound", "the server could not find the requested resource")

    def create(self, path: str, body: dict) -> tuple[int, dict]:
        name = body["metadata"]["name"]
        if path != SLICES:
            return 405, status(405, "MethodNotAllowed", "not allowed")
        if name in self.slices:
            return 409, status(409, "AlreadyExists", f'resourceslices.resource.k8s.io "{name}" already exists')
        body["metadata"]["resourceVersion"] = self._next_rv()
        self.slices[name] = body
        self.writes.append(("create", name))
        return 201, body

    def replace(self, path: str, body: dict) -> tuple[int, dict]:
        name = path.rsplit("/", 1)[1]
        cur = self.slices.get(name)
        if cur is None:
            return 404, status(404, "NotFound", f'resourceslices.resource.k8s.io "{name}" not found')
        if body["metadata"].get("resourceVersion") != cur["metadata"]["resourceVersion"]:
            return 409, status(409, "Conflict", "the object has been modified")
        body["metadata"]["resourceVersion"] = self._next_rv()
        self.slices[name] = body
        self.writes.append(("replace", name))
        return 200, body

    def delete(self, path: str) -> tuple[int, dict]:
        name = path.rsplit("/", 1)[1]
        if self.slices.pop(name, None) is None:
            return 404, status(404, "NotFound", f'resourceslices.resource.k8s.io "{name}" not found')
        self.writes.append(("delete", name))
        return 200, status(200, "", "")
