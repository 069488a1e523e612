"""The namespace controller: empty a Terminating namespace, pods first, then finalize it.

As kube-controller-manager's ``pkg/controller/namespace`` (``deletion/namespaced_resources_deleter.go`` and
``status_condition_utils.go``, v1.37): for a namespace with a ``deletionTimestamp`` the phase is set to Terminating;
every namespaced resource that discovery lists with the ``delete`` verb (the groups' preferred versions) is
deleted with ``propagationPolicy=Background`` (``deletecollection`` where served, else each listed item), the pods
first: while pods remain, nothing else is deleted (``OrderedNamespaceDeletion``, on in 1.37). Objects that remain
with finalizers keep the namespace Terminating (estimate 15 s), as do pods within their termination grace period;
the conditions ``NamespaceDeletionDiscoveryFailure``, ``NamespaceDeletionGroupVersionParsingFailure``,
``NamespaceDeletionContentFailure``, ``NamespaceContentRemaining`` and ``NamespaceFinalizersRemaining`` carry
upstream's reasons and messages. When nothing remains, the ``kubernetes`` finalizer is removed through
``namespaces/<name>/finalize`` and the API server deletes the namespace.

Difference, in time only: upstream looks again after the estimate (a pod's grace period, 15 s for finalizers) or
the 5 s namespace resync; here a pod's deletion in a Terminating namespace also brings the next pass at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import parse_rfc3339_nano, rfc3339
from mockgpu.control.controllers.base import Manager

Obj = dict[str, Any]
KIND = "Namespace"
FINALIZER = "kubernetes"
FINALIZER_ESTIMATE = 15  # finalizerEstimateSeconds
RESYNC = 5.0  # namespaceDeletionGracePeriod: how soon a namespace that changed is looked at
PODS = ("", "v1", "pods")

#: the conditions the controller maintains, in upstream's order, with their "all is well" reason and message
CONDITIONS = (
    ("NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered", "All resources successfully discovered"),
    ("NamespaceDeletionGroupVersionParsingFailure", "ParsedGroupVersions",
     "All legacy kube types successfully parsed"),
    ("NamespaceDeletionContentFailure", "ContentDeleted",
     "All content successfully deleted, may be waiting on finalization"),
    ("NamespaceContentRemaining", "ContentRemoved", "All content successfully removed"),
    ("NamespaceFinalizersRemaining", "ContentHasNoFinalizers", "All content-preserving finalizers finished"),
)

Gvr = tuple[str, str, str]  # (group, version, resource)


@dataclass
class Resource:
    gvr: Gvr
    deletecollection: bool
    list: bool


@dataclass
class Remaining:
    """What one pass found still there: instances per resource, and per finalizer."""

    by_resource: dict[Gvr, int] = field(default_factory=dict)
    by_finalizer: dict[str, int] = field(default_factory=dict)


def collection(gvr: Gvr, ns: str) -> str:
    group, version, resource = gvr
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    return f"{base}/namespaces/{quote(ns, safe='')}/{resource}"


def gvr_string(gvr: Gvr) -> str:
    """``schema.GroupVersionResource``'s ``%v``: ``apps/v1, Resource=deployments``."""
    group, version, resource = gvr
    return f"{group}/{version}, Resource={resource}"


def conditions_after(old: list[Obj], failures: list[Obj], now: str) -> tuple[list[Obj], bool]:
    """``updateConditions``: each maintained type set to its failure, else to its "all is well" form; a type's
    ``lastTransitionTime`` moves only when its status does. (conditions, changed)."""
    out = [dict(c) for c in old]
    changed = False
    for typ, reason, message in CONDITIONS:
        new = next((c for c in failures if c["type"] == typ), None) or {
            "type": typ, "status": "False", "lastTransitionTime": now, "reason": reason, "message": message}
        current = next((c for c in out if c.get("type") == typ), None)
        if current is None:
            out.append(new)
            changed = True
        elif (current.get("status"), current.get("message"), current.get("reason")) != (
                new["status"], new["message"], new["reason"]):
            if current.get("status") != new["status"]:
                current["lastTransitionTime"] = now
            current.update({"status": new["status"], "reason": new["reason"], "message": new["message"]})
            changed = True
    return out, changed


def failure(typ: str, reason: str, message: str, now: str) -> Obj:
    return {"type": typ, "status": "True", "lastTransitionTime": now, "reason": reason, "message": message}


