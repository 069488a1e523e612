"""The compiled field schemas: one per served kind, built once from the official client's models, with the
formats the models lose taken from upstream's OpenAPI (checked against it here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mockgpu.control.apiserver import access, discovery, fieldvalidation

ROOT = Path(__file__).resolve().parents[2]
SERVED = [(info.group, info.kind) for info in discovery.RESOURCES.values()] + [
    (info.group, info.kind) for resources in discovery.GROUP_RESOURCES.values() for info in resources.values()]


def test_field_formats_are_upstreams() -> None:
    """fieldformats.json is what scripts/gen-field-formats reads from upstream's OpenAPI (kubernetes-validate)."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen-field-formats"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("group", "kind"), SERVED, ids=[f"{g or 'core'}/{k}" for g, k in SERVED])
def test_every_stored_kind_has_a_schema_compiled_once(group: str, kind: str) -> None:
    schema = fieldvalidation.schema_of(group, kind)
    if kind in access.REVIEW_KINDS:  # answered by access.answer, never stored
        return
    assert schema is not None and schema.kind == fieldvalidation.STRUCT
    assert {"apiVersion", "kind", "metadata"} <= set(schema.fields)
    assert fieldvalidation.schema_of(group, kind) is schema  # cached


@pytest.mark.parametrize(("group", "kind", "path", "leaf"), [
    ("", "Pod", "spec.containers.ports.containerPort", fieldvalidation.INT32),
    ("", "Pod", "spec.activeDeadlineSeconds", fieldvalidation.INT64),
    ("", "Pod", "spec.containers.resources.limits", fieldvalidation.QUANTITY),
    ("", "Pod", "spec.containers.livenessProbe.httpGet.port", fieldvalidation.INT_OR_STRING),
    ("", "Pod", "metadata.creationTimestamp", fieldvalidation.TIME),
    ("coordination.k8s.io", "Lease", "spec.renewTime", fieldvalidation.MICRO_TIME),
    ("apps", "Deployment", "spec.strategy.rollingUpdate.maxSurge", fieldvalidation.INT_OR_STRING),
    ("resource.k8s.io", "ResourceSlice", "spec.devices.capacity.value", fieldvalidation.QUANTITY),
    ("resource.k8s.io", "DeviceClass", "spec.config.opaque.parameters", fieldvalidation.ANY),
])
def test_leaf_types(group: str, kind: str, path: str, leaf: str) -> None:
    node = fieldvalidation.schema_of(group, kind)
    for part in path.split("."):
        assert node is not None
        while node.kind in (fieldvalidation.LIST, fieldvalidation.MAP):
            node = node.item
            assert node is not None
        node = node.fields[part]
    while node.kind in (fieldvalidation.LIST, fieldvalidation.MAP):
        node = node.item
    assert node.kind == leaf
