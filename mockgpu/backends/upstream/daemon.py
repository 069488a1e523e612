"""The supervisor of an upstream cluster: etcd, kube-apiserver, kube-controller-manager and kube-scheduler
as child processes, and mockgpu's fake kubelets (device plugins over gRPC, the process runtime) in it.

``python -m mockgpu.backends.upstream.daemon STATE_DIR`` (started detached by ``cluster.spawn``): takes
``upstream.lock``, starts the components in order, each once the previous answers, then the kubelets'
API server (container logs) and one kubelet per spec node, and reports progress in ``controlplane.json``
(``{"state": "starting"|"ready"|"failed", "step", "error", "timings"}``). With ``spec.kueue.enabled`` it then
starts Kueue's manager (``kueue.py``) and is ready only once the API server's calls to its webhooks answer. Children get
``PR_SET_PDEATHSIG``: if the supervisor dies, even by SIGKILL, so do they. On SIGTERM it stops the
kubelets (containers, device plugins), then the scheduler, the controller manager, the API server and
etcd, each with SIGTERM and, after 10 s, SIGKILL.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import http.client
import json
import logging
import os
import secrets
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import yaml

from mockgpu.backends.common.controlplane import ControlPlane
from mockgpu.backends.common.kubeconfig import api_client_for, write_kubeconfig
from mockgpu.backends.common.recorder import ResultsRecorder
from mockgpu.backends.common.schedlog import SchedulerLog
from mockgpu.backends.upstream import components, kueue
from mockgpu.backends.upstream.binaries import binary, kueue_manifests, kueue_missing
from mockgpu.backends.upstream.pki import ensure_kueue_pki
from mockgpu.backends.upstream.state import (
    ENDPOINT_NAME,
    LOCK_NAME,
    PID_NAME,
    PROGRESS_NAME,
    UpstreamState,
    free_ports,
    token_file,
)
from mockgpu.control.kubelet.kubelet import KubeletOptions
from mockgpu.control.kubelet.server import KubeletServer
from mockgpu.control.scheduler.config import load_scheduler_config
from mockgpu.errors import MockgpuError
from mockgpu.privatefs import open_private, private_dir, write_private

log = logging.getLogger("mockgpu.upstream")
PR_SET_PDEATHSIG = 1
RECORDER_VERBOSITY = 10  # the scheduler logs its scores from -v=10; the results recorder needs them


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Component:
    """One upstream process: its argv, its log, started and stopped by the supervisor's main thread
    (PR_SET_PDEATHSIG follows the thread that forked, so only the main thread starts components)."""

    def __init__(self, name: str, argv: list[str], log_path: Path) -> None:
        self.name, self.argv, self.log_path = name, argv, log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> Component:
        private_dir(self.log_path.parent)
        self._log = os.fdopen(open_private(self.log_path, os.O_WRONLY | os.O_APPEND), "ab")
        self.proc = subprocess.Popen([str(binary(self.name)), *self.argv], stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
                                     close_fds=True)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n: int = 3) -> str:
        try:
            lines = [ln for ln in self.log_path.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return " | ".join(lines[-n:])[-800:]

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._log is not None:
            self._log.close()
            self._log = None


def _get(port: int, path: str, *, ctx: ssl.SSLContext | None, token: str | None = None) -> int:
    """A GET on a loopback endpoint, HTTPS with ``ctx`` or plain HTTP without (Kueue's health probes); its status,
    0 when nothing answers."""
    conn: http.client.HTTPConnection = http.client.HTTPSConnection("127.0.0.1", port, timeout=2, context=ctx) \
        if ctx is not None else http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except OSError:
        return 0
    finally:
        conn.close()


def _post(port: int, path: str, body: dict[str, Any], *, ctx: ssl.SSLContext, token: str) -> tuple[int, str]:
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
    try:
        conn.request("POST", path, body=json.dumps(body),
                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    except OSError as exc:
        return 0, str(exc)
    finally:
        conn.close()


def wait_until(what: str, ok: Callable[[], bool], component: Component, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ok():
            return
        if not component.alive():
            raise MockgpuError(f"{component.name} exited during start: {component.tail()} "
                               f"(see {component.log_path})")
        time.sleep(0.1)
    raise MockgpuError(f"{what} within {timeout:.0f} s (see {component.log_path})")


class Supervisor:
    def __init__(self, state: UpstreamState, *, scheduler_verbosity: int | None = None) -> None:
        self.state = state
        self.config = state.read_config()
        self.layout, self.ports = state.layout, state.ports()
        self.verbosity = scheduler_verbosity if scheduler_verbosity is not None else \
            int(self.config.get("schedulerVerbosity") or RECORDER_VERBOSITY)
        self.components: list[Component] = []
        self.control_plane: ControlPlane | None = None
        self.kubelet_server: KubeletServer | None = None
        self.recorder: ResultsRecorder | None = None
        self.timings: dict[str, float] = {}
        self._t0 = time.monotonic()
        self.kueue = state.load_spec().spec.kueue.enabled

    # -- files -------------------------------------------------------------------------------------
    def write_files(self) -> None:
        """Token file, component kubeconfigs and the scheduler's configuration (rewritten at every start,
        so a moved checkout or binary never leaves a stale path behind)."""
        ly, cfg = self.layout, self.config
        if self.kueue:
            self._prepare_kueue()
        write_private(ly.tokens, token_file(cfg))
        ca = (ly.pki / "ca.crt").read_bytes()
        url = f"https://127.0.0.1:{self.ports.apiserver}"
        for component, key in (("kube-scheduler", "schedulerToken"),
                               ("kube-controller-manager", "controllerManagerToken")):
            path = ly.kubeconfig(component)
            path.unlink(missing_ok=True)
            write_kubeconfig(path, self.state.name, url, cfg[key], ca)
        doc = None
        if cfg.get("schedulerConfig"):
            doc = yaml.safe_load(Path(cfg["schedulerConfig"]).read_text())
        write_private(ly.scheduler_config, yaml.safe_dump(
            components.scheduler_configuration(doc, ly.kubeconfig("kube-scheduler")), sort_keys=False))

    def _prepare_kueue(self) -> None:
        """Before kube-apiserver starts (it reads its token file once): the manager's token, its three loopback
        ports and its webhook certificate, for a cluster created before it had them too."""
        problem = kueue_missing()
        if problem:
            raise MockgpuError(problem, exit_code=2)
        cfg = self.config
        if "kueueToken" not in cfg or "kueuePorts" not in cfg:
            cfg.setdefault("kueueToken", secrets.token_urlsafe(32))
            if "kueuePorts" not in cfg:
                p = free_ports(3)
                cfg["kueuePorts"] = {"webhook": p[0], "health": p[1], "metrics": p[2]}
            self.state.write_config(cfg)
        ensure_kueue_pki(self.layout.pki, self.state.name)  # makes only what is missing

    # -- progress ----------------------------------------------------------------------------------
    def report(self, phase: str, step: str = "", error: str = "") -> None:
        write_private(self.state.dir / PROGRESS_NAME,
                      json.dumps({"state": phase, "step": step, "error": error, "timings": self.timings}))

    def mark(self, step: str) -> None:
        self.timings[step] = round(time.monotonic() - self._t0, 2)
        log.info("upstream: %s after %.2f s", step, self.timings[step])
        self.report("starting", step)

    # -- start / stop ------------------------------------------------------------------------------
    def _start(self, name: str, argv: list[str]) -> Component:
        c = Component(name, argv, self.layout.log(name)).start()
        self.components.append(c)
        return c

    def start(self) -> None:
        ly, ports = self.layout, self.ports
        ca = str(ly.pki / "ca.crt")
        self.write_files()
        etcd_ctx = ssl.create_default_context(cafile=ca)
        etcd_ctx.load_cert_chain(ly.cert("apiserver-etcd-client"), ly.key("apiserver-etcd-client"))
        etcd = self._start("etcd", components.etcd(ly, ports))
        wait_until("etcd was not healthy", lambda: _get(ports.etcd_client, "/health", ctx=etcd_ctx) == 200,
                   etcd, 60)
        self.mark("etcd")
        gates = self.state.load_spec().feature_gates()  # the spec's featureGates, for all three components
        api = self._start("kube-apiserver", components.kube_apiserver(
            ly, ports, extra=tuple(self.config.get("apiserverExtraArgs") or ()), gates=gates))
        api_ctx = ssl.create_default_context(cafile=ca)
        token = self.config["token"]
        wait_until("kube-apiserver was not ready",
                   lambda: _get(ports.apiserver, "/readyz", ctx=api_ctx, token=token) == 200, api, 180)
        self.mark("kube-apiserver")
        self._write_endpoint()
        # Their serving certificates are self-signed in memory: /healthz is only polled, on loopback.
        loose = ssl.create_default_context()
        loose.check_hostname, loose.verify_mode = False, ssl.CERT_NONE
        kcm = self._start("kube-controller-manager", components.kube_controller_manager(
            ly, ports, controllers=str(self.config.get("controllers") or "*"), gates=gates))
        sched = self._start("kube-scheduler", components.kube_scheduler(ly, ports, self.verbosity, gates=gates))
        for c, port in ((kcm, ports.controller_manager), (sched, ports.scheduler)):
            wait_until(f"{c.name} was not healthy", lambda p=port: _get(p, "/healthz", ctx=loose) == 200, c, 120)
        self.mark("kube-controller-manager and kube-scheduler")
        if self.verbosity >= RECORDER_VERBOSITY:
            sched = load_scheduler_config(None, ly.scheduler_config)
            weights = {name: p.score_weights() for name, p in sched.profiles.items()}
            api = api_client_for(f"https://127.0.0.1:{ports.apiserver}", ly.pki / "ca.crt", token)
            self.recorder = ResultsRecorder(api, SchedulerLog(ly.log("kube-scheduler")), weights).start()
        # Pods are refused until the controller manager has made the namespace's ServiceAccount
        # (admission: 'error looking up service account default/default'); kind and kubeadm users wait too.
        wait_until("the default ServiceAccount was not created",
                   lambda: _get(ports.apiserver, "/api/v1/namespaces/default/serviceaccounts/default",
                                ctx=api_ctx, token=token) == 200, kcm, 60)
        self.mark("default ServiceAccount")
        self._start_kubelets()
        if self.kueue:
            self._start_kueue()

    def _kubectl(self, kubeconfig: Path, *args: str, timeout: float = 120) -> str:
        done = subprocess.run([str(binary("kubectl")), f"--kubeconfig={kubeconfig}", *args], capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise MockgpuError(f"kubectl {args[0]} for Kueue failed: {done.stderr.strip()[-800:]}")
        return done.stdout

    def _start_kueue(self) -> None:
        """Kueue's release manifests for a local manager (``kueue.local_manifests``), its manager once the CRDs are
        Established; ready when a dry-run ResourceFlavor passes the API server's calls of Kueue's mutating and
        validating webhooks."""
        ly, cfg = self.layout, self.config
        ports = kueue.KueuePorts(**cfg["kueuePorts"])
        home = ly.dir / "kueue"
        private_dir(home)
        pki = kueue.WebhookPKI.read(ly.pki)
        certs = home / "serving-certs"  # in a cluster: the Secret, mounted by the kubelet
        private_dir(certs)
        for name, data in pki.mounted().items():
            write_private(certs / name, data)
        release = kueue.load_release(kueue_manifests())
        ca = (ly.pki / "ca.crt").read_bytes()
        url = f"https://127.0.0.1:{self.ports.apiserver}"
        for component, key in (("kueue-manager", "kueueToken"), ("kueue-installer", "token")):
            ly.kubeconfig(component).unlink(missing_ok=True)
            write_kubeconfig(ly.kubeconfig(component), self.state.name, url, cfg[key], ca)
        installer = ly.kubeconfig("kueue-installer")
        docs = kueue.local_manifests(release, ports.webhook, pki)
        write_private(home / "manifests.yaml", yaml.safe_dump_all(docs, sort_keys=False))
        # all at once, as a release install: Kueue's certificate rotator wants its webhook configurations there
        self._kubectl(installer, "apply", "--server-side", "--force-conflicts", "--field-manager=mockgpu-kueue",
                      "-f", str(home / "manifests.yaml"))
        crds = [f"crd/{d['metadata']['name']}" for d in docs if d.get("kind") == "CustomResourceDefinition"]
        self._kubectl(installer, "wait", "--for=condition=Established", "--timeout=60s", *crds)
        self.mark("Kueue's CRDs, RBAC and webhook configurations")
        write_private(home / "config.yaml", yaml.safe_dump(kueue.manager_configuration(release, ports, certs),
                                                           sort_keys=False))
        manager = self._start("kueue-manager", kueue.manager_argv(home / "config.yaml",
                                                                  ly.kubeconfig("kueue-manager")))
        wait_until("Kueue's manager was not ready", lambda: _get(ports.health, "/readyz", ctx=None) == 200, manager,
                   120)
        api_ctx = ssl.create_default_context(cafile=str(ly.pki / "ca.crt"))
        probe = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                 "metadata": {"name": "mockgpu-webhook-probe"}}
        last: list[str] = []

        def webhooks_answer() -> bool:
            code, body = _post(self.ports.apiserver, "/apis/kueue.x-k8s.io/v1beta2/resourceflavors?dryRun=All",
                               probe, ctx=api_ctx, token=cfg["token"])
            last[:] = [f"{code} {body[:300]}"]
            return code in (200, 201)

        try:
            wait_until("Kueue's webhooks did not answer the API server", webhooks_answer, manager, 60)
        except MockgpuError as exc:
            raise MockgpuError(f"{exc}; last answer: {last[0] if last else 'none'}") from None
        self.mark("Kueue's manager: webhooks answering")

    def _start_kubelets(self) -> None:
        ly = self.layout
        self.control_plane = ControlPlane(self.state, f"https://127.0.0.1:{self.ports.apiserver}",
                                          self.config["token"], kubelets=True, scheduler=False,
                                          kubelet_options=KubeletOptions(port=self.ports.kubelet),
                                          ready_timeout=60.0)
        self.kubelet_server = KubeletServer(self.ports.kubelet, self.state.dir, self._find_pod,
                                            cert=Path(ly.cert("kubelet")), key=Path(ly.key("kubelet")),
                                            client_ca=ly.pki / "ca.crt").start()
        self.control_plane.start()
        self.mark("kubelets: every node Ready with its device plugins registered")

    def _find_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        cp = self.control_plane
        for k in list((cp.kubelets if cp else {}).values()):
            for pod in list(k.pods.pods.values()):
                meta = pod.get("metadata") or {}
                if meta.get("namespace") == namespace and meta.get("name") == name:
                    return pod
        return None

    def _write_endpoint(self) -> None:
        write_private(self.state.dir / ENDPOINT_NAME,
                      json.dumps({"pid": os.getpid(), "port": self.ports.apiserver, "mode": "daemon"}))

    def first_dead(self) -> Component | None:
        return next((c for c in self.components if not c.alive()), None)

    def stop(self) -> None:
        if self.recorder is not None:
            self.recorder.stop()
            self.recorder = None
        if self.control_plane is not None:
            with contextlib.suppress(Exception):
                self.control_plane.stop()
            self.control_plane = None
        if self.kubelet_server is not None:
            self.kubelet_server.stop()
            self.kubelet_server = None
        for c in reversed(self.components):
            c.stop()
        self.components.clear()


def run_daemon(state_dir: Path) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sys.modules.setdefault("kubernetes_validate", None)  # see the embedded daemon: not needed, slow to import
    state = UpstreamState(Path(state_dir).name, Path(state_dir))
    lock = os.fdopen(open_private(state.dir / LOCK_NAME, os.O_WRONLY | os.O_APPEND), "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        log.error("another supervisor holds %s", state.dir)
        return 1
    write_private(state.dir / PID_NAME, str(os.getpid()))
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    sup = Supervisor(state)
    code = 0
    try:
        sup.report("starting", "etcd")
        sup.start()
        sup.report("ready", "ready")
        while not done.wait(1.0):
            dead = sup.first_dead()
            if dead is not None:
                log.error("%s exited (code %s): %s", dead.name, dead.proc.returncode if dead.proc else "?",
                          dead.tail())
                sup.report("failed", dead.name, f"{dead.name} exited: {dead.tail()}")
                code = 1
                break
    except BaseException as exc:  # noqa: BLE001 - reported, then everything is stopped
        log.exception("upstream control plane failed")
        sup.report("failed", "", str(exc))
        code = 1
    finally:
        sup.stop()
        (state.dir / ENDPOINT_NAME).unlink(missing_ok=True)
        log.info("upstream control plane stopped")
    return code


if __name__ == "__main__":
    sys.exit(run_daemon(Path(sys.argv[1])))
