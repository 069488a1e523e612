"""Resource lists as ``k8s.io/apiserver/pkg/quota/v1/resources.go`` handles them: add, subtract, mask, compare
and print, with each quantity's format kept as ``resource.Quantity`` keeps it (a sum takes the format of its left
operand unless that one is zero, so ``0`` plus ``1Gi`` prints ``1Gi``), and the resource names quota knows
(``pkg/apis/core/helper``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mockgpu.apimachinery.quantity import canonical, parse_quantity


@dataclass(frozen=True)
class Quantity:
    """An exact value and whether it prints in binary units (``Ki``, ``Mi``, ...) as ``BinarySI`` does."""

    value: Fraction
    binary: bool = False

    @staticmethod
    def parse(raw: Any) -> Quantity:
        binary = isinstance(raw, str) and raw.strip().endswith("i")
        return Quantity(parse_quantity(raw), binary)

    def __str__(self) -> str:
        """``Quantity.String()``: BinarySI only for whole values of at least 1024 (``canonical`` decides)."""
        v = self.value
        if self.binary and v.denominator == 1 and abs(v) >= 1024 and v % 1024 == 0:
            return canonical(f"{v // 1024}Ki")
        return canonical(v)

    def add(self, other: Quantity) -> Quantity:
        return Quantity(self.value + other.value, other.binary if self.value == 0 else self.binary)

    def sub(self, other: Quantity) -> Quantity:
        return Quantity(self.value - other.value, other.binary if self.value == 0 else self.binary)


ResourceList = dict[str, Quantity]
ZERO = Quantity(Fraction(0))


def parse_list(raw: Mapping[str, Any] | None) -> ResourceList:
    """A stored ``ResourceList`` (name → quantity text); unreadable values are left out (validation refused
    them on the way in)."""
    out: ResourceList = {}
    for name, value in (raw or {}).items():
        try:
            out[name] = Quantity.parse(value)
        except (ValueError, TypeError):
            continue
    return out


def to_raw(rl: ResourceList) -> dict[str, str]:
    return {k: str(rl[k]) for k in sorted(rl)}


def add(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        out[k] = out[k].add(v) if k in out else v
    return out


def subtract_non_negative(a: ResourceList, b: ResourceList) -> ResourceList:
    """``SubtractWithNonNegativeResult``: a − b per resource of ``a``, floored at zero."""
    out: ResourceList = {}
    for k, v in a.items():
        d = v.sub(b[k]) if k in b else v
        out[k] = d if d.value > 0 else Quantity(Fraction(0), d.binary)
    return out


def mask(rl: ResourceList, names: Iterable[str]) -> ResourceList:
    keep = set(names)
    return {k: v for k, v in rl.items() if k in keep}


def remove_zeros(rl: ResourceList) -> ResourceList:
    return {k: v for k, v in rl.items() if v.value != 0}


def negative(rl: ResourceList) -> list[str]:
    return [k for k, v in rl.items() if v.value < 0]


def less_than_or_equal(a: ResourceList, b: ResourceList) -> tuple[bool, list[str]]:
    """Whether every resource of ``a`` that ``b`` names is at most ``b``'s, and the ones that are not."""
    exceeded = sorted(k for k, v in a.items() if k in b and v.value > b[k].value)
    return not exceeded, exceeded


def pretty(rl: ResourceList) -> str:
    """``prettyPrint``: ``name=value`` sorted by name, comma-joined."""
    return ",".join(f"{k}={rl[k]}" for k in sorted(rl))


# ---- the names quota knows (pkg/apis/core/helper/helpers.go) ----------------------------------------------------

REQUESTS_PREFIX = "requests."
LIMITS_PREFIX = "limits."
QUOTA_HUGEPAGES_PREFIX = "requests.hugepages-"

STANDARD_QUOTA_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods",
    "resourcequotas", "services", "replicationcontrollers", "secrets", "persistentvolumeclaims", "configmaps",
    "services.nodeports", "services.loadbalancers"})
STANDARD_RESOURCES = STANDARD_QUOTA_RESOURCES | {"storage"}
INTEGER_RESOURCES = frozenset({"pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
                               "configmaps", "persistentvolumeclaims", "services.nodeports",
                               "services.loadbalancers"})
POD_COMPUTE_QUOTA_RESOURCES = frozenset({"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu",
                                         "requests.memory"})
SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
          "CrossNamespacePodAffinity", "VolumeAttributesClass")


def is_hugepages_name(name: str) -> bool:
    return name.startswith("hugepages-")


def is_quota_hugepages_name(name: str) -> bool:
    return is_hugepages_name(name) or name.startswith(QUOTA_HUGEPAGES_PREFIX)


def is_standard_quota_resource_name(name: str) -> bool:
    return name in STANDARD_QUOTA_RESOURCES or is_quota_hugepages_name(name)


def is_standard_resource_name(name: str) -> bool:
    return name in STANDARD_RESOURCES or is_quota_hugepages_name(name)


def scope_valid_for_resource(scope: str, name: str) -> bool:
    """``IsResourceQuotaScopeValidForResource``."""
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"):
        return name == "pods" or name in POD_COMPUTE_QUOTA_RESOURCES
    if scope == "BestEffort":
        return name == "pods"
    if scope == "VolumeAttributesClass":
        return name in ("persistentvolumeclaims", "requests.storage")
    return True
