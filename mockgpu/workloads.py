"""``mockgpu-workload``: the GPU programs the labs run in pods, written against the fake CUDA API.

* ``inspect``: what the container was given (``NVIDIA_VISIBLE_DEVICES``, ``CUDA_VISIBLE_DEVICES``),
  what CUDA enumerates, and what ``nvidia-smi -L`` prints.
* ``train``: hold memory on every visible device and report utilization until ``--duration``
  passes (0: forever). The utilization varies step by step as ``--profile`` says (``mockgpu.gpu.utilmodel``:
  ``training``, the default, warms up, hovers around ``--utilization`` with seeded noise and dips at every
  evaluation step; ``steady`` reports ``--utilization`` at every step; ``idle`` reports 0). With
  ``--retry-alloc SIZE`` each step also allocates and frees a small buffer (activations), so a job sharing a
  time-sliced GPU dies with the CUDA out-of-memory error when a neighbour fills the GPU: the OOM blast radius
  of time-slicing.
* ``hold``: hold memory on every visible device and compute nothing (utilization 0) until ``--duration`` passes:
  an idle holder, a GPU allocated but unused.
* ``infer``: load weights, then grow a KV cache by ``--kv-step`` every ``--interval`` seconds until
  CUDA runs out of memory (or ``--max-steps``).
A CUDA error is printed as PyTorch ends its traceback (``RuntimeError: CUDA error: ...``) and the
process exits 1; SIGTERM releases the GPU memory and exits 143, as a killed container reports.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from fractions import Fraction

from mockgpu.errors import MockgpuError
from mockgpu.gpu import cuda, utilmodel
from mockgpu.helptext import describe

GIB = 1 << 30
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGTP]i?)?B?\s*$", re.IGNORECASE)
_UNITS = {
    "": 1,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "KI": 1 << 10,
    "MI": 1 << 20,
    "GI": 1 << 30,
    "TI": 1 << 40,
    "PI": 1 << 50,
}


def parse_size(text: str) -> int:
    """Bytes from ``20GiB``, ``20Gi``, ``512MiB``, ``1.5GB`` or ``1024`` (argparse type)."""
    m = _SIZE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"invalid size {text!r}: use e.g. 20GiB, 512MiB, 1.5GB or bytes")
    return int(Fraction(m.group(1)) * _UNITS[(m.group(2) or "").upper()])


def gib(n: int) -> str:
    return f"{n / GIB:.2f} GiB"


def say(*parts: object) -> None:
    print(*parts, flush=True)


def cuda_failure(exc: cuda.CudaError, context: str) -> int:
    say(f"{context}: {exc}")
    print(f"RuntimeError: {exc}", file=sys.stderr, flush=True)
    return 1


def _on_sigterm(signum: int, frame: object) -> None:
    say("received SIGTERM; releasing GPU memory")
    sys.exit(128 + signum)  # atexit (fake CUDA's shutdown) still runs


def cmd_inspect(args: argparse.Namespace) -> int:
    for name in ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        say(f"{name}={os.environ.get(name, '<unset>')}")
    n = cuda.device_count()
    say(f"CUDA devices: {n}")
    for i in range(n):
        p = cuda.get_device_properties(i)
        say(f"  cuda:{i}  {p.name}  {p.uuid}  {gib(p.total_memory)}  {p.multi_processor_count} SMs")
    say("$ nvidia-smi -L")
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        say("nvidia-smi: command not found")
        return 0
    sys.stdout.write(r.stdout + r.stderr)
    sys.stdout.flush()
    return 0


def _require_devices() -> int:
    n = cuda.device_count()
    if n == 0:
        raise cuda.CudaError(cuda.cudaErrorNoDevice)
    return n


def cmd_train(args: argparse.Namespace) -> int:
    try:
        n = _require_devices()
        for i in range(n):
            if args.memory:
                cuda.malloc(i, args.memory)
            say(f"train: cuda:{i} holds {gib(args.memory)} ({cuda.get_device_properties(i).uuid})")
    except cuda.CudaError as exc:
        return cuda_failure(exc, "train: loading the model")
    start, step = time.monotonic(), 0
    while args.duration == 0 or time.monotonic() - start < args.duration:
        util = utilmodel.utilization(args.profile, step, args.utilization, seed=args.seed)
        step += 1
        try:
            for i in range(n):
                cuda.report_utilization(i, util)
                if args.retry_alloc:
                    cuda.free(cuda.malloc(i, args.retry_alloc))
        except cuda.CudaError as exc:
            return cuda_failure(exc, f"train: step {step}")
        if step % args.log_every == 0:
            say(f"train: step {step} loss={2.5 / math.sqrt(step):.4f} utilization={util:g}%")
        time.sleep(args.interval)
    say(f"train: done after {step} steps")
    return 0


def cmd_hold(args: argparse.Namespace) -> int:
    try:
        n = _require_devices()
        for i in range(n):
            if args.memory:
                cuda.malloc(i, args.memory)
            say(f"hold: cuda:{i} holds {gib(args.memory)} ({cuda.get_device_properties(i).uuid}), computing nothing")
    except cuda.CudaError as exc:
        return cuda_failure(exc, "hold: allocating")
    start = time.monotonic()
    while args.duration == 0 or time.monotonic() - start < args.duration:
        time.sleep(min(1.0, args.duration - (time.monotonic() - start)) if args.duration else 1.0)
    say("hold: done")
    return 0


def cmd_infer(args: argparse.Namespace) -> int:
    try:
        _require_devices()
        if args.weights:
            cuda.malloc(0, args.weights)
        say(f"infer: weights {gib(args.weights)} on cuda:0 ({cuda.get_device_properties(0).uuid})")
    except cuda.CudaError as exc:
        return cuda_failure(exc, "infer: loading weights")
    kv, step = 0, 0
    while args.max_steps == 0 or step < args.max_steps:
        step += 1
        try:
            cuda.report_utilization(0, args.utilization)
            cuda.malloc(0, args.kv_step)
        except cuda.CudaError as exc:
            return cuda_failure(exc, f"infer: step {step}, growing the KV cache beyond {gib(kv)}")
        kv += args.kv_step
        free, total = cuda.mem_get_info(0)
        say(f"infer: step {step} KV cache {gib(kv)}; {gib(free)} free of {gib(total)}")
        time.sleep(args.interval)
    say(f"infer: done after {step} steps")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="mockgpu-workload", description=describe(__doc__))
    sub = ap.add_subparsers(dest="scenario", metavar="SCENARIO", required=True)
    sub.add_parser("inspect", help="print visible devices, CUDA devices and nvidia-smi -L").set_defaults(
        func=cmd_inspect
    )
    t = sub.add_parser("train", help="hold memory and report utilization for a while")
    t.add_argument("--memory", type=parse_size, default=parse_size("10GiB"), help="per device (default 10GiB)")
    t.add_argument("--utilization", type=float, default=80.0,
                   help="percent reported: the mean of the training profile (default 80)")
    t.add_argument("--profile", choices=utilmodel.PROFILES, default="training",
                   help="how utilization varies per step (default training: warm-up, noise, evaluation dips)")
    t.add_argument("--seed", type=int, default=0, help="seed of the training profile's noise (default 0)")
    t.add_argument("--duration", type=float, default=30.0, help="seconds; 0 runs until stopped (default 30)")
    t.add_argument("--interval", type=float, default=1.0, help="seconds per step (default 1)")
    t.add_argument(
        "--retry-alloc",
        type=parse_size,
        default=0,
        metavar="SIZE",
        help="also allocate+free SIZE every step: dies with CUDA OOM once a neighbour fills the GPU",
    )
    t.add_argument("--log-every", type=int, default=1, help="print every N steps (default 1)")
    t.set_defaults(func=cmd_train)
    h = sub.add_parser("hold", help="hold memory and compute nothing (utilization 0)")
    h.add_argument("--memory", type=parse_size, default=parse_size("10GiB"), help="per device (default 10GiB)")
    h.add_argument("--duration", type=float, default=0.0, help="seconds; 0 runs until stopped (default 0)")
    h.set_defaults(func=cmd_hold)
    i = sub.add_parser("infer", help="grow a KV cache until CUDA runs out of memory")
    i.add_argument("--weights", type=parse_size, default=0, help="memory loaded first (default 0)")
    i.add_argument("--kv-step", type=parse_size, default=parse_size("2GiB"), help="KV growth per step (default 2GiB)")
    i.add_argument("--interval", type=float, default=0.5, help="seconds per step (default 0.5)")
    i.add_argument("--utilization", type=float, default=60.0, help="percent reported (default 60)")
    i.add_argument("--max-steps", type=int, default=0, help="stop after N steps; 0 = until out of memory")
    i.set_defaults(func=cmd_infer)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name in ("interval", "duration", "utilization"):
        if getattr(args, name, 0) < 0:
            print(f"mockgpu-workload: --{name} must not be negative", file=sys.stderr)
            return 2
    signal.signal(signal.SIGTERM, _on_sigterm)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except cuda.CudaError as exc:
        return cuda_failure(exc, args.scenario)
    except MockgpuError as exc:  # e.g. NVIDIA_VISIBLE_DEVICES names a device the node lacks
        print(f"mockgpu-workload: {exc}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
