"""Strict reading of a ``KubeSchedulerConfiguration`` document: unknown fields and wrong types are errors.

Upstream decodes the file strictly (``strict decoding error: unknown field "..."``); here each problem is a
``ConfigError(source, field_path, message)`` with upstream-style paths such as
``profiles[1].pluginConfig[0].args.scoringStrategy.resources[0].weight``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, overload

from mockgpu.errors import ConfigError

INT32_MAX = 2**31 - 1

TOP_FIELDS = frozenset({
    "apiVersion", "kind", "parallelism", "leaderElection", "clientConnection", "enableProfiling",
    "enableContentionProfiling", "percentageOfNodesToScore", "podInitialBackoffSeconds",
    "podMaxBackoffSeconds", "profiles", "extenders", "delayCacheUntilActive",
})
PROFILE_FIELDS = frozenset({"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"})
EXTENSION_POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
                    "reserve", "permit", "preBind", "bind", "postBind", "multiPoint")
PLUGIN_SET_FIELDS = frozenset({"enabled", "disabled"})
PLUGIN_FIELDS = frozenset({"name", "weight"})
PLUGIN_CONFIG_FIELDS = frozenset({"name", "args"})
FIT_ARGS_FIELDS = frozenset({"apiVersion", "kind", "ignoredResources", "ignoredResourceGroups", "scoringStrategy"})
STRATEGY_FIELDS = frozenset({"type", "resources", "requestedToCapacityRatio"})
RESOURCE_FIELDS = frozenset({"name", "weight"})
RTCR_FIELDS = frozenset({"shape"})
POINT_FIELDS = frozenset({"utilization", "score"})
BALANCED_ARGS_FIELDS = frozenset({"apiVersion", "kind", "resources"})


class Reader:
    """Typed, path-aware access to a parsed YAML document; every failure is a ConfigError."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, message: str) -> ConfigError:
        return ConfigError(self.source, path, message)

    def mapping(self, value: Any, path: str, allowed: frozenset[str] | None = None) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(path, f"must be an object, not {type(value).__name__}")
        if allowed is not None:
            for key in value:
                if key not in allowed:
                    child = f"{path}.{key}" if path else str(key)
                    raise self.fail(child, f'strict decoding error: unknown field "{child}"')
        return value

    def seq(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(path, f"must be a list, not {type(value).__name__}")
        return value

    @overload
    def integer(self, value: Any, path: str, default: int) -> int: ...
    @overload
    def integer(self, value: Any, path: str, default: None = None) -> int | None: ...

    def integer(self, value: Any, path: str, default: int | None = None) -> int | None:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, f"must be an integer, not {value!r}")
        if not -INT32_MAX - 1 <= value <= INT32_MAX:
            raise self.fail(path, f"Invalid value: {value}: out of the int32 range")
        return int(value)

    def string(self, value: Any, path: str, default: str = "") -> str:
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(path, f"must be a string, not {value!r}")
        return value

    def boolean(self, value: Any, path: str) -> bool | None:
        if value is None or isinstance(value, bool):
            return value
        raise self.fail(path, f"must be a boolean, not {value!r}")


def check_top(reader: Reader, doc: Mapping[str, Any]) -> None:
    """Type-check the top-level scalar fields that are accepted but not otherwise used."""
    reader.mapping(doc.get("leaderElection"), "leaderElection")
    reader.mapping(doc.get("clientConnection"), "clientConnection")
    reader.seq(doc.get("extenders"), "extenders")
    for key in ("enableProfiling", "enableContentionProfiling", "delayCacheUntilActive"):
        reader.boolean(doc.get(key), key)
