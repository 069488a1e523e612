"""The DRA driver on kind, rendered: which nodes run it, what it mounts, its RBAC and entrypoint, the DeviceClasses,
where DRA pools are still refused, and `up` waiting for ResourceSlices (scripted runner). The live cluster is
test_kind_dra_e2e.py."""

from __future__ import annotations

import io
import json

import pytest
import yaml

from mockgpu.backends.base import UpOptions
from mockgpu.backends.common.dramanifests import CDI_DIR, PLUGINS_DIR, REGISTRY_DIR, dra_nodes
from mockgpu.backends.common.manifests import PluginManifestOptions, plugin_manifests
from mockgpu.backends.common.nodepaths import FAULTS_DIR
from mockgpu.backends.common.run import Result
from mockgpu.backends.kind import KindBackend
from mockgpu.backends.kind.config import DRIVER_DIR, KindRenderOptions, kind_config
from mockgpu.backends.kind.render import cluster_manifests
from mockgpu.backends.kubeconfig import render_manifests
from mockgpu.config.clusterspec import parse_spec
from mockgpu.config.inventory import device_plugin_inventory
from mockgpu.errors import ConfigError, MockgpuError

from .conftest import ROOT, STATE_DIR, FakeRunner, run_entrypoint, spec_at


def _spec(*pools: dict):
    return parse_spec({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "t"},
                       "spec": {"nodePools": list(pools)}})


def _pool(name: str, management: str = "devicePlugin", count: int = 4, **gpu) -> dict:
    return {"name": name, "count": 1, "gpu": {"model": "A100-SXM4-80GB", "count": count, "management": management,
                                              **gpu}}


@pytest.fixture
def dra():
    return spec_at(ROOT / "clusters" / "dra.yaml")


def _docs(spec):
    return cluster_manifests(UpOptions(spec=spec, name="t"))


def _get(docs, kind, name):
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


@pytest.mark.parametrize(("pools", "nodes"), [
    ([_pool("dp")], []),
    ([_pool("d", "dra")], ["d-0"]),
    ([_pool("b", "both", dra={"gpus": [3]})], ["b-0"]),
    ([_pool("dp"), _pool("d", "dra"), _pool("b", "both", dra={"gpus": [0, 1]})], ["d-0", "b-0"]),
    ([{"name": "cpu", "count": 2}, _pool("d", "dra")], ["d-0"]),
], ids=["device-plugin-only", "dra", "both", "mixed", "cpu-and-dra"])
def test_the_dra_driver_runs_exactly_on_the_nodes_with_dra_gpus(pools, nodes):
    docs = _docs(_spec(*pools))
    daemonsets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "DaemonSet"}
    if not nodes:  # nothing of DRA is deployed for a spec without DRA GPUs
        assert set(daemonsets) == {"mockgpu-device-plugin"}
        assert not [d for d in docs if d["kind"] == "DeviceClass" or "dra" in d["metadata"]["name"]]
        return
    assert set(daemonsets) == {"mockgpu-device-plugin", "mockgpu-dra-driver"}
    pod = daemonsets["mockgpu-dra-driver"]["spec"]["template"]["spec"]
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": "mockgpu.io/node", "operator": "In", "values": nodes}]


