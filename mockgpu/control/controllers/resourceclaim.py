"""The resource claim controller: ResourceClaims from a pod's ResourceClaimTemplates, and their clean-up.

As upstream's ``pkg/controller/resourceclaim`` (v1.37):

- a pod (not done, not being deleted) with a ``spec.resourceClaims[]`` entry naming a
  ``resourceClaimTemplateName`` gets a ResourceClaim made from the template: ``generateName``
  ``<pod>-<claim>-`` (both parts shortened proportionally past 57 characters), the template's labels and
  annotations plus ``resource.kubernetes.io/pod-claim-name: <claim>``, an owner reference to the pod with
  ``controller: true`` (upstream sets no ``blockOwnerDeletion``), and the template's claim spec. An existing
  claim owned by the pod with that annotation is reused. The claim's name is recorded in the pod's
  ``status.resourceClaimStatuses[]`` (``{name, resourceClaimName}``) with a status update.
- a claim's ``status.reservedFor`` loses the pods that are gone (confirmed with a live GET), replaced by a new
  pod of the same name, or done (phase Succeeded/Failed, or deleted while never scheduled). When no
  reservation is left and the claim carries the ``resource.kubernetes.io/delete-protection`` finalizer, the
  allocation is cleared and the finalizer removed (also for a deleted claim that is no longer reserved).
- a claim generated for a pod that is done or replaced, and reserved for nobody, is deleted; a claim whose pod
  is deleted goes with the garbage collector (``gc``: the claim is the pod's dependent).

Simplified: no metrics, no admin-access / prioritized-list feature gates (both on), no PodGroup (workload)
claims, no reservation of claims for pods scheduled without the scheduler, and a missing template is retried
(and retried again when the template appears) instead of upstream's rate-limited error.
"""

from __future__ import annotations

import copy
from typing import Any

from kubernetes.client.exceptions import ApiException

from mockgpu.control.controllers.base import Manager

Obj = dict[str, Any]
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"
MAX_BASE_LEN = 57  # leaves room for the hyphen and 5 random characters in a 63-character name
TEMPLATE_RETRY = 2.0


def is_pod_done(pod: Obj) -> bool:
    """Terminal phase, or deleted before it was ever scheduled (upstream ``isPodDone``)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed") or bool(
        pod["metadata"].get("deletionTimestamp") and not (pod.get("spec") or {}).get("nodeName"))


def generate_name(pod_name: str, claim_name: str) -> str:
    """``<pod>-<claim>-``, both parts cut proportionally when longer than 57 characters (as upstream)."""
    name = f"{pod_name}-{claim_name}-"
    if len(name) > MAX_BASE_LEN:
        name = (pod_name[:len(pod_name) * MAX_BASE_LEN // len(name)] + "-"
                + claim_name[:len(claim_name) * MAX_BASE_LEN // len(name)])
    return name


def claim_from_template(pod: Obj, pod_claim: str, template: Obj) -> Obj:
    """The ResourceClaim the controller creates for ``pod``'s claim ``pod_claim`` from ``template``."""
    tmeta = (template.get("spec") or {}).get("metadata") or {}
    meta: Obj = {"generateName": generate_name(pod["metadata"]["name"], pod_claim),
                 "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"],
                                      "uid": pod["metadata"]["uid"], "controller": True}],
                 "annotations": {**(tmeta.get("annotations") or {}), POD_CLAIM_ANNOTATION: pod_claim}}
    if tmeta.get("labels"):
        meta["labels"] = dict(tmeta["labels"])
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": copy.deepcopy((template.get("spec") or {}).get("spec") or {})}


def owning_pod(claim: Obj) -> tuple[str, str]:
    """(name, uid) of the pod that controls ``claim``; ("", "") when it was not generated for a pod."""
    for ref in claim["metadata"].get("ownerReferences") or []:
        if ref.get("apiVersion") == "v1" and ref.get("kind") == "Pod" and ref.get("controller"):
            return ref.get("name", ""), ref.get("uid", "")
    return "", ""


def pod_claim_names(pod: Obj) -> list[str]:
    """The ResourceClaim names a pod refers to: direct ones and those recorded for its templates."""
    out = [c["resourceClaimName"] for c in (pod.get("spec") or {}).get("resourceClaims") or []
           if isinstance(c, dict) and c.get("resourceClaimName")]
    out += [s["resourceClaimName"] for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
            if isinstance(s, dict) and s.get("resourceClaimName")]
    return out


