"""mockgpu-workload scenarios against a fake driver directory (no kubelet involved)."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mockgpu.config.clusterspec import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.gpu.driver import write_node_driver
from mockgpu.gpu.utilmodel import WARMUP, utilization
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


def _stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def _pause_holding(proc: subprocess.Popen, ledger: Path, nbytes: int) -> None:
    """SIGSTOP ``proc`` at a moment it holds exactly ``nbytes`` and not the ledger's lock.

    The ledger is read under its own lock, taken without blocking: a process stopped while it
    holds the lock would block every other one, so that moment is skipped too.
    """
    for _ in range(500):
        proc.send_signal(signal.SIGSTOP)
        while not _stopped(proc.pid):
            time.sleep(0.001)
        with open(ledger.with_suffix(".lock"), "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                used = None
            else:
                used = sum(p["used_bytes"] for p in json.loads(ledger.read_text())["processes"].values())
                fcntl.flock(lock, fcntl.LOCK_UN)
        if used == nbytes:
            return
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    raise AssertionError(f"{proc.args} never held exactly {nbytes} bytes between two steps")


def test_time_slicing_oom_blast_radius(shared_node) -> None:
    """Two replicas of one GPU share its memory: the inference job's growth kills the trainer too.

    Ordered, not timed: the trainer is paused while the inference job fills the GPU and holds it,
    so its next step meets a full GPU however late this shared machine schedules it.
    """
    driver, inv = shared_node
    uuid = inv.gpus[0].uuid
    env = dict(os.environ, MOCKGPU_DRIVER_DIR=str(driver), NVIDIA_VISIBLE_DEVICES=uuid)
    workload = [sys.executable, "-m", "mockgpu.workloads"]
    pipes = {"env": env, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    trainer = subprocess.Popen(
        [*workload, "train", "--memory", "30GiB", "--retry-alloc", "1GiB", "--interval", "0.05"]
        + ["--duration", "0", "--log-every", "1000"],
        **pipes,
    )
    infer = None
    try:
        line = trainer.stdout.readline()  # "train: cuda:0 holds 30.00 GiB" once it has its memory
        assert "holds 30.00 GiB" in line, line
        _pause_holding(trainer, driver / "ledgers" / f"{uuid}.json", 30 * GIB)
        infer = subprocess.Popen(
            [*workload, "infer", "--kv-step", "50GiB", "--max-steps", "1", "--interval", "600"], **pipes
        )
        assert "infer: weights" in infer.stdout.readline()
        filled = infer.stdout.readline()
        trainer.send_signal(signal.SIGCONT)
        out, err = trainer.communicate(timeout=60)
    finally:
        for p in (trainer, infer):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert "infer: step 1 KV cache 50.00 GiB; 0.00 GiB free of 80.00 GiB" in filled, filled
    assert trainer.returncode == 1, out
    assert "train: step" in out and "CUDA error: out of memory" in out
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


def test_train_reports_the_training_profile_and_hold_reports_nothing(shared_node) -> None:
    driver, inv = shared_node
    r = run(driver, inv.gpus[0].uuid, "train", "--memory", "1GiB", "--interval", "0.01", "--utilization", "70",
            "--seed", "3", "--duration", "0.3")
    assert r.returncode == 0, r.stderr
    printed = [float(ln.rsplit("utilization=", 1)[1].rstrip("%")) for ln in r.stdout.splitlines()
               if "utilization=" in ln]
    assert len(printed) > WARMUP
    assert printed == [utilization("training", s, 70, seed=3) for s in range(len(printed))]
    h = run(driver, inv.gpus[1].uuid, "hold", "--memory", "2GiB", "--duration", "0.2")
    assert h.returncode == 0 and "computing nothing" in h.stdout, h.stdout + h.stderr
