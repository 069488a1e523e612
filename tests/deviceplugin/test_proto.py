"""The committed v1beta1 stubs are what scripts/gen-proto makes from api.proto, and carry the
upstream wire names and numbers."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pytest
from proto_stubs import ROOT, load_gen_proto, method_paths, serialized_descriptor

from mockgpu.deviceplugin.api import api_pb2

API = ROOT / "mockgpu/deviceplugin/api"


def test_regenerated_stubs_match_committed(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools", reason="grpcio-tools (test extra) is not installed")
    gen = load_gen_proto()
    written = gen.generate(tmp_path)
    written = [p for p in written if p.parent == tmp_path / "mockgpu/deviceplugin/api"]  # the DRA stubs: tests/dra
    committed = {p.name: (API / p.name).read_text() for p in written}
    fresh = {p.name: p.read_text() for p in written}
    recorded = re.search(r"grpcio-tools (\d+\.\d+\.\d+)", (ROOT / "scripts/gen-proto").read_text()).group(1)
    if version("grpcio-tools") == recorded:
        for name in fresh:
            assert fresh[name] == committed[name], f"{name} is stale: run ./scripts/gen-proto"
    else:  # another generator writes different boilerplate; the schema and the RPCs must still agree
        assert serialized_descriptor(fresh["api_pb2.py"]) == serialized_descriptor(committed["api_pb2.py"])
        assert method_paths(fresh["api_pb2_grpc.py"]) == method_paths(committed["api_pb2_grpc.py"])


def test_committed_stubs_have_no_version_guards() -> None:
    assert "ValidateProtobufRuntimeVersion" not in (API / "api_pb2.py").read_text()
    assert "GRPC_GENERATED_VERSION" not in (API / "api_pb2_grpc.py").read_text()


def test_method_paths_are_upstreams() -> None:
    assert method_paths((API / "api_pb2_grpc.py").read_text()) == [
        "/v1beta1.DevicePlugin/Allocate",
        "/v1beta1.DevicePlugin/GetDevicePluginOptions",
        "/v1beta1.DevicePlugin/GetPreferredAllocation",
        "/v1beta1.DevicePlugin/ListAndWatch",
        "/v1beta1.DevicePlugin/PreStartContainer",
        "/v1beta1.Registration/Register",
    ]


# (message, field, number) from the v1beta1 api.proto
FIELDS = [
    ("DevicePluginOptions", "pre_start_required", 1), ("DevicePluginOptions", "get_preferred_allocation_available", 2),
    ("RegisterRequest", "version", 1), ("RegisterRequest", "endpoint", 2), ("RegisterRequest", "resource_name", 3),
    ("RegisterRequest", "options", 4), ("ListAndWatchResponse", "devices", 1), ("TopologyInfo", "nodes", 1),
    ("NUMANode", "ID", 1), ("Device", "ID", 1), ("Device", "health", 2), ("Device", "topology", 3),
    ("PreStartContainerRequest", "devices_ids", 1), ("PreferredAllocationRequest", "container_requests", 1),
    ("ContainerPreferredAllocationRequest", "available_deviceIDs", 1),
    ("ContainerPreferredAllocationRequest", "must_include_deviceIDs", 2),
    ("ContainerPreferredAllocationRequest", "allocation_size", 3),
    ("PreferredAllocationResponse", "container_responses", 1), ("ContainerPreferredAllocationResponse", "deviceIDs", 1),
    ("AllocateRequest", "container_requests", 1), ("ContainerAllocateRequest", "devices_ids", 1),
    ("CDIDevice", "name", 1), ("AllocateResponse", "container_responses", 1),
    ("ContainerAllocateResponse", "envs", 1), ("ContainerAllocateResponse", "mounts", 2),
    ("ContainerAllocateResponse", "devices", 3), ("ContainerAllocateResponse", "annotations", 4),
    ("ContainerAllocateResponse", "cdi_devices", 5), ("Mount", "container_path", 1), ("Mount", "host_path", 2),
    ("Mount", "read_only", 3), ("DeviceSpec", "container_path", 1), ("DeviceSpec", "host_path", 2),
    ("DeviceSpec", "permissions", 3),
]


@pytest.mark.parametrize(("message", "field", "number"), FIELDS, ids=[f"{m}.{f}" for m, f, _ in FIELDS])
def test_field_numbers(message: str, field: str, number: int) -> None:
    desc = api_pb2.DESCRIPTOR.message_types_by_name[message]
    assert desc.fields_by_name[field].number == number
    assert api_pb2.DESCRIPTOR.package == "v1beta1"


def test_message_set_is_complete() -> None:
    assert set(api_pb2.DESCRIPTOR.message_types_by_name) == {m for m, _, _ in FIELDS} | {
        "Empty", "PreStartContainerResponse"}
