"""TLS for the webhook: a private CA and a serving certificate for the Service, the CA bundle injected
into the webhook configurations, and renewed files picked up without a restart.

The API server reaches a webhook Service as ``<service>.<namespace>.svc``; the serving certificate names
that and its variants. Lifetimes: CA 5 years, serving certificate 1 year (re-run ``certs create`` with
``--reuse-ca`` to renew it against the same CA; the server reloads the files as they change). A CA
already in the directory is never replaced by accident: every injected ``caBundle`` names it.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from webhook.cert_inject import ca_bundle, inject_ca_bundle
from webhook.cert_reload import CertReloader
from webhook.scheduler_cert import issue_client

__all__ = [
    "CertError",
    "CertFiles",
    "CertReloader",
    "Pems",
    "ca_bundle",
    "create_certs",
    "inject_ca_bundle",
    "issue",
    "service_dns_names",
]

CA_DAYS = 5 * 365
SERVING_DAYS = 365


class CertError(ValueError):
    """The certificates asked for cannot be made as asked; the message says why and what to do."""


@dataclass(frozen=True)
class Pems:
    """A CA, a serving pair and kube-scheduler's client pair, PEM-encoded: what goes into files or a Secret."""

    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes
    client_cert: bytes = b""
    client_key: bytes = b""


@dataclass(frozen=True)
class CertFiles:
    ca_cert: Path
    ca_key: Path
    cert: Path
    key: Path
    client_cert: Path
    client_key: Path


def service_dns_names(service: str, namespace: str) -> list[str]:
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write(path: Path, data: bytes, private: bool) -> None:
    """Atomically, with its final mode from the first byte: a key is never readable by others, not even
    while written, and a planted file or symlink at the temporary name is refused, never followed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o600 if private else 0o644)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)  # atomic: a reloading server never reads half a file
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _private_dir(out: Path) -> None:
    """``out`` made 0700 (created so, or tightened when it is ours): it holds private keys."""
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = out.lstat()
    if info.st_uid == os.getuid() and info.st_mode & 0o077:
        os.chmod(out, 0o700)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def issue(service: str, namespace: str, ca: tuple[bytes, bytes] | None = None, now: dt.datetime | None = None) -> Pems:
    """A serving pair for the Service, signed by ``ca`` (its PEM certificate and key) or by a new CA."""
    now = now or dt.datetime.now(dt.UTC)
    if ca is None:
        ca_cert, ca_key = _new_ca(namespace, now)
    else:
        ca_cert, ca_key = _load_ca(*ca)
    key = _key()
    cert = _serving_cert(service_dns_names(service, namespace), key, ca_cert, ca_key, now)
    pem = serialization.Encoding.PEM
    client_cert, client_key = issue_client(ca_cert, ca_key, now)
    return Pems(
        ca_cert.public_bytes(pem), _pem_key(ca_key), cert.public_bytes(pem), _pem_key(key), client_cert, client_key
    )


def create_certs(
    service: str,
    namespace: str,
    out: Path,
    reuse_ca: bool = False,
    now: dt.datetime | None = None,
    force: bool = False,
) -> CertFiles:
    """Write ca.crt, ca.key, tls.crt, tls.key, and kube-scheduler's scheduler.crt, scheduler.key into ``out``;
    with ``reuse_ca`` only the serving and client pairs are new.

    A CA already in ``out`` is replaced only with ``force`` (every caBundle injected from it would stop
    matching); ``reuse_ca`` with no CA there is refused rather than quietly making a new one.
    """
    files = CertFiles(
        out / "ca.crt", out / "ca.key", out / "tls.crt", out / "tls.key", out / "scheduler.crt", out / "scheduler.key"
    )
    has_ca = files.ca_cert.exists() and files.ca_key.exists()
    if reuse_ca and not has_ca:
        raise CertError(f"--reuse-ca: no CA in {out} (ca.crt and ca.key); create one first without --reuse-ca")
    if not reuse_ca and not force and (files.ca_cert.exists() or files.ca_key.exists()):
        raise CertError(
            f"{out} already holds a CA: renew with --reuse-ca (injected caBundles stay valid), "
            "or replace it with --force and inject the new caBundle"
        )
    _private_dir(out)
    ca = (files.ca_cert.read_bytes(), files.ca_key.read_bytes()) if reuse_ca else None
    pems = issue(service, namespace, ca, now)
    if ca is None:
        _write(files.ca_key, pems.ca_key, private=True)
        _write(files.ca_cert, pems.ca_cert, private=False)
    # Key first, then certificate: a reload that sees the new cert always finds its key.
    _write(files.key, pems.key, private=True)
    _write(files.cert, pems.cert, private=False)
    _write(files.client_key, pems.client_key, private=True)
    _write(files.client_cert, pems.client_cert, private=False)
    return files


def _load_ca(cert_pem: bytes, key_pem: bytes) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    ca_cert = x509.load_pem_x509_certificate(cert_pem)
    loaded = serialization.load_pem_private_key(key_pem, password=None)
    if not isinstance(loaded, ec.EllipticCurvePrivateKey):
        raise CertError("the CA key is not an EC private key")
    return ca_cert, loaded


def _new_ca(namespace: str, now: dt.datetime) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"gpu-advisor CA ({namespace})")])
    usage = x509.KeyUsage(
        digital_signature=True,
        key_cert_sign=True,
        crl_sign=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        encipher_only=False,
        decipher_only=False,
    )
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(usage, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return ca_cert, ca_key


def _serving_cert(
    names: list[str],
    key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    now: dt.datetime,
) -> x509.Certificate:
    """Valid for the Service's DNS names, never past the CA's own expiry."""
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[2])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(min(now + dt.timedelta(days=SERVING_DAYS), ca_cert.not_valid_after_utc))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()), critical=False)  # type: ignore[arg-type]
        .sign(ca_key, hashes.SHA256())
    )
