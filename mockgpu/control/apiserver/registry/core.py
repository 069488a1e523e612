"""The core group (``/api/v1``): Pods, Nodes, Namespaces, Events, ConfigMaps, Secrets, ServiceAccounts, Bindings,
Services.

Upstream: ``pkg/registry/core/<kind>/strategy.go`` and ``storage/storage.go`` for each kind. The rules themselves
are in ``defaults`` (SetDefaults_*, admission defaults), ``corevalidation`` and ``podupdate`` (ValidatePod*,
ValidateNode, ...) and ``printers``; the records here say which apply to which kind.
"""

from __future__ import annotations

import copy
from typing import Any

from mockgpu.config.featuregates import GENERIC_WORKLOAD, FeatureGates
from mockgpu.control.apiserver import corevalidation, defaults, names, printers, secretstrategy, servicestrategy
from mockgpu.control.apiserver.podstatusvalidation import validate_pod_status
from mockgpu.control.apiserver.podupdate import validate_pod_update
from mockgpu.control.apiserver.registry import corequota
from mockgpu.control.apiserver.registry.kind import (
    ALL,
    CLUSTER_FIELDS,
    META_FIELDS,
    NO_COLLECTION,
    STATUS,
    Kind,
    Lifecycle,
    Obj,
    Subresource,
    field_path,
    on_every_write,
)
from mockgpu.control.apiserver.status import FieldError

GROUP_VERSION = "v1"
#: other kinds kube-apiserver's scheme knows in core/v1: a body of one decodes, then fails conversion
SCHEME_KINDS = frozenset({"Endpoints", "PersistentVolume", "PersistentVolumeClaim", "ReplicationController",
                          "PodTemplate", "ComponentStatus"})


def container_quantities(pod_spec: Any) -> list[dict[str, Any]]:
    """The quantity maps of a pod spec: each container's and init container's limits and requests."""
    maps: list[dict[str, Any]] = []
    for c in list(pod_spec.get("containers") or []) + list(pod_spec.get("initContainers") or []):
        res = (c.get("resources") or {}) if isinstance(c, dict) else {}
        maps += [res[p] for p in ("limits", "requests") if isinstance(res.get(p), dict)]
    return maps


# ---- pods (pkg/registry/core/pod) ------------------------------------------------------------------------------

