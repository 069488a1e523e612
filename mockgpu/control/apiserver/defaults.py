"""Defaulting of created objects, as kube-apiserver's v1 defaulters and default admission plugins do.

Covers ``SetDefaults_Pod``/``_Container``/``_NodeStatus``/``_Namespace``, the pod strategy's
``PrepareForCreate`` (status reset to Pending with its QoS class, and PodScheduled=False/SchedulingGated for a
pod created with scheduling gates), ``SetDefaults_Probe`` and ``_HTTPGetAction`` (a container's probes and hooks),
and the admission plugins that every
cluster runs: DefaultTolerationSeconds, Priority (no PriorityClasses are served: a pod's priority is 0 unless its
spec sets an integer, which is kept so the scheduler's queue and preemption can be taught; upstream's plugin refuses
an integer it did not compute from a class, 403) and ServiceAccount (the
``default`` account and, unless the pod sets ``automountServiceAccountToken: false``, the projected
``kube-api-access-<5 chars>`` volume mounted read-only at ``/var/run/secrets/kubernetes.io/serviceaccount`` in
every container). Simplified: the ServiceAccount object's own ``automountServiceAccountToken`` is not
consulted (the plugin reads it from the API; defaulting here has no store), and the kubelet mounts nothing.
"""

from __future__ import annotations

import copy
from typing import Any

from mockgpu.apimachinery.quantity import QuantityError, parse_quantity
from mockgpu.control.apiserver.names import generate_name

