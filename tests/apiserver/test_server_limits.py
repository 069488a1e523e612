"""Issue 17's hostile requests over HTTP: each gets kube-apiserver v1.37.2's answer (codes and messages checked
against it), never a 500 where upstream answers 2xx/4xx, a stall, or a write that should not happen."""

from __future__ import annotations

import base64
import json
import logging
import socket
import ssl
import time

import pytest

NS = "/api/v1/namespaces/default"
CMS = NS + "/configmaps"


def _status(body: bytes) -> dict:
    data = json.loads(body)
    assert data["kind"] == "Status" and data["status"] == "Failure", data
    return data


def _pod(name: str, **container) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "i", **container}]}}


def _cm(raw, name: str = "cm", data: dict | None = None) -> dict:
    code, obj = raw.json("POST", CMS, {"metadata": {"name": name}, "data": data or {"a": "1"}})
    assert code == 201, obj
    return obj


# ---- YAML aliases and nesting -----------------------------------------------------------------------------------

def test_yaml_alias_bomb_is_refused_as_upstream(raw):
    levels = [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 6)]
    body = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\nx:\n  a0: &a0 [" + ",".join("x" * 10) + "]\n  "
            + "\n  ".join(levels) + "\n").encode()  # 10^6 leaves in 300 bytes
    code, data, _ = raw.request("POST", CMS, body, content_type="application/yaml", timeout=30)
    assert code == 400, data[:300]
    assert _status(data)["message"].startswith("the object provided is unrecognized (must be of type ConfigMap): "
                                               "yaml: document contains excessive aliasing (")
    assert raw.request("GET", CMS + "/bomb")[0] == 404


DEPTHS = [  # (depth of the body, upstream's answer): upstream scans JSON up to 10000 levels
    (500, 201), (989, 201), (5000, 201), (10000, 201), (10001, 400), (50000, 400)]


