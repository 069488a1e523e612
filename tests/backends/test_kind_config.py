"""The kind Cluster config rendered from specs: structure (a small schema of kind's v1alpha4 fields),
node count and order, labels, taints, extraMounts, the scheduler config, and the pinned images."""

from __future__ import annotations

import re

import jsonschema
import pytest
import yaml

from mockgpu.backends.kind.config import (
    DRIVER_DIR,
    SCHEDULER_CONFIG,
    KindRenderOptions,
    kind_config,
    kind_node_names,
)
from mockgpu.backends.kind.images import NODE_IMAGES, node_image
from mockgpu.config.clusterspec import parse_spec
from mockgpu.errors import ConfigError, MockgpuError

from .conftest import DEVICE_PLUGIN_SPECS, SPEC_IDS, SPECS, STATE_DIR, spec_at

_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
# The fields of kind's v1alpha4 types (pkg/apis/config/v1alpha4/types.go) this backend may emit; any
# other key, or a wrong type, is a bug in the renderer.
KIND_SCHEMA = {
    "type": "object",
    "required": ["kind", "apiVersion", "nodes"],
    "additionalProperties": False,
    "properties": {
        "kind": {"const": "Cluster"},
        "apiVersion": {"const": "kind.x-k8s.io/v1alpha4"},
        "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
        "featureGates": {"type": "object"},
        "runtimeConfig": _MAP,
        "networking": {"type": "object"},
        "kubeadmConfigPatches": {"type": "array", "items": {"type": "string"}},
        "containerdConfigPatches": {"type": "array", "items": {"type": "string"}},
        "nodes": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["role", "image"], "additionalProperties": False,
            "properties": {
                "role": {"enum": ["control-plane", "worker"]},
                "image": {"type": "string", "pattern": r"^kindest/node:v\d+\.\d+\.\d+@sha256:[0-9a-f]{64}$"},
                "labels": _MAP,
                "extraMounts": {"type": "array", "items": {
                    "type": "object", "required": ["hostPath", "containerPath"], "additionalProperties": False,
                    "properties": {"hostPath": {"type": "string", "pattern": "^/"},
                                   "containerPath": {"type": "string", "pattern": "^/"},
                                   "readOnly": {"type": "boolean"}, "selinuxRelabel": {"type": "boolean"},
                                   "propagation": {"enum": ["None", "HostToContainer", "Bidirectional"]}}}},
                "extraPortMappings": {"type": "array"},
                "kubeadmConfigPatches": {"type": "array", "items": {"type": "string"}},
            }}},
    },
}
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                        r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
KUBEADM_KINDS = {"InitConfiguration", "JoinConfiguration", "ClusterConfiguration", "KubeletConfiguration",
                 "KubeProxyConfiguration"}


def _render(spec, **kw):
    return kind_config(spec, KindRenderOptions(name=spec.name, state_dir=STATE_DIR, **kw))


def _spec(pool: dict) -> object:
    return parse_spec({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "t"},
                       "spec": {"nodePools": [pool]}})


@pytest.mark.parametrize(("path", "plugin"), [
    *((p, "mockgpu") for p in SPECS), *((p, "fake-gpu-operator") for p in DEVICE_PLUGIN_SPECS)],
    ids=[*(f"{i}-mockgpu" for i in SPEC_IDS), *(f"{p.stem}-fake-gpu-operator" for p in DEVICE_PLUGIN_SPECS)])