def test_the_driver_pod_mounts_the_kubelet_plugin_dirs_cdi_and_driver_at_the_same_paths(dra):
    docs = _docs(dra)
    plugin = _get(docs, "DaemonSet", "mockgpu-device-plugin")["spec"]["template"]["spec"]
    pod = _get(docs, "DaemonSet", "mockgpu-dra-driver")["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    host = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert host == {"plugins": PLUGINS_DIR, "plugins-registry": REGISTRY_DIR, "cdi": CDI_DIR, "driver": DRIVER_DIR,
                    "faults": FAULTS_DIR}  # the injected faults beside the driver dir (the CDI spec mounts them ro)
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert {k: mounts[k] for k in host} == host  # same paths inside: the CDI spec names the node's paths
    assert (PLUGINS_DIR, REGISTRY_DIR, CDI_DIR) == (
        "/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/var/run/cdi")
    # the same image, pull policy, security context and spec/name-map volume as the device plugin
    dp = plugin["containers"][0]
    assert (c["image"], c["imagePullPolicy"], c["securityContext"]) == (
        dp["image"], dp["imagePullPolicy"], dp["securityContext"])
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    assert next(v for v in pod["volumes"] if v["name"] == "mockgpu-config") == next(
        v for v in plugin["volumes"] if v["name"] == "mockgpu-config")
    assert pod["tolerations"] == [{"operator": "Exists"}] and pod["priorityClassName"] == "system-node-critical"


def test_rbac_is_what_the_driver_calls(dra):
    docs = _docs(dra)
    role = _get(docs, "ClusterRole", "mockgpu-dra-driver")
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): set(r["verbs"]) for r in role["rules"]}
    assert rules == {
        (("resource.k8s.io",), ("resourceslices",)): {"create", "get", "list", "watch", "update", "patch", "delete"},
        (("resource.k8s.io",), ("resourceclaims",)): {"get", "list", "watch"},
        (("",), ("nodes",)): {"get"},
    }
    binding = _get(docs, "ClusterRoleBinding", "mockgpu-dra-driver")
    sa = _get(docs, "ServiceAccount", "mockgpu-dra-driver")
    assert binding["roleRef"]["name"] == "mockgpu-dra-driver"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                    "namespace": sa["metadata"]["namespace"]}]
    pod = _get(docs, "DaemonSet", "mockgpu-dra-driver")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == sa["metadata"]["name"]


def test_device_classes_are_the_shipped_file_applied_after_the_driver(dra):
    docs = _docs(dra)
    shipped = [d for d in yaml.safe_load_all((ROOT / "clusters" / "dra" / "deviceclasses.yaml").read_text()) if d]
    assert [d for d in docs if d["kind"] == "DeviceClass"] == shipped
    kinds = [d["kind"] for d in docs]
    assert kinds.index("DeviceClass") > kinds.index("DaemonSet")
    assert [d["metadata"]["name"] for d in shipped] == ["gpu.mockgpu.io", "mig.gpu.mockgpu.io"]


def test_the_device_plugin_keeps_only_the_device_plugin_gpus_of_a_both_pool(dra):
    """Both DaemonSets read the same spec; `mockgpu device-plugin` advertises the GPUs DRA does not take."""
    assert [g.index for g in device_plugin_inventory(dra, "both-0").gpus] == [0, 1]
    assert [g.index for g in device_plugin_inventory(dra, "dra-0").gpus] == []
    assert dra_nodes(dra) == ["dra-0", "both-0"]


def _entrypoint_run(dra, tmp_path, node_name):
    pod = _get(_docs(dra), "DaemonSet", "mockgpu-dra-driver")["spec"]["template"]["spec"]
    return run_entrypoint(pod["containers"][0]["command"][-1], tmp_path, {"both-0": "both-0"}, node_name)


def test_entrypoint_runs_the_dra_driver_for_its_spec_node(dra, tmp_path):
    proc = _entrypoint_run(dra, tmp_path, "both-0")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("|")[:-1] == [
        "dra-driver", "--spec", f"{tmp_path}/etc-mockgpu/spec.yaml", "--node", "both-0",
        "--plugin-dir", PLUGINS_DIR, "--registry-dir", REGISTRY_DIR, "--cdi-dir", CDI_DIR, "--driver-dir", DRIVER_DIR]


def test_entrypoint_exits_with_one_line_for_an_unmapped_node(dra, tmp_path):
    proc = _entrypoint_run(dra, tmp_path, "stranger")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == "mockgpu: node stranger is not in ConfigMap mockgpu-node-names\n"


