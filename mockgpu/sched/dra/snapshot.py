"""What the DynamicResources plugin reads in a cycle: DeviceClasses, ResourceSlices, ResourceClaims and
DeviceTaintRules.

The scheduler loop keeps these from its informers and hands one ``DraSnapshot`` to ``schedule_one``; build a new
one when slices change so the pool index (``slice_index``) is built once per change, not per cycle. ``claims`` may
include claims the loop has *assumed* allocated (written in its own cache before the API confirms), as upstream's
assume cache does, so back-to-back pods never get the same device.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mockgpu.sched.dra.pools import SliceIndex

SNAPSHOT_KEY = "dra.snapshot"  # where schedule_one puts the snapshot in the CycleState


@dataclass
class DraSnapshot:
    classes: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # name → DeviceClass
    slices: Sequence[dict[str, Any]] = ()
    claims: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # "namespace/name" → ResourceClaim
    taint_rules: Sequence[dict[str, Any]] = ()  # DeviceTaintRules (their taints join the selected devices')

    @cached_property
    def slice_index(self) -> SliceIndex:
        return SliceIndex(self.slices)

    def with_claims(self, claims: Mapping[str, dict[str, Any]]) -> DraSnapshot:
        """The same classes and slices (and pool index) with another set of claims."""
        snap = DraSnapshot(self.classes, self.slices, claims, self.taint_rules)
        if "slice_index" in self.__dict__:
            snap.__dict__["slice_index"] = self.__dict__["slice_index"]
        return snap