def test_kind_config_matches_kinds_schema(path, plugin):
    spec = spec_at(path)
    config = _render(spec, device_plugin=plugin)
    jsonschema.validate(config, KIND_SCHEMA)
    nodes = config["nodes"]
    count = len(list(spec.nodes()))
    assert [n["role"] for n in nodes] == ["control-plane"] + ["worker"] * (count - 1 if count else 0)
    for node in nodes:
        for key, value in node.get("labels", {}).items():
            assert _LABEL_KEY.match(key) and len(key.split("/")[-1]) <= 63, key
            assert _LABEL_VALUE.match(value) and len(value) <= 63, (key, value)
        for patch in node.get("kubeadmConfigPatches", []):
            doc = yaml.safe_load(patch)
            # Unversioned, so kind applies it to whichever kubeadm version it generates (v1beta3/v1beta4).
            assert doc["kind"] in KUBEADM_KINDS and "apiVersion" not in doc
    # Round trip through YAML (kind reads the file) keeps it identical.
    assert yaml.safe_load(yaml.safe_dump(config)) == config


def test_workshop_is_its_three_nodes_the_first_one_the_control_plane(workshop):
    nodes = _render(workshop)["nodes"]
    assert [n["role"] for n in nodes] == ["control-plane", "worker", "worker"]
    assert [n["labels"]["mockgpu.io/node"] for n in nodes] == ["whole-0", "mig-0", "shared-0"]
    assert kind_node_names(workshop, "workshop") == {
        "workshop-control-plane": "whole-0", "workshop-worker": "mig-0", "workshop-worker2": "shared-0"}


def test_nodes_are_named_as_the_spec_with_only_the_specs_taints(workshop):
    """kubeadm names the Node (nodeRegistration.name) and taints it; [] drops kubeadm's control-plane taint,
    so the cluster's Nodes are the spec's, as on every other backend."""
    regs = [yaml.safe_load(p) for n in _render(workshop)["nodes"] for p in n["kubeadmConfigPatches"]]
    assert regs == [
        {"kind": "InitConfiguration", "nodeRegistration": {"name": "whole-0", "taints": []}},
        {"kind": "JoinConfiguration", "nodeRegistration": {"name": "mig-0", "taints": []}},
        {"kind": "JoinConfiguration", "nodeRegistration": {"name": "shared-0", "taints": []}},
    ]


