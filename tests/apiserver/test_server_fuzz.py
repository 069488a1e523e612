"""Objects of every served kind with random values at their fields, over HTTP: never a 500."""

from __future__ import annotations

import json
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

_TEXT = hs.text(alphabet=string.printable, max_size=40)


def _set(obj, path, value):
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


_KEYS = _TEXT | hs.sampled_from(["name", "key", "effect", "value", "kind", "namespace", "cpu", "data", "finalizers"])
_ANY = hs.recursive(hs.none() | hs.booleans() | hs.integers(-2**70, 2**70) | hs.floats(allow_nan=False) | _TEXT
                    | hs.sampled_from(["1", "0.5", "1Gi", "NoSchedule", "Pod", "v1"]),
                    lambda c: hs.lists(c, max_size=3) | hs.dictionaries(_KEYS, c, max_size=3), max_leaves=6)
_BASES = {
    "nodes": ("/api/v1/nodes", {"metadata": {"name": "n1", "labels": {}}, "spec": {"taints": []},
                                "status": {"capacity": {"cpu": "1"}, "allocatable": {"cpu": "1"}, "conditions": []}}),
    "configmaps": ("/api/v1/namespaces/default/configmaps",
                   {"metadata": {"name": "c1", "annotations": {}}, "data": {"a": "b"}, "binaryData": {}}),
    "events": ("/api/v1/namespaces/default/events",
               {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
                "reason": "X", "message": "m", "type": "Normal", "count": 1, "source": {"component": "c"}}),
    "namespaces": ("/api/v1/namespaces", {"metadata": {"name": "ns1", "labels": {}}, "spec": {"finalizers": []}}),
    "serviceaccounts": ("/api/v1/namespaces/default/serviceaccounts",
                        {"metadata": {"name": "s1"}, "secrets": [], "imagePullSecrets": []}),
}


def _paths(obj, prefix=()):
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for key, value in obj.items():
            out += _paths(value, prefix + (key,))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=hs.data(), resource=hs.sampled_from(sorted(_BASES)),
       method=hs.sampled_from(["POST", "PUT", "PATCH-merge", "PATCH-strategic", "PATCH-status"]))
def test_mutated_objects_of_every_kind_never_500(raw, data, resource, method):
    url, base = _BASES[resource]
    muts = data.draw(hs.lists(hs.tuples(hs.sampled_from(_paths(base)), _ANY), min_size=1, max_size=3))
    raw.json("POST", url, base)  # the target of PUT/PATCH (may exist already)
    body = json.loads(json.dumps(base))
    for path, value in muts:
        try:
            _set(body, path, value)
        except (KeyError, IndexError, TypeError):
            continue
    item = f"{url}/{base['metadata']['name']}"
    verb, target, ctype = {"POST": ("POST", url, "application/json"), "PUT": ("PUT", item, "application/json"),
                           "PATCH-merge": ("PATCH", item, "application/merge-patch+json"),
                           "PATCH-strategic": ("PATCH", item, "application/strategic-merge-patch+json"),
                           "PATCH-status": ("PATCH", item + "/status", "application/merge-patch+json")}[method]
    if method == "PATCH-status" and resource not in ("nodes", "namespaces"):
        target = item  # only pods, nodes and namespaces have a status subresource
    code, out, _ = raw.request(verb, target, json.dumps(body).encode(), content_type=ctype, timeout=5)
    assert code < 500, (verb, target, json.dumps(body)[:300], out[:400])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=hs.dictionaries(hs.sampled_from(["gracePeriodSeconds", "preconditions", "dryRun", "propagationPolicy",
                                                "orphanDependents", "kind", "apiVersion"]), _ANY, max_size=4),
       query=hs.sampled_from(["", "?gracePeriodSeconds=0", "?gracePeriodSeconds=-1", "?gracePeriodSeconds=x",
                              "?dryRun=All", "?gracePeriodSeconds=9223372036854775808"]),
       bound=hs.booleans())
def test_random_delete_options_never_500(raw, options, query, bound):
    pods = "/api/v1/namespaces/default/pods"
    raw.json("DELETE", f"{pods}/d?gracePeriodSeconds=0")
    pod = {"metadata": {"name": "d"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert raw.json("POST", pods, pod)[0] == 201
    if bound:
        raw.json("POST", f"{pods}/d/binding", {"metadata": {"name": "d"}, "target": {"kind": "Node", "name": "gpu-0"}})
    code, out, _ = raw.request("DELETE", f"{pods}/d{query}", json.dumps(options).encode(), timeout=5)
    assert code < 500, (query, options, out[:400])
