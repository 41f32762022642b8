"""Server defaults and the bind check: importable without the `server` extra."""

from __future__ import annotations

import ipaddress

from .._exceptions import ConfigError

__all__ = [
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_HEADER_TIMEOUT_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_QUEUE_SAMPLES",
    "TOKEN_ENV",
    "check_bind",
    "is_loopback",
]

TOKEN_ENV = "REWARDSMITH_TOKEN"
"""Environment variable read for the bearer token when none is given."""
DEFAULT_MAX_BODY_BYTES = 64 * 2**20
"""Largest request body accepted (64 MiB: a thousand 16k-token rollouts)."""
DEFAULT_MAX_QUEUE_SAMPLES = 65_536
"""Most samples accepted and not yet answered; more gets 503."""
DEFAULT_HEADER_TIMEOUT_S = 10.0
"""A request's line and headers must arrive within this time of its first byte (or of the
connection's opening), else the connection is closed: slow clients cannot hold sockets."""
DEFAULT_BODY_TIMEOUT_S = 60.0
"""A request's whole body must arrive within this time of its headers, else 408."""


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token."""
    if not token and not is_loopback(host):
        raise ConfigError(
            f"refusing to serve on {host!r} without a token: anyone who can reach it could "
            f"use it. Set --token or {TOKEN_ENV}, or bind 127.0.0.1."
        )
