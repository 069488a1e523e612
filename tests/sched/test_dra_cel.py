"""DRA CEL selectors (``mockgpu.sched.dra.cel``): one row per expression, as upstream's cel/compile_test.go."""

from __future__ import annotations

import pytest

from mockgpu.sched.dra.cel import CelCompileError, CelRuntimeError, device_activation, device_matches

DRIVER = "gpu.mockgpu.io"
DEVICE = {
    "name": "gpu-0",
    "attributes": {"type": {"string": "gpu"}, "index": {"int": 0}, "migCapable": {"bool": True},
                   "driverVersion": {"version": "550.54.15"}, "other.io/flag": {"bool": True}},
    "capacity": {"memory": {"value": "80Gi"}},
}
HINT = (". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for "
        "optional fields")
G = 'device.attributes["gpu.mockgpu.io"]'
M = 'device.capacity["gpu.mockgpu.io"].memory'


@pytest.mark.parametrize("expr, want", [
    ('device.driver == "gpu.mockgpu.io"', True),
    (f'{G}.type == "gpu"', True),
    (f"{G}.index == 0 && {G}.migCapable", True),
    ('device.attributes["other.io"].flag', True),  # a qualified name keeps its own domain
    (f"{M}.compareTo(quantity(\"40Gi\")) >= 0", True),
    (f"{M}.compareTo(quantity(\"81Gi\")) >= 0", False),
    (f'{M}.isGreaterThan(quantity("79Gi")) && {M}.isLessThan(quantity("81Gi"))', True),
    (f'{M} == quantity("81920Mi")', True),
    (f"{M}.asApproximateFloat() == 85899345920.0", True),
    (f"{M}.asInteger() == 85899345920", True),
    (f'{M}.sub(quantity("40Gi")).isGreaterThan(quantity("39Gi"))', True),
    ('isQuantity("1.5Gi") && !isQuantity("many")', True),
    (f'{G}.driverVersion.isGreaterThan(semver("550.0.0"))', True),
    (f'{G}.driverVersion.compareTo(semver("550.54.15")) == 0', True),
    (f"{G}.driverVersion.major() == 550 && {G}.driverVersion.minor() == 54", True),
    ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', True),
    ('isSemver("1.2.3") && !isSemver("1.2")', True),
    (f"has({G}.nvlinkIsland)", False),
    (f"{G}.nvlinkIsland == 0 || true", True),  # CEL's || absorbs an error when the other side is true
    ("device.allowMultipleAllocations", False),
])
def test_selector(expr, want):
    assert device_matches(expr, device_activation(DRIVER, DEVICE)) is want


@pytest.mark.parametrize("expr, want", [
    (f"{G}.nvlinkIsland == 0", "no such key: nvlinkIsland" + HINT),
    ('device.attributes["elsewhere.io"].x', "no such key: x" + HINT),  # a missing domain is an empty map
    (f'{G}["nvlinkIsland"] == 0', "no such key: nvlinkIsland" + HINT),
    ('quantity("lots") == quantity("1")',
     "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ('semver("1.2") == semver("1.2.0")', "error parsing semver: 1.2"),
])
def test_runtime_error(expr, want):
    with pytest.raises(CelRuntimeError) as exc:
        device_matches(expr, device_activation(DRIVER, DEVICE))
    assert str(exc.value) == want


def test_compile_error():
    with pytest.raises(CelCompileError):
        device_matches("device.driver ==", device_activation(DRIVER, DEVICE))
