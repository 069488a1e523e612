"""apps/v1 DaemonSets and batch/v1 CronJobs on the embedded API server (no controllers running): defaults,
template generation, validation with upstream's causes, ``kubectl get``'s table columns, and 4xx (never 500)
for malformed specs."""

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
def raw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    with EmbeddedCluster(SEED, home=tmp_path_factory.mktemp("home"), delete_on_exit=True) as c:
        assert c.control_plane is None
        yield c.api_client()


def call(raw: client.ApiClient, method: str, path: str, body: object = None,
         content_type: str = "application/json", accept: str = "application/json") -> tuple[int, dict]:
    headers = {"Accept": accept, "Content-Type": content_type}
    params = raw.param_serialize(method, path, header_params=headers, body=body, auth_settings=["BearerToken"])
    resp = raw.call_api(*params)
    resp.read()
    return resp.status, json.loads(resp.data or b"{}")


def base(plural: str) -> str:
    return f"/apis/{'apps' if plural == 'daemonsets' else 'batch'}/v1/namespaces/{NS}/{plural}"


def daemonset(name: str, **spec: object) -> dict:
    body = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"nodeSelector": {"gpu": "yes"},
                                           "containers": [{"name": "c", "image": "x", "command": ["sleep", "9"]}]}}}}
    body["spec"].update(spec)
    return body