class ResourceClaimController:
    """Keys: ("Pod", ns, pod) creates and records claims; ("ResourceClaim", ns, claim) cleans up."""


    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr

    # ---- routing (called from the manager's event router) ----------------------------------------------------

    def route(self, plural: str, typ: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace") or "", meta.get("name", "")
        if plural == "pods":
            if (obj.get("spec") or {}).get("resourceClaims"):
                self.mgr.enqueue("Pod", ns, name)
            if typ == "DELETED" or is_pod_done(obj) or meta.get("deletionTimestamp"):
                for claim in pod_claim_names(obj):
                    self.mgr.enqueue("ResourceClaim", ns, claim)
                uid = meta.get("uid")
                for claim in self.mgr.cache.list("resourceclaims", ns):  # reservations of claims it shares
                    if any(r.get("uid") == uid for r in (claim.get("status") or {}).get("reservedFor") or []):
                        self.mgr.enqueue("ResourceClaim", ns, claim["metadata"]["name"])
                    if typ == "DELETED" and owning_pod(claim)[1] == uid:  # the garbage collector's turn
                        self.mgr.queue.add(("gc/resourceclaims", ns, claim["metadata"]["name"]))
        elif plural == "resourceclaims":
            if typ != "DELETED":
                self.mgr.enqueue("ResourceClaim", ns, name)
            pod_name, _ = owning_pod(obj)
            if pod_name:
                self.mgr.enqueue("Pod", ns, pod_name)
        elif plural == "resourceclaimtemplates" and typ != "DELETED":
            for pod in self.mgr.cache.list("pods", ns):
                if any(isinstance(c, dict) and c.get("resourceClaimTemplateName") == name
                       for c in (pod.get("spec") or {}).get("resourceClaims") or []):
                    self.mgr.enqueue("Pod", ns, pod["metadata"]["name"])

    # ---- pods -----------------------------------------------------------------------------------------------

    def _find(self, pod: Obj, pod_claim: str) -> Obj | None:
        uid = pod["metadata"].get("uid")
        for claim in self.mgr.cache.list("resourceclaims", pod["metadata"].get("namespace") or ""):
            if owning_pod(claim)[1] == uid and \
                    (claim["metadata"].get("annotations") or {}).get(POD_CLAIM_ANNOTATION) == pod_claim:
                return claim
        return None

    def sync_pod(self, ns: str, name: str) -> None:
        pod = self.mgr.cache.get("pods", ns, name)
        if pod is None or is_pod_done(pod) or pod["metadata"].get("deletionTimestamp"):
            return
        recorded = {s.get("name") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
                    if isinstance(s, dict)}
        new: dict[str, str] = {}
        missing_template = False
        for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            template_name = pod_claim.get("resourceClaimTemplateName") if isinstance(pod_claim, dict) else None
            if not template_name or pod_claim.get("name") in recorded:
                continue
            claim = self._find(pod, pod_claim["name"])
            if claim is None:
                template = self.mgr.cache.get("resourceclaimtemplates", ns, template_name)
                if template is None:
                    missing_template = True
                    continue
                claim = self.mgr.wrote("resourceclaims", self.mgr.api.create(
                    "resourceclaims", ns, claim_from_template(pod, pod_claim["name"], template)))
            new[pod_claim["name"]] = claim["metadata"]["name"]
        if new:
            updated = copy.deepcopy(pod)
            statuses = updated.setdefault("status", {}).setdefault("resourceClaimStatuses", [])
            statuses.extend({"name": k, "resourceClaimName": v} for k, v in new.items())
            self.mgr.wrote("pods", self.mgr.api.replace("pods", updated, status=True))
        if missing_template:  # upstream: an error, retried with back-off; the template's arrival requeues too
            self.mgr.enqueue("Pod", ns, name, after=TEMPLATE_RETRY)

    # ---- claims ---------------------------------------------------------------------------------------------

    def _keep(self, ns: str, ref: Obj) -> bool:
        if ref.get("apiGroup") or ref.get("resource") != "pods":
            return True
        pod = self.mgr.cache.get("pods", ns, ref.get("name", ""))
        if pod is None:
            pod = self.mgr.api.get("pods", ns, ref.get("name", ""))  # the informer may lag behind a new pod
        return pod is not None and pod["metadata"].get("uid") == ref.get("uid") and not is_pod_done(pod)

    def sync_claim(self, ns: str, name: str) -> None:
        claim = self.mgr.cache.get("resourceclaims", ns, name)
        if claim is None:
            return
        reserved = (claim.get("status") or {}).get("reservedFor") or []
        remaining = [r for r in reserved if self._keep(ns, r)]
        protected = FINALIZER in (claim["metadata"].get("finalizers") or [])
        if len(remaining) < len(reserved):
            updated = copy.deepcopy(claim)
            updated["status"]["reservedFor"] = remaining or None
            if not remaining and protected:
                updated["status"].pop("allocation", None)
            if updated["status"].get("reservedFor") is None:
                updated["status"].pop("reservedFor", None)
            claim = self.mgr.wrote("resourceclaims", self.mgr.api.replace("resourceclaims", updated, status=True))
            if protected and not (claim.get("status") or {}).get("allocation"):
                claim = self._drop_finalizer(claim)
        elif protected and claim["metadata"].get("deletionTimestamp") and not remaining:
            if (claim.get("status") or {}).get("allocation"):
                updated = copy.deepcopy(claim)
                updated["status"].pop("allocation", None)
                claim = self.mgr.wrote("resourceclaims", self.mgr.api.replace("resourceclaims", updated,
                                                                              status=True))
            claim = self._drop_finalizer(claim)
        if remaining or claim is None:
            return
        pod_name, pod_uid = owning_pod(claim)
        if not pod_name:
            return
        pod = self.mgr.cache.get("pods", ns, pod_name)
        if pod is not None and (pod["metadata"].get("uid") != pod_uid or is_pod_done(pod)):
            try:
                self.mgr.api.delete("resourceclaims", ns, name)
            except ApiException as exc:
                if exc.status != 404:
                    raise

    def _drop_finalizer(self, claim: Obj) -> Obj | None:
        updated = copy.deepcopy(claim)
        updated["metadata"]["finalizers"] = [f for f in updated["metadata"].get("finalizers") or []
                                             if f != FINALIZER]
        out = self.mgr.api.replace("resourceclaims", updated)
        if isinstance(out, dict) and out.get("kind") == "ResourceClaim":
            return self.mgr.wrote("resourceclaims", out)
        return None
