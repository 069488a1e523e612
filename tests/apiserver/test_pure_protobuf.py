"""The protobuf codec (``protobuf.py``) without a server: every served kind round-trips JSON → protobuf → JSON
(objects filled from each kind's own message, iterating the registry), realistic objects keep what Go's JSON keeps
(pointer zeros, quantities, int-or-strings, times, embedded JSON), the envelope and the watch framing are
upstream's, and the Accept header picks protobuf as upstream's negotiation does."""

from __future__ import annotations

import base64
import copy
import importlib.util
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.descriptor import FieldDescriptor as FD

from mockgpu.control.apiserver import protobuf, registry, request
from mockgpu.control.apiserver.status import StatusError

S = protobuf.schema()


# ---- every served kind, filled field by field from its message ---------------------------------------------------

def _special_value(special: str, n: int) -> Any:
    name = special.rsplit(".", 1)[-1]
    return {"Time": "2026-01-02T03:04:05Z", "MicroTime": "2026-01-02T03:04:05.123456Z", "Duration": "1m30s",
            "Quantity": "1500m", "IntOrString": 7 if n % 2 else "50%", "RawExtension": {"a": [1, "b"]},
            "FieldsV1": {"f:metadata": {"f:labels": {}}}, "wrapper": ["x", "y"]}[name]


def _scalar_value(f: Any, n: int) -> Any:
    if f.scalar == FD.TYPE_STRING:
        return f"v{n}"
    if f.scalar == FD.TYPE_BOOL:
        return True
    if f.scalar == FD.TYPE_BYTES:
        return base64.b64encode(b"\x00\x01" + bytes([n % 256])).decode()
    if f.scalar in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
        return 0.5
    return n + 1


def filled(name: str, depth: int = 0, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """An object of message ``name`` with every field set to a non-zero value (to a bounded depth)."""
    plan = S.plan(name)
    out: dict[str, Any] = {}
    for n, f in enumerate(plan.fields):
        if f.sub is not None and f.special is None and (f.sub in seen or depth > 16):
            continue  # a recursive type: stop
        if f.special is not None:
            one = _special_value(f.special, n)
        elif f.sub is not None:
            one = filled(f.sub, depth + 1, (*seen, name))
            if f.inline:
                out.update(one)
                continue
        else:
            one = _scalar_value(f, n)
        out[f.json] = {"k1": one, "k2": copy.deepcopy(one)} if f.map_value is not None else \
            [one, copy.deepcopy(one)] if f.repeated else one
    return out


def _kinds() -> list[tuple[str, str]]:
    """(apiVersion, kind) of every served kind, its list, and its subresources' kinds."""
    out: list[tuple[str, str]] = []
    for k in registry.KINDS:
        out.append((k.api_version, k.kind))
        if "list" in k.verbs:
            out.append((k.api_version, k.list_kind))
        for sub in k.subresources:
            version = f"{sub.group}/{sub.version}" if sub.group else sub.version or k.api_version
            out.append((version, sub.kind))
    return list(dict.fromkeys(out))


@pytest.mark.parametrize(("api_version", "kind"), _kinds(), ids=lambda v: v)
def test_every_served_kind_round_trips(api_version: str, kind: str):
    name = S.message_of(api_version, kind)
    assert name is not None, f"{api_version} {kind} has no message"
    obj = {"apiVersion": api_version, "kind": kind, **filled(name)}
    body = protobuf.encode(obj)
    assert body is not None and body.startswith(protobuf.MAGIC)
    assert protobuf.decode_object(body) == obj


# ---- realistic objects: what Go's JSON keeps and drops --------------------------------------------------------------

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "train", "namespace": "team-a", "labels": {"app": "train"}, "annotations": {"a": "b"},
                 "creationTimestamp": "2026-01-02T03:04:05Z", "uid": "0f9c", "resourceVersion": "12",
                 "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u1",
                                      "controller": True, "blockOwnerDeletion": False}],
                 "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                                    "time": "2026-01-02T03:04:05Z", "fieldsType": "FieldsV1",
                                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]},
    "spec": {
        "containers": [{
            "name": "c", "image": "mockgpu/workload", "command": ["python", "train.py"],
            "ports": [{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
            "env": [{"name": "A", "value": "1"},
                    {"name": "N", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
            "resources": {"limits": {"nvidia.com/gpu": "2", "memory": "4Gi"}, "requests": {"cpu": "500m"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True}],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                              "initialDelaySeconds": 5, "periodSeconds": 10},
            "readinessProbe": {"tcpSocket": {"port": "metrics"}, "failureThreshold": 3},
            "startupProbe": {"exec": {"command": ["true"]}},
            "securityContext": {"runAsUser": 0, "privileged": False, "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]}},
            "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent",
        }],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
                    {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420,
                                                  "items": [{"key": "k", "path": "p"}]}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 0}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]}]}}},
        "securityContext": {"fsGroup": 2000, "runAsNonRoot": True},
        "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": False, "restartPolicy": "Never",
        "priority": 0, "schedulerName": "default-scheduler",
    },
    "status": {"phase": "Running", "podIP": "10.0.0.5", "startTime": "2026-01-02T03:04:06Z",
               "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-02T03:04:07Z"}],
               "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "image": "i", "imageID": "",
                                      "state": {"running": {"startedAt": "2026-01-02T03:04:06Z"}}}]},
}


