"""The Kubernetes objects that run mockgpu's device plugin on a real cluster: pure functions, shared by the kind
and kubeconfig backends (with ``dump_stream``, the YAML stream both apply and print for a dry run).

Objects (namespace ``mockgpu-system``): the Namespace (Pod Security ``privileged``: the plugin needs
hostPath volumes, which ``baseline`` forbids), a ServiceAccount with RBAC for the GPU-state publisher (read
pods cluster-wide, create/update ConfigMaps in ``mockgpu-system``), ConfigMap ``mockgpu-spec`` (the spec itself),
ConfigMap ``mockgpu-node-names`` (cluster node name -> spec node name) and the device-plugin DaemonSet, whose
pods also run ``mockgpu gpu-state-publisher`` (ConfigMap ``gpu-state-<spec node>``, the embedded kubelet's shape),
which also serves dcgm-exporter-style ``/metrics`` on port 9400 (dcgm-exporter's) of the pod's IP, and Service
``mockgpu-dcgm-exporter`` in front of those pods; pods and Service carry the ``prometheus.io/scrape|port|path``
annotations the common in-cluster Prometheus scrape configs (``kubernetes-pods``, ``kubernetes-service-endpoints``)
look for, as dcgm-exporter's own Service does with a ServiceMonitor.

How a plugin pod learns its spec node: the downward API cannot put a node *label* into an env var,
so the pod gets ``NODE_NAME`` from ``fieldRef: spec.nodeName`` and looks it up in the name map, which
the backend knows when it renders (kind names its nodes deterministically; the kubeconfig backend
reads the cluster's nodes). A node missing from the map makes the pod exit with a one-line message.

A spec whose pools give GPUs to DRA (``gpu.management: dra|both``) also gets the DRA driver's DaemonSet, RBAC and
DeviceClasses (``dramanifests.py``), on kind only (``PluginManifestOptions.dra``); the device plugin then
advertises only the other GPUs of each node (``mockgpu device-plugin`` splits them as the embedded kubelet does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from mockgpu.backends.common.dramanifests import (
    CDI_DIR,
    device_classes,
    dra_daemonset,
    dra_nodes,
    dra_rbac,
    gpu_state_rbac,
)
from mockgpu.backends.common.nodepaths import DRIVER_DIR, FAULTS_DIR
from mockgpu.config.clusterspec import ClusterSpec
from mockgpu.config.nodelabels import NODE_LABEL
from mockgpu.errors import ConfigError

NAMESPACE = "mockgpu-system"
APP = "mockgpu-device-plugin"
SERVICE_ACCOUNT = "mockgpu-device-plugin"
PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
METRICS_PORT = 9400  # dcgm-exporter's
METRICS_SERVICE = "mockgpu-dcgm-exporter"
SCRAPE_ANNOTATIONS = {"prometheus.io/scrape": "true", "prometheus.io/port": str(METRICS_PORT),
                      "prometheus.io/path": "/metrics"}
SPEC_MOUNT = "/etc/mockgpu"  # spec.yaml and nodes/<node name> live here in the plugin container
_LABELS = {"app.kubernetes.io/name": APP, "app.kubernetes.io/part-of": "mockgpu"}

_ENTRYPOINT = (
    'node="$(cat "/etc/mockgpu/nodes/$NODE_NAME" 2>/dev/null)" || '
    '{ echo "mockgpu: node $NODE_NAME is not in ConfigMap mockgpu-node-names" >&2; exit 1; }\n'
    'exec mockgpu device-plugin --spec /etc/mockgpu/spec.yaml --node "$node" '
    f"--plugin-dir {PLUGIN_DIR} --driver-dir {DRIVER_DIR}\n"
)


_PUBLISHER_ENTRYPOINT = (
    'node="$(cat "/etc/mockgpu/nodes/$NODE_NAME" 2>/dev/null)" || '
    '{ echo "mockgpu: node $NODE_NAME is not in ConfigMap mockgpu-node-names" >&2; exit 1; }\n'
    'exec mockgpu gpu-state-publisher --node "$node" --kube-node "$NODE_NAME" '
    f"--driver-dir {DRIVER_DIR} --checkpoint {PLUGIN_DIR}/kubelet_internal_checkpoint "
    f"--metrics-address 0.0.0.0 --metrics-port {METRICS_PORT}\n"
)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (kubeadm patches, the embedded spec, the entrypoint) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_stream(docs: list[dict[str, Any]]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, explicit_start=True)


def check_gpu_management(spec: ClusterSpec, *, dra_driver: bool = True, device_plugin: str = "mockgpu") -> None:
    """ConfigError for a pool whose GPUs go through DRA where no DRA driver is deployed, so such GPUs would
    silently vanish: with fake-gpu-operator (a device plugin only), or on an existing cluster (``dra_driver``
    False: the kubeconfig backend, which cannot know whether the cluster's runtime applies CDI specs)."""
    if dra_driver and device_plugin != "fake-gpu-operator":
        return
    why = ("fake-gpu-operator has no DRA driver (use --device-plugin mockgpu)" if device_plugin == "fake-gpu-operator"
           else "the kubeconfig backend does not deploy the DRA driver (use the kind, embedded or upstream backend)")
    for i, pool in enumerate(spec.spec.nodePools):
        if pool.gpu is not None and pool.gpu.management != "devicePlugin":
            raise ConfigError(spec.source, f"spec.nodePools[{i}].gpu.management",
                              f"'{pool.gpu.management}' needs the DRA driver: {why}")



@dataclass(frozen=True)
class PluginManifestOptions:
    image: str  # e.g. mockgpu:0.1.0 (never latest)
    node_names: dict[str, str]  # cluster node name -> spec node name
    pull_policy: str = "Never"  # kind: the image is loaded with `kind load`; elsewhere IfNotPresent
    # Extra nodeAffinity expressions ANDed with "has mockgpu.io/node" (the kubeconfig backend adds
    # "not a real GPU node" here).
    extra_match: list[dict[str, Any]] = field(default_factory=list)
    # Whether the DRA driver may be deployed (kind: yes; an existing cluster: its runtime's CDI is unknown)
    dra: bool = True


def spec_document(spec: ClusterSpec) -> str:
    """The spec as the plugin reads it: compact YAML that loads back to an equal spec.

    ``schedulerConfig`` is dropped: it is a host path the plugin never needs.
    """
    data = spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    data.get("spec", {}).pop("schedulerConfig", None)
    return yaml.safe_dump(data, sort_keys=False)


def _meta(name: str, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(_LABELS)}
    if namespaced:
        meta["namespace"] = NAMESPACE
    return meta


def namespace(name: str = NAMESPACE) -> dict[str, Any]:
    labels = {"pod-security.kubernetes.io/enforce": "privileged", "app.kubernetes.io/part-of": "mockgpu"}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def rbac() -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole(+Binding) to read pods and nodes, Role(+Binding) for ConfigMaps."""
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(SERVICE_ACCOUNT)}
    subject = [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}]
    read = ["get", "list", "watch"]
    cluster_role = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": _meta("mockgpu-gpu-state", False),
        "rules": [{"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": read}],
    }
    cluster_binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": _meta("mockgpu-gpu-state", False),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "mockgpu-gpu-state"},
        "subjects": subject,
    }
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta("mockgpu-gpu-state"),
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": [*read, "create", "update", "patch"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": _meta("mockgpu-gpu-state"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "mockgpu-gpu-state"},
        "subjects": subject,
    }
    return [sa, cluster_role, cluster_binding, role, binding]


def config_maps(spec: ClusterSpec, node_names: dict[str, str]) -> list[dict[str, Any]]:
    spec_cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("mockgpu-spec"),
               "data": {"spec.yaml": spec_document(spec)}}
    names_cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("mockgpu-node-names"),
                "data": dict(sorted(node_names.items()))}
    return [spec_cm, names_cm]


def _volumes(node_names: dict[str, str]) -> list[dict[str, Any]]:
    projected = {"sources": [
        {"configMap": {"name": "mockgpu-spec", "items": [{"key": "spec.yaml", "path": "spec.yaml"}]}},
        {"configMap": {"name": "mockgpu-node-names",
                       "items": [{"key": k, "path": f"nodes/{k}"} for k in sorted(node_names)]}},
    ]}
    return [
        {"name": "device-plugins", "hostPath": {"path": PLUGIN_DIR, "type": "Directory"}},
        {"name": "driver", "hostPath": {"path": DRIVER_DIR, "type": "DirectoryOrCreate"}},
        {"name": "faults", "hostPath": {"path": FAULTS_DIR, "type": "DirectoryOrCreate"}},
        {"name": "mockgpu-config", "projected": projected},
    ]


def _security() -> dict[str, Any]:
    """As NVIDIA's static manifest (deployments/static/nvidia-device-plugin.yml): registering over a Unix socket
    needs no privilege. Still uid 0, the owner of the kubelet's socket folder; without capabilities root has no
    DAC override, hence the world-writable driver folder (docs/kind.md). A fresh dict each call: no YAML anchors."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def daemonset(opts: PluginManifestOptions) -> dict[str, Any]:
    """The device-plugin DaemonSet (unprivileged, no capabilities), on every node labelled ``mockgpu.io/node``."""
    match = [{"key": NODE_LABEL, "operator": "Exists"}, *opts.extra_match]
    container = {
        "name": "device-plugin",
        "image": opts.image,
        "imagePullPolicy": opts.pull_policy,
        "command": ["/bin/sh", "-c", _ENTRYPOINT],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "securityContext": _security(),
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "volumeMounts": [
            {"name": "device-plugins", "mountPath": PLUGIN_DIR},
            {"name": "driver", "mountPath": DRIVER_DIR},
            {"name": "faults", "mountPath": FAULTS_DIR},
            {"name": "mockgpu-config", "mountPath": SPEC_MOUNT, "readOnly": True},
        ],
    }
    publisher = {  # ConfigMap gpu-state-<node> in the embedded kubelet's shape (mockgpu.control.kubelet.publisher)
        "name": "gpu-state-publisher",
        "image": opts.image,
        "imagePullPolicy": opts.pull_policy,
        "command": ["/bin/sh", "-c", _PUBLISHER_ENTRYPOINT],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "securityContext": _security(),
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "volumeMounts": [
            {"name": "device-plugins", "mountPath": PLUGIN_DIR, "readOnly": True},
            {"name": "driver", "mountPath": DRIVER_DIR},
            {"name": "faults", "mountPath": FAULTS_DIR, "readOnly": True},
            {"name": "mockgpu-config", "mountPath": SPEC_MOUNT, "readOnly": True},
        ],
    }
    pod_spec = {
        "serviceAccountName": SERVICE_ACCOUNT,
        "priorityClassName": "system-node-critical",
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": match}]}}},
        "tolerations": [{"operator": "Exists"}],  # spec taints are arbitrary; the plugin must run anyway
        "containers": [container, publisher],
        "volumes": _volumes(opts.node_names),
    }
    selector = {"app.kubernetes.io/name": APP}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": _meta(APP),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": {"labels": dict(_LABELS), "annotations": dict(SCRAPE_ANNOTATIONS)},
                         "spec": pod_spec},
        },
    }