# Where DRA pools are still refused: nothing there deploys a DRA driver.
@pytest.mark.parametrize(("where", "refused"), [
    ("kind", None),
    ("kind fake-gpu-operator", "fake-gpu-operator has no DRA driver"),
    ("kubeconfig", "the kubeconfig backend does not deploy the DRA driver"),
])
@pytest.mark.parametrize("management", ["dra", "both"])
def test_dra_pools_are_refused_only_where_no_dra_driver_is_deployed(where, refused, management):
    extra = {"dra": {"gpus": [1]}} if management == "both" else {}
    spec = _spec(_pool("dp"), _pool("p", management, **extra))

    def render():
        if where == "kubeconfig":
            return render_manifests(spec, {"node-a": "dp-0", "node-b": "p-0"})
        plugin = "fake-gpu-operator" if "fake" in where else "mockgpu"
        kind_config(spec, KindRenderOptions(name="t", state_dir=STATE_DIR, device_plugin=plugin))
        return cluster_manifests(UpOptions(spec=spec, name="t", device_plugin=plugin))

    if refused is None:
        assert any(d["metadata"]["name"] == "mockgpu-dra-driver" for d in render())
        return
    with pytest.raises(ConfigError) as err:
        render()
    assert str(err.value).count("\n") == 0
    assert "spec.nodePools[1].gpu.management" in str(err.value)
    assert f"'{management}' needs the DRA driver: {refused}" in str(err.value)


def test_plugin_manifests_without_dra_refuse_even_a_both_pool():
    spec = _spec(_pool("b", "both", dra={"gpus": [0]}))
    with pytest.raises(ConfigError):
        plugin_manifests(spec, PluginManifestOptions(image="mockgpu:0.1.0", node_names={"b-0": "b-0"}, dra=False))


# `up` waits for the DRA pools as for the device plugin's allocatable (scripted runner).
def _slices(pools: dict[str, tuple[int, int]]) -> str:
    """node -> (slices published, slices in the pool)."""
    items = []
    for node, (published, total) in pools.items():
        for i in range(published):
            items.append({"spec": {"driver": "gpu.mockgpu.io", "nodeName": node, "devices": [{"name": f"d{i}"}],
                                   "pool": {"name": node, "generation": 1, "resourceSliceCount": total}}})
    return json.dumps({"items": items})


class DraCluster:
    def __init__(self, slices: str):
        self.slices = slices

    def __call__(self, args, stdin):
        cmd = " ".join(args)
        if cmd.startswith("kind version"):
            return Result(0, "kind v0.33.0 go1.25 linux/amd64\n", "")
        if cmd.startswith("kubectl version"):
            return Result(0, "Client Version: v1.35.0\n", "")
        if cmd == "kind get clusters":
            return Result(0, "", "No kind clusters found.\n")
        if "get nodes -o json" in cmd:
            items = [{"metadata": {"name": "both-0", "labels": {"mockgpu.io/node": "both-0"}},
                      "status": {"allocatable": {"nvidia.com/gpu": "2"}}},
                     {"metadata": {"name": "dra-0", "labels": {"mockgpu.io/node": "dra-0"}},
                      "status": {"allocatable": {"cpu": "8"}}}]
            return Result(0, json.dumps({"items": items}), "")
        if "get resourceslices -o json" in cmd:
            return Result(0, self.slices, "")
        return Result(0, "", "")


