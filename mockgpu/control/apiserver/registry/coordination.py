"""coordination.k8s.io/v1: Leases (``pkg/registry/coordination/lease``; the rules are in ``apiserver.coordination``)."""

from __future__ import annotations

from mockgpu.control.apiserver import coordination, printers
from mockgpu.control.apiserver.registry.kind import Kind, on_every_write

GROUP_VERSION = "coordination.k8s.io/v1"
SCHEME_KINDS: frozenset[str] = frozenset()

LEASE = Kind("leases", "lease", "Lease", True, group="coordination.k8s.io",
             validate=on_every_write(coordination.validate_lease),
             micro_times=(("spec", "acquireTime"), ("spec", "renewTime")), printer=printers.LEASE, model="V1Lease")

KINDS = (LEASE,)
