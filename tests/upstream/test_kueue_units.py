"""Kueue on the upstream backend, its pure parts (no build needed): the release manifests adapted for a local manager,
its Configuration, its certificates, the spec field, and what the other backends say about it."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import stat
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import ValidationError

from mockgpu.backends.base import ClusterInfo
from mockgpu.backends.embedded.backend import EmbeddedBackend
from mockgpu.backends.embedded.cluster import KUEUE_ELSEWHERE, EmbeddedCluster
from mockgpu.backends.upstream import kueue
from mockgpu.backends.upstream.backend import UpstreamBackend
from mockgpu.backends.upstream.pki import ensure_kueue_pki
from mockgpu.backends.upstream.state import new_config, token_file
from mockgpu.config.clusterspec import ClusterSpec
from mockgpu.widgets.labkit import LabCluster

SERVICE = {"name": "kueue-webhook-service", "namespace": "kueue-system"}
CONFIG = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
          "health": {"healthProbeBindAddress": ":8081"}, "metrics": {"bindAddress": ":8443"},
          "webhook": {"port": 9443}, "leaderElection": {"leaderElect": True, "resourceName": "x"},
          "integrations": {"frameworks": ["batch/job", "pod"]}}
# A release in small: one object of each kind the rendered config/default holds, in its shape.
RELEASE = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}},
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
     "metadata": {"name": "workloads.kueue.x-k8s.io"},
     "spec": {"conversion": {"strategy": "Webhook", "webhook": {
         "clientConfig": {"service": {**SERVICE, "path": "/convert"}}, "conversionReviewVersions": ["v1"]}}}},
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
     "metadata": {"name": "resourceflavors.kueue.x-k8s.io"}, "spec": {}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
     "metadata": {"name": "kueue-manager-rolebinding"},
     "subjects": [{"kind": "ServiceAccount", "name": "kueue-controller-manager", "namespace": "kueue-system"}]},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
     "data": {"controller_manager_config.yaml": yaml.safe_dump(CONFIG)}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kueue-webhook-server-cert"}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kueue-webhook-service"}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kueue-controller-manager"}},
    {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
     "metadata": {"name": "v1beta2.visibility.kueue.x-k8s.io"}},
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
     "metadata": {"name": "kueue-mutating-webhook-configuration"},
     "webhooks": [{"name": "mjob.kb.io", "clientConfig": {"service": {**SERVICE, "path": "/mutate-batch-v1-job"}}}]},
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
     "metadata": {"name": "kueue-validating-webhook-configuration"},
     "webhooks": [{"name": "vjob.kb.io", "clientConfig": {"service": {**SERVICE, "path": "/validate-batch-v1-job"}}}]},
]
PKI = kueue.WebhookPKI(b"CA", b"CAKEY", b"CRT", b"KEY")


def _by_kind(docs):
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


@pytest.mark.parametrize(("kind", "name", "kept"), [
    ("Namespace", "kueue-system", True),
    ("CustomResourceDefinition", "workloads.kueue.x-k8s.io", True),
    ("ClusterRoleBinding", "kueue-manager-rolebinding", True),
    ("Secret", "kueue-webhook-server-cert", True),  # ours, filled: not the release's empty one
    ("MutatingWebhookConfiguration", "kueue-mutating-webhook-configuration", True),
    ("ConfigMap", "kueue-manager-config", False),
    ("Service", "kueue-webhook-service", False),
    ("Deployment", "kueue-controller-manager", False),
    ("APIService", "v1beta2.visibility.kueue.x-k8s.io", False),
])
def test_what_a_local_manager_applies(kind, name, kept):
    assert ((kind, name) in _by_kind(kueue.local_manifests(RELEASE, 40001, PKI))) is kept


@pytest.mark.parametrize(("kind", "name", "url"), [
    ("MutatingWebhookConfiguration", "kueue-mutating-webhook-configuration",
     "https://127.0.0.1:40001/mutate-batch-v1-job"),
    ("ValidatingWebhookConfiguration", "kueue-validating-webhook-configuration",
     "https://127.0.0.1:40001/validate-batch-v1-job"),
    ("CustomResourceDefinition", "workloads.kueue.x-k8s.io", "https://127.0.0.1:40001/convert"),
])
def test_webhooks_point_at_loopback_with_kueues_ca(kind, name, url):
    doc = _by_kind(kueue.local_manifests(RELEASE, 40001, PKI))[(kind, name)]
    client = doc["webhooks"][0]["clientConfig"] if "webhooks" in doc else \
        doc["spec"]["conversion"]["webhook"]["clientConfig"]
    assert client == {"url": url, "caBundle": base64.b64encode(b"CA").decode()}


def test_the_release_is_not_modified_and_a_crd_without_conversion_stays_so():
    before = yaml.safe_dump_all(RELEASE)
    docs = _by_kind(kueue.local_manifests(RELEASE, 40001, PKI))
    assert yaml.safe_dump_all(RELEASE) == before
    assert docs[("CustomResourceDefinition", "resourceflavors.kueue.x-k8s.io")]["spec"] == {}


def test_a_webhook_of_another_service_is_refused():
    other = [{"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "x"},
              "webhooks": [{"clientConfig": {"service": {"name": "evil", "namespace": "default", "path": "/"}}}]}]
    with pytest.raises(ValueError, match="unexpected webhook service default/evil"):
        kueue.local_manifests(other, 1, PKI)


def test_secret_holds_the_four_files_cert_controller_reads():
    secret = _by_kind(kueue.local_manifests(RELEASE, 1, PKI))[("Secret", "kueue-webhook-server-cert")]
    assert secret["metadata"]["namespace"] == "kueue-system"
    assert {k: base64.b64decode(v) for k, v in secret["data"].items()} == PKI.mounted() == {
        "ca.crt": b"CA", "ca.key": b"CAKEY", "tls.crt": b"CRT", "tls.key": b"KEY"}


def test_manager_configuration_is_the_releases_bound_to_loopback(tmp_path):
    cfg = kueue.manager_configuration(RELEASE, kueue.KueuePorts(webhook=1, health=2, metrics=3), tmp_path)
    assert cfg["integrations"] == CONFIG["integrations"]  # Kueue's own defaults, batch/job among them
    assert cfg["webhook"] == {"port": 1, "host": "127.0.0.1", "certDir": str(tmp_path)}
    assert cfg["health"]["healthProbeBindAddress"] == "127.0.0.1:2"
    assert cfg["metrics"]["bindAddress"] == "127.0.0.1:3"
    assert cfg["leaderElection"] == {"leaderElect": False, "resourceName": "x"}
    assert cfg["internalCertManagement"] == {"enable": True, "webhookServiceName": "kueue-webhook-service",
                                             "webhookSecretName": "kueue-webhook-server-cert"}
    assert cfg["featureGates"] == {"VisibilityOnDemand": False}
    assert cfg["namespace"] == "kueue-system"


def test_release_without_its_configuration_is_an_error():
    with pytest.raises(ValueError, match="kueue-manager-config"):
        kueue.release_configuration([d for d in RELEASE if d["kind"] != "ConfigMap"])


def test_kueue_pki_passes_the_checks_of_kueues_rotator(tmp_path):
    """cert-controller's ValidCert: the CA verifies as ``kueue-ca``, the serving certificate as the Service name,
    both beyond its 90-day look-ahead; the CA key is PKCS #1 RSA (``x509.ParsePKCS1PrivateKey``)."""
    pki = ensure_kueue_pki(tmp_path / "pki", "demo")
    ca = x509.load_pem_x509_certificate((pki / "kueue-ca.crt").read_bytes())
    leaf = x509.load_pem_x509_certificate((pki / "kueue-webhook.crt").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName) == ["kueue-ca"]
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["kueue-webhook-service.kueue-system.svc"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    leaf.verify_directly_issued_by(ca)
    ahead = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=91)
    assert ca.not_valid_after_utc > ahead and leaf.not_valid_after_utc > ahead
    key_pem = (pki / "kueue-ca.key").read_bytes()
    assert key_pem.startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    assert isinstance(serialization.load_pem_private_key(key_pem, None), rsa.RSAPrivateKey)
    for name in ("kueue-ca.key", "kueue-webhook.key"):
        assert stat.S_IMODE((pki / name).stat().st_mode) == 0o600
    before = (pki / "kueue-ca.crt").read_bytes()
    ensure_kueue_pki(pki, "demo")
    assert (pki / "kueue-ca.crt").read_bytes() == before  # kept: a resumed cluster keeps its webhook CA


