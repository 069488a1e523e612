"""Kueue next to the upstream control plane (``spec.kueue: {enabled: true}``): what to apply and how to run it.

``scripts/upstream-build kueue`` builds Kueue's manager (``sigs.k8s.io/kueue/cmd/kueue`` at ``KUEUE_VERSION`` of
``versions.env``) as ``kueue-manager`` and renders Kueue's release manifests from the module's own ``config/default``
(kustomize, as Kueue's ``make artifacts`` does) into ``<cache>/kueue/<version>/manifests.yaml``. A release install
runs the manager as a Deployment behind Services, with its webhook certificate made in-cluster (Kueue's
``internalCertManagement``, open-policy-agent's cert-controller). Here there is no kube-proxy and no Pod network, so
the supervisor runs the same binary as a local process and these pure functions adapt the release manifests:

- applied unchanged: the Namespace, the CRDs, every RBAC object and the ServiceAccount. The manager authenticates
  with a static token whose user *is* that ServiceAccount's name (``system:serviceaccount:kueue-system:
  kueue-controller-manager``), so the release's own RoleBindings grant it exactly what they grant in a cluster;
- rewritten: the webhook configurations and the CRDs' conversion webhooks point at ``https://127.0.0.1:<port>/<path>``
  instead of at the ``kueue-webhook-service`` Service, with Kueue's CA as ``caBundle``;
- filled: the Secret ``kueue-webhook-server-cert`` gets a CA and serving certificate made here (``pki.py``'s
  ``ensure_kueue_pki``: a CA of Kueue's own, not the cluster's, with the SAN ``kueue-ca`` Kueue's rotator checks, and a
  certificate for both the Service name the rotator checks and 127.0.0.1, which the API server calls). The rotator
  finds them valid, keeps them and injects the same CA; the supervisor writes the same files into the manager's
  ``certDir``, where a kubelet would mount the Secret. (Kueue's other mode,
  ``internalCertManagement.enable: false``, reads its metrics certificate from the fixed path
  ``/etc/kueue/metrics/certs``, which a local process of one cluster among several cannot own);
- left out: the Deployment, the Services, the manager ConfigMap (its configuration goes to the process as a file,
  below), and the two ``visibility.kueue.x-k8s.io`` APIServices: the on-demand visibility API is an aggregated API
  server, which needs the API server's front-proxy (requestheader) set-up this backend does not make, so its feature
  gate ``VisibilityOnDemand`` is turned off (docs/upstream.md says so).

The manager's Configuration is the release's (``controller_manager_config.yaml`` of that ConfigMap, so the
integrations list, batch/job among them, is Kueue's default), bound to 127.0.0.1 ports, without leader election (one
manager).
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

NAMESPACE = "kueue-system"
SERVICE_ACCOUNT = "kueue-controller-manager"
MANAGER_USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
MANAGER_GROUPS = f"system:serviceaccounts,system:serviceaccounts:{NAMESPACE}"
CONFIG_MAP = "kueue-manager-config"
CONFIG_KEY = "controller_manager_config.yaml"
WEBHOOK_SERVICE = "kueue-webhook-service"
WEBHOOK_SECRET = "kueue-webhook-server-cert"
LOCAL_ONLY_GATES = {"VisibilityOnDemand": False}  # an aggregated API server: see the module docstring
# What a release install runs in the cluster that this backend runs as a process or does not run at all.
LEFT_OUT = frozenset({"Deployment", "Service", "Secret", "ConfigMap", "APIService"})
WEBHOOK_KINDS = frozenset({"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"})


@dataclass(frozen=True)
class KueuePorts:
    webhook: int
    health: int
    metrics: int


def load_release(manifests: Path) -> list[dict[str, Any]]:
    """The release manifests, one dict per object (empty documents dropped)."""
    return [d for d in yaml.safe_load_all(manifests.read_text()) if d]


def _local_client_config(client: dict[str, Any], base_url: str, ca_bundle: str) -> dict[str, Any]:
    """A ``service`` clientConfig of Kueue's webhook Service turned into a ``url`` one on loopback."""
    service = client.get("service") or {}
    if service.get("name") != WEBHOOK_SERVICE or service.get("namespace") != NAMESPACE:
        raise ValueError(f"unexpected webhook service {service.get('namespace')}/{service.get('name')}")
    return {"url": base_url + (service.get("path") or "/"), "caBundle": ca_bundle}


