"""Feature gates: the cluster spec's ``spec.featureGates`` (gate → bool, the shape of kind's ``featureGates``),
checked as v1.37.2's ``--feature-gates`` checks them, and the one place every embedded component asks whether a
gate is on.

The table (``featuregates.json``) is every gate the v1.37.2 control plane knows, with its default, stage and lock
at 1.37, and the gates' dependencies; ``scripts/gen-feature-gates`` reads it from the Go sources
(``pkg/features/kube_features.go`` and the gates of k8s.io/apiserver, client-go and component-base it registers).
The rules are component-base's ``featuregate.(*featureGate).unsafeSetFromMap``: an unknown gate is refused first
(``unrecognized feature gate: X``); a gate locked to its default cannot be set to the other value
(``cannot set feature gate X to false, feature is locked to true``); setting a GA or deprecated gate is allowed
(upstream logs a warning; ``warnings`` returns it); an enabled gate whose dependencies are off is refused
(``X is enabled, but depends on features that are disabled: [Y]``). ``AllAlpha``/``AllBeta`` turn every unlocked
alpha/beta gate on or off unless the gate is named itself, as upstream's special gates do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ALL_ALPHA, ALL_BETA = "AllAlpha", "AllBeta"
GENERIC_WORKLOAD = "GenericWorkload"  # scheduling.k8s.io Workload and PodGroup, pods' schedulingGroup, GangScheduling
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
COMPOSITE_POD_GROUP = "CompositePodGroup"
_SPECIAL = {ALL_ALPHA: "ALPHA", ALL_BETA: "BETA"}
# The API versions a gate's kinds are served in, off by default in kube-apiserver as every alpha and (since 1.24)
# every new beta version is: with the gate on they are also switched on with --runtime-config
# (pkg/registry/scheduling/rest/storage_scheduling.go: Workload and PodGroup in v1beta1, which the 1.37.2 scheduler
# and controllers read, and in v1alpha3; CompositePodGroup only in v1alpha3).
_API_VERSIONS = {GENERIC_WORKLOAD: ("scheduling.k8s.io/v1alpha3", "scheduling.k8s.io/v1beta1")}


@cache
def table() -> dict[str, Any]:
    """``{"gates": {name: {default, preRelease, lockToDefault}}, "dependencies": {name: [names]}}``."""
    data: dict[str, Any] = json.loads((Path(__file__).with_name("featuregates.json")).read_text())
    return data


def known(name: str) -> bool:
    return name in _SPECIAL or name in table()["gates"]


def _effective(name: str, explicit: Mapping[str, bool]) -> bool:
    if name in explicit:
        return explicit[name]
    spec = table()["gates"].get(name)
    if spec is None:
        return False
    for special, stage in _SPECIAL.items():
        if special in explicit and spec["preRelease"] == stage and not spec["lockToDefault"]:
            return explicit[special]
    return bool(spec["default"])


def errors(gates: Mapping[str, bool]) -> list[str]:
    """What kube-apiserver (and the scheduler and controller manager) would refuse in ``--feature-gates`` built
    from ``gates``, in upstream's words; empty when all is well."""
    out: list[str] = []
    specs = table()["gates"]
    for name, value in gates.items():
        if not known(name):
            return [f"unrecognized feature gate: {name}"]  # upstream returns at the first unknown gate
        spec = specs.get(name)
        if spec and spec["lockToDefault"] and bool(spec["default"]) != value:
            out.append(f"cannot set feature gate {name} to {_go(value)}, feature is locked to {_go(spec['default'])}")
        elif spec and spec["preRelease"] == "PRE-ALPHA":
            out.append(f"cannot set feature gate {name} to {_go(value)}, feature is PreAlpha at emulated version "
                       "1.37, min compatibility version 1.36")
    if out:
        return out
    for name, deps in sorted(table()["dependencies"].items()):
        if _effective(name, gates):
            off = [d for d in deps if not _effective(d, gates)]
            if off:
                out.append(f"{name} is enabled, but depends on features that are disabled: [{' '.join(off)}]")
    return out


def warnings(gates: Mapping[str, bool]) -> list[str]:
    """Upstream's log line for setting a GA or deprecated gate (allowed; the gate will be removed)."""
    out = []
    for name, value in gates.items():
        stage = (table()["gates"].get(name) or {}).get("preRelease")
        if stage == "GA":
            out.append(f"setting GA feature gate {name}={_go(value)}. It will be removed in a future release.")
        elif stage == "DEPRECATED":
            out.append(f"setting deprecated feature gate {name}={_go(value)}. It will be removed in a future release.")
    return out


def _go(value: object) -> str:
    return "true" if value else "false"


@dataclass(frozen=True)
class FeatureGates:
    """The gates a cluster runs with: the spec's explicit settings over v1.37.2's defaults."""

    explicit: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        """Whether ``name`` is on; a gate v1.37.2 does not know is a programming error."""
        if not known(name):
            raise KeyError(f"unrecognized feature gate: {name}")
        return _effective(name, self.explicit)

    def flag(self) -> str:
        """The value of ``--feature-gates`` (sorted, as kind and kubeadm write it); empty when nothing is set."""
        return ",".join(f"{k}={_go(v)}" for k, v in sorted(self.explicit.items()))

    def runtime_config(self) -> str:
        """kube-apiserver's ``--runtime-config`` for the API versions the enabled gates' kinds are served in."""
        versions = sorted({v for gate, vs in _API_VERSIONS.items() if self.enabled(gate) for v in vs})
        return ",".join(f"{v}=true" for v in versions)

    def as_dict(self) -> dict[str, bool]:
        return dict(sorted(self.explicit.items()))


DEFAULT = FeatureGates()
