"""Defaulting and validation: the "Schedule GPUs" rules with upstream's messages and field paths."""

from __future__ import annotations

import copy

import pytest

from mockgpu.apimachinery.quantity import canonical
from mockgpu.control.apiserver.status import StatusError
from mockgpu.control.apiserver.validation import default_and_validate


def pod(resources=None, **spec_extra):
    container = {"name": "main", "image": "busybox:1.36"}
    if resources is not None:
        container["resources"] = resources
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [container], **spec_extra}}


def error_of(kind, obj, **kw):
    with pytest.raises(StatusError) as info:
        default_and_validate(kind, obj, namespace=kw.pop("namespace", "default"), **kw)
    return info.value


GPU_CASES = [
    ("half-gpu-limit", {"limits": {"nvidia.com/gpu": 0.5}},
     'Pod "p" is invalid: [spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": '
     'must be an integer, spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "500m": '
     'must be an integer]'),
    ("1500m", {"limits": {"nvidia.com/gpu": "1500m"}},
     'Pod "p" is invalid: [spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "1500m": '
     'must be an integer, spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "1500m": '
     'must be an integer]'),
    ("request-below-limit", {"limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": 1}},
     'Pod "p" is invalid: spec.containers[0].resources.requests: Invalid value: "1": '
     'must be equal to nvidia.com/gpu limit of 2'),
    ("request-without-limit", {"requests": {"nvidia.com/gpu": 1}},
     'Pod "p" is invalid: spec.containers[0].resources.limits: Required value: '
     'Limit must be set for non overcommitable resources'),
    ("negative", {"limits": {"nvidia.com/gpu": -1}},
     'Pod "p" is invalid: [spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "-1": '
     'must be greater than or equal to 0, spec.containers[0].resources.requests[nvidia.com/gpu]: '
     'Invalid value: "-1": must be greater than or equal to 0]'),
    ("cpu-request-over-limit", {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}},
     'Pod "p" is invalid: spec.containers[0].resources.requests: Invalid value: "2": '
     'must be less than or equal to cpu limit of 1'),
    ("unknown-unprefixed", {"limits": {"gpu": 1}},
     'Pod "p" is invalid: [spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard '
     'resource for containers, spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a '
     'standard resource for containers]'),
]


@pytest.mark.parametrize(("resources", "message"), [c[1:] for c in GPU_CASES], ids=[c[0] for c in GPU_CASES])
def test_gpu_rules_refuse_with_upstream_message(resources, message):
    err = error_of("Pod", pod(resources))
    assert err.code == 422 and err.status["reason"] == "Invalid"
    assert err.status["message"] == message


def test_invalid_causes_carry_reason_field_and_body():
    err = error_of("Pod", pod({"limits": {"nvidia.com/gpu": "0.5"}}))
    assert err.status["details"]["causes"][0] == {
        "reason": "FieldValueInvalid", "message": 'Invalid value: "500m": must be an integer',
        "field": "spec.containers[0].resources.limits[nvidia.com/gpu]"}
    assert err.status["details"]["kind"] == "Pod" and err.status["details"]["name"] == "p"


