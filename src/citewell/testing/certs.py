"""A throwaway certificate authority and a server certificate for 127.0.0.1 (tests only):
what the LDAP server the tests start serves LDAPS and StartTLS with."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class TestCertificates:
    ca: Path  # the CA certificate a client trusts
    certificate: Path  # the server's certificate
    key: Path  # the server's private key


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: str, issuer: str, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
    )


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def make_certificates(folder: Path, host: str = "127.0.0.1") -> TestCertificates:
    """A CA and a certificate for ``host`` (an IP address) signed by it, written to ``folder``."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        _builder("Citewell test CA", "Citewell test CA", ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    alt = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))])
    server = (
        _builder(host, "Citewell test CA", key.public_key())
        .add_extension(alt, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    found = TestCertificates(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    found.ca.write_bytes(_pem(ca))
    found.certificate.write_bytes(_pem(server))
    found.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return found
