"""The agents' kernels (:mod:`treppen_env.agent_core`) run on a :class:`~treppen_env.engine.GameState`:
the heuristic's inputs of a seat, a random playout and a redeal of the unseen cards.

The engine itself holds the rules only; the greedy agent's engine path, the tests and the
benchmarks reach the agents' kernels through these functions. Each reads the state's arrays
(:meth:`~treppen_env.engine.GameState.arrays`, validated first) and tells the state when a kernel
changed them (:meth:`~treppen_env.engine.GameState.kernel_wrote`).
"""

from __future__ import annotations

import numpy as np

from treppen_env.agent_core import greedy_kernels, plan_value, playout_kernels
from treppen_env.engine import GameState, seat_index


def _generator(seed: int) -> np.ndarray:
    """The kernels' SplitMix64 state (uint64 (1,)) seeded with ``seed`` (taken modulo 2**64)."""
    return np.array([seed & (2**64 - 1)], dtype=np.uint64)


def heuristic_inputs(state: GameState, seat: int) -> greedy_kernels.Inputs:
    """What ``seat`` may see in ``state``, in the greedy heuristic's input layout
    (:func:`treppen_env.agent_core.greedy_kernels.state_inputs`): the same arrays as the reader of that
    seat's observation fills (:func:`treppen_env.agent_core.reader.observation_inputs`).

    :raises IndexError: for a seat not in play (negative seats count from the last).
    """
    position = state.arrays()
    u64, i8, i64 = position.u64, position.i8, position.i64
    inputs = greedy_kernels.empty_inputs()
    greedy_kernels.state_inputs(u64, i8, i64, seat_index(seat, state.num_players), inputs)
    return inputs


def random_playout(state: GameState, seed: int) -> int:
    """Play the deal of ``state`` to its end, in place, with uniformly random legal actions in one
    kernel (RULES §4-6; a simulation for search: the reshuffles use the kernel's own SplitMix64
    generator seeded with ``seed``, not the state's ``rng``).

    :return: the number of actions played.
    """
    tab, meld_bits = state.tables.tab, state.tables.meld_bits
    policies = np.full(state.num_players, playout_kernels.RANDOM, dtype=np.int64)
    playout = playout_kernels.Playout(
        policies=policies, settings=greedy_kernels.settings_row(), values=plan_value.values_row()
    )
    steps = playout_kernels.play_to_end(
        state.arrays(), tab, meld_bits, playout, _generator(seed), playout_kernels.scratch()
    )
    state.kernel_wrote()
    return int(steps)


def redeal(state: GameState, observer: int, seed: int, tries: int = 10_000) -> None:
    """A new determinization of ``state`` for ``observer``, in place: deal the cards it cannot see
    afresh (:func:`treppen_env.agent_core.playout_kernels.redeal`): every other seat keeps its publicly
    known cards (RULES §4.1) and its hand size, the stock its size; a must-use card of another seat
    to move stays playable (RULES §4.2). Everything ``observer`` sees stays as it is.

    :param seed: seeds the deal (the kernels' SplitMix64 generator).
    :raises ValueError: for a seat not in play, or when ``tries`` deals found none that lets
        the seat to move play its must-use card.
    """
    if not 0 <= observer < state.num_players:
        raise ValueError(f"observer {observer} is not a seat 0..{state.num_players - 1}")
    tab, meld_bits = state.tables.tab, state.tables.meld_bits
    found = playout_kernels.redeal(state.arrays(), tab, meld_bits, observer, _generator(seed), tries)
    state.kernel_wrote()
    if not found:
        raise ValueError(f"no deal of the unseen cards in {tries} tries lets the player to move use its taken card")
