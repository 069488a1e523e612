"""Fake ``nvidia-smi``: ``-L``, the default status table, and ``--query-gpu ... --format=csv``.

It reads the node's fake driver (``$MOCKGPU_DRIVER_DIR`` or ``/run/mockgpu/driver``) and shows what
the calling container was given (NVIDIA_VISIBLE_DEVICES; like the real tool it ignores
CUDA_VISIBLE_DEVICES), renumbered from 0. Formats follow R550-era nvidia-smi. Simplifications:
temperature, power draw, fan, persistence and ECC cells are illustrative (power and temperature
follow utilization); ``memory.free`` is total minus used (no reserved memory); the Processes table
lists every process on a visible device, whatever its PID namespace (a real container shows only
its own).

A GPU that has fallen off the bus (an injected Xid 79, ``mockgpu fault inject``) cannot be reached: like the real
tool, nvidia-smi prints ``Unable to determine the device handle for GPU <bus id>: GPU is lost.  Reboot the system
to recover this GPU`` for it (NVML's NVML_ERROR_GPU_IS_LOST) and exits 15; the other GPUs it was given are shown
as usual after that line (simplified: the real tool's output for a partly lost node varies by driver release).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from mockgpu.errors import MockgpuError
from mockgpu.gpu.catalog import get_model
from mockgpu.gpu.driver import Driver, DriverNotFound
from mockgpu.gpu.visibility import GivenGPU, container_gpus

NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
             "Make sure that the latest NVIDIA driver is installed and running.")
EXIT_NO_DRIVER = 9  # nvidia-smi(1) RETURN VALUE: 9 - NVIDIA driver is not loaded
EXIT_NO_DEVICES = 6  # 6 - a query to find an object was unsuccessful
EXIT_BAD_ARGS = 2  # 2 - a supplied argument or flag is invalid
EXIT_GPU_LOST = 15  # 15 - the GPU has fallen off the bus or has otherwise become inaccessible

# --query-gpu fields: header unit and formatter (value, with_units) -> str
_UNITS = {"memory.total": "MiB", "memory.used": "MiB", "memory.free": "MiB", "utilization.gpu": "%",
          "power.limit": "W"}
QUERY_FIELDS = ("index", "name", "uuid", "pci.bus_id", "driver_version", "count", "memory.total", "memory.used",
                "memory.free", "utilization.gpu", "mig.mode.current", "power.limit", "compute_cap")


HELP = [
    "NVIDIA System Management Interface -- mockgpu's fake, for the fake GPUs of a mockgpu node.",
    "",
    "nvidia-smi [-i ID] [-L | --query-gpu=FIELDS --format=csv[,noheader][,nounits]]",
    "",
    "    -L, --list-gpus        Display a list of GPUs (and their MIG devices).",
    "    -i, --id=ID            Target GPU(s) by index or UUID, comma-separated.",
    "    --query-gpu=FIELDS     Information about GPUs. FIELDS: " + ",".join(QUERY_FIELDS),
    "    --format=csv           Output format for --query-gpu (options: noheader, nounits).",
    "    -h, --help             Print usage information and exit.",
]


def _gpu_values(i: int, gg: GivenGPU, snap: dict[str, Any], driver: Driver, count: int) -> dict[str, Any]:
    g = gg.gpu
    s = snap[g.uuid]
    used = s["used_mib"] if not g.mig else sum(snap[m.uuid]["used_mib"] for m in gg.mig)
    model = get_model(g.model)
    return {
        "index": i, "name": g.product_name, "uuid": g.uuid, "pci.bus_id": g.pci_bus_id,
        "driver_version": driver.driver_version, "count": count, "memory.total": g.memory_mib,
        "memory.used": used, "memory.free": g.memory_mib - used,
        "utilization.gpu": s["utilization"], "mig.mode.current": "Enabled" if g.mig else "Disabled",
        "power.limit": f"{model.tdp_w:.2f}", "compute_cap": "{}.{}".format(*model.compute_capability),
    }


def query_csv(rows: Sequence[dict[str, Any]], fields: Sequence[str], header: bool, units: bool) -> list[str]:
    """nvidia-smi's CSV: ``, `` separated, units in the header (``memory.total [MiB]``) and values."""
    out = []
    if header:
        out.append(", ".join(f"{f} [{_UNITS[f]}]" if f in _UNITS else f for f in fields))
    for r in rows:
        cells = []
        for f in fields:
            v = r[f]
            if v is None:
                cells.append("[N/A]")
            else:
                cells.append(f"{v} {_UNITS[f]}" if units and f in _UNITS else str(v))
        out.append(", ".join(cells))
    return out


