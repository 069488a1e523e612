"""The cluster's serving certificate: self-signed, for 127.0.0.1 and localhost, made once per cluster.

TLS is not optional in practice: kubectl (client-go) sends a bearer token only over TLS. The certificate
is its own CA (``basicConstraints CA:TRUE``); the kubeconfig trusts exactly it (certificate-authority-data).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

from mockgpu.errors import MockgpuError
from mockgpu.privatefs import open_private, private_dir, write_private


def ensure_serving_cert(cert: Path, key: Path, cluster: str) -> None:
    """Write an ECDSA P-256 key and a 10-year self-signed certificate unless both exist."""
    if cert.exists() and key.exists():
        return
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError:
        raise MockgpuError("the 'cryptography' package is needed to make the cluster's TLS certificate; "
                           "pip install 'cryptography>=42'") from None
    pkey = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "mockgpu"),
                      x509.NameAttribute(NameOID.COMMON_NAME, f"mockgpu-{cluster}")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(pkey.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False, key_agreement=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                    x509.DNSName("localhost")]), critical=False)
        .sign(pkey, hashes.SHA256())
    )
    private_dir(key.parent)
    fd = open_private(key)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pkey.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    write_private(cert, certificate.public_bytes(serialization.Encoding.PEM))