def _go_printed_pod() -> dict[str, Any]:
    """POD as Go's encoding/json prints the decoded object: non-pointer fields without omitempty appear even
    zero (``lastProbeTime`` is a zero Time, which Go prints ``null`` and the codec leaves out)."""
    want = copy.deepcopy(POD)
    cs = want["status"]["containerStatuses"][0]
    cs["lastState"] = {}
    return want


def test_a_realistic_pod_round_trips_as_go_prints_it():
    assert protobuf.decode_object(protobuf.encode(POD)) == _go_printed_pod()


@pytest.mark.parametrize(("path", "value"), [
    (("spec", "terminationGracePeriodSeconds"), 0),  # *int64: presence kept
    (("spec", "automountServiceAccountToken"), False),  # *bool
    (("spec", "tolerations", 1, "tolerationSeconds"), 0),
    (("spec", "priority"), 0),
    (("spec", "containers", 0, "securityContext", "runAsUser"), 0),
    (("spec", "containers", 0, "securityContext", "privileged"), False),
    (("spec", "containers", 0, "livenessProbe", "httpGet", "port"), 8080),  # IntOrString, int
    (("spec", "containers", 0, "readinessProbe", "tcpSocket", "port"), "metrics"),  # IntOrString, string
    (("spec", "containers", 0, "resources", "requests", "cpu"), "500m"),  # Quantity
    (("spec", "volumes", 1, "emptyDir", "sizeLimit"), "1Gi"),  # *Quantity
    (("spec", "volumes", 0, "persistentVolumeClaim", "claimName"), "data"),  # inlined VolumeSource
    (("metadata", "managedFields", 0, "fieldsV1"), {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}),
    (("metadata", "ownerReferences", 0, "blockOwnerDeletion"), False),
    (("status", "containerStatuses", 0, "restartCount"), 0),  # int32 without omitempty: kept
    (("status", "containerStatuses", 0, "imageID"), ""),  # string without omitempty: kept
])
def test_pod_fields_survive(path: tuple[Any, ...], value: Any):
    got: Any = protobuf.decode_object(protobuf.encode(POD))
    for key in path:
        got = got[key]
    assert got == value


@pytest.mark.parametrize(("obj", "dropped"), [
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
      "spec": {"minReadySeconds": 0, "paused": False, "replicas": 0}}, ("minReadySeconds", "paused")),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "generation": 0}, "immutable": False},
     ()),
])
def test_zero_non_pointer_omitempty_fields_are_dropped(obj: dict[str, Any], dropped: tuple[str, ...]):
    got = protobuf.decode_object(protobuf.encode(obj))
    spec = got.get("spec", {})
    assert all(key not in spec for key in dropped)
    if obj["kind"] == "Deployment":
        assert spec["replicas"] == 0  # *int32
    else:
        assert got["immutable"] is False and "generation" not in got["metadata"]  # *bool; int64 omitempty


