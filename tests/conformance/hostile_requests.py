"""Hostile Kubernetes API requests, generated from a seed, and a raw HTTP/1.x client to send them.

Each :class:`Case` is a pure description (method, path, query, headers, body bytes, HTTP version) of one
request, plus the valid requests that set up its target first and the writes that must not have happened
after it, so the same list runs unchanged on the embedded and the upstream control plane
(``tests/conformance/test_hostile.py``) or many times on one of them (``benchmarks/hostile.py``).

Families (``FAMILIES``): JSON syntax errors; deep nesting (100-5000); YAML alias bombs (billion laughs,
10^3-10^6 leaves: sigs.k8s.io/yaml's decoder refuses them as "excessive aliasing" before expanding);
bodies near and past kube-apiserver's ``--max-request-body-bytes`` (3 MiB) and upstream's object limits
(ConfigMap data 1 MiB, annotations 256 KiB); wrongly typed fields of Pods, ConfigMaps, Deployments and Jobs;
unknown and duplicate fields with ``fieldValidation`` Strict, Warn, Ignore, absent and bogus; every verb and
content type, patches with bodies ``1``, ``null``, ``[]`` and JSON patches of thousands of ``copy`` ops;
odd names; query parameters (``dryRun``, ``limit``, ``continue``, ``resourceVersion``, selectors, watch
timeouts); bad paths and headers; HTTP/1.0.

The first cases of every family are its fixed catalogue (the edges named above); further cases draw random
variants with ``random.Random(seed)``, so a list depends only on (seed, n) and its case ids are stable.

The client writes the request line and headers itself (``http.client`` and aiohttp would normalise ``..``,
``%`` and HTTP/1.0) over TLS with the cluster's CA, one connection per request (``Connection: close``).
"""

from __future__ import annotations

import base64
import json
import random
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

NS = "hostile"
MIB = 1024 * 1024
BODY_LIMIT = 3 * MIB  # kube-apiserver's default --max-request-body-bytes
UNKNOWN = "zzUnknownField"  # the marker an unknown field carries, looked for in answers
SCHEDULER = "no-such-scheduler"  # pods stay Pending on both sides

JSON = "application/json"
YAML = "application/yaml"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSONPATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


@dataclass(frozen=True)
class Request:
    """One HTTP request as bytes on the wire, less the Host and Authorization headers the sender adds."""

    method: str
    path: str  # sent as is (already percent-encoded where it should be)
    query: str = ""  # sent as is after "?"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    http10: bool = False
    stream: bool = False  # a watch: read the status and what arrives within the read window, then hang up

    @property
    def target(self) -> str:
        return self.path + (f"?{self.query}" if self.query else "")

    def describe(self) -> str:
        ctype = dict(self.headers).get("Content-Type", "")
        return (f"{self.method} {self.target[:160]}{' HTTP/1.0' if self.http10 else ''}"
                f"{f' [{ctype}]' if ctype else ''}{f' body {len(self.body)} B' if self.body else ''}")


@dataclass(frozen=True)
class Case:
    id: str  # "<family> <index>: <label>", stable for a given seed
    family: str
    request: Request
    setup: tuple[Request, ...] = ()  # valid requests that make the target; sent first, not compared
    absent: tuple[str, ...] = ()  # paths (or list queries) that must find nothing afterwards when the answer is
    # not 2xx, and whatever the answer when ``dry`` (an item path: 404; a list query: no items)
    dry: bool = False  # sent with dryRun=All: nothing may be written
    present: tuple[str, ...] = ()  # item paths that must still answer 200 afterwards when ``dry``
    marker: bytes = b""  # a 2xx answer carries it on one side and not the other: a difference
    warning: bool = False  # compare whether a 2xx answer has a Warning header


# ---- the objects -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    name: str
    collection: str  # namespaced collection path

    def item(self, name: str) -> str:
        return f"{self.collection}/{name}"


POD = Kind("Pod", f"/api/v1/namespaces/{NS}/pods")
CM = Kind("ConfigMap", f"/api/v1/namespaces/{NS}/configmaps")
DEPLOY = Kind("Deployment", f"/apis/apps/v1/namespaces/{NS}/deployments")
JOB = Kind("Job", f"/apis/batch/v1/namespaces/{NS}/jobs")
KINDS = (POD, CM, DEPLOY, JOB)


def _container() -> dict:
    return {"name": "c", "image": "mockgpu/workload", "command": ["sleep", "1"]}


def obj(kind: Kind, name: str) -> dict:
    """A valid object of ``kind`` that neither side schedules or runs (no scheduler, 0 replicas, suspended)."""
    meta = {"name": name, "labels": {"hostile": "1"}}
    if kind is POD:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"schedulerName": SCHEDULER, "containers": [_container()]}}
    if kind is CM:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}
    template = {"metadata": {"labels": {"app": name}},
                "spec": {"schedulerName": SCHEDULER, "containers": [_container()]}}
    if kind is DEPLOY:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}}, "template": template}}
    template["spec"]["restartPolicy"] = "Never"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"suspend": True, "template": template}}


def dumps(o: object) -> bytes:
    return json.dumps(o, separators=(",", ":")).encode()


def ctype(value: str) -> tuple[tuple[str, str], ...]:
    return (("Content-Type", value),)


def create(kind: Kind, name: str) -> Request:
    return Request("POST", kind.collection, headers=ctype(JSON), body=dumps(obj(kind, name)))


def set_path(o: dict, path: tuple, value: object) -> dict:
    """``o`` with the value at ``path`` (keys and list indices) replaced; intermediate dicts are made."""
    cur: object = o
    for key in path[:-1]:
        if isinstance(cur, dict):
            cur = cur.setdefault(key, {})
        else:
            cur = cur[key]  # type: ignore[index]
    cur[path[-1]] = value  # type: ignore[index]
    return o


# ---- the families ----------------------------------------------------------------------------------
class Gen:
    """Hands out case ids and target names; one per case, in order."""

    def __init__(self, family: str, rng: random.Random, start: int) -> None:
        self.family, self.rng, self.n = family, rng, start

    def name(self) -> str:
        return f"h{self.n:05d}"

    def case(self, label: str, request: Request, **kw: object) -> Case:
        c = Case(f"{self.family} {self.n:05d}: {label}", self.family, request, **kw)  # type: ignore[arg-type]
        self.n += 1
        return c


Family = Callable[[Gen, bool], Iterator[Case]]  # (gen, random variants?) -> cases

