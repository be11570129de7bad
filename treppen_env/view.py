"""What the player to move may see, as arrays, for kernels that decide or simulate.

:func:`mover_view` reads it out of a :class:`~treppen_env.engine.GameState` in the layout of
:mod:`treppen_env.core.layout` (bitsets uint64, cards int8, counters int64), so a heuristic or a
playout kernel can take the fields as arguments. It holds exactly what the mover's observation
holds about the cards (own hand, staircase, table, each seat's publicly known cards, hand sizes and
the stock size), never an opponent's unseen cards or the stock order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from treppen_env.core import layout

if TYPE_CHECKING:
    from treppen_env.engine import GameState


class MoverView(NamedTuple):
    """The mover's visible information (copies: changing them does not change the state).

    :param seat: the seat to move (absolute; per-seat arrays are indexed by absolute seat).
    :param num_players: 2..4.
    :param hand: uint64 bitset of the mover's hand.
    :param staircase: int8 (stairs_len,), bottom to top (RULES §4.1).
    :param melds: int8 (num_melds, MELD_COLS), columns ``M_OWNER``, ``M_KIND``, ``M_SUIT``,
        ``M_LOW``, ``M_LENGTH`` of :mod:`treppen_env.core.layout` (RULES §3).
    :param meld_bits: uint64 (num_melds,): each table meld's cards.
    :param slots: uint64 (3,): cards that can be laid off now at a set, a run's low end, a run's
        high end (RULES §4.3).
    :param known: uint64 (num_players,): each seat's publicly known cards, taken from the
        staircase and not yet played (RULES §4.1); the mover's own row too.
    :param hand_sizes: int64 (num_players,): cards in each hand.
    :param stock_size: cards in the stock.
    :param phase: ``layout.DRAW``, ``MELD`` or ``DEAL_OVER``.
    :param must_use: the card the mover must play at once, -1 for none (RULES §4.2).
    :param banned: the card the mover may not discard this turn, -1 for none (RULES §4.4).
    :param points: int64 (num_players,): points booked this deal (RULES §5).
    :param laid_before: int64 (num_players,): 1 when the seat laid in an earlier turn (§6.2).
    """

    seat: int
    num_players: int
    hand: np.uint64
    staircase: np.ndarray
    melds: np.ndarray
    meld_bits: np.ndarray
    slots: np.ndarray
    known: np.ndarray
    hand_sizes: np.ndarray
    stock_size: int
    phase: int
    must_use: int
    banned: int
    points: np.ndarray
    laid_before: np.ndarray


def mover_view(state: GameState) -> MoverView:
    """The visible information of the player to move in ``state`` (validated first)."""
    position = state.arrays()
    u64, i8, i64 = position.u64, position.i8, position.i64
    n = state.num_players
    seat = int(i64[layout.CURRENT])
    k = int(i64[layout.NUM_MELDS])
    hands = u64[layout.HAND : layout.HAND + n]
    sizes = np.array([int(h).bit_count() for h in hands.tolist()], dtype=np.int64)
    return MoverView(
        seat=seat,
        num_players=n,
        hand=u64[layout.HAND + seat],
        staircase=i8[layout.STAIRS : layout.STAIRS + i64[layout.STAIRS_LEN]].copy(),
        melds=i8[layout.MELDS : layout.MELDS + layout.MELD_COLS * k].reshape(k, layout.MELD_COLS).copy(),
        meld_bits=u64[layout.MELD_BITS : layout.MELD_BITS + k].copy(),
        slots=u64[layout.SLOTS : layout.SLOTS + layout.NUM_TARGETS].copy(),
        known=u64[layout.KNOWN : layout.KNOWN + n].copy(),
        hand_sizes=sizes,
        stock_size=int(i64[layout.STOCK_LEN]),
        phase=int(i64[layout.PHASE]),
        must_use=int(i64[layout.MUST_USE]),
        banned=int(i64[layout.BANNED]),
        points=i64[layout.POINTS : layout.POINTS + n].copy(),
        laid_before=i64[layout.LAID_BEFORE : layout.LAID_BEFORE + n].copy(),
    )
