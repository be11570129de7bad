"""Card sets as uint64 bitsets (bit ``card`` set when the card, 0..51, is in the set; RULES §1.1):
the one set of bit helpers every kernel uses.
"""

from __future__ import annotations

import numpy as np

from treppen_env.core.cache import kernel

_ZERO = np.uint64(0)
_ONE = np.uint64(1)


@kernel
def bit(card: int) -> np.uint64:
    """The bitset (uint64) holding only ``card`` (0..51)."""
    return _ONE << np.uint64(card)


@kernel
def has(bits: np.uint64, card: int) -> bool:
    """Whether ``card`` is in the uint64 bitset ``bits``."""
    return (bits >> np.uint64(card)) & _ONE != _ZERO


@kernel
def count(bits: np.uint64) -> int:
    """Number of cards in the uint64 bitset ``bits`` (a branch-free popcount)."""
    x = bits - ((bits >> _ONE) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@kernel
def lowest(bits: np.uint64) -> int:
    """The lowest card of a non-empty uint64 bitset ``bits`` (the bits below its lowest set one,
    counted)."""
    return count((bits & (~bits + _ONE)) - _ONE)
