"""apps/v1 and batch/v1 on the embedded API server (no controllers running): discovery, defaults, validation
with upstream's causes, generation, the status and scale subresources, and deletion propagation."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from mockgpu.backends.embedded import EmbeddedCluster

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "clusters" / "seed-4x2.yaml"
NS = "default"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(SEED, home=tmp_path_factory.mktemp("home"), delete_on_exit=True) as c:
        assert c.control_plane is None  # an API server alone: nothing acts on the objects
        yield c


@pytest.fixture(scope="module")
def apps(cluster: EmbeddedCluster) -> client.AppsV1Api:
    return client.AppsV1Api(cluster.api_client())


@pytest.fixture(scope="module")
def batch(cluster: EmbeddedCluster) -> client.BatchV1Api:
    return client.BatchV1Api(cluster.api_client())


@pytest.fixture(scope="module")
def raw(cluster: EmbeddedCluster) -> client.ApiClient:
    return cluster.api_client()


def deployment(name: str, **spec: object) -> dict:
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "x", "command": ["sleep", "30"],
                                                           "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}
    body["spec"].update(spec)
    return body


def job(name: str, **spec: object) -> dict:
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "x", "command": ["true"]}]}}}}
    body["spec"].update(spec)
    return body


def call(raw: client.ApiClient, method: str, path: str, body: object = None,
         content_type: str = "application/json") -> tuple[int, dict]:
    headers = {"Accept": "application/json", "Content-Type": content_type}
    params = raw.param_serialize(method, path, header_params=headers, body=body, auth_settings=["BearerToken"])
    resp = raw.call_api(*params)
    resp.read()
    return resp.status, json.loads(resp.data or b"{}")


def create(raw: client.ApiClient, plural: str, body: dict) -> tuple[int, dict]:
    group = "apps" if plural == "deployments" else "batch"
    return call(raw, "POST", f"/apis/{group}/v1/namespaces/{NS}/{plural}", body)


# ---- discovery --------------------------------------------------------------------------------------------------

def test_discovery_lists_apps_and_batch_with_their_subresources(raw: client.ApiClient):
    code, doc = call(raw, "GET", "/apis/apps/v1")
    assert code == 200
    by_name = {r["name"]: r for r in doc["resources"]}
    assert by_name["deployments"]["shortNames"] == ["deploy"] and by_name["deployments"]["categories"] == ["all"]
    assert by_name["deployments/scale"] == {"name": "deployments/scale", "singularName": "", "namespaced": True,
                                            "group": "autoscaling", "version": "v1", "kind": "Scale",
                                            "verbs": ["get", "patch", "update"]}
    assert by_name["replicasets/status"]["kind"] == "ReplicaSet" and "group" not in by_name["replicasets/status"]
    assert by_name["daemonsets"]["shortNames"] == ["ds"] and "daemonsets/scale" not in by_name
    assert by_name["daemonsets/status"]["kind"] == "DaemonSet"
    code, doc = call(raw, "GET", "/apis/batch/v1")
    assert {r["name"] for r in doc["resources"]} == {"jobs", "jobs/status", "cronjobs", "cronjobs/status"}
    assert {r["name"]: r for r in doc["resources"]}["cronjobs"]["shortNames"] == ["cj"]


# ---- defaults ---------------------------------------------------------------------------------------------------

def test_deployment_defaults_generation_and_empty_status(apps: client.AppsV1Api, raw: client.ApiClient):
    assert create(raw, "deployments", deployment("def1", replicas=None))[0] == 201
    _, d = call(raw, "GET", "/apis/apps/v1/namespaces/default/deployments/def1")
    assert d["metadata"]["generation"] == 1 and d["status"] == {}
    assert d["spec"]["replicas"] == 1
    assert d["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%",
                                                                                 "maxSurge": "25%"}}
    assert (d["spec"]["revisionHistoryLimit"], d["spec"]["progressDeadlineSeconds"]) == (10, 600)
    pod_spec = d["spec"]["template"]["spec"]
    assert (pod_spec["restartPolicy"], pod_spec["dnsPolicy"], pod_spec["terminationGracePeriodSeconds"]) == (
        "Always", "ClusterFirst", 30)
    # the template is defaulted as a PodSpec, not as a Pod: no requests copied from limits, no admission defaults
    assert pod_spec["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert "serviceAccountName" not in pod_spec and "tolerations" not in pod_spec


def test_job_gets_a_generated_selector_and_labels(batch: client.BatchV1Api, raw: client.ApiClient):
    assert create(raw, "jobs", job("gen1"))[0] == 201
    _, j = call(raw, "GET", "/apis/batch/v1/namespaces/default/jobs/gen1")
    uid = j["metadata"]["uid"]
    want = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "gen1",
            "controller-uid": uid, "job-name": "gen1"}
    assert j["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert j["spec"]["template"]["metadata"]["labels"] == want
    assert j["metadata"]["labels"] == want  # the v1 defaulter copies the template's labels to a Job without any
    assert {k: j["spec"][k] for k in ("completions", "parallelism", "backoffLimit", "completionMode", "suspend",
                                      "podReplacementPolicy")} == {
        "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed"}


def test_job_with_parallelism_only_keeps_completions_unset(raw: client.ApiClient):
    code, j = create(raw, "jobs", job("queue1", parallelism=3))
    assert code == 201 and "completions" not in j["spec"] and j["spec"]["parallelism"] == 3


# ---- validation -------------------------------------------------------------------------------------------------

def _without_selector(body: dict) -> dict:
    del body["spec"]["selector"]
    return body


def _mismatched(body: dict) -> dict:
    body["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    return body


def _restart_never(body: dict) -> dict:
    body["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    return body


INVALID_DEPLOYMENTS = [
    ("no-selector", _without_selector, [("FieldValueRequired", "spec.selector", "Required value")]),
    ("selector-mismatch", _mismatched,
     [("FieldValueInvalid", "spec.template.metadata.labels",
       'Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`')]),
    ("restart-never", _restart_never,
     [("FieldValueNotSupported", "spec.template.spec.restartPolicy",
       'Unsupported value: "Never": supported values: "Always"')]),
    ("negative-replicas", lambda b: b["spec"].update(replicas=-1) or b,
     [("FieldValueInvalid", "spec.replicas", "Invalid value: -1: must be greater than or equal to 0")]),
    ("zero-surge-and-unavailable",
     lambda b: b["spec"].update(strategy={"type": "RollingUpdate",
                                          "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}) or b,
     [("FieldValueInvalid", "spec.strategy.rollingUpdate.maxUnavailable",
       "Invalid value: 0: may not be 0 when `maxSurge` is 0")]),
    ("bad-percent",
     lambda b: b["spec"].update(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "x%"}}) or b,
     [("FieldValueInvalid", "spec.strategy.rollingUpdate.maxSurge",
       "Invalid value: \"x%\": a valid percent string must be a numeric string followed by an ending '%' "
       "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")]),
    ("recreate-with-rolling-params",
     lambda b: b["spec"].update(strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}) or b,
     [("FieldValueForbidden", "spec.strategy.rollingUpdate",
       "Forbidden: may not be specified when strategy `type` is 'Recreate'")]),
    ("gpu-fraction",
     lambda b: b["spec"]["template"]["spec"]["containers"][0]["resources"].update(
         limits={"nvidia.com/gpu": "500m"}) or b,
     [("FieldValueInvalid", "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]",
       'Invalid value: "500m": must be an integer')]),
]


@pytest.mark.parametrize(("case", "mutate", "causes"), INVALID_DEPLOYMENTS, ids=[c[0] for c in INVALID_DEPLOYMENTS])
def test_invalid_deployments_are_422_with_upstreams_causes(raw: client.ApiClient, case, mutate, causes):
    code, status = create(raw, "deployments", mutate(deployment(f"bad-{case}")))
    assert code == 422
    assert status["reason"] == "Invalid" and status["details"]["group"] == "apps"
    assert status["message"].startswith(f'Deployment.apps "bad-{case}" is invalid: ')
    assert [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]] == causes


def test_job_restart_policy_must_be_never_or_onfailure(raw: client.ApiClient):
    body = job("always1")
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    code, status = create(raw, "jobs", body)
    assert code == 422
    assert status["message"] == ('Job.batch "always1" is invalid: spec.template.spec.restartPolicy: '
                                         'Unsupported value: "Always": supported values: "OnFailure", "Never"')


def _policy_job(name: str, rules: list, restart: str = "Never") -> dict:
    body = job(name, podFailurePolicy={"rules": rules})
    body["spec"]["template"]["spec"]["restartPolicy"] = restart
    return body


INVALID_POLICIES = [
    ("on-failure", [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}], "OnFailure",
     [("FieldValueInvalid", "spec.template.spec.restartPolicy",
       'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified')]),
    ("bad-action", [{"action": "Retry", "onExitCodes": {"operator": "In", "values": [1]}}], "Never",
     [("FieldValueNotSupported", "spec.podFailurePolicy.rules[0].action",
       'Unsupported value: "Retry": supported values: "Count", "FailIndex", "FailJob", "Ignore"')]),
    ("neither", [{"action": "Ignore"}], "Never",
     [("FieldValueInvalid", "spec.podFailurePolicy.rules[0]",
       "Invalid value: specifying one of OnExitCodes and OnPodConditions is required")]),
    ("zero-in", [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 3]}}], "Never",
     [("FieldValueInvalid", "spec.podFailurePolicy.rules[0].onExitCodes.values[0]",
       "Invalid value: 0: must not be 0 for the In operator")]),
    ("unordered", [{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [3, 1]}}], "Never",
     [("FieldValueInvalid", "spec.podFailurePolicy.rules[0].onExitCodes.values",
       "Invalid value: []int32{3, 1}: must be ordered")]),
    ("unknown-container", [{"action": "FailJob", "onExitCodes": {"containerName": "nope", "operator": "In",
                                                                 "values": [1]}}], "Never",
     [("FieldValueInvalid", "spec.podFailurePolicy.rules[0].onExitCodes.containerName",
       'Invalid value: "nope": must be one of the container or initContainer names in the pod template')]),
]


@pytest.mark.parametrize(("case", "rules", "restart", "causes"), INVALID_POLICIES, ids=[c[0] for c in INVALID_POLICIES])
def test_invalid_pod_failure_policies(raw: client.ApiClient, case, rules, restart, causes):
    code, status = create(raw, "jobs", _policy_job(f"pfp-{case}", rules, restart))
    assert code == 422
    assert [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]] == causes


def test_pod_failure_policy_defaults_replacement_to_failed(raw: client.ApiClient):
    code, j = create(raw, "jobs", _policy_job("pfp-ok", [{"action": "Ignore",
                                                          "onPodConditions": [{"type": "DisruptionTarget",
                                                                               "status": "True"}]}]))
    assert code == 201 and j["spec"]["podReplacementPolicy"] == "Failed"


def test_job_template_is_immutable(raw: client.ApiClient):
    create(raw, "jobs", job("immut1"))
    _, j = call(raw, "GET", "/apis/batch/v1/namespaces/default/jobs/immut1")
    j["spec"]["template"]["spec"]["containers"][0]["image"] = "y"
    code, status = call(raw, "PUT", "/apis/batch/v1/namespaces/default/jobs/immut1", j)
    assert code == 422 and [c["field"] for c in status["details"]["causes"]] == ["spec.template"]


# ---- generation, status, scale ----------------------------------------------------------------------------------

def test_generation_moves_with_the_spec_only(raw: client.ApiClient, apps: client.AppsV1Api):
    create(raw, "deployments", deployment("gen2"))
    base = "/apis/apps/v1/namespaces/default/deployments/gen2"
    _, d = call(raw, "PATCH", base, {"metadata": {"labels": {"x": "y"}}}, "application/merge-patch+json")
    assert d["metadata"]["generation"] == 1
    _, d = call(raw, "PATCH", base, {"spec": {"template": {"metadata": {"annotations": {"r": "1"}}}}},
                "application/strategic-merge-patch+json")
    assert d["metadata"]["generation"] == 2
    d = copy.deepcopy(d)
    d["status"] = {"observedGeneration": 2, "replicas": 5}
    d["spec"]["replicas"] = 9  # ignored by /status
    code, after = call(raw, "PUT", base + "/status", d)
    assert code == 200 and after["status"] == {"observedGeneration": 2, "replicas": 5}
    assert (after["spec"]["replicas"], after["metadata"]["generation"]) == (2, 2)
    d["status"] = {"replicas": 1}
    _, after = call(raw, "PUT", base, {**d, "metadata": after["metadata"]})
    assert after["status"] == {"observedGeneration": 2, "replicas": 5}  # the main resource keeps the status
    assert (after["spec"]["replicas"], after["metadata"]["generation"]) == (9, 3)


def test_scale_subresource(raw: client.ApiClient, apps: client.AppsV1Api):
    create(raw, "deployments", deployment("sc1"))
    base = "/apis/apps/v1/namespaces/default/deployments/sc1/scale"
    code, scale = call(raw, "GET", base)
    assert code == 200 and (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["spec"] == {"replicas": 2} and scale["status"] == {"replicas": 0, "selector": "app=sc1"}
    code, scale = call(raw, "PATCH", base, {"spec": {"replicas": 5}}, "application/merge-patch+json")
    assert code == 200 and scale["spec"] == {"replicas": 5}
    d = apps.read_namespaced_deployment("sc1", NS)
    assert (d.spec.replicas, d.metadata.generation) == (5, 2)
    code, status = call(raw, "PUT", base, {"metadata": {"name": "sc1"}, "spec": {"replicas": -1}})
    assert code == 422 and status["message"] == ('Scale.autoscaling "sc1" is invalid: spec.replicas: Invalid value: '
                                                 "-1: must be greater than or equal to 0")
    code, status = call(raw, "PUT", base, {"metadata": {"name": "sc1", "resourceVersion": "1"},
                                           "spec": {"replicas": 1}})
    assert code == 409 and status["reason"] == "Conflict"
    code, _ = call(raw, "GET", "/apis/apps/v1/namespaces/default/deployments/nope/scale")
    assert code == 404


# ---- deletion propagation ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("policy", "finalizer"), [("Orphan", "orphan"), ("Foreground", "foregroundDeletion")])
def test_orphan_and_foreground_deletion_leave_the_owner_with_a_finalizer(raw: client.ApiClient,
                                                                          apps: client.AppsV1Api, policy, finalizer):
    name = f"del-{policy.lower()}"
    create(raw, "deployments", deployment(name))
    code, body = call(raw, "DELETE", f"/apis/apps/v1/namespaces/default/deployments/{name}",
                      {"propagationPolicy": policy})
    assert code == 200 and body["metadata"]["finalizers"] == [finalizer]
    assert body["metadata"]["deletionTimestamp"]
    # the garbage collector's part: releasing the finalizer removes the object
    ops = [{"op": "replace", "path": "/metadata/finalizers", "value": []}]
    code, _ = call(raw, "PATCH", f"/apis/apps/v1/namespaces/default/deployments/{name}", ops,
                   "application/json-patch+json")
    assert code == 200
    code, _ = call(raw, "GET", f"/apis/apps/v1/namespaces/default/deployments/{name}")
    assert code == 404


def test_jobs_orphan_by_default_and_background_deletes_at_once(raw: client.ApiClient):
    create(raw, "jobs", job("del-job1"))
    code, body = call(raw, "DELETE", "/apis/batch/v1/namespaces/default/jobs/del-job1")
    assert code == 200 and body["metadata"]["finalizers"] == ["orphan"]  # batch/v1's legacy default
    create(raw, "jobs", job("del-job2"))
    code, body = call(raw, "DELETE", "/apis/batch/v1/namespaces/default/jobs/del-job2",
                      {"propagationPolicy": "Background"})
    assert code == 200 and body["kind"] == "Status" and body["status"] == "Success"


def test_unknown_propagation_policy_is_422(raw: client.ApiClient, apps: client.AppsV1Api):
    create(raw, "deployments", deployment("del-bad"))
    code, status = call(raw, "DELETE", "/apis/apps/v1/namespaces/default/deployments/del-bad",
                        {"propagationPolicy": "Sideways"})
    assert code == 422
    assert status["message"] == ('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                                 '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"')


MALFORMED_SPECS = ["x", 5, [], {"replicas": "2"}, {"replicas": 2.5}, {"selector": "app=x"},
                   {"selector": {"matchLabels": "x"}}, {"selector": {"matchExpressions": [{"key": "a",
                                                                                            "operator": "Bogus"}]}},
                   {"template": 5}, {"template": {"spec": 5}}, {"template": {"spec": {"containers": "x"}}},
                   {"template": {"spec": {"containers": [5]}}}, {"strategy": "x"},
                   {"strategy": {"rollingUpdate": {"maxSurge": [1]}}}, {"completions": -1}, {"parallelism": "x"},
                   {"manualSelector": "yes"}, {"completionMode": "Weird"}, {"selector": {"matchExpressions": [5]}}]


@pytest.mark.parametrize("plural", ["deployments", "replicasets", "jobs"])
@pytest.mark.parametrize("spec", MALFORMED_SPECS, ids=[json.dumps(s)[:40] for s in MALFORMED_SPECS])
def test_malformed_specs_are_4xx_statuses_never_500(raw: client.ApiClient, plural, spec):
    group, kind = {"deployments": ("apps", "Deployment"), "replicasets": ("apps", "ReplicaSet"),
                   "jobs": ("batch", "Job")}[plural]
    code, status = call(raw, "POST", f"/apis/{group}/v1/namespaces/{NS}/{plural}",
                        {"apiVersion": f"{group}/v1", "kind": kind, "metadata": {"name": "malformed"}, "spec": spec})
    assert code in (400, 422) and status["kind"] == "Status" and status["status"] == "Failure", (code, status)
