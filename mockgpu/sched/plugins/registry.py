"""Upstream plugin names → plugin classes, and the default profile's plugin lists and weights.

Defaults as kube-scheduler v1.37.2's v1 ``getDefaultPlugins`` (MultiPoint) with its default feature gates:
filter order NodeName, NodeUnschedulable (mockgpu's v1.35 model had these two the other way round),
TaintToleration, NodeAffinity, …, NodeResourcesFit; score weights TaintToleration 3, NodeAffinity 2,
NodeResourcesFit 1, VolumeBinding 1 (no weight in the list, so the framework's default 1), PodTopologySpread 2,
InterPodAffinity 2, DynamicResources 2 (DynamicResourceAllocation is GA: inserted before DefaultPreemption),
NodeResourcesBalancedAllocation 1, ImageLocality 1; NodeDeclaredFeatures (GA in v1.37) is appended.
DynamicResources is modelled at PreEnqueue/PreFilter/Filter/Reserve; its Score (prioritized-list subrequests
only) is not, so it has no score entry here (its weight in the list is kept for configs). Default plugins not
modelled here (they never reject or rank the pods mockgpu makes: NodePorts, volume plugins, PodTopologySpread,
InterPodAffinity, ImageLocality, NodeDeclaredFeatures) are accepted in configs by name and ignored.
"""

from __future__ import annotations

from mockgpu.sched.plugins import (
    balanced_allocation,
    dynamic_resources,
    node_affinity,
    node_name,
    node_resources_fit,
    node_unschedulable,
    taint_toleration,
)

PLUGINS: dict[str, type] = {
    node_unschedulable.NAME: node_unschedulable.NodeUnschedulable,
    node_name.NAME: node_name.NodeName,
    taint_toleration.NAME: taint_toleration.TaintToleration,
    node_affinity.NAME: node_affinity.NodeAffinity,
    node_resources_fit.NAME: node_resources_fit.NodeResourcesFit,
    balanced_allocation.NAME: balanced_allocation.NodeResourcesBalancedAllocation,
    dynamic_resources.NAME: dynamic_resources.DynamicResources,
}

FILTERS = (node_name.NAME, node_unschedulable.NAME, taint_toleration.NAME, node_affinity.NAME,
           node_resources_fit.NAME, dynamic_resources.NAME)
SCORERS = (taint_toleration.NAME, node_affinity.NAME, node_resources_fit.NAME, balanced_allocation.NAME)

# The default MultiPoint list of kube-scheduler v1.37.2 with its weights (None: no weight in the list).
DEFAULT_MULTIPOINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeName", None),
    ("NodeUnschedulable", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
    ("NodeDeclaredFeatures", None),
)

# Names upstream knows that are accepted in a config but have no effect in this model.
KNOWN_UNMODELLED = frozenset(name for name, _ in DEFAULT_MULTIPOINT if name not in PLUGINS) | {
    "SchedulingGates",
}
KNOWN_PLUGINS = frozenset(PLUGINS) | KNOWN_UNMODELLED
