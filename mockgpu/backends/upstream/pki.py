"""The upstream cluster's PKI, as kubeadm lays it out in small: one CA, and the certificates signed by it.

``ensure_pki(dir)`` writes (once; files that exist are kept, so a resumed cluster keeps its identity):

- ``ca.crt``/``ca.key``               the cluster CA (clients trust it; the kubeconfig embeds it)
- ``apiserver.crt``/``.key``          kube-apiserver's serving certificate (127.0.0.1, localhost, the
                                       ``kubernetes`` service names and its first service IP)
- ``apiserver-etcd-client.crt``/``.key``  kube-apiserver's client certificate for etcd
- ``apiserver-kubelet-client.crt``/``.key`` kube-apiserver's client certificate for the kubelets' API
- ``etcd-server.crt``/``.key``        etcd's serving certificate (it requires client certificates)
- ``kubelet.crt``/``.key``            the kubelets' serving certificate (logs)

``ensure_kueue_pki(dir)`` (``spec.kueue``) adds Kueue's own CA and webhook certificate, kept apart from the cluster CA
because Kueue's certificate rotator reads its CA's key from a Secret (``kueue.py``):

- ``kueue-ca.crt``/``.key``           Kueue's webhook CA (its SAN is ``kueue-ca``, the name Kueue's rotator checks)
- ``kueue-webhook.crt``/``.key``      Kueue's webhook server: 127.0.0.1 and its Service's name
- ``sa.key``/``sa.pub``               the service-account token signing key pair (RSA, as kubeadm)
Private keys are mode 0600. ECDSA P-256 everywhere except the service-account key and Kueue's CA (RSA).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from mockgpu.privatefs import open_private, private_dir, write_private

SERVICE_CIDR = "10.96.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"  # the first address of SERVICE_CIDR, the apiserver's own Service
API_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
             "kubernetes.default.svc.cluster.local")
LOOPBACK = "127.0.0.1"
VALID = datetime.timedelta(days=3650)


@dataclass(frozen=True)
class Leaf:
    name: str  # file stem
    common_name: str
    organization: str | None
    server: bool
    client: bool
    dns: tuple[str, ...] = ()
    ips: tuple[str, ...] = ()


LEAVES = (
    Leaf("apiserver", "kube-apiserver", None, True, False, API_NAMES, (LOOPBACK, KUBERNETES_SERVICE_IP)),
    Leaf("apiserver-etcd-client", "kube-apiserver-etcd-client", None, False, True),
    Leaf("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters", False, True),
    Leaf("etcd-server", "mockgpu-etcd", None, True, True, ("localhost",), (LOOPBACK,)),
    Leaf("kubelet", "mockgpu-kubelet", None, True, False, ("localhost",), (LOOPBACK,)),
)
# Kueue's webhook certificate: the Service name Kueue's rotator verifies (``<service>.<namespace>.svc``) and the
# loopback address the API server calls here
KUEUE_CA_NAME = "kueue-ca"
KUEUE_WEBHOOK = Leaf("kueue-webhook", "kueue-webhook-service.kueue-system.svc", None, True, False,
                     ("kueue-webhook-service.kueue-system.svc",), (LOOPBACK,))


CAKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def _write_key(path: Path, key: CAKey, fmt: serialization.PrivateFormat = serialization.PrivateFormat.PKCS8) -> None:
    with os.fdopen(open_private(path), "wb") as fh:
        fh.write(key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption()))


def _name(cn: str, org: str | None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org)] if org else []
    return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, key_cert_sign=ca, crl_sign=ca, content_commitment=False,
                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                         encipher_only=False, decipher_only=False)


def _ca(dir: Path, cluster: str, stem: str = "ca", common_name: str = "", dns: tuple[str, ...] = (),
        pkcs1_rsa: bool = False) -> tuple[x509.Certificate, CAKey]:
    """The cluster CA (ECDSA), or with ``pkcs1_rsa`` an RSA CA whose key is PEM ``RSA PRIVATE KEY`` (PKCS #1), the
    only CA key cert-controller's rotator parses (``x509.ParsePKCS1PrivateKey``)."""
    crt, key = dir / f"{stem}.crt", dir / f"{stem}.key"
    if crt.exists() and key.exists():
        loaded = serialization.load_pem_private_key(key.read_bytes(), password=None)
        assert isinstance(loaded, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey))
        return x509.load_pem_x509_certificate(crt.read_bytes()), loaded
    pkey: CAKey = rsa.generate_private_key(public_exponent=65537, key_size=2048) if pkcs1_rsa else \
        ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name or f"mockgpu-{cluster}-ca", "mockgpu")
    now = datetime.datetime.now(datetime.UTC)
    b = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(pkey.public_key())
         .serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + VALID)
         .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
         .add_extension(_usage(ca=True), critical=True)
         .add_extension(x509.SubjectKeyIdentifier.from_public_key(pkey.public_key()), critical=False))
    if dns:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False)
    cert = b.sign(pkey, hashes.SHA256())
    _write_key(key, pkey, serialization.PrivateFormat.TraditionalOpenSSL if pkcs1_rsa else
               serialization.PrivateFormat.PKCS8)
    write_private(crt, cert.public_bytes(serialization.Encoding.PEM))
    return cert, pkey


def _leaf(dir: Path, leaf: Leaf, ca: x509.Certificate, ca_key: CAKey) -> None:
    crt, key = dir / f"{leaf.name}.crt", dir / f"{leaf.name}.key"
    if crt.exists() and key.exists():
        return
    pkey = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if leaf.server else []) + \
        ([ExtendedKeyUsageOID.CLIENT_AUTH] if leaf.client else [])
    b = (x509.CertificateBuilder().subject_name(_name(leaf.common_name, leaf.organization))
         .issuer_name(ca.subject).public_key(pkey.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + VALID)
         .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
         .add_extension(_usage(ca=False), critical=True)
         .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
         .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False))
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in leaf.dns]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in leaf.ips]
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    _write_key(key, pkey)
    write_private(crt, b.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))


def _service_account_keys(dir: Path) -> None:
    key, pub = dir / "sa.key", dir / "sa.pub"
    if key.exists() and pub.exists():
        return
    pkey = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(key, pkey)
    write_private(pub, pkey.public_key().public_bytes(serialization.Encoding.PEM,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo))


def ensure_pki(dir: Path, cluster: str) -> Path:
    """Make every certificate and key above that is missing; returns ``dir``."""
    private_dir(dir)
    ca, ca_key = _ca(dir, cluster)
    for leaf in LEAVES:
        _leaf(dir, leaf, ca, ca_key)
    _service_account_keys(dir)
    return dir


def ensure_kueue_pki(dir: Path, cluster: str) -> Path:
    """Kueue's CA and webhook certificate (those missing); returns ``dir``."""
    private_dir(dir)
    ca, ca_key = _ca(dir, cluster, "kueue-ca", f"mockgpu-{cluster}-{KUEUE_CA_NAME}", (KUEUE_CA_NAME,), pkcs1_rsa=True)
    _leaf(dir, KUEUE_WEBHOOK, ca, ca_key)
    return dir