DEFAULT_TOLERATION_SECONDS = 300
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_EXPIRATION_SECONDS = 3607  # upstream's ServiceAccount admission: one hour plus 7 s (warn-only window)
_NOEXEC_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def image_pull_policy(image: str) -> str:
    """``Always`` for ``:latest`` or an untagged image, otherwise ``IfNotPresent`` (digests count as tags)."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


#: ``SetDefaults_Probe``: a field left 0 gets its default
_PROBE_DEFAULTS = (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3))


def _default_http_get(handler: Any) -> None:
    """``SetDefaults_HTTPGetAction`` (a probe's or a lifecycle hook's): path ``/``, scheme ``HTTP``."""
    action = handler.get("httpGet") if isinstance(handler, dict) else None
    if isinstance(action, dict):
        if not action.get("path"):
            action["path"] = "/"
        if not action.get("scheme"):
            action["scheme"] = "HTTP"


def _default_probes(c: dict[str, Any]) -> None:
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = c.get(key)
        if isinstance(probe, dict):
            for name, value in _PROBE_DEFAULTS:
                if probe.get(name) in (None, 0):
                    probe[name] = value
            _default_http_get(probe)
    lifecycle = c.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            _default_http_get(lifecycle.get(hook))


def _default_container(c: dict[str, Any]) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    image = c.get("image")
    c.setdefault("imagePullPolicy", image_pull_policy(image) if isinstance(image, str) and image else "IfNotPresent")
    resources = c.setdefault("resources", {})
    if isinstance(resources, dict):
        limits = resources.get("limits")
        if isinstance(limits, dict) and limits:
            requests = resources.setdefault("requests", {})
            if isinstance(requests, dict):
                for name, value in limits.items():
                    requests.setdefault(name, value)
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in c.get("env") or []:
        ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")
    _default_probes(c)


def _tolerates(tolerations: list[dict[str, Any]], key: str) -> bool:
    for t in tolerations:
        if not isinstance(t, dict):
            continue
        effect_ok = t.get("effect", "") in ("", "NoExecute")
        key_ok = t.get("key", "") == key or (t.get("key", "") == "" and t.get("operator") == "Exists")
        if effect_ok and key_ok:
            return True
    return False


def add_default_tolerations(spec: dict[str, Any]) -> None:
    """DefaultTolerationSeconds admission: tolerate not-ready/unreachable NoExecute for 300 s."""
    tolerations = spec.setdefault("tolerations", [])
    if not isinstance(tolerations, list):
        return
    for key in _NOEXEC_TAINTS:
        if not _tolerates(tolerations, key):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})


def _q(value: Any) -> Any:
    try:
        return parse_quantity(value)
    except (QuantityError, TypeError, ValueError):
        return None


def qos_class(pod: dict[str, Any]) -> str:
    """upstream ``GetPodQOS``: Guaranteed, Burstable or BestEffort, from cpu and memory only."""
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    guaranteed = True
    for c in containers:
        res = (c.get("resources") or {}) if isinstance(c, dict) else {}
        creq = {k: _q(v) for k, v in (res.get("requests") or {}).items() if k in ("cpu", "memory")}
        clim = {k: _q(v) for k, v in (res.get("limits") or {}).items() if k in ("cpu", "memory")}
        for k, v in creq.items():
            if v:
                requests[k] = requests.get(k, 0) + v
        for k, v in clim.items():
            if v:
                limits[k] = limits.get(k, 0) + v
        if set(k for k, v in clim.items() if v) != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(requests.get(k) == limits.get(k) for k in ("cpu", "memory")):
        return "Guaranteed"
    return "Burstable"


def default_pod(pod: dict[str, Any], *, creating: bool = True) -> dict[str, Any]:
    """The pod as the API server stores it on create: v1 defaults, admission defaults, fresh status."""
    pod = copy.deepcopy(pod)
    spec = pod.setdefault("spec", {})
    if not isinstance(spec, dict):
        return pod
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _default_container(c)
    if creating:
        spec.setdefault("serviceAccountName", "default")
        spec["serviceAccount"] = spec["serviceAccountName"]
        mount_service_account_token(spec)
        spec.setdefault("priority", 0)  # kept as sent: see the module's docstring (no PriorityClasses served)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        add_default_tolerations(spec)
        pod["status"] = {"phase": "Pending", "qosClass": qos_class(pod)}
        if spec.get("schedulingGates"):  # PrepareForCreate: applyWaitingForSchedulingGatesCondition
            pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                                            "lastTransitionTime": None, "reason": "SchedulingGated",
                                            "message": "Scheduling is blocked due to non-empty scheduling gates"}]
    return pod


def mount_service_account_token(spec: dict[str, Any]) -> None:
    """The ServiceAccount admission plugin's projected token volume and its mount in every container."""
    if spec.get("automountServiceAccountToken") is False:
        return
    containers = [c for key in ("initContainers", "containers", "ephemeralContainers")
                  for c in spec.get(key) or [] if isinstance(c, dict)]
    if any(m.get("mountPath") == TOKEN_MOUNT_PATH for c in containers for m in c.get("volumeMounts") or []
           if isinstance(m, dict)):
        return  # the pod mounts something there itself
    name = generate_name("kube-api-access-")
    volumes = spec.get("volumes") if isinstance(spec.get("volumes"), list) else []
    spec["volumes"] = [*volumes, {"name": name, "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                      "fieldPath": "metadata.namespace"}}]}}],
        "defaultMode": 420}}]
    for c in containers:
        mounts = c.get("volumeMounts") if isinstance(c.get("volumeMounts"), list) else []
        c["volumeMounts"] = [*mounts, {"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}]


def default_node(node: dict[str, Any]) -> dict[str, Any]:
    """``SetDefaults_NodeStatus``: allocatable defaults to capacity."""
    node = copy.deepcopy(node)
    node.setdefault("spec", {})
    status = node.setdefault("status", {})
    if isinstance(status, dict) and "capacity" in status and not status.get("allocatable"):
        status["allocatable"] = copy.deepcopy(status["capacity"])
    return node


def default_namespace(ns: dict[str, Any]) -> dict[str, Any]:
    """Finalizer ``kubernetes``, phase Active, and the ``kubernetes.io/metadata.name`` label."""
    ns = copy.deepcopy(ns)
    meta = ns.setdefault("metadata", {})
    name = meta.get("name")
    if isinstance(name, str) and name:
        labels = meta.get("labels") or {}
        labels["kubernetes.io/metadata.name"] = name
        meta["labels"] = labels
    spec = ns.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("finalizers", ["kubernetes"])
    status = ns.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Active")
    return ns
