"""Feature gates in the cluster spec: checked as v1.37.2's --feature-gates checks them (component-base's
featuregate, messages included), passed to the upstream components and to kind, read by the embedded parts."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mockgpu.backends.kind.config import KindRenderOptions, kind_config
from mockgpu.backends.upstream import components
from mockgpu.config import featuregates
from mockgpu.config.clusterspec import parse_spec
from mockgpu.config.featuregates import FeatureGates
from mockgpu.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".cache/upstream/v1.37.2/bin"


def _spec(gates: dict) -> dict:
    return {"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "fg"},
            "spec": {"nodePools": [{"name": "gpu", "gpu": {"model": "A100-SXM4-80GB", "count": 2}}],
                     "featureGates": gates}}


# (id, gates, upstream's error or None); the messages are featuregate.unsafeSetFromMap's
CASES = [
    ("beta-on", {"GenericWorkload": True}, None),
    ("alpha-with-its-dependency", {"GenericWorkload": True, "WorkloadWithJob": True}, None),
    ("unknown", {"GangScheduling": True}, "unrecognized feature gate: GangScheduling"),
    ("unknown-first-wins", {"GenericWorkload": True, "Nope": True}, "unrecognized feature gate: Nope"),
    ("ga-locked-off", {"CustomResourceFieldSelectors": False},
     "cannot set feature gate CustomResourceFieldSelectors to false, feature is locked to true"),
    ("ga-locked-to-its-default", {"CustomResourceFieldSelectors": True}, None),
    ("dependency-off", {"WorkloadWithJob": True},
     "WorkloadWithJob is enabled, but depends on features that are disabled: [GenericWorkload]"),
    ("two-dependencies-off", {"CompositePodGroup": True},
     "CompositePodGroup is enabled, but depends on features that are disabled: "
     "[GenericWorkload TopologyAwareWorkloadScheduling]"),
    ("all-alpha-covers-dependencies", {"AllAlpha": True, "AllBeta": True}, None),
    ("deprecated-allowed", {"KMSv1": True}, None),
]


@pytest.mark.parametrize(("gates", "error"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_spec_gates_are_checked_as_upstream(gates, error):
    if error is None:
        spec = parse_spec(_spec(gates))
        assert spec.feature_gates().explicit == gates
        return
    with pytest.raises(ConfigError) as exc:
        parse_spec(_spec(gates))
    assert exc.value.path == "spec.featureGates"
    assert exc.value.detail == error


def test_a_gate_value_must_be_a_bool():
    with pytest.raises(ConfigError):
        parse_spec(_spec({"GenericWorkload": "yes"}))


@pytest.mark.parametrize(("gates", "name", "on"), [
    ({}, "GenericWorkload", False),                      # beta, off by default in 1.37
    ({}, "DRADeviceTaints", True),                       # GA
    ({"GenericWorkload": True}, "GenericWorkload", True),
    ({"AllBeta": True}, "GenericWorkload", True),
    ({"AllBeta": True, "GenericWorkload": False}, "GenericWorkload", False),  # a named gate wins
    ({"AllAlpha": True}, "GenericWorkload", False),      # beta: AllAlpha does not touch it
    ({"AllAlpha": False}, "CustomResourceFieldSelectors", True),  # locked GA gates keep their default
])
def test_enabled(gates, name, on):
    assert FeatureGates(gates).enabled(name) is on


def test_warnings_for_ga_and_deprecated_gates():
    assert featuregates.warnings({"CustomResourceFieldSelectors": True, "KMSv1": False, "GenericWorkload": True}) == [
        "setting GA feature gate CustomResourceFieldSelectors=true. It will be removed in a future release.",
        "setting deprecated feature gate KMSv1=false. It will be removed in a future release."]


def test_an_unknown_gate_asked_by_code_is_an_error():
    with pytest.raises(KeyError):
        FeatureGates().enabled("GangScheduling")


LAYOUT = components.Layout(Path("/state"))
PORTS = components.Ports(apiserver=6443, etcd_client=2379, etcd_peer=2380, controller_manager=10257,
                         scheduler=10259, kubelet=10250)


def test_upstream_components_get_the_gates_and_the_apiserver_the_api_versions():
    gates = FeatureGates({"GenericWorkload": True, "WorkloadWithJob": True})
    flag = "--feature-gates=GenericWorkload=true,WorkloadWithJob=true"
    api = components.kube_apiserver(LAYOUT, PORTS, gates=gates)
    assert flag in api
    assert "--runtime-config=scheduling.k8s.io/v1alpha3=true,scheduling.k8s.io/v1beta1=true" in api
    assert flag in components.kube_controller_manager(LAYOUT, PORTS, gates=gates)
    assert flag in components.kube_scheduler(LAYOUT, PORTS, gates=gates)


def test_no_gates_no_flags():
    for argv in (components.kube_apiserver(LAYOUT, PORTS), components.kube_scheduler(LAYOUT, PORTS),
                 components.kube_controller_manager(LAYOUT, PORTS)):
        assert not [a for a in argv if a.startswith(("--feature-gates", "--runtime-config"))]


def test_kind_config_carries_the_gates_and_runtime_config(tmp_path):
    spec = parse_spec(_spec({"GenericWorkload": True}))
    config = kind_config(spec, KindRenderOptions(name="fg", state_dir=tmp_path))
    assert config["featureGates"] == {"GenericWorkload": True}
    assert config["runtimeConfig"] == {"scheduling.k8s.io/v1alpha3": "true", "scheduling.k8s.io/v1beta1": "true"}
    assert yaml.safe_load(yaml.safe_dump(config)) == config
    plain = kind_config(parse_spec(_spec({})), KindRenderOptions(name="fg", state_dir=tmp_path))
    assert "featureGates" not in plain and "runtimeConfig" not in plain


def test_the_gate_table_is_generated_from_the_sources():
    """The committed table is what scripts/gen-feature-gates writes from the v1.37.2 sources (and, when the
    binaries are built, what kube-apiserver --help lists)."""
    src = Path.home() / "go/pkg/mod/k8s.io/kubernetes@v1.37.2/pkg/features/kube_features.go"
    if not src.exists():
        pytest.skip(f"the k8s.io/kubernetes v1.37.2 sources are not in the Go module cache ({src}): "
                    "run scripts/upstream-build")
    run = subprocess.run([sys.executable, str(ROOT / "scripts/gen-feature-gates"), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("component", ["kube-apiserver", "kube-scheduler", "kube-controller-manager"])
def test_the_binaries_refuse_what_the_spec_refuses(component):
    """Each refused case, given to the real component, fails with the same message."""
    exe = BIN / component
    if not exe.exists():
        pytest.skip(f"{exe} is not built: run scripts/upstream-build")
    for _id, gates, error in CASES:
        if error is None:
            continue
        flag = ",".join(f"{k}={str(v).lower()}" for k, v in gates.items())
        out = subprocess.run([str(exe), f"--feature-gates={flag}", "--version"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode != 0, (component, flag)
        assert re.search(re.escape(error), out.stderr), (component, flag, out.stderr[-500:])
