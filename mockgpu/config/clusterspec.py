"""The cluster spec (``apiVersion: mockgpu.io/v1alpha1``, ``kind: ClusterSpec``).

Decoding is strict (unknown keys are errors), then defaults apply (the types: ``mockgpu.config.specmodel``),
then semantic checks that need the GPU catalog run (``mockgpu.config.semantic``). Every problem is reported
as a ``ConfigError`` naming the file and the field path, e.g. ``spec.nodePools[1].gpu.model``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from mockgpu.config.semantic import check_spec
from mockgpu.config.specmodel import (  # the spec's types, re-exported: callers import them from here
    API_VERSION as API_VERSION,
)
from mockgpu.config.specmodel import (
    KIND as KIND,
)
from mockgpu.config.specmodel import (
    ClusterSpec as ClusterSpec,
)
from mockgpu.config.specmodel import (
    DRAGPUs as DRAGPUs,
)
from mockgpu.config.specmodel import (
    GPUSpec as GPUSpec,
)
from mockgpu.config.specmodel import (
    GPUTopology as GPUTopology,
)
from mockgpu.config.specmodel import (
    KueueSpec as KueueSpec,
)
from mockgpu.config.specmodel import (
    Metadata as Metadata,
)
from mockgpu.config.specmodel import (
    NodePool as NodePool,
)
from mockgpu.config.specmodel import (
    NodeSpec as NodeSpec,
)
from mockgpu.config.specmodel import (
    Taint as Taint,
)
from mockgpu.errors import ConfigError


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.startswith("function-after"):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out


def parse_spec(data: Any, source: str = "<memory>") -> ClusterSpec:
    """Validate a decoded spec document; raise ConfigError for the first problem, with its path."""
    if not isinstance(data, dict):
        raise ConfigError(source, "", "a cluster spec must be a YAML mapping with apiVersion, kind, metadata, spec")
    try:
        spec = ClusterSpec.model_validate({**data, "source": source})
    except ValidationError as exc:
        err = exc.errors()[0]
        # pydantic nests union members in the location; drop its internal tags for the user.
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p in {"literal", "list"})))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        raise ConfigError(source, _loc(loc), msg) from None
    check_spec(spec)
    return spec


def load_spec(path: str | Path) -> ClusterSpec:
    """Read and validate a cluster spec file."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(str(p), "", f"cannot read: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        raise ConfigError(str(p), where, f"malformed YAML: {getattr(exc, 'problem', exc)}") from None
    return parse_spec(data, str(p))
