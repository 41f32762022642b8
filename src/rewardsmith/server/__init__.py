"""The reward server: `rewardsmith serve` (needs the `server` extra: httptools, uvloop).

`create_app` builds the app; `serve` runs it over HTTP until SIGINT/SIGTERM. Both are
imported on first use, so this package imports without the extra.
"""

from __future__ import annotations

from typing import Any

from ._config import TOKEN_ENV, check_bind

__all__ = ["TOKEN_ENV", "check_bind", "create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name in ("create_app", "serve"):
        from . import _app

        return getattr(_app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
