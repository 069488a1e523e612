"""PodWorker: admission, container lifecycle, restart policy, pod phase and events (no API server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockgpu.control.kubelet.devicemanager import DeviceManager
from mockgpu.control.kubelet.podenv import resolve_env
from mockgpu.control.kubelet.podworker import PodWorker
from mockgpu.control.kubelet.restart import CrashLoopBackoff
from mockgpu.control.kubelet.runtime import ProcessRuntime

RES = "example.com/gpu"


def pod(*containers: dict, policy: str = "Always", init: list[dict] | None = None, uid: str = "u1") -> dict:
    spec = {"restartPolicy": policy, "containers": list(containers), "terminationGracePeriodSeconds": 2}
    if init:
        spec["initContainers"] = init
    return {"metadata": {"name": "p", "namespace": "ns", "uid": uid, "labels": {"app": "x"}}, "spec": spec}


def ctr(name: str, *command: str, **extra) -> dict:
    return {"name": name, "image": "mockgpu/workload:dev", "command": list(command), **extra}


@pytest.fixture
def rt(tmp_path: Path):
    r = ProcessRuntime(tmp_path / "rt")
    yield r
    r.stop_all(grace=0)


@pytest.fixture
def make(rt):
    made: list[PodWorker] = []

    def _make(p: dict, **kw) -> PodWorker:
        events: list = []
        w = PodWorker(p, node_name="n0", runtime=rt, backoff=CrashLoopBackoff(scale=0.01), on_event=events.append, **kw)
        w.events = events
        made.append(w)
        w.start()
        return w

    yield _make
    for w in made:
        w.terminate(grace=0)


def phase(want: str):
    return lambda st: st["phase"] == want


@pytest.mark.parametrize(
    "policy, code, want",
    [("Never", 0, "Succeeded"), ("Never", 3, "Failed"), ("OnFailure", 0, "Succeeded")],
    ids=["never-ok", "never-fail", "onfailure-ok"],
)
def test_terminal_phases(make, policy: str, code: int, want: str) -> None:
    w = make(pod(ctr("main", "sh", "-c", f"exit {code}"), policy=policy))
    st = w.wait(phase(want))
    term = st["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == code and term["reason"] == ("Completed" if code == 0 else "Error")
    assert [e.reason for e in w.events] == ["Pulled", "Created", "Started"]
    assert w.events[1].message == "Created container: main" and w.events[1].field_path == "spec.containers{main}"


def test_running_then_ready(make) -> None:
    w = make(pod(ctr("main", "sleep", "30")))
    st = w.wait(lambda s: s["containerStatuses"][0]["ready"])
    assert st["phase"] == "Running"
    cond = {c["type"]: c["status"] for c in st["conditions"]}
    assert cond == {
        "PodReadyToStartContainers": "True",
        "Initialized": "True",
        "ContainersReady": "True",
        "Ready": "True",
    }
    assert "running" in st["containerStatuses"][0]["state"]
    final = w.terminate(grace=5)
    assert final["phase"] == "Failed"  # killed by SIGTERM: 143 is not success
    assert final["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 143
    assert any(e.reason == "Killing" and e.message == "Stopping container main" for e in w.events)


def test_crash_loop_back_off(make) -> None:
    w = make(pod(ctr("main", "sh", "-c", "echo crash; exit 1")))
    st = w.wait(lambda s: s["containerStatuses"][0]["restartCount"] >= 3, timeout=30)
    cs = st["containerStatuses"][0]
    assert st["phase"] == "Running"  # restartPolicy Always: a crash-looping pod is Running
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    backoffs = [e for e in w.events if e.reason == "BackOff"]
    assert backoffs and backoffs[0].type == "Warning"
    assert backoffs[0].message == "Back-off restarting failed container main in pod p_ns(u1)"
    st = w.wait(lambda s: "waiting" in s["containerStatuses"][0]["state"], timeout=30)
    waiting = st["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "CrashLoopBackOff"
    assert waiting["message"].startswith("back-off ") and waiting["message"].endswith(
        "restarting failed container=main pod=p_ns(u1)"
    )


def test_refused_command_fails_with_start_error(make) -> None:
    w = make(pod(ctr("main", "curl", "example.com"), policy="Never"))
    st = w.wait(phase("Failed"))
    term = st["containerStatuses"][0]["state"]["terminated"]
    assert (term["reason"], term["exitCode"]) == ("StartError", 128)
    assert any(e.reason == "Failed" and "allowlist" in e.message for e in w.events)


def test_init_containers_run_first(make, rt) -> None:
    w = make(pod(ctr("main", "sh", "-c", "echo main"), policy="Never", init=[ctr("setup", "sh", "-c", "echo init")]))
    st = w.wait(phase("Succeeded"))
    assert st["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert rt.logs("u1", "setup") == "init\n" and rt.logs("u1", "main") == "main\n"


def test_failed_init_container_fails_the_pod_under_never(make, rt) -> None:
    w = make(pod(ctr("main", "echo", "never runs"), policy="Never", init=[ctr("setup", "false")]))
    st = w.wait(phase("Failed"))
    assert st["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"
    assert rt.status("u1", "main") is None


def test_env_from_value_and_field_refs() -> None:
    p = pod(ctr("main", "env"))
    c = ctr(
        "main",
        "env",
        env=[
            {"name": "A", "value": "1"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        ],
    )
    assert resolve_env(c, p, "n0") == {"A": "1", "POD": "p", "NODE": "n0", "APP": "x"}


def test_secret_refs_wait_with_create_container_config_error(make) -> None:
    c = ctr("main", "env", env=[{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}])
    w = make(pod(c))
    st = w.wait(
        lambda s: (
            "waiting" in s["containerStatuses"][0]["state"]
            and s["containerStatuses"][0]["state"]["waiting"]["reason"] == "CreateContainerConfigError"
        )
    )
    assert "secretKeyRef is not supported" in st["containerStatuses"][0]["state"]["waiting"]["message"]
    assert st["phase"] == "Pending"


def test_admission_failure_and_device_envs(plugin_dir, plugins, make) -> None:
    dm = DeviceManager(plugin_dir)
    dm.start()
    try:
        plugins(plugin_dir, RES, ["d0"]).register()
        assert dm.wait_for(lambda m: m.node_resources()[1].get(RES) == 1)
        gpu = {"resources": {"limits": {RES: "1"}}}
        ok = make(pod(ctr("main", "sh", "-c", 'echo "$FAKE_VISIBLE"', **gpu), policy="Never", uid="a"), devices=dm)
        ok.wait(phase("Succeeded"))
        assert ok.runtime.logs("a", "main") == "d0\n"
        # The device is held until the pod is terminated (deleted), so a second pod cannot be admitted.
        late = make(pod(ctr("main", "true", **gpu), uid="b"), devices=dm)
        st = late.wait(phase("Failed"))
        assert st["reason"] == "UnexpectedAdmissionError"
        assert st["message"] == (
            "Allocate failed due to requested number of devices unavailable for "
            f"{RES}. Requested: 1, Available: 0, which is unexpected"
        )
        assert [e.reason for e in late.events] == ["UnexpectedAdmissionError"]
        ok.terminate(grace=0)
        again = make(pod(ctr("main", "true", **gpu), policy="Never", uid="c"), devices=dm)
        again.wait(phase("Succeeded"))
    finally:
        dm.stop()
