"""When a certificate stops being valid, and whether it is time to renew it: pure reading of PEM bytes."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from cryptography import x509

__all__ = ["RENEW_WITHIN", "Expiry", "read_expiry"]

# Renewed when this close to the end: a daily CronJob then has a month of chances, and a person
# reading `certs check` a month of warning.
RENEW_WITHIN = dt.timedelta(days=30)


@dataclass(frozen=True)
class Expiry:
    name: str
    subject: str
    not_after: dt.datetime

    def left(self, now: dt.datetime) -> dt.timedelta:
        return self.not_after - now

    def due(self, now: dt.datetime, within: dt.timedelta = RENEW_WITHIN) -> bool:
        """Expired, or inside the renewal window."""
        return self.left(now) <= within

    def line(self, now: dt.datetime) -> str:
        """``tls.crt  CN=svc.ns.svc  expires 2027-12-02 11:07 UTC (in 364 days)``."""
        when = self.not_after.strftime("%Y-%m-%d %H:%M UTC")
        left = self.left(now)
        state = f"in {left.days} days" if left >= dt.timedelta(0) else f"EXPIRED {(-left).days} days ago"
        return f"{self.name}  {self.subject}  expires {when} ({state})"


def read_expiry(name: str, pem: bytes) -> Expiry:
    """The expiry of the PEM certificate ``pem``; ``ValueError`` when it is not one."""
    cert = x509.load_pem_x509_certificate(pem)
    return Expiry(name, cert.subject.rfc4514_string(), cert.not_valid_after_utc)
