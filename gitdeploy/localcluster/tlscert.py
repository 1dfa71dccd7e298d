"""A self-signed TLS certificate for the embedded cluster (127.0.0.1 and localhost).

``kubectl`` (client-go) never sends a bearer token over plain HTTP, so the background cluster
serves HTTPS. The certificate is its own CA; the kubeconfig carries it as
``certificate-authority-data``. It is made once per state directory with the ``cryptography``
package (an ECDSA P-256 key, fast to generate) and reused.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from gitdeploy.localcluster.kubeconfig import write_private

__all__ = ["ensure_certificate", "generate_certificate"]


def generate_certificate(
    common_name: str = "gitdeploy-localcluster", ip: str = "127.0.0.1", years: int = 10
) -> tuple[str, str]:
    """A new self-signed ``(certificate PEM, private key PEM)`` valid for ``ip`` and localhost."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.IPAddress(ipaddress.ip_address(ip)), x509.DNSName("localhost")]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=365 * years))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_pem = certificate.public_bytes(serialization.Encoding.PEM).decode()
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return cert_pem, key_pem


def ensure_certificate(state_dir: Path) -> tuple[Path, Path]:
    """``(tls.crt, tls.key)`` of ``state_dir``, generated on first use (both files mode 0600)."""
    cert, key = state_dir / "tls.crt", state_dir / "tls.key"
    if not (cert.exists() and key.exists()):
        cert_pem, key_pem = generate_certificate()
        write_private(key, key_pem)
        write_private(cert, cert_pem)
    return cert, key
