"""resource.k8s.io/v1 (Dynamic Resource Allocation): DeviceClasses, ResourceClaims, ResourceClaimTemplates,
ResourceSlices and DeviceTaintRules (``pkg/registry/resource/<kind>/strategy.go``; the rules are
``apiserver.resourcev1`` and ``apiserver.devicetaint``). Their stores return the deleted object (upstream
``ReturnDeletedObject``); upstream has no short names here. DeviceTaintRules are served in v1 since v1.37
(``DRADeviceTaintRules`` GA, on by default; ``pkg/registry/resource/rest/storage_resource.go``)."""

from __future__ import annotations

from mockgpu.control.apiserver import devicetaint, printers, resourcev1
from mockgpu.control.apiserver.registry.kind import CLUSTER_FIELDS, STATUS, Kind, Subresource, field_path

GROUP_VERSION = "resource.k8s.io/v1"
SCHEME_KINDS: frozenset[str] = frozenset()
_GROUP = "resource.k8s.io"

DEVICECLASS = Kind("deviceclasses", "deviceclass", "DeviceClass", False, group=_GROUP,
                   prepare=resourcev1.prepare_device_class, validate=resourcev1.validate_device_class,
                   returns_deleted=True, printer=printers.DEVICECLASS, field_labels=CLUSTER_FIELDS,
                   model="V1DeviceClass")
RESOURCECLAIM = Kind("resourceclaims", "resourceclaim", "ResourceClaim", True, group=_GROUP,
                     subresources=(Subresource("status", "ResourceClaim", STATUS),),
                     prepare=resourcev1.prepare_claim, validate=resourcev1.validate_claim,
                     validate_status=resourcev1.validate_claim_status, admission=resourcev1.claim_admin_access,
                     returns_deleted=True, printer=printers.RESOURCECLAIM, model="ResourceV1ResourceClaim")
RESOURCECLAIMTEMPLATE = Kind("resourceclaimtemplates", "resourceclaimtemplate", "ResourceClaimTemplate", True,
                             group=_GROUP, prepare=resourcev1.prepare_claim_template,
                             validate=resourcev1.validate_claim_template,
                             admission=resourcev1.template_admin_access, returns_deleted=True,
                             printer=printers.RESOURCECLAIMTEMPLATE, model="V1ResourceClaimTemplate")
# cluster-scoped: metadata.name, plus the slice's node, driver and pool (``toSelectableFields``)
RESOURCESLICE = Kind("resourceslices", "resourceslice", "ResourceSlice", False, group=_GROUP,
                     prepare=resourcev1.prepare_slice, validate=resourcev1.validate_slice, returns_deleted=True,
                     printer=printers.RESOURCESLICE, model="V1ResourceSlice", field_labels={
                         **CLUSTER_FIELDS, "spec.nodeName": field_path("spec", "nodeName"),
                         "spec.driver": field_path("spec", "driver"),
                         "spec.pool.name": field_path("spec", "pool", "name")})

# cluster-scoped, status kept apart (``/status``); v1's store (``NewRESTv1``) answers DELETE with a Status, not the
# deleted object as the older versions' stores do
DEVICETAINTRULE = Kind("devicetaintrules", "devicetaintrule", "DeviceTaintRule", False, group=_GROUP,
                       subresources=(Subresource("status", "DeviceTaintRule", STATUS),),
                       prepare=devicetaint.prepare_rule, validate=devicetaint.validate_rule,
                       validate_status=devicetaint.validate_rule_status,
                       printer=printers.DEVICETAINTRULE, field_labels=CLUSTER_FIELDS, model="V1DeviceTaintRule")

KINDS = (DEVICECLASS, RESOURCECLAIM, RESOURCECLAIMTEMPLATE, RESOURCESLICE, DEVICETAINTRULE)
