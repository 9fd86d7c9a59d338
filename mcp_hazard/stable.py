"""Stable draws: every decision of an episode comes from a hash of its keys (docs/architecture.md, "Determinism").

No module-level random, no `hash()` (salted per process), no clock. A draw for the same keys is the same in every
process, on every machine, forever.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def _digest(keys: tuple[object, ...]) -> int:
    return int.from_bytes(hashlib.blake2b("|".join(map(str, keys)).encode(), digest_size=8).digest(), "big")


def draw(*keys: object) -> float:
    """A uniform number in [0, 1) fixed by its keys."""
    return _digest(keys) / 2**64


def choose(options: Sequence[T], *keys: object) -> T:
    """One of `options`, fixed by its keys (wrong values, new names, which mode...)."""
    if not options:
        raise ValueError("nothing to choose from")
    return options[_digest(keys) % len(options)]
