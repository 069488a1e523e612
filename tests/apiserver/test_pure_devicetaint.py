"""Device taints, tolerations and DeviceTaintRules: defaulting, validation and the strategy, one row per case,
with upstream's field paths and texts (``pkg/apis/resource/validation`` and
``pkg/registry/resource/devicetaintrule/strategy.go``, v1.37.2)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from mockgpu.control.apiserver.status import StatusError
from mockgpu.control.apiserver.validation import default_and_validate

G = "resource.k8s.io/v1"
KEY = "gpu.mockgpu.io/xid"
EFFECTS = 'supported values: "NoExecute", "NoSchedule", "None"'


def rule() -> dict[str, Any]:
    return {"apiVersion": G, "kind": "DeviceTaintRule", "metadata": {"name": "gpu-0-broken"},
            "spec": {"deviceSelector": {"driver": "gpu.mockgpu.io", "pool": "node-1", "device": "gpu-0"},
                     "taint": {"key": KEY, "value": "79", "effect": "NoExecute"}}}


def resource_slice() -> dict[str, Any]:
    return {"apiVersion": G, "kind": "ResourceSlice", "metadata": {"name": "node-1-gpus"},
            "spec": {"driver": "gpu.mockgpu.io", "nodeName": "node-1",
                     "pool": {"name": "node-1", "generation": 0, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0", "taints": [{"key": KEY, "value": "79", "effect": "NoExecute"}]}]}}


def claim(tolerations: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": G, "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.mockgpu.io", "tolerations": tolerations}}]}}}


def causes(kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None, sub: str = "") -> list[tuple[str, str]]:
    with pytest.raises(StatusError) as info:
        default_and_validate(kind, obj, namespace="default" if kind == "ResourceClaim" else None, old=old,
                             subresource=sub)
    assert info.value.code == 422
    return [(c["field"], c["message"]) for c in info.value.status["details"]["causes"]]


Mut = Callable[[dict[str, Any]], None]


def taint_set(**fields: Any) -> Mut:
    def mut(o: dict[str, Any]) -> None:
        o["spec"]["taint"].update(fields)
        for k, v in fields.items():
            if v is None:
                del o["spec"]["taint"][k]
    return mut


def selector_set(**fields: Any) -> Mut:
    def mut(o: dict[str, Any]) -> None:
        o["spec"]["deviceSelector"].update(fields)
    return mut


RULE_ROWS: list[tuple[str, Mut, list[tuple[str, str]]]] = [
    ("effect-required", taint_set(effect=None), [("spec.taint.effect", "Required value")]),
    ("effect-prefer-no-schedule", taint_set(effect="PreferNoSchedule"),
     [("spec.taint.effect", f'Unsupported value: "PreferNoSchedule": {EFFECTS}')]),
    ("key-required", taint_set(key=None), [("spec.taint.key", 'Invalid value: "": name part must be non-empty')]),
    ("key-bad", taint_set(key="a/b/c"),
     [("spec.taint.key", 'Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, \'-\', '
                         "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                         "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
                         "[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")]),
    ("value-bad", taint_set(value="-79"),
     [("spec.taint.value", 'Invalid value: "-79": a valid label must be an empty string or consist of alphanumeric '
                           "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                           "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                           "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")]),
    ("driver-bad", selector_set(driver="GPU_driver"),
     [("spec.deviceSelector.driver", 'Invalid value: "GPU_driver": a lowercase RFC 1123 subdomain must consist of '
                                     "lower case alphanumeric characters, '-' or '.', and must start and end with an "
                                     "alphanumeric character (e.g. 'example.com', regex used for validation is "
                                     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")]),
    ("device-bad", selector_set(device="gpu.0"),
     [("spec.deviceSelector.device", 'Invalid value: "gpu.0": a lowercase RFC 1123 label must consist of lower case '
                                     "alphanumeric characters or '-', and must start and end with an alphanumeric "
                                     "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                                     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]),
]


@pytest.mark.parametrize(("mut", "want"), [r[1:] for r in RULE_ROWS], ids=[r[0] for r in RULE_ROWS])
def test_rule_validation(mut: Mut, want: list[tuple[str, str]]) -> None:
    r = rule()
    mut(r)
    assert causes("DeviceTaintRule", r) == want


def test_rule_defaults_and_strategy() -> None:
    r = rule()
    r["status"] = {"conditions": [{"type": "EvictionInProgress", "status": "True", "reason": "R",
                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    out = default_and_validate("DeviceTaintRule", r, namespace=None)
    assert out["status"] == {} and out["metadata"]["generation"] == 1  # PrepareForCreate
    added = out["spec"]["taint"]["timeAdded"]
    assert added.endswith("Z") and len(added) == len("2026-01-01T00:00:00Z")
    # the same spec: generation kept; a new value: generation bumped, timeAdded kept (the effect is unchanged)
    same = default_and_validate("DeviceTaintRule", copy.deepcopy(out), namespace=None, old=out)
    assert same["metadata"]["generation"] == 1
    new_value = copy.deepcopy(out)
    new_value["spec"]["taint"]["value"] = "48"
    bumped = default_and_validate("DeviceTaintRule", new_value, namespace=None, old=out)
    assert (bumped["metadata"]["generation"], bumped["spec"]["taint"]["timeAdded"]) == (2, added)
    # a new effect sent with the old timeAdded gets a new one (PrepareForUpdate)
    old = copy.deepcopy(out)
    old["spec"]["taint"]["timeAdded"] = "2020-01-01T00:00:00Z"
    new_effect = copy.deepcopy(old)
    new_effect["spec"]["taint"]["effect"] = "NoSchedule"
    updated = default_and_validate("DeviceTaintRule", new_effect, namespace=None, old=old)
    assert updated["spec"]["taint"]["timeAdded"] > "2020-01-01T00:00:00Z"
    # a stored unknown effect is not re-checked while unchanged (ratcheting)
    stored = copy.deepcopy(out)
    stored["spec"]["taint"]["effect"] = "Future"
    keep = copy.deepcopy(stored)
    keep["spec"]["taint"]["value"] = "48"
    assert default_and_validate("DeviceTaintRule", keep, namespace=None, old=stored)["spec"]["taint"]["value"] == "48"


def test_rule_status_subresource() -> None:
    out = default_and_validate("DeviceTaintRule", rule(), namespace=None)
    new = copy.deepcopy(out)
    new["spec"]["taint"]["effect"] = "None"  # ignored by /status
    cond = {"type": "EvictionInProgress", "status": "False", "reason": "NoEffect", "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}
    new["status"] = {"conditions": [cond]}
    got = default_and_validate("DeviceTaintRule", new, namespace=None, old=out, subresource="status")
    assert got["spec"] == out["spec"] and got["status"]["conditions"] == [cond]
    bad = copy.deepcopy(out)
    bad["status"] = {"conditions": [{"type": "EvictionInProgress", "status": "Maybe", "reason": "1x"}] * 9}
    errs = causes("DeviceTaintRule", bad, old=out, sub="status")
    assert errs[:4] == [
        ("status.conditions[0].status", 'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
        ("status.conditions[0].lastTransitionTime", "Required value"),
        ("status.conditions[0].reason", 'Invalid value: "1x": a condition reason must start with alphabetic '
                                        "character, optionally followed by a string of alphanumeric characters or "
                                        "'_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  "
                                        "or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', "
                                        "regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"),
        ("status.conditions[1]", 'Duplicate value: "EvictionInProgress"')]
    assert errs[-1] == ("status.conditions", "Too many: 9: must have at most 8 items")


def test_slice_taints() -> None:
    s = resource_slice()
    out = default_and_validate("ResourceSlice", s, namespace=None)
    assert out["spec"]["devices"][0]["taints"][0]["timeAdded"].endswith("Z")
    s["spec"]["devices"][0]["taints"] = [{"key": KEY, "effect": "PreferNoSchedule"}]
    assert causes("ResourceSlice", s) == [
        ("spec.devices[0].taints[0].effect", f'Unsupported value: "PreferNoSchedule": {EFFECTS}')]
    s["spec"]["devices"][0]["taints"] = [{"key": KEY, "effect": "NoSchedule"}] * 17
    assert causes("ResourceSlice", s) == [("spec.devices[0].taints", "Too many: 17: must have at most 16 items")]


TOLERATION_ROWS: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    ("exists-with-value", {"key": KEY, "operator": "Exists", "value": "79"},
     [("spec.devices.requests[0].exactly.tolerations[0].value",
       'Invalid value: "79": must be empty for operator `Exists`')]),
    ("bad-operator", {"key": KEY, "operator": "In"},
     [("spec.devices.requests[0].exactly.tolerations[0].operator",
       'Unsupported value: "In": supported values: "Equal", "Exists"')]),
    ("bad-effect", {"operator": "Exists", "effect": "PreferNoSchedule"},
     [("spec.devices.requests[0].exactly.tolerations[0].effect",
       f'Unsupported value: "PreferNoSchedule": {EFFECTS}')]),
]


@pytest.mark.parametrize(("tol", "want"), [r[1:] for r in TOLERATION_ROWS], ids=[r[0] for r in TOLERATION_ROWS])
def test_claim_tolerations(tol: dict[str, Any], want: list[tuple[str, str]]) -> None:
    assert causes("ResourceClaim", claim([tol])) == want


def test_toleration_operator_defaults_to_equal() -> None:
    out = default_and_validate("ResourceClaim", claim([{"key": KEY, "value": "79"}]), namespace="default")
    assert out["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] == [
        {"key": KEY, "value": "79", "operator": "Equal"}]
