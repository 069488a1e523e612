"""The printers of the served kinds, as kube-apiserver's ``pkg/printers/internalversion`` defines them.

Columns, cell values and the status logic follow upstream for pods, nodes, events, namespaces, configmaps,
serviceaccounts, services, leases, deployments, replicasets, jobs, daemonsets, cronjobs, statefulsets, and
resource.k8s.io's deviceclasses, resourceclaims, resourceclaimtemplates and resourceslices; each kind's record
(``registry``) names its printer (columns, row function). Like the real server every table is generated
"wide", and kubectl hides priority-1 columns unless ``-o wide``. Ages are ``HumanDuration`` texts measured from
a ``now`` the caller passes. The Table around the rows is ``tables``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from mockgpu.apimachinery.selectors import selector_string
from mockgpu.control.apiserver import flowcontrol

_NAME_DOC = ("Name must be unique within a namespace. Is required when creating resources, although some "
             "resources may allow a client to request the generation of an appropriate name automatically. Name is "
             "primarily intended for creation idempotence and configuration definition. Cannot be updated. More "
             "info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")
_AGE_DOC = ("CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
            "guaranteed to be set in happens-before order across separate operations. Clients may not set this "
            "value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for "
            "lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
            "api-conventions.md#metadata")


def _col(name: str, description: str = "", priority: int = 0, type_: str = "string", fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


NAME, AGE = _col("Name", _NAME_DOC, fmt="name"), _col("Age", _AGE_DOC)


def human_duration(seconds: float) -> str:
    """apimachinery ``duration.HumanDuration``: 5s, 3m2s, 15m, 5h3m, 30h, 2d3h, 40d, 2y10d."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (``2026-01-02T03:04:05Z``, optionally with fractions) or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: ``<unknown>`` for an absent time."""
    ts = parse_time(value)
    return "<unknown>" if ts is None else human_duration((now - ts).total_seconds())


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


# ---- pods --------------------------------------------------------------------------------------------------

POD_COLUMNS = [
    NAME, _col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", "The aggregate status of the containers in this pod."),
    _col("Restarts", "The number of times the containers in this pod have been restarted and when the last "
                     "container in this pod has restarted."), AGE,
    _col("IP", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet "
               "allocated.", 1),
    _col("Node", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for "
                 "scheduling by the scheduler defined in schedulerName.", 1),
    _col("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node.", 1),
    _col("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness.", 1),
]