@pytest.mark.parametrize("depth,code", DEPTHS, ids=[f"depth-{d}" for d, _ in DEPTHS])
def test_deep_json_gets_upstreams_answer_without_a_traceback(raw, caplog, depth, code):
    arrays = depth - 1  # the object itself is one level
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":' + b"[" * arrays + b"]" * arrays \
        + b"}"
    with caplog.at_level(logging.ERROR, logger="mockgpu.apiserver"):
        got, data, _ = raw.request("POST", CMS, body)
    assert got == code, data[:300]
    if code == 400:
        assert "json parse error: invalid character '[' exceeded max depth" in _status(data)["message"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# ---- patches ----------------------------------------------------------------------------------------------------

PATCHES = [  # (case, content type, body, upstream's code, its message or None)
    ("merge-number", "merge-patch", b"1", 400,
     "error decoding patch: json: cannot unmarshal number into Go value of type map[string]interface {}"),
    ("merge-null", "merge-patch", b"null", 400, "Invalid JSON Patch"),
    ("strategic-number", "strategic-merge-patch", b"1", 400,
     "json: cannot unmarshal number into Go value of type map[string]interface {}"),
    ("strategic-null", "strategic-merge-patch", b"null", 200, None),
    ("json-null", "json-patch", b"null", 200, None),
    ("json-number", "json-patch", b"1", 400,
     "error decoding patch: json: cannot unmarshal number into Go value of type []handlers.jsonPatchOp"),
    ("json-10001-ops", "json-patch", json.dumps([{"op": "test", "path": "/data/a", "value": "1"}] * 10001).encode(),
     413, "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"),
    ("json-copy-doubling", "json-patch", json.dumps(  # 1.4 kB that would store 8 MB
        [{"op": "add", "path": "/metadata/annotations", "value": {"a": "y" * 1000}}]
        + [{"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/k{i}"}
           for i in range(13)]).encode(), 422, "the server rejected our request due to an error in our request"),
]


@pytest.mark.parametrize("kind,body,code,message", [c[1:] for c in PATCHES], ids=[c[0] for c in PATCHES])
def test_patch_bodies_get_upstreams_answer(raw, kind, body, code, message):
    before = _cm(raw)
    got, data, _ = raw.request("PATCH", CMS + "/cm", body, content_type=f"application/{kind}+json")
    assert got == code, data[:300]
    if message is not None:
        assert _status(data)["message"] == message
    assert raw.json("GET", CMS + "/cm")[1]["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


# ---- sizes ------------------------------------------------------------------------------------------------------

def test_objects_over_etcds_request_limit_are_not_stored(raw):
    big = _pod("big", args=["x" * (1600 * 1024)])  # 1.6 MiB: under the body limit, over etcd's 1.5 MiB
    code, data = raw.json("POST", NS + "/pods", big)
    assert code == 500 and data == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                    "message": "etcdserver: request is too large", "code": 500}
    assert raw.request("GET", NS + "/pods/big")[0] == 404
    code, data = raw.json("POST", NS + "/pods?dryRun=All", big)  # a dry run never reaches etcd
    assert code == 201 and "resourceVersion" not in data["metadata"]


OVER = b" " * (3 * 1024 * 1024 + 1)
BODIES = [("POST", CMS, "application/json"), ("POST", CMS, "application/yaml"),
          ("PUT", CMS + "/cm", "application/json"), ("PATCH", CMS + "/cm", "application/merge-patch+json"),
          ("DELETE", CMS + "/cm", "application/json")]


@pytest.mark.parametrize("method,path,ctype", BODIES, ids=[f"{m}-{c.split('/')[1]}" for m, _, c in BODIES])
def test_body_limit_holds_for_every_verb_and_type(raw, method, path, ctype):
    _cm(raw)
    code, data, _ = raw.request(method, path, OVER, content_type=ctype)
    assert code == 413 and _status(data)["message"] == "Request entity too large: limit is 3145728"
    assert raw.request("GET", CMS + "/cm")[0] == 200


@pytest.mark.parametrize("size,code", [(65536, 422), (2**20, 413)], ids=["3.9MB-as-upstream", "40MB"])
def test_yaml_expansion_is_bounded(raw, size, code):
    """A string named 60 times: upstream expands it (3.9 MB: the ConfigMap is then too long, 422, as here); at
    40 MB the embedded server refuses to expand it (413; upstream would build it, then answer 422)."""
    data = ", ".join(f"k{i}: *s" for i in range(60))
    body = (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: wide}}\nx: &s {'x' * size}\ndata: {{{data}}}\n"
            ).encode()
    got, out, _ = raw.request("POST", CMS, body, content_type="application/yaml")
    assert got == code, out[:300]
    assert raw.request("GET", CMS + "/wide")[0] == 404


# ---- dryRun -----------------------------------------------------------------------------------------------------

DRY = [  # (case, options kind, method, path, body, content type)
    ("create", "CreateOptions", "POST", CMS, {"metadata": {"name": "new"}}, "application/json"),
    ("update", "UpdateOptions", "PUT", CMS + "/cm", {"metadata": {"name": "cm"}, "data": {"a": "2"}},
     "application/json"),
    ("patch", "PatchOptions", "PATCH", CMS + "/cm", {"data": {"a": "2"}}, "application/merge-patch+json"),
    ("delete", "DeleteOptions", "DELETE", CMS + "/cm", None, "application/json"),
    ("deletecollection", "DeleteOptions", "DELETE", CMS, None, "application/json"),
    ("status", "PatchOptions", "PATCH", NS + "/pods/p/status", {"status": {"phase": "Failed"}},
     "application/merge-patch+json"),
    ("binding", "CreateOptions", "POST", NS + "/pods/p/binding",
     {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "gpu-0"}}, "application/json"),
    ("eviction", "CreateOptions", "POST", NS + "/pods/p/eviction",
     {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}}, "application/json"),
    ("scale", "PatchOptions", "PATCH", "/apis/apps/v1/namespaces/default/deployments/d/scale",
     {"spec": {"replicas": 0}}, "application/merge-patch+json"),
]


