"""Malformed input never escapes as anything but a StatusError (the server must answer 4xx, never 500)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as stt

from mockgpu.control.apiserver.patch import apply_patch
from mockgpu.control.apiserver.selectors import parse_field_selector, parse_label_selector
from mockgpu.control.apiserver.status import StatusError
from mockgpu.control.apiserver.tables import to_table
from mockgpu.control.apiserver.validation import default_and_validate

SCALARS = stt.one_of(stt.none(), stt.booleans(), stt.integers(-3, 70000), stt.sampled_from(
    ["", "a", "0.5", "2", "nvidia.com/gpu", "Always", "x y", "-", "1Gi", "Exists", "NoExecute"]))
JSON = stt.recursive(SCALARS, lambda inner: stt.one_of(
    stt.lists(inner, max_size=3),
    stt.dictionaries(stt.sampled_from(["name", "image", "limits", "requests", "resources", "containers", "ports",
                                       "containerPort", "env", "tolerations", "key", "operator", "labels", "x"]),
                     inner, max_size=4)), max_leaves=12)


def pod_like(spec_part):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec_part}


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(spec=JSON, strict=stt.booleans(), type_meta=stt.dictionaries(stt.sampled_from(["apiVersion", "kind"]), JSON),
       meta=JSON)
def test_default_and_validate_only_raises_status_errors(spec, strict, type_meta, meta):
    for kind in ("Pod", "Node", "ConfigMap", "Event", "Binding", "Namespace"):
        for obj in (pod_like(spec) | {"kind": kind}, pod_like(spec) | type_meta, {"metadata": meta, "spec": spec}):
            try:
                default_and_validate(kind, obj, namespace="default", strict=strict)
            except StatusError as err:
                assert 400 <= err.code < 500


@FUZZ
@given(containers=stt.lists(stt.dictionaries(stt.sampled_from(["name", "image", "resources", "ports", "env"]), JSON,
                                             max_size=5), max_size=3))
def test_container_shapes_only_raise_status_errors(containers):
    try:
        default_and_validate("Pod", pod_like({"containers": containers}), namespace="default")
    except StatusError as err:
        assert 400 <= err.code < 500


@FUZZ
@given(patch=JSON, ctype=stt.sampled_from(["application/merge-patch+json", "application/json-patch+json",
                                           "application/strategic-merge-patch+json"]))
def test_patches_only_raise_status_errors(patch, ctype):
    obj = pod_like({"containers": [{"name": "c", "image": "i", "env": [{"name": "A"}]}]})
    try:
        out = apply_patch(obj, json.dumps(patch).encode(), ctype)
        assert isinstance(out, dict)
    except StatusError as err:
        assert 400 <= err.code < 500


@FUZZ
@given(text=stt.text(alphabet="ab=!,() in notin<>.-/_x1 ", max_size=20))
def test_selectors_only_raise_status_errors(text):
    for parse in (parse_label_selector, lambda t: parse_field_selector(t, "pods")):
        try:
            sel = parse(text)
            sel.matches({"metadata": {"name": "x"}} if parse is not parse_label_selector else {"a": "b"})
        except StatusError as err:
            assert err.code == 400


@FUZZ
@given(status=JSON, meta=JSON)
def test_tables_never_fail_on_odd_status(status, meta):
    """Status is stored as clients write it (its sub-trees are not type-checked), so printers must cope."""
    spec = {"containers": [{"name": "c", "image": "i"}], "readinessGates": [{"conditionType": "X"}]}
    for resource in ("pods", "nodes", "events", "namespaces"):
        obj = {"metadata": {"name": "x", "creationTimestamp": meta if isinstance(meta, str) else None}, "spec": spec,
               "status": status}
        row = to_table(resource, [obj])["rows"][0]
        assert row["cells"][0] in ("x", "<unknown>") or resource == "events"