@pytest.mark.parametrize(("obj", "key", "value"), [
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "binaryData": {"b": "AAEC"}},
     ("binaryData", "b"), "AAEC"),  # bytes: base64 in JSON
    ({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
      "spec": {"renewTime": "2026-01-02T03:04:05.123456Z", "leaseDurationSeconds": 15}},
     ("spec", "renewTime"), "2026-01-02T03:04:05.123456Z"),  # MicroTime
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "creationTimestamp": "2026-01-02T03:04:05.9Z"}},
     ("metadata", "creationTimestamp"), "2026-01-02T03:04:05Z"),  # Time keeps whole seconds (as upstream's)
    ({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
      "spec": {"config": [{"opaque": {"driver": "gpu.mockgpu.io", "parameters": {"sharing": {"replicas": 2}}}}]}},
     ("spec", "config", 0, "opaque", "parameters"), {"sharing": {"replicas": 2}}),  # RawExtension, inlined
    ({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {},
      "status": {"userInfo": {"username": "u", "extra": {"scopes": ["a", "b"]}}}},
     ("status", "userInfo", "extra", "scopes"), ["a", "b"]),  # map<string, ExtraValue>
    ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
      "spec": {"ports": [{"port": 80, "targetPort": "http"}], "sessionAffinityConfig": {
          "clientIP": {"timeoutSeconds": 0}}}},
     ("spec", "sessionAffinityConfig", "clientIP", "timeoutSeconds"), 0),
])
def test_kubernetes_json_types(obj: dict[str, Any], key: tuple[Any, ...], value: Any):
    got: Any = protobuf.decode_object(protobuf.encode(obj))
    for k in key:
        got = got[k]
    assert got == value


@pytest.mark.parametrize(("ns", "text"), [
    (0, "0s"), (1, "1ns"), (1500, "1.5µs"), (300_000_000, "300ms"), (1_500_000_000, "1.5s"),
    (90 * 10**9, "1m30s"), (3600 * 10**9, "1h0m0s"), (-2 * 10**9, "-2s"), (26 * 3600 * 10**9 + 1, "26h0m0.000000001s"),
])
def test_go_durations(ns: int, text: str):
    assert protobuf.go_duration(ns) == text
    assert protobuf.parse_go_duration(text) == ns


# ---- the envelope -------------------------------------------------------------------------------------------------

def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    unknown = S.message_class("k8s.io.apimachinery.pkg.runtime.Unknown")()
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind, unknown.raw = api_version, kind, raw
    return protobuf.MAGIC + unknown.SerializeToString()


@pytest.mark.parametrize("api_version", ["v1", "apps/v1", "meta.k8s.io/v1", "policy/v1"])
def test_delete_options_decode_in_every_group_version(api_version: str):
    """client-go sends DeleteOptions in the group-version of the resource (``metav1.AddToGroupVersion``)."""
    opts = protobuf.to_message("k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions",
                               {"gracePeriodSeconds": 0, "propagationPolicy": "Foreground",
                                "preconditions": {"uid": "u"}, "dryRun": ["All"]})
    assert protobuf.decode_object(_envelope(api_version, "DeleteOptions", opts.SerializeToString())) == {
        "apiVersion": api_version, "kind": "DeleteOptions", "gracePeriodSeconds": 0,
        "propagationPolicy": "Foreground", "preconditions": {"uid": "u"}, "dryRun": ["All"]}


def test_an_empty_type_meta_defaults_to_the_urls_kind():
    raw = protobuf.to_message("k8s.io.api.core.v1.ConfigMap", {"metadata": {"name": "c"}}).SerializeToString()
    assert request.decode_body(_envelope("", "", raw), protobuf.CONTENT_TYPE, "ConfigMap") == {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}


@pytest.mark.parametrize(("body", "kind", "message"), [
    (b'{"kind":"Pod"}', "Pod", "the object provided is unrecognized (must be of type Pod): provided data does not "
                               'appear to be a protobuf message, expected prefix [107 56 115 0] ({"kind":"Pod"})'),
    (_envelope("v1", "Nonsense", b""), "Pod", 'Nonsense in version "v1" cannot be handled as a Pod: no kind '
                                              '"Nonsense" is registered for version "v1" in scheme '
                                              '"pkg/runtime/scheme.go:111"'),
    (_envelope("v1", "Pod", b"\x0a\xff\xff"), "Pod", 'Pod in version "v1" cannot be handled as a Pod: unexpected EOF'),
    (protobuf.MAGIC + b"\x0a\x05ab", "Pod", "the object provided is unrecognized (must be of type Pod): unexpected "
                                          "EOF (6b3873000a056162)"),
    (protobuf.MAGIC + b"\x0a\x05ab", None, "unexpected EOF"),
])
def test_malformed_bodies_are_400_as_upstream_words_them(body: bytes, kind: str | None, message: str):
    with pytest.raises(StatusError) as err:
        request.decode_body(body, protobuf.CONTENT_TYPE, kind)
    assert err.value.code == 400 and err.value.status["message"] == message


