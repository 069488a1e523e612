"""The committed DRA v1 and plugin-registration stubs are what scripts/gen-proto makes, and carry
upstream's package names, method paths and field numbers (k8s.io/kubelet v0.37.2)."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pytest
from proto_stubs import ROOT, load_gen_proto, method_paths, serialized_descriptor

from mockgpu.dra.api import dra_v1_pb2, pluginregistration_v1_pb2

API = ROOT / "mockgpu/dra/api"


def test_regenerated_stubs_match_committed(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools", reason="grpcio-tools (test extra) is not installed")
    gen = load_gen_proto()
    written = [p for p in gen.generate(tmp_path, tuple(p for p in gen.PROTOS if "dra" in p.parts))]
    assert len(written) == 6
    recorded = re.search(r"grpcio-tools (\d+\.\d+\.\d+)", (ROOT / "scripts/gen-proto").read_text()).group(1)
    for p in written:
        fresh, committed = p.read_text(), (API / p.name).read_text()
        if version("grpcio-tools") == recorded:
            assert fresh == committed, f"{p.name} is stale: run ./scripts/gen-proto"
        elif p.name.endswith("_pb2.py"):
            assert serialized_descriptor(fresh) == serialized_descriptor(committed)


def test_committed_stubs_have_no_version_guards() -> None:
    for name in ("dra_v1", "pluginregistration_v1"):
        assert "ValidateProtobufRuntimeVersion" not in (API / f"{name}_pb2.py").read_text()
        assert "GRPC_GENERATED_VERSION" not in (API / f"{name}_pb2_grpc.py").read_text()


@pytest.mark.parametrize(("stub", "paths"), [
    ("dra_v1_pb2_grpc.py", ["/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
                            "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources"]),
    ("pluginregistration_v1_pb2_grpc.py", ["/pluginregistration.Registration/GetInfo",
                                           "/pluginregistration.Registration/NotifyRegistrationStatus"]),
])
def test_method_paths_are_upstreams(stub: str, paths: list[str]) -> None:
    assert method_paths((API / stub).read_text()) == paths


# (module, message, field, number) from upstream's api.proto files
FIELDS = [
    (dra_v1_pb2, "NodePrepareResourcesRequest", "claims", 1), (dra_v1_pb2, "NodePrepareResourcesResponse", "claims", 1),
    (dra_v1_pb2, "NodePrepareResourceResponse", "devices", 1), (dra_v1_pb2, "NodePrepareResourceResponse", "error", 2),
    (dra_v1_pb2, "Device", "request_names", 1), (dra_v1_pb2, "Device", "pool_name", 2),
    (dra_v1_pb2, "Device", "device_name", 3), (dra_v1_pb2, "Device", "cdi_device_ids", 4),
    (dra_v1_pb2, "Device", "share_id", 5), (dra_v1_pb2, "NodeUnprepareResourcesRequest", "claims", 1),
    (dra_v1_pb2, "NodeUnprepareResourcesResponse", "claims", 1),
    (dra_v1_pb2, "NodeUnprepareResourceResponse", "error", 1),
    (dra_v1_pb2, "Claim", "namespace", 1), (dra_v1_pb2, "Claim", "uid", 2), (dra_v1_pb2, "Claim", "name", 3),
    (pluginregistration_v1_pb2, "PluginInfo", "type", 1), (pluginregistration_v1_pb2, "PluginInfo", "name", 2),
    (pluginregistration_v1_pb2, "PluginInfo", "endpoint", 3),
    (pluginregistration_v1_pb2, "PluginInfo", "supported_versions", 4),
    (pluginregistration_v1_pb2, "RegistrationStatus", "plugin_registered", 1),
    (pluginregistration_v1_pb2, "RegistrationStatus", "error", 2),
]


@pytest.mark.parametrize(("mod", "message", "field", "number"), FIELDS, ids=[f"{m}.{f}" for _, m, f, _ in FIELDS])
def test_field_numbers(mod, message: str, field: str, number: int) -> None:  # noqa: ANN001
    assert mod.DESCRIPTOR.message_types_by_name[message].fields_by_name[field].number == number


def test_packages_are_upstreams() -> None:
    assert dra_v1_pb2.DESCRIPTOR.package == "k8s.io.kubelet.pkg.apis.dra.v1"
    assert pluginregistration_v1_pb2.DESCRIPTOR.package == "pluginregistration"
