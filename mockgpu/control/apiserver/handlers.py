"""The verbs on stored objects: create, get, list, update, patch, delete, deletecollection, bind.

Independent of HTTP: each method takes decoded input and returns the object (or raises ``StatusError``).
System metadata (uid, creationTimestamp, resourceVersion, generateName) is set here; kind-specific
defaulting and validation is ``validation.default_and_validate``. Objects with a status subresource keep
their status on a main-resource update and only change status through ``/status``, as upstream.
Writes that name their ``manager`` record it in ``metadata.managedFields`` (``managedfields.update``); a write
without one (server-side apply, which computed them already, and the server's own writes) keeps what it has.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.config.featuregates import DEFAULT as DEFAULT_GATES
from mockgpu.config.featuregates import FeatureGates
from mockgpu.control.apiserver import managedfields, quotaadmission, registry
from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.names import generate_name
from mockgpu.control.apiserver.registry.core import POD
from mockgpu.control.apiserver.registry.kind import Kind
from mockgpu.control.apiserver.store import Obj, Store
from mockgpu.control.apiserver.validation import check_decode, check_type_meta, default_and_validate

_META_SERVER_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")


def now_rfc3339(offset_s: float = 0) -> str:
    """Now (plus ``offset_s``, capped at about 3000 years so a huge grace period cannot overflow)."""
    offset_s = min(offset_s, 10**11)
    return rfc3339(datetime.now(UTC) + timedelta(seconds=offset_s))


@dataclass(frozen=True)
class DeleteOptions:
    grace_period: int | None = None
    uid: str | None = None  # preconditions
    resource_version: str | None = None
    dry_run: bool = False
    propagation: str | None = None  # Foreground, Background, Orphan; None: the resource's default


_GC_FINALIZER = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}


ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROOT_CA_DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
                       "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
                       "guaranteed across distributions of Kubernetes clusters.")


class ResourceAPI:
    """Verbs over one store; single-threaded (called on the server's event loop)."""

    def __init__(self, store: Store, root_ca: str | None = None, gates: FeatureGates = DEFAULT_GATES) -> None:
        self.store = store
        self.gates = gates  # the feature gates the server runs with (the fields of their kinds)
        self.root_ca = root_ca  # PEM published as kube-root-ca.crt in every namespace (None: not published)

    # ---- reads -------------------------------------------------------------------------------------------

    def get(self, info: Kind, ns: str, name: str) -> Obj:
        obj = self.store.get(info.plural, ns, name)
        if obj is None:
            raise st.not_found(info.plural, name, info.group)
        return obj

    def require_namespace(self, ns: str) -> None:
        if self.store.get("namespaces", "", ns) is None:
            raise st.not_found("namespaces", ns)

    # ---- create ------------------------------------------------------------------------------------------

    def create(self, info: Kind, ns: str, body: Obj, *, dry_run: bool = False, strict: bool = False,
               manager: str | None = None) -> Obj:
        obj = copy.deepcopy(body)
        check_type_meta(info.kind, obj)  # decoded before the server touches the metadata, as upstream
        check_decode(info.kind, obj, strict)
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise st.bad_request(f'{info.kind} in version "v1" cannot be handled as a {info.kind}: json: cannot '
                                 f"unmarshal into Go struct field {info.kind}.metadata of type object")
        for f in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(f, None)
        if not meta.get("name") and isinstance(meta.get("generateName"), str) and meta["generateName"]:
            for _ in range(8):  # upstream retries a generated name that is taken
                meta["name"] = generate_name(meta["generateName"])
                if self.store.get(info.plural, ns if info.namespaced else "", meta["name"]) is None:
                    break
        if info.namespaced:
            self.require_namespace(ns)
        uid = meta["uid"] = str(uuid.uuid4())  # before validation, as BeforeCreate: a Job's selector names it
        labels = None
        if info.admission is not None:  # the kind's strategy reads the namespace
            labels = ((self.store.get("namespaces", "", ns) or {}).get("metadata") or {}).get("labels") or {}
        obj = default_and_validate(info.kind, obj, namespace=ns if info.namespaced else None, strict=strict,
                                   namespace_labels=labels, store=self.store,
                                   admit=lambda o: quotaadmission.mutate(info, ns, o, self.store), gates=self.gates,
                                   track=_tracker(info, None, "", manager))
        meta = obj["metadata"]
        name = meta["name"]
        if self.store.get(info.plural, ns if info.namespaced else "", name) is not None:
            raise st.already_exists(info.plural, name, info.group)
        meta["uid"] = uid
        meta["creationTimestamp"] = now_rfc3339()
        charges = quotaadmission.validate(info, ns, obj, None, self.store)  # validating admission, last
        if dry_run:
            meta.pop("resourceVersion", None)  # upstream: a dry-run create has no version
            return obj
        quotaadmission.charge(self.store, charges)  # in the same step as the create: no await in between
        obj = self.store.create(info.plural, _ordered(obj))
        if info.lifecycle is not None and info.lifecycle.created is not None:
            info.lifecycle.created(self, name)
        return obj

    def populate_namespace(self, ns: str) -> None:
        """What kube-controller-manager puts in every namespace: the ``default`` ServiceAccount
        (serviceaccount-controller) and the ``kube-root-ca.crt`` ConfigMap (root-ca-certificate-publisher)."""
        if self.store.get("serviceaccounts", ns, "default") is None:
            sa = {"apiVersion": "v1", "kind": "ServiceAccount",
                  "metadata": {"name": "default", "namespace": ns, "uid": str(uuid.uuid4()),
                               "creationTimestamp": now_rfc3339()}}
            self.store.create("serviceaccounts", sa)
        if self.root_ca and self.store.get("configmaps", ns, ROOT_CA_CONFIGMAP) is None:
            self.store.create("configmaps", {
                "apiVersion": "v1", "kind": "ConfigMap", "data": {"ca.crt": self.root_ca},
                "metadata": {"name": ROOT_CA_CONFIGMAP, "namespace": ns, "uid": str(uuid.uuid4()),
                             "creationTimestamp": now_rfc3339(),
                             "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}}})

    # ---- update and patch --------------------------------------------------------------------------------

    def update(self, info: Kind, ns: str, name: str, body: Obj, *, sub: str | None = None,
               dry_run: bool = False, strict: bool = False, manager: str | None = None) -> Obj:
        """PUT: the whole object; a stale ``metadata.resourceVersion`` is a 409 Conflict."""
        old = self.get(info, ns, name)
        meta = body.get("metadata")
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        if meta.get("name") not in (None, "", name):
            raise st.bad_request(f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                                 f"({name})")
        if info.namespaced and meta.get("namespace") not in (None, "", ns):
            raise st.bad_request("the namespace of the provided object does not match the namespace sent on the "
                                 "request")
        check_type_meta(info.kind, body)  # the body is decoded before the store is asked (400 before 409)
        check_decode(info.kind, body, strict)
        rv = meta.get("resourceVersion")
        if rv not in (None, "") and str(rv) != old["metadata"]["resourceVersion"]:
            raise st.conflict(info.plural, name, info.group)
        return self._replace(info, old, body, sub=sub, dry_run=dry_run, strict=strict, manager=manager)

    def _replace(self, info: Kind, old: Obj, body: Obj, *, sub: str | None, dry_run: bool,
                 strict: bool = False, manager: str | None = None) -> Obj:
        new = copy.deepcopy(body)
        meta = new.setdefault("metadata", {})
        old_meta = old["metadata"]
        meta["name"] = old_meta["name"]
        if info.namespaced:
            meta["namespace"] = old_meta["namespace"]
        for f in _META_SERVER_FIELDS:
            if f in old_meta:
                meta[f] = old_meta[f]
            else:
                meta.pop(f, None)
        if info.has("status"):
            if sub == "status":  # status writes change status only (ResetObjectMetaForStatus)
                new = {**copy.deepcopy(old), "status": new.get("status", {})}
            else:
                new["status"] = copy.deepcopy(old.get("status", {}))
        meta = new["metadata"]
        meta["resourceVersion"] = old_meta["resourceVersion"]
        new = default_and_validate(info.kind, new, namespace=old_meta.get("namespace"), old=old, strict=strict,
                                   subresource=sub or "", store=self.store, gates=self.gates,
                                   track=_tracker(info, old, sub or "", manager))
        if new == old:  # a no-op update does not bump the resourceVersion, as upstream
            return old
        charges = quotaadmission.validate(info, meta.get("namespace") or "", new, old, self.store) if not sub else []
        if dry_run:
            return new
        quotaadmission.charge(self.store, charges)
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and _grace_done(new, info):
            return self.store.delete(info.plural, old)
        return self.store.update(info.plural, _ordered(new), old)

    def patched(self, info: Kind, ns: str, name: str, patched: Obj, *, sub: str | None = None,
                dry_run: bool = False, strict: bool = False, manager: str | None = None) -> Obj:
        """Store the result of applying a patch to the current object (the HTTP layer applies it)."""
        old = self.get(info, ns, name)
        meta = patched.get("metadata")
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        if meta.get("name") != name:
            raise st.bad_request(f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                                 f"({name})")
        rv = meta.get("resourceVersion")
        if rv not in (None, "") and str(rv) != old["metadata"]["resourceVersion"]:
            raise st.conflict(info.plural, name, info.group)
        return self._replace(info, old, patched, sub=sub, dry_run=dry_run, strict=strict, manager=manager)

    # ---- delete ------------------------------------------------------------------------------------------

    def delete(self, info: Kind, ns: str, name: str, opts: DeleteOptions) -> tuple[Obj, bool]:
        """(object, removed). Bound pods and objects with finalizers are only marked for deletion."""
        old = self.get(info, ns, name)
        meta = old["metadata"]
        # the preconditions as rest.BeforeDelete checks them first (its Conflict names the kind, not the resource)
        if opts.uid is not None and opts.uid != meta.get("uid"):
            raise st.conflict(info.kind, name, info.group, f"the UID in the precondition ({opts.uid}) does not match "
                              f"the UID in record ({meta.get('uid')}). The object might have been deleted and then "
                              "recreated")
        if opts.resource_version is not None and opts.resource_version != meta.get("resourceVersion"):
            raise st.conflict(info.kind, name, info.group, f"the ResourceVersion in the precondition "
                              f"({opts.resource_version}) does not match the ResourceVersion in record "
                              f"({meta.get('resourceVersion')}). The object might have been modified")
        lifecycle = info.lifecycle
        if lifecycle is not None and name in lifecycle.immortal:
            raise st.forbidden(resource=info.plural, name=name, reason=f"this {info.singular} may not be deleted")
        grace = self._grace(info, old, opts)
        policy = opts.propagation or info.gc_policy
        if info.gc_policy is not None and policy in _GC_FINALIZER:
            return self._delete_with_finalizer(info, old, _GC_FINALIZER[policy], opts.dry_run)
        if grace == 0 and not meta.get("finalizers"):
            if opts.dry_run:
                return old, True
            if lifecycle is not None and lifecycle.removing is not None:
                lifecycle.removing(self, name)
            return self.store.delete(info.plural, old), True
        current = meta.get("deletionGracePeriodSeconds")
        if meta.get("deletionTimestamp") and current is not None and current <= grace:
            return old, False  # already terminating at least as fast
        new = copy.deepcopy(old)
        new["metadata"]["deletionTimestamp"] = meta.get("deletionTimestamp") if current == grace else \
            now_rfc3339(grace)
        new["metadata"]["deletionGracePeriodSeconds"] = grace
        if lifecycle is not None and lifecycle.terminating is not None:
            lifecycle.terminating(new)
        if opts.dry_run:
            return new, False
        return self.store.update(info.plural, new, old), False

    def _delete_with_finalizer(self, info: Kind, old: Obj, finalizer: str, dry_run: bool) -> tuple[Obj, bool]:
        """Foreground or orphan deletion: the object stays, marked, with the finalizer the garbage collector
        removes once the dependents are deleted (foreground) or released (orphan)."""
        new = copy.deepcopy(old)
        meta = new["metadata"]
        finalizers = [f for f in meta.get("finalizers") or [] if f not in _GC_FINALIZER.values()]
        meta["finalizers"] = finalizers + [finalizer]
        meta.setdefault("deletionTimestamp", now_rfc3339())
        meta.setdefault("deletionGracePeriodSeconds", 0)
        if dry_run or new == old:
            return new, False
        return self.store.update(info.plural, new, old), False

    def _grace(self, info: Kind, obj: Obj, opts: DeleteOptions) -> int:
        """Upstream CheckGracefulDelete: the kind's rule (pods), else 0 (deleted at once)."""
        return info.grace_period(obj, opts.grace_period) if info.grace_period is not None else 0

    def delete_namespace_contents(self, ns: str) -> None:
        """Simplified namespace controller: everything in the namespace goes at once."""
        for plural in registry.stored_plurals():
            for obj in list(self.store.list(plural, ns)):
                self.store.delete(plural, obj)

    # ---- pods/binding ------------------------------------------------------------------------------------

    def bind(self, ns: str, name: str, binding: Obj) -> None:
        """``POST pods/<name>/binding``: set spec.nodeName once, and condition PodScheduled=True."""
        target = binding.get("target") if isinstance(binding, dict) else None
        if not isinstance(target, dict) or not target.get("name"):
            raise st.invalid("Binding", name, [("FieldValueRequired", "Required value", "target.name")])
        old = self.get(POD, ns, name)
        if old["metadata"].get("deletionTimestamp"):
            raise st.conflict("pods/binding", name, reason=f"pod {name} is being deleted, cannot be assigned to a "
                                                           "host")
        node = old.get("spec", {}).get("nodeName")
        if node:
            raise st.conflict("pods/binding", name, reason=f'pod {name} is already assigned to node "{node}"')
        new = copy.deepcopy(old)
        new["spec"]["nodeName"] = target["name"]
        conds = [c for c in new.setdefault("status", {}).get("conditions", []) if c.get("type") != "PodScheduled"]
        conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                      "lastTransitionTime": now_rfc3339()})
        new["status"]["conditions"] = conds
        annotations = (binding.get("metadata") or {}).get("annotations")
        if isinstance(annotations, dict):
            new["metadata"].setdefault("annotations", {}).update(annotations)
        self.store.update("pods", new, old)


def _tracker(info: Kind, old: Obj | None, sub: str, manager: str | None) -> Callable[[Obj, Obj], None] | None:
    """What records ``manager``'s write (``written``: the defaulted object) in the managedFields of ``obj`` (the
    object to store); None: nothing to record."""
    if manager is None:
        return None
    scope = managedfields.Scope(info.api_version, info.kind, sub, info.has("status"))

    def track(obj: Obj, written: Obj) -> None:
        entries = managedfields.update(scope, old, written, manager)
        meta = obj.setdefault("metadata", {})
        if entries:
            meta["managedFields"] = entries
        else:
            meta.pop("managedFields", None)
    return track


def _grace_done(obj: Obj, info: Kind) -> bool:
    return info.grace_period is None or not obj["metadata"].get("deletionGracePeriodSeconds")


_ORDER = ("apiVersion", "kind", "metadata", "spec")


def _ordered(obj: Obj) -> Obj:
    """Keys in upstream's print order: apiVersion, kind, metadata, spec, the rest, status last."""
    out = {k: obj[k] for k in _ORDER if k in obj}
    out.update({k: v for k, v in obj.items() if k not in out and k != "status"})
    if "status" in obj:
        out["status"] = obj["status"]
    return out
