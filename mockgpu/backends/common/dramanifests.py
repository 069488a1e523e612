"""The Kubernetes objects that run mockgpu's DRA driver ``gpu.mockgpu.io`` on a real cluster: pure functions.

A kubelet plugin DaemonSet as kubernetes-sigs/dra-example-driver's chart deploys one: ``mockgpu dra-driver`` on
every node whose pool gives GPUs to DRA (``gpu.management: dra|both``; node affinity on ``mockgpu.io/node In
[...]``), with hostPath mounts of the kubelet's plugin directory (the driver's DRA socket,
``gpu.mockgpu.io/dra.sock``), its plugin registry (the registration socket the kubelet's plugin watcher finds),
the CDI directory ``/var/run/cdi`` (the CDI specs containerd applies to the claim's containers) and the node's
fake driver directory (mounted into those containers by the CDI spec; the same host path inside, so the paths
the CDI spec names are the node's). It finds its spec node as the device-plugin DaemonSet does (``NODE_NAME``
from the downward API, looked up in ConfigMap ``mockgpu-node-names``).

Credentials: the pod's service account ``mockgpu-dra-driver`` (in-cluster config) with ClusterRole
``mockgpu-dra-driver``: ResourceSlices (create, get, list, watch, update, patch, delete: the driver publishes
and repairs its pool and deletes it on exit), ResourceClaims (get, list, watch: NodePrepareResources reads the
allocation) and Nodes (get: the slices are owned by the Node). Privilege: none beyond the device plugin's
(root without capabilities, no privilege escalation): everything it touches is a root-owned directory on the
node or a Unix socket the kubelet dials.

The DeviceClasses the driver's devices are requested through are ``clusters/dra/deviceclasses.yaml``, applied
with the DaemonSet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mockgpu.backends.common.nodepaths import DRIVER_DIR, FAULTS_DIR
from mockgpu.config.clusterspec import ClusterSpec
from mockgpu.config.nodelabels import NODE_LABEL
from mockgpu.errors import MockgpuError

APP = "mockgpu-dra-driver"
SERVICE_ACCOUNT = "mockgpu-dra-driver"
PLUGINS_DIR = "/var/lib/kubelet/plugins"  # upstream's KubeletPluginsDir
REGISTRY_DIR = "/var/lib/kubelet/plugins_registry"  # upstream's KubeletRegistryDir
CDI_DIR = "/var/run/cdi"  # the CDI directory containerd reads (cdi_spec_dirs in the node image)
LABELS = {"app.kubernetes.io/name": APP, "app.kubernetes.io/part-of": "mockgpu"}
DEVICE_CLASSES = Path(__file__).resolve().parents[3] / "clusters" / "dra" / "deviceclasses.yaml"

_ENTRYPOINT = (
    'node="$(cat "/etc/mockgpu/nodes/$NODE_NAME" 2>/dev/null)" || '
    '{ echo "mockgpu: node $NODE_NAME is not in ConfigMap mockgpu-node-names" >&2; exit 1; }\n'
    'exec mockgpu dra-driver --spec /etc/mockgpu/spec.yaml --node "$node" '
    f"--plugin-dir {PLUGINS_DIR} --registry-dir {REGISTRY_DIR} --cdi-dir {CDI_DIR} --driver-dir {DRIVER_DIR}\n"
)


def dra_nodes(spec: ClusterSpec) -> list[str]:
    """Spec nodes whose pool gives some GPUs to the DRA driver, in spec order."""
    return [n.name for n in spec.nodes() if n.gpu is not None and n.gpu.dra_gpus()]


def device_classes(path: Path = DEVICE_CLASSES) -> list[dict[str, Any]]:
    """The driver's DeviceClasses (``gpu.mockgpu.io``, ``mig.gpu.mockgpu.io``) from the checkout."""
    try:
        return [d for d in yaml.safe_load_all(path.read_text()) if d]
    except OSError as exc:
        raise MockgpuError(f"cannot read the DRA DeviceClasses {path}: {exc.strerror}") from None


def _meta(name: str, namespace: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(LABELS)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def dra_rbac(namespace: str) -> list[dict[str, Any]]:
    """ServiceAccount and ClusterRole(+Binding) the driver publishes slices and reads claims with."""
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(SERVICE_ACCOUNT, namespace)}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": _meta(APP, None),
        "rules": [
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
             "verbs": ["create", "get", "list", "watch", "update", "patch", "delete"]},
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": _meta(APP, None),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": APP},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}],
    }
    return [sa, role, binding]


def gpu_state_rbac(namespace: str, service_account: str) -> list[dict[str, Any]]:
    """ClusterRole(+Binding) ``mockgpu-gpu-state-claims``: the device-plugin pods' GPU-state publisher reads
    ResourceClaims (get, list) to show which claim holds which device."""
    name = "mockgpu-gpu-state-claims"
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": _meta(name, None),
            "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list"]}]}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": _meta(name, None),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}],
    }
    return [role, binding]


def dra_daemonset(nodes: list[str], *, image: str, pull_policy: str, namespace: str, config_volume: dict[str, Any],
                  config_mount: str, security: dict[str, Any]) -> dict[str, Any]:
    """The kubelet-plugin DaemonSet, only on the spec nodes named in ``nodes`` (those with DRA GPUs)."""
    container = {
        "name": "dra-driver",
        "image": image,
        "imagePullPolicy": pull_policy,
        "command": ["/bin/sh", "-c", _ENTRYPOINT],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "securityContext": security,
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "volumeMounts": [
            {"name": "plugins", "mountPath": PLUGINS_DIR},
            {"name": "plugins-registry", "mountPath": REGISTRY_DIR},
            {"name": "cdi", "mountPath": CDI_DIR},
            {"name": "driver", "mountPath": DRIVER_DIR},
            {"name": "faults", "mountPath": FAULTS_DIR},
            {"name": config_volume["name"], "mountPath": config_mount, "readOnly": True},
        ],
    }
    volumes = [
        {"name": "plugins", "hostPath": {"path": PLUGINS_DIR, "type": "DirectoryOrCreate"}},
        {"name": "plugins-registry", "hostPath": {"path": REGISTRY_DIR, "type": "DirectoryOrCreate"}},
        {"name": "cdi", "hostPath": {"path": CDI_DIR, "type": "DirectoryOrCreate"}},
        {"name": "driver", "hostPath": {"path": DRIVER_DIR, "type": "DirectoryOrCreate"}},
        {"name": "faults", "hostPath": {"path": FAULTS_DIR, "type": "DirectoryOrCreate"}},
        config_volume,
    ]
    pod_spec = {
        "serviceAccountName": SERVICE_ACCOUNT,
        "priorityClassName": "system-node-critical",
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": NODE_LABEL, "operator": "In", "values": nodes}]}]}}},
        "tolerations": [{"operator": "Exists"}],
        "terminationGracePeriodSeconds": 10,  # SIGTERM: the driver deletes its ResourceSlices, then exits
        "containers": [container],
        "volumes": volumes,
    }
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": _meta(APP, namespace),
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": APP}},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": {"labels": dict(LABELS)}, "spec": pod_spec},
        },
    }
