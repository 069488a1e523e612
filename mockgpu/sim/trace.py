"""Load the Alibaba ``cluster-trace-gpu-v2023`` ("openb") CSV files the FGD paper replays.

Accepts every pod-list variant upstream publishes (``openb_pod_list_default``, ``cpu*``,
``gpushare*``, ``gpuspec*``, ``multigpu*``): they share the leading columns and some omit the
trailing ones. Required pod columns are ``cpu_milli``, ``memory_mib`` and ``num_gpu``; ``gpu_milli``
defaults to 1000 per requested GPU when absent (as upstream's ``pod_csv_to_yaml.py`` does),
``gpu_spec`` to "any model", ``name`` to the row number. Bad files raise ``ConfigError`` (exit 2)
naming the file, line and column.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mockgpu.errors import ConfigError

MILLI = 1000
DATA_DIR = Path(__file__).parent / "data"
DEFAULT_NODE_FILE = "openb_node_list_gpu_node.csv"
DEFAULT_POD_FILE = "openb_pod_list_default.csv"

NODE_REQUIRED = ("cpu_milli", "memory_mib", "gpu")
POD_REQUIRED = ("cpu_milli", "memory_mib", "num_gpu")


@dataclass(frozen=True)
class NodeList:
    """The cluster: one entry per node, as columns."""

    names: tuple[str, ...]
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    gpus: np.ndarray
    models: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_gpus(self) -> int:
        return int(self.gpus.sum())

    def take(self, index: np.ndarray | list[int] | slice) -> NodeList:
        """A smaller cluster made of the selected nodes (e.g. ``nodes.take(slice(0, None, 8))``)."""
        idx = np.arange(len(self))[index]
        return NodeList(tuple(self.names[i] for i in idx), self.cpu_milli[idx], self.memory_mib[idx],
                        self.gpus[idx], tuple(self.models[i] for i in idx))


@dataclass(frozen=True)
class PodList:
    """The workload distribution: one entry per trace pod, as columns."""

    names: tuple[str, ...]
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    gpu_spec: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_gpu_milli(self) -> np.ndarray:
        """GPU request of each pod in milli-GPU (``num_gpu × gpu_milli``)."""
        return self.num_gpu * self.gpu_milli


def _rows(path: Path, required: tuple[str, ...]) -> tuple[list[str], list[dict[str, str]]]:
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            header = [h.strip() for h in (reader.fieldnames or [])]
            reader.fieldnames = header
            rows = list(reader)
    except FileNotFoundError:
        raise ConfigError(str(path), "", "no such file") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(str(path), "", f"cannot read CSV: {exc}") from None
    if not header:
        raise ConfigError(str(path), "", "empty file (expected a CSV header line)")
    missing = [c for c in required if c not in header]
    if missing:
        raise ConfigError(str(path), "header", f"missing column(s) {', '.join(missing)} (found: {', '.join(header)})")
    if not rows:
        raise ConfigError(str(path), "", "no data rows after the header")
    return header, rows


def _int(path: Path, line: int, row: dict[str, str | None], column: str, default: int | None = None) -> int:
    raw = row.get(column)
    if raw is None or raw.strip() == "":
        if default is not None:
            return default
        raise ConfigError(str(path), f"line {line}, column {column}", "missing value")
    try:
        number = float(raw) if "." in raw else int(raw)  # "1000.0" (pandas exports) is accepted
    except ValueError:
        number = None
    if number is None or (isinstance(number, float) and not number.is_integer()):
        raise ConfigError(str(path), f"line {line}, column {column}", f"not an integer: {raw!r}")
    value = int(number)
    if value < 0:
        raise ConfigError(str(path), f"line {line}, column {column}", f"must be >= 0, got {value}")
    return value


def load_nodes(path: str | Path) -> NodeList:
    """Read a node list (``sn,cpu_milli,memory_mib,gpu,model``)."""
    path = Path(path)
    _, rows = _rows(path, NODE_REQUIRED)
    names, cpu, mem, gpus, models = [], [], [], [], []
    for i, row in enumerate(rows, start=2):
        names.append((row.get("sn") or f"node-{i - 2:04d}").strip())
        cpu.append(_int(path, i, row, "cpu_milli"))
        mem.append(_int(path, i, row, "memory_mib"))
        gpus.append(_int(path, i, row, "gpu"))
        model = (row.get("model") or "").strip()
        if model.lower() == "nan":
            model = ""
        if gpus[-1] > 0 and not model:
            model = "GPU"
        models.append(model)
    return NodeList(tuple(names), np.array(cpu, np.int64), np.array(mem, np.int64), np.array(gpus, np.int64),
                    tuple(models))


def load_pods(path: str | Path) -> PodList:
    """Read a pod list (``name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]``)."""
    path = Path(path)
    header, rows = _rows(path, POD_REQUIRED)
    has_milli = "gpu_milli" in header
    names, cpu, mem, num, milli, spec = [], [], [], [], [], []
    for i, row in enumerate(rows, start=2):
        n = _int(path, i, row, "num_gpu")
        m = _int(path, i, row, "gpu_milli", default=MILLI if n else 0) if has_milli else (MILLI if n else 0)
        where = f"line {i}, column gpu_milli"
        if m > MILLI:
            raise ConfigError(str(path), where, f"{m} is more than one GPU ({MILLI} milli)")
        if n == 0 and m:
            raise ConfigError(str(path), where, f"{m} milli-GPU requested with num_gpu 0")
        if n and m == 0:
            raise ConfigError(str(path), where, f"num_gpu {n} with 0 milli-GPU per GPU")
        if n > 1 and m != MILLI:
            raise ConfigError(str(path), where, f"a GPU share ({m} milli) needs num_gpu 1, got {n}")
        names.append((row.get("name") or f"pod-{i - 2:05d}").strip())
        cpu.append(_int(path, i, row, "cpu_milli"))
        mem.append(_int(path, i, row, "memory_mib"))
        num.append(n)
        milli.append(m)
        raw_spec = (row.get("gpu_spec") or "").strip()
        spec.append("" if raw_spec.lower() == "nan" else raw_spec)
    return PodList(tuple(names), np.array(cpu, np.int64), np.array(mem, np.int64), np.array(num, np.int64),
                   np.array(milli, np.int64), tuple(spec))


def _pick(directory: Path, wanted: str | None, patterns: tuple[str, ...], kind: str) -> Path:
    if wanted:
        path = Path(wanted)
        return path if path.is_absolute() or path.exists() else directory / wanted
    for pattern in patterns:
        found = sorted(directory.glob(pattern))
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            names = ", ".join(p.name for p in found)
            raise ConfigError(str(directory), "", f"several {kind} files match {pattern} ({names}); name one")
    raise ConfigError(str(directory), "", f"no {kind} file ({' or '.join(patterns)})")


def load_trace(trace_dir: str | Path | None = None, *, pods: str | None = None,
               nodes: str | None = None) -> tuple[NodeList, PodList]:
    """Load a node list and a pod list; by default the copies shipped in ``mockgpu/sim/data``.

    In another directory the files are found by name: ``*node_list_gpu_node.csv`` (else the one
    ``*node_list*.csv``) and ``*pod_list_default.csv`` (else the one ``*pod_list*.csv``).
    """
    directory = Path(trace_dir) if trace_dir else DATA_DIR
    if not directory.is_dir():
        raise ConfigError(str(directory), "", "not a directory")
    node_path = _pick(directory, nodes, ("*node_list_gpu_node.csv", "*node_list*.csv"), "node list")
    pod_path = _pick(directory, pods, ("*pod_list_default.csv", "*pod_list*.csv"), "pod list")
    node_list, pod_list = load_nodes(node_path), load_pods(pod_path)
    if node_list.total_gpus == 0:
        raise ConfigError(str(node_path), "", "the cluster has no GPUs")
    return node_list, pod_list
