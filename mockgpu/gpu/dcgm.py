"""dcgm-exporter's metrics of one node's GPUs, as a ``prometheus_client`` Collector over the GPU-state document.

``DcgmCollector(source)`` calls ``source()`` on every scrape for a fresh ``mockgpu.gpu.state`` document (built
from the driver's snapshot and the kubelet's allocations) and yields one gauge family per DCGM field; the official
``prometheus_client`` library writes the exposition text. ``metrics_text(doc)`` renders one document the same way
(the GPU-state ConfigMap's ``metrics`` key).

What is served follows NVIDIA/dcgm-exporter:

* names, types and help strings from its ``etc/default-counters.csv`` and ``etc/dcp-metrics-included.csv``:
  ``DCGM_FI_DEV_GPU_UTIL`` "GPU utilization (in %).", ``DCGM_FI_DEV_FB_FREE`` / ``DCGM_FI_DEV_FB_USED``
  "Framebuffer memory free/used (in MiB).", ``DCGM_FI_DEV_XID_ERRORS`` "Value of the last XID error encountered."
  and ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` "Ratio of time the graphics engine is active." (all gauges);
* labels as its README and users' scrapes show them: ``gpu`` (index), ``UUID``, ``pci_bus_id``, ``device``
  (``nvidia<index>``), ``modelName``, for a MIG instance ``GPU_I_PROFILE`` and ``GPU_I_ID`` (the GPU instance
  ID), ``Hostname``, and, for a device a container holds (the kubelet's pod-resources mapping, its
  ``--kubernetes`` option), ``container``, ``namespace`` and ``pod``; a device nobody holds has no pod labels;
* MIG: ``DCGM_FI_DEV_GPU_UTIL`` is not reported for MIG instances nor for a MIG-enabled GPU (dcgm-exporter #430,
  #216, #105: "not supported for MIG configurations", use ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``); framebuffer memory
  is reported per MIG instance (DCGM 3.1.3's fix "report memory per MIG device", cited in dcgm-exporter #380);
  a MIG-enabled GPU's own series are left out (its memory is its instances').

Simplified: only these five fields (no clocks, temperature, power, PCIe, NVLink, ECC counters: the fake hardware has
none of them); ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` is the device's utilization / 100 (a real GPU's engine-active
ratio and its utilization sample differ); a time-shared GPU's series are repeated for every pod holding a replica
of it, with the same value (what dcgm-exporter does for shared devices); no ``DCGM_FI_DRIVER_VERSION`` label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
FB_USED = "DCGM_FI_DEV_FB_USED"
XID_ERRORS = "DCGM_FI_DEV_XID_ERRORS"
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
# name -> help string, in the order dcgm-exporter's counters files list them
FIELDS: dict[str, str] = {
    GPU_UTIL: "GPU utilization (in %).",
    XID_ERRORS: "Value of the last XID error encountered.",
    FB_FREE: "Framebuffer memory free (in MiB).",
    FB_USED: "Framebuffer memory used (in MiB).",
    GR_ENGINE_ACTIVE: "Ratio of time the graphics engine is active.",
}
POD_LABELS = ("container", "namespace", "pod")

Series = tuple[str, dict[str, str], float]


def _holders(doc: Mapping[str, Any]) -> dict[str, list[dict[str, str]]]:
    """Device UUID -> the containers holding it (from the document's allocations), each once."""
    out: dict[str, list[dict[str, str]]] = {}
    for a in doc.get("allocations") or []:
        for u in a.get("uuids") or []:
            who = {"container": str(a["container"]), "namespace": str(a["namespace"]), "pod": str(a["pod"])}
            if who not in out.setdefault(str(u), []):
                out[str(u)].append(who)
    return out


def series(doc: Mapping[str, Any]) -> Iterator[Series]:
    """(metric name, labels, value) of every sample the document gives (prometheus_client writes the labels
    sorted by name; dcgm-exporter's order differs, which no Prometheus query can see)."""
    host = str(doc["node"])
    holders = _holders(doc)
    for g in doc["gpus"]:
        gpu = {"gpu": str(g["index"]), "UUID": str(g["uuid"])}
        if g.get("pciBusId"):  # documents published before the field existed have none
            gpu["pci_bus_id"] = str(g["pciBusId"])
        gpu.update(device=f"nvidia{g['index']}", modelName=str(g["product"]))
        gpu_xids = list(g.get("xids") or [])
        if g["mig"]:
            for m in g["mig"]:
                labels = {**gpu, "GPU_I_PROFILE": str(m["profile"]), "GPU_I_ID": str(m.get("gpuInstanceId",
                                                                                           m["migIndex"])),
                          "Hostname": host}
                xids = list(m.get("xids") or gpu_xids)
                yield from _device(labels, holders.get(str(m["uuid"])), m["memoryTotalMiB"], m["memoryUsedMiB"],
                                   m.get("utilization"), xids, gpu_util=False)
        else:
            yield from _device({**gpu, "Hostname": host}, holders.get(str(g["uuid"])), g["memoryTotalMiB"],
                               g["memoryUsedMiB"], g.get("utilization"), gpu_xids, gpu_util=True)


def _device(labels: dict[str, str], holders: list[dict[str, str]] | None, total: int, used: int,
            util: float | None, xids: list[int], *, gpu_util: bool) -> Iterable[Series]:
    for who in holders or [{}]:
        lab = {**labels, **who}
        if gpu_util and util is not None:
            yield GPU_UTIL, lab, float(util)
        yield XID_ERRORS, lab, float(xids[-1] if xids else 0)
        yield FB_FREE, lab, float(total - used)
        yield FB_USED, lab, float(used)
        if util is not None:
            yield GR_ENGINE_ACTIVE, lab, round(float(util) / 100.0, 6)


def families(doc: Mapping[str, Any] | None) -> list[Metric]:
    """The document's samples as gauge families (those with no sample left out, as dcgm-exporter does)."""
    fams = {name: GaugeMetricFamily(name, help_text) for name, help_text in FIELDS.items()}
    if doc is not None:
        for name, labels, value in series(doc):
            fams[name].add_sample(name, labels, value)
    return [f for f in fams.values() if f.samples]


class DcgmCollector(Collector):
    """A custom collector: every ``collect()`` (one per scrape) asks ``source`` for a fresh document
    (None when the node has no driver yet: nothing is served)."""

    def __init__(self, source: Callable[[], Mapping[str, Any] | None]) -> None:
        self.source = source

    def describe(self) -> Iterable[Metric]:
        return []  # no describe-time scrape: registering never reads the driver

    def collect(self) -> Iterable[Metric]:
        return families(self.source())


def registry_for(source: Callable[[], Mapping[str, Any] | None]) -> CollectorRegistry:
    """A registry holding only the DCGM collector (no process or platform metrics of the serving process)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(DcgmCollector(source))
    return reg


def metrics_text(doc: Mapping[str, Any]) -> str:
    """The document's GPUs as Prometheus exposition text (prometheus_client's writer)."""
    return generate_latest(registry_for(lambda: doc)).decode()


__all__ = ["FIELDS", "DcgmCollector", "families", "metrics_text", "registry_for", "series"]
