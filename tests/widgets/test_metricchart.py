"""The live metric chart: series by GPU or by pod, one step at a time, from exporters or a Prometheus."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mockgpu.config import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.control.kubelet.exporter import MetricsExporter
from mockgpu.gpu.cuda import CudaRuntime
from mockgpu.gpu.driver import ENV_DRIVER_DIR, write_node_driver
from mockgpu.gpu.state import DeviceAllocation, StateInputs
from mockgpu.widgets.metricchart import ExporterSource, History, MetricChart, PrometheusSource, chart_png

ROOT = Path(__file__).resolve().parents[2]
GPU0 = {"gpu": "0", "UUID": "GPU-a", "Hostname": "n-0"}
MIG = {"gpu": "1", "UUID": "GPU-b", "Hostname": "n-0", "GPU_I_PROFILE": "1g.10gb", "GPU_I_ID": "9"}
HELD = {**GPU0, "namespace": "ml", "pod": "train", "container": "c"}


@pytest.mark.parametrize(("metric", "by", "samples", "want"), [
    ("DCGM_FI_DEV_GPU_UTIL", "gpu", [("DCGM_FI_DEV_GPU_UTIL", GPU0, 40.0)], {"n-0 GPU 0": 40.0}),
    ("DCGM_FI_DEV_FB_USED", "gpu", [("DCGM_FI_DEV_FB_USED", MIG, 512.0)], {"n-0 GPU 1 MIG 1g.10gb #9": 512.0}),
    ("DCGM_FI_DEV_GPU_UTIL", "pod", [("DCGM_FI_DEV_GPU_UTIL", GPU0, 40.0)], {}),  # nobody holds it
    ("DCGM_FI_DEV_GPU_UTIL", "pod", [("DCGM_FI_DEV_GPU_UTIL", HELD, 70.0), ("DCGM_FI_DEV_GPU_UTIL",
                                     {**HELD, "gpu": "1"}, 50.0)], {"ml/train": 70.0}),  # two GPUs: the max
    ("DCGM_FI_DEV_FB_USED", "pod", [("DCGM_FI_DEV_FB_USED", HELD, 100.0), ("DCGM_FI_DEV_FB_USED",
                                    {**HELD, "gpu": "1"}, 50.0)], {"ml/train": 150.0}),  # two GPUs: the sum
    ("DCGM_FI_DEV_GPU_UTIL", "gpu", [("DCGM_FI_DEV_FB_USED", GPU0, 1.0)], {}),  # another metric
], ids=["gpu", "mig", "unheld-by-pod", "util-max", "memory-sum", "other-metric"])
def test_history_groups_samples(metric, by, samples, want) -> None:
    h = History(metric, by)
    h.add(0.0, samples)
    assert h.latest() == want


def test_history_keeps_its_window_and_the_chart_is_deterministic() -> None:
    h = History("DCGM_FI_DEV_GPU_UTIL", "gpu", window=3)
    for t in range(5):
        h.add(float(t), [("DCGM_FI_DEV_GPU_UTIL", GPU0, 10.0 * t)])
    assert h.points["n-0 GPU 0"] == [(2.0, 20.0), (3.0, 30.0), (4.0, 40.0)]
    assert chart_png(h) == chart_png(h)
    before = chart_png(h)
    h.add(5.0, [("DCGM_FI_DEV_GPU_UTIL", GPU0, 90.0)])
    assert chart_png(h) != before
    with pytest.raises(ValueError):
        History("DCGM_FI_DEV_GPU_UTIL", "rack")


def test_chart_from_a_node_exporter(tmp_path: Path) -> None:
    write_node_driver(tmp_path / "d", node_inventory(load_spec(ROOT / "clusters" / "workshop.yaml"), "whole-0"))
    inv = node_inventory(load_spec(ROOT / "clusters" / "workshop.yaml"), "whole-0")
    g1 = inv.gpus[1].uuid
    rt = CudaRuntime({ENV_DRIVER_DIR: str(tmp_path / "d"), "NVIDIA_VISIBLE_DEVICES": g1, "MOCKGPU_POD_NAMESPACE": "ml",
                      "MOCKGPU_POD_NAME": "train", "MOCKGPU_CONTAINER_NAME": "c"})
    rt.malloc(0, 1 << 30)
    rt.report_utilization(0, 65)
    alloc = DeviceAllocation("ml", "train", "c", "nvidia.com/gpu", (g1,), (g1,))
    exp = MetricsExporter("whole-0", tmp_path / "d", lambda: StateInputs((alloc,))).start()
    ticks = iter([100.0, 101.0])
    chart = MetricChart(ExporterSource({"whole-0": exp.url, "gone-0": "http://127.0.0.1:9/metrics"}),
                        "DCGM_FI_DEV_GPU_UTIL", by="pod", clock=lambda: next(ticks, 200.0), interval=60)
    try:
        assert "no samples yet" in chart.header.value
        assert chart.sample() == {"ml/train": 65.0}  # the node that does not answer is skipped
        rt.report_utilization(0, 30)
        assert chart.sample() == {"ml/train": 30.0}
        assert chart.history.points["ml/train"] == [(100.0, 65.0), (101.0, 30.0)]
        assert "ml/train: <b>30</b>" in chart.header.value
        bundle = chart._repr_mimebundle_()
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        html = data["text/html"]
        assert "data:image/png;base64," in html and 'data-metric="DCGM_FI_DEV_GPU_UTIL"' in html
    finally:
        chart.stop()
        exp.stop()


def test_chart_from_a_prometheus_query() -> None:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(self.path)
            body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
                {"metric": {"__name__": "DCGM_FI_DEV_FB_USED", **HELD}, "value": [1.5, "7168"]}]}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        chart = MetricChart.for_prometheus(f"http://127.0.0.1:{srv.server_port}", "DCGM_FI_DEV_FB_USED", by="pod")
        assert isinstance(chart.source, PrometheusSource)
        assert chart.sample() == {"ml/train": 7168.0}
        assert seen == ["/api/v1/query?query=DCGM_FI_DEV_FB_USED"]
    finally:
        srv.shutdown()
        srv.server_close()
