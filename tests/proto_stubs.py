"""Helpers for the tests that check committed gRPC stubs against ``scripts/gen-proto`` (device plugin, DRA)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_gen_proto() -> ModuleType:
    """``scripts/gen-proto`` (a file without ``.py``) as a module."""
    loader = importlib.machinery.SourceFileLoader("gen_proto", str(ROOT / "scripts/gen-proto"))
    spec = importlib.util.spec_from_loader("gen_proto", loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def serialized_descriptor(text: str) -> str:
    """The serialized FileDescriptorProto in a generated ``*_pb2.py`` (what the wire format depends on)."""
    m = re.search(r"AddSerializedFile\((b'.*?')\)\n", text)
    assert m, "no serialized descriptor in generated module"
    return m.group(1)


def method_paths(text: str) -> list[str]:
    """The gRPC method paths (``/package.Service/Method``) a generated ``*_pb2_grpc.py`` calls and serves."""
    return sorted(set(re.findall(r"'(/[\w.]+/\w+)'", text)))