def content_failures(remaining: Remaining, now: str) -> list[Obj]:
    """``ProcessContentTotals``: what remains, by resource and by finalizer, sorted for stable updates."""
    out = []
    by_resource = sorted(f"{r}.{g} has {n} resource instances" for (g, _, r), n in remaining.by_resource.items() if n)
    if remaining.by_resource:
        out.append(failure("NamespaceContentRemaining", "SomeResourcesRemain",
                           "Some resources are remaining: " + ", ".join(by_resource), now))
    by_finalizer = sorted(f"{f} in {n} resource instances" for f, n in remaining.by_finalizer.items() if n)
    if remaining.by_finalizer:
        out.append(failure("NamespaceFinalizersRemaining", "SomeFinalizersRemain",
                           "Some content in the namespace has finalizers remaining: " + ", ".join(by_finalizer), now))
    return out


def delete_failure(errors: list[str], now: str) -> list[Obj]:
    """``makeDeleteContentCondition``."""
    if not errors:
        return []
    return [failure("NamespaceDeletionContentFailure", "ContentDeletionFailed",
                    f"Failed to delete all resource types, {len(errors)} remaining: " + ", ".join(sorted(errors)),
                    now)]


def pod_estimate(pods: list[Obj], deleted_at: str, now: datetime) -> int:
    """``estimateGracefulTerminationForPods``: the longest grace period of a non-terminal pod, 0 once that long
    has passed since the namespace's deletion."""
    estimate = 0
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
        if isinstance(grace, int) and grace > estimate:
            estimate = grace
    try:
        elapsed = (now - parse_rfc3339_nano(deleted_at)).total_seconds()
    except ValueError:
        elapsed = 0.0
    return 0 if elapsed >= estimate else estimate