def list_gpus(given: Sequence[GivenGPU]) -> list[str]:
    """``nvidia-smi -L`` lines: GPUs renumbered from 0, their MIG devices indented under them."""
    lines = []
    for i, gg in enumerate(given):
        lines.append(f"GPU {i}: {gg.gpu.product_name} (UUID: {gg.gpu.uuid})")
        for n, m in enumerate(sorted(gg.mig, key=lambda m: m.mig_index)):
            lines.append(f"  MIG {m.profile:<11} Device {n:>2}: (UUID: {m.uuid})")
    return lines


def _row(*cells: tuple[str, int]) -> str:
    return "|" + "|".join(text[:w].ljust(w) for text, w in cells) + "|"


def status_table(given: Sequence[GivenGPU], snap: dict[str, Any], driver: Driver,
                 now: float | None = None) -> list[str]:
    """The default ``nvidia-smi`` screen (R550 layout, 91 columns)."""
    w = (41, 24, 22)
    full = 89
    sep = "+" + "+".join("-" * x for x in w) + "+"
    lines = [time.strftime("%a %b %e %H:%M:%S %Y", time.localtime(now)).ljust(30),
             "+" + "-" * full + "+",
             "| " + f"NVIDIA-SMI {driver.driver_version}".ljust(34)
             + f"Driver Version: {driver.driver_version}".ljust(31)
             + f"CUDA Version: {driver.cuda_version}".ljust(23) + "|",
             "|" + "+".join("-" * x for x in w) + "+",
             _row((" GPU  Name                 Persistence-M ", 41), (" Bus-Id          Disp.A ", 24),
                  (" Volatile Uncorr. ECC ", 22)),
             _row((" Fan  Temp   Perf          Pwr:Usage/Cap ", 41), ("           Memory-Usage ", 24),
                  (" GPU-Util  Compute M. ", 22)),
             _row(("", 41), ("", 24), ("               MIG M. ", 22)),
             "|" + "+".join("=" * x for x in w) + "|"]
    for i, gg in enumerate(given):
        g, s = gg.gpu, snap[gg.gpu.uuid]
        used = s["used_mib"] if not g.mig else sum(snap[m.uuid]["used_mib"] for m in gg.mig)
        util = s["utilization"] if s["utilization"] is not None else max(
            [snap[m.uuid]["utilization"] for m in gg.mig] or [0])
        tdp = get_model(g.model).tdp_w
        power, temp = round(0.15 * tdp + util * 0.75 * tdp / 100), 30 + util // 3
        lines.append(_row((f"{i:>4}  {g.product_name}".ljust(37) + "On  ", 41),
                          (f"{g.pci_bus_id:>19} Off ", 24), (("N/A" if g.mig else "0").rjust(21) + " ", 22)))
        lines.append(_row((f" N/A   {temp}C    P0" + f"{power}W / {tdp:>4}W".rjust(24) + " ", 41),
                          (f"{used}MiB / {g.memory_mib}MiB".rjust(23) + " ", 24),
                          (("     N/A" if g.mig else f"{s['utilization']:>7}%") + "      Default ", 22)))
        lines.append(_row(("", 41), ("", 24), (("Enabled" if g.mig else "Disabled").rjust(21) + " ", 22)))
        lines.append(sep)
    lines.append(" " * (full + 2))
    if any(gg.mig for gg in given):
        lines += _mig_table(given, snap)
    lines += _process_table(given, snap)
    return lines


def _mig_table(given: Sequence[GivenGPU], snap: dict[str, Any]) -> list[str]:
    w = (18, 34, 11, 23)
    sep = "+" + "+".join("-" * x for x in w) + "+"
    out = ["+" + "-" * 89 + "+", "|" + " MIG devices:".ljust(89) + "|", sep,
           _row((" GPU  GI  CI  MIG ", 18), ("Memory-Usage ".rjust(34), 34), ("        Vol", 11),
                ("        Shared         ", 23)),
           _row(("      ID  ID  Dev ", 18), ("BAR1-Usage ".rjust(34), 34), (" SM     Unc", 11),
                (" CE ENC  DEC  OFA  JPG ", 23)),
           _row(("", 18), ("", 34), ("        ECC", 11), ("", 23)),
           "|" + "+".join("=" * x for x in w) + "|"]
    for i, gg in enumerate(given):
        for n, m in enumerate(sorted(gg.mig, key=lambda m: m.mig_index)):
            ce, dec, jpg, ofa = get_model(gg.gpu.model).profile(m.profile).engines
            used = snap[m.uuid]["used_mib"]
            out.append(_row((f"{i:>3}{m.gi_id:>5}{m.ci_id:>4}{n:>4}  ", 18),
                            (f"{used}MiB / {m.memory_mib}MiB".rjust(30) + "    ", 34),
                            (f"{m.sm_count:>3}      0 ", 11),
                            (f"{ce:>3}{0:>4}{dec:>5}{ofa:>5}{jpg:>5} ", 23)))
            out.append(_row(("", 18), ("0MiB / 65535MiB".rjust(31) + "   ", 34), ("", 11), ("", 23)))
            out.append(sep)
    out.append(" " * 91)
    return out


