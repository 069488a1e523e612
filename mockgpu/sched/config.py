"""``KubeSchedulerConfiguration`` (kubescheduler.config.k8s.io/v1): defaulting, validation, profiles.

Defaulting as upstream v1: no profiles → one ``default-scheduler``; a single unnamed profile is named
``default-scheduler``; every profile starts from the default MultiPoint plugin set
(``plugins.registry.DEFAULT_MULTIPOINT``) merged with the user's sets the way ``mergePluginSet`` and the
framework's MultiPoint expansion do (a plugin enabled at a specific point overrides its MultiPoint entry
and its weight; ``disabled: [{name: "*"}]`` drops every default at that point). Score weights of 0/unset
become 1.

Validation: unknown fields, unknown plugins and bad args are errors (``ConfigError`` with upstream-style
field paths). Upstream puts no upper bound on plugin weights (only int64 overflow); a negative plugin weight
is rejected here although upstream would accept it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mockgpu.errors import ConfigError
from mockgpu.sched import config_fields as F
from mockgpu.sched.config_fields import Reader
from mockgpu.sched.framework import FilterPlugin, Profile, ScorePlugin
from mockgpu.sched.plugin_args import balanced_args, fit_args
from mockgpu.sched.plugins import balanced_allocation, node_resources_fit
from mockgpu.sched.plugins.registry import DEFAULT_MULTIPOINT, FILTERS, KNOWN_PLUGINS, PLUGINS, SCORERS

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
_IMPLEMENTS = {"filter": frozenset(FILTERS), "score": frozenset(SCORERS)}
_ARG_PARSERS = {node_resources_fit.NAME: fit_args, balanced_allocation.NAME: balanced_args}

Entry = tuple[str, int | None]  # (plugin name, weight or None)


@dataclass
class SchedulerConfig:
    """The loaded configuration: profiles by scheduler name plus the queue's backoff settings."""

    profiles: dict[str, Profile] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    parallelism: int = 16

    def profile_for(self, pod: Mapping[str, Any]) -> Profile | None:
        """The profile named by ``spec.schedulerName`` (default ``default-scheduler``); None: not ours."""
        name = (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME
        return self.profiles.get(name)


def _plugin_set(r: Reader, raw: Any, path: str) -> tuple[list[Entry], list[str]]:
    ps = r.mapping(raw, path, F.PLUGIN_SET_FIELDS)
    enabled: list[Entry] = []
    for key in ("enabled", "disabled"):
        for i, item in enumerate(r.seq(ps.get(key), f"{path}.{key}")):
            p = f"{path}.{key}[{i}]"
            item = r.mapping(item, p, F.PLUGIN_FIELDS)
            name = r.string(item.get("name"), f"{p}.name")
            if not (name in KNOWN_PLUGINS or (key == "disabled" and name == "*")):
                raise r.fail(f"{p}.name", f'plugin "{name}" does not exist')
            weight = r.integer(item.get("weight"), f"{p}.weight")
            if weight is not None and weight < 0:
                raise r.fail(f"{p}.weight", f"Invalid value: {weight}: must not be negative")
            if key == "enabled":
                if any(n == name for n, _ in enabled):
                    raise r.fail(f"{p}.name", f'Duplicate value: "{name}"')
                enabled.append((name, weight))
    disabled = [str(d.get("name")) for d in r.seq(ps.get("disabled"), f"{path}.disabled")]
    return enabled, disabled


def _merge(defaults: list[Entry], enabled: list[Entry], disabled: list[str]) -> list[Entry]:
    """Upstream ``mergePluginSet``: re-configured defaults keep their place, new ones are appended."""
    custom = dict(enabled)
    merged = [] if "*" in disabled else [
        (n, custom[n] if n in custom else w) for n, w in defaults if n not in disabled]
    names = {n for n, _ in merged}
    return merged + [(n, w) for n, w in enabled if n not in names]


def _expand(point: str, multipoint: list[Entry], enabled: list[Entry], disabled: list[str],
            r: Reader, path: str) -> list[Entry]:
    """The plugins that run at ``point``: specific overrides, then MultiPoint ones, then specific extras."""
    for i, (name, _) in enumerate(enabled):
        if name in PLUGINS and name not in _IMPLEMENTS[point]:
            raise r.fail(f"{path}.enabled[{i}].name", f'plugin "{name}" does not extend {point} plugin')
    if "*" in disabled:
        return list(enabled)
    mp = [(n, w) for n, w in multipoint if n in _IMPLEMENTS[point] and n not in disabled]
    mp_names = {n for n, _ in mp}
    specific = {n for n, _ in enabled}
    return ([e for e in enabled if e[0] in mp_names] + [e for e in mp if e[0] not in specific]
            + [e for e in enabled if e[0] not in mp_names])


def _plugin_args(r: Reader, raw_configs: Any, path: str) -> dict[str, object]:
    args: dict[str, object] = {}
    for i, item in enumerate(r.seq(raw_configs, path)):
        p = f"{path}[{i}]"
        item = r.mapping(item, p, F.PLUGIN_CONFIG_FIELDS)
        name = r.string(item.get("name"), f"{p}.name")
        if name not in KNOWN_PLUGINS:
            raise r.fail(f"{p}.name", f'plugin "{name}" does not exist')
        if name in args:
            raise r.fail(p, f'Duplicate value: "{name}"')
        parser = _ARG_PARSERS.get(name)
        args[name] = parser(r, item.get("args"), f"{p}.args") if parser else item.get("args")
    return args


def _profile(r: Reader, raw: Any, path: str, name_default: str | None) -> Profile:
    prof = r.mapping(raw, path, F.PROFILE_FIELDS)
    name = r.string(prof.get("schedulerName"), f"{path}.schedulerName", name_default or "")
    if not name:
        raise r.fail(f"{path}.schedulerName", "Required value")
    pct = r.integer(prof.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore")
    _check_percentage(r, pct, f"{path}.percentageOfNodesToScore")
    plugins = r.mapping(prof.get("plugins"), f"{path}.plugins", frozenset(F.EXTENSION_POINTS))
    sets = {pt: _plugin_set(r, plugins.get(pt), f"{path}.plugins.{pt}") for pt in F.EXTENSION_POINTS}
    multipoint = _merge(list(DEFAULT_MULTIPOINT), *sets["multiPoint"])
    args = _plugin_args(r, prof.get("pluginConfig"), f"{path}.pluginConfig")
    instances: dict[str, Any] = {}

    def instance(plugin_name: str) -> Any:
        if plugin_name not in instances:
            instances[plugin_name] = PLUGINS[plugin_name](args.get(plugin_name))
        return instances[plugin_name]

    filters: list[FilterPlugin] = [instance(n) for n, _ in
                                   _expand("filter", multipoint, *sets["filter"], r, f"{path}.plugins.filter")
                                   if n in PLUGINS]
    score_entries = _expand("score", multipoint, *sets["score"], r, f"{path}.plugins.score")
    scorers: list[tuple[ScorePlugin, int]] = [(instance(n), w or 1) for n, w in score_entries if n in PLUGINS]
    return Profile(scheduler_name=name, filters=filters, scorers=scorers, percentage_of_nodes_to_score=pct)


def _check_percentage(r: Reader, pct: int | None, path: str) -> None:
    if pct is not None and not 0 <= pct <= 100:
        raise r.fail(path, f"Invalid value: {pct}: not in valid range [0-100]")


def _check_queue_sort(r: Reader, raw_profiles: list[Any]) -> None:
    def qs(p: Any) -> Any:
        return ((p or {}).get("plugins") or {}).get("queueSort") if isinstance(p, Mapping) else None
    for i in range(1, len(raw_profiles)):
        if qs(raw_profiles[i]) != qs(raw_profiles[0]):
            raise r.fail(f"profiles[{i}].plugins.queueSort", "Invalid value: must be the same for all profiles")


def parse_config(doc: Any, source: str = "<config>") -> SchedulerConfig:
    """Build a SchedulerConfig from a parsed YAML document (None → all defaults)."""
    r = Reader(source)
    doc = r.mapping(doc, "", F.TOP_FIELDS)
    if doc.get("apiVersion", API_VERSION) != API_VERSION:
        raise r.fail("apiVersion", f'Unsupported value: "{doc.get("apiVersion")}": supported values: "{API_VERSION}"')
    if doc.get("kind", KIND) != KIND:
        raise r.fail("kind", f'Unsupported value: "{doc.get("kind")}": supported values: "{KIND}"')
    F.check_top(r, doc)
    cfg = SchedulerConfig(
        percentage_of_nodes_to_score=r.integer(doc.get("percentageOfNodesToScore"), "percentageOfNodesToScore"),
        pod_initial_backoff_seconds=r.integer(doc.get("podInitialBackoffSeconds"), "podInitialBackoffSeconds", 1),
        pod_max_backoff_seconds=r.integer(doc.get("podMaxBackoffSeconds"), "podMaxBackoffSeconds", 10),
        parallelism=r.integer(doc.get("parallelism"), "parallelism", 16))
    _check_percentage(r, cfg.percentage_of_nodes_to_score, "percentageOfNodesToScore")
    if cfg.parallelism <= 0:
        raise r.fail("parallelism", f"Invalid value: {cfg.parallelism}: should be an integer value greater than zero")
    if cfg.pod_initial_backoff_seconds <= 0:
        raise r.fail("podInitialBackoffSeconds", f"Invalid value: {cfg.pod_initial_backoff_seconds}: "
                     "must be greater than 0")
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        raise r.fail("podMaxBackoffSeconds", f"Invalid value: {cfg.pod_max_backoff_seconds}: "
                     "must be greater than or equal to PodInitialBackoffSeconds")
    raw_profiles = r.seq(doc.get("profiles"), "profiles") or [{}]
    _check_queue_sort(r, raw_profiles)
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_profiles):
        default_name = DEFAULT_SCHEDULER_NAME if len(raw_profiles) == 1 else None
        prof = _profile(r, raw, f"profiles[{i}]", default_name)
        if prof.scheduler_name in seen:
            raise r.fail(f"profiles[{i}].schedulerName", f'Duplicate value: "{prof.scheduler_name}" '
                         f"(also profiles[{seen[prof.scheduler_name]}].schedulerName)")
        seen[prof.scheduler_name] = i
        if prof.percentage_of_nodes_to_score is None:
            prof.percentage_of_nodes_to_score = cfg.percentage_of_nodes_to_score
        cfg.profiles[prof.scheduler_name] = prof
    return cfg


def parse_config_text(text: str, source: str = "<config>") -> SchedulerConfig:
    """Parse YAML text; a YAML syntax error is a ConfigError too."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(source, "", f"not valid YAML: {exc}") from None
    return parse_config(doc, source)


def load_config(path: str | Path) -> SchedulerConfig:
    """Read and parse a config file (the one place in ``mockgpu.sched`` that touches the filesystem)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(str(p), "", f"cannot read: {exc.strerror or exc}") from None
    return parse_config_text(text, str(p))


def default_config() -> SchedulerConfig:
    """Upstream defaults: one ``default-scheduler`` profile with the default plugins and weights."""
    return parse_config(None, "<defaults>")
