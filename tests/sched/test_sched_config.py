"""KubeSchedulerConfiguration loading: defaults, plugin-set merging, validation errors with field paths."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from mockgpu.errors import ConfigError
from mockgpu.sched.config import default_config, load_config, parse_config_text
from mockgpu.sched.strategies import ScoringStrategy

CLUSTERS = Path(__file__).resolve().parents[2] / "clusters" / "scheduler"
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def cfg(body: str):
    return parse_config_text(HEAD + textwrap.dedent(body), "sched.yaml")


def fit_args(profile):
    return next(p for p in profile.filters if p.name == "NodeResourcesFit").args


def test_defaults():
    prof = default_config().profiles["default-scheduler"]
    # v1.37.2 getDefaultPlugins: NodeName before NodeUnschedulable; DynamicResources after NodeResourcesFit
    assert prof.filter_names() == ["NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity",
                                   "NodeResourcesFit", "DynamicResources"]
    assert prof.score_weights() == {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
                                    "NodeResourcesBalancedAllocation": 1}
    args = fit_args(prof)
    assert (args.strategy, dict(args.resources)) == (ScoringStrategy.LEAST_ALLOCATED, {"cpu": 1, "memory": 1})


@pytest.mark.parametrize("name", ["default.yaml", "binpack.yaml", "spread.yaml", "workshop.yaml"])
def test_shipped_configs_load(name):
    assert load_config(CLUSTERS / name).profiles


def test_shipped_config_contents():
    assert dict(fit_args(load_config(CLUSTERS / "default.yaml").profiles["default-scheduler"]).resources) == {
        "cpu": 1, "memory": 1}
    work = load_config(CLUSTERS / "workshop.yaml").profiles
    assert list(work) == ["default-scheduler", "bin-packing", "spreading"]
    assert fit_args(work["bin-packing"]).strategy is ScoringStrategy.MOST_ALLOCATED
    assert dict(fit_args(work["spreading"]).resources) == {"cpu": 1, "memory": 1, "nvidia.com/gpu": 5}


def test_profile_chosen_by_scheduler_name():
    work = load_config(CLUSTERS / "workshop.yaml")
    assert work.profile_for({"spec": {}}).scheduler_name == "default-scheduler"
    assert work.profile_for({"spec": {"schedulerName": "spreading"}}).scheduler_name == "spreading"
    assert work.profile_for({"spec": {"schedulerName": "someone-else"}}) is None


def test_specific_score_weight_overrides_multipoint_and_disable():
    # reference §5c: score.enabled NodeResourcesFit weight 5, BalancedAllocation disabled at score
    c = cfg("""
        profiles:
        - schedulerName: gpu-binpack
          plugins:
            score:
              disabled: [{name: NodeResourcesBalancedAllocation}]
              enabled: [{name: NodeResourcesFit, weight: 5}]
        """)
    assert c.profiles["gpu-binpack"].score_weights() == {"NodeResourcesFit": 5, "TaintToleration": 3,
                                                          "NodeAffinity": 2}


def test_star_disables_all_defaults_at_a_point():
    c = cfg("""
        profiles:
        - plugins:
            score:
              disabled: [{name: "*"}]
              enabled: [{name: NodeResourcesFit}]
            filter:
              disabled: [{name: TaintToleration}]
        """)
    prof = c.profiles["default-scheduler"]
    assert prof.score_weights() == {"NodeResourcesFit": 1}
    assert "TaintToleration" not in prof.filter_names()


def test_resource_weight_zero_defaults_to_one_and_empty_resources_default():
    c = cfg("""
        profiles:
        - pluginConfig:
          - name: NodeResourcesFit
            args:
              scoringStrategy:
                type: MostAllocated
                resources: [{name: cpu, weight: 0}]
          - name: NodeResourcesBalancedAllocation
            args: {}
        """)
    assert dict(fit_args(c.profiles["default-scheduler"]).resources) == {"cpu": 1}


def test_rtcr_shape_loaded():
    c = cfg("""
        profiles:
        - pluginConfig:
          - name: NodeResourcesFit
            args:
              scoringStrategy:
                type: RequestedToCapacityRatio
                resources: [{name: nvidia.com/gpu, weight: 3}]
                requestedToCapacityRatio:
                  shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]
        """)
    args = fit_args(c.profiles["default-scheduler"])
    assert tuple(args.shape) == ((0, 0), (100, 10))


def p1(strategy: dict) -> str:
    """A two-profile config whose second profile configures NodeResourcesFit's scoringStrategy."""
    doc = {"profiles": [{"schedulerName": "a"}, {"schedulerName": "b", "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}]}]}
    return yaml.safe_dump(doc)


RTCR = "RequestedToCapacityRatio"
SS = "profiles[1].pluginConfig[0].args.scoringStrategy"

ERROR_ROWS = [
    ("resource weight above 100", p1({"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 101}]}),
     f"{SS}.resources[0].weight", "Invalid value: 101: resource weight of cpu not in valid range (0, 100]"),
    ("negative resource weight",
     p1({"type": "MostAllocated", "resources": [{"name": "cpu"}, {"name": "memory", "weight": -1}]}),
     f"{SS}.resources[1].weight", "Invalid value: -1: resource weight of memory not in valid range (0, 100]"),
    ("unknown strategy type", p1({"type": "Packed"}), f"{SS}.type",
     'Unsupported value: "Packed": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'),
    ("strategy without type", p1({"resources": [{"name": "cpu"}]}), f"{SS}.type", 'Unsupported value: ""'),
    ("RTCR without shape", p1({"type": RTCR}), f"{SS}.requestedToCapacityRatio",
     "Required value: must be specified when type is RequestedToCapacityRatio"),
    ("RTCR empty shape", p1({"type": RTCR, "requestedToCapacityRatio": {"shape": []}}),
     f"{SS}.requestedToCapacityRatio.shape", "Required value: at least one point must be specified"),
    ("RTCR shape not increasing", p1({"type": RTCR, "requestedToCapacityRatio": {"shape": [
        {"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]}}),
     f"{SS}.requestedToCapacityRatio.shape[1].utilization",
     "Invalid value: 50: values must be sorted in increasing order"),
    ("RTCR score above 10", p1({"type": RTCR, "requestedToCapacityRatio": {"shape": [
        {"utilization": 0, "score": 0}, {"utilization": 100, "score": 11}]}}),
     f"{SS}.requestedToCapacityRatio.shape[1].score", "Invalid value: 11: not in valid range [0, 10]"),
    ("RTCR utilization above 100", p1({"type": RTCR, "requestedToCapacityRatio": {"shape": [
        {"utilization": 0, "score": 0}, {"utilization": 101, "score": 1}]}}),
     f"{SS}.requestedToCapacityRatio.shape[1].utilization", "Invalid value: 101: not in valid range [0, 100]"),
    ("shape with another type", p1({"type": "MostAllocated", "requestedToCapacityRatio": {"shape": [
        {"utilization": 0, "score": 0}]}}),
     f"{SS}.requestedToCapacityRatio", "Forbidden: must be nil when type is not RequestedToCapacityRatio"),
    ("unknown field in args", p1({"type": "MostAllocated", "spread": True}), f"{SS}.spread",
     f'strict decoding error: unknown field "{SS}.spread"'),
    ("weight not an integer", p1({"type": "MostAllocated", "resources": [{"name": "cpu", "weight": "heavy"}]}),
     f"{SS}.resources[0].weight", "must be an integer"),
    ("unknown top-level field", "profile: []\n", "profile", 'strict decoding error: unknown field "profile"'),
    ("unknown plugin enabled", "profiles:\n- plugins:\n    score:\n      enabled: [{name: GpuPacker}]\n",
     "profiles[0].plugins.score.enabled[0].name", 'plugin "GpuPacker" does not exist'),
    ("unknown plugin in pluginConfig", "profiles:\n- pluginConfig: [{name: GpuPacker, args: {}}]\n",
     "profiles[0].pluginConfig[0].name", 'plugin "GpuPacker" does not exist'),
    ("plugin at a point it does not implement",
     "profiles:\n- plugins:\n    score:\n      enabled: [{name: NodeName}]\n",
     "profiles[0].plugins.score.enabled[0].name", 'plugin "NodeName" does not extend score plugin'),
    ("negative plugin weight",
     "profiles:\n- plugins:\n    score:\n      enabled: [{name: NodeResourcesFit, weight: -2}]\n",
     "profiles[0].plugins.score.enabled[0].weight", "must not be negative"),
    ("duplicate profile names", "profiles:\n- schedulerName: x\n- schedulerName: x\n",
     "profiles[1].schedulerName", 'Duplicate value: "x"'),
    ("second profile without a name", "profiles:\n- schedulerName: x\n- {}\n", "profiles[1].schedulerName",
     "Required value"),
    ("duplicate pluginConfig", "profiles:\n- pluginConfig: [{name: NodeResourcesFit}, {name: NodeResourcesFit}]\n",
     "profiles[0].pluginConfig[1]", 'Duplicate value: "NodeResourcesFit"'),
    ("balanced weight must be 1",
     "profiles:\n- pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args:\n"
     "      resources: [{name: cpu, weight: 2}]\n",
     "profiles[0].pluginConfig[0].args.resources[0].weight", "Invalid value: 2: must be 1"),
    ("balanced duplicate resource",
     "profiles:\n- pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args:\n"
     "      resources: [{name: cpu}, {name: cpu}]\n",
     "profiles[0].pluginConfig[0].args.resources[1].name", 'Duplicate value: "cpu"'),
    ("ignored resource group with slash",
     "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {ignoredResourceGroups: [nvidia.com/gpu]}\n",
     "profiles[0].pluginConfig[0].args.ignoredResourceGroups[0]", "resource group name can't contain '/'"),
    ("percentage out of range", "percentageOfNodesToScore: 150\n", "percentageOfNodesToScore",
     "Invalid value: 150: not in valid range [0-100]"),
    ("queueSort differs between profiles",
     "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n"
     "      disabled: [{name: '*'}]\n      enabled: [{name: PrioritySort}]\n",
     "profiles[1].plugins.queueSort", "must be the same for all profiles"),
]


@pytest.mark.parametrize("body,path,message", [r[1:] for r in ERROR_ROWS], ids=[r[0] for r in ERROR_ROWS])
def test_validation_errors(body, path, message):
    with pytest.raises(ConfigError) as err:
        cfg(body)
    assert err.value.path == path
    assert message in err.value.detail
    assert str(err.value).startswith(f"sched.yaml: {path}: ")


def test_wrong_api_version_and_bad_yaml_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match='apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta3"'):
        parse_config_text("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        parse_config_text("profiles: [\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.yaml")