def _terminated_reason(term: dict[str, Any], prefix: str = "") -> str:
    if term.get("reason"):
        return prefix + term["reason"]
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def pod_status_text(pod: dict[str, Any]) -> tuple[str, int, int, int, datetime | None]:
    """(STATUS, ready containers, total containers, restarts, last restart) as kubectl's printer computes them."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    conditions = status.get("conditions") or []
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conditions):
        reason = "SchedulingGated"
    total, ready, restarts, last = len(spec.get("containers") or []), 0, 0, None
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total += sum(1 for c in init_specs.values() if c.get("restartPolicy") == "Always")
    initializing = False
    n_init = len(spec.get("initContainers") or [])
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        restarts += int(cs.get("restartCount") or 0)
        state = cs.get("state") or {}
        term, wait = state.get("terminated"), state.get("waiting")
        sidecar = (init_specs.get(cs.get("name")) or {}).get("restartPolicy") == "Always"
        if term and term.get("exitCode", 0) == 0:
            continue
        if sidecar and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if term:
            reason = _terminated_reason(term, "Init:")
        elif wait and wait.get("reason") and wait["reason"] != "PodInitializing":
            reason = "Init:" + wait["reason"]
        else:
            reason = f"Init:{i}/{n_init}"
        initializing = True
        break
    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions)
    if not initializing or initialized:
        restarts, has_running = 0, False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            last_term = (cs.get("lastState") or {}).get("terminated") or {}
            finished = parse_time(last_term.get("finishedAt"))
            if finished and (last is None or finished > last):
                last = finished
            state = cs.get("state") or {}
            wait, term = state.get("waiting") or {}, state.get("terminated")
            if wait.get("reason"):
                reason = wait["reason"]
            elif term is not None:
                reason = _terminated_reason(term)
            elif cs.get("ready") and state.get("running") is not None:
                has_running, ready = True, ready + 1
        if reason == "Completed" and has_running:
            reason = "Running" if any(c.get("type") == "Ready" for c in conditions) else "NotReady"
    if _meta(pod).get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"
    return reason, ready, total, restarts, last


def pod_row(pod: dict[str, Any], now: datetime) -> dict[str, Any]:
    reason, ready, total, restarts, last = pod_status_text(pod)
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    restarts_text = f"{restarts} ({human_duration((now - last).total_seconds())} ago)" if restarts and last \
        else str(restarts)
    ips = status.get("podIPs") or []
    ip = (ips[0].get("ip") if ips else status.get("podIP")) or "<none>"
    gates_text = "<none>"
    gates = spec.get("readinessGates") or []
    if gates:
        conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        gates_text = f"{sum(1 for g in gates if conds.get(g.get('conditionType')) == 'True')}/{len(gates)}"
    row: dict[str, Any] = {"cells": [
        _meta(pod).get("name", ""), f"{ready}/{total}", reason, restarts_text,
        since(_meta(pod).get("creationTimestamp"), now), ip, spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>", gates_text]}
    phase = status.get("phase")
    if phase in ("Succeeded", "Failed"):
        row["conditions"] = [{"type": "Completed", "status": "True", "reason": phase,
                              "message": "The pod has completed successfully." if phase == "Succeeded"
                              else "The pod failed."}]
    return row


# ---- nodes ------------------------------------------------------------------------------------------------

NODE_COLUMNS = [
    NAME, _col("Status", "The status of the node"), _col("Roles", "The roles of the node"), AGE,
    _col("Version", "Kubelet Version reported by the node."),
    _col("Internal-IP", "List of addresses reachable to the node. Queried from cloud provider, if available.", 1),
    _col("External-IP", "List of addresses reachable to the node. Queried from cloud provider, if available.", 1),
    _col("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", 1),
    _col("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1),
    _col("Container-Runtime", "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
                              "containerd://1.4.2).", 1),
]


def node_roles(labels: dict[str, str]) -> list[str]:
    roles = set()
    for key, value in labels.items():
        if key.startswith("node-role.kubernetes.io/"):
            roles.add(key.split("/", 1)[1])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return sorted(r for r in roles if r)


def node_row(node: dict[str, Any], now: datetime) -> dict[str, Any]:
    status, spec = node.get("status") or {}, node.get("spec") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    parts = ["Unknown"] if ready is None else ["Ready" if ready.get("status") == "True" else "NotReady"]
    if spec.get("unschedulable"):
        parts.append("SchedulingDisabled")
    info = status.get("nodeInfo") or {}

    def addr(kind: str) -> str:
        return next((a.get("address") for a in status.get("addresses") or [] if a.get("type") == kind), "<none>")
    return {"cells": [
        _meta(node).get("name", ""), ",".join(parts), ",".join(node_roles(_meta(node).get("labels") or {})) or "<none>",
        since(_meta(node).get("creationTimestamp"), now), info.get("kubeletVersion", ""),
        addr("InternalIP"), addr("ExternalIP"), info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>", info.get("containerRuntimeVersion") or "<unknown>"]}


# ---- events, namespaces, configmaps, serviceaccounts ----------------------------------------------------------

EVENT_COLUMNS = [
    _col("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    _col("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    _col("Reason", "This should be a short, machine understandable string that gives the reason for the "
                   "transition into the object's current status."),
    _col("Object", "The object that this event is about."),
    _col("Subobject", "If referring to a piece of an object instead of an entire object, this string should "
                      "contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].",
         1),
    _col("Source", "The component reporting this event. Should be a short machine understandable string.", 1),
    _col("Message", "A human-readable description of the status of this operation."),
    _col("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)", 1),
    _col("Count", "The number of times this event has occurred.", 1),
    _col("Name", _NAME_DOC, 1, fmt="name"),
]


def event_row(ev: dict[str, Any], now: datetime) -> dict[str, Any]:
    first = since(ev.get("firstTimestamp"), now) if ev.get("firstTimestamp") else since(ev.get("eventTime"), now)
    last = since(ev.get("lastTimestamp"), now) if ev.get("lastTimestamp") else first
    count = ev.get("count") or 0
    series = ev.get("series")
    if series:
        last, count = since(series.get("lastObservedTime"), now), series.get("count") or 0
    elif count == 0:
        count = 1
    obj = ev.get("involvedObject") or {}
    kind = str(obj.get("kind", "")).lower()
    target = f"{kind}/{obj['name']}" if obj.get("name") else kind
    src = ev.get("source") or {}
    if src.get("component"):
        source = src["component"] + (f", {src['host']}" if src.get("host") else "")
    else:
        source = ev.get("reportingComponent") or ""
        if ev.get("reportingInstance"):
            source += f", {ev['reportingInstance']}"
    return {"cells": [last, ev.get("type", ""), ev.get("reason", ""), target, obj.get("fieldPath", ""), source,
                      str(ev.get("message", "")).strip(), first, int(count), _meta(ev).get("name", "")]}


NAMESPACE_COLUMNS = [NAME, _col("Status", "The status of the namespace"), AGE]
CONFIGMAP_COLUMNS = [NAME, _col("Data", "Data contains the configuration data. Each key must consist of "
                                        "alphanumeric characters, '-', '_' or '.'."), AGE]
_QUEUING_DOC = {
    "Queues": "`queues` is the number of queues for this priority level. The queues exist independently at each "
              "apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus "
              "makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value "
              "of 64.",
    "HandSize": "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  "
                "When enqueuing a request at this priority level the request's flow identifier (a string pair) is "
                "hashed and the hash value is used to shuffle the list of queues and deal a hand of the size "
                "specified here.  The request is put into one of the shortest queues in that hand. `handSize` must "
                "be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not "
                "saturate most of the queues).  See the user-facing documentation for more extensive guidance on "
                "setting this field.  This field has a default value of 8.",
    "QueueLengthLimit": "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue "
                        "of this priority level at a time; excess requests are rejected.  This value must be "
                        "positive.  If not specified, it will be defaulted to 50."}
FLOWSCHEMA_COLUMNS = [
    NAME, _col("PriorityLevel", "`name` is the name of the priority level configuration being referenced Required."),
    _col("MatchingPrecedence", "`matchingPrecedence` is used to choose among the FlowSchemas that match a given "
                               "request. The chosen FlowSchema is among those with the numerically lowest (which we "
                               "take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must "
                               "be ranged in [1,10000]. Note that if the precedence is not specified, it will be set "
                               "to 1000 as default."),
    _col("DistinguisherMethod", "`distinguisherMethod` defines how to compute the flow distinguisher for requests "
                                "that match this schema. `nil` specifies that the distinguisher is disabled and thus "
                                "will always be the empty string."),
    AGE, _col("MissingPL", "references a broken or non-existent PriorityLevelConfiguration")]
PRIORITYLEVEL_COLUMNS = [
    NAME, _col("Type", "`type` indicates whether this priority level is subject to limitation on request execution.  "
                       "A value of `\"Exempt\"` means that requests of this priority level are not subject to a "
                       "limit (and thus are never queued) and do not detract from the capacity made available to "
                       "other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority "
                       "level _are_ subject to limits and (b) some of the server's limited capacity is made available "
                       "exclusively to this priority level. Required."),
    _col("NominalConcurrencyShares",
         "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) "
         "of this level. This is the number of execution seats available at this priority level. This is used both "
         "for requests dispatched from this priority level as well as requests dispatched from other priority levels "
         "borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited "
         "priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) "
         "sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the "
         "expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\n"
         "Setting this field to zero supports the construction of a \"jail\" for this priority level that is used to "
         "hold some request(s)"),
    *(_col(name, doc) for name, doc in _QUEUING_DOC.items()), AGE]
SECRET_COLUMNS = [
    NAME, _col("Type", "Used to facilitate programmatic handling of secret data. More info: "
                       "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
    _col("Data", "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or "
                 "'.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary "
                 "(possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4"),
    AGE]
SERVICEACCOUNT_COLUMNS = [NAME, _col("Secrets", "Secrets is a list of the secrets in the same namespace that pods "
                                                "running using this ServiceAccount are allowed to use."), AGE]
SERVICE_COLUMNS = [
    NAME, _col("Type", "type determines how the Service is exposed. Defaults to ClusterIP."),
    _col("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned randomly."),
    _col("External-IP", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept "
                        "traffic for this service."),
    _col("Port(s)", "The list of ports that are exposed by this service."), AGE,
    _col("Selector", "Route service traffic to pods with label keys and values matching this selector.", 1)]


def _service_ports(ports: list[dict[str, Any]]) -> str:
    """upstream ``makePortString``: 443/TCP, with the node port for NodePort services (80:30080/TCP)."""
    out = []
    for p in ports:
        proto = p.get("protocol") or "TCP"
        out.append(f"{p.get('port')}:{p['nodePort']}/{proto}" if p.get("nodePort") else f"{p.get('port')}/{proto}")
    return ",".join(out) or "<none>"


def service_row(svc: dict[str, Any], now: datetime) -> dict[str, Any]:
    spec = svc.get("spec") or {}
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    if spec.get("type") == "ExternalName":  # getServiceExternalIP
        external = spec.get("externalName") or ""
    elif spec.get("type") == "LoadBalancer":
        lb = [i.get("ip") or i.get("hostname", "") for i in ingress]
        external = ",".join(lb + list(spec.get("externalIPs") or [])) or "<pending>"
    else:
        external = ",".join(spec.get("externalIPs") or []) or "<none>"
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items())) or "<none>"
    return {"cells": [_meta(svc).get("name", ""), spec.get("type", ""), spec.get("clusterIP") or "<none>", external,
                      _service_ports(spec.get("ports") or []), since(_meta(svc).get("creationTimestamp"), now),
                      selector]}


# ---- apps/v1 and batch/v1 -----------------------------------------------------------------------------------

_CONTAINERS = _col("Containers", "Names of each container in the template.", 1)
_IMAGES = _col("Images", "Images referenced by each container in the template.", 1)
DEPLOYMENT_COLUMNS = [
    NAME, _col("Ready", "Number of the pod with ready state"),
    _col("Up-to-date", "Total number of non-terminated pods targeted by this deployment that have the desired "
                       "template spec."),
    _col("Available", "Total number of available pods (ready for at least minReadySeconds) targeted by this "
                      "deployment."), AGE, _CONTAINERS, _IMAGES,
    _col("Selector", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones "
                     "affected by this deployment. It must match the pod template's labels.", 1)]
REPLICASET_COLUMNS = [
    NAME, _col("Desired", "Replicas is the number of desired replicas. This is a pointer to distinguish between "
                          "explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/"
                          "workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller",
               type_="integer"),
    _col("Current", "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/"
                    "concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller",
         type_="integer"),
    _col("Ready", "readyReplicas is the number of pods targeted by this ReplicaSet with a Ready Condition.",
         type_="integer"), AGE, _CONTAINERS, _IMAGES,
    _col("Selector", "Selector is a label query over pods that should match the replica count. Label keys and values "
                     "that must match in order to be controlled by this replica set. It must match the pod template's "
                     "labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"
                     "#label-selectors", 1)]
JOB_COLUMNS = [
    NAME, _col("Status", "Status of the job."),
    _col("Completions", "The number of pods which reached phase Succeeded. The value increases monotonically for a "
                        "given spec. However, it may decrease in reaction to scale down of elastic indexed jobs."),
    _col("Duration", "Time required to complete the job."), AGE, _CONTAINERS, _IMAGES,
    _col("Selector", "A label query over pods that should match the pod count. Normally, the system sets this field "
                     "for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"
                     "#label-selectors", 1)]


def _template_cells(obj: dict[str, Any]) -> list[str]:
    """Containers, Images and Selector as upstream's ``layoutContainerCells`` and selector printing."""
    spec = obj.get("spec") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers),
            selector_string(spec.get("selector"))]


