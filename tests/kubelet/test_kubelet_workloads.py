"""mockgpu-workload scenarios against a fake driver directory (no kubelet involved)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mockgpu.config.clusterspec import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.gpu.driver import write_node_driver
from mockgpu.workloads import parse_size

SPEC = Path(__file__).resolve().parents[2] / "clusters" / "workshop.yaml"
GIB = 1 << 30


@pytest.fixture
def shared_node(tmp_path: Path):
    inv = node_inventory(load_spec(SPEC), "shared-0")
    write_node_driver(tmp_path / "driver", inv)
    return tmp_path / "driver", inv


def run(driver: Path, visible: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        MOCKGPU_DRIVER_DIR=str(driver),
        NVIDIA_VISIBLE_DEVICES=visible,
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    )
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return subprocess.run(
        [sys.executable, "-m", "mockgpu.workloads", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize(
    "text, value",
    [("20GiB", 20 * GIB), ("20Gi", 20 * GIB), ("512MiB", 512 << 20), ("1.5GB", 1_500_000_000), ("1024", 1024)],
    ids=["GiB", "Gi", "MiB", "GB-decimal", "bytes"],
)
def test_parse_size(text: str, value: int) -> None:
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "lots", "-1GiB", "1XB"], ids=["empty", "word", "negative", "bad-unit"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="invalid size"):
        parse_size(text)


def test_inspect_shows_given_devices_and_nvidia_smi(shared_node) -> None:
    driver, inv = shared_node
    gpu = inv.gpus[1]
    r = run(driver, f"{gpu.uuid}", "inspect")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert f"NVIDIA_VISIBLE_DEVICES={gpu.uuid}" in lines
    assert "CUDA_VISIBLE_DEVICES=<unset>" in lines
    assert "CUDA devices: 1" in lines
    assert any(line.startswith("  cuda:0  NVIDIA A100-SXM4-80GB  " + gpu.uuid) for line in lines)
    assert f"GPU 0: NVIDIA A100-SXM4-80GB (UUID: {gpu.uuid})" in lines


def test_infer_grows_until_cuda_oom(shared_node) -> None:
    driver, inv = shared_node
    r = run(driver, inv.gpus[0].uuid, "infer", "--weights", "20GiB", "--kv-step", "15GiB", "--interval", "0")
    assert r.returncode == 1
    assert "infer: step 4 KV cache 60.00 GiB; 0.00 GiB free of 80.00 GiB" in r.stdout
    assert r.stderr.strip().startswith("RuntimeError: CUDA error: out of memory")


def test_train_runs_for_its_duration_and_frees(shared_node) -> None:
    driver, inv = shared_node
    uuid = inv.gpus[0].uuid
    r = run(driver, uuid, "train", "--memory", "70GiB", "--duration", "0.2", "--interval", "0.05")
    assert r.returncode == 0, r.stderr
    assert "train: done after" in r.stdout
    # Its 70 GiB went back to the driver: a second job can take them again.
    again = run(driver, uuid, "infer", "--kv-step", "70GiB", "--max-steps", "1", "--interval", "0")
    assert again.returncode == 0, again.stdout + again.stderr


def test_train_fails_to_load_on_a_full_gpu(shared_node) -> None:
    driver, inv = shared_node
    r = run(driver, inv.gpus[0].uuid, "train", "--memory", "81GiB", "--duration", "0.1")
    assert r.returncode == 1
    assert "train: loading the model: CUDA error: out of memory" in r.stdout


def test_no_device_is_a_cuda_error(shared_node) -> None:
    driver, _ = shared_node
    r = run(driver, "none", "train", "--duration", "0.1")
    assert r.returncode == 1
    assert "CUDA error: no CUDA-capable device is detected" in r.stderr


def test_time_slicing_oom_blast_radius(shared_node) -> None:
    """Two replicas of one GPU share its memory: the inference job's growth kills the trainer too."""
    driver, inv = shared_node
    uuid = inv.gpus[0].uuid
    env = dict(os.environ, MOCKGPU_DRIVER_DIR=str(driver), NVIDIA_VISIBLE_DEVICES=uuid)
    trainer = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mockgpu.workloads",
            "train",
            "--memory",
            "30GiB",
            "--retry-alloc",
            "1GiB",
            "--interval",
            "0.05",
            "--duration",
            "0",
            "--log-every",
            "1000",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = trainer.stdout.readline()  # "train: cuda:0 holds 30.00 GiB" once it has its memory
        assert "holds 30.00 GiB" in line, line
        r = run(driver, uuid, "infer", "--kv-step", "10GiB", "--interval", "0.3")
        out, err = trainer.communicate(timeout=30)
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()
    assert r.returncode == 1 and "CUDA error: out of memory" in r.stderr
    assert "infer: step 5 KV cache 50.00 GiB; 0.00 GiB free of 80.00 GiB" in r.stdout
    assert trainer.returncode == 1
    assert "RuntimeError: CUDA error: out of memory" in err


def test_sigterm_releases_and_exits_143(shared_node) -> None:
    driver, inv = shared_node
    env = dict(os.environ, MOCKGPU_DRIVER_DIR=str(driver), NVIDIA_VISIBLE_DEVICES=inv.gpus[0].uuid)
    p = subprocess.Popen(
        [sys.executable, "-m", "mockgpu.workloads", "train", "--memory", "80GiB", "--duration", "0"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert "holds 80.00 GiB" in p.stdout.readline()
        p.terminate()
        assert p.wait(timeout=20) == 143
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    r = run(driver, inv.gpus[0].uuid, "infer", "--kv-step", "80GiB", "--max-steps", "1", "--interval", "0")
    assert r.returncode == 0, r.stdout + r.stderr
