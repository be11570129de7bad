"""The batched environment's rules kernels (:mod:`treppen_env.vector`): the rewards of a finished
deal, the rows whose action is not legal, and a random legal action per row.

The deals are the rows of three 2-D arrays in the state layout (:mod:`treppen_env.core.layout`):
``U`` (uint64 (N, U64_SIZE)), ``I8`` and ``I64``. The step that plays the rows, with the seats the
kernel plays itself (greedy, random), is :func:`treppen_env.agent_core.seat_kernels.step_rows`.
"""

from __future__ import annotations

import numpy as np

from treppen_env.core.cache import kernel
from treppen_env.core.generator import random_legal
from treppen_env.core.layout import DEAL_POINTS, NUM_PLAYERS

#: Rewards: the zero-sum difference to the others' mean, or the own points (both / 100).
ZERO_SUM, POINTS = 0, 1


@kernel
def deal_rewards(i64: np.ndarray, reward: int, out: np.ndarray) -> None:
    """Every seat's reward for the finished deal in ``i64`` into ``out`` (float32 (4,); RULES
    §6.2-6.4, docs/ARCHITECTURE.md "Rewards"): (points - the others' mean) / 100, or points / 100."""
    n = i64[NUM_PLAYERS]
    total = 0
    for s in range(n):
        total += i64[DEAL_POINTS + s]
    for s in range(n):
        mine = i64[DEAL_POINTS + s]
        if reward == POINTS:
            out[s] = mine / 100.0
        else:
            out[s] = (mine - (total - mine) / (n - 1)) / 100.0


@kernel
def illegal_rows(masks: np.ndarray, actions: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """The rows (int64, ascending) whose action is outside 0..897 or not legal in their mask (int8
    (N, 898)), ``skip`` (bool (N,)) rows aside."""
    bad = np.zeros(actions.size, dtype=np.bool_)
    for i in range(actions.size):
        a = actions[i]
        bad[i] = not skip[i] and (a < 0 or a >= masks.shape[1] or masks[i, a] == 0)
    return np.flatnonzero(bad)


@kernel
def sample_legal(masks: np.ndarray, rngs: np.ndarray) -> np.ndarray:
    """A uniformly random legal action of each row's mask (int8 (N, 8 * MASK_WORDS), padded with
    zeros), from the rows' SplitMix64 states ``rngs`` (uint64 (N,)); 0 for a row without one."""
    out = np.zeros(masks.shape[0], dtype=np.int64)
    rng = np.empty(1, dtype=np.uint64)
    for i in range(masks.shape[0]):
        rng[0] = rngs[i]
        out[i] = max(random_legal(masks[i].view(np.uint64), rng), 0)
        rngs[i] = rng[0]
    return out
