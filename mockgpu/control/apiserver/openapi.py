"""``/openapi/v3``: the documents of the served group-versions.

Each kind's item path advertises ``fieldValidation`` on its PATCH (so kubectl validates on the server) and the
document carries component schemas built from the official Python client's models
(``schemas.component_schemas``: descriptions for ``kubectl explain``, merge keys for ``kubectl apply``); that field
set is the client's, which may be newer than the Kubernetes version the server reports. The same models type-check
written objects (``fieldvalidation``).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from mockgpu.apimachinery.version import GIT_VERSION
from mockgpu.config.featuregates import DEFAULT as DEFAULT_GATES
from mockgpu.config.featuregates import FeatureGates
from mockgpu.control.apiserver import registry
from mockgpu.control.apiserver.schemas import component_schemas

_FIELD_VALIDATION_PARAM = {
    "name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True},
    "description": "fieldValidation instructs the server on how to handle objects in the request containing "
                   "unknown or duplicate fields. Valid values are: Ignore, Warn, Strict.",
}


def _path_for(prefix: str, plural: str, namespaced: bool) -> str:
    return f"/{prefix}/namespaces/{{namespace}}/{plural}/{{name}}" if namespaced else f"/{prefix}/{plural}/{{name}}"


def openapi_v3_core() -> dict[str, Any]:
    """``GET /openapi/v3/api/v1``: each kind's item path with PATCH accepting ``fieldValidation``, and schemas."""
    return openapi_v3_document("v1")


def openapi_v3_document(group_version: str) -> dict[str, Any]:
    """``GET /openapi/v3/api/v1`` or ``/openapi/v3/apis/<group>/<version>``: each kind's item path (GET, and
    PATCH accepting ``fieldValidation``) and the schemas (for ``kubectl explain``)."""
    paths: dict[str, Any] = {}
    resources = registry.served(group_version) or {}
    prefix = "api/v1" if group_version == "v1" else f"apis/{group_version}"
    for plural, info in resources.items():
        if "get" not in info.verbs:
            continue
        gvk = {"group": info.group, "version": info.version, "kind": info.kind}
        ops: dict[str, Any] = {}
        for verb in ("get", "patch"):  # kubectl explain finds a kind by its path; apply reads fieldValidation
            if verb in info.verbs:
                ops[verb] = {"operationId": f"{'read' if verb == 'get' else verb}"
                                            f"{'Namespaced' if info.namespaced else ''}{info.kind}",
                             "x-kubernetes-action": verb, "x-kubernetes-group-version-kind": gvk,
                             "responses": {"200": {"description": "OK"}}}
        if "patch" in ops:
            ops["patch"]["parameters"] = [_FIELD_VALIDATION_PARAM]
        paths[_path_for(prefix, plural, info.namespaced)] = ops
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": GIT_VERSION}, "paths": paths,
            "components": {"schemas": component_schemas(group_version)}}


#: the group-versions with an OpenAPI v3 document (those whose kinds the official client models)
DOCUMENTED = ("v1", *(gv for gv in registry.group_versions() if registry.models(gv)))


def documented(gates: FeatureGates = DEFAULT_GATES) -> tuple[str, ...]:
    """The documented group-versions a server running with ``gates`` serves."""
    return ("v1", *(gv for gv in registry.group_versions(gates) if registry.models(gv)))


@functools.cache
def _digest(group_version: str) -> str:
    doc = openapi_v3_document(group_version)
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest().upper()[:128]


def document_path(group_version: str) -> str:
    return "api/v1" if group_version == "v1" else f"apis/{group_version}"


def openapi_v3_root(gates: FeatureGates = DEFAULT_GATES) -> dict[str, Any]:
    """``GET /openapi/v3``: where each group-version's document is, with a content hash as upstream."""
    return {"paths": {document_path(gv): {"serverRelativeURL": f"/openapi/v3/{document_path(gv)}?hash={_digest(gv)}"}
                      for gv in documented(gates)}}