SYNTAX_BODIES: list[tuple[str, bytes]] = [
    ("empty body", b""),
    ("whitespace", b"  \n "),
    ("truncated object", b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":'),
    ("trailing comma", b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME",},}'),
    ("single quotes", b"{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'NAME'}}"),
    ("NaN", b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME","generation":NaN}}'),
    ("bare word", b"hello"),
    ("number 1", b"1"),
    ("null", b"null"),
    ("empty list", b"[]"),
    ("string", b'"ConfigMap"'),
    ("true", b"true"),
    ("two objects", b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME"}}{"a":1}'),
    ("invalid UTF-8", b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME"},"data":{"k":"\xff\xfe"}}'),
    ("UTF-8 BOM", b'\xef\xbb\xbf{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME"}}'),
    ("NUL byte", b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME"}}\x00'),
    ("unterminated string", b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME'),
    ("lone surrogate", b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME"},"data":{"k":"\\ud800"}}'),
    ("huge number", b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME","generation":1' + b"0" * 400
     + b"}}"),
    ("no kind", b'{"apiVersion":"v1","metadata":{"name":"NAME"}}'),
    ("wrong kind", b'{"apiVersion":"v1","kind":"Secret","metadata":{"name":"NAME"}}'),
    ("wrong apiVersion", b'{"apiVersion":"v9","kind":"ConfigMap","metadata":{"name":"NAME"}}'),
    ("kind is a number", b'{"apiVersion":"v1","kind":5,"metadata":{"name":"NAME"}}'),
    ("YAML tab indent", b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: NAME\n"),
    ("YAML two documents", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: NAME}\n---\na: 1\n"),
    ("YAML python tag", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: !!python/name:os.system NAME}\n"),
    ("YAML binary tag", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: NAME}\ndata: {k: !!binary aGk=}\n"),
]


def syntax(g: Gen, variants: bool) -> Iterator[Case]:
    """Malformed bodies on create (ConfigMaps), as JSON and as YAML where the text is YAML."""
    if not variants:
        for label, body in SYNTAX_BODIES:
            name = g.name()
            b = body.replace(b"NAME", name.encode())
            ct = YAML if label.startswith("YAML") else JSON
            yield g.case(f"{label} ({ct})", Request("POST", CM.collection, headers=ctype(ct), body=b),
                         absent=(CM.item(name),))
        return
    name = g.name()
    good = dumps(obj(CM, name))
    cut = g.rng.randrange(1, len(good))
    mode = g.rng.choice(["truncate", "flip", "insert"])
    if mode == "truncate":
        body = good[:cut]
    elif mode == "flip":
        body = good[:cut] + bytes([g.rng.choice(b'{}[],:"\\x0')]) + good[cut + 1:]
    else:
        body = good[:cut] + g.rng.choice([b",", b"}", b"]", b'"', b"\\", b"\x00", b"\n"]) + good[cut:]
    yield g.case(f"mutated JSON ({mode} at {cut})", Request("POST", CM.collection, headers=ctype(JSON), body=body),
                 absent=(CM.item(name),))


DEPTHS = (100, 500, 989, 1000, 2000, 5000)


def _nested(depth: int, leaf: str = '"x"', brackets: str = "{}") -> str:
    if brackets == "{}":
        return '{"a":' * depth + leaf + "}" * depth
    return "[" * depth + leaf + "]" * depth


def nesting(g: Gen, variants: bool) -> Iterator[Case]:
    """JSON and YAML nested 100-5000 deep in fields of a ConfigMap and a Pod (all wrongly typed there)."""
    def one(depth: int, where: str, brackets: str, ct: str) -> Case:
        name = g.name()
        deep = _nested(depth, brackets=brackets)
        if where == "data":
            text = f'{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{deep}}}'
            target = CM
        elif where == "annotations":
            text = (f'{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}",'
                    f'"annotations":{{"a":{deep}}}}}}}')
            target = CM
        elif where == "unknown":
            text = f'{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"{UNKNOWN}":{deep}}}'
            target = CM
        else:  # a pod's container env
            text = (f'{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}"}},"spec":{{"schedulerName":'
                    f'"{SCHEDULER}","containers":[{{"name":"c","image":"x","env":{deep}}}]}}}}')
            target = POD
        # JSON is YAML: the same text sent as application/yaml goes through the YAML decoder
        return g.case(f"{brackets} nested {depth} deep in {where} ({ct})",
                      Request("POST", target.collection, headers=ctype(ct), body=text.encode()),
                      absent=(target.item(name),))

    if not variants:
        for depth in DEPTHS:
            for where, brackets in (("data", "{}"), ("annotations", "[]"), ("unknown", "{}"), ("env", "[]")):
                yield one(depth, where, brackets, JSON)
        for depth in (100, 1000, 5000):
            yield one(depth, "data", "{}", YAML)
            yield one(depth, "env", "[]", YAML)
        return
    yield one(g.rng.randint(100, 5000), g.rng.choice(["data", "annotations", "unknown", "env"]),
              g.rng.choice(["{}", "[]"]), g.rng.choice([JSON, JSON, YAML]))


def alias_bomb(name: str, levels: int, width: int) -> bytes:
    """A billion-laughs ConfigMap: ``width ** levels`` leaves in a few hundred bytes."""
    lines = ["apiVersion: v1", "kind: ConfigMap", f"metadata: {{name: {name}}}", "x0: &x0 [lol, lol, lol]"]
    for i in range(1, levels + 1):
        lines.append(f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * width) + "]")
    lines.append(f"data: {{k: *x{levels}}}")
    return ("\n".join(lines) + "\n").encode()


def aliases(g: Gen, variants: bool) -> Iterator[Case]:
    """YAML alias bombs (10^3-10^6 leaves) and benign aliases (upstream accepts a few)."""
    def bomb(levels: int, width: int, target: str = "create") -> Case:
        name = g.name()
        body = alias_bomb(name, levels, width)
        leaves = 3 * width ** levels
        if target == "create":
            return g.case(f"alias bomb {leaves:.0e} leaves, {len(body)} B (create)",
                          Request("POST", CM.collection, headers=ctype(YAML), body=body), absent=(CM.item(name),))
        return g.case(f"alias bomb {leaves:.0e} leaves, {len(body)} B (apply patch)",
                      Request("PATCH", CM.item(name), query="fieldManager=hostile", headers=ctype(APPLY), body=body),
                      setup=(create(CM, name),))

    if not variants:
        for levels, width in ((3, 10), (4, 10), (5, 10), (3, 40)):
            yield bomb(levels, width)
        yield bomb(4, 10, "apply")
        name = g.name()
        benign = (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: &l {{a: b}}\n"
                  f"  annotations: *l\ndata: *l\n").encode()
        yield g.case("three uses of one anchor (create)", Request("POST", CM.collection, headers=ctype(YAML),
                                                                     body=benign))
        name = g.name()
        undefined = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: *nope\n".encode()
        yield g.case("undefined alias (create)", Request("POST", CM.collection, headers=ctype(YAML), body=undefined),
                     absent=(CM.item(name),))
        name = g.name()
        merge = (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\nbase: &b {{k: v}}\n"
                 f"data: {{<<: *b, j: w}}\n").encode()
        yield g.case("merge key << (create)", Request("POST", CM.collection, headers=ctype(YAML), body=merge))
        return
    yield bomb(g.rng.randint(2, 5), g.rng.choice([5, 8, 10]))


SIZES = (MIB - 200, MIB + 1, 2 * MIB, BODY_LIMIT - 300, BODY_LIMIT + 1, 4 * MIB)


def sizes(g: Gen, variants: bool) -> Iterator[Case]:
    """Huge strings near and past the object limits and the 3 MiB body limit; a huge header and URL."""
    def one(size: int, where: str, ct: str = JSON) -> Case:
        name = g.name()
        if where == "configmap data":
            o = obj(CM, name)
            o["data"] = {"k": ""}
            target = CM
        elif where == "annotation":
            o = obj(CM, name)
            o["metadata"]["annotations"] = {"k": ""}
            target = CM
        else:  # a pod's command, which no validation bounds
            o = obj(POD, name)
            target = POD
        pad = size - len(dumps(o))
        filler = "x" * max(pad, 1)
        if where == "configmap data":
            o["data"]["k"] = filler
        elif where == "annotation":
            o["metadata"]["annotations"]["k"] = filler
        else:
            o["spec"]["containers"][0]["command"] = ["echo", filler]
        body = dumps(o)
        if ct == YAML:
            body = body  # JSON is YAML
        return g.case(f"{where} body {size} B ({ct})", Request("POST", target.collection, headers=ctype(ct),
                                                                body=body), absent=(target.item(name),))

    if not variants:
        for size in SIZES:
            for where in ("configmap data", "annotation", "pod command"):
                yield one(size, where)
        yield one(BODY_LIMIT + 1, "configmap data", YAML)
        yield one(2 * MIB, "pod command", YAML)
        yield g.case("header of 16 KiB", Request("GET", CM.collection, headers=(("X-Hostile", "h" * 16384),)))
        yield g.case("header of 1.5 MiB", Request("GET", CM.collection,
                                                  headers=(("X-Hostile", "h" * (MIB + MIB // 2)),)))
        yield g.case("200 headers", Request("GET", CM.collection,
                                            headers=tuple((f"X-H{i}", "v") for i in range(200))))
        yield g.case("URL of 9 KiB", Request("GET", CM.item("a" * 9000)))
        yield g.case("query of 64 KiB", Request("GET", CM.collection, query="labelSelector=" + "a" * 65536))
        return
    yield one(g.rng.choice([g.rng.randint(MIB - 4096, MIB + 4096), g.rng.randint(BODY_LIMIT - 4096, BODY_LIMIT + 4096),
                            g.rng.randint(256 * 1024 - 512, 256 * 1024 + 512)]),
              g.rng.choice(["configmap data", "annotation", "pod command"]))


BAD_VALUES: list[object] = [1, -1, 1.5, "x", "1", True, None, [], {}, ["x"], {"a": 1}, 2 ** 63, -(2 ** 63) - 1]
TYPED_FIELDS: dict[str, list[tuple]] = {  # kind name -> field paths (keys and indices)
    "Pod": [("spec", "volumes"), ("spec", "containers"), ("spec", "containers", 0), ("spec", "containers", 0, "name"),
            ("spec", "containers", 0, "command"), ("spec", "containers", 0, "ports"),
            ("spec", "containers", 0, "env"), ("spec", "containers", 0, "resources"),
            ("spec", "containers", 0, "resources", "limits"), ("spec", "restartPolicy"),
            ("spec", "terminationGracePeriodSeconds"), ("spec", "nodeSelector"), ("spec", "hostNetwork"),
            ("spec", "priority"), ("spec", "tolerations"), ("spec", "affinity"), ("spec",),
            ("metadata", "labels"), ("metadata", "annotations"), ("metadata", "name"), ("metadata",),
            ("metadata", "finalizers"), ("metadata", "ownerReferences"), ("status",)],
    "ConfigMap": [("data",), ("data", "k"), ("binaryData",), ("binaryData", "b"), ("immutable",),
                  ("metadata", "labels"), ("metadata", "labels", "a"), ("metadata", "generateName"),
                  ("metadata", "namespace"), ("metadata", "resourceVersion"), ("metadata", "uid")],
    "Deployment": [("spec", "replicas"), ("spec", "selector"), ("spec", "selector", "matchLabels"),
                   ("spec", "template"), ("spec", "template", "spec", "containers"), ("spec", "strategy"),
                   ("spec", "strategy", "type"), ("spec", "minReadySeconds"), ("spec", "paused"),
                   ("spec", "revisionHistoryLimit"), ("spec", "progressDeadlineSeconds")],
    "Job": [("spec", "completions"), ("spec", "parallelism"), ("spec", "backoffLimit"), ("spec", "suspend"),
            ("spec", "template"), ("spec", "completionMode"), ("spec", "activeDeadlineSeconds"),
            ("spec", "ttlSecondsAfterFinished"), ("spec", "template", "spec", "restartPolicy"),
            ("spec", "podFailurePolicy")],
}
KIND_BY_NAME = {k.name: k for k in KINDS}


def types(g: Gen, variants: bool) -> Iterator[Case]:
    """Wrongly typed (or out of range) fields on create, as JSON."""
    def one(kind: Kind, path: tuple, value: object) -> Case:
        name = g.name()
        o = set_path(obj(kind, name), path, value)
        if path in (("metadata", "name"), ("metadata",)):
            return g.case(f"{kind.name} {'.'.join(map(str, path))} = {json.dumps(value)}",
                          Request("POST", kind.collection, headers=ctype(JSON), body=dumps(o)))
        return g.case(f"{kind.name} {'.'.join(map(str, path))} = {json.dumps(value)}",
                      Request("POST", kind.collection, headers=ctype(JSON), body=dumps(o)), absent=(kind.item(name),))

    if not variants:
        for kname, paths in TYPED_FIELDS.items():
            for path in paths:
                yield one(KIND_BY_NAME[kname], path, "x" if path[-1] != "name" else 5)
        yield one(POD, ("spec", "volumes"), ["x"])  # the issue's case
        return
    kname = g.rng.choice(sorted(TYPED_FIELDS))
    yield one(KIND_BY_NAME[kname], g.rng.choice(TYPED_FIELDS[kname]), g.rng.choice(BAD_VALUES))


VALIDATION = (None, "Strict", "Warn", "Ignore", "bogus", "strict", "")
UNKNOWN_AT: dict[str, tuple] = {"top": (UNKNOWN,), "metadata": ("metadata", UNKNOWN),
                                "spec": ("spec", UNKNOWN), "container": ("spec", "containers", 0, UNKNOWN)}


def unknown(g: Gen, variants: bool) -> Iterator[Case]:
    """Unknown fields and duplicate keys, with every fieldValidation, on create, update and merge patch."""
    def one(where: str, validation: str | None, verb: str, dup: bool = False) -> Case:
        name = g.name()
        if verb == "patch" and where in ("spec", "container"):
            where = "metadata"  # a merge patch of a ConfigMap: the field at its top or in its metadata
        kind = POD if where in ("spec", "container") else CM
        q = "" if validation is None else f"fieldValidation={validation}"
        o = obj(kind, name)
        if dup:
            text = dumps(o).decode().replace('"name":"' + name + '"', f'"name":"{name}","name":"{name}"', 1)
            label = "duplicate metadata.name"
        else:
            set_path(o, UNKNOWN_AT[where], "zz")
            text = dumps(o).decode()
            label = f"unknown field in {where}"
        label += f", fieldValidation={validation if validation is not None else '(absent)'}, {verb}"
        if verb == "create":
            return g.case(label, Request("POST", kind.collection, query=q, headers=ctype(JSON), body=text.encode()),
                          marker=UNKNOWN.encode(), warning=True)
        if verb == "update":
            return g.case(label, Request("PUT", kind.item(name), query=q, headers=ctype(JSON), body=text.encode()),
                          setup=(create(kind, name),), marker=UNKNOWN.encode(), warning=True)
        return g.case(label, Request("PATCH", kind.item(name), query=q, headers=ctype(MERGE), body=text.encode()),
                      setup=(create(kind, name),), marker=UNKNOWN.encode(), warning=True)

    if not variants:
        for validation in VALIDATION:
            for where in UNKNOWN_AT:
                yield one(where, validation, "create")
            yield one("top", validation, "update")
            yield one("metadata", validation, "patch")
            yield one("top", validation, "create", dup=True)
        return
    yield one(g.rng.choice(list(UNKNOWN_AT)), g.rng.choice(VALIDATION), g.rng.choice(["create", "update", "patch"]),
              dup=g.rng.random() < 0.2)


PATCH_BODIES: list[tuple[str, bytes]] = [("1", b"1"), ("null", b"null"), ("[]", b"[]"), ("{}", b"{}"),
                                         ('"x"', b'"x"'), ("true", b"true"), ("empty", b""),
                                         ("invalid JSON", b'{"metadata":'), ("[1]", b"[1]"), ("[null]", b"[null]"),
                                         ("labels: 1", b'{"metadata":{"labels":1}}'),
                                         ("labels null", b'{"metadata":{"labels":null}}'),
                                         ("metadata: []", b'{"metadata":[]}'),
                                         ("$patch: delete", b'{"$patch":"delete"}'),
                                         ("$patch: bogus", b'{"metadata":{"$patch":"bogus"}}'),
                                         ("$retainKeys garbage", b'{"spec":{"$retainKeys":5}}'),
                                         ("name change", b'{"metadata":{"name":"other"}}'),
                                         ("kind change", b'{"kind":"Secret"}')]
JSON_PATCHES: list[tuple[str, object]] = [
    ("op missing", [{"path": "/metadata/labels/x", "value": "y"}]),
    ("op bogus", [{"op": "frob", "path": "/metadata/labels/x", "value": "y"}]),
    ("path missing", [{"op": "add", "value": "y"}]),
    ("path to nowhere", [{"op": "add", "path": "/no/such/place", "value": "y"}]),
    ("remove missing", [{"op": "remove", "path": "/metadata/labels/nope"}]),
    ("test fails", [{"op": "test", "path": "/metadata/name", "value": "other"}]),
    ("replace name", [{"op": "replace", "path": "/metadata/name", "value": "other"}]),
    ("replace root", [{"op": "replace", "path": "", "value": {}}]),
    ("remove metadata", [{"op": "remove", "path": "/metadata"}]),
    ("copy from nowhere", [{"op": "copy", "from": "/nope", "path": "/metadata/labels/x"}]),
    ("move into itself", [{"op": "move", "from": "/metadata", "path": "/metadata/labels"}]),
    ("bad pointer ~2", [{"op": "add", "path": "/metadata/labels/a~2b", "value": "y"}]),
    ("array index -1", [{"op": "add", "path": "/metadata/finalizers/-1", "value": "y"}]),
    ("array index 99", [{"op": "add", "path": "/metadata/finalizers/99", "value": "a.io/y"}]),
    ("op is a number", [{"op": 1, "path": "/metadata/labels/x"}]),
    ("value wrongly typed", [{"op": "add", "path": "/metadata/labels", "value": 5}]),
]


def copy_bomb(kind: Kind, name: str, ops: int, chunk: int) -> tuple[Request, bytes]:
    """A target with one ``chunk``-byte string and a JSON patch copying it ``ops`` times."""
    o = obj(kind, name)
    if kind is CM:
        o["data"] = {"k": "x" * chunk}
        src, dst = "/data/k", "/data/k{i}"
    else:  # a Deployment's pod template args: no size validation
        o["spec"]["template"]["spec"]["containers"][0]["args"] = ["x" * chunk]
        src, dst = "/spec/template/spec/containers/0/args/0", "/spec/template/spec/containers/0/args/-"
    body = dumps([{"op": "copy", "from": src, "path": dst.format(i=i)} for i in range(ops)])
    return Request("POST", kind.collection, headers=ctype(JSON), body=dumps(o)), body


def patches(g: Gen, variants: bool) -> Iterator[Case]:
    """Merge, strategic-merge, JSON and apply patches with odd bodies; JSON patches of many copy ops."""
    def one(kind: Kind, ct: str, label: str, body: bytes, query: str = "") -> Case:
        name = g.name()
        return g.case(f"{kind.name} {ct.split('/')[1]} {label}",
                      Request("PATCH", kind.item(name), query=query, headers=ctype(ct), body=body),
                      setup=(create(kind, name),))

    def bomb(kind: Kind, ops: int, chunk: int) -> Case:
        name = g.name()
        setup, body = copy_bomb(kind, name, ops, chunk)
        return g.case(f"{kind.name} json-patch of {ops} copy ops of {chunk} B ({len(body)} B body)",
                      Request("PATCH", kind.item(name), headers=ctype(JSONPATCH), body=body), setup=(setup,))

    if not variants:
        for ct in (MERGE, STRATEGIC, JSONPATCH, APPLY):
            for label, body in PATCH_BODIES:
                yield one(CM, ct, label, body, "fieldManager=hostile" if ct == APPLY else "")
        for ct in (MERGE, STRATEGIC):
            for label, body in PATCH_BODIES[:3]:
                yield one(POD, ct, label, body)
        for label, p in JSON_PATCHES:
            yield one(CM, JSONPATCH, label, dumps(p))
        yield one(CM, APPLY, "without fieldManager", dumps(obj(CM, "x")))
        yield one(CM, "text/plain", "a merge patch as text/plain", b'{"metadata":{"labels":{"x":"y"}}}')
        yield one(CM, JSON, "a merge patch as application/json", b'{"metadata":{"labels":{"x":"y"}}}')
        for kind, ops, chunk in ((CM, 40, 100_000), (DEPLOY, 50, 100_000), (DEPLOY, 1000, 4_000),
                                 (CM, 10_001, 1), (DEPLOY, 30, 120_000)):
            yield bomb(kind, ops, chunk)
        return
    r = g.rng.random()
    if r < 0.15:
        yield bomb(g.rng.choice([CM, DEPLOY]), g.rng.choice([20, 40, 200, 2000]), g.rng.choice([1000, 20_000, 80_000]))
    elif r < 0.5:
        label, p = g.rng.choice(JSON_PATCHES)
        yield one(g.rng.choice(KINDS), JSONPATCH, label, dumps(p))
    else:
        label, body = g.rng.choice(PATCH_BODIES)
        yield one(g.rng.choice(KINDS), g.rng.choice([MERGE, STRATEGIC, APPLY]), label, body,
                  "fieldManager=hostile")


METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "FROB")
BODY_TYPES = (JSON, YAML, "text/plain", "application/xml", "application/vnd.kubernetes.protobuf",
              "application/json; charset=utf-16", "multipart/form-data; boundary=x", "", "application/json;;;")


def verbs(g: Gen, variants: bool) -> Iterator[Case]:
    """Every verb on collections and items; content types; Accept headers; updates and deletes that conflict."""
    def one(label: str, req: Request, setup: bool = True, kind: Kind = CM, name: str = "", **kw: object) -> Case:
        return g.case(label, req, setup=(create(kind, name),) if setup else (), **kw)  # type: ignore[arg-type]

    if not variants:
        for kind in KINDS:
            for method in METHODS:
                name = g.name()
                body = dumps(obj(kind, name)) if method in ("POST", "PUT", "PATCH") else b""
                h = ctype(MERGE if method == "PATCH" else JSON) if body else ()
                yield one(f"{method} {kind.name} collection", Request(method, kind.collection, headers=h, body=body),
                          False, kind, name)
                name = g.name()
                body = dumps(obj(kind, name)) if method in ("POST", "PUT", "PATCH") else b""
                yield one(f"{method} {kind.name} item", Request(method, kind.item(name), headers=h, body=body),
                          True, kind, name)
        for ct in BODY_TYPES:
            name = g.name()
            yield g.case(f"create with Content-Type {ct!r}", Request("POST", CM.collection,
                                                                     headers=ctype(ct) if ct else (),
                                                                     body=dumps(obj(CM, name))))
        for accept in ("application/xml", "application/json;as=Table;g=meta.k8s.io;v=v1", "*/*;q=garbage",
                       "application/json;as=Bogus;g=meta.k8s.io;v=v1", "text/html", ""):
            yield g.case(f"list with Accept {accept!r}", Request("GET", CM.collection, headers=(("Accept", accept),)))
        name = g.name()
        yield one("PUT with another name in the body", Request("PUT", CM.item(name), headers=ctype(JSON),
                                                                body=dumps(obj(CM, "other"))), name=name)
        name = g.name()
        yield one("PUT with another namespace in the body", Request(
            "PUT", CM.item(name), headers=ctype(JSON),
            body=dumps(set_path(obj(CM, name), ("metadata", "namespace"), "default"))), name=name)
        name = g.name()
        yield one("PUT of a missing ConfigMap", Request("PUT", CM.item(name), headers=ctype(JSON),
                                                        body=dumps(obj(CM, name))), setup=False, name=name)
        name = g.name()
        yield one("PUT with a stale resourceVersion", Request(
            "PUT", CM.item(name), headers=ctype(JSON),
            body=dumps(set_path(obj(CM, name), ("metadata", "resourceVersion"), "1"))), name=name)
        name = g.name()
        yield one("PUT with resourceVersion abc", Request(
            "PUT", CM.item(name), headers=ctype(JSON),
            body=dumps(set_path(obj(CM, name), ("metadata", "resourceVersion"), "abc"))), name=name)
        name = g.name()
        yield one("create twice (409)", Request("POST", CM.collection, headers=ctype(JSON),
                                                body=dumps(obj(CM, name))), name=name)
        name = g.name()
        yield one("POST to an item path", Request("POST", CM.item(name), headers=ctype(JSON),
                                                  body=dumps(obj(CM, name))), name=name)
        for label, body in (("garbage DeleteOptions", b"garbage"), ("uid precondition mismatch",
                                                                    b'{"preconditions":{"uid":"nope"}}'),
                            ("propagationPolicy bogus", b'{"propagationPolicy":"Bogus"}'),
                            ("gracePeriodSeconds -5", b'{"gracePeriodSeconds":-5}'),
                            ("dryRun as a string", b'{"dryRun":"All"}'), ("DeleteOptions null", b"null")):
            name = g.name()
            yield one(f"DELETE with {label}", Request("DELETE", CM.item(name), headers=ctype(JSON), body=body),
                      name=name)
        for q in ("gracePeriodSeconds=abc", "propagationPolicy=Bogus", "gracePeriodSeconds=-1", "orphanDependents=x"):
            name = g.name()
            yield one(f"DELETE with {q}", Request("DELETE", CM.item(name), query=q), name=name)
        for q in ("labelSelector=hostile-none%3D1", "labelSelector=%21%21", "fieldSelector=bogus%3Dx"):
            yield g.case(f"DELETE collection with {q}", Request("DELETE", CM.collection, query=q))
        return
    kind = g.rng.choice(KINDS)
    method = g.rng.choice(METHODS)
    name = g.name()
    body = dumps(obj(kind, name)) if g.rng.random() < 0.5 else b""
    ct = g.rng.choice(BODY_TYPES)
    item = g.rng.random() < 0.5
    yield one(f"{method} {kind.name} {'item' if item else 'collection'} [{ct}]",
              Request(method, kind.item(name) if item else kind.collection, headers=ctype(ct) if ct else (),
                      body=body), item, kind, name)


ODD_NAMES = [".", "..", "a/b", "%", "%25", "a%2Fb", "%2E", "%2E%2E", "a" * 253, "a" * 254, "Upper", "ünï", "a b",
             "-a", "a-", "a..b", "a.b", "", "a%00b", "*", "~", "a;b", "a?b", "a#b", "0", "a" * 64]


def names(g: Gen, variants: bool) -> Iterator[Case]:
    """Odd names in bodies (create) and in paths (get, delete), for ConfigMaps and Pods."""
    def one(kind: Kind, odd: str, where: str) -> Case:
        enc = odd.encode("utf-8")
        label = f"{kind.name} name {odd[:20]!r}{f' ({len(odd)} chars)' if len(odd) > 20 else ''} in {where}"
        if where == "body":
            return g.case(label, Request("POST", kind.collection, headers=ctype(JSON),
                                         body=dumps(set_path(obj(kind, "x"), ("metadata", "name"), odd))))
        path = kind.collection + "/" + "".join(chr(b) if 0x21 <= b < 0x7F and chr(b) not in " #?" else f"%{b:02X}"
                                                for b in enc)
        if where == "generateName":
            o = obj(kind, "x")
            del o["metadata"]["name"]
            o["metadata"]["generateName"] = odd
            return g.case(label, Request("POST", kind.collection, headers=ctype(JSON), body=dumps(o)))
        method = {"get path": "GET", "delete path": "DELETE", "put path": "PUT"}[where]
        body = dumps(set_path(obj(kind, "x"), ("metadata", "name"), odd)) if method == "PUT" else b""
        return g.case(label, Request(method, path, headers=ctype(JSON) if body else (), body=body))

    if not variants:
        for odd in ODD_NAMES:
            yield one(CM, odd, "body")
            yield one(CM, odd, "get path")
        for odd in (".", "..", "a/b", "Upper", "a" * 254, "ünï"):
            yield one(POD, odd, "body")
            yield one(CM, odd, "delete path")
            yield one(CM, odd, "put path")
            yield one(CM, odd, "generateName")
        return
    odd = "".join(g.rng.choice("aZ.-_/%~ü0 ") for _ in range(g.rng.randint(1, 12)))
    yield one(g.rng.choice([CM, POD]), odd, g.rng.choice(["body", "get path", "generateName"]))


def _b64(raw: bytes) -> str:
    """base64.RawURLEncoding, as kube-apiserver encodes continue tokens (no padding)."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _forged_continue(rv: object, start: str) -> str:
    """A well-formed continue token for a resourceVersion and start key the server never handed out."""
    return _b64(json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":")).encode())


LIST_QUERIES = [
    "limit=-1", "limit=0", "limit=abc", "limit=1.5", "limit=99999999999999999999", "limit=1&limit=2",
    "continue=garbage", "limit=1&continue=garbage", "continue=" + _forged_continue(1, "h"),
    "continue=" + _forged_continue(0, "h"), "continue=" + _forged_continue(-1, "../../"),
    "continue=" + _forged_continue("abc", "h"), "continue=" + _forged_continue(10 ** 15, "h"),
    "continue=" + _b64(b'{"v":"meta.k8s.io/v9","rv":1,"start":"h"}'), "continue=" + _b64(b"not json"),
    "continue=" + _b64(b'{"v":"meta.k8s.io/v1","rv":1,"start":"h"}') + "%3D%3D", "continue=%00",
    "resourceVersion=abc", "resourceVersion=-1", "resourceVersion=0", "resourceVersion=", "resourceVersion=1",
    "resourceVersion=1&resourceVersionMatch=NotOlderThan",
    "resourceVersion=0&resourceVersionMatch=Exact", "resourceVersionMatch=NotOlderThan",
    "resourceVersion=1&resourceVersionMatch=Bogus", "resourceVersion=abc&resourceVersionMatch=NotOlderThan",
    "labelSelector=a%3Db%3Dc", "labelSelector=%21%21", "labelSelector=a+in+%28", "labelSelector=a+in+%28%29",
    "labelSelector=" + "a" * 64 + "%3Db", "labelSelector=a%3D" + "b" * 64, "labelSelector=%3D%3D",
    "labelSelector=a%2Cb%2C%2C", "labelSelector=A%2FB%2FC%3Dd",
    "fieldSelector=spec.nodeName%3Dx", "fieldSelector=foo%3Dbar", "fieldSelector=metadata.name%3D%3Dx",
    "fieldSelector=metadata.name", "fieldSelector=metadata.name%21%3D%3D", "fieldSelector=%3D",
    "timeoutSeconds=abc", "timeoutSeconds=-1", "pretty=x", "allowWatchBookmarks=x", "sendInitialEvents=true",
    "sendInitialEvents=x", "watch=bogus", "includeObject=Bogus",
]
WATCH_QUERIES = ["watch=true&timeoutSeconds=1", "watch=1&timeoutSeconds=abc", "watch=true&timeoutSeconds=-1",
                 "watch=true&timeoutSeconds=0", "watch=true&timeoutSeconds=99999999999999999999",
                 "watch=true&resourceVersion=abc&timeoutSeconds=1", "watch=true&resourceVersion=1&timeoutSeconds=1",
                 "watch=true&resourceVersion=99999999999&timeoutSeconds=1",
                 "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
                 "&timeoutSeconds=1", "watch=true&sendInitialEvents=true&timeoutSeconds=1",
                 "watch=true&labelSelector=%21%21&timeoutSeconds=1", "watch=true&fieldSelector=foo%3Dbar",
                 "watch=true&limit=-1&timeoutSeconds=1", "watch=true&continue=garbage&timeoutSeconds=1"]
DRY_RUNS = ["dryRun=All", "dryRun=bogus", "dryRun=all", "dryRun=", "dryRun=All&dryRun=bogus", "dryRun=All&dryRun=All"]


def queries(g: Gen, variants: bool) -> Iterator[Case]:
    """List and watch query parameters, and dryRun on every write (the object must not exist afterwards)."""
    def dry(kind: Kind, verb: str, q: str) -> Case:
        name = g.name()
        o = obj(kind, name)
        label = f"{kind.name} {verb} {q}"
        is_dry = "dryRun=All" in q and "bogus" not in q
        if verb == "create":
            return g.case(label, Request("POST", kind.collection, query=q, headers=ctype(JSON), body=dumps(o)),
                          absent=(kind.item(name),), dry=is_dry)
        # the object exists; a dry update or patch must leave it without the label "dry=<its name>"
        setup = (create(kind, name),)
        if verb == "update":
            req = Request("PUT", kind.item(name), query=q, headers=ctype(JSON),
                          body=dumps(set_path(o, ("metadata", "labels", "dry"), name)))
            check = f"{kind.collection}?labelSelector=dry%3D{name}"
        elif verb == "patch":
            req = Request("PATCH", kind.item(name), query=q, headers=ctype(MERGE),
                          body=dumps({"metadata": {"labels": {"dry": name}}}))
            check = f"{kind.collection}?labelSelector=dry%3D{name}"
        else:
            req = Request("DELETE", kind.item(name), query=q)
            return g.case(label, req, setup=setup, dry=is_dry, present=(kind.item(name),))
        return g.case(label, req, setup=setup, absent=(check,), dry=is_dry)

    if not variants:
        for kind in (CM, POD):
            for q in LIST_QUERIES:
                # watch=bogus is a watch upstream (any value but 0, f, false is true): read it as one
                yield g.case(f"list {kind.name} {q[:60]}", Request("GET", kind.collection, query=q,
                                                                   stream="watch=" in q))
        # a resourceVersion from the future: both wait (3 s upstream) for it, then 504
        yield g.case("list ConfigMap resourceVersion=999999999999", Request("GET", CM.collection,
                                                                            query="resourceVersion=999999999999"))
        for q in WATCH_QUERIES:
            yield g.case(f"watch ConfigMap {q}", Request("GET", CM.collection, query=q, stream=True))
        for kind in KINDS:
            for q in DRY_RUNS:
                yield dry(kind, "create", q)
        for verb in ("update", "patch", "delete"):
            for q in DRY_RUNS[:3]:
                yield dry(CM, verb, q)
        return
    r = g.rng.random()
    if r < 0.3:
        yield dry(g.rng.choice(KINDS), g.rng.choice(["create", "update", "patch", "delete"]), g.rng.choice(DRY_RUNS))
    elif r < 0.4:
        yield g.case(f"watch ConfigMap {WATCH_QUERIES[0]}", Request("GET", CM.collection, query=WATCH_QUERIES[0],
                                                                    stream=True))
    else:
        a, b = g.rng.choice(LIST_QUERIES), g.rng.choice(LIST_QUERIES)
        q = a if g.rng.random() < 0.5 else f"{a}&{b}"
        g.rng.choice((CM, POD))  # a draw kept so that the seeded sequence stays the one measured in the README
        kind = g.rng.choice((CM, POD))
        yield g.case(f"list {kind.name} {q[:60]}", Request("GET", kind.collection, query=q, stream="watch=" in q))


BAD_PATHS = ["/api/v1/namespaces/hostile/nosuch", "/api/v2/namespaces/hostile/configmaps", "/apis/apps/v9/deployments",
             "/api/v1/namespaces/hostile/pods/x/nosub", "//api//v1//namespaces//hostile//configmaps",
             "/api/v1/namespaces/../configmaps", "/api/v1/namespaces/hostile/configmaps/%zz",
             "/api/v1/namespaces/hostile/configmaps/a/b/c/d", "/api/v1/namespaces/no-such-ns/configmaps",
             "/api/v1/namespaces/Bad_NS/configmaps", "/api/v1/namespaces//configmaps", "/api/v1/configmaps/x",
             "/api/v1/namespaces/hostile/pods/x/log?tailLines=abc", "/api/v1/namespaces/hostile/pods/x/exec",
             "/api/v1/namespaces/hostile/pods/x/status", "/api/v1/nodes/x/proxy/etc/passwd", "/apis",
             "/apis/apps", "/apis/nosuch.io/v1/things", "/openapi/v3/garbage", "/version/x", "/api/v1/watch",
             "/api/v1/watch/namespaces/hostile/configmaps?timeoutSeconds=1", "/", "/%2e%2e/%2e%2e/etc/passwd",
             "/api/v1/namespaces/hostile/configmaps/x/../../secrets", "/api/v1/namespaces/hostile%2Fconfigmaps",
             "/api/v1/namespaces/hostile/configmaps\\x", "/healthz/x", "/readyz?verbose=x", "/livez/nosuch",
             "*", "api/v1/namespaces"]


def paths(g: Gen, variants: bool) -> Iterator[Case]:
    """Bad paths (sent verbatim), unauthenticated-looking headers, and HTTP/1.0 requests."""
    if not variants:
        for p in BAD_PATHS:
            path, _, q = p.partition("?")
            for method in ("GET", "DELETE"):
                yield g.case(f"{method} {p}", Request(method, path, query=q, stream="watch" in p))
        name = g.name()
        for label, req in [
            ("HTTP/1.0 list", Request("GET", CM.collection, http10=True)),
            ("HTTP/1.0 create", Request("POST", CM.collection, headers=ctype(JSON), body=dumps(obj(CM, name)),
                                        http10=True)),
            ("HTTP/1.0 watch", Request("GET", CM.collection, query="watch=true&timeoutSeconds=1", http10=True,
                                       stream=True)),
            ("HTTP/1.0 watch, no timeout", Request("GET", CM.collection, query="watch=true", http10=True,
                                                   stream=True)),
            ("HTTP/1.0 /readyz", Request("GET", "/readyz", http10=True)),
            ("HTTP/1.0 bad path", Request("GET", "/nosuch", http10=True)),
            ("chunked create", Request("POST", CM.collection, headers=ctype(JSON) + (("Transfer-Encoding",
                                                                                      "chunked"),),
                                       body=b"5\r\n{\"a\":\r\n0\r\n\r\n")),
            ("Content-Length shorter than the body", Request("POST", CM.collection, headers=ctype(JSON) + (
                ("X-Content-Length", "5"),), body=dumps(obj(CM, name + "-short")))),
            ("Expect: 100-continue", Request("POST", CM.collection, headers=ctype(JSON) + (("Expect",
                                                                                            "100-continue"),),
                                             body=dumps(obj(CM, name + "-expect")))),
            ("Expect: bogus", Request("GET", CM.collection, headers=(("Expect", "bogus"),))),
            ("header with a NUL", Request("GET", CM.collection, headers=(("X-Hostile", "a\x00b"),))),
            ("header without a name", Request("GET", CM.collection, headers=(("", "x"),))),
        ]:
            yield g.case(label, req)
        return
    p = g.rng.choice(BAD_PATHS)
    path, _, q = p.partition("?")
    yield g.case(f"{g.rng.choice(['GET', 'HEAD'])} {p}", Request("GET", path, query=q, stream="watch" in p,
                                                               http10=g.rng.random() < 0.2))


FAMILIES: dict[str, Family] = {"syntax": syntax, "nesting": nesting, "aliases": aliases, "sizes": sizes,
                               "types": types, "unknown": unknown, "patches": patches, "verbs": verbs,
                               "names": names, "queries": queries, "paths": paths}
# how often each family is drawn for random variants past the catalogue (the big bodies rarely)
WEIGHTS = {"syntax": 8, "nesting": 3, "aliases": 1, "sizes": 1, "types": 14, "unknown": 10, "patches": 12,
           "verbs": 10, "names": 8, "queries": 14, "paths": 6}


def generate(n: int, seed: int = 17) -> list[Case]:
    """The catalogue of every family (in family order), then random variants up to ``n`` cases in all
    (the whole catalogue, ~900 cases, whatever ``n``). Case ids number the cases in order."""
    rng = random.Random(seed)
    out: list[Case] = []
    for fam, fn in FAMILIES.items():
        out.extend(fn(Gen(fam, rng, len(out)), False))
    fams = list(WEIGHTS)
    weights = [WEIGHTS[f] for f in fams]
    while len(out) < n:
        fam = rng.choices(fams, weights)[0]
        out.extend(FAMILIES[fam](Gen(fam, rng, len(out)), True))
    return out


# ---- the raw client --------------------------------------------------------------------------------
@dataclass
class Answer:
    status: int  # 0: no status line (timeout, reset)
    reason: str = ""  # a Status body's reason, else the HTTP reason phrase
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""  # the first KEEP bytes
    seconds: float = 0.0
    error: str = ""

    @property
    def klass(self) -> str:
        return f"{self.status // 100}xx" if self.status else (self.error or "no answer")

    def brief(self) -> str:
        if not self.status:
            return f"no answer ({self.error}) after {self.seconds:.1f} s"
        return f"{self.status} {self.reason} {self.message[:160]!r}"


KEEP = 256 * 1024


@dataclass
class Target:
    """Where and how to send: 127.0.0.1:port, the cluster's CA and bearer token."""

    port: int
    ca: str
    token: str
    ctx: ssl.SSLContext = field(init=False)

    def __post_init__(self) -> None:
        self.ctx = ssl.create_default_context(cafile=self.ca)

    def send(self, req: Request, timeout: float = 30.0, window: float = 1.2) -> Answer:
        """Send ``req``; wait up to ``timeout`` for the answer (``window`` for a watch's body)."""
        t0 = time.perf_counter()
        version = "HTTP/1.0" if req.http10 else "HTTP/1.1"
        head = [f"{req.method} {req.target} {version}", f"Host: 127.0.0.1:{self.port}",
                f"Authorization: Bearer {self.token}", "Connection: close"]
        has_te = any(k.lower() == "transfer-encoding" for k, _ in req.headers)
        head += [f"{k}: {v}" for k, v in req.headers if k != "X-Content-Length"]
        if not has_te and (req.body or req.method in ("POST", "PUT", "PATCH")):
            length = dict(req.headers).get("X-Content-Length", str(len(req.body)))
            head.append(f"Content-Length: {length}")
        wire = ("\r\n".join(head) + "\r\n\r\n").encode("utf-8", "surrogateescape") + req.body
        try:
            raw = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        except OSError as exc:
            return Answer(0, error=f"connect: {exc}", seconds=time.perf_counter() - t0)
        try:
            with self.ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                s.settimeout(timeout)
                try:
                    s.sendall(wire)
                except OSError:
                    pass  # the server may answer (413) and hang up before it has read everything
                return self._read(s, req, t0, timeout, window)
        except TimeoutError:
            return Answer(0, error="timeout", seconds=time.perf_counter() - t0)
        except (OSError, ssl.SSLError) as exc:
            return Answer(0, error=type(exc).__name__, seconds=time.perf_counter() - t0)

    @staticmethod
    def _read(s: ssl.SSLSocket, req: Request, t0: float, timeout: float, window: float) -> Answer:
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    if not buf:
                        return Answer(0, error="closed without an answer", seconds=time.perf_counter() - t0)
                    break
                buf += chunk
            head, _, rest = buf.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 1") or head.startswith(b"HTTP/1.1 101"):
                break
            buf = rest  # an interim answer (100 Continue): the final one follows
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        headers: dict[str, str] = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            key = k.strip().lower()
            headers[key] = f"{headers[key]}, {v.strip()}" if key in headers else v.strip()
        seconds = time.perf_counter() - t0
        body = rest
        if req.method != "HEAD" and status not in (204, 304):
            deadline = time.perf_counter() + (window if req.stream else timeout)
            length = int(headers["content-length"]) if headers.get("content-length", "").isdigit() else None
            try:
                while length is None or len(body) < length:
                    left = deadline - time.perf_counter()
                    if left <= 0:
                        break
                    s.settimeout(left)
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    if len(body) < KEEP:
                        body += chunk
                    if "chunked" in headers.get("transfer-encoding", "") and body.endswith(b"0\r\n\r\n"):
                        break
            except (TimeoutError, OSError, ssl.SSLError):
                pass
        if "chunked" in headers.get("transfer-encoding", ""):
            body = _dechunk(body)
        reason, message = " ".join(parts[2:]), ""
        if body[:1] == b"{":
            try:
                st = json.loads(body)
                if isinstance(st, dict) and st.get("kind") == "Status":
                    reason, message = st.get("reason") or reason, st.get("message") or ""
            except ValueError:
                pass
        elif status >= 400:
            message = body[:300].decode("utf-8", "replace").strip()
        return Answer(status, reason, message, headers, body[:KEEP], seconds)


def _dechunk(data: bytes) -> bytes:
    out, i = b"", 0
    while i < len(data):
        j = data.find(b"\r\n", i)
        if j < 0:
            break
        try:
            size = int(data[i:j].split(b";")[0], 16)
        except ValueError:
            return data
        if size == 0:
            break
        out += data[j + 2:j + 2 + size]
        i = j + 2 + size + 2
    return out


def namespace_requests() -> list[Request]:
    """Make the suite's namespace (its default ServiceAccount is awaited by the caller)."""
    return [Request("POST", "/api/v1/namespaces", headers=ctype(JSON),
                    body=dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}))]


def ensure_namespace(t: Target, timeout: float = 60.0) -> None:
    """Create the namespace and wait for its default ServiceAccount (upstream refuses pods until it exists)."""
    for r in namespace_requests():
        a = t.send(r)
        assert a.status in (201, 409), a.brief()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if t.send(Request("GET", f"/api/v1/namespaces/{NS}/serviceaccounts/default")).status == 200:
            return
        time.sleep(0.2)
    raise AssertionError(f"no default ServiceAccount in namespace {NS}")


def run_case(t: Target, case: Case, timeout: float = 30.0) -> tuple[Answer, list[str]]:
    """Send a case's setup, then its request; returns the answer and the writes that should not have
    happened but did (an ``absent`` path found after a refusal or a dry run, a ``present`` one gone)."""
    for r in case.setup:
        t.send(r, timeout)
    answer = t.send(case.request, timeout)
    wrote = []
    if case.dry or not 200 <= answer.status < 300:
        for p in case.absent:
            path, _, q = p.partition("?")
            a = t.send(Request("GET", path, query=q), timeout)
            if q:
                try:
                    found = a.status != 200 or bool(json.loads(a.body).get("items"))
                except ValueError:
                    found = True
            else:
                found = a.status != 404
            if found:
                what = "dry run" if case.dry else f"refused with {answer.status or answer.error}"
                wrote.append(f"{p} found after a {what} (GET: {a.status})")
    if case.dry:
        for p in case.present:
            a = t.send(Request("GET", p), timeout)
            if a.status != 200:
                wrote.append(f"{p} gone after a dry-run delete (GET: {a.status})")
    return answer, wrote