def deployment_row(obj: dict[str, Any], now: datetime) -> dict[str, Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {"cells": [_meta(obj).get("name", ""),
                      f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
                      int(status.get("updatedReplicas") or 0), int(status.get("availableReplicas") or 0),
                      since(_meta(obj).get("creationTimestamp"), now), *_template_cells(obj)]}


def replicaset_row(obj: dict[str, Any], now: datetime) -> dict[str, Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {"cells": [_meta(obj).get("name", ""), int(spec.get("replicas") or 0), int(status.get("replicas") or 0),
                      int(status.get("readyReplicas") or 0), since(_meta(obj).get("creationTimestamp"), now),
                      *_template_cells(obj)]}


def format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: ``k=v`` pairs sorted by key, ``<none>`` when empty."""
    if not isinstance(labels, dict) or not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _containers_images(pod_spec: Any) -> list[str]:
    containers = (pod_spec.get("containers") if isinstance(pod_spec, dict) else None) or []
    return [",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)]


REPLICATIONCONTROLLER_COLUMNS = [
    NAME, _col("Desired", "Replicas is the number of desired replicas. This is a pointer to distinguish between "
                          "explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/"
                          "workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
               type_="integer"),
    _col("Current", "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/"
                    "concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
         type_="integer"),
    _col("Ready", "The number of ready replicas for this replication controller.", type_="integer"), AGE,
    _CONTAINERS, _IMAGES,
    _col("Selector", "Selector is a label query over pods that should match the Replicas count. If Selector is empty, "
                     "it is defaulted to the labels present on the Pod template. Label keys and values that must "
                     "match in order to be controlled by this replication controller, if empty defaulted to labels "
                     "on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/"
                     "labels/#label-selectors", 1)]
PODTEMPLATE_COLUMNS = [NAME, _col("Containers", "Names of each container in the template."),
                       _col("Images", "Images referenced by each container in the template."),
                       _col("Pod Labels", "The labels for the pod template.")]


def replicationcontroller_row(obj: dict[str, Any], now: datetime) -> dict[str, Any]:
    """``printReplicationController``."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    template = spec.get("template") or {}
    return {"cells": [_meta(obj).get("name", ""), int(spec.get("replicas") or 0), int(status.get("replicas") or 0),
                      int(status.get("readyReplicas") or 0), since(_meta(obj).get("creationTimestamp"), now),
                      *_containers_images(template.get("spec")), format_labels(spec.get("selector"))]}


def podtemplate_row(obj: dict[str, Any], now: datetime) -> dict[str, Any]:
    """``printPodTemplate``."""
    template = obj.get("template") or {}
    return {"cells": [_meta(obj).get("name", ""), *_containers_images(template.get("spec")),
                      format_labels((template.get("metadata") or {}).get("labels"))]}


def job_status_text(job: dict[str, Any]) -> str:
    """upstream ``printJob``'s STATUS: the first true of Complete, Failed, Terminating, Suspended, FailureTarget,
    SuccessCriteriaMet, else Running."""
    true = {c.get("type") for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
    if "Complete" in true:
        return "Complete"
    if "Failed" in true:
        return "Failed"
    if _meta(job).get("deletionTimestamp"):
        return "Terminating"
    for cond in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if cond in true:
            return cond
    return "Running"


def job_row(job: dict[str, Any], now: datetime) -> dict[str, Any]:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif int(spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    duration = "" if start is None else human_duration(((end or now) - start).total_seconds())
    return {"cells": [_meta(job).get("name", ""), job_status_text(job), completions, duration,
                      since(_meta(job).get("creationTimestamp"), now), *_template_cells(job)]}


_DS_DOC = "More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"
DAEMONSET_COLUMNS = [
    NAME,
    _col("Desired", "The total number of nodes that should be running the daemon pod (including nodes correctly "
                    f"running the daemon pod). {_DS_DOC}", type_="integer"),
    _col("Current", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon "
                    f"pod. {_DS_DOC}", type_="integer"),
    _col("Ready", "numberReady is the number of nodes that should be running the daemon pod and have one or more of "
                  "the daemon pod running with a Ready Condition.", type_="integer"),
    _col("Up-to-date", "The total number of nodes that are running updated daemon pod", type_="integer"),
    _col("Available", "The number of nodes that should be running the daemon pod and have one or more of the daemon "
                      "pod running and available (ready for at least spec.minReadySeconds)", type_="integer"),
    _col("Node Selector", "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which "
                          "must match a node's labels for the pod to be scheduled on that node. More info: "
                          "https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"),
    AGE, _CONTAINERS, _IMAGES,
    _col("Selector", "A label query over pods that are managed by the daemon set. Must match in order to be "
                     "controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/"
                     "concepts/overview/working-with-objects/labels/#label-selectors", 1)]
CRONJOB_COLUMNS = [
    NAME, _col("Schedule", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    _col("Timezone", "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/"
                     "List_of_tz_database_time_zones. If not specified, this will default to the time zone of the "
                     "kube-controller-manager process. The set of valid time zone names and the time zone offset is "
                     "loaded from the system-wide time zone database by the API server during CronJob validation and "
                     "the controller manager during execution. If no system-wide time zone database can be found a "
                     "bundled version of the database is used instead. If the time zone name becomes invalid during "
                     "the lifetime of a CronJob or due to a change in host configuration, the controller will stop "
                     "creating new new Jobs and will create a system event with the reason UnknownTimeZone. More "
                     "information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/"
                     "cron-jobs/#time-zones"),
    _col("Suspend", "This flag tells the controller to suspend subsequent executions, it does not apply to already "
                    "started executions.  Defaults to false.", type_="boolean"),
    _col("Active", "A list of pointers to currently running jobs.", type_="integer"),
    _col("Last Schedule", "Information when was the last time the job was successfully scheduled."),
    AGE, _CONTAINERS, _IMAGES, JOB_COLUMNS[-1]]


STATEFULSET_COLUMNS = [NAME, _col("Ready", "Number of the pod with ready state"), AGE, _CONTAINERS, _IMAGES]


def statefulset_row(obj: dict[str, Any], now: datetime) -> dict[str, Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images, _ = _template_cells(obj)
    return {"cells": [_meta(obj).get("name", ""),
                      f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
                      since(_meta(obj).get("creationTimestamp"), now), names, images]}


def daemonset_row(obj: dict[str, Any], now: datetime) -> dict[str, Any]:
    status = obj.get("status") or {}
    node_selector = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    counts = [int(status.get(k) or 0) for k in ("desiredNumberScheduled", "currentNumberScheduled", "numberReady",
                                                 "updatedNumberScheduled", "numberAvailable")]
    selector = ",".join(f"{k}={v}" for k, v in sorted(node_selector.items())) or "<none>"
    return {"cells": [_meta(obj).get("name", ""), *counts, selector, since(_meta(obj).get("creationTimestamp"), now),
                      *_template_cells(obj)]}


def cronjob_row(obj: dict[str, Any], now: datetime) -> dict[str, Any]:
    """upstream ``printCronJob``: the Job template's containers and selector in the wide columns."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    last = status.get("lastScheduleTime")
    suspend = spec.get("suspend")
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images, selector = _template_cells({"spec": job_spec})
    return {"cells": [_meta(obj).get("name", ""), spec.get("schedule", ""), spec.get("timeZone") or "<none>",
                      "<unset>" if suspend is None else ("True" if suspend else "False"),
                      len(status.get("active") or []), since(last, now) if last else "<none>",
                      since(_meta(obj).get("creationTimestamp"), now), names, images, selector or "<none>"]}


LEASE_COLUMNS = [NAME, _col("Holder", "holderIdentity contains the identity of the holder of a current lease."),
                 AGE]
DEFAULT_COLUMNS = [NAME, _col("Created At", _AGE_DOC, type_="date")]
WORKLOAD_COLUMNS = [NAME, AGE]
PODGROUP_COLUMNS = [
    NAME, _col("Policy", "schedulingPolicy defines the scheduling policy for this instance of the PodGroup. "
                         "Controllers are expected to fill this field by copying it from a PodGroupTemplate."),
    _col("Workload", "Name of the referenced Workload object"), _col("Status", "Status of the PodGroup"), AGE]
CLAIM_COLUMNS = [NAME, _col("State", "A summary of the current state (allocated, pending, reserved, etc.)."), AGE]
SLICE_COLUMNS = [NAME, _col("Node", (
    "NodeName identifies the node which provides the resources in this pool. A field selector can be used to list "
    "only ResourceSlice objects belonging to a certain node.\n\nThis field can be used to limit access from nodes to "
    "ResourceSlices with the same node name. It also indicates to autoscalers that adding new nodes of the same type "
    "as some old node might also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, "
    "and PerDeviceNodeSelection must be set. This field is immutable.")), _col("Driver", (
        "Driver identifies the DRA driver providing the capacity information. A field selector can be used to list "
        "only ResourceSlice objects with a certain driver name.\n\nMust be a DNS subdomain and should end with a DNS "
        "domain owned by the vendor of the driver. It should use only lower case characters. This field is "
        "immutable.")), _col("Pool", (
            "Name is used to identify the pool. For node-local devices, this is often the node name, but this is not "
            "required. A field selector can be used to list only ResourceSlice objects belonging to a certain pool."
            "\n\nIt must not be longer than 253 characters and must consist of one or more DNS sub-domains separated "
            "by slashes. This field is immutable.")), AGE]


_TAINT_EFFECT_DOC = ("The effect of the taint on claims that do not tolerate the taint and through such claims on the "
                     "pods using them.\n\nValid effects are None, NoSchedule and NoExecute. PreferNoSchedule as used "
                     "for nodes is not valid here. More effects may get added in the future. Consumers must treat "
                     "unknown effects like None.")
_TAINT_TIME_DOC = ("TimeAdded represents the time at which the taint was added or (only in a DeviceTaintRule) the "
                   "effect was modified. Added automatically during create or update if not set.\n\nIn addition, in "
                   "a DeviceTaintRule a value provided during an update gets replaced with the current time if the "
                   "provided value is the same as the old one and the new effect is different. Changing the key "
                   "and/or value while keeping the effect unchanged is possible and does not update the time stamp "
                   "because the eviction which uses it is either already started (NoExecute) or not started yet "
                   "(NoEffect, NoSchedule).")
#: upstream ``deviceTaintColumnDefinitions``: the taint, not the selector
DEVICETAINTRULE_COLUMNS = [NAME, _col("Key", "The taint key to be applied to a device. Must be a label name."),
                           _col("Value", "The taint value corresponding to the taint key. Must be a label value."),
                           _col("Effect", _TAINT_EFFECT_DOC), _col("TimeAdded", _TAINT_TIME_DOC), AGE]


def device_taint_rule_row(obj: dict[str, Any], now: datetime) -> dict[str, Any]:
    """upstream ``printDeviceTaint``: name, the taint's key, value, effect, the age of ``timeAdded``, age."""
    taint = (obj.get("spec") or {}).get("taint") or {}
    added = taint.get("timeAdded")
    return {"cells": [_meta(obj).get("name", ""), taint.get("key") or "", taint.get("value") or "",
                      taint.get("effect") or "", since(added, now) if added else "",
                      since(_meta(obj).get("creationTimestamp"), now)]}


def resource_claim_state(claim: dict[str, Any]) -> str:
    """upstream ``resourceClaimState``: ``deleted``, ``pending``, ``allocated``, ``reserved`` joined by commas."""
    status = claim.get("status") or {}
    deleted = bool(_meta(claim).get("deletionTimestamp"))
    states = ["deleted"] if deleted else []
    if not status.get("allocation"):
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _slice_cells(obj: dict[str, Any]) -> list[Any]:
    spec = obj.get("spec") or {}
    return [spec.get("nodeName") or "", spec.get("driver") or "", (spec.get("pool") or {}).get("name") or ""]


# ---- rbac.authorization.k8s.io/v1 -------------------------------------------------------------------------------

def _binding_columns(what: str) -> list[dict[str, Any]]:
    return [NAME, _col("Role", "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef "
                               "cannot be resolved, the Authorizer must return an error. This field is immutable."
                        if what == "clusterRoleBinding" else
                        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
                        "namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This "
                        "field is immutable."), AGE,
            _col("Users", f"Users in the {what}", 1), _col("Groups", f"Groups in the {what}", 1),
            _col("ServiceAccounts", f"ServiceAccounts in the {what}", 1)]


def binding_row(b: dict[str, Any], now: datetime) -> dict[str, Any]:
    """``printRoleBinding``/``printClusterRoleBinding`` (``rbac.SubjectsStrings`` for the wide columns)."""
    ref = b.get("roleRef") or {}
    users, groups, sas = [], [], []
    for s in b.get("subjects") or []:
        if s.get("kind") == "User":
            users.append(s.get("name", ""))
        elif s.get("kind") == "Group":
            groups.append(s.get("name", ""))
        elif s.get("kind") == "ServiceAccount":
            sas.append(f"{s.get('namespace', '')}/{s.get('name', '')}")
    return {"cells": [_meta(b).get("name", ""), f"{ref.get('kind', '')}/{ref.get('name', '')}",
                      since(_meta(b).get("creationTimestamp"), now), ", ".join(users), ", ".join(groups),
                      ", ".join(sas)]}


def named(cells: Callable[[dict[str, Any]], list[Any]]) -> Callable[[dict[str, Any], datetime], dict[str, Any]]:
    def row(obj: dict[str, Any], now: datetime) -> dict[str, Any]:
        return {"cells": [_meta(obj).get("name", ""), *cells(obj), since(_meta(obj).get("creationTimestamp"), now)]}
    return row


def podgroup_cells(obj: dict[str, Any]) -> list[Any]:
    """``printPodGroup``: Gang or Basic; the Workload referenced or <none>; Pending, then Scheduled/Unschedulable
    from the PodGroupInitiallyScheduled condition, or the reason of a DisruptionTarget condition."""
    spec = obj.get("spec") or {}
    policy = "Gang" if (spec.get("schedulingPolicy") or {}).get("gang") is not None else "Basic"
    conditions = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, dict)}
    status = "Pending"
    if "PodGroupInitiallyScheduled" in conditions:
        status = "Scheduled" if conditions["PodGroupInitiallyScheduled"].get("status") == "True" else "Unschedulable"
    if "DisruptionTarget" in conditions:
        status = str(conditions["DisruptionTarget"].get("reason") or "")
    workload = (spec.get("workloadRef") or {}).get("workloadName") or "<none>"
    return [policy, workload, status]


#: (column definitions, row function): a kind's Table printer
Printer = tuple[list[dict[str, Any]], Callable[[dict[str, Any], datetime], dict[str, Any]]]

# ---- one printer per kind (the kinds' records name them) -------------------------------------------------------

POD: Printer = (POD_COLUMNS, pod_row)
NODE: Printer = (NODE_COLUMNS, node_row)
EVENT: Printer = (EVENT_COLUMNS, event_row)  # one printer for both groups, as upstream's internal type has
NAMESPACE: Printer = (NAMESPACE_COLUMNS, named(lambda o: [(o.get("status") or {}).get("phase", "")]))
CONFIGMAP: Printer = (CONFIGMAP_COLUMNS, named(lambda o: [len(o.get("data") or {}) + len(o.get("binaryData") or {})]))
FLOWSCHEMA: Printer = (FLOWSCHEMA_COLUMNS, lambda o, now: {"cells": [
    _meta(o).get("name", ""), *flowcontrol.flowschema_cells(o), since(_meta(o).get("creationTimestamp"), now),
    flowcontrol.missing_pl(o)]})
PRIORITYLEVEL: Printer = (PRIORITYLEVEL_COLUMNS, named(flowcontrol.priority_level_cells))
SECRET: Printer = (SECRET_COLUMNS, named(lambda o: [o.get("type") or "", len(o.get("data") or {})]))
SERVICEACCOUNT: Printer = (SERVICEACCOUNT_COLUMNS, named(lambda o: [len(o.get("secrets") or [])]))
SERVICE: Printer = (SERVICE_COLUMNS, service_row)
WORKLOAD: Printer = (WORKLOAD_COLUMNS, named(lambda o: []))
PODGROUP: Printer = (PODGROUP_COLUMNS, named(podgroup_cells))
LEASE: Printer = (LEASE_COLUMNS, named(lambda o: [(o.get("spec") or {}).get("holderIdentity") or ""]))
DEPLOYMENT: Printer = (DEPLOYMENT_COLUMNS, deployment_row)
REPLICASET: Printer = (REPLICASET_COLUMNS, replicaset_row)
REPLICATIONCONTROLLER: Printer = (REPLICATIONCONTROLLER_COLUMNS, replicationcontroller_row)
PODTEMPLATE: Printer = (PODTEMPLATE_COLUMNS, podtemplate_row)
JOB: Printer = (JOB_COLUMNS, job_row)
DAEMONSET: Printer = (DAEMONSET_COLUMNS, daemonset_row)
CRONJOB: Printer = (CRONJOB_COLUMNS, cronjob_row)
STATEFULSET: Printer = (STATEFULSET_COLUMNS, statefulset_row)
DEVICECLASS: Printer = ([NAME, AGE], named(lambda o: []))
RESOURCECLAIM: Printer = (CLAIM_COLUMNS, named(lambda o: [resource_claim_state(o)]))
RESOURCECLAIMTEMPLATE: Printer = ([NAME, AGE], named(lambda o: []))
RESOURCESLICE: Printer = (SLICE_COLUMNS, named(_slice_cells))
DEVICETAINTRULE: Printer = (DEVICETAINTRULE_COLUMNS, device_taint_rule_row)
ROLEBINDING: Printer = (_binding_columns("roleBinding"), binding_row)
CLUSTERROLEBINDING: Printer = (_binding_columns("clusterRoleBinding"), binding_row)
