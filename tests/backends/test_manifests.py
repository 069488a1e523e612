"""Every Kubernetes object the kind and kubeconfig backends apply, validated against Kubernetes'
OpenAPI schemas (kubernetes-validate, strict: unknown fields fail) for each supported version,
plus what the device-plugin DaemonSet must contain."""

from __future__ import annotations

import kubernetes_validate
import pytest
import yaml

from mockgpu.backends.base import UpOptions
from mockgpu.backends.common.images import mockgpu_image, package_version
from mockgpu.backends.common.manifests import PLUGIN_DIR, spec_document
from mockgpu.backends.common.nodepaths import FAULTS_DIR
from mockgpu.backends.kind.config import DRIVER_DIR, kind_node_names
from mockgpu.backends.kind.images import NODE_IMAGES
from mockgpu.backends.kind.render import cluster_manifests
from mockgpu.backends.kubeconfig import render_manifests
from mockgpu.config.clusterspec import parse_spec

from .conftest import SPEC_IDS, SPECS, spec_at

# kubernetes-validate ships schemas per minor; validate against every minor we pin a node image for.
K8S = sorted(NODE_IMAGES)


def _all_manifests(spec):
    kind = cluster_manifests(UpOptions(spec=spec, name=spec.name))
    if _has_dra(spec):
        return kind  # fake-gpu-operator and the kubeconfig backend refuse DRA pools (test_kind_dra.py)
    fgo = cluster_manifests(UpOptions(spec=spec, name=spec.name, device_plugin="fake-gpu-operator"))
    node_map = {f"node-{i}": n.name for i, n in enumerate(spec.nodes())}
    return [*kind, *fgo, *render_manifests(spec, node_map)]


def _has_dra(spec):
    return any(n.gpu is not None and n.gpu.dra_gpus() for n in spec.nodes())


@pytest.mark.parametrize("version", K8S)
@pytest.mark.parametrize("path", SPECS, ids=SPEC_IDS)
def test_manifests_validate_against_kubernetes_schemas(path, version):
    docs = _all_manifests(spec_at(path))
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_validator_does_catch_a_bad_field(workshop):
    ds = _by_kind(cluster_manifests(UpOptions(spec=workshop, name="workshop")), "DaemonSet")
    ds["spec"]["template"]["spec"]["containers"][0]["imagePulPolicy"] = "Never"  # typo on purpose
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, K8S[-1], strict=True)


def _by_kind(docs, kind, name=None):
    return next(d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name))


