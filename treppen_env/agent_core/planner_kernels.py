"""The planner: a heuristic that plans whole turns and values their end in expected deal points.

It reads what the mover may see, in the greedy heuristic's input layout
(:mod:`treppen_env.agent_core.greedy_kernels`, :class:`~treppen_env.agent_core.greedy_kernels.Inputs`), plus its
**memory**: the cards each opponent was seen to discard (RULES §4.4) or to decline (it drew from the
stock over the staircase's top card, §4.1), uint64 (3,) by relative seat 1..3. Both are public.

Each decision searches every card-disjoint combination of the turn's melds and lay-off chains
(RULES §4.3; :func:`treppen_env.agent_core.greedy_kernels._plan` with
:data:`~treppen_env.agent_core.greedy_kernels.PLANNER_BUDGET` nodes: exhaustive short of a deep staircase
take of many cards) and scores a plan's end by
:mod:`treppen_env.agent_core.plan_value`: booked points, the going-out bonus, and the expected
cost of the cards left under the opponents' threat, the chance of melding them later, going out
next turn and the danger of the discard. Draws are scored by the plans they allow, as the greedy
heuristic does (:func:`treppen_env.agent_core.greedy_kernels.draw_scores`).

In a playout (:mod:`treppen_env.agent_core.playout_kernels`) every seat's memory is kept by
:func:`remember` from the moves as they are played; :class:`treppen.agents.planner.PlannerAgent`
keeps its own from its observations, the same in a 2-player deal.
"""

from __future__ import annotations

import numpy as np

from treppen_env.agent_core import greedy_kernels
from treppen_env.core.bits import bit
from treppen_env.core.cache import kernel
from treppen_env.core.kernels import A_DISCARD_BASE, A_DRAW
from treppen_env.core.layout import CURRENT, NUM_PLAYERS, STAIRS, STAIRS_LEN

#: Opponents' memory rows (relative seats 1..3).
MEMORY_SEATS = 3


@kernel
def planner_action(
    inputs: greedy_kernels.Inputs, memory: np.ndarray, mask: np.ndarray, tab: np.ndarray, values: np.ndarray
) -> int:
    """The planner's action (RULES §4) for the position ``inputs`` (the greedy heuristic's layout)
    with the opponents' ``memory`` (uint64 (3,)), the action mask (int8 (898,)), the rules table
    and the planner's settings ``values`` (:func:`treppen_env.agent_core.plan_value.values_row`);
    -1 when the mask has no legal action."""
    return planner_move(inputs, memory, mask, tab, values, greedy_kernels.workspace())


@kernel
def planner_move(
    inputs: greedy_kernels.Inputs,
    memory: np.ndarray,
    mask: np.ndarray,
    tab: np.ndarray,
    values: np.ndarray,
    work: greedy_kernels.Workspace,
) -> int:
    """:func:`planner_action` with the scratch arrays ``work`` of
    :func:`treppen_env.agent_core.greedy_kernels.workspace` given (the same action)."""
    if not greedy_kernels._any_legal(mask):
        return -1
    return greedy_kernels.move(inputs, mask, greedy_kernels.planner_decision(inputs, memory, tab, values, work))


@kernel
def remember(memory: np.ndarray, i8: np.ndarray, i64: np.ndarray, action: int) -> None:
    """Keep what the seat to move shows by ``action``, before it is played, in ``memory`` (uint64
    (4,), by absolute seat): a discard (RULES §4.4) adds the card, a stock draw (§4.1) the
    staircase's top card it declined."""
    seat = i64[CURRENT]
    if action >= A_DISCARD_BASE:
        memory[seat] |= bit(action - A_DISCARD_BASE)
    elif action == A_DRAW and i64[STAIRS_LEN] > 0:
        memory[seat] |= bit(i8[STAIRS + i64[STAIRS_LEN] - 1])


@kernel
def relative_memory(memory: np.ndarray, i64: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The memory of the seat to move's opponents by relative seat (``out``, uint64 (3,); 0 for seats
    not in play) from ``memory`` by absolute seat; returns ``out``."""
    n = i64[NUM_PLAYERS]
    seat = i64[CURRENT]
    for k in range(MEMORY_SEATS):
        out[k] = memory[(seat + k + 1) % n] if k < n - 1 else np.uint64(0)
    return out