def prepare_pod(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    """Defaults and admission defaults; on update the other half (spec or status) kept from ``old``."""
    if old is None:
        return defaults.default_pod(obj)
    obj = defaults.default_pod(obj, creating=False)
    if subresource == "status":
        obj["spec"] = copy.deepcopy(old.get("spec", {}))
    else:
        obj["status"] = copy.deepcopy(old.get("status", {}))
    return obj


def gated_pod_fields(obj: Obj, old: Obj | None, gates: FeatureGates) -> None:
    """``dropDisabledSchedulingGroup``: ``spec.schedulingGroup`` dropped without GenericWorkload, unless the old pod
    has one."""
    spec = obj.get("spec")
    in_use = old is not None and (old.get("spec") or {}).get("schedulingGroup") is not None
    if isinstance(spec, dict) and not gates.enabled(GENERIC_WORKLOAD) and not in_use:
        spec.pop("schedulingGroup", None)


def validate_pod(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidatePodCreate``, and on update ``ValidatePodUpdate``'s rules on what may change."""
    errs = corevalidation.validate_pod(obj)
    return errs + validate_pod_update(obj, old) if old is not None else errs


def validate_pod_status_update(obj: Obj, old: Obj) -> list[FieldError]:
    """A ``/status`` update: the pod's rules as before (its claim statuses among them), then
    ``allocatedResourcesStatus`` (``ValidatePodStatusUpdate``)."""
    return validate_pod(obj, old) + validate_pod_status(obj, old)


def pod_grace_period(pod: Obj, requested: int | None) -> int:
    """``CheckGracefulDelete``: only bound, non-terminal pods get a grace period (the request's, a negative one
    meaning 1 s; else the one already set; else the spec's, 30 s by default)."""
    spec, status = pod.get("spec", {}), pod.get("status", {})
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return 1 if requested < 0 else requested
    current = pod["metadata"].get("deletionGracePeriodSeconds")
    if current is not None:
        return int(current)
    return int(spec.get("terminationGracePeriodSeconds", 30))


POD_FIELDS = {**META_FIELDS, "spec.nodeName": field_path("spec", "nodeName"),
              "spec.restartPolicy": field_path("spec", "restartPolicy"),
              "spec.schedulerName": field_path("spec", "schedulerName"),
              "spec.serviceAccountName": field_path("spec", "serviceAccountName"),
              "spec.hostNetwork": lambda o: "true" if (o.get("spec") or {}).get("hostNetwork") else "false",
              "status.phase": field_path("status", "phase"), "status.podIP": field_path("status", "podIP"),
              "status.nominatedNodeName": field_path("status", "nominatedNodeName")}

POD = Kind("pods", "pod", "Pod", True, ALL, ("po",), ("all",), (
    Subresource("binding", "Binding", ("create",)),
    Subresource("eviction", "Eviction", ("create",), "policy", "v1"),
    Subresource("log", "Pod", ("get",)),
    Subresource("status", "Pod", STATUS),
), connect=("attach", "exec", "portforward", "proxy"),  # upstream's connect handlers: streams via the kubelet
    prepare=prepare_pod, defaults=lambda o: defaults.default_pod(o, creating=False), gated_fields=gated_pod_fields,
    validate=validate_pod,
    validate_status=validate_pod_status_update,
    quantities=lambda o: container_quantities(o.get("spec") or {}),
    returns_deleted=True, grace_period=pod_grace_period, printer=printers.POD, field_labels=POD_FIELDS,
    model="V1Pod", limit_ranged=True)


# ---- nodes (pkg/registry/core/node) ----------------------------------------------------------------------------

def prepare_node(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    """``SetDefaults_NodeStatus``; a main-resource update keeps the stored status."""
    obj = defaults.default_node(obj)
    if old is not None and subresource != "status":
        obj["status"] = copy.deepcopy(old.get("status", {}))
    return obj


def node_quantities(obj: Obj) -> list[dict[str, Any]]:
    status = obj.get("status") or {}
    return [status[p] for p in ("capacity", "allocatable") if isinstance(status.get(p), dict)]


NODE = Kind("nodes", "node", "Node", False, ALL, ("no",), (), (Subresource("status", "Node", STATUS),),
            prepare=prepare_node, validate=on_every_write(corevalidation.validate_node), quantities=node_quantities,
            printer=printers.NODE, model="V1Node", field_labels={
                **CLUSTER_FIELDS,
                "spec.unschedulable": lambda o: "true" if (o.get("spec") or {}).get("unschedulable") else "false"})


# ---- namespaces (pkg/registry/core/namespace) ------------------------------------------------------------------

def _terminating(ns: Obj) -> None:
    ns.setdefault("status", {})["phase"] = "Terminating"


#: what every namespace holds and gives up with it (kube-controller-manager's serviceaccount and root-ca publisher
#: controllers, and its namespace controller, simplified: the contents go at once), and the namespaces that
#: NamespaceLifecycle admission keeps
NAMESPACE_LIFECYCLE = Lifecycle(immortal=("default", "kube-system", "kube-public"),
                                created=lambda api, name: api.populate_namespace(name),
                                terminating=_terminating,
                                removing=lambda api, name: api.delete_namespace_contents(name))

NAMESPACE = Kind("namespaces", "namespace", "Namespace", False, NO_COLLECTION, ("ns",), (),
                 (Subresource("status", "Namespace", STATUS),),
                 name_rule=names.name_is_dns_label, lifecycle=NAMESPACE_LIFECYCLE,
                 prepare=lambda obj, old, subresource: defaults.default_namespace(obj), returns_deleted=True,
                 printer=printers.NAMESPACE, field_labels={**CLUSTER_FIELDS, "status.phase": field_path("status",
                                                                                                        "phase")},
                 model="V1Namespace")


# ---- the rest ----------------------------------------------------------------------------------------------------

EVENT_MICRO_TIMES = (("eventTime",), ("series", "lastObservedTime"))
EVENT_FIELDS = {**META_FIELDS,
                **{f"involvedObject.{k}": field_path("involvedObject", k)
                   for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
                "reason": field_path("reason"), "reportingComponent": field_path("reportingComponent"),
                "source": field_path("source", "component"), "type": field_path("type")}

EVENT = Kind("events", "event", "Event", True, ALL, ("ev",), validate=on_every_write(corevalidation.validate_event),
             micro_times=EVENT_MICRO_TIMES, printer=printers.EVENT, field_labels=EVENT_FIELDS, model="CoreV1Event")
CONFIGMAP = Kind("configmaps", "configmap", "ConfigMap", True, ALL, ("cm",),
                 validate=on_every_write(corevalidation.validate_configmap), printer=printers.CONFIGMAP,
                 model="V1ConfigMap")
# pkg/registry/core/secret: stringData merged into data, the type's required keys (``secretstrategy``)
SECRET = Kind("secrets", "secret", "Secret", True, ALL, prepare=secretstrategy.prepare_secret,
              validate=secretstrategy.validate_secret, printer=printers.SECRET,
              field_labels={**META_FIELDS, "type": field_path("type")}, model="V1Secret")
SERVICEACCOUNT = Kind("serviceaccounts", "serviceaccount", "ServiceAccount", True, ALL, ("sa",),
                      printer=printers.SERVICEACCOUNT, model="V1ServiceAccount")
# the legacy ``bindings`` resource: POST binds the pod it names, as ``pods/<name>/binding`` does (BindingREST)
BINDING = Kind("bindings", "binding", "Binding", True, ("create",), stored=False, route_to=("pods", "binding"),
               name_rule=names.path_segment_name,
               validate=on_every_write(corevalidation.validate_binding), model="V1Binding")
# pkg/registry/core/service: no deletecollection; cluster IPs and node ports allocated (``servicestrategy``); the
# ``kubernetes`` Service of ``default`` kept by the server (``services``)
SERVICE = Kind("services", "service", "Service", True, NO_COLLECTION, ("svc",), ("all",),
               subresources=(Subresource("status", "Service", STATUS),),
               name_rule=names.name_is_dns_label, prepare=servicestrategy.prepare_service,
               validate=servicestrategy.validate_service, validate_status=servicestrategy.validate_service_status,
               allocate=servicestrategy.allocate, returns_deleted=True, printer=printers.SERVICE,
               field_labels={**META_FIELDS, "spec.clusterIP": field_path("spec", "clusterIP"),
                             "spec.type": field_path("spec", "type")},
               model="V1Service")

KINDS = (POD, NODE, NAMESPACE, EVENT, CONFIGMAP, SECRET, SERVICEACCOUNT, BINDING, SERVICE, *corequota.KINDS)