def _revision_chain(levels: int) -> bytes:
    """A ControllerRevision whose ``data`` embeds a ControllerRevision ... ``levels`` deep."""
    body = _envelope("v1", "ConfigMap", b"")
    for _ in range(levels):
        rev = protobuf.to_message("k8s.io.api.apps.v1.ControllerRevision", {"metadata": {"name": "r"}})
        rev.data.raw = body
        body = _envelope("apps/v1", "ControllerRevision", rev.SerializeToString())
    return body


def _deep_fields_v1() -> bytes:
    cm = protobuf.to_message("k8s.io.api.core.v1.ConfigMap", {"metadata": {"name": "c"}})
    entry = cm.metadata.managedFields.add()
    entry.manager, entry.fieldsV1.Raw = "m", b"[" * 200_000
    return _envelope("v1", "ConfigMap", cm.SerializeToString())


@pytest.mark.parametrize(("body", "kind", "message"), [
    (_revision_chain(3000), "ControllerRevision", 'ControllerRevision in version "v1" cannot be handled as a '
                                                  "ControllerRevision: embedded objects nested deeper than 8"),
    (_deep_fields_v1(), "ConfigMap", 'ConfigMap in version "v1" cannot be handled as a ConfigMap: embedded object is '
                                     "not JSON: nested too deep"),
])
def test_hostile_nesting_is_a_400_not_a_crash(body: bytes, kind: str, message: str):
    """Embedded objects (RawExtension) and fieldsV1 nested past any real client's: refused before the interpreter's
    recursion runs out."""
    with pytest.raises(StatusError) as err:
        request.decode_body(body, protobuf.CONTENT_TYPE, kind)
    assert err.value.code == 400 and err.value.status["message"] == message


def test_one_embedded_object_decodes():
    assert request.decode_body(_revision_chain(1), protobuf.CONTENT_TYPE, "ControllerRevision")["data"] == {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}


def test_a_list_and_a_status_encode():
    pods = {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "7", "continue": "x"},
            "items": [{"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}]}
    got = protobuf.decode_object(protobuf.encode(pods) or b"")
    assert got["metadata"] == pods["metadata"] and got["items"][0]["metadata"] == {"name": "a"}
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "m",
              "reason": "Invalid", "code": 422, "details": {"name": "p", "kind": "Pod", "causes": [
                  {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"}]}}
    assert protobuf.decode_object(protobuf.encode(status) or b"") == status


def test_kinds_without_a_message_stay_json():
    assert protobuf.encode({"apiVersion": "meta.k8s.io/v1", "kind": "Table", "rows": []}) is None


def test_watch_frames_are_length_prefixed_watch_events():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "resourceVersion": "3"},
          "data": {"a": "1"}}
    frame = protobuf.watch_frame("ADDED", cm)
    assert frame is not None
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    event = S.message_class("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent").FromString(frame[4:])
    assert event.type == "ADDED" and event.object.raw == protobuf.encode(cm)
    assert protobuf.decode_object(event.object.raw) == cm


@pytest.mark.parametrize(("accept", "protobuf_wanted"), [
    ("application/vnd.kubernetes.protobuf, */*", True),  # client-go's default for built-in kinds
    ("application/vnd.kubernetes.protobuf,application/json", True),
    ("application/json, application/vnd.kubernetes.protobuf", False),
    ("application/json;q=0.5, application/vnd.kubernetes.protobuf", True),
    ("application/json", False),
    ("", False),
    ("*/*", False),
    ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json", False),
    ("application/vnd.kubernetes.protobuf;stream=watch", True),
    # client-go's metadata client: the embedded server answers whole objects, which it decodes from JSON only
    ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
     "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json", False),
])
def test_negotiation(accept: str, protobuf_wanted: bool):
    assert protobuf.wants_protobuf(accept) is protobuf_wanted


def test_the_committed_schema_is_what_the_generator_makes():
    """scripts/gen-k8s-proto --check: the descriptors and Go facts match k8s.io/api v0.37.2 in the module cache."""
    root = Path(__file__).resolve().parents[2]
    source = Path(os.environ.get("GOMODCACHE", Path.home() / "go/pkg/mod")) / "k8s.io/api@v0.37.2"
    if not source.exists():
        pytest.skip(f"{source} is absent (scripts/upstream-build puts k8s.io/api in the Go module cache)")
    if importlib.util.find_spec("grpc_tools") is None:
        pytest.skip("grpcio-tools is not installed (the test extra's)")
    done = subprocess.run([sys.executable, str(root / "scripts" / "gen-k8s-proto"), "--check"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
