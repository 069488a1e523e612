"""The kubeconfig backend: which nodes of an existing cluster get fake GPUs, and what it applies."""

from __future__ import annotations

import io
import json

import pytest
import yaml

from mockgpu.backends.base import UpOptions
from mockgpu.backends.common.run import Result
from mockgpu.backends.kubeconfig import KubeconfigBackend, render_all, render_manifests
from mockgpu.backends.kubeconfig.placement import assign_nodes, ineligible_reason, label_args
from mockgpu.errors import MockgpuError

from .conftest import FakeRunner


def node(name, labels=None, alloc=None):
    return {"metadata": {"name": name, "labels": labels or {}}, "status": {"allocatable": alloc or {"cpu": "8"}}}


@pytest.mark.parametrize(("n", "reason"), [
    (node("a"), None),
    (node("a", {"nvidia.com/gpu.present": "true"}), "real GPUs (nvidia.com/gpu.present=true)"),
    (node("a", alloc={"nvidia.com/gpu": "8"}), "real GPUs (allocatable nvidia.com/gpu=8)"),
    (node("a", alloc={"nvidia.com/gpu": "0"}), None),
    (node("a", {"node-role.kubernetes.io/control-plane": ""}), "control-plane node"),
    (node("a", {"mockgpu.io/node": "whole-0"}, {"nvidia.com/gpu": "4"}), None),
    (node("a", {"mockgpu.io/node": "whole-0", "nvidia.com/gpu.present": "true"}),
     "real GPUs (nvidia.com/gpu.present=true)"),
], ids=["plain", "gfd-label", "gpu-allocatable", "zero-gpus", "control-plane", "ours-from-before", "labelled-real"])
def test_eligibility_rule(n, reason):
    assert ineligible_reason(n) == reason


def test_assignment_keeps_earlier_labels_and_fills_in_name_order(workshop):
    nodes = [node("c"), node("b", {"mockgpu.io/node": "mig-0"}), node("a"), node("gpu", alloc={"nvidia.com/gpu": "8"})]
    assert assign_nodes(workshop, nodes) == {"a": "whole-0", "b": "mig-0", "c": "shared-0"}


def test_too_few_nodes_is_one_clear_error(workshop):
    nodes = [node("a"), node("gpu", {"nvidia.com/gpu.present": "true"}),
             node("cp", {"node-role.kubernetes.io/control-plane": ""})]
    with pytest.raises(MockgpuError) as err:
        assign_nodes(workshop, nodes)
    assert str(err.value) == ("spec 'workshop' needs 3 nodes without real GPUs, the cluster has 1; not used: "
                              "cp: control-plane node; gpu: real GPUs (nvidia.com/gpu.present=true)")


def test_daemonset_avoids_real_gpu_nodes_and_may_pull(workshop):
    ds = render_manifests(workshop, {"a": "whole-0"})[-1]
    (term,) = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "mockgpu.io/node", "operator": "Exists"},
        {"key": "nvidia.com/gpu.present", "operator": "NotIn", "values": ["true"]},
    ]
    assert ds["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_image_override(monkeypatch, workshop):
    monkeypatch.setenv("MOCKGPU_IMAGE", "registry.example/mockgpu:0.1.0")
    assert render_manifests(workshop, {})[-1]["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "registry.example/mockgpu:0.1.0"


def test_labels_tie_nodes_without_gfd_labels(workshop):
    args = label_args(workshop, {"a": "whole-0"})
    assert args == [["label", "node", "a", "--overwrite", "mockgpu.io/node=whole-0", "mockgpu.io/pool=whole"]]


def test_dry_run_stream_lists_label_commands_then_manifests(workshop):
    out = render_all(workshop, {"a": "whole-0", "b": "mig-0", "c": "shared-0"})
    assert "#   kubectl label node b --overwrite mockgpu.io/node=mig-0 mockgpu.io/pool=mig\n" in out
    assert [d["kind"] for d in yaml.safe_load_all(out)][-1] == "DaemonSet"


def test_up_labels_applies_and_waits(tmp_path, workshop):
    cluster = {"items": [node("a"), node("b"), node("c")]}

    def handler(args, stdin):
        if args[:2] == ["kubectl", "version"]:
            return Result(0, "Client Version: v1.35.0\n", "")
        if args[-3:] == ["nodes", "-o", "json"]:
            return Result(0, json.dumps(cluster), "")
        if "label" in args:
            n = next(i for i in cluster["items"] if i["metadata"]["name"] == args[args.index("node") + 1])
            n["metadata"]["labels"].update(a.split("=", 1) for a in args if "=" in a)
            n["status"]["allocatable"]["nvidia.com/gpu"] = "2"  # the plugin registers right away here
        return Result(0, "", "")

    runner = FakeRunner(handler)
    kubeconfig = tmp_path / "kc"
    info = KubeconfigBackend(runner=runner, out=io.StringIO()).up(
        UpOptions(spec=workshop, name="workshop", kubeconfig=kubeconfig))
    assert info.state == "running" and info.kubeconfig == kubeconfig
    assert all(c[:3] == ["kubectl", "--kubeconfig", str(kubeconfig)] for c in runner.calls if c[0] == "kubectl"
               and c[1] != "version")
    assert runner.called("kubectl", "--kubeconfig", str(kubeconfig), "apply", "-f", "-")


def test_up_refuses_fake_gpu_operator(workshop):
    runner = FakeRunner(lambda a, i: Result(0, "Client Version: v1.35.0", ""))
    with pytest.raises(MockgpuError, match="only mockgpu's device plugin") as err:
        KubeconfigBackend(runner=runner).up(UpOptions(spec=workshop, name="w", device_plugin="fake-gpu-operator"))
    assert err.value.exit_code == 2
