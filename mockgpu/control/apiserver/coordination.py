"""coordination.k8s.io/v1 Leases: validation and the node lease contract (MicroTimes: ``microtime``).

Node heartbeats use one Lease per node, as the kubelet's node lease controller keeps them upstream — the
contract for the embedded kubelets: namespace ``kube-node-lease``, name = the node's name, ``holderIdentity``
= the node's name, ``leaseDurationSeconds: 40``, ``renewTime`` refreshed every 10 s (a quarter of the
duration), ``ownerReferences`` to the Node. ``kubectl describe node`` reads that Lease. Simplified: the
alpha ``strategy``/``preferredHolder`` fields (CoordinatedLeaderElection) are stored but not validated beyond
upstream's rule that ``preferredHolder`` needs ``strategy``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mockgpu.apimachinery.timefmt import micro_time
from mockgpu.control.apiserver.status import FieldError, field_forbidden, field_invalid

NODE_LEASE_NAMESPACE = "kube-node-lease"
NODE_LEASE_DURATION_SECONDS = 40


def validate_lease(lease: dict[str, Any]) -> list[FieldError]:
    """upstream ``ValidateLeaseSpec`` (the GA fields)."""
    spec = lease.get("spec") or {}
    errs: list[FieldError] = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        errs.append(field_invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and transitions < 0:
        errs.append(field_invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    if spec.get("preferredHolder") and not spec.get("strategy"):
        errs.append(field_forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"))
    return errs


def node_lease(node: str, now: datetime | None = None, node_uid: str | None = None) -> dict[str, Any]:
    """The Lease a kubelet keeps for ``node`` (the contract above), renewed ``now``."""
    meta: dict[str, Any] = {"name": node, "namespace": NODE_LEASE_NAMESPACE}
    if node_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}]
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
            "spec": {"holderIdentity": node, "leaseDurationSeconds": NODE_LEASE_DURATION_SECONDS,
                     "renewTime": micro_time(now)}}
