"""CRUD through the official Python client against the embedded API server."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException


def message(exc: pytest.ExceptionInfo) -> str:
    return json.loads(exc.value.body)["message"]


def test_system_namespaces_and_seed_nodes(core):
    names = sorted(ns.metadata.name for ns in core.list_namespace().items)
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    nodes = core.list_node().items
    assert [n.metadata.name for n in nodes] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    n0 = nodes[0]
    assert n0.status.allocatable["nvidia.com/gpu"] == "2"
    assert n0.metadata.labels["mockgpu.io/pool"] == "gpu"
    assert n0.metadata.labels["kubernetes.io/hostname"] == "gpu-0"
    assert [c.type for c in n0.status.conditions if c.status == "True"] == ["Ready"]


def test_create_defaults_and_get(core, make_pod):
    created = core.create_namespaced_pod("default", make_pod("p1", gpus=1, app="a"))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.status.phase == "Pending"
    assert created.spec.scheduler_name == "default-scheduler"
    assert created.spec.restart_policy == "Always"
    assert created.spec.termination_grace_period_seconds == 30
    assert created.spec.enable_service_links is True
    assert created.spec.dns_policy == "ClusterFirst"
    # limits-only extended resources get requests equal to limits
    assert created.spec.containers[0].resources.requests == {"nvidia.com/gpu": "1"}
    got = core.read_namespaced_pod("p1", "default")
    assert got.metadata.resource_version == created.metadata.resource_version


def test_resource_versions_increase_cluster_wide(core, make_pod):
    rvs = [int(core.create_namespaced_pod("default", make_pod(f"p{i}")).metadata.resource_version) for i in range(3)]
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"k": "v"}})
    rvs.append(int(cm.metadata.resource_version))
    assert rvs == sorted(rvs) and len(set(rvs)) == 4
    listed = core.list_namespaced_pod("default")
    assert int(listed.metadata.resource_version) >= rvs[-1]


def test_generate_name(core):
    body = {"metadata": {"generateName": "job-"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    a = core.create_namespaced_pod("default", body)
    b = core.create_namespaced_pod("default", body)
    assert a.metadata.name.startswith("job-") and len(a.metadata.name) == len("job-") + 5
    assert a.metadata.name != b.metadata.name


def test_already_exists_and_not_found(core, make_pod):
    core.create_namespaced_pod("default", make_pod("dup"))
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod("default", make_pod("dup"))
    assert exc.value.status == 409 and message(exc) == 'pods "dup" already exists'
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod("nope", "default")
    assert exc.value.status == 404 and message(exc) == 'pods "nope" not found'
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod("no-such-ns", make_pod("x"))
    assert exc.value.status == 404 and message(exc) == 'namespaces "no-such-ns" not found'


def test_update_and_patches(core, make_pod):
    core.create_namespaced_pod("default", make_pod("p", app="a"))
    cur = core.read_namespaced_pod("p", "default")
    cur.metadata.labels["tier"] = "x"
    upd = core.replace_namespaced_pod("p", "default", cur)
    assert upd.metadata.labels == {"app": "a", "tier": "x"}
    assert int(upd.metadata.resource_version) > int(cur.metadata.resource_version)
    # a dict body is sent as strategic merge patch by the client
    sm = core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"tier": None, "new": "1"}}})
    assert sm.metadata.labels == {"app": "a", "new": "1"}
    jp = core.patch_namespaced_pod("p", "default", [{"op": "add", "path": "/metadata/annotations",
                                                     "value": {"note": "hi"}}])
    assert jp.metadata.annotations == {"note": "hi"}


def test_status_subresource_only_changes_status(core, make_pod):
    core.create_namespaced_pod("default", make_pod("s", app="a"))
    body = {"metadata": {"labels": {"ignored": "yes"}}, "status": {"phase": "Running"}}
    out = core.patch_namespaced_pod_status("s", "default", body)
    assert out.status.phase == "Running"
    assert "ignored" not in (out.metadata.labels or {})
    # and a main-resource patch cannot change status
    out = core.patch_namespaced_pod("s", "default", {"status": {"phase": "Failed"}})
    assert out.status.phase == "Running"


def test_selectors_on_list(core, make_pod):
    for i in range(4):
        core.create_namespaced_pod("default", make_pod(f"l{i}", app="web" if i % 2 else "db"))
    web = core.list_namespaced_pod("default", label_selector="app=web")
    assert [p.metadata.name for p in web.items] == ["l1", "l3"]
    one = core.list_namespaced_pod("default", field_selector="metadata.name=l2")
    assert [p.metadata.name for p in one.items] == ["l2"]
    both = core.list_pod_for_all_namespaces(label_selector="app in (web,db)", field_selector="status.phase=Pending")
    assert len(both.items) == 4
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_pod("default", field_selector="spec.bogus=1")
    assert exc.value.status == 400


def test_limit_and_continue(core, make_pod):
    for i in range(5):
        core.create_namespaced_pod("default", make_pod(f"c{i}"))
    first = core.list_namespaced_pod("default", limit=2)
    assert [p.metadata.name for p in first.items] == ["c0", "c1"]
    assert first.metadata.remaining_item_count == 3
    rest = core.list_namespaced_pod("default", limit=10, _continue=first.metadata._continue)
    assert [p.metadata.name for p in rest.items] == ["c2", "c3", "c4"]
    assert not rest.metadata._continue


def test_continued_pages_are_served_at_the_first_pages_version(core, make_pod):
    """etcd serves every page of a list at its first page's revision (the chunking e2e spec checks it): writes
    between pages change neither the later pages nor their resourceVersion."""
    for i in range(4):
        core.create_namespaced_pod("default", make_pod(f"c{i}"))
    first = core.list_namespaced_pod("default", limit=2)
    core.create_namespaced_pod("default", make_pod("c9"))  # after the snapshot, sorts into a later page
    core.delete_namespaced_pod("c3", "default")
    core.patch_namespaced_pod("c2", "default", {"metadata": {"labels": {"late": "yes"}}})
    rest = core.list_namespaced_pod("default", limit=10, _continue=first.metadata._continue)
    assert rest.metadata.resource_version == first.metadata.resource_version
    assert [p.metadata.name for p in rest.items] == ["c2", "c3"]
    assert "late" not in (rest.items[0].metadata.labels or {})
    labelled = core.list_namespaced_pod("default", limit=1, label_selector="late=yes")
    assert [p.metadata.name for p in labelled.items] == ["c2"]  # a new list sees the writes


def test_delete_unbound_pod_is_immediate_bound_pod_is_graceful(core, make_pod):
    core.create_namespaced_pod("default", make_pod("free"))
    core.delete_namespaced_pod("free", "default")
    assert core.list_namespaced_pod("default", field_selector="metadata.name=free").items == []

    core.create_namespaced_pod("default", make_pod("bound"))
    core.create_namespaced_pod_binding("bound", "default", client.V1Binding(
        metadata=client.V1ObjectMeta(name="bound"), target=client.V1ObjectReference(kind="Node", name="gpu-1")),
        _preload_content=False)
    p = core.read_namespaced_pod("bound", "default")
    assert p.spec.node_name == "gpu-1"
    assert any(c.type == "PodScheduled" and c.status == "True" for c in p.status.conditions)
    core.delete_namespaced_pod("bound", "default", grace_period_seconds=20)
    p = core.read_namespaced_pod("bound", "default")  # still there until its kubelet confirms
    assert p.metadata.deletion_timestamp is not None and p.metadata.deletion_grace_period_seconds == 20
    core.delete_namespaced_pod("bound", "default", grace_period_seconds=0)  # the kubelet's final delete
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod("bound", "default")
    assert exc.value.status == 404


def test_binding_twice_conflicts(core, make_pod):
    core.create_namespaced_pod("default", make_pod("b"))
    target = client.V1Binding(metadata=client.V1ObjectMeta(name="b"),
                               target=client.V1ObjectReference(kind="Node", name="gpu-0"))
    core.create_namespaced_pod_binding("b", "default", target, _preload_content=False)
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_binding("b", "default", target, _preload_content=False)
    assert exc.value.status == 409
    assert message(exc) == ('Operation cannot be fulfilled on pods/binding "b": '
                            'pod b is already assigned to node "gpu-0"')


def test_deletecollection_and_namespace_delete(core, make_pod):
    core.create_namespace({"metadata": {"name": "team"}})
    assert core.read_namespaced_service_account("default", "team").metadata.name == "default"
    for i in range(3):
        core.create_namespaced_pod("team", make_pod(f"t{i}", app="x" if i < 2 else "y"))
    core.delete_collection_namespaced_pod("team", label_selector="app=x")
    assert [p.metadata.name for p in core.list_namespaced_pod("team").items] == ["t2"]
    deleted = core.delete_namespace("team")  # marked; the namespace controller (not run here) empties it
    assert deleted["status"]["phase"] == "Terminating" and deleted["spec"]["finalizers"] == ["kubernetes"]
    assert core.read_namespace("team").metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod("team", make_pod("late"))
    assert exc.value.status == 403
    with pytest.raises(ApiException) as exc:
        core.delete_namespace("default")
    assert exc.value.status == 403


def test_kwok_style_node_is_first_class(core):
    node = {"metadata": {"name": "kwok-0", "labels": {"type": "kwok"}},
            "spec": {"taints": [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}}}
    created = core.create_node(node)
    assert created.status.allocatable["nvidia.com/gpu"] == "8"  # allocatable defaults to capacity
    assert "kwok-0" in [n.metadata.name for n in core.list_node(label_selector="type=kwok").items]


def test_events_field_selector(core):
    ev = {"metadata": {"name": "p.1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
          "reason": "FailedScheduling", "message": "0/4 nodes are available", "type": "Warning"}
    core.create_namespaced_event("default", ev)
    other = dict(ev, metadata={"name": "q.1"}, involvedObject={"kind": "Pod", "name": "q", "namespace": "default"})
    core.create_namespaced_event("default", other)
    got = core.list_namespaced_event("default", field_selector="involvedObject.name=p")
    assert [e.reason for e in got.items] == ["FailedScheduling"]


def test_eviction_deletes_the_pod(core, make_pod):
    core.create_namespaced_pod("default", make_pod("ev"))
    core.create_namespaced_pod_eviction("ev", "default", client.V1Eviction(
        metadata=client.V1ObjectMeta(name="ev", namespace="default")), _preload_content=False)
    assert core.list_namespaced_pod("default", field_selector="metadata.name=ev").items == []


def test_server_side_dry_run_stores_nothing(core, make_pod):
    out = core.create_namespaced_pod("default", make_pod("dry"), dry_run="All")
    assert out.metadata.uid and out.status.phase == "Pending"
    assert core.list_namespaced_pod("default").items == []


def test_unexpected_error_is_a_500_status_and_server_keeps_serving(cluster, raw):
    api = cluster.server.http.api
    real_get = api.get

    def broken(*args, **kwargs):
        raise RuntimeError("injected bug")

    api.get = broken
    try:
        code, body = raw.json("GET", "/api/v1/nodes/gpu-0")
    finally:
        api.get = real_get
    assert code == 500
    assert body["reason"] == "InternalError" and "injected bug" in body["message"]
    assert raw.json("GET", "/api/v1/nodes/gpu-0")[0] == 200


def test_openapi_v2_is_a_minimal_protobuf_document(raw):
    from google.protobuf.empty_pb2 import Empty
    from google.protobuf.unknown_fields import UnknownFieldSet

    def fields(data: bytes) -> dict[int, bytes]:  # the wire fields, read by the protobuf runtime
        return {f.field_number: f.data for f in UnknownFieldSet(Empty.FromString(data))}

    code, body, headers = raw.request(
        "GET", "/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    assert code == 200 and headers["Content-Type"].startswith("application/com.github.proto-openapi.spec.v2")
    doc = fields(body)
    assert doc[1] == b"2.0"
    assert fields(doc[2])[1] == b"Kubernetes"


@pytest.mark.skipif(not shutil.which("kubectl"), reason="kubectl not on PATH")
def test_kubectl_create_of_a_list_file_validates(cluster, core, tmp_path):
    manifest = tmp_path / "list.yaml"
    manifest.write_text("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n"
                        "  metadata: {name: from-list}\n  data: {a: b}\n")
    out = subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig), "--cache-dir", str(tmp_path / "cache"),
                          "create", "-f", str(manifest)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert core.read_namespaced_config_map("from-list", "default").data == {"a": "b"}


def test_list_items_carry_no_type_meta_as_upstream(raw, core, make_pod):
    core.create_namespaced_pod("default", make_pod("tm"))
    code, body = raw.json("GET", "/api/v1/namespaces/default/pods")
    assert code == 200 and (body["kind"], body["apiVersion"]) == ("PodList", "v1")
    assert "kind" not in body["items"][0] and "apiVersion" not in body["items"][0]
    code, one = raw.json("GET", "/api/v1/namespaces/default/pods/tm")
    assert (one["kind"], one["apiVersion"]) == ("Pod", "v1")
