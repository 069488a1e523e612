"""The scheduler's API calls, through the official client's ``ApiClient`` (auth, TLS, connection pool).

Requests go through ``ApiClient.param_serialize`` / ``call_api`` with JSON dicts in and out: the generated
``CoreV1Api`` methods validate every argument and build model objects, which costs more than scheduling the
pod. Errors are the client's ``ApiException`` (``.status``, ``.body``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

JSON = "application/json"
STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
TIMEOUT = (5.0, 30.0)  # connect, read


RESOURCE_V1 = "resource.k8s.io/v1"
SCHEDULING_V1BETA1 = "scheduling.k8s.io/v1beta1"  # PodGroups (GenericWorkload), the version v1.37.2 reads


def collection_path(plural: str, group: str = "") -> str:
    """``/api/v1/<plural>`` for the core group, ``/apis/<group/version>/<plural>`` otherwise."""
    return f"/apis/{group}/{plural}" if group else f"/api/v1/{plural}"


def claim_path(ns: str, name: str, sub: str = "") -> str:
    path = f"/apis/{RESOURCE_V1}/namespaces/{quote(ns, safe='')}/resourceclaims/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def pod_path(ns: str, name: str, sub: str = "") -> str:
    path = f"/api/v1/namespaces/{quote(ns, safe='')}/pods/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


class RawApi:
    """JSON requests against one cluster."""

    def __init__(self, client: ApiClient) -> None:
        self.client = client

    def request(self, method: str, path: str, *, body: Any = None, query: list[tuple[str, Any]] | None = None,
                content_type: str = JSON, timeout: Any = TIMEOUT, stream: bool = False) -> Any:
        """The decoded JSON response (or the raw urllib3 response when ``stream``); ApiException on non-2xx."""
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        params = self.client.param_serialize(method, path, query_params=query or [], header_params=headers,
                                             body=body, auth_settings=["BearerToken"])
        resp = self.client.call_api(*params, _request_timeout=timeout)
        if not 200 <= resp.status <= 299:
            resp.read()
            raise ApiException(http_resp=resp)
        if stream:
            return resp.response
        resp.read()
        return json.loads(resp.data) if resp.data else None

    # ---- reads ----------------------------------------------------------------------------------------------

    def list(self, plural: str, group: str = "") -> dict:
        return self.request("GET", collection_path(plural, group))

    def watch(self, plural: str, resource_version: str, timeout_seconds: int, read_timeout: float,
              group: str = "") -> Any:
        """An open watch response (iterate it with ``watch_events``)."""
        query = [("watch", "true"), ("resourceVersion", resource_version), ("allowWatchBookmarks", "true"),
                 ("timeoutSeconds", str(timeout_seconds))]
        return self.request("GET", collection_path(plural, group), query=query, timeout=(5.0, read_timeout),
                            stream=True)

    def get_claim(self, ns: str, name: str) -> dict:
        return self.request("GET", claim_path(ns, name))

    def update_claim(self, claim: dict, *, status: bool = False) -> dict:
        """PUT the whole claim (or its ``status`` subresource); 409 when ``resourceVersion`` is stale."""
        meta = claim.get("metadata") or {}
        return self.request("PUT", claim_path(meta.get("namespace") or "default", meta.get("name", ""),
                                              "status" if status else ""), body=claim)

    # ---- writes ---------------------------------------------------------------------------------------------

    def bind(self, ns: str, name: str, uid: str, node: str, annotations: dict[str, str]) -> None:
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": ns, "uid": uid, "annotations": annotations},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        self.request("POST", pod_path(ns, name, "binding"), body=body)

    def patch_pod(self, ns: str, name: str, patch: dict, *, status: bool = False) -> dict:
        return self.request("PATCH", pod_path(ns, name, "status" if status else ""), body=patch,
                            content_type=STRATEGIC)

    def patch_podgroup_status(self, ns: str, name: str, patch: dict) -> dict:
        path = (f"/apis/{SCHEDULING_V1BETA1}/namespaces/{quote(ns, safe='')}/podgroups/{quote(name, safe='')}"
                "/status")
        return self.request("PATCH", path, body=patch, content_type=MERGE)

    def delete_pod(self, ns: str, name: str, uid: str | None = None) -> None:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        self.request("DELETE", pod_path(ns, name), body=body)

    def create_event(self, ns: str, event: dict) -> dict:
        return self.request("POST", f"/api/v1/namespaces/{quote(ns, safe='')}/events", body=event)

    def patch_event(self, ns: str, name: str, patch: dict) -> dict:
        return self.request("PATCH", f"/api/v1/namespaces/{quote(ns, safe='')}/events/{quote(name, safe='')}",
                            body=patch, content_type=MERGE)


def watch_events(resp: Any) -> Iterator[dict]:
    """The decoded events of a watch response, one per line."""
    for line in iter_resp_lines(resp):
        if line:
            yield json.loads(line)
