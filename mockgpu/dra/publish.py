"""Publishing the node's ResourceSlices through the Kubernetes API (official client, ``resource.k8s.io/v1``),
as upstream's kubeletplugin helper does for a driver, and reading claims for NodePrepareResources.

``SlicePublisher(api_client, node, slices).sync()`` makes the pool's slices in the API equal ``slices``:
it lists the driver's slices of the node (field selectors ``spec.nodeName`` and ``spec.driver``), and when
anything differs writes every wanted slice with the pool generation one above the highest found (create, or
replace on conflict) and deletes slices it no longer wants; an unchanged pool is left alone. Each slice is
owned by the Node (owner reference with the Node's UID, as the helper sets it), so deleting the Node garbage
collects them. ``delete_all()`` removes the pool (the driver's clean shutdown).

Device taints (``dra.health``) keep the ``timeAdded`` the API server gave them while the same taint (key, value,
effect) stays on the same device, so an unchanged pool is not rewritten and the eviction controller's clock
(``timeAdded`` + ``tolerationSeconds``) does not restart; a new taint gets its time from the server's defaulting.

Simplified: slices get deterministic names (``slices.slice_name``) instead of upstream's ``generateName``,
so create-or-update needs no cache of generated names.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

from mockgpu.dra.slices import DRIVER

log = logging.getLogger(__name__)


def api_message(exc: Exception) -> str:
    """The ``Status.message`` of an ApiException (what kubectl and Go clients print), else ``str(exc)``."""
    body = getattr(exc, "body", None)
    if body:
        try:
            msg = json.loads(body).get("message")
            if msg:
                return msg
        except (ValueError, AttributeError):
            pass
    return f"{getattr(exc, 'status', '')} {getattr(exc, 'reason', exc)}".strip()


def _json(resp: Any) -> dict[str, Any]:
    return json.loads(resp.data)


class SlicePublisher:
    def __init__(self, api_client: Any, node: str, slices: list[dict[str, Any]]) -> None:
        from kubernetes import client

        self.resource = client.ResourceV1Api(api_client)
        self.core = client.CoreV1Api(api_client)
        self.node = node
        self.slices = slices

    def existing(self) -> list[dict[str, Any]]:
        resp = self.resource.list_resource_slice(
            field_selector=f"spec.nodeName={self.node},spec.driver={DRIVER}", _preload_content=False)
        items = _json(resp).get("items") or []
        # a server without these field selectors returns everything: filter here as well
        return [s for s in items if (s.get("spec") or {}).get("driver") == DRIVER
                and (s.get("spec") or {}).get("nodeName") == self.node]

    def _owner(self) -> dict[str, Any]:
        node = _json(self.core.read_node(self.node, _preload_content=False))
        return {"apiVersion": "v1", "kind": "Node", "name": self.node, "uid": node["metadata"]["uid"],
                "controller": True}

    def _with_times(self, have: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The wanted slices with each taint's ``timeAdded`` taken from the same taint on the same device in the
        API (what the server set when it was first published)."""
        added = {(d.get("name"), t.get("key"), t.get("value"), t.get("effect")): t.get("timeAdded")
                 for s in have for d in (s.get("spec") or {}).get("devices") or [] for t in d.get("taints") or []
                 if t.get("timeAdded")}
        out = copy.deepcopy(self.slices)
        for s in out:
            for d in (s.get("spec") or {}).get("devices") or []:
                for t in d.get("taints") or []:
                    when = added.get((d.get("name"), t.get("key"), t.get("value"), t.get("effect")))
                    if when and not t.get("timeAdded"):
                        t["timeAdded"] = when
        return out

    @staticmethod
    def _comparable(s: dict[str, Any]) -> tuple[str, str]:
        spec = copy.deepcopy(s.get("spec") or {})
        (spec.get("pool") or {}).pop("generation", None)
        return s["metadata"]["name"], json.dumps(spec, sort_keys=True)

    def sync(self) -> bool:
        """Make the API's pool equal the wanted slices; True if anything was written."""
        from kubernetes.client.exceptions import ApiException

        have = self.existing()
        wanted = self._with_times(have)
        if sorted(map(self._comparable, have)) == sorted(map(self._comparable, wanted)):
            return False
        generation = max([(s["spec"].get("pool") or {}).get("generation", 0) for s in have] + [0]) + 1
        owner = self._owner()
        by_name = {s["metadata"]["name"]: s for s in have}
        for want in wanted:
            body = copy.deepcopy(want)
            body["spec"]["pool"]["generation"] = generation
            body["metadata"]["ownerReferences"] = [owner]
            name = body["metadata"]["name"]
            if name in by_name:
                body["metadata"]["resourceVersion"] = by_name[name]["metadata"].get("resourceVersion")
                self.resource.replace_resource_slice(name, body, _preload_content=False)
                continue
            try:
                self.resource.create_resource_slice(body, _preload_content=False)
            except ApiException as exc:
                if exc.status != 409:
                    raise
                cur = _json(self.resource.read_resource_slice(name, _preload_content=False))
                body["metadata"]["resourceVersion"] = cur["metadata"].get("resourceVersion")
                self.resource.replace_resource_slice(name, body, _preload_content=False)
        wanted = {s["metadata"]["name"] for s in self.slices}
        for name in set(by_name) - wanted:
            self._delete(name)
        log.info("published %d ResourceSlices of pool %s, generation %d", len(self.slices), self.node, generation)
        return True

    def _delete(self, name: str) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self.resource.delete_resource_slice(name, _preload_content=False)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def delete_all(self) -> None:
        for s in self.existing():
            self._delete(s["metadata"]["name"])


def claim_getter(api_client: Any):  # noqa: ANN201
    """``get_claim(namespace, name)`` for ``Preparer``: the ResourceClaim as a dict; raises with the API's
    message (``resourceclaims.resource.k8s.io "x" not found``)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = client.ResourceV1Api(api_client)

    def get(namespace: str, name: str) -> dict[str, Any]:
        try:
            return _json(api.read_namespaced_resource_claim(name, namespace, _preload_content=False))
        except ApiException as exc:
            raise LookupError(api_message(exc)) from None

    return get