def _process_table(given: Sequence[GivenGPU], snap: dict[str, Any]) -> list[str]:
    out = ["+" + "-" * 89 + "+", "|" + " Processes:".ljust(89) + "|",
           "|" + "  GPU   GI   CI        PID   Type   Process name                              GPU Memory ".ljust(89)
           + "|",
           "|" + "        ID   ID                                                               Usage      ".ljust(89)
           + "|",
           "|" + "=" * 89 + "|"]
    rows = []
    for i, gg in enumerate(given):
        parts = [(None, gg.gpu.uuid)] + [(m, m.uuid) for m in gg.mig]
        for m, uuid in parts:
            for p in snap[uuid]["processes"]:
                if p["device"] != uuid:
                    continue
                gi, ci = (str(m.gi_id), str(m.ci_id)) if m else ("N/A", "N/A")
                name = p["name"] or "python"
                name = name if len(name) <= 38 else "..." + name[-35:]
                rows.append("|" + f"  {i:>3}  {gi:>4} {ci:>4}  {p['pid']:>9}      C   {name:<38}"
                            + f"{p['used_mib']}MiB".rjust(13) + " |")
    out += rows or ["|" + "  No running processes found".ljust(89) + "|"]
    out.append("+" + "-" * 89 + "+")
    return out


def run(argv: Sequence[str], env: Mapping[str, str]) -> tuple[int, list[str]]:
    """Run fake nvidia-smi with ``argv`` (no program name) in ``env``; returns (exit code, output lines)."""
    ap = argparse.ArgumentParser(prog="nvidia-smi", add_help=False)
    ap.add_argument("-h", "--help", action="store_true")
    ap.add_argument("-L", "--list-gpus", action="store_true")
    ap.add_argument("--query-gpu", dest="query")
    ap.add_argument("--format", dest="fmt")
    ap.add_argument("-i", "--id", dest="ids")
    try:
        args = ap.parse_args(list(argv))
    except SystemExit:
        return EXIT_BAD_ARGS, ["Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."]
    if args.help:
        return 0, HELP
    try:
        driver = Driver.from_env(env)
        given = container_gpus(driver.inventory, env)
    except DriverNotFound:
        return EXIT_NO_DRIVER, [NO_DRIVER]
    except MockgpuError as exc:
        return EXIT_NO_DRIVER, [str(exc)]
    if args.ids is not None:
        want = [t.strip() for t in args.ids.split(",")]
        chosen = [gg for i, gg in enumerate(given) if str(i) in want or gg.gpu.uuid in want]
        if len(chosen) != len(want):
            return EXIT_NO_DEVICES, ["No devices were found"]
        given = chosen
    if not given:
        return EXIT_NO_DEVICES, ["No devices were found"]
    health = driver.health()
    lost = [gg for gg in given if health[gg.gpu.uuid].lost]
    if lost:
        lines = [lost_line(gg.gpu.pci_bus_id) for gg in lost]
        rest = [gg for gg in given if gg not in lost]
        if not rest:
            return EXIT_GPU_LOST, lines
        code, more = _show(args, rest, driver)
        return (code or EXIT_GPU_LOST), lines + more
    return _show(args, given, driver)


def lost_line(pci_bus_id: str) -> str:
    """What nvidia-smi prints for a GPU NVML reports lost (its bus id with a 4-digit domain, as it prints it)."""
    domain, _, rest = pci_bus_id.partition(":")
    return (f"Unable to determine the device handle for GPU {domain[-4:]}:{rest}: GPU is lost.  "
            "Reboot the system to recover this GPU")


def _show(args: argparse.Namespace, given: Sequence[GivenGPU], driver: Driver) -> tuple[int, list[str]]:
    if args.list_gpus:
        return 0, list_gpus(given)
    snap = driver.snapshot()
    if args.query:
        fields = [f.strip() for f in args.query.split(",") if f.strip()]
        bad = next((f for f in fields if f not in QUERY_FIELDS), None)
        if bad is not None:
            return EXIT_BAD_ARGS, [f'Field "{bad}" is not a valid field to query.', ""]
        opts = [o.strip() for o in (args.fmt or "").split(",")]
        if "csv" not in opts:
            return EXIT_BAD_ARGS, ['"--format=csv" is required with --query-gpu.']
        rows = [_gpu_values(i, gg, snap, driver, len(given)) for i, gg in enumerate(given)]
        return 0, query_csv(rows, fields, header="noheader" not in opts, units="nounits" not in opts)
    return 0, status_table(given, snap, driver)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``nvidia-smi``."""
    code, lines = run(sys.argv[1:] if argv is None else argv, os.environ)
    out = "\n".join(lines) + "\n"
    sys.stdout.write(out)
    sys.stdout.flush()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