def test_manager_token_is_the_release_service_accounts_user(tmp_path):
    config = new_config("demo", scheduler_config=None, kubeconfig=tmp_path / "kc")
    row = next(r for r in token_file(config).splitlines() if r.startswith(config["kueueToken"]))
    assert row.split(",", 3)[1:] == ["system:serviceaccount:kueue-system:kueue-controller-manager"] * 2 + [
        '"system:serviceaccounts,system:serviceaccounts:kueue-system"']
    old = {k: v for k, v in config.items() if k != "kueueToken"}  # a cluster created before Kueue was added
    assert config["kueueToken"] not in token_file(old)


@pytest.mark.parametrize(("doc", "enabled"), [
    ({}, False),
    ({"kueue": {}}, False),
    ({"kueue": {"enabled": True}}, True),
])
def test_spec_kueue_field(doc, enabled):
    spec = ClusterSpec.model_validate({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec",
                                       "metadata": {"name": "k"}, "spec": doc})
    assert spec.spec.kueue.enabled is enabled


def test_spec_kueue_unknown_field_refused():
    with pytest.raises(ValidationError, match="kueue.enabeld"):
        ClusterSpec.model_validate({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec",
                                    "metadata": {"name": "k"}, "spec": {"kueue": {"enabeld": True}}})


