"""Protobuf, side by side: a client-go program (tests/goclient; protobuf bodies, Accept, DeleteOptions and the watch
stream, as every Go client by default) and raw protobuf requests, on the embedded and the upstream API server.
Compared: what the client decodes (objects with uids, versions and times normalised away) and the Status of each
error (code, reason, message). Same bytes are not required; the same decoded objects and Status are."""

from __future__ import annotations

import re
from typing import Any

from goclient_build import require_goclient, run_scenario
from kubernetes.client import ApiClient

from mockgpu.control.apiserver import protobuf

PB = protobuf.CONTENT_TYPE
_VOLATILE = re.compile(r"^(uid|resourceVersion|creationTimestamp|time|lastTransitionTime|startTime)$")
_UID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def scrub(value: Any) -> Any:
    """Values that differ between any two servers (uids, versions, times) replaced by their field name."""
    if isinstance(value, dict):
        return {k: (f"<{k}>" if _VOLATILE.match(k) and isinstance(v, str) else scrub(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        return _UID_TEXT.sub("<uid>", value)
    return value


def split_known(value: Any, found: dict[str, list[Any]] | None = None) -> tuple[Any, dict[str, list[Any]]]:
    """``value`` without what is not about protobuf and is compared on its own: whether ``managedFields`` are kept
    (their entries hold times and the client's user agent; the kubectl battery compares their content), and a pod's
    ``metadata.generation`` (upstream 1.37's pod generation tracking, not kept by the embedded server yet:
    known_differences.py)."""
    found = {"managedFields": [], "pod generation": []} if found is None else found
    if isinstance(value, list | tuple):
        return type(value)(split_known(v, found)[0] for v in value), found
    if not isinstance(value, dict):
        return value, found
    out = {k: split_known(v, found)[0] for k, v in value.items()}
    meta = out.get("metadata")
    if isinstance(meta, dict):
        meta = out["metadata"] = dict(meta)
        if "managedFields" in meta:
            found["managedFields"].append(bool(meta.pop("managedFields")))
        if isinstance(out.get("spec"), dict) and "containers" in out["spec"] and "generation" in meta:
            found["pod generation"].append(meta.pop("generation"))
    return out, found


def differences(emb: Any, up: Any) -> list[tuple[str, str]]:
    (emb_core, emb_found), (up_core, up_found) = split_known(emb), split_known(up)
    diffs = [] if emb_core == up_core else [("outcome", f"embedded {emb_core} != upstream {up_core}")]
    for kind, got in emb_found.items():
        if got != up_found[kind]:
            diffs.append((kind, f"embedded has {got or 'none'}, upstream {up_found[kind]}"))
    return diffs


def _unknown(api_version: str, kind: str, raw: bytes = b"") -> bytes:
    unknown = protobuf.schema().message_class("k8s.io.apimachinery.pkg.runtime.Unknown")()
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind, unknown.raw = api_version, kind, raw
    return protobuf.MAGIC + unknown.SerializeToString()


def raw_battery(api: ApiClient, ns: str) -> list[tuple[str, Any]]:
    """(case, what came back: status code, content type, the decoded body) of raw protobuf requests."""
    def call(method: str, path: str, body: bytes | None = None, accept: str = f"{PB}, */*") -> Any:
        headers = {"Content-Type": PB, "Accept": accept}
        api.update_params_for_auth(headers, [], ["BearerToken"], path, method, body)
        r = api.rest_client.pool_manager.request(method, api.configuration.host + path, body=body, headers=headers,
                                                 preload_content=True)
        ctype = r.headers.get("Content-Type", "")
        data = r.data
        decoded = protobuf.decode_object(data) if data.startswith(protobuf.MAGIC) else data.decode(errors="replace")
        return r.status, ctype.split(";")[0], scrub(decoded)

    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pb", "labels": {"a": "b"}},
          "data": {"k": ""}, "binaryData": {"b": "AAEC"}, "immutable": False}
    base = f"/api/v1/namespaces/{ns}/configmaps"
    return [
        ("create a namespace (protobuf body)", call("POST", "/api/v1/namespaces", protobuf.encode(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))),
        ("create a ConfigMap, answered in protobuf", call("POST", base, protobuf.encode(cm))),
        ("get it in protobuf", call("GET", f"{base}/pb")),
        ("list in protobuf", call("GET", f"{base}?labelSelector=a%3Db")),
        ("a missing object: the Status in protobuf", call("GET", f"{base}/missing")),
        ("a body of another known kind", call("POST", base, _unknown("v1", "Secret"))),
        ("a body of an unknown kind", call("POST", base, _unknown("v1", "Nonsense"))),
        ("a body without the magic", call("POST", base, b'{"kind":"ConfigMap"}')),
        ("a truncated body", call("POST", base, _unknown("v1", "ConfigMap", b"\x0a\xff\xff"))),
        ("delete, a failed precondition (protobuf DeleteOptions)", call("DELETE", f"{base}/pb", protobuf.encode(
            {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": "not-its-uid"}}))),
        ("delete, dry run (protobuf DeleteOptions)", call("DELETE", f"{base}/pb", protobuf.encode(
            {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "dryRun": ["All"]}))),
        ("delete (protobuf DeleteOptions)", call("DELETE", f"{base}/pb", protobuf.encode(
            {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}))),
        ("JSON for a JSON client", call("GET", f"{base}/missing", accept="application/json")[:2]),
    ]


def test_protobuf_battery(report, upstream_cluster, embedded_cluster):
    binary = require_goclient()
    results = {}
    for name, c in (("embedded", embedded_cluster), ("upstream", upstream_cluster)):
        api = c.api_client()
        try:
            steps = [(f"client-go: {step}", scrub(out)) for step, out in run_scenario(
                binary, c.kubeconfig, "pb-go").items()]
            results[name] = steps + raw_battery(api, "pb-raw")
        finally:
            api.close()
    emb = dict(results["embedded"])  # what the cases are about, so that two equal failures cannot pass
    assert emb["client-go: get pod"]["object"]["spec"]["terminationGracePeriodSeconds"] == 0
    assert emb["get it in protobuf"][:2] == (200, PB)
    assert emb["a missing object: the Status in protobuf"][2]["reason"] == "NotFound"
    report.compare("protobuf", results["embedded"], results["upstream"], differences)