def test_a_one_node_cluster_keeps_kubeadms_control_plane_taint_for_kind_to_remove():
    """kind runs `kubectl taint nodes --all node-role.kubernetes.io/control-plane-` on a one-node cluster, which
    fails when the taint is absent; after it the Node has only the spec's taints, as in larger clusters."""
    spec = _spec({"name": "gpu", "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]})
    (node,) = _render(spec)["nodes"]
    (patch,) = node["kubeadmConfigPatches"]
    assert yaml.safe_load(patch)["nodeRegistration"]["taints"] == [
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
        {"key": "k", "value": "v", "effect": "NoSchedule"}]


def test_a_spec_without_nodes_gets_kinds_own_control_plane():
    config = _render(parse_spec({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec",
                                 "metadata": {"name": "t"}, "spec": {"nodePools": []}}))
    assert [n["role"] for n in config["nodes"]] == ["control-plane"]
    assert "kubeadmConfigPatches" not in config["nodes"][0]


def test_workshop_gpu_labels_follow_each_node(workshop):
    whole, mig, shared = (n["labels"] for n in _render(workshop)["nodes"])
    assert whole["nvidia.com/gpu.count"] == "4" and whole["nvidia.com/gpu.present"] == "true"
    assert mig["nvidia.com/mig.strategy"] == "mixed" and mig["nvidia.com/mig-1g.10gb.count"] == "8"
    assert shared["nvidia.com/gpu.replicas"] == "4"
    assert shared["nvidia.com/gpu.sharing-strategy"] == "time-slicing"


def test_every_gpu_node_mounts_its_own_driver_dir(workshop):
    for node in _render(workshop)["nodes"]:
        (mount,) = node["extraMounts"]
        assert mount == {"hostPath": f"{STATE_DIR}/{node['labels']['mockgpu.io/node']}/driver",
                         "containerPath": DRIVER_DIR}


def test_fake_gpu_operator_nodes_carry_the_pool_label_not_gfd_labels(workshop):
    whole = _render(workshop, device_plugin="fake-gpu-operator")["nodes"][0]
    assert whole["labels"]["run.ai/simulated-gpu-node-pool"] == "whole"
    assert not any(k.startswith("nvidia.com/") for k in whole["labels"])
    assert "extraMounts" not in whole


def test_taints_become_init_and_join_configuration_patches():
    spec = _spec({"name": "gpu", "count": 2, "labels": {"team": "a"},
                  "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                  "gpu": {"model": "A100-SXM4-80GB", "count": 1}})
    nodes = _render(spec)["nodes"]
    assert len(nodes) == 2
    for node, kind, name in zip(nodes, ("InitConfiguration", "JoinConfiguration"), ("gpu-0", "gpu-1"), strict=True):
        assert node["labels"]["team"] == "a"
        (patch,) = node["kubeadmConfigPatches"]
        assert yaml.safe_load(patch) == {"kind": kind, "nodeRegistration": {
            "name": name, "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}}


def test_kube_scheduler_logs_json_at_v10_without_a_scheduler_config(workshop):
    (patch,) = _render(workshop)["kubeadmConfigPatches"]
    assert yaml.safe_load(patch) == {"kind": "ClusterConfiguration",
                                     "scheduler": {"extraArgs": {"v": "10", "logging-format": "json"}}}


def test_scheduler_config_is_mounted_and_passed_to_kube_scheduler(tmp_path, workshop):
    sched = tmp_path / "sched.yaml"
    sched.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    config = _render(workshop, scheduler_config=sched)
    control = config["nodes"][0]
    assert control["extraMounts"][-1] == {"hostPath": str(sched), "containerPath": SCHEDULER_CONFIG, "readOnly": True}
    assert all(SCHEDULER_CONFIG not in str(n.get("extraMounts")) for n in config["nodes"][1:])
    (patch,) = config["kubeadmConfigPatches"]
    doc = yaml.safe_load(patch)
    assert doc["kind"] == "ClusterConfiguration" and "apiVersion" not in doc
    assert doc["scheduler"]["extraArgs"] == {"config": SCHEDULER_CONFIG, "v": "10", "logging-format": "json"}
    (vol,) = doc["scheduler"]["extraVolumes"]
    assert vol["hostPath"] == vol["mountPath"] == SCHEDULER_CONFIG and vol["readOnly"] is True
    jsonschema.validate(config, KIND_SCHEMA)


def test_machine_patches_are_absent_by_default(workshop):
    docs = [yaml.safe_load(p) for p in _render(workshop)["kubeadmConfigPatches"]]
    assert [d["kind"] for d in docs] == ["ClusterConfiguration"]  # only the scheduler's log flags


def test_cgroup_v1_and_skipped_phases_become_kubeadm_patches(workshop):
    config = _render(workshop, cgroup_v1=True, skip_phases=("addon/coredns",))
    docs = [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]]
    assert {"kind": "KubeletConfiguration", "failCgroupV1": False} in docs
    # a merge patch replaces kind's list, so kind's own "preflight" must stay in it
    assert {"kind": "InitConfiguration", "skipPhases": ["preflight", "addon/coredns"]} in docs
    jsonschema.validate(config, KIND_SCHEMA)


@pytest.mark.parametrize("key", ["node-role.kubernetes.io/worker", "kubernetes.io/role", "k8s.io/x"])
def test_labels_the_kubelet_may_not_set_are_refused(key):
    spec = _spec({"name": "gpu", "labels": {key: "x"}})
    with pytest.raises(ConfigError, match="kubelet may not set"):
        _render(spec)


@pytest.mark.parametrize("key", ["node.kubernetes.io/instance-type", "topology.kubernetes.io/zone", "team"])
def test_allowed_labels_pass(key):
    assert _render(_spec({"name": "gpu", "labels": {key: "x"}}))["nodes"][0]["labels"][key] == "x"


@pytest.mark.parametrize("minor", sorted(NODE_IMAGES), ids=sorted(NODE_IMAGES))
def test_node_images_are_pinned_by_digest(minor):
    img = node_image(minor)
    assert re.fullmatch(r"kindest/node:v\d+\.\d+\.\d+@sha256:[0-9a-f]{64}", img.ref)
    assert img.kubernetes.startswith(f"v{minor}.")
    assert node_image(f"v{img.kubernetes.removeprefix('v')}") == img  # "v1.35.0" works too


def test_unknown_kubernetes_version_is_a_clear_error():
    with pytest.raises(MockgpuError, match="no pinned kindest/node image for Kubernetes 1.20"):
        node_image("1.20")


def test_version_env_selects_the_image(monkeypatch, workshop):
    monkeypatch.setenv("MOCKGPU_KIND_K8S_VERSION", "1.36")
    assert all(n["image"] == NODE_IMAGES["1.36"].ref for n in _render(workshop)["nodes"])


def test_a_local_node_image_is_named_without_a_digest(monkeypatch, workshop):
    monkeypatch.setenv("MOCKGPU_KIND_K8S_VERSION", "1.36")  # the local image wins over the pinned minor
    monkeypatch.setenv("MOCKGPU_KIND_NODE_IMAGE", "mockgpu/kind-node:v1.37.2")
    img = node_image()
    assert (img.ref, img.name, img.kind_release, img.digest) == ("mockgpu/kind-node:v1.37.2",) * 2 + ("v0.33.0", "")
    assert all(n["image"] == "mockgpu/kind-node:v1.37.2" for n in _render(workshop)["nodes"])
    assert node_image("1.35") == NODE_IMAGES["1.35"]  # an explicit minor still means the pinned image


SCHED = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: gpu-binpack
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"""


def test_scheduler_file_for_kind_keeps_profiles_and_defaults_the_connection(tmp_path):
    from mockgpu.backends.kind.scheduler import scheduler_config_for_kind

    src = tmp_path / "sched.yaml"
    src.write_text(SCHED)
    out = yaml.safe_load(scheduler_config_for_kind(src))
    assert out["profiles"] == yaml.safe_load(SCHED)["profiles"]
    assert out["clientConnection"] == {"kubeconfig": "/etc/kubernetes/scheduler.conf"}
    src.write_text(SCHED + "clientConnection:\n  kubeconfig: /x.conf\n  qps: 50\n")
    assert yaml.safe_load(scheduler_config_for_kind(src))["clientConnection"] == {"kubeconfig": "/x.conf", "qps": 50}


@pytest.mark.parametrize(("text", "match"), [
    ("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n", "must be apiVersion"),
    ("[1, 2", "malformed YAML"),
    (None, "cannot read"),
], ids=["old-version", "bad-yaml", "missing"])
def test_bad_scheduler_file_is_a_config_error_before_anything_runs(tmp_path, workshop, text, match):
    from mockgpu.backends.base import UpOptions
    from mockgpu.backends.kind.render import render_options

    src = tmp_path / "sched.yaml"
    if text is not None:
        src.write_text(text)
    with pytest.raises(ConfigError, match=match) as err:
        render_options(UpOptions(spec=workshop, name="w", scheduler_config=src), tmp_path / "state")
    assert err.value.exit_code == 2


def test_up_mounts_the_generated_scheduler_file(tmp_path, workshop):
    from mockgpu.backends.base import UpOptions
    from mockgpu.backends.kind.render import render_options

    src = tmp_path / "sched.yaml"
    src.write_text(SCHED)
    opts = render_options(UpOptions(spec=workshop, name="w", scheduler_config=src), tmp_path / "state")
    assert opts.scheduler_source == src and opts.scheduler_config == tmp_path / "state" / "scheduler-config.yaml"
    mount = kind_config(workshop, opts)["nodes"][0]["extraMounts"][-1]
    assert mount["hostPath"] == str(tmp_path / "state" / "scheduler-config.yaml")
