"""A self-signed TLS certificate for 127.0.0.1, made with the standard library only.

``kubectl`` (client-go) never sends a bearer token over plain HTTP, so the daemon serves HTTPS.
The certificate is its own CA; the kubeconfig carries it as ``certificate-authority-data``.
RSA-2048 key generation (Miller-Rabin), the DER encoding of an X.509 v3 certificate and its
PKCS #1 v1.5 SHA-256 signature are written out here because the standard library has no X.509
writer. The pair is made once per state directory (a fraction of a second) and reused.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path

from gitdeploy.localcluster.kubeconfig import write_private

__all__ = ["ensure_certificate", "generate_certificate"]

_SMALL_PRIMES = [p for p in range(3, 2000) if all(p % d for d in range(2, int(p**0.5) + 1))]
_E = 65537


def _is_probable_prime(n: int, rounds: int = 24) -> bool:
    if n < 2:
        return False
    for p in _SMALL_PRIMES:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for _ in range(rounds):
        a = secrets.randbelow(n - 3) + 2
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime(bits: int) -> int:
    while True:
        candidate = secrets.randbits(bits) | (3 << (bits - 2)) | 1
        if candidate % _E != 1 and _is_probable_prime(candidate):
            return candidate


# -- DER ----------------------------------------------------------------------------------------


def _tlv(tag: int, body: bytes) -> bytes:
    length = len(body)
    if length < 0x80:
        encoded = bytes([length])
    else:
        raw = length.to_bytes((length.bit_length() + 7) // 8, "big")
        encoded = bytes([0x80 | len(raw)]) + raw
    return bytes([tag]) + encoded + body


def _int(value: int) -> bytes:
    raw = value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big")
    return _tlv(0x02, raw)


def _seq(*items: bytes) -> bytes:
    return _tlv(0x30, b"".join(items))


def _oid(dotted: str) -> bytes:
    parts = [int(p) for p in dotted.split(".")]
    body = bytearray([40 * parts[0] + parts[1]])
    for part in parts[2:]:
        chunk = [part & 0x7F]
        part >>= 7
        while part:
            chunk.append(0x80 | (part & 0x7F))
            part >>= 7
        body.extend(reversed(chunk))
    return _tlv(0x06, bytes(body))


_NULL = b"\x05\x00"
_SHA256_RSA = _seq(_oid("1.2.840.113549.1.1.11"), _NULL)


def _name(common_name: str) -> bytes:
    return _seq(_tlv(0x31, _seq(_oid("2.5.4.3"), _tlv(0x0C, common_name.encode()))))


def _utc_time(moment: float) -> bytes:
    return _tlv(0x17, datetime.fromtimestamp(moment, tz=UTC).strftime("%y%m%d%H%M%SZ").encode())


def _extension(oid: str, value: bytes, critical: bool = False) -> bytes:
    return _seq(_oid(oid), *([b"\x01\x01\xff"] if critical else []), _tlv(0x04, value))


def _pem(label: str, der: bytes) -> str:
    text = base64.encodebytes(der).decode().replace("\n", "")
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"


def generate_certificate(
    common_name: str = "gitdeploy-localcluster", ip: str = "127.0.0.1", years: int = 10
) -> tuple[str, str]:
    """A new self-signed ``(certificate PEM, PKCS #1 private key PEM)`` valid for ``ip`` and localhost."""
    p, q = _prime(1024), _prime(1024)
    while p == q:
        q = _prime(1024)
    n = p * q
    d = pow(_E, -1, (p - 1) * (q - 1))
    public_key = _seq(_int(n), _int(_E))
    spki = _seq(_seq(_oid("1.2.840.113549.1.1.1"), _NULL), _tlv(0x03, b"\x00" + public_key))
    now = time.time()
    san = _seq(_tlv(0x87, ipaddress.ip_address(ip).packed), _tlv(0x82, b"localhost"))
    extensions = _seq(
        _extension("2.5.29.19", _seq(b"\x01\x01\xff"), critical=True),
        _extension("2.5.29.15", _tlv(0x03, b"\x02\xa4"), critical=True),
        _extension("2.5.29.37", _seq(_oid("1.3.6.1.5.5.7.3.1"))),
        _extension("2.5.29.14", _tlv(0x04, hashlib.sha1(public_key).digest())),
        _extension("2.5.29.17", san),
    )
    tbs = _seq(
        _tlv(0xA0, _int(2)),
        _int(secrets.randbits(63) | 1),
        _SHA256_RSA,
        _name(common_name),
        _seq(_utc_time(now - 86400), _utc_time(now + years * 365 * 86400)),
        _name(common_name),
        spki,
        _tlv(0xA3, extensions),
    )
    digest_info = _seq(_seq(_oid("2.16.840.1.101.3.4.2.1"), _NULL), _tlv(0x04, hashlib.sha256(tbs).digest()))
    size = (n.bit_length() + 7) // 8
    padded = b"\x00\x01" + b"\xff" * (size - len(digest_info) - 3) + b"\x00" + digest_info
    signature = pow(int.from_bytes(padded, "big"), d, n).to_bytes(size, "big")
    certificate = _seq(tbs, _SHA256_RSA, _tlv(0x03, b"\x00" + signature))
    private_key = _seq(
        _int(0),
        _int(n),
        _int(_E),
        _int(d),
        _int(p),
        _int(q),
        _int(d % (p - 1)),
        _int(d % (q - 1)),
        _int(pow(q, -1, p)),
    )
    return _pem("CERTIFICATE", certificate), _pem("RSA PRIVATE KEY", private_key)


def ensure_certificate(state_dir: Path) -> tuple[Path, Path]:
    """``(tls.crt, tls.key)`` of ``state_dir``, generated on first use (key file mode 0600)."""
    cert, key = state_dir / "tls.crt", state_dir / "tls.key"
    if not (cert.exists() and key.exists()):
        cert_pem, key_pem = generate_certificate()
        write_private(key, key_pem)
        write_private(cert, cert_pem)
    return cert, key
