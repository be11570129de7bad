"""The observation writer: a seat's observation vector written from the state's arrays in one kernel
(:func:`write_observation`; the layout's names and scales are :mod:`treppen_env.observation`'s).
"""

from __future__ import annotations

import numpy as np

from treppen_env.core.bits import bit, count, lowest
from treppen_env.core.cache import kernel
from treppen_env.core.layout import (
    BANNED,
    CURRENT,
    DEALER,
    HAND,
    KNOWN,
    LAID_BEFORE,
    M_KIND,
    M_LENGTH,
    M_LOW,
    M_OWNER,
    M_SUIT,
    MELD_BITS,
    MELD_COLS,
    MELDS,
    MUST_USE,
    NUM_CARDS,
    NUM_MELDS,
    NUM_PLAYERS,
    NUM_RANKS,
    NUM_TARGETS,
    PHASE,
    POINTS,
    SET,
    SLOTS,
    STAIRS,
    STAIRS_LEN,
    STOCK_LEN,
    T_MAX_TURNS,
    TOTALS,
    TURN,
)

_ZERO = np.uint64(0)

#: The observation pieces whose start offsets :func:`write_observation` reads, in the order of its
#: ``offsets`` argument (names of ``treppen_env.observation.LAYOUT``).
OBS_PIECES = (
    "hand",
    "staircase",
    "meld_owner",
    "table",
    "known",
    "must_use",
    "banned",
    "hand_sizes",
    "stock_size",
    "phase",
    "points",
    "totals",
    "dealer",
    "to_move",
    "seats",
    "laid_before",
    "turn",
)
(
    O_HAND,
    O_STAIRS,
    O_OWNER,
    O_TABLE,
    O_KNOWN,
    O_MUST_USE,
    O_BANNED,
    O_HAND_SIZES,
    O_STOCK,
    O_PHASE,
    O_POINTS,
    O_TOTALS,
    O_DEALER,
    O_TO_MOVE,
    O_SEATS,
    O_LAID,
    O_TURN,
) = range(len(OBS_PIECES))
#: Slots of the ``consts`` argument of :func:`write_observation` after the 53 staircase depths.
C_HAND_SCALE, C_POINTS_SCALE, C_TOTALS_SCALE, C_TOTALS_CLIP = range(NUM_CARDS + 1, NUM_CARDS + 5)
OBS_SEATS = 4
TABLE_COLS = 7


@kernel
def _write_cards(obs: np.ndarray, start: int, bits: np.uint64) -> None:
    """Set ``obs[start + card] = 1`` for each card of ``bits``."""
    while bits != _ZERO:
        card = lowest(bits)
        bits &= ~bit(card)
        obs[start + card] = 1.0


@kernel
def write_table(
    u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, seat: int, out: np.ndarray, owner: int, table: int
) -> None:
    """Write the table's per-card pieces for ``seat`` into the float32 array ``out`` (zeros there):
    ``meld_owner`` (52 x 4 from ``owner``: the card lies in a meld laid first by relative seat k)
    and ``table`` (52 x 7 from ``table``: in a set, in a run, a run's low end, its high end, then
    fits a set, a run's low end, a run's high end now; RULES §3, §3.5, §4.3)."""
    n = i64[NUM_PLAYERS]
    for i in range(i64[NUM_MELDS]):
        row = MELDS + MELD_COLS * i
        cards = u64[MELD_BITS + i]
        rel = (i8[row + M_OWNER] - seat + n) % n
        column = 0 if i8[row + M_KIND] == SET else 1
        while cards != _ZERO:
            card = lowest(cards)
            cards &= ~bit(card)
            out[owner + OBS_SEATS * card + rel] = 1.0
            out[table + TABLE_COLS * card + column] = 1.0
        if column == 1:
            suit, low, length = int(i8[row + M_SUIT]), int(i8[row + M_LOW]), int(i8[row + M_LENGTH])
            out[table + TABLE_COLS * (NUM_RANKS * suit + low) + 2] = 1.0
            out[table + TABLE_COLS * (NUM_RANKS * suit + (low + length - 1) % NUM_RANKS) + 3] = 1.0
    for t in range(NUM_TARGETS):
        slots = u64[SLOTS + t]
        while slots != _ZERO:
            card = lowest(slots)
            slots &= ~bit(card)
            out[table + TABLE_COLS * card + 4 + t] = 1.0


@kernel
def write_observation(
    u64: np.ndarray,
    i8: np.ndarray,
    i64: np.ndarray,
    tab: np.ndarray,
    seat: int,
    offsets: np.ndarray,
    consts: np.ndarray,
    obs: np.ndarray,
) -> None:
    """Write ``seat``'s observation of the state into ``obs`` (float32, the whole vector).

    Seats are relative to ``seat`` and padded to 4. Only what ``seat`` may know enters: its own
    hand, the staircase with depths (RULES §4.1), the table with its lay-off slots (§4.3), each
    opponent's publicly known cards, hand sizes, the stock size and the public counters.

    :param offsets: int64, the start of each piece of :data:`OBS_PIECES` in the vector.
    :param consts: float64, the staircase depths 0..52 as float32 values (depth / 52), then the
        scales ``C_HAND_SCALE``, ``C_POINTS_SCALE``, ``C_TOTALS_SCALE`` and ``C_TOTALS_CLIP``.
    """
    obs[:] = 0.0
    n = i64[NUM_PLAYERS]
    _write_cards(obs, offsets[O_HAND], u64[HAND + seat])
    depth = i64[STAIRS_LEN]
    for k in range(depth):
        obs[offsets[O_STAIRS] + i8[STAIRS + k]] = consts[depth - k]
    write_table(u64, i8, i64, seat, obs, offsets[O_OWNER], offsets[O_TABLE])
    for k in range(1, n):
        _write_cards(obs, offsets[O_KNOWN] + NUM_CARDS * (k - 1), u64[KNOWN + (seat + k) % n])
    if i64[MUST_USE] >= 0:
        obs[offsets[O_MUST_USE] + i64[MUST_USE]] = 1.0
    if i64[BANNED] >= 0:
        obs[offsets[O_BANNED] + i64[BANNED]] = 1.0
    for k in range(n):
        s = (seat + k) % n
        obs[offsets[O_HAND_SIZES] + k] = count(u64[HAND + s]) / consts[C_HAND_SCALE]
        obs[offsets[O_POINTS] + k] = i64[POINTS + s] / consts[C_POINTS_SCALE]
        clip = consts[C_TOTALS_CLIP]
        obs[offsets[O_TOTALS] + k] = min(clip, max(-clip, i64[TOTALS + s] / consts[C_TOTALS_SCALE]))
        obs[offsets[O_SEATS] + k] = 1.0
        obs[offsets[O_LAID] + k] = 1.0 if i64[LAID_BEFORE + s] != 0 else 0.0
    obs[offsets[O_STOCK]] = i64[STOCK_LEN] / NUM_CARDS
    obs[offsets[O_PHASE] + i64[PHASE]] = 1.0
    obs[offsets[O_DEALER] + (i64[DEALER] - seat + n) % n] = 1.0
    obs[offsets[O_TO_MOVE] + (i64[CURRENT] - seat + n) % n] = 1.0
    obs[offsets[O_TURN]] = i64[TURN] / tab[T_MAX_TURNS]
