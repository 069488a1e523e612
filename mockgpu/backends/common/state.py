"""Where a local cluster (embedded or upstream) keeps its state, and the files in it.

Both local backends share this layout (the upstream backend adds its own files, ``upstream/state.py``), which is
why ``mockgpu status`` finds either kind of cluster under one home and ``cluster.json`` names the backend.

Layout of ``<home>/<name>/`` (home = ``$MOCKGPU_HOME`` or ``~/.mockgpu``), mode 0700, every file in it 0600
(``privatefs``; the workload-visible dirs under ``nodes/<node>/`` are the sandbox's):

- ``cluster.json``   name, token, port, scheduler config, kubeconfig path (written by ``up``)
- ``spec.yaml``      the cluster spec the cluster was created from (resume reads it)
- ``store.db``       the API server's SQLite database (+ ``-wal``/``-shm``)
- ``apiserver.log``  the control-plane daemon's log
- ``endpoint.json``  pid and port of the running server; ``apiserver.lock`` is held while it runs
- ``kubeconfig``     default kubeconfig (mode 0600)
- ``apiserver.crt``, ``apiserver.key``  the self-signed serving certificate (kubectl needs TLS)
- ``logs/<ns>_<pod>_<uid>/<container>/<restart>.log``  container output (CRI format, rotated), written by
  the kubelet
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mockgpu.config import ClusterSpec, load_spec
from mockgpu.errors import MockgpuError
from mockgpu.privatefs import private_dir, write_private


def mockgpu_home(home: str | Path | None = None) -> Path:
    """``home``, else ``$MOCKGPU_HOME``, else ``~/.mockgpu``."""
    if home is not None:
        return Path(home).expanduser().absolute()
    env = os.environ.get("MOCKGPU_HOME")
    return Path(env).expanduser().absolute() if env else Path.home() / ".mockgpu"


@dataclass(frozen=True)
class ClusterState:
    """The state dir of one cluster and the names of its files."""

    name: str
    dir: Path

    @classmethod
    def of(cls, name: str, home: str | Path | None = None) -> ClusterState:
        return cls(name, mockgpu_home(home) / name)

    @property
    def config_file(self) -> Path:
        return self.dir / "cluster.json"

    @property
    def spec_file(self) -> Path:
        return self.dir / "spec.yaml"

    @property
    def cert_file(self) -> Path:
        return self.dir / "apiserver.crt"

    @property
    def key_file(self) -> Path:
        return self.dir / "apiserver.key"

    @property
    def log_file(self) -> Path:
        return self.dir / "apiserver.log"

    @property
    def default_kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def pod_logs_dir(self) -> Path:
        return self.dir / "logs"

    def exists(self) -> bool:
        return self.config_file.is_file()

    def read_config(self) -> dict[str, Any]:
        try:
            return json.loads(self.config_file.read_text())
        except (OSError, ValueError) as exc:
            raise MockgpuError(f"cluster '{self.name}' has no readable state in {self.dir} ({exc}); "
                               f"remove that folder or run mockgpu down --name {self.name}") from None

    @property
    def ephemeral_file(self) -> Path:
        """Marks a cluster that lives only as long as the process serving it (a lab's, a test's)."""
        return self.dir / "ephemeral"

    def mark_ephemeral(self) -> None:
        private_dir(self.dir)
        write_private(self.ephemeral_file, "deleted when the process serving it is gone\n")

    def is_ephemeral(self) -> bool:
        return self.ephemeral_file.is_file()

    def write_config(self, config: dict[str, Any]) -> None:
        private_dir(self.dir)
        write_private(self.config_file, json.dumps(config, indent=2))  # it holds the token

    def load_spec(self) -> ClusterSpec:
        return load_spec(self.spec_file)

    def save_spec(self, spec: ClusterSpec) -> None:
        private_dir(self.dir)
        data = spec.model_dump(mode="json", by_alias=True, exclude={"source"})
        write_private(self.spec_file, yaml.safe_dump(data, sort_keys=False))


def node_root(state: ClusterState, node: str) -> Path:
    """A node's private root (its kubelet's state) in the cluster's state dir."""
    return state.dir / "nodes" / node
