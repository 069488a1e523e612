"""resource.k8s.io/v1 (Dynamic Resource Allocation): DeviceClasses, ResourceClaims, ResourceClaimTemplates,
ResourceSlices (``pkg/registry/resource/<kind>/strategy.go``; the rules are ``apiserver.resourcev1``). Their
stores return the deleted object (upstream ``ReturnDeletedObject``); upstream has no short names here."""

from __future__ import annotations

from mockgpu.control.apiserver import printers, resourcev1
from mockgpu.control.apiserver.registry.kind import CLUSTER_FIELDS, STATUS, Kind, Subresource, field_path

GROUP_VERSION = "resource.k8s.io/v1"
SCHEME_KINDS = frozenset({"DeviceTaintRule"})
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

KINDS = (DEVICECLASS, RESOURCECLAIM, RESOURCECLAIMTEMPLATE, RESOURCESLICE)
