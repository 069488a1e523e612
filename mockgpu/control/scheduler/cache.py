"""The scheduler's cache: nodes with the pods assigned or assumed to them, as kube-scheduler's cache.

A pod counts against its node from the moment this scheduler *assumes* it (right after deciding, before the
binding is confirmed) or the watch shows it with ``spec.nodeName``, until it is deleted or terminates
(phase Succeeded/Failed) — whether or not a kubelet runs on that node. Pods bound to a node the cache has not
seen yet are kept and counted once the node appears (upstream's "ghost" NodeInfo). ``NodeInfo`` objects are
updated incrementally, never rebuilt per cycle.
"""

from __future__ import annotations

from collections.abc import Mapping

from mockgpu.sched.snapshot import NodeInfo, pod_key, resource_list

TERMINAL_PHASES = ("Succeeded", "Failed")


def is_terminated(pod: Mapping) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def node_name_of(pod: Mapping) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _scheduling_view(node: Mapping) -> tuple:
    """What about a node can make a pending pod schedulable (a heartbeat alone cannot)."""
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    return (status.get("allocatable"), meta.get("labels"), spec.get("taints"), bool(spec.get("unschedulable")))


class Cache:
    """Nodes and their pods; used from the scheduler's thread only."""

    def __init__(self) -> None:
        self._infos: dict[str, NodeInfo] = {}
        self._nodes: set[str] = set()  # names of nodes that exist (infos may also hold ghost nodes)
        self._pod_node: dict[str, str] = {}  # pod key → node it counts on
        self._assumed: set[str] = set()
        self._nominated: dict[str, tuple[str, dict]] = {}  # pod key → (node, pod)
        self._list: list[NodeInfo] | None = None

    # ---- nodes ----------------------------------------------------------------------------------------------

    def set_node(self, node: dict) -> bool:
        """Add or update a node; True when the change could let a pending pod fit (queueing hint)."""
        name = (node.get("metadata") or {}).get("name", "")
        info = self._infos.get(name)
        is_new = name not in self._nodes
        if info is None:
            info = self._infos[name] = NodeInfo.from_node(node)
        relevant = is_new or _scheduling_view(info.node) != _scheduling_view(node)
        info.node = node
        info.allocatable = resource_list((node.get("status") or {}).get("allocatable"))
        self._nodes.add(name)
        if is_new:
            self._list = None
        return relevant

    def delete_node(self, name: str) -> None:
        self._nodes.discard(name)
        info = self._infos.get(name)
        if info is not None and not info.pods:
            del self._infos[name]
        self._list = None

    def node_names(self) -> list[str]:
        return [i.name for i in self.nodes()]

    def nodes(self) -> list[NodeInfo]:
        """Every existing node in the order first seen (the same list object until nodes come or go)."""
        if self._list is None:
            self._list = [info for name, info in self._infos.items() if name in self._nodes]
        return self._list

    def info(self, name: str) -> NodeInfo | None:
        return self._infos.get(name) if name in self._nodes else None

    # ---- pods -----------------------------------------------------------------------------------------------

    def pod_keys(self) -> set[str]:
        return set(self._pod_node)

    def has_pod(self, key: str) -> bool:
        return key in self._pod_node

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed

    def node_of(self, key: str) -> str | None:
        return self._pod_node.get(key)

    def add_pod(self, pod: dict) -> None:
        """An assigned, non-terminated pod seen by the watch (confirms an assumption on the same node)."""
        key, node = pod_key(pod), node_name_of(pod)
        current = self._pod_node.get(key)
        self._assumed.discard(key)
        self._nominated.pop(key, None)
        if current == node:
            self._replace_pod(node, key, pod)
            return
        if current is not None:
            self.remove_pod(key)
        self._place(key, node, pod)

    def assume(self, pod: dict, node: str) -> None:
        """Count ``pod`` on ``node`` before the binding is confirmed, so the next cycle sees it."""
        key = pod_key(pod)
        if key in self._pod_node:
            self.remove_pod(key)
        self._nominated.pop(key, None)
        self._place(key, node, pod)
        self._assumed.add(key)

    def forget(self, key: str) -> None:
        """Undo an assumption (the binding failed)."""
        if key in self._assumed:
            self.remove_pod(key)

    def remove_pod(self, key: str) -> None:
        node = self._pod_node.pop(key, None)
        self._assumed.discard(key)
        if node is None:
            return
        info = self._infos.get(node)
        if info is not None:
            info.remove_pod(key)
            if not info.pods and node not in self._nodes:
                del self._infos[node]

    def _place(self, key: str, node: str, pod: dict) -> None:
        info = self._infos.get(node)
        if info is None:  # a node not seen (yet): keep its pods until it appears
            info = self._infos[node] = NodeInfo.from_node({"metadata": {"name": node}})
        info.add_pod(pod)
        self._pod_node[key] = node

    def _replace_pod(self, node: str, key: str, pod: dict) -> None:
        """Swap in the newer object of a pod already counted (its requests cannot change: spec is immutable)."""
        info = self._infos[node]
        for i, p in enumerate(info.pods):
            if pod_key(p) == key:
                info.pods[i] = pod
                return

    # ---- nominations (preemption) ----------------------------------------------------------------------------

    def nominate(self, pod: dict, node: str) -> None:
        self._nominated[pod_key(pod)] = (node, pod)

    def unnominate(self, key: str) -> None:
        self._nominated.pop(key, None)

    def nominated_node(self, key: str) -> str | None:
        entry = self._nominated.get(key)
        return entry[0] if entry else None

    def nominated_pods(self) -> dict[str, list[dict]]:
        """Pods nominated to each node and not bound yet (upstream's nominator). ``schedule_one`` adds those of
        priority ≥ the pod's to its Filter runs only (``RunFilterPluginsWithNominatedPods``); Score does not
        see them, as upstream."""
        out: dict[str, list[dict]] = {}
        for node, p in self._nominated.values():
            out.setdefault(node, []).append(p)
        return out
