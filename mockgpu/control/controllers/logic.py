"""Pure decisions the controllers share, as kube-controller-manager makes them (no I/O, unit-tested alone).

Naming (``pod-template-hash``), IntOrString fenceposts for rolling updates, which pods a ReplicaSet deletes
first, pod readiness and availability, owner references and conditions. Simplified: the template hash is
FNV-32a over the template's canonical JSON, where upstream hashes a Go struct dump; the name has upstream's
shape (``<deployment>-<hash>`` in the same alphabet) but not upstream's value for the same template.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

from mockgpu.apimachinery.unstructured import without_nulls

Obj = dict[str, Any]

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery rand's alphabet: no vowels, no 0/1/3


def parse_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# ---- naming -----------------------------------------------------------------------------------------------

def safe_encode(text: str) -> str:
    """apimachinery ``rand.SafeEncodeString``: each character mapped into an alphabet without vowels."""
    return "".join(_ALPHANUMS[ord(ch) % len(_ALPHANUMS)] for ch in text)


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def template_hash(template: Obj, collision_count: int | None = None) -> str:
    """The ``pod-template-hash`` of a Deployment's pod template (and its collision count, when set)."""
    data = json.dumps(without_nulls(template), sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += str(collision_count).encode()
    return safe_encode(str(fnv32a(data)))


def without_hash(template: Obj) -> Obj:
    """A ReplicaSet's template with the ``pod-template-hash`` label removed (upstream ``EqualIgnoreHash``)."""
    out = without_nulls(json.loads(json.dumps(template or {})))
    labels = (out.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(POD_TEMPLATE_HASH, None)
        if not labels:
            del out["metadata"]["labels"]
    return out


def equal_ignore_hash(a: Obj, b: Obj) -> bool:
    return without_hash(a) == without_hash(b)


# ---- owner references -------------------------------------------------------------------------------------

def controller_ref(owner: Obj) -> dict[str, Any]:
    """``metav1.NewControllerRef``: the owner reference a controller puts on what it creates."""
    meta = owner["metadata"]
    return {"apiVersion": owner.get("apiVersion", ""), "kind": owner.get("kind", ""), "name": meta["name"],
            "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}


def controller_of(obj: Obj) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def owned_by(obj: Obj, owner: Obj) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == owner["metadata"].get("uid")


def claim_decision(obj: Obj, owner: Obj, matches: bool) -> str:
    """Upstream ``ClaimObject``: "adopt" an orphan that matches the selector, "release" an owned one that no
    longer matches, "keep" an owned match, "ignore" anything else (another controller's, or deleting)."""
    ref = controller_of(obj)
    meta = obj.get("metadata") or {}
    if ref is not None:
        if ref.get("uid") != owner["metadata"].get("uid"):
            return "ignore"
        return "keep" if matches else "release"
    if not matches or meta.get("deletionTimestamp") or owner["metadata"].get("deletionTimestamp"):
        return "ignore"
    if (obj.get("metadata") or {}).get("namespace") != owner["metadata"].get("namespace"):
        return "ignore"
    return "adopt"


# ---- pods -------------------------------------------------------------------------------------------------

def pod_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_active(pod: Obj) -> bool:
    """``controller.IsPodActive``: not terminal and not being deleted."""
    return not pod_terminal(pod) and not (pod.get("metadata") or {}).get("deletionTimestamp")


def _ready_condition(pod: Obj) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond
    return None


def pod_ready(pod: Obj) -> bool:
    cond = _ready_condition(pod)
    return cond is not None and cond.get("status") == "True"


def pod_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """``podutil.IsPodAvailable``: ready, and for at least ``minReadySeconds`` (by the condition's time)."""
    if not pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = parse_time((_ready_condition(pod) or {}).get("lastTransitionTime"))
    return since is not None and since + min_ready_seconds <= now


def _phase_rank(pod: Obj) -> int:
    return {"Pending": 0, "Unknown": 1, "Running": 2}.get((pod.get("status") or {}).get("phase", ""), 0)


def _restarts(pod: Obj) -> int:
    return max((int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or []),
               default=0)


def deletion_order(pods: list[Obj]) -> list[Obj]:
    """Pods in the order a ReplicaSet deletes them (upstream ``ActivePods`` sort, simplified): unscheduled
    before scheduled, Pending before Unknown before Running, not ready before ready, more restarts first,
    newer before older."""
    def key(p: Obj) -> tuple:
        created = parse_time((p.get("metadata") or {}).get("creationTimestamp")) or 0.0
        return (bool((p.get("spec") or {}).get("nodeName")), _phase_rank(p), pod_ready(p), -_restarts(p),
                -created, (p.get("metadata") or {}).get("name", ""))
    return sorted(pods, key=key)


def pod_from_template(template: Obj, owner: Obj, prefix: str, extra_finalizers: tuple[str, ...] = ()) -> Obj:
    """``controller.GetPodFromTemplate``: labels, annotations and finalizers from the template, a generated
    name ``<prefix>-xxxxx`` and the owner as controller."""
    tmeta = json.loads(json.dumps(template.get("metadata") or {}))
    meta: dict[str, Any] = {"generateName": f"{prefix}-", "namespace": owner["metadata"]["namespace"],
                            "ownerReferences": [controller_ref(owner)]}
    for key in ("labels", "annotations"):
        if tmeta.get(key):
            meta[key] = tmeta[key]
    finalizers = list(tmeta.get("finalizers") or []) + list(extra_finalizers)
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": json.loads(json.dumps(template.get("spec") or {}))}


# ---- rolling update arithmetic ----------------------------------------------------------------------------

def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``"25%"`` of ``total`` rounded up or down."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return 0


def fenceposts(max_surge: Any, max_unavailable: Any, desired: int) -> tuple[int, int]:
    """``deploymentutil.ResolveFenceposts``: (surge rounded up, unavailable rounded down); never both 0."""
    surge = scaled_value(max_surge if max_surge is not None else "25%", desired, True)
    unavailable = scaled_value(max_unavailable if max_unavailable is not None else "25%", desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def new_rs_replicas(desired: int, surge: int, all_spec_replicas: int, new_replicas: int) -> int:
    """``NewRSNewReplicas`` for RollingUpdate: grow the new ReplicaSet up to ``desired + surge`` pods in all."""
    max_total = desired + surge
    if all_spec_replicas >= max_total:
        return new_replicas
    return new_replicas + min(max_total - all_spec_replicas, desired - new_replicas)


def max_unavailable(deployment: Obj) -> int:
    spec = deployment.get("spec") or {}
    desired = int(spec.get("replicas") or 0)
    strategy = spec.get("strategy") or {}
    if strategy.get("type") != "RollingUpdate" or desired == 0:
        return 0
    ru = strategy.get("rollingUpdate") or {}
    _, unavailable = fenceposts(ru.get("maxSurge"), ru.get("maxUnavailable"), desired)
    return min(unavailable, desired)


def max_surge(deployment: Obj) -> int:
    spec = deployment.get("spec") or {}
    strategy = spec.get("strategy") or {}
    if strategy.get("type") != "RollingUpdate":
        return 0
    ru = strategy.get("rollingUpdate") or {}
    surge, _ = fenceposts(ru.get("maxSurge"), ru.get("maxUnavailable"), int(spec.get("replicas") or 0))
    return surge


def proportional_sizes(desired: int, surge: int, rss: list[tuple[str, int, int | None, float]]) -> dict[str, int]:
    """Upstream's proportional scaling (``dc.scale``) of several active ReplicaSets when the Deployment's replica
    count changes mid-rollout. ``rss``: (name, spec.replicas, its ``max-replicas`` annotation or None, creation
    time). Each ReplicaSet gets its share of ``desired + surge`` by its size over the size it was scaled for;
    rounding leftovers go to the largest (newest on ties) ReplicaSet; no size goes below 0."""
    allowed = desired + surge
    to_add = allowed - sum(r[1] for r in rss)
    if to_add > 0:  # ReplicaSetsBySizeNewer: larger first, newer first on ties
        order = sorted(rss, key=lambda r: (-r[1], -r[3], r[0]))
    else:  # ReplicaSetsBySizeOlder
        order = sorted(rss, key=lambda r: (-r[1], r[3], r[0]))
    sizes: dict[str, int] = {}
    added = 0
    for name, replicas, annotated, _ in order:
        proportion = 0
        if to_add != 0 and replicas > 0:
            if desired == 0:
                proportion = -replicas
            elif annotated:
                proportion = math.floor(replicas * allowed / annotated + 0.5) - replicas  # Go's RoundToInt32
            allowed_left = to_add - added
            proportion = min(proportion, allowed_left) if to_add > 0 else max(proportion, allowed_left)
        sizes[name] = replicas + proportion
        added += proportion
    if order and to_add - added:
        first = order[0][0]
        sizes[first] = max(0, sizes[first] + to_add - added)
    return sizes


# ---- conditions -------------------------------------------------------------------------------------------

def get_condition(status: Obj, type_: str) -> Obj | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == type_:
            return cond
    return None


def set_condition(status: Obj, cond: Obj) -> None:
    """Upstream ``SetDeploymentCondition`` (jobs alike): nothing changes when a condition of that type has the
    same status and reason; with the same status the old lastTransitionTime is kept; the condition moves last."""
    conds = status.get("conditions") or []
    old = next((c for c in conds if c.get("type") == cond["type"]), None)
    if old is not None and old.get("status") == cond.get("status") and old.get("reason") == cond.get("reason"):
        return
    if old is not None and old.get("status") == cond.get("status"):
        cond = {**cond, "lastTransitionTime": old.get("lastTransitionTime", cond.get("lastTransitionTime"))}
    status["conditions"] = [c for c in conds if c.get("type") != cond["type"]] + [cond]


def remove_condition(status: Obj, type_: str) -> None:
    conds = [c for c in status.get("conditions") or [] if c.get("type") != type_]
    if conds:
        status["conditions"] = conds
    else:
        status.pop("conditions", None)
