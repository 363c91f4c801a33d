"""The client certificate kube-scheduler presents to the advisor's extender port.

The extender verbs can bind any pod, so the advisor answers them only over TLS from a client whose
certificate its own CA signed for client authentication (kube-scheduler's extender ``tlsConfig``:
``certFile``/``keyFile``). kube-scheduler's client (client-go) reads those files again for every new
connection, so a renewed pair is used without a restart; the CA is read once, at its start.
"""

from __future__ import annotations

import datetime as dt

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CLIENT_DAYS", "CLIENT_NAME", "issue_client"]

CLIENT_NAME = "gpu-advisor-scheduler"  # the certificate's CN: the identity `serve` accepts by default
CLIENT_DAYS = 365


def issue_client(
    ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, now: dt.datetime, name: str = CLIENT_NAME
) -> tuple[bytes, bytes]:
    """A client pair (PEM certificate, PEM PKCS#8 key) for ``name``, signed by the CA, valid for client
    authentication only (a serving certificate of the same CA is not accepted in its place), never past
    the CA's own expiry."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(min(now + dt.timedelta(days=CLIENT_DAYS), ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()), critical=False)  # type: ignore[arg-type]
        .sign(ca_key, hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), pem_key
