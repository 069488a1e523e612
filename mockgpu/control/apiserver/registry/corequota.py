"""The core group's quota kinds: ResourceQuota (with ``/status``) and LimitRange, listed in ``core.KINDS``.

Upstream: ``pkg/registry/core/resourcequota`` and ``pkg/registry/core/limitrange`` (strategies, short names
``quota`` and ``limits``). Their rules are in ``resourcequotas`` and ``limitranges``; admission against them is
``quotaadmission``, and kube-controller-manager's quota controller (``controllers/resourcequota``) fills
``status``.
"""

from __future__ import annotations

from mockgpu.control.apiserver import limitranges, resourcequotas
from mockgpu.control.apiserver.registry.kind import ALL, STATUS, Kind, Subresource

RESOURCE_QUOTA = Kind("resourcequotas", "resourcequota", "ResourceQuota", True, ALL, ("quota",),
                      subresources=(Subresource("status", "ResourceQuota", STATUS),),
                      prepare=resourcequotas.prepare, validate=resourcequotas.validate,
                      validate_status=resourcequotas.validate_status, quantities=resourcequotas.quantities,
                      printer=resourcequotas.PRINTER, model="V1ResourceQuota")
LIMIT_RANGE = Kind("limitranges", "limitrange", "LimitRange", True, ALL, ("limits",),
                   prepare=limitranges.prepare, validate=limitranges.validate, quantities=limitranges.quantities,
                   model="V1LimitRange")

KINDS = (RESOURCE_QUOTA, LIMIT_RANGE)
