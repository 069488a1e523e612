"""Device identities are NVIDIA-shaped, stable across runs and distinct across nodes."""

from __future__ import annotations

from mockgpu.config.inventory import node_inventory
from mockgpu.gpu.uuids import GPU_UUID_RE, MIG_UUID_RE, gpu_uuid, mig_uuid, pci_bus_id


def test_formats():
    assert GPU_UUID_RE.match(gpu_uuid("c", "n-0", 0))
    assert MIG_UUID_RE.match(mig_uuid("c", "n-0", 0, 7, 0))
    assert len(gpu_uuid("c", "n-0", 0)) == len("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6")


def test_stable_values():
    # Pinned: a change here changes every learner's UUIDs, so it must be deliberate.
    assert gpu_uuid("workshop", "whole-0", 0) == "GPU-f30ae257-4bf4-5145-b404-7cbcad9564f1"
    assert gpu_uuid("workshop", "whole-0", 0) == gpu_uuid("workshop", "whole-0", 0)


def test_distinct_across_clusters_nodes_indices_and_instances():
    ids = {gpu_uuid(c, n, i) for c in ("a", "b") for n in ("x-0", "x-1") for i in range(8)}
    migs = {mig_uuid("a", "x-0", i, gi) for i in range(8) for gi in range(15)}
    assert len(ids) == 32 and len(migs) == 120


def test_pci_bus_ids_unique_on_a_node_and_well_formed():
    ids = [pci_bus_id("c", "n-0", i) for i in range(8)]
    assert len(set(ids)) == 8
    assert all(len(b) == 16 and b.startswith("00000000:") and b.endswith(":00.0") for b in ids)


def test_inventory_uses_them(spec):
    inv = node_inventory(spec, "mig-0")
    g1 = inv.gpus[1]
    assert g1.uuid == gpu_uuid("hwtest", "mig-0", 1)
    assert [m.uuid for m in g1.mig] == [mig_uuid("hwtest", "mig-0", 1, m.gi_id, 0) for m in g1.mig]
    assert inv.device(g1.mig[0].uuid) == g1.mig[0]
    whole = node_inventory(spec, "whole-0")
    assert [(g.numa_node, g.nvlink_peers) for g in whole.gpus] == [(0, (1,)), (0, (0,)), (1, (3,)), (1, (2,))]