def _snapshot(raw) -> tuple:
    """What the requests could change: the config maps, pod p (left alone by the scheduler), the scale."""
    cms = sorted((o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in raw.json("GET", CMS)[1]["items"])
    code, pod = raw.json("GET", NS + "/pods/p")
    deployment = raw.json("GET", "/apis/apps/v1/namespaces/default/deployments/d")[1]
    return cms, code, pod["metadata"]["resourceVersion"], deployment["spec"]["replicas"]


@pytest.fixture
def dry_objects(raw):
    _cm(raw)
    pod = _pod("p")
    pod["spec"]["schedulerName"] = "none"  # no scheduler binds it meanwhile
    assert raw.json("POST", NS + "/pods", pod)[0] == 201
    deployment = {"metadata": {"name": "d"}, "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "d"}},
                  "template": {"metadata": {"labels": {"app": "d"}}, "spec": _pod("x")["spec"]}}}
    assert raw.json("POST", "/apis/apps/v1/namespaces/default/deployments", deployment)[0] == 201


@pytest.mark.parametrize("query", ["dryRun=All", "dryRun=bogus", "dryRun=", "dryRun=All&dryRun=bogus"])
@pytest.mark.parametrize("kind,method,path,body,ctype", [c[1:] for c in DRY], ids=[c[0] for c in DRY])
def test_dry_run_persists_nothing(raw, dry_objects, query, kind, method, path, body, ctype):
    before = _snapshot(raw)
    payload = json.dumps(body).encode() if body is not None else None
    code, data, _ = raw.request(method, f"{path}?{query}", payload, content_type=ctype)
    if query == "dryRun=All":
        assert code in (200, 201), data[:300]
    else:
        values = [v.partition("=")[2] for v in query.split("&")]
        assert code == 422, data[:300]
        assert _status(data)["message"] == (f'{kind}.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                                            f'{json.dumps(values, separators=(",", ":"))}: supported values: "All"')
    assert _snapshot(raw) == before


# ---- names and namespaces in URLs --------------------------------------------------------------------------------

NAMES = [(".", "may not be '.'"), ("..", "may not be '..'"), ("%2E%2E", "may not be '..'"),
         ("a%25b", "may not contain '%'")]


@pytest.mark.parametrize("method", ["GET", "DELETE", "PATCH"])
@pytest.mark.parametrize("segment,why", NAMES, ids=[n for n, _ in NAMES])
def test_dot_names_in_urls_are_refused(raw, method, segment, why):
    """``.../configmaps/..`` is refused as a name (400, store.go ``NamespaceKeyFunc``), never resolved to the
    namespace's URL."""
    assert raw.json("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})[0] == 201
    code, data, _ = raw.request(method, f"/api/v1/namespaces/team/configmaps/{segment}", b"{}",
                                content_type="application/merge-patch+json")
    assert code == 400, data[:300]
    assert _status(data)["message"].endswith(f": {why}")
    namespace = raw.json("GET", "/api/v1/namespaces/team")[1]
    assert "deletionTimestamp" not in namespace["metadata"]


@pytest.mark.parametrize("method,path,message", [
    ("GET", "/api/v1/namespaces/../configmaps", 'invalid key: "/configmaps/.."'),
    ("GET", "/api/v1/namespaces/./configmaps/x", 'invalid key: "/configmaps/./x"'),
    ("DELETE", "/api/v1/namespaces/../configmaps", 'invalid key: "/configmaps/.."'),
    ("POST", "/api/v1/namespaces/../configmaps", "Internal error occurred: invalid resource name \"..\": "
                                                 "[may not be '..']"),
], ids=["list", "get", "deletecollection", "create"])
def test_dot_namespaces_get_upstreams_500(raw, method, path, message):
    """kube-apiserver answers these with a 500 (its storage refuses the key); so does the embedded server."""
    code, data, _ = raw.request(method, path, b'{"metadata":{"name":"x"}}' if method == "POST" else None)
    assert code == 500 and json.loads(data)["message"] == message


# ---- continue tokens and limits ----------------------------------------------------------------------------------

def _token(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


CONTINUES = [  # (case, continue value, code, message)
    ("not-base64", "%25%25%25", 400, "invalid continue token: continue key is not valid: illegal base64 data at "
                                     "input byte 0"),
    ("padded", _token({"v": "meta.k8s.io/v1", "rv": 1, "start": "default/a"}) + "==", 400, None),
    ("array", _token([1]), 400, "invalid continue token: continue key is not valid: json: cannot unmarshal array "
                                "into Go value of type storage.continueToken"),
    ("rv-zero", _token({"v": "meta.k8s.io/v1", "rv": 0, "start": "x"}), 400,
     "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version "
     "meta.k8s.io/v1)"),
    ("rv-string", _token({"v": "meta.k8s.io/v1", "rv": "5", "start": "x"}), 400,
     "invalid continue token: continue key is not valid: json: cannot unmarshal string into Go struct field "
     "continueToken.rv of type int64"),
    ("start-empty", _token({"v": "meta.k8s.io/v1", "rv": 5, "start": ""}), 400,
     "invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"),
    ("start-traversal", _token({"v": "meta.k8s.io/v1", "rv": 5, "start": "../kube-system/x"}), 400,
     "invalid continue token: continue key is not valid: ../kube-system/x"),
    ("version", _token({"v": "v2", "rv": 5, "start": "x"}), 400,
     "invalid continue token: continue key is not valid: server does not recognize this encoded version v2"),
    ("rv-future", _token({"v": "meta.k8s.io/v1", "rv": 99999999, "start": "default/a"}), 504, None),
]


@pytest.mark.parametrize("token,code,message", [c[1:] for c in CONTINUES], ids=[c[0] for c in CONTINUES])
def test_forged_continue_tokens_are_refused(raw, token, code, message):
    got, data, _ = raw.request("GET", f"{CMS}?limit=1&continue={token}")
    assert got == code, data[:300]
    if message is not None:
        assert _status(data)["message"] == message


def test_paging_with_own_tokens_and_negative_limit(raw):
    for i in range(3):
        _cm(raw, f"page{i}")
    everything = raw.json("GET", CMS)[1]["items"]
    code, first = raw.json("GET", f"{CMS}?limit=1")
    token = first["metadata"]["continue"]
    assert code == 200 and "=" not in token  # unpadded, as upstream's RawURLEncoding
    code, rest = raw.json("GET", f"{CMS}?continue={token}")
    assert code == 200 and first["items"] + rest["items"] == everything
    code, data, _ = raw.request("GET", f"{CMS}?continue={token}&resourceVersion=5")
    assert code == 400 and _status(data)["message"] == "specifying resource version is not allowed when using continue"
    code, unlimited = raw.json("GET", f"{CMS}?limit=-1")  # upstream ignores a negative limit
    assert code == 200 and unlimited["items"] == everything and "continue" not in unlimited["metadata"]


# ---- watches ----------------------------------------------------------------------------------------------------

def _connect(cluster) -> ssl.SSLSocket:
    ctx = ssl.create_default_context(cafile=str(cluster.state.cert_file))
    sock = socket.create_connection(("127.0.0.1", int(cluster.url.rsplit(":", 1)[1])), timeout=10)
    return ctx.wrap_socket(sock, server_hostname="127.0.0.1")


def test_watch_over_http_1_0_streams_until_close(cluster, raw):
    _cm(raw)
    sock = _connect(cluster)
    sock.sendall(f"GET {CMS}?watch=true&timeoutSeconds=1 HTTP/1.0\r\nAuthorization: Bearer {cluster.token}\r\n\r\n"
                 .encode())
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200") and b"chunked" not in head.lower()
    assert json.loads(body.splitlines()[0])["type"] == "ADDED"


def test_closed_watches_leave_nothing_behind(cluster, raw):
    hub = cluster.server.http.hub
    socks = []
    for _ in range(60):
        sock = _connect(cluster)
        sock.sendall(f"GET {CMS}?watch=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {cluster.token}\r\n\r\n"
                     .encode())
        socks.append(sock)
    deadline = time.monotonic() + 10
    while cluster.server.call(hub.count) < 60 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cluster.server.call(hub.count) == 60
    for i in range(20):  # events fan out to every watcher, each encoded once
        _cm(raw, f"fan{i}")
    deadline = time.monotonic() + 10
    while cluster.server.call(hub.cached_lines) < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 20 <= cluster.server.call(hub.cached_lines) <= 25  # each event once, not once per watcher
    for sock in socks:
        sock.close()
    deadline = time.monotonic() + 10
    while (cluster.server.call(hub.count) or cluster.server.call(hub.cached_lines)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cluster.server.call(hub.count) == 0 and cluster.server.call(hub.cached_lines) == 0
