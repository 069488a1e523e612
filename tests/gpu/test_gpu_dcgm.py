"""dcgm-exporter's metrics over the GPU-state document, and a node's exporter served over HTTP on 127.0.0.1:
names, help strings, labels (incl. pod/namespace/container of a held device), MIG rules, discovery and file_sd."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mockgpu.config import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.control.kubelet.exporter import MetricsExporter, file_sd, loopback_url, write_file_sd
from mockgpu.gpu.cuda import CudaRuntime
from mockgpu.gpu.dcgm import FIELDS, metrics_text
from mockgpu.gpu.driver import ENV_DRIVER_DIR, Driver, write_node_driver
from mockgpu.gpu.state import DeviceAllocation, StateInputs, gpu_state

ROOT = Path(__file__).resolve().parents[2]
SPEC = load_spec(ROOT / "clusters" / "workshop.yaml")
GIB = 1 << 30


def driver_of(tmp_path: Path, node: str) -> Driver:
    write_node_driver(tmp_path / node, node_inventory(SPEC, node))
    return Driver(tmp_path / node)


def as_pod(driver: Driver, pod: str, uuid: str) -> CudaRuntime:
    return CudaRuntime({ENV_DRIVER_DIR: str(driver.dir), "NVIDIA_VISIBLE_DEVICES": uuid,
                        "MOCKGPU_POD_NAMESPACE": "ml", "MOCKGPU_POD_NAME": pod, "MOCKGPU_CONTAINER_NAME": "trainer"})


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Parse exposition text with prometheus_client's own parser (what a scraper reads)."""
    return [(s.name, s.labels, s.value) for fam in text_string_to_metric_families(text) for s in fam.samples]