def cronjob(name: str, **spec: object) -> dict:
    body = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": "*/5 * * * *",
                     "jobTemplate": {"spec": {"template": {"spec": {
                         "restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "x", "command": ["true"]}]}}}}}}
    body["spec"].update(spec)
    return body


def test_daemonset_defaults_and_template_generation(raw):
    code, ds = call(raw, "POST", base("daemonsets"), daemonset("ds-defaults"))
    assert code == 201, ds
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["spec"]["revisionHistoryLimit"] == 10 and ds["metadata"]["generation"] == 1
    assert ds["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "1"}
    assert ds["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                            "numberReady": 0}
    changed = copy.deepcopy(ds)
    changed["spec"]["minReadySeconds"] = 5  # spec, not template: generation moves, template generation not
    code, ds = call(raw, "PUT", f"{base('daemonsets')}/ds-defaults", changed)
    assert code == 200 and ds["metadata"]["generation"] == 2
    assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "1"
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = "y"
    code, ds = call(raw, "PUT", f"{base('daemonsets')}/ds-defaults", ds)
    assert code == 200 and ds["metadata"]["generation"] == 3
    assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"


def test_cronjob_defaults(raw):
    code, cj = call(raw, "POST", base("cronjobs"), cronjob("cj-defaults"))
    assert code == 201, cj
    spec = cj["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
    assert "timeZone" not in spec and "startingDeadlineSeconds" not in spec
    pod_spec = spec["jobTemplate"]["spec"]["template"]["spec"]
    assert pod_spec["terminationGracePeriodSeconds"] == 30 and pod_spec["dnsPolicy"] == "ClusterFirst"
    assert "selector" not in spec["jobTemplate"]["spec"] and cj["metadata"]["generation"] == 1


def _ds(**spec):
    return lambda b: b["spec"].update(spec) or b


def _tmpl(**pod_spec):
    return lambda b: b["spec"]["template"]["spec"].update(pod_spec) or b


INVALID_DAEMONSETS = [
    ("selector-mismatch", _ds(selector={"matchLabels": {"app": "other"}}),
     [("FieldValueInvalid", "spec.template.metadata.labels",
       'Invalid value: map[string]string{"app":"bad-selector-mismatch"}: `selector` does not match template '
       '`labels`')]),
    ("restart-never", _tmpl(restartPolicy="Never"),
     [("FieldValueNotSupported", "spec.template.spec.restartPolicy",
       'Unsupported value: "Never": supported values: "Always"')]),
    ("deadline", _tmpl(activeDeadlineSeconds=5),
     [("FieldValueForbidden", "spec.template.spec.activeDeadlineSeconds",
       "Forbidden: activeDeadlineSeconds in DaemonSet is not Supported")]),
    ("surge-and-unavailable",
     _ds(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}),
     [("FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxSurge",
       "Invalid value: 1: may not be set when maxUnavailable is non-zero")]),
    ("neither",
     _ds(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}}),
     [("FieldValueRequired", "spec.updateStrategy.rollingUpdate.maxUnavailable",
       "Required value: cannot be 0 when maxSurge is 0")]),
    ("strategy-type", _ds(updateStrategy={"type": "Sometimes"}),
     [("FieldValueNotSupported", "spec.updateStrategy",
       'Unsupported value: apps.DaemonSetUpdateStrategy{Type:"Sometimes", '
       'RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: "RollingUpdate", "OnDelete"')]),
    ("negative-min-ready", _ds(minReadySeconds=-1),
     [("FieldValueInvalid", "spec.minReadySeconds", "Invalid value: -1: must be greater than or equal to 0")]),
]


@pytest.mark.parametrize(("case", "mutate", "causes"), INVALID_DAEMONSETS, ids=[c[0] for c in INVALID_DAEMONSETS])
def test_invalid_daemonsets_are_422_with_upstreams_causes(raw, case, mutate, causes):
    code, status = call(raw, "POST", base("daemonsets"), mutate(daemonset(f"bad-{case}")))
    assert code == 422, status
    assert status["reason"] == "Invalid" and status["details"]["group"] == "apps"
    assert status["message"].startswith(f'DaemonSet.apps "bad-{case}" is invalid: ')
    assert [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]] == causes


def test_daemonset_selector_is_immutable(raw):
    code, ds = call(raw, "POST", base("daemonsets"), daemonset("ds-immutable"))
    assert code == 201
    ds["spec"]["selector"]["matchLabels"]["extra"] = "x"
    ds["spec"]["template"]["metadata"]["labels"]["extra"] = "x"
    code, status = call(raw, "PUT", f"{base('daemonsets')}/ds-immutable", ds)
    assert code == 422
    assert [(c["field"], c["message"].split(": ")[-1]) for c in status["details"]["causes"]] == [
        ("spec.selector", "field is immutable")]


def _cj(**spec):
    return lambda b: b["spec"].update(spec) or b


INVALID_CRONJOBS = [
    ("four-fields", _cj(schedule="* * * *"),
     [("FieldValueInvalid", "spec.schedule", 'Invalid value: "* * * *": expected exactly 5 fields, found 4: '
                                             "[* * * *]")]),
    ("tz-in-schedule", _cj(schedule="TZ=UTC */5 * * * *"),
     [("FieldValueInvalid", "spec.schedule", 'Invalid value: "TZ=UTC */5 * * * *": cannot use TZ or CRON_TZ in '
                                             "schedule, use timeZone field instead")]),
    ("no-schedule", _cj(schedule=""), [("FieldValueRequired", "spec.schedule", "Required value")]),
    ("unknown-zone", _cj(timeZone="Mars/Olympus"),
     [("FieldValueInvalid", "spec.timeZone", 'Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus')]),
    ("local-zone", _cj(timeZone="Local"),
     [("FieldValueInvalid", "spec.timeZone", 'Invalid value: "Local": timeZone must be an explicit time zone as '
                                             "defined in https://www.iana.org/time-zones")]),
    ("policy", _cj(concurrencyPolicy="Sometimes"),
     [("FieldValueNotSupported", "spec.concurrencyPolicy",
       'Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"')]),
    ("negative-deadline", _cj(startingDeadlineSeconds=-5),
     [("FieldValueInvalid", "spec.startingDeadlineSeconds",
       "Invalid value: -5: must be greater than or equal to 0")]),
    ("negative-history", _cj(failedJobsHistoryLimit=-1),
     [("FieldValueInvalid", "spec.failedJobsHistoryLimit", "Invalid value: -1: must be greater than or equal to 0")]),
    ("restart-always",
     lambda b: b["spec"]["jobTemplate"]["spec"]["template"]["spec"].update(restartPolicy="Always") or b,
     [("FieldValueNotSupported", "spec.jobTemplate.spec.template.spec.restartPolicy",
       'Unsupported value: "Always": supported values: "OnFailure", "Never"')]),
    ("selector", lambda b: b["spec"]["jobTemplate"]["spec"].update(selector={"matchLabels": {"a": "b"}}) or b,
     [("FieldValueInvalid", "spec.jobTemplate.spec.selector",
       'Invalid value: {"matchLabels": {"a": "b"}}: `selector` will be auto-generated')]),
    ("a-name-longer-than-fifty-two-characters-is-too-long-x", lambda b: b,
     [("FieldValueInvalid", "metadata.name",
       'Invalid value: "bad-a-name-longer-than-fifty-two-characters-is-too-long-x": must be no more than 52 '
       "characters")]),
]


@pytest.mark.parametrize(("case", "mutate", "causes"), INVALID_CRONJOBS, ids=[c[0][:20] for c in INVALID_CRONJOBS])
def test_invalid_cronjobs_are_422_with_upstreams_causes(raw, case, mutate, causes):
    code, status = call(raw, "POST", base("cronjobs"), mutate(cronjob(f"bad-{case}")))
    assert code == 422, status
    assert status["reason"] == "Invalid" and status["details"]["group"] == "batch"
    assert status["message"].startswith(f'CronJob.batch "bad-{case}" is invalid: ')
    assert [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]] == causes


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def test_tables_have_upstreams_columns(raw):
    call(raw, "POST", base("daemonsets"), daemonset("ds-table"))
    code, table = call(raw, "GET", f"{base('daemonsets')}?fieldSelector=metadata.name%3Dds-table", accept=TABLE)
    assert code == 200
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "Containers",
        "Images", "Selector"]
    cells = table["rows"][0]["cells"]
    assert cells[:7] == ["ds-table", 0, 0, 0, 0, 0, "gpu=yes"] and cells[8:] == ["c", "x", "app=ds-table"]
    call(raw, "POST", base("cronjobs"), cronjob("cj-table", timeZone="Europe/Berlin"))
    code, table = call(raw, "GET", f"{base('cronjobs')}?fieldSelector=metadata.name%3Dcj-table", accept=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers", "Images",
        "Selector"]
    cells = table["rows"][0]["cells"]
    assert cells[:6] == ["cj-table", "*/5 * * * *", "Europe/Berlin", "False", 0, "<none>"]
    assert cells[7:] == ["c", "x", "<none>"]


MALFORMED = {
    "daemonsets": [5, "x", {"updateStrategy": "x"}, {"updateStrategy": {"rollingUpdate": "x"}},
                   {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": [1]}}},
                   {"template": 5}, {"template": {"spec": 5}}, {"selector": "x"}, {"minReadySeconds": "x"}],
    "cronjobs": [5, "x", {"schedule": 5}, {"jobTemplate": 5}, {"jobTemplate": {"spec": 5}},
                 {"jobTemplate": {"spec": {"template": 5}}}, {"timeZone": 5}, {"startingDeadlineSeconds": "x"},
                 {"suspend": "yes"}, {"schedule": "*/5 * * * *", "jobTemplate": {"metadata": 5}}],
}
CASES = [(plural, spec) for plural, specs in MALFORMED.items() for spec in specs]


@pytest.mark.parametrize(("plural", "spec"), CASES, ids=[f"{p}-{json.dumps(s)[:30]}" for p, s in CASES])
def test_malformed_specs_are_4xx_statuses_never_500(raw, plural, spec):
    kind, version = ("DaemonSet", "apps/v1") if plural == "daemonsets" else ("CronJob", "batch/v1")
    code, status = call(raw, "POST", base(plural),
                        {"apiVersion": version, "kind": kind, "metadata": {"name": "malformed"}, "spec": spec})
    assert code in (400, 422) and status["kind"] == "Status" and status["status"] == "Failure", (code, status)
