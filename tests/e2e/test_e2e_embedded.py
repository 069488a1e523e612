"""End to end on the embedded backend with the scheduler loop and kubelets: the issue's done-when scenarios."""

from __future__ import annotations

import functools
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polling
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.config import load_spec
from mockgpu.config.inventory import node_inventory

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)
# kube-scheduler v1.34+ (which the scheduler models): a request above every node's allocatable is
# unresolvable, so preemption is "not helpful" (older releases said "No preemption victims found ...").
UNSCHEDULABLE = ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: "
                 "4 Preemption is not helpful for scheduling.")


wait_for = functools.partial(polling.wait_for, timeout=20.0)


def pod(name: str, command: list[str], limits: dict[str, str], node: str | None = None) -> dict:
    spec: dict = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                  "containers": [{"name": "main", "image": "mockgpu/workload", "command": command,
                                  "resources": {"limits": limits}}]}
    if node:
        spec["nodeSelector"] = {"mockgpu.io/node": node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def running_cluster(spec: Path, home: Path):
    return EmbeddedCluster(spec, home=home, kubelets=True, scheduler=True, delete_on_exit=True)


class Pods:
    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.core = client.CoreV1Api(cluster.api_client())

    def get(self, name: str) -> client.V1Pod:
        return self.core.read_namespaced_pod(name, "default")

    def phase(self, name: str) -> str:
        return self.get(name).status.phase

    def log(self, name: str) -> str:
        try:
            return self.core.read_namespaced_pod_log(name, "default")
        except ApiException as exc:
            if exc.status == 400:  # container not started yet
                return ""
            raise

    def delete_all(self, names: list[str]) -> None:
        for n in names:
            try:
                self.core.delete_namespaced_pod(n, "default", grace_period_seconds=0)
            except ApiException:
                pass


def test_seed_4x2_pending_four_gpu_pod_and_running_two_gpu_pod(tmp_path: Path) -> None:
    spec = ROOT / "clusters" / "seed-4x2.yaml"
    with running_cluster(spec, tmp_path) as c:
        pods = Pods(c)
        pods.core.create_namespaced_pod("default", pod("big", ["sleep", "30"], {"nvidia.com/gpu": "4"}))
        pods.core.create_namespaced_pod("default", pod("pair", ["mockgpu-workload", "inspect"],
                                                       {"nvidia.com/gpu": "2"}))
        wait_for(lambda: pods.phase("pair") == "Succeeded", what="pair Succeeded")
        events = wait_for(lambda: [e for e in pods.core.list_namespaced_event(
            "default", field_selector="involvedObject.name=big").items if e.reason == "FailedScheduling"],
            what="FailedScheduling")
        assert events[0].message == UNSCHEDULABLE and events[0].type == "Warning"
        big = pods.get("big")
        assert big.status.phase == "Pending" and not big.spec.node_name
        cond = next(x for x in big.status.conditions if x.type == "PodScheduled")
        assert (cond.status, cond.reason) == ("False", "Unschedulable")
        node = pods.get("pair").spec.node_name
        line = next(ln for ln in pods.log("pair").splitlines() if ln.startswith("NVIDIA_VISIBLE_DEVICES="))
        uuids = line.split("=", 1)[1].split(",")
        assert len(uuids) == 2 and set(uuids) <= {g.uuid for g in node_inventory(load_spec(spec), node).gpus}
        annotations = pods.get("pair").metadata.annotations
        assert annotations["mockgpu.io/selected-node"] == node
        # the pending timeline: created, first unschedulable / bound (scheduler), started (kubelet's status)
        assert "mockgpu.io/first-unschedulable-time" in big.metadata.annotations
        assert "mockgpu.io/bound-time" in annotations
        assert pods.get("pair").status.container_statuses[0].state.terminated.started_at is not None
        # concurrent submissions through the scheduler: 10 one-GPU pods for 8 GPUs
        names = [f"one-{i}" for i in range(10)]
        with ThreadPoolExecutor(5) as ex:
            list(ex.map(lambda n: pods.core.create_namespaced_pod(
                "default", pod(n, ["sleep", "30"], {"nvidia.com/gpu": "1"})), names))
        wait_for(lambda: sum(pods.phase(n) == "Running" for n in names) == 8, what="8 Running")
        ids = [i for k in c.control_plane.kubelets.values() for res in k.dm.pod_devices().values()
               for i in res.get("nvidia.com/gpu", [])]
        assert len(ids) == len(set(ids)) == 8
        assert sum(pods.phase(n) == "Pending" and not pods.get(n).spec.node_name for n in names) == 2
        pods.delete_all(["big", "pair", *names])


def _uuid_in_log(text: str) -> str | None:
    m = re.search(r"\((GPU-[0-9a-f-]+|MIG-[0-9a-f-]+)\)", text)
    return m.group(1) if m else None


BLAST = {
    # The neighbours die only if they retry while the greedy pod's free memory is below their 2 GiB but above
    # its own step (once the greedy pod itself runs out it exits and frees everything): 256 MiB steps every
    # 40 ms keep that window open ~7 steps (~280 ms), several of the neighbours' 50 ms retries even on a busy
    # machine. With 1 GiB steps it was one 20 ms step, and a loaded CI machine missed it.
    "time-slicing": ("shared-0", "nvidia.com/gpu", ["--kv-step", "256MiB", "--interval", "0.04"],
                     ["--retry-alloc", "2GiB"]),
    "mig": ("mig-0", "nvidia.com/mig-1g.10gb", ["--kv-step", "512MiB"], ["--retry-alloc", "1GiB"]),
}


@pytest.mark.parametrize("mode", sorted(BLAST), ids=str)
def test_oom_blast_radius_on_workshop(tmp_path: Path, mode: str) -> None:
    """Three train --retry-alloc pods, then a greedy infer pod on the same node: under time-slicing the trains
    that share the greedy pod's physical GPU die with CUDA OOM on their next allocation; under MIG none do."""
    node, resource, infer_args, train_args = BLAST[mode]
    with running_cluster(ROOT / "clusters" / "workshop.yaml", tmp_path) as c:
        pods = Pods(c)
        trains = [f"train-{i}" for i in range(3)]
        for name in trains:
            pods.core.create_namespaced_pod("default", pod(name, [
                "mockgpu-workload", "train", "--memory", "1GiB", "--duration", "0", "--interval", "0.05",
                "--log-every", "1000", *train_args], {resource: "1"}, node))
        where = {n: wait_for(lambda n=n: _uuid_in_log(pods.log(n)), what=f"{n} holds memory") for n in trains}
        pods.core.create_namespaced_pod("default", pod("greedy", [
            "mockgpu-workload", "infer", *(["--interval", "0.02"] if "--interval" not in infer_args else []),
            *infer_args], {resource: "1"}, node))
        wait_for(lambda: pods.phase("greedy") == "Failed", timeout=60, what="greedy Failed")
        greedy_uuid = _uuid_in_log(pods.log("greedy"))
        assert "CUDA error: out of memory" in pods.log("greedy")
        victims = {n for n in trains if where[n] == greedy_uuid}
        if mode == "mig":
            assert victims == set()
        else:
            assert victims, f"no train pod shares {greedy_uuid}: {where}"
        for n in trains:
            if n in victims:
                wait_for(lambda n=n: pods.phase(n) == "Failed", what=f"{n} Failed")
                term = pods.get(n).status.container_statuses[0].state.terminated
                assert (term.exit_code, term.reason) == (1, "Error")
                assert "RuntimeError: CUDA error: out of memory" in pods.log(n)
            else:
                assert pods.phase(n) == "Running", f"{n} on {where[n]} should be unaffected"

        def oom_pods() -> set[str] | None:
            cm = pods.core.read_namespaced_config_map(f"gpu-state-{node}", "mockgpu-system")
            got = {e["pod"] for e in json.loads(cm.data["state.json"])["oomEvents"]}
            return got if got >= victims | {"greedy"} else None
        assert wait_for(oom_pods, what="OOM events published") == victims | {"greedy"}
        pods.delete_all([*trains, "greedy"])
