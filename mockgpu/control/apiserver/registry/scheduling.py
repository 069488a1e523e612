"""scheduling.k8s.io/v1beta1: Workloads and PodGroups (``pkg/registry/scheduling/{workload,podgroup}``; the rules
are in ``apiserver.podgroups``), served only with the ``GenericWorkload`` feature gate, as
``pkg/registry/scheduling/rest/storage_scheduling.go`` installs them. v1beta1 is the version v1.37.2's scheduler and
controllers read; the same kinds in v1alpha3, CompositePodGroup and PriorityClass (v1) are not served here."""

from __future__ import annotations

from mockgpu.config.featuregates import GENERIC_WORKLOAD
from mockgpu.control.apiserver import podgroups, printers
from mockgpu.control.apiserver.registry.kind import STATUS, Kind, Subresource

GROUP_VERSION = "scheduling.k8s.io/v1beta1"
#: kinds kube-apiserver's scheme knows in this group-version that mockgpu does not serve
SCHEME_KINDS: frozenset[str] = frozenset({"PriorityClass"})
_GROUP = "scheduling.k8s.io"

WORKLOAD = Kind("workloads", "workload", "Workload", True, group=_GROUP, version="v1beta1",
                feature_gate=GENERIC_WORKLOAD, prepare=podgroups.prepare_workload,
                gated_fields=podgroups.gated_workload, validate=podgroups.validate_workload,
                printer=printers.WORKLOAD, model="V1beta1Workload")
PODGROUP = Kind("podgroups", "podgroup", "PodGroup", True, group=_GROUP, version="v1beta1",
                subresources=(Subresource("status", "PodGroup", STATUS),), feature_gate=GENERIC_WORKLOAD,
                prepare=podgroups.prepare_podgroup, gated_fields=podgroups.gated_podgroup,
                validate=podgroups.validate_podgroup, printer=printers.PODGROUP, model="V1beta1PodGroup")

KINDS = (WORKLOAD, PODGROUP)