class NamespaceController:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.failures: dict[str, int] = {}

    # ---- routing ----

    def route(self, plural: str, typ: str, obj: Obj) -> None:
        """A namespace being deleted, or a pod gone from one, brings a pass over that namespace."""
        meta = obj.get("metadata") or {}
        if plural == "namespaces":
            if meta.get("deletionTimestamp") and typ != "DELETED":
                self.mgr.enqueue(KIND, "", meta.get("name", ""))
            return
        ns = meta.get("namespace") or ""
        namespace = self.mgr.cache.get("namespaces", "", ns)
        if namespace is not None and namespace["metadata"].get("deletionTimestamp") and typ == "DELETED":
            self.mgr.enqueue(KIND, "", ns)

    # ---- the sync ----

    def sync(self, _: str, name: str) -> None:
        ns = self.mgr.api.get("namespaces", "", name)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        if (ns.get("status") or {}).get("phase") != "Terminating":
            ns = self.mgr.api.replace("namespaces", {**ns, "status": {**(ns.get("status") or {}),
                                                                    "phase": "Terminating"}}, status=True)
        if not (ns.get("spec") or {}).get("finalizers"):
            return  # finalized already
        estimate, errors = self.delete_all_content(ns)
        if errors:
            n = self.failures[name] = self.failures.get(name, 0) + 1
            self.mgr.enqueue(KIND, "", name, after=min(0.05 * 2 ** n, 30.0))
            return
        self.failures.pop(name, None)
        if estimate > 0:
            self.mgr.enqueue(KIND, "", name, after=float(estimate))
            return
        self.finalize(ns)

    def finalize(self, ns: Obj) -> None:
        """``finalizeNamespace``: ``spec.finalizers`` without ours (a sorted set, as upstream), through
        ``/finalize``; the API server deletes the namespace when none are left."""
        rest = sorted({f for f in ns["spec"].get("finalizers") or [] if f != FINALIZER})
        body = {**ns, "spec": {**ns["spec"], "finalizers": rest}}
        try:
            self.mgr.api.request("PUT", f"/api/v1/namespaces/{quote(ns['metadata']['name'], safe='')}/finalize",
                                 body=body)
        except ApiException as exc:
            if exc.status != 404:
                raise

    # ---- discovery ----

    def discover(self) -> tuple[list[Resource], list[str]]:
        """The namespaced resources of each group's preferred version that can be deleted, and the discovery
        failures (``group/version: error``)."""
        versions = ["v1"]
        errors: list[str] = []
        groups = self.mgr.api.request("GET", "/apis")
        for g in groups.get("groups") or []:
            preferred = (g.get("preferredVersion") or {}).get("groupVersion")
            if preferred:
                versions.append(preferred)
        out: list[Resource] = []
        for gv in versions:
            try:
                doc = self.mgr.api.request("GET", "/api/v1" if gv == "v1" else f"/apis/{gv}")
            except ApiException as exc:
                errors.append(f"{gv}: {exc.reason}")
                continue
            group, _, version = gv.rpartition("/")
            for r in doc.get("resources") or []:
                verbs = set(r.get("verbs") or [])
                if "/" in r.get("name", "") or not r.get("namespaced") or "delete" not in verbs:
                    continue
                out.append(Resource((group, version, r["name"]), "deletecollection" in verbs, "list" in verbs))
        return out, errors

    # ---- deletion ----

    def delete_all_content(self, ns: Obj) -> tuple[int, list[str]]:
        """``deleteAllContent``: (estimate in seconds, errors); the conditions written on the namespace."""
        name = ns["metadata"]["name"]
        now = rfc3339()
        failures: list[Obj] = []
        resources, discovery_errors = self.discover()
        if discovery_errors:
            failures.append(failure(
                "NamespaceDeletionDiscoveryFailure", "DiscoveryFailed",
                f"Discovery failed for some groups, {len(discovery_errors)} failing: unable to retrieve the complete "
                f"list of server APIs: {', '.join(sorted(discovery_errors))}", now))
        errors: list[str] = []
        estimate = 0
        remaining = Remaining()
        pods = next((r for r in resources if r.gvr == PODS), None)
        if pods is not None:
            left, est, err = self.delete_resource(pods, ns)
            estimate = max(estimate, est)
            if err:
                errors.append(f"failed to delete pods for namespace: {name}, err: {err}")
            if left > 0:  # the rest waits until the pods are gone (the conditions without the totals, as upstream)
                self._write_conditions(ns, failures + delete_failure(errors, now), now)
                return estimate, errors
        for r in resources:
            if r.gvr == PODS:
                continue
            left, est, err = self.delete_resource(r, ns, remaining)
            estimate = max(estimate, est)
            if err:
                errors.append(err)
        self._write_conditions(ns, failures + content_failures(remaining, now) + delete_failure(errors, now), now)
        return estimate, errors

    def delete_resource(self, r: Resource, ns: Obj, remaining: Remaining | None = None) -> tuple[int, int, str]:
        """``deleteAllContentForGroupVersionResource``: (instances left, estimate, error text or "")."""
        name = ns["metadata"]["name"]
        path = collection(r.gvr, name)
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        estimate = 0
        try:
            if r.gvr == PODS:
                pods = (self.mgr.api.request("GET", path).get("items")) or []
                estimate = pod_estimate(pods, ns["metadata"]["deletionTimestamp"], datetime.now(UTC))
            if r.deletecollection:
                self.mgr.api.request("DELETE", path, body=options)
            elif r.list:
                for item in self.mgr.api.request("GET", path).get("items") or []:
                    try:
                        self.mgr.api.request("DELETE", f"{path}/{quote(item['metadata']['name'], safe='')}",
                                             body=options)
                    except ApiException as exc:
                        if exc.status not in (404, 405):
                            raise
            if not r.list:
                return 0, estimate, ""
            items = self.mgr.api.request("GET", path).get("items") or []
        except ApiException as exc:
            if exc.status in (404, 405):
                return 0, estimate, ""
            return 0, estimate, f"{exc.status} {exc.reason}"
        if not items:
            return 0, 0, ""
        finalizers: dict[str, int] = {}
        for item in items:
            for f in (item.get("metadata") or {}).get("finalizers") or []:
                finalizers[f] = finalizers.get(f, 0) + 1
        target = remaining if remaining is not None else Remaining()
        target.by_resource[r.gvr] = len(items)
        for f, n in finalizers.items():
            target.by_finalizer[f] = target.by_finalizer.get(f, 0) + n
        if estimate:
            return len(items), estimate, ""
        if finalizers:
            return len(items), FINALIZER_ESTIMATE, ""
        return len(items), 0, (f"unexpected items still remain in namespace: {name} for gvr: "
                               f"{gvr_string(r.gvr)}")

    def _write_conditions(self, ns: Obj, failures: list[Obj], now: str) -> None:
        status = ns.get("status") or {}
        conditions, changed = conditions_after(status.get("conditions") or [], failures, now)
        if not changed:
            return
        try:
            out = self.mgr.api.replace("namespaces", {**ns, "status": {**status, "conditions": conditions}},
                                       status=True)
        except ApiException as exc:
            if exc.status in (404, 409):
                return  # gone, or changed meanwhile: the next pass writes them
            raise
        ns.update(out)
