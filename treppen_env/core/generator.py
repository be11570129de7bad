"""The kernels' random generator: SplitMix64 over a one-entry uint64 state array (seeded by the
caller; the engine's own randomness is the ``numpy.random.Generator`` it is given), uniform draws
from it and a uniformly random legal action of a mask.
"""

from __future__ import annotations

import numpy as np

from treppen_env.core.cache import kernel
from treppen_env.core.kernels import A_DISCARD_BASE
from treppen_env.core.layout import NUM_CARDS

_ZERO = np.uint64(0)


@kernel
def next_random(rng: np.ndarray) -> np.uint64:
    """The next 64 random bits of the SplitMix64 generator whose state is ``rng[0]`` (uint64, (1,))."""
    rng[0] += np.uint64(0x9E3779B97F4A7C15)
    z = rng[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@kernel
def random_unit(rng: np.ndarray) -> float:
    """A uniformly random float in [0, 1) from the generator ``rng`` (53 random bits)."""
    return (next_random(rng) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@kernel
def random_below(rng: np.ndarray, n: int) -> int:
    """A uniformly random integer 0..n-1 from the generator ``rng`` (53 random bits)."""
    return int(random_unit(rng) * n)


#: A legal mask padded to whole uint64 words (8 entries each), as :func:`random_legal` reads it.
MASK_WORDS = (A_DISCARD_BASE + NUM_CARDS + 7) // 8
_BYTE_SUM = np.uint64(0x0101010101010101)


@kernel
def random_legal(words: np.ndarray, rng: np.ndarray) -> int:
    """A uniformly random legal action of the 0/1 mask read as uint64 words of 8 entries."""
    total = 0
    for w in range(words.size):
        total += int((words[w] * _BYTE_SUM) >> np.uint64(56))
    pick = random_below(rng, total)
    for w in range(words.size):
        here = int((words[w] * _BYTE_SUM) >> np.uint64(56))
        if pick < here:
            for b in range(8):
                if (words[w] >> np.uint64(8 * b)) & np.uint64(0xFF) != _ZERO:
                    if pick == 0:
                        return 8 * w + b
                    pick -= 1
        pick -= here
    return -1
