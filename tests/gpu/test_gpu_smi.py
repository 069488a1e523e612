"""Fake nvidia-smi: exact -L lines, CSV as nvidia-smi writes it, the table, and its errors."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from mockgpu.gpu import smi
from mockgpu.gpu.cuda import CudaRuntime

QUERY = "--query-gpu=index,name,uuid,memory.total,memory.used,memory.free,utilization.gpu"


def test_list_gpus_exact_lines(node_dir):
    drv, env = node_dir("mig-0")
    g0, g1 = drv.inventory.gpus
    code, lines = smi.run(["-L"], env)
    assert code == 0
    assert lines[0] == f"GPU 0: NVIDIA A100-SXM4-80GB (UUID: {g0.uuid})"
    assert lines[1] == f"  MIG 1g.10gb     Device  0: (UUID: {g0.mig[0].uuid})"
    assert lines[8:] == [
        f"GPU 1: NVIDIA A100-SXM4-80GB (UUID: {g1.uuid})",
        f"  MIG 3g.40gb     Device  0: (UUID: {g1.mig[0].uuid})",
        f"  MIG 2g.20gb     Device  1: (UUID: {g1.mig[1].uuid})",
        f"  MIG 1g.10gb     Device  2: (UUID: {g1.mig[2].uuid})",
    ]
    # the reference's line shapes, character for character
    ref_gpu = re.compile(r"^GPU \d+: .+ \(UUID: GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\)$")
    ref_mig = re.compile(r"^  MIG [0-9a-z.+]+ +Device +\d+: \(UUID: MIG-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\)$")
    assert all(ref_gpu.match(s) or ref_mig.match(s) for s in lines)


def test_list_in_a_container_is_renumbered(node_dir):
    drv, env = node_dir("whole-0")
    g = drv.inventory.gpus
    code, lines = smi.run(["-L"], {**env, "NVIDIA_VISIBLE_DEVICES": f"{g[3].uuid},{g[2].uuid}",
                                   "CUDA_VISIBLE_DEVICES": "1"})  # nvidia-smi ignores CUDA_VISIBLE_DEVICES
    assert (code, lines) == (0, [f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: {g[2].uuid})",
                                 f"GPU 1: NVIDIA H100 80GB HBM3 (UUID: {g[3].uuid})"])


@pytest.mark.parametrize("fmt,expected", [
    ("csv", ["index, name, uuid, memory.total [MiB], memory.used [MiB], memory.free [MiB], utilization.gpu [%]",
             "0, NVIDIA H100 80GB HBM3, {u0}, 81559 MiB, 2048 MiB, 79511 MiB, 30 %",
             "1, NVIDIA H100 80GB HBM3, {u1}, 81559 MiB, 0 MiB, 81559 MiB, 0 %"]),
    ("csv,noheader", ["0, NVIDIA H100 80GB HBM3, {u0}, 81559 MiB, 2048 MiB, 79511 MiB, 30 %",
                      "1, NVIDIA H100 80GB HBM3, {u1}, 81559 MiB, 0 MiB, 81559 MiB, 0 %"]),
    ("csv,noheader,nounits", ["0, NVIDIA H100 80GB HBM3, {u0}, 81559, 2048, 79511, 30",
                              "1, NVIDIA H100 80GB HBM3, {u1}, 81559, 0, 81559, 0"]),
], ids=["csv", "noheader", "noheader-nounits"])
def test_query_gpu_csv(node_dir, fmt, expected):
    drv, env = node_dir("whole-0")
    g = drv.inventory.gpus
    env = {**env, "NVIDIA_VISIBLE_DEVICES": "0,1"}
    rt = CudaRuntime(env)
    try:
        rt.malloc(0, 2 << 30)
        rt.report_utilization(0, 30)
        code, lines = smi.run([QUERY, f"--format={fmt}"], env)
    finally:
        rt.shutdown()
    assert code == 0
    assert lines == [s.format(u0=g[0].uuid, u1=g[1].uuid) for s in expected]


def test_mig_gpu_utilization_is_not_available(node_dir):
    _, env = node_dir("mig-0")
    code, lines = smi.run(["--query-gpu=index,utilization.gpu,mig.mode.current", "--format=csv,noheader"], env)
    assert (code, lines) == (0, ["0, [N/A], Enabled", "1, [N/A], Enabled"])


def test_status_table(node_dir):
    drv, env = node_dir("mig-0")
    m = drv.inventory.gpus[1].mig[1]
    env = {**env, "NVIDIA_VISIBLE_DEVICES": m.uuid, "MOCKGPU_POD_NAME": "trainer"}
    rt = CudaRuntime(env)
    try:
        rt.malloc(0, 1 << 30)
        code, lines = smi.run([], env)
    finally:
        rt.shutdown()
    assert code == 0
    assert all(len(s) == 91 for s in lines[1:]), [s for s in lines[1:] if len(s) != 91]
    text = "\n".join(lines)
    assert "| NVIDIA-SMI 550.107.02             Driver Version: 550.107.02     CUDA Version: 12.4     |" in text
    assert re.search(r"\|   0  NVIDIA A100-SXM4-80GB +On  \|   00000000:[0-9A-F]{2}:00\.0 Off \|", text)
    assert "1024MiB / 81920MiB" in text and "Enabled" in text
    assert "| MIG devices:" in text
    assert re.search(rf"\|  0 +{m.gi_id} +0 +0  \| +1024MiB / 19968MiB +\| 28 ", text)
    assert re.search(rf"\|  +0 +{m.gi_id} +0 +{os.getpid()} +C ", text)


def test_status_table_without_processes(node_dir):
    _, env = node_dir("whole-0")
    code, lines = smi.run([], env)
    assert code == 0 and "|  No running processes found" in "\n".join(lines)
    assert "MIG devices" not in "\n".join(lines)


@pytest.mark.parametrize("argv,env,code,first", [
    (["-L"], {"MOCKGPU_DRIVER_DIR": "/nonexistent/mockgpu"}, 9,
     "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
     "Make sure that the latest NVIDIA driver is installed and running."),
    (["-L"], {"NVIDIA_VISIBLE_DEVICES": "none"}, 6, "No devices were found"),
    (["--query-gpu=index,bogus", "--format=csv"], {}, 2, 'Field "bogus" is not a valid field to query.'),
    (["--bogus"], {}, 2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."),
], ids=["no-driver", "no-devices", "bad-field", "bad-flag"])
def test_errors(node_dir, argv, env, code, first):
    _, base = node_dir("whole-0")
    got_code, lines = smi.run(argv, {**base, **env})
    assert (got_code, lines[0]) == (code, first)


def test_console_script_exit_code(node_dir, tmp_path):
    exe = shutil.which("nvidia-smi") or ""
    if "mockgpu" not in open(exe).read() if exe else True:
        pytest.skip("the mockgpu nvidia-smi console script is not on PATH")
    _, env = node_dir("whole-0")
    full = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(sys.path)}
    ok = subprocess.run([exe, "-L"], env=full, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stdout.startswith("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-")
    bad = subprocess.run([exe], env={**full, "MOCKGPU_DRIVER_DIR": str(tmp_path / "none")},
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 9 and bad.stdout.startswith("NVIDIA-SMI has failed")


def test_help_lists_the_supported_options(node_dir):
    _, env = node_dir("whole-0")
    code, lines = smi.run(["-h"], env)
    assert code == 0 and any("--query-gpu" in s for s in lines)
