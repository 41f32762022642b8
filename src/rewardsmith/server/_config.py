"""Server defaults and the bind check: importable without the `server` extra."""

from __future__ import annotations

import ipaddress
import math

from .._exceptions import ConfigError
from ..engine._capacity import worker_count

__all__ = [
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_HEADER_TIMEOUT_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_QUEUE_SAMPLES",
    "TOKEN_ENV",
    "check_bind",
    "check_settings",
    "is_loopback",
    "positive_seconds",
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


def positive_seconds(value: object, what: str) -> float:
    """`value` as a timeout: a finite number of seconds above 0, else ValueError naming
    `what` (a NaN deadline never fires: the server would start and never answer)."""
    try:
        seconds = float(str(value).strip()) if not isinstance(value, int | float) else value
    except ValueError:
        raise ValueError(f"{what} must be a number of seconds, got {value!r}") from None
    if isinstance(seconds, bool) or not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{what} must be a finite number of seconds above 0, got {value!r}")
    return float(seconds)


def check_settings(**settings: object) -> None:
    """Refuse a timeout (a name ending in `_s`) that is not a finite number of seconds above
    0, or a limit that is not a whole number >= 1, with a `ConfigError` naming it."""
    for name, value in settings.items():
        try:
            positive_seconds(value, name) if name.endswith("_s") else worker_count(value, name)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
