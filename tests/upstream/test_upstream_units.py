"""The upstream backend's pure parts: PKI, command lines, token file, scheduler configuration, binaries."""

from __future__ import annotations

import datetime
import ipaddress
import stat

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from mockgpu.backends.upstream import binaries, components
from mockgpu.backends.upstream.pki import ensure_pki
from mockgpu.backends.upstream.state import new_config, token_file


def _cert(path):
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_pki_chain_names_and_modes(tmp_path):
    pki = ensure_pki(tmp_path / "pki", "demo")
    ca = _cert(pki / "ca.crt")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for stem in ("apiserver", "apiserver-etcd-client", "apiserver-kubelet-client", "etcd-server", "kubelet"):
        cert = _cert(pki / f"{stem}.crt")
        assert cert.issuer == ca.subject
        ca.public_key().verify(cert.signature, cert.tbs_certificate_bytes,
                               __import__("cryptography.hazmat.primitives.asymmetric.ec", fromlist=["ECDSA"])
                               .ECDSA(cert.signature_hash_algorithm))
        assert stat.S_IMODE((pki / f"{stem}.key").stat().st_mode) == 0o600
        assert cert.not_valid_after_utc > datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=3000)
    api = _cert(pki / "apiserver.crt")
    sans = api.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in sans.get_values_for_type(x509.IPAddress)
    assert ipaddress.ip_address("10.96.0.1") in sans.get_values_for_type(x509.IPAddress)
    assert "kubernetes.default.svc" in sans.get_values_for_type(x509.DNSName)
    kubelet_client = _cert(pki / "apiserver-kubelet-client.crt")
    eku = kubelet_client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert stat.S_IMODE((pki / "sa.key").stat().st_mode) == 0o600
    assert stat.S_IMODE(pki.stat().st_mode) == 0o700


def test_pki_is_kept_on_resume(tmp_path):
    pki = ensure_pki(tmp_path / "pki", "demo")
    before = {p.name: p.read_bytes() for p in pki.iterdir()}
    ensure_pki(pki, "demo")
    assert {p.name: p.read_bytes() for p in pki.iterdir()} == before


LAYOUT = components.Layout(__import__("pathlib").Path("/state"))
PORTS = components.Ports(apiserver=6443, etcd_client=2379, etcd_peer=2380, controller_manager=10257,
                         scheduler=10259, kubelet=10250)


@pytest.mark.parametrize("argv", [
    components.etcd(LAYOUT, PORTS), components.kube_apiserver(LAYOUT, PORTS),
    components.kube_controller_manager(LAYOUT, PORTS), components.kube_scheduler(LAYOUT, PORTS, 10),
], ids=["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"])
def test_every_listener_is_loopback(argv):
    for arg in argv:
        if any(k in arg for k in ("bind-address", "advertise-address", "listen-")):
            assert "127.0.0.1" in arg, arg
            assert "0.0.0.0" not in arg, arg


def test_apiserver_requires_authentication():
    argv = components.kube_apiserver(LAYOUT, PORTS)
    assert "--anonymous-auth=false" in argv
    assert "--token-auth-file=/state/tokens.csv" in argv
    assert "--client-ca-file=/state/pki/ca.crt" in argv
    assert any(a.startswith("--etcd-certfile=") for a in argv)  # etcd only talks to certificate holders
    assert "--client-cert-auth=true" in components.etcd(LAYOUT, PORTS)


def test_scheduler_configuration_keeps_profiles_and_points_at_cluster(tmp_path):
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "binpack"}], "clientConnection": {"qps": 50}}
    out = components.scheduler_configuration(doc, tmp_path / "s.kubeconfig")
    assert out["profiles"] == [{"schedulerName": "binpack"}]
    assert out["clientConnection"] == {"qps": 50, "kubeconfig": str(tmp_path / "s.kubeconfig")}
    assert out["leaderElection"] == {"leaderElect": False}
    assert components.scheduler_configuration(None, tmp_path / "k")["kind"] == "KubeSchedulerConfiguration"


def test_token_file_rows(tmp_path):
    config = new_config("demo", scheduler_config=None, kubeconfig=tmp_path / "kc")
    rows = token_file(config).splitlines()
    assert rows[0] == f'{config["token"]},mockgpu-admin,mockgpu-admin,"system:masters"'
    assert rows[1] == f'{config["schedulerToken"]},system:kube-scheduler,system:kube-scheduler'
    assert len({config["token"], config["schedulerToken"], config["controllerManagerToken"]}) == 3
    assert len(set(config["ports"].values())) == 6


def test_versions_file_pins_one_release():
    v = binaries.versions()
    assert v["KUBERNETES_VERSION"].startswith("v1.")
    assert v["ETCD_VERSION"].startswith("v3.")
    assert v["KIND_VERSION"].startswith("v0.")


def test_missing_binaries_say_how(tmp_path, monkeypatch):
    monkeypatch.setenv("MOCKGPU_UPSTREAM_BIN", str(tmp_path))
    msg = binaries.missing()
    assert msg is not None and "etcd" in msg and "upstream-build" in msg and str(tmp_path) in msg


def test_missing_binaries_without_the_checkout_s_scripts_say_where_to_get_them(tmp_path, monkeypatch):
    """In the lab image (mockgpu installed from /opt/mockgpu, no scripts/) there is no upstream-build to run."""
    monkeypatch.setenv("MOCKGPU_UPSTREAM_BIN", str(tmp_path / "bin"))
    monkeypatch.setattr(binaries, "checkout_root", lambda: tmp_path)
    msg = binaries.missing()
    assert msg is not None and "no scripts/upstream-build" in msg and "MOCKGPU_UPSTREAM_BIN" in msg
    assert "install Go" not in msg
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "upstream-build").write_text("#!/bin/sh\n")
    assert "no scripts/upstream-build" not in binaries.missing()