def test_help_and_type_lines_are_dcgm_exporters(tmp_path: Path) -> None:
    text = metrics_text(gpu_state(driver_of(tmp_path, "whole-0")))
    # from NVIDIA/dcgm-exporter etc/default-counters.csv and etc/dcp-metrics-included.csv
    for name, help_text in [("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
                            ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
                            ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
                            ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered."),
                            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.")]:
        assert FIELDS[name] == help_text
        assert f"# HELP {name} {help_text}\n# TYPE {name} gauge\n" in text


@pytest.mark.parametrize(("node", "series_per_field", "util_rows"), [
    ("whole-0", 4, 4),     # 4 whole GPUs: every field once per GPU
    ("shared-0", 2, 2),    # 2 time-sliced GPUs, nobody holding a replica: once per GPU
    ("mig-0", 10, 0),      # 2 MIG-enabled A100s, 10 instances: memory per instance, no DEV_GPU_UTIL (#430)
], ids=["whole", "time-sliced", "mig"])
def test_series_per_device(tmp_path: Path, node: str, series_per_field: int, util_rows: int) -> None:
    rows = samples(metrics_text(gpu_state(driver_of(tmp_path, node))))
    count = {n: sum(1 for r in rows if r[0] == n) for n in FIELDS}
    assert count["DCGM_FI_DEV_FB_USED"] == count["DCGM_FI_DEV_FB_FREE"] == series_per_field
    assert count["DCGM_FI_DEV_XID_ERRORS"] == count["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] == series_per_field
    assert count["DCGM_FI_DEV_GPU_UTIL"] == util_rows
    for _, labels, _ in rows:
        assert {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"} <= set(labels)
        assert labels["Hostname"] == node and labels["device"] == f"nvidia{labels['gpu']}"
        assert ("GPU_I_PROFILE" in labels) == ("GPU_I_ID" in labels) == (node == "mig-0")
        assert not {"pod", "namespace", "container"} & set(labels)  # nobody holds a device


def test_a_held_device_carries_its_pod_and_what_it_uses(tmp_path: Path) -> None:
    drv = driver_of(tmp_path, "shared-0")
    g0 = drv.inventory.gpus[0]
    a = as_pod(drv, "train-a", g0.uuid)
    a.malloc(0, 3 * GIB)
    a.report_utilization(0, 70)
    allocs = tuple(DeviceAllocation("ml", p, "trainer", "nvidia.com/gpu", (f"{g0.uuid}::{i}",), (g0.uuid,))
                   for i, p in enumerate(["train-a", "train-b"]))
    rows = samples(metrics_text(gpu_state(drv, StateInputs(allocs, {g0.uuid: 4}))))
    used = {r[1].get("pod"): r for r in rows if r[0] == "DCGM_FI_DEV_FB_USED"}
    assert set(used) == {"train-a", "train-b", None}  # both replica holders of GPU 0 (same value), GPU 1 unheld
    labels = used["train-a"][1]
    assert labels == {"gpu": "0", "UUID": g0.uuid, "pci_bus_id": g0.pci_bus_id, "device": "nvidia0",
                      "modelName": "NVIDIA A100-SXM4-80GB", "Hostname": "shared-0", "container": "trainer",
                      "namespace": "ml", "pod": "train-a"}
    assert used["train-a"][2] == used["train-b"][2] == 3072
    free = next(r for r in rows if r[0] == "DCGM_FI_DEV_FB_FREE" and r[1].get("pod") == "train-a")
    assert free[2] == 81920 - 3072
    util = {r[1].get("pod"): r[2] for r in rows if r[0] == "DCGM_FI_DEV_GPU_UTIL"}
    assert util == {"train-a": 70, "train-b": 70, None: 0}
    active = next(r for r in rows if r[0] == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" and r[1].get("pod") == "train-a")
    assert active[2] == pytest.approx(0.7)


def test_mig_instance_labels_and_xid(tmp_path: Path) -> None:
    drv = driver_of(tmp_path, "mig-0")
    inst = drv.inventory.gpus[1].mig[0]
    as_pod(drv, "small", inst.uuid).malloc(0, GIB)
    drv.inject_xid(inst.uuid, 48)
    alloc = DeviceAllocation("ml", "small", "trainer", f"nvidia.com/mig-{inst.profile}", (inst.uuid,), (inst.uuid,))
    rows = samples(metrics_text(gpu_state(drv, StateInputs((alloc,)))))
    mine = {r[0]: r for r in rows if r[1].get("pod") == "small"}
    assert set(mine) == {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_XID_ERRORS",
                         "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}
    labels = mine["DCGM_FI_DEV_FB_USED"][1]
    assert (labels["GPU_I_PROFILE"], labels["GPU_I_ID"], labels["gpu"]) == (inst.profile, str(inst.gi_id), "1")
    assert mine["DCGM_FI_DEV_FB_USED"][2] == 1024 and mine["DCGM_FI_DEV_XID_ERRORS"][2] == 48


@pytest.mark.parametrize(("value", "ok"), [
    ("http://127.0.0.1:9400/metrics", True),
    ("http://[::1]:9400/metrics", True),
    ("http://10.0.0.5:9400/metrics", False),      # not loopback: an annotation must not send scrapers elsewhere
    ("http://example.com:9400/metrics", False),
    ("https://127.0.0.1:9400/metrics", False),
    ("http://127.0.0.1/metrics", False),          # no port
    ("http://127.0.0.1:9400/other", False),
    ("http://u:p@127.0.0.1:9400/metrics", False),
    ("http://127.0.0.1:99999/metrics", False),
    (None, False),
], ids=lambda v: str(v))
def test_only_loopback_endpoints_are_discovered(value: object, ok: bool) -> None:
    assert (loopback_url(value) is not None) == ok


def test_exporter_serves_fresh_values_on_loopback(tmp_path: Path) -> None:
    drv = driver_of(tmp_path, "whole-0")
    g2 = drv.inventory.gpus[2]
    allocs: list[DeviceAllocation] = []
    exp = MetricsExporter("whole-0", drv.dir, lambda: StateInputs(tuple(allocs))).start()
    try:
        assert exp.url.startswith("http://127.0.0.1:") and exp.port > 0

        def scrape() -> list[tuple[str, dict[str, str], float]]:
            with urllib.request.urlopen(exp.url, timeout=5) as r:
                assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                return samples(r.read().decode())

        assert not any("pod" in r[1] for r in scrape())
        as_pod(drv, "p", g2.uuid).malloc(0, 5 * GIB)
        allocs.append(DeviceAllocation("ml", "p", "trainer", "nvidia.com/gpu", (g2.uuid,), (g2.uuid,)))
        (row,) = [r for r in scrape() if r[0] == "DCGM_FI_DEV_FB_USED" and r[1].get("pod") == "p"]
        assert row[1]["UUID"] == g2.uuid and row[2] == 5120
    finally:
        exp.stop()


def test_file_sd_groups(tmp_path: Path) -> None:
    urls = {"b-0": "http://127.0.0.1:4001/metrics", "a-0": "http://127.0.0.1:4000/metrics"}
    want = [{"targets": ["127.0.0.1:4000"], "labels": {"__metrics_path__": "/metrics", "mockgpu_cluster": "c",
                                                        "mockgpu_node": "a-0"}},
            {"targets": ["127.0.0.1:4001"], "labels": {"__metrics_path__": "/metrics", "mockgpu_cluster": "c",
                                                        "mockgpu_node": "b-0"}}]
    assert file_sd(urls, "c") == want
    assert json.loads(write_file_sd(tmp_path / "t.json", urls, "c").read_text()) == want
