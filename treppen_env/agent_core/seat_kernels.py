"""The batched environment's step: many deals, one kernel call (:mod:`treppen_env.vector`).

The deals are the rows of three 2-D arrays in the state layout (:mod:`treppen_env.core.layout`):
``U`` (uint64 (N, U64_SIZE)), ``I8`` and ``I64``. Every seat of a row has a kind (``kinds``,
int64 (N, 4)): :data:`EXTERNAL` (the caller decides: the learner, or every seat in self-play),
:data:`GREEDY` or :data:`RANDOM` (played inside the kernel: the greedy heuristic from what that
seat may see, or a uniformly random legal action). :func:`step_rows` plays, for each row it is
given, the caller's action (or none, after a new deal), then the kernel seats' moves until an
external seat is to move or the deal is over, and writes what the caller needs: that seat's
observation and legal mask, or at the deal's end the final observation of ``observer[i]`` (or of
the last external seat that moved), an all-zero mask and every seat's reward
(:func:`treppen_env.core.vector_kernels.deal_rewards`).

A discard that empties the stock under ``stock_exhausted="reshuffle"`` (RULES §6.4) stops the
row with ``pending[i] = 1``: the caller shuffles the staircase below its top with the row's own
generator (as :class:`~treppen_env.engine.GameState` does) and continues the row.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from treppen_env.agent_core import greedy_kernels, playout_kernels
from treppen_env.core import kernels
from treppen_env.core.cache import kernel
from treppen_env.core.generator import random_legal
from treppen_env.core.layout import CURRENT, DEAL_OVER, PHASE, Position, Tables
from treppen_env.core.observe import write_observation
from treppen_env.core.vector_kernels import deal_rewards

#: Kinds of a seat: decided by the caller, or played inside the kernel (the playout policies).
EXTERNAL = -1
GREEDY, RANDOM = playout_kernels.GREEDY, playout_kernels.RANDOM


class Seats(NamedTuple):
    """Who moves in the rows of :func:`step_rows` (a kernel bundle; N rows, 4 seats a row)."""

    #: int64 (N,): the external seat's action per row, -1 for none (the row was just dealt or
    #: reshuffled: only the kernel seats move); legal, the caller checks.
    actions: np.ndarray
    #: int64 (N, 4): each seat's kind, :data:`EXTERNAL`, :data:`GREEDY` or :data:`RANDOM`.
    kinds: np.ndarray
    #: int64 (N,): the seat whose final observation a finished deal shows, -1 for the last
    #: external seat that moved.
    observer: np.ndarray
    #: uint64 (N,): each row's SplitMix64 state for random seats.
    rngs: np.ndarray
    #: float64: the greedy seats' settings (:func:`treppen_env.agent_core.greedy_kernels.settings_row`).
    settings: np.ndarray


class Report(NamedTuple):
    """What :func:`step_rows` writes how (a kernel bundle)."""

    #: The observation layout's offsets and constants (:func:`treppen_env.core.observe.write_observation`).
    offsets: np.ndarray
    consts: np.ndarray
    #: The reward kind (:data:`treppen_env.core.vector_kernels.ZERO_SUM` or ``POINTS``).
    reward: int


class Written(NamedTuple):
    """What the caller of :func:`step_rows` reads back (a kernel bundle; N rows)."""

    #: float32 (N, OBS_SIZE): the observations.
    obs: np.ndarray
    #: int8 (N, 8 * MASK_WORDS): the legal mask in the first 898 entries, the padding 0
    #: (:func:`treppen_env.core.vector_kernels.sample_legal` reads rows as uint64 words).
    masks: np.ndarray
    #: int64 (N,): the external seat to move, -1 when the deal is over.
    to_move: np.ndarray
    #: int64 (N,): the last external seat that moved, kept between calls.
    actor: np.ndarray
    #: int8 (N,): 1 once the deal is over.
    over: np.ndarray
    #: int8 (N,): 1 when the row waits for a reshuffle, nothing else written.
    pending: np.ndarray
    #: float32 (N, 4): every seat's reward once the deal is over.
    rewards: np.ndarray


@kernel
def _kernel_move(
    u64: np.ndarray,
    i8: np.ndarray,
    i64: np.ndarray,
    tab: np.ndarray,
    kind: int,
    rng: np.ndarray,
    settings: np.ndarray,
    work: playout_kernels.Scratch,
) -> int:
    """A kernel seat's move in the row (its legal mask already in ``work``)."""
    if kind == GREEDY:
        return playout_kernels.greedy_choice(u64, i8, i64, tab, settings, work)
    return random_legal(work.mask.view(np.uint64), rng)


@kernel
def step_rows(
    batch: Position,
    tables: Tables,
    rows: np.ndarray,
    seats: Seats,
    report: Report,
    written: Written,
    work: playout_kernels.Scratch,
) -> None:
    """Play the rows ``rows`` (int64) of ``batch`` (a :class:`~treppen_env.core.layout.Position` of N rows:
    its arrays are (N, size)) one step
    (see the module docstring), with the rules core's ``tables``, the bundles :class:`Seats`,
    :class:`Report` and :class:`Written`, and the kernel seats' scratch ``work``
    (:func:`treppen_env.agent_core.playout_kernels.scratch`)."""
    U, I8, I64 = batch.u64, batch.i8, batch.i64
    tab, meld_bits = tables.tab, tables.meld_bits
    kinds, rngs, masks, actor, pending = seats.kinds, seats.rngs, written.masks, written.actor, written.pending
    rng = np.empty(1, dtype=np.uint64)
    for i in rows:
        u64, i8, i64 = U[i], I8[i], I64[i]
        # the kernel seats decide on the row's own mask
        row_work = playout_kernels.Scratch(
            mask=masks[i],
            inputs=work.inputs,
            workspace=work.workspace,
            net=work.net,
            memory=work.memory,
            relative=work.relative,
        )
        mask = masks[i, : kernels.A_DISCARD_BASE + greedy_kernels.NUM_CARDS]
        pending[i] = 0
        a = seats.actions[i]
        if a >= 0:
            actor[i] = i64[CURRENT]
            if kernels.step(u64, i8, i64, tab, meld_bits, mask, a) == kernels.STEP_RESHUFFLE:
                pending[i] = 1
                continue
        else:
            kernels.legal_mask(u64, i8, i64, tab, meld_bits, mask)
        rng[0] = rngs[i]
        while i64[PHASE] != DEAL_OVER and kinds[i, i64[CURRENT]] != EXTERNAL:
            move = _kernel_move(u64, i8, i64, tab, kinds[i, i64[CURRENT]], rng, seats.settings, row_work)
            if kernels.step(u64, i8, i64, tab, meld_bits, mask, move) == kernels.STEP_RESHUFFLE:
                pending[i] = 1
                break
        rngs[i] = rng[0]
        if pending[i]:
            continue
        if i64[PHASE] == DEAL_OVER:
            written.over[i] = 1
            written.to_move[i] = -1
            deal_rewards(i64, report.reward, written.rewards[i])
            seat = seats.observer[i] if seats.observer[i] >= 0 else actor[i]
        else:
            written.over[i] = 0
            seat = i64[CURRENT]
            written.to_move[i] = seat
        write_observation(u64, i8, i64, tab, seat, report.offsets, report.consts, written.obs[i])