def metrics_service() -> dict[str, Any]:
    """Service ``mockgpu-dcgm-exporter``: the DaemonSet pods' ``/metrics`` (port 9400, named ``metrics``)."""
    meta = _meta(METRICS_SERVICE)
    meta["annotations"] = dict(SCRAPE_ANNOTATIONS)
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"selector": {"app.kubernetes.io/name": APP},
                     "ports": [{"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics",
                                "protocol": "TCP"}]}}


def dra_manifests(spec: ClusterSpec, opts: PluginManifestOptions) -> list[dict[str, Any]]:
    """The DRA driver's objects for the spec's DRA nodes ([] when it has none), after the device plugin's, and
    what lets the GPU-state publisher read claims."""
    nodes = dra_nodes(spec)
    if not nodes:
        return []
    ds = dra_daemonset(nodes, image=opts.image, pull_policy=opts.pull_policy, namespace=NAMESPACE,
                       config_volume=_volumes(opts.node_names)[-1], config_mount=SPEC_MOUNT, security=_security())
    return [*dra_rbac(NAMESPACE), *gpu_state_rbac(NAMESPACE, SERVICE_ACCOUNT), ds, *device_classes()]


def publisher_reads_claims(ds: dict[str, Any]) -> dict[str, Any]:
    """The device-plugin DaemonSet of a spec with DRA pools: its GPU-state publisher also lists the devices of
    prepared claims (``--spec``, ``--cdi-dir``: the CDI directory read-only)."""
    pod = ds["spec"]["template"]["spec"]
    publisher = next(c for c in pod["containers"] if c["name"] == "gpu-state-publisher")
    script = publisher["command"][-1].rstrip("\n")
    publisher["command"][-1] = f"{script} --spec {SPEC_MOUNT}/spec.yaml --cdi-dir {CDI_DIR}\n"
    publisher["volumeMounts"].append({"name": "cdi", "mountPath": CDI_DIR, "readOnly": True})
    pod["volumes"].append({"name": "cdi", "hostPath": {"path": CDI_DIR, "type": "DirectoryOrCreate"}})
    return ds


def plugin_manifests(spec: ClusterSpec, opts: PluginManifestOptions) -> list[dict[str, Any]]:
    """Every object, in apply order; ConfigError for DRA pools where the DRA driver is not deployed."""
    check_gpu_management(spec, dra_driver=opts.dra)
    plugin = daemonset(opts)
    if dra_nodes(spec):
        plugin = publisher_reads_claims(plugin)
    return [namespace(), *rbac(), *config_maps(spec, opts.node_names), metrics_service(), plugin,
            *dra_manifests(spec, opts)]
