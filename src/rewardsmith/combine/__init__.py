"""Turning component scores into one reward."""

from ._combine import COMBINERS, combine

__all__ = ["COMBINERS", "combine"]