def test_daemonset_runs_the_pinned_image_unprivileged_with_the_kubelet_socket_dir(workshop):
    docs = cluster_manifests(UpOptions(spec=workshop, name="workshop"))
    ds = _by_kind(docs, "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    c, publisher = pod["containers"]
    assert publisher["name"] == "gpu-state-publisher" and publisher["image"] == c["image"]
    assert "exec mockgpu gpu-state-publisher --node \"$node\" --kube-node \"$NODE_NAME\"" in publisher["command"][-1]
    assert c["image"] == mockgpu_image() == f"mockgpu:{package_version()}" and not c["image"].endswith(":latest")
    assert c["imagePullPolicy"] == "Never"
    # as NVIDIA's static manifest: no privilege, no capabilities, no escalation (in both containers)
    for container in (c, publisher):
        assert container["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    host = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert host == {"device-plugins": PLUGIN_DIR, "driver": DRIVER_DIR, "faults": FAULTS_DIR}
    assert {m["mountPath"] for m in c["volumeMounts"]} == {PLUGIN_DIR, DRIVER_DIR, FAULTS_DIR, "/etc/mockgpu"}
    script = c["command"][-1]
    assert "mockgpu device-plugin --spec /etc/mockgpu/spec.yaml" in script
    assert f"--plugin-dir {PLUGIN_DIR}" in script and f"--driver-dir {DRIVER_DIR}" in script
    assert c["env"] == [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": "mockgpu.io/node", "operator": "Exists"}]


def test_node_name_map_covers_every_kind_node_by_its_spec_name(workshop):
    docs = cluster_manifests(UpOptions(spec=workshop, name="workshop"))
    names = _by_kind(docs, "ConfigMap", "mockgpu-node-names")["data"]
    # kind's Nodes are named as the spec's (config.py), whatever their containers are called
    assert names == {n: n for n in kind_node_names(workshop, "workshop").values()} == {
        "whole-0": "whole-0", "mig-0": "mig-0", "shared-0": "shared-0"}
    pod = _by_kind(docs, "DaemonSet")["spec"]["template"]["spec"]
    projected = next(v for v in pod["volumes"] if v["name"] == "mockgpu-config")["projected"]["sources"]
    paths = [i["path"] for s in projected for i in s["configMap"]["items"]]
    assert paths == ["spec.yaml", *(f"nodes/{n}" for n in sorted(names))]


@pytest.mark.parametrize("path", SPECS, ids=SPEC_IDS)
def test_spec_config_map_loads_back_to_the_same_spec(path):
    spec = spec_at(path)
    again = parse_spec(yaml.safe_load(spec_document(spec)))
    assert again.model_dump(exclude={"source"}) == spec.model_copy(
        update={"spec": spec.spec.model_copy(update={"schedulerConfig": None})}).model_dump(exclude={"source"})


def test_rbac_lets_the_publisher_read_pods_and_write_configmaps(workshop):
    docs = cluster_manifests(UpOptions(spec=workshop, name="workshop"))
    cluster_rule = _by_kind(docs, "ClusterRole")["rules"][0]
    assert "pods" in cluster_rule["resources"] and set(cluster_rule["verbs"]) == {"get", "list", "watch"}
    role_rule = _by_kind(docs, "Role")["rules"][0]
    assert role_rule["resources"] == ["configmaps"] and {"create", "update"} <= set(role_rule["verbs"])
    sa = _by_kind(docs, "ServiceAccount")["metadata"]["name"]
    assert _by_kind(docs, "DaemonSet")["spec"]["template"]["spec"]["serviceAccountName"] == sa
    for binding in ("ClusterRoleBinding", "RoleBinding"):
        assert _by_kind(docs, binding)["subjects"][0]["name"] == sa


def test_namespace_allows_hostpath_volumes(workshop):
    """Pod Security ``baseline`` forbids hostPath volumes, which the plugin needs: the namespace stays privileged."""
    ns = cluster_manifests(UpOptions(spec=workshop, name="workshop"))[0]
    assert ns["kind"] == "Namespace" and ns["metadata"]["name"] == "mockgpu-system"
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_the_publisher_serves_metrics_behind_an_annotated_service(workshop):
    """dcgm-exporter's port 9400 on the pod IP, and the prometheus.io annotations in-cluster Prometheus configs
    (kubernetes-pods, kubernetes-service-endpoints) read, on the pods and on Service mockgpu-dcgm-exporter."""
    docs = cluster_manifests(UpOptions(spec=workshop, name="workshop"))
    ds = _by_kind(docs, "DaemonSet")
    svc = _by_kind(docs, "Service", "mockgpu-dcgm-exporter")
    scrape = {"prometheus.io/scrape": "true", "prometheus.io/port": "9400", "prometheus.io/path": "/metrics"}
    assert ds["spec"]["template"]["metadata"]["annotations"] == scrape == svc["metadata"]["annotations"]
    publisher = ds["spec"]["template"]["spec"]["containers"][1]
    assert publisher["ports"] == [{"name": "metrics", "containerPort": 9400, "protocol": "TCP"}]
    assert publisher["command"][-1].rstrip().endswith("--metrics-address 0.0.0.0 --metrics-port 9400")
    assert svc["spec"]["selector"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
    assert svc["spec"]["ports"] == [{"name": "metrics", "port": 9400, "targetPort": "metrics", "protocol": "TCP"}]
    assert svc["metadata"]["namespace"] == ds["metadata"]["namespace"] == "mockgpu-system"
    assert "hostNetwork" not in ds["spec"]["template"]["spec"]  # 0.0.0.0 is the pod's own network namespace