VALID_GPU = [
    ("whole", {"limits": {"nvidia.com/gpu": 2}}, {"nvidia.com/gpu": "2"}),
    ("3000m-is-3", {"limits": {"nvidia.com/gpu": "3000m"}}, {"nvidia.com/gpu": "3"}),
    ("equal-request", {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": 1}}, {"nvidia.com/gpu": "1"}),
    ("zero", {"limits": {"nvidia.com/gpu": 0}}, {"nvidia.com/gpu": "0"}),
    ("mig", {"limits": {"nvidia.com/mig-1g.10gb": 1, "cpu": "500m"}},
     {"nvidia.com/mig-1g.10gb": "1", "cpu": "500m"}),
]


@pytest.mark.parametrize(("resources", "requests"), [c[1:] for c in VALID_GPU], ids=[c[0] for c in VALID_GPU])
def test_valid_gpu_requests_default_to_limits(resources, requests):
    out = default_and_validate("Pod", pod(resources), namespace="default")
    assert out["spec"]["containers"][0]["resources"]["requests"] == requests


def test_pod_defaults_match_upstream():
    out = default_and_validate("Pod", pod(), namespace="ns1")
    spec, c = out["spec"], out["spec"]["containers"][0]
    assert out["metadata"]["namespace"] == "ns1"
    assert (spec["restartPolicy"], spec["terminationGracePeriodSeconds"], spec["dnsPolicy"], spec["schedulerName"],
            spec["enableServiceLinks"], spec["securityContext"], spec["priority"], spec["preemptionPolicy"],
            spec["serviceAccountName"]) == ("Always", 30, "ClusterFirst", "default-scheduler", True, {}, 0,
                                            "PreemptLowerPriority", "default")
    assert (c["terminationMessagePath"], c["terminationMessagePolicy"], c["imagePullPolicy"]) == (
        "/dev/termination-log", "File", "IfNotPresent")
    assert spec["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}]
    assert out["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


@pytest.mark.parametrize(("image", "policy"), [("busybox", "Always"), ("busybox:latest", "Always"),
                                               ("busybox:1.36", "IfNotPresent"), ("reg:5000/x", "Always"),
                                               ("reg:5000/x:v1", "IfNotPresent"), ("x@sha256:abc", "IfNotPresent")],
                         ids=["untagged", "latest", "tagged", "registry-port-untagged", "registry-port-tagged",
                              "digest"])
def test_image_pull_policy_default(image, policy):
    p = pod()
    p["spec"]["containers"][0]["image"] = image
    assert default_and_validate("Pod", p, namespace="d")["spec"]["containers"][0]["imagePullPolicy"] == policy


@pytest.mark.parametrize(("resources", "qos"), [
    (None, "BestEffort"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
    ({"requests": {"cpu": "1"}}, "Burstable"),
    ({"limits": {"nvidia.com/gpu": 1}}, "BestEffort"),
], ids=["none", "limits-cpu-mem", "request-cpu", "gpu-only"])
def test_qos_class(resources, qos):
    assert default_and_validate("Pod", pod(resources), namespace="d")["status"]["qosClass"] == qos


def test_existing_toleration_is_not_duplicated():
    tol = [{"operator": "Exists"}]
    out = default_and_validate("Pod", pod(tolerations=tol), namespace="d")
    assert out["spec"]["tolerations"] == tol


FIELD_CASES = [
    ("no-containers", lambda p: p["spec"].update(containers=[]), 'Pod "p" is invalid: spec.containers: Required value'),
    ("no-image", lambda p: p["spec"]["containers"][0].pop("image"),
     'Pod "p" is invalid: spec.containers[0].image: Required value'),
    ("no-name", lambda p: p["metadata"].pop("name"),
     'Pod "" is invalid: metadata.name: Required value: name or generateName is required'),
    ("bad-restart-policy", lambda p: p["spec"].update(restartPolicy="Sometimes"),
     'Pod "p" is invalid: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
     '"OnFailure", "Never"'),
    ("port-out-of-range", lambda p: p["spec"]["containers"][0].update(ports=[{"containerPort": 70000}]),
     'Pod "p" is invalid: spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and '
     '65535, inclusive'),
    ("duplicate-container", lambda p: p["spec"]["containers"].append(dict(p["spec"]["containers"][0])),
     'Pod "p" is invalid: spec.containers[1].name: Duplicate value: "main"'),
    ("uppercase-name", lambda p: p["metadata"].update(name="GPU"),
     "Pod \"GPU\" is invalid: metadata.name: Invalid value: \"GPU\": a lowercase RFC 1123 subdomain must consist of "
     "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
     "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ("bad-dns-policy", lambda p: p["spec"].update(dnsPolicy="Cluster"),
     'Pod "p" is invalid: spec.dnsPolicy: Unsupported value: "Cluster": supported values: "ClusterFirst", '
     '"ClusterFirstWithHostNet", "Default", "None"'),
    ("toleration-without-key", lambda p: p["spec"].update(tolerations=[{"value": "x", "effect": "NoSchedule"}]),
     'Pod "p" is invalid: spec.tolerations[0].operator: Invalid value: "": operator must be Exists when `key` is '
     'empty, which means "match all values and all keys"'),
    ("toleration-seconds-need-noexecute", lambda p: p["spec"].update(tolerations=[
        {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]),
     "Pod \"p\" is invalid: spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' "
     "when `tolerationSeconds` is set"),
    ("bad-label-value", lambda p: p["metadata"].update(labels={"app": "-x"}),
     "Pod \"p\" is invalid: metadata.labels: Invalid value: \"-x\": a valid label must be an empty string or consist "
     "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
     "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
     "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
]


@pytest.mark.parametrize(("mutate", "message"), [c[1:] for c in FIELD_CASES], ids=[c[0] for c in FIELD_CASES])
def test_field_validation_messages(mutate, message):
    p = pod()
    mutate(p)
    assert error_of("Pod", p).status["message"] == message


def test_generate_name_alone_is_enough_and_too_long_name_is_refused():
    p = pod()
    p["metadata"] = {"generateName": "job-"}
    with pytest.raises(StatusError, match=r"metadata.name: Required value") as info:
        default_and_validate("Pod", p, namespace="d")
    assert info.value.code == 422  # the caller (server) fills name from generateName before validating
    p["metadata"] = {"name": "a" * 254}
    assert "must be no more than 253 characters" in error_of("Pod", p).status["message"]


DECODE_CASES = [
    ("wrong-apiversion", lambda p: p.update(apiVersion="apps/v1"),
     'Pod in version "v1" cannot be handled as a Pod: no kind "Pod" is registered for version "apps/v1" in scheme '
     '"pkg/api/legacyscheme/scheme.go:30"'),
    ("unknown-kind", lambda p: p.update(kind="Widget"),
     'Widget in version "v1" cannot be handled as a Pod: no kind "Widget" is registered for version "v1" in scheme '
     '"pkg/api/legacyscheme/scheme.go:30"'),
    ("bad-quantity", lambda p: p["spec"]["containers"][0].update(resources={"limits": {"nvidia.com/gpu": "two"}}),
     "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression "
     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ("wrong-kind", lambda p: p.update(kind="Node"),
     'Node in version "v1" cannot be handled as a Pod: converting (v1.Node) to (core.Pod): unknown conversion'),
    ("namespace-mismatch", lambda p: p["metadata"].update(namespace="other"),
     "the namespace of the provided object does not match the namespace sent on the request"),
]


@pytest.mark.parametrize(("mutate", "message"), [c[1:] for c in DECODE_CASES], ids=[c[0] for c in DECODE_CASES])
def test_decode_problems_are_400(mutate, message):
    p = pod()
    mutate(p)
    err = error_of("Pod", p)
    assert err.code == 400 and err.status["reason"] == "BadRequest"
    if message:
        assert err.status["message"] == message


def test_strict_mode_names_unknown_fields():
    p = pod()
    p["spec"]["foo"] = 1
    p["spec"]["containers"][0]["imagee"] = "x"
    err = error_of("Pod", p, strict=True)
    assert err.code == 400
    assert err.status["message"] == ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
                                     'unknown field "spec.containers[0].imagee", unknown field "spec.foo"')
    # without strict the unknown fields are accepted (upstream drops them; the store may keep or drop them)
    default_and_validate("Pod", p, namespace="default")


def test_pod_update_rules():
    old = default_and_validate("Pod", pod({"limits": {"nvidia.com/gpu": 1}}), namespace="d")
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "busybox:1.37"
    new["spec"]["activeDeadlineSeconds"] = 60
    new["spec"]["tolerations"].append({"key": "k", "operator": "Exists", "effect": "NoSchedule"})
    default_and_validate("Pod", new, namespace="d", old=old)
    for field, value in (("nodeName", "gpu-0"), ("schedulerName", "other")):
        changed = copy.deepcopy(old)
        changed["spec"][field] = value
        err = error_of("Pod", changed, namespace="d", old=old)
        assert err.status["details"]["causes"][0]["field"] == "spec"
        assert err.status["message"].startswith('Pod "p" is invalid: spec: Forbidden: pod updates may not change '
                                                "fields other than `spec.containers[*].image`")


def test_update_keeps_status_and_status_update_keeps_spec():
    old = default_and_validate("Pod", pod(), namespace="d")
    old["status"]["phase"] = "Running"
    new = copy.deepcopy(old)
    new["status"]["phase"] = "Failed"
    assert default_and_validate("Pod", new, namespace="d", old=old)["status"]["phase"] == "Running"
    new["spec"]["schedulerName"] = "other"
    out = default_and_validate("Pod", new, namespace="d", old=old, subresource="status")
    assert out["status"]["phase"] == "Failed" and out["spec"]["schedulerName"] == "default-scheduler"


def test_node_allocatable_defaults_and_gpu_capacity_must_be_integer():
    node = {"metadata": {"name": "gpu-0"}, "status": {"capacity": {"nvidia.com/gpu": 2, "cpu": "32"}}}
    out = default_and_validate("Node", node, namespace=None)
    assert out["status"]["allocatable"] == {"nvidia.com/gpu": "2", "cpu": "32"}
    assert "namespace" not in out["metadata"]
    node["status"]["capacity"]["nvidia.com/gpu"] = "1.5"
    err = error_of("Node", node, namespace=None)
    assert 'status.capacity[nvidia.com/gpu]: Invalid value: "1500m": must be an integer' in err.status["message"]


def test_namespace_defaults_and_label_name_rule():
    out = default_and_validate("Namespace", {"metadata": {"name": "team-a"}}, namespace=None)
    assert out["spec"] == {"finalizers": ["kubernetes"]} and out["status"] == {"phase": "Active"}
    assert out["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    err = error_of("Namespace", {"metadata": {"name": "a_b"}}, namespace=None)
    assert "a lowercase RFC 1123 label must consist of" in err.status["message"]
    err = error_of("Namespace", {"metadata": {"name": "a.b"}}, namespace=None)  # a subdomain: v0.37's own words
    assert err.status["message"].endswith('metadata.name: Invalid value: "a.b": must not contain dots')


def test_binding_configmap_event():
    err = error_of("Binding", {"metadata": {"name": "p"}, "target": {"kind": "Pod"}})
    assert err.status["message"] == ('Binding "p" is invalid: [target.kind: Unsupported value: "Pod": supported '
                                     'values: "Node", target.name: Required value]')
    err = error_of("ConfigMap", {"metadata": {"name": "c"}, "data": {"a b": "x"}})
    assert "data: Invalid value: \"a b\": a valid config key" in err.status["message"]
    ev = {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "other"}}
    assert "does not match event.namespace" in error_of("Event", ev).status["message"]


@pytest.mark.parametrize(("text", "want"), [("0.5", "500m"), ("1500m", "1500m"), ("2000", "2k"), ("1.5", "1500m"),
                                            ("3000m", "3"), ("1Gi", "1Gi"), ("2048Mi", "2Gi"), ("0", "0"),
                                            ("1e3", "1k")],
                         ids=lambda v: str(v))
def test_canonical_quantity(text, want):
    assert canonical(text) == want


@pytest.mark.parametrize("value", [1e300, "1e70", 1.5e-20, 10**70], ids=["1e300", "1e70-text", "tiny", "10^70"])
def test_extreme_quantities_are_stored_in_a_form_that_reads_back(value):
    out = default_and_validate("Pod", pod({"limits": {"cpu": value}}), namespace="d")
    again = default_and_validate("Pod", out, namespace="d")  # what an update of the stored object does
    assert again["spec"]["containers"][0]["resources"]["limits"]["cpu"] == \
        out["spec"]["containers"][0]["resources"]["limits"]["cpu"]