@pytest.mark.parametrize(("pools", "ok"), [
    ({"dra-0": (2, 2), "both-0": (2, 2)}, True),
    ({"dra-0": (1, 2), "both-0": (2, 2)}, False),  # half a pool is not published yet
    ({"both-0": (2, 2)}, False),
])
def test_up_waits_until_every_dra_node_published_its_whole_pool(tmp_path, dra, pools, ok):
    runner = FakeRunner(DraCluster(_slices(pools)))
    out = io.StringIO()
    backend = KindBackend(runner=runner, out=out, state_root=tmp_path)
    if ok:
        backend.up(UpOptions(spec=dra, name="t"))
        assert "dra-0: gpu.mockgpu.io: 2 devices in ResourceSlices" in out.getvalue()
        assert "both-0: nvidia.com/gpu=2, gpu.mockgpu.io: 2 devices in ResourceSlices" in out.getvalue()
        assert runner.slept == 0
        return
    with pytest.raises(MockgpuError, match=r"no gpu.mockgpu.io ResourceSlices of dra-0: see `kubectl -n "
                                           r"mockgpu-system logs ds/mockgpu-dra-driver`"):
        backend.up(UpOptions(spec=dra, name="t"))
    assert runner.slept >= 180


@pytest.mark.parametrize(("label", "refused"), [("true", False), ("", True), ("<no value>", True)])
def test_a_local_node_image_without_cdi_is_refused_for_dra_specs(tmp_path, dra, monkeypatch, label, refused):
    monkeypatch.setenv("MOCKGPU_KIND_NODE_IMAGE", "mockgpu/kind-node:test")
    handler = DraCluster(_slices({"dra-0": (1, 1), "both-0": (1, 1)}))

    def with_label(args, stdin):
        if args[:3] == ["docker", "image", "inspect"] and "mockgpu.node-image.cdi" in " ".join(args):
            return Result(0, label + "\n", "")
        return handler(args, stdin)

    runner = FakeRunner(with_label)
    backend = KindBackend(runner=runner, out=io.StringIO(), state_root=tmp_path)
    if not refused:
        backend.up(UpOptions(spec=dra, name="t"))
        return
    with pytest.raises(MockgpuError, match=r"node image mockgpu/kind-node:test has no label mockgpu.node-image.cdi"):
        backend.up(UpOptions(spec=dra, name="t"))
    assert not runner.called("kind", "create", "cluster") and not runner.called("docker", "build")


@pytest.mark.parametrize("name", ["dra", "workshop"])
def test_the_gpu_state_publisher_reads_claims_only_where_there_are_dra_pools(name):
    docs = _docs(spec_at(ROOT / "clusters" / f"{name}.yaml"))
    pod = _get(docs, "DaemonSet", "mockgpu-device-plugin")["spec"]["template"]["spec"]
    publisher = next(c for c in pod["containers"] if c["name"] == "gpu-state-publisher")
    script = publisher["command"][-1]
    cdi = [m for m in publisher["volumeMounts"] if m["name"] == "cdi"]
    if name == "workshop":
        assert "--cdi-dir" not in script and not cdi and not any(v["name"] == "cdi" for v in pod["volumes"])
        assert not [d for d in docs if d["metadata"]["name"] == "mockgpu-gpu-state-claims"]
        return
    assert script.endswith(f" --spec /etc/mockgpu/spec.yaml --cdi-dir {CDI_DIR}\n") and script.count("\n") == 2
    assert cdi == [{"name": "cdi", "mountPath": CDI_DIR, "readOnly": True}]
    role = _get(docs, "ClusterRole", "mockgpu-gpu-state-claims")
    assert role["rules"] == [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list"]}]
    binding = _get(docs, "ClusterRoleBinding", "mockgpu-gpu-state-claims")
    assert binding["subjects"][0]["name"] == pod["serviceAccountName"] == "mockgpu-device-plugin"


def test_fake_gpu_operator_with_dra_pools_fails_before_any_command(tmp_path, dra):
    runner = FakeRunner(DraCluster(_slices({})))
    backend = KindBackend(runner=runner, out=io.StringIO(), state_root=tmp_path)
    with pytest.raises(ConfigError, match=r"'dra' needs the DRA driver: fake-gpu-operator has no DRA driver"):
        backend.up(UpOptions(spec=dra, name="t", device_plugin="fake-gpu-operator"))
    assert runner.calls == [] and not (tmp_path / "t").exists()
