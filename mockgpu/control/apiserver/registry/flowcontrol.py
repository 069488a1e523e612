"""flowcontrol.apiserver.k8s.io/v1: FlowSchemas and PriorityLevelConfigurations (``pkg/registry/flowcontrol``; the
rules, the bootstrap objects and what is simplified are in ``apiserver.flowcontrol``)."""

from __future__ import annotations

from mockgpu.control.apiserver import flowcontrol, printers
from mockgpu.control.apiserver.registry.kind import ALL, STATUS, Kind, Subresource

GROUP = "flowcontrol.apiserver.k8s.io"
GROUP_VERSION = f"{GROUP}/v1"
SCHEME_KINDS: frozenset[str] = frozenset()

FLOWSCHEMA = Kind("flowschemas", "flowschema", "FlowSchema", False, ALL,
                  subresources=(Subresource("status", "FlowSchema", STATUS),), group=GROUP,
                  prepare=flowcontrol.prepare_flowschema, validate=flowcontrol.validate_flowschema,
                  validate_status=flowcontrol.validate_conditions, printer=printers.FLOWSCHEMA,
                  table_order=flowcontrol.flowschema_order, model="V1FlowSchema")
PRIORITY_LEVEL_CONFIGURATION = Kind(
    "prioritylevelconfigurations", "prioritylevelconfiguration", "PriorityLevelConfiguration", False, ALL,
    subresources=(Subresource("status", "PriorityLevelConfiguration", STATUS),), group=GROUP,
    prepare=flowcontrol.prepare_priority_level, validate=flowcontrol.validate_priority_level,
    validate_status=flowcontrol.validate_conditions, printer=printers.PRIORITYLEVEL,
    model="V1PriorityLevelConfiguration")

KINDS = (FLOWSCHEMA, PRIORITY_LEVEL_CONFIGURATION)