def test_which_backends_can_run_kueue():
    assert UpstreamBackend.traits.kueue is True
    assert EmbeddedBackend.traits.kueue is False
    assert ClusterInfo("x", "embedded", "", Path("k"), "running").kueue is False


def test_embedded_says_in_one_line_and_runs_without_kueue(tmp_path, capsys):
    spec = ClusterSpec.model_validate({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec",
                                       "metadata": {"name": "k"}, "spec": {"kueue": {"enabled": True}}})
    with EmbeddedCluster(spec, home=tmp_path, in_process=True, delete_on_exit=True, kubelets=False,
                         scheduler=False) as c:
        assert c.info().kueue is False
    err = capsys.readouterr().err
    assert err.count(KUEUE_ELSEWHERE) == 1 and "\n" not in KUEUE_ELSEWHERE


@pytest.mark.parametrize(("enabled", "backend", "line"), [
    (False, "upstream", "Kueue is off in {spec} (spec.kueue.enabled: false); skipping the Kueue part"),
    (True, "embedded", "Kueue runs only where a real API server is, not on the embedded backend; skipping the Kueue "
                       "part (to run it: MOCKGPU_BACKEND=upstream ./scripts/lab, after ./scripts/upstream-build)"),
])
def test_lab_says_in_one_line_why_it_skips_kueue(tmp_path, monkeypatch, enabled, backend, line):
    spec = tmp_path / "k.yaml"
    spec.write_text(yaml.safe_dump({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec",
                                    "metadata": {"name": "k"}, "spec": {"kueue": {"enabled": enabled}}}))
    monkeypatch.setenv("MOCKGPU_BACKEND", backend)
    monkeypatch.delenv("MOCKGPU_KUBECONFIG", raising=False)
    lab = LabCluster(spec, name="k", home=tmp_path)
    assert lab.kueue is False  # not started
    assert lab.kueue_skip_line() == line.format(spec=spec)