@dataclass(frozen=True)
class WebhookPKI:
    """PEM files of Kueue's CA and webhook serving certificate (``pki.ensure_kueue_pki``)."""

    ca_crt: bytes
    ca_key: bytes
    tls_crt: bytes
    tls_key: bytes

    @classmethod
    def read(cls, pki: Path) -> WebhookPKI:
        return cls(*((pki / name).read_bytes() for name in
                     ("kueue-ca.crt", "kueue-ca.key", "kueue-webhook.crt", "kueue-webhook.key")))

    def mounted(self) -> dict[str, bytes]:
        """The Secret's files as the manager's ``certDir`` holds them (in a cluster, the kubelet mounts the Secret
        there; the rotator only checks that ``tls.crt`` exists)."""
        return {"ca.crt": self.ca_crt, "ca.key": self.ca_key, "tls.crt": self.tls_crt, "tls.key": self.tls_key}

    def secret(self) -> dict[str, Any]:
        """``kueue-webhook-server-cert`` as Kueue's rotator (cert-controller) lays it out."""
        data = self.mounted()
        return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": WEBHOOK_SECRET, "namespace": NAMESPACE,
                             "labels": {"app.kubernetes.io/name": "kueue"}},
                "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


def local_manifests(release: list[dict[str, Any]], webhook_port: int, pki: WebhookPKI) -> list[dict[str, Any]]:
    """The objects to apply for a manager serving its webhooks on ``127.0.0.1:webhook_port``."""
    base = f"https://127.0.0.1:{webhook_port}"
    ca_bundle = base64.b64encode(pki.ca_crt).decode()
    out = []
    for doc in release:
        kind = doc.get("kind")
        if kind in LEFT_OUT:
            continue
        doc = copy.deepcopy(doc)
        if kind in WEBHOOK_KINDS:
            for hook in doc.get("webhooks") or []:
                hook["clientConfig"] = _local_client_config(hook.get("clientConfig") or {}, base, ca_bundle)
        elif kind == "CustomResourceDefinition":
            conversion = (doc.get("spec") or {}).get("conversion") or {}
            webhook = conversion.get("webhook")
            if conversion.get("strategy") == "Webhook" and webhook:
                webhook["clientConfig"] = _local_client_config(webhook.get("clientConfig") or {}, base, ca_bundle)
        out.append(doc)
        if kind == "Namespace":
            out.append(pki.secret())
    return out


def release_configuration(release: list[dict[str, Any]]) -> dict[str, Any]:
    """The manager's Configuration the release ships (``kueue-manager-config``'s ``controller_manager_config.yaml``)."""
    for doc in release:
        meta = doc.get("metadata") or {}
        if doc.get("kind") == "ConfigMap" and meta.get("name") == CONFIG_MAP:
            data = (doc.get("data") or {}).get(CONFIG_KEY)
            if data:
                config: dict[str, Any] = yaml.safe_load(data)
                return config
    raise ValueError(f"the Kueue manifests have no ConfigMap {CONFIG_MAP} with {CONFIG_KEY}")


def manager_configuration(release: list[dict[str, Any]], ports: KueuePorts, cert_dir: Path) -> dict[str, Any]:
    """The release Configuration for a local manager: every listener on 127.0.0.1, webhook certificates in
    ``cert_dir`` (the Secret's files), one manager (no leader election)."""
    config = copy.deepcopy(release_configuration(release))
    config["namespace"] = NAMESPACE
    config["health"] = {**(config.get("health") or {}), "healthProbeBindAddress": f"127.0.0.1:{ports.health}"}
    config["metrics"] = {**(config.get("metrics") or {}), "bindAddress": f"127.0.0.1:{ports.metrics}"}
    config["webhook"] = {**(config.get("webhook") or {}), "host": "127.0.0.1", "port": ports.webhook,
                         "certDir": str(cert_dir)}
    config["leaderElection"] = {**(config.get("leaderElection") or {}), "leaderElect": False}
    config["internalCertManagement"] = {"enable": True, "webhookServiceName": WEBHOOK_SERVICE,
                                        "webhookSecretName": WEBHOOK_SECRET}
    config["featureGates"] = {**(config.get("featureGates") or {}), **LOCAL_ONLY_GATES}
    return config


def manager_argv(config_file: Path, kubeconfig: Path, log_level: int = 2) -> list[str]:
    """The manager's flags: the release Deployment's (``--config``, ``--zap-log-level=2``) plus the kubeconfig
    (controller-runtime's ``--kubeconfig``) a Pod would not need."""
    return [f"--config={config_file}", f"--zap-log-level={log_level}", f"--kubeconfig={kubeconfig}"]
