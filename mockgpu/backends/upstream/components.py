"""The command lines of etcd, kube-apiserver, kube-controller-manager and kube-scheduler (pure: paths and
ports in, argv out), close to what kubeadm writes into its static Pod manifests, minus what needs a node.

Every listener binds 127.0.0.1. etcd accepts only clients with a certificate from the cluster CA;
kube-apiserver accepts only its tokens and CA-signed client certificates (no anonymous requests); the
controller manager and scheduler serve /healthz on loopback and authenticate with their own tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mockgpu.backends.upstream.pki import LOOPBACK, SERVICE_CIDR
from mockgpu.config.featuregates import DEFAULT as DEFAULT_GATES
from mockgpu.config.featuregates import FeatureGates

SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"


@dataclass(frozen=True)
class Ports:
    apiserver: int
    etcd_client: int
    etcd_peer: int
    controller_manager: int
    scheduler: int
    kubelet: int  # the fake kubelets' API (container logs), shared by every node of the cluster


@dataclass(frozen=True)
class Layout:
    """The files of one upstream cluster under its state dir."""

    dir: Path

    @property
    def pki(self) -> Path:
        return self.dir / "pki"

    def cert(self, stem: str) -> str:
        return str(self.pki / f"{stem}.crt")

    def key(self, stem: str) -> str:
        return str(self.pki / f"{stem}.key")

    @property
    def etcd_data(self) -> Path:
        return self.dir / "etcd"

    @property
    def tokens(self) -> Path:
        return self.dir / "tokens.csv"

    def kubeconfig(self, component: str) -> Path:
        return self.dir / f"{component}.kubeconfig"

    @property
    def scheduler_config(self) -> Path:
        return self.dir / "kube-scheduler.yaml"

    def log(self, component: str) -> Path:
        return self.dir / "logs" / f"{component}.log"


def etcd(layout: Layout, ports: Ports) -> list[str]:
    peer = f"http://{LOOPBACK}:{ports.etcd_peer}"  # a single member: no peer ever connects
    client = f"https://{LOOPBACK}:{ports.etcd_client}"
    return [
        "--name=mockgpu", f"--data-dir={layout.etcd_data}",
        f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=mockgpu={peer}", "--initial-cluster-state=new",
        f"--cert-file={layout.cert('etcd-server')}", f"--key-file={layout.key('etcd-server')}",
        "--client-cert-auth=true", f"--trusted-ca-file={layout.cert('ca')}",
        "--snapshot-count=10000", "--log-level=warn",
    ]


def _gates(gates: FeatureGates) -> list[str]:
    """``--feature-gates`` as kind and kubeadm pass the spec's ``featureGates`` (nothing when none is set)."""
    return [f"--feature-gates={gates.flag()}"] if gates.flag() else []


def kube_apiserver(layout: Layout, ports: Ports, verbosity: int = 1, extra: tuple[str, ...] = (),
                   gates: FeatureGates = DEFAULT_GATES) -> list[str]:
    """``extra``: more flags (the conformance suite disables TaintNodesByCondition, whose not-ready taint
    only the node-lifecycle-controller it also disables would take off its kubelet-less nodes). ``gates``: the
    spec's feature gates, and ``--runtime-config`` for the API versions their kinds are served in."""
    runtime = [f"--runtime-config={gates.runtime_config()}"] if gates.runtime_config() else []
    return [
        f"--bind-address={LOOPBACK}", f"--advertise-address={LOOPBACK}", f"--secure-port={ports.apiserver}",
        f"--etcd-servers=https://{LOOPBACK}:{ports.etcd_client}", f"--etcd-cafile={layout.cert('ca')}",
        f"--etcd-certfile={layout.cert('apiserver-etcd-client')}",
        f"--etcd-keyfile={layout.key('apiserver-etcd-client')}",
        f"--tls-cert-file={layout.cert('apiserver')}", f"--tls-private-key-file={layout.key('apiserver')}",
        f"--client-ca-file={layout.cert('ca')}", f"--token-auth-file={layout.tokens}",
        "--anonymous-auth=false", "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={layout.pki / 'sa.pub'}",
        f"--service-account-signing-key-file={layout.pki / 'sa.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}", "--allow-privileged=true",
        f"--kubelet-client-certificate={layout.cert('apiserver-kubelet-client')}",
        f"--kubelet-client-key={layout.key('apiserver-kubelet-client')}",
        f"--kubelet-certificate-authority={layout.cert('ca')}",
        "--kubelet-preferred-address-types=InternalIP,Hostname",
        "--endpoint-reconciler-type=none",  # no kube-proxy here: the kubernetes Service gets no endpoints
        *_gates(gates), *runtime, f"-v={verbosity}", *extra,
    ]


def _served(layout: Layout, component: str, port: int) -> list[str]:
    kc = layout.kubeconfig(component)
    return [f"--bind-address={LOOPBACK}", f"--secure-port={port}",
            f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}"]


def kube_controller_manager(layout: Layout, ports: Ports, verbosity: int = 1, controllers: str = "*",
                            gates: FeatureGates = DEFAULT_GATES) -> list[str]:
    """``controllers``: kube-controller-manager's ``--controllers`` (the conformance suite turns off the
    node-lifecycle-controller, whose not-ready taints would land on its kubelet-less nodes)."""
    return [
        *_served(layout, "kube-controller-manager", ports.controller_manager),
        f"--kubeconfig={layout.kubeconfig('kube-controller-manager')}",
        "--leader-elect=false", "--use-service-account-credentials=true",
        f"--service-account-private-key-file={layout.pki / 'sa.key'}", f"--root-ca-file={layout.cert('ca')}",
        f"--cluster-signing-cert-file={layout.cert('ca')}", f"--cluster-signing-key-file={layout.key('ca')}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        *_gates(gates), f"-v={verbosity}",
    ]


def kube_scheduler(layout: Layout, ports: Ports, verbosity: int = 1,
                   gates: FeatureGates = DEFAULT_GATES) -> list[str]:
    """``verbosity`` 10 makes the scheduler log every plugin's score per node (the conformance suite's)."""
    return [
        *_served(layout, "kube-scheduler", ports.scheduler),
        f"--config={layout.scheduler_config}", "--logging-format=json", *_gates(gates), f"-v={verbosity}",
    ]


def scheduler_configuration(doc: dict | None, kubeconfig: Path) -> dict:
    """The spec's KubeSchedulerConfiguration (or the default one) pointed at this cluster: its kubeconfig,
    no leader election (one scheduler). Everything else, profiles and plugin args, is passed unchanged."""
    out = dict(doc or {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"})
    out["clientConnection"] = {**(out.get("clientConnection") or {}), "kubeconfig": str(kubeconfig)}
    out["leaderElection"] = {**(out.get("leaderElection") or {}), "leaderElect": False}
    return out
