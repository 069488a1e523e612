"""Garbage collection of pod log directories: a deleted pod's ``<state>/logs/<ns>_<pod>_<uid>`` goes with it.

As the kubelet's container GC (``pkg/kubelet/kuberuntime/kuberuntime_gc.go``, ``evictPodLogsDirectories``)
removes a ``/var/log/pods/<ns>_<name>_<uid>`` dir once its pod is deleted (the uid is the part after the last
``_``), so disk use is bounded by the pods that exist, not by every pod the cluster ever ran:
* ``remove_pod_log_dir(state_dir, ns, name, uid)``: the kubelet calls it when the API reports the pod
  deleted and its containers are stopped (``podsync``; until then ``kubectl logs``, ``--previous`` too, is served);
* ``sweep(state_dir, existing_uids)``: at kubelet start and every ``KubeletOptions.gc_period`` (upstream's
  ``ContainerGCPeriod``, 1 min), the dirs of pods the API no longer has (deleted while no kubelet was
  watching: a crash, a kubelet that was down; or a removal that failed). Its caller lists the dirs (``log_dir_names``)
  *before* it lists the pods, so a dir made after that list (a new pod's) is never taken for a deleted pod's.
Differences from upstream: every node's kubelet of a cluster writes to one ``<state>/logs`` (the API server reads
it), so "deleted" means "not in the API" (a cluster-wide pod list) rather than "unknown to this node's pod
manager"; the per-pod removal is driven by the watch's DELETED event (or the re-list's, ``apiwatch``).
Removal never follows a symlink (``saferm``: fd-relative, ``O_NOFOLLOW``, ``shutil.rmtree`` with ``dir_fd``).
The dirs are kubelet-written (0700, not pod-writable); this is defence in depth.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from mockgpu.control.apiserver.podlogs import log_dir, logs_root
from mockgpu.control.kubelet import saferm


def pod_uid_of(dir_name: str) -> str:
    """The pod uid of a ``<ns>_<name>_<uid>`` dir name (upstream's ``parsePodUIDFromLogsDirectory``)."""
    return dir_name.rsplit("_", 1)[-1]


def log_dir_names(state_dir: str | Path) -> list[str]:
    """The pod log dir names under ``<state>/logs`` (none when it does not exist)."""
    return [n for n in saferm.entry_names(logs_root(state_dir)) if n.count("_") >= 2]


def remove_log_dirs(state_dir: str | Path, names: Iterable[str]) -> list[str]:
    """Remove these dirs of ``<state>/logs``; the names removed. Failures are logged, not raised."""
    return saferm.remove_entries(logs_root(state_dir), names, what="pod log dir")


def remove_pod_log_dir(state_dir: str | Path, namespace: str, name: str, uid: str) -> bool:
    """Remove a deleted pod's log dir (call once its containers are stopped); whether there was one."""
    return bool(remove_log_dirs(state_dir, [log_dir(state_dir, namespace, name, uid).name]))


def sweep(state_dir: str | Path, names: Iterable[str], existing_uids: Iterable[str]) -> list[str]:
    """Remove the dirs among ``names`` (listed before ``existing_uids`` was) whose pod no longer exists."""
    keep = set(existing_uids)
    return remove_log_dirs(state_dir, [n for n in names if pod_uid_of(n) not in keep])
