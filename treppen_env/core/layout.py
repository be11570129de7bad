"""The array layout of a game state: every slot of the three arrays the kernels work on.

A state is three flat NumPy arrays (copied in three ``ndarray.copy()`` calls, passed to every
kernel as they are) plus the rules table (:mod:`treppen_env.core.tables`):

``u64`` - uint64, card bitsets (bit ``card`` set when the card is in the set; RULES §1.1):

=================  =====================  ==================================================
slot               size                   meaning
=================  =====================  ==================================================
``HAND + s``       4 (seats, padded)      the hand of seat ``s`` (0 for seats not in play)
``KNOWN + s``      4                      cards seat ``s`` took from the staircase and still
                                          holds: public (RULES §4.1)
``SLOTS + t``      3                      cards that can be laid off now at target ``t``
                                          (0 set, 1 low end, 2 high end; RULES §4.3), derived
                                          from the meld table by ``refresh_table``
``MELD_BITS + i``  ``MAX_MELDS``          the cards of table meld ``i``
=================  =====================  ==================================================

``i8`` - int8, cards (0..51) and small fields:

===========================  ===============  ==============================================
slot                         size             meaning
===========================  ===============  ==============================================
``STAIRS + k``               52               staircase, bottom (k = 0) to top; ``STAIRS_LEN``
                                              entries used (RULES §2.3, §4.1)
``STOCK + k``                52               stock, bottom (k = 0) to top; ``STOCK_LEN`` used
``SLOT_OWNER + 52 t + c``    3 x 52           meld table index that card ``c`` is laid off onto
                                              at target ``t``, -1 for none (derived)
``MELDS + MELD_COLS i + j``  ``MAX_MELDS`` x  table meld ``i``, column ``j``: ``M_OWNER`` (the
                             ``MELD_COLS``    seat that laid it first), ``M_KIND`` (``SET`` or
                                              ``RUN``), ``M_SUIT`` (-1 for a set), ``M_LOW``
                                              (a set's rank, a run's low-end rank),
                                              ``M_LENGTH``; rows in the order laid, ``NUM_MELDS``
                                              used (RULES §3, §3.5: melds never merge)
===========================  ===============  ==============================================

``i64`` - int64, counters and per-seat numbers:

=====================  =====  ===========================================================
slot                   size   meaning
=====================  =====  ===========================================================
``NUM_PLAYERS``        1      2..4
``DEALER``             1      the dealing seat (RULES §2.1)
``CURRENT``            1      the seat to move
``PHASE``              1      ``DRAW``, ``MELD`` or ``DEAL_OVER`` (RULES §4)
``TURN``               1      turns completed this deal (RULES §6.5)
``STAIRS_LEN``         1      cards on the staircase
``STOCK_LEN``          1      cards in the stock
``NUM_MELDS``          1      rows used in the meld table
``MUST_USE``           1      the taken card the mover must play at once, -1 none (§4.2)
``BANNED``             1      the card the mover may not discard this turn, -1 none (§4.4)
``LAID_THIS_TURN``     1      1 once the mover melded or laid off this turn (§6.2)
``OUTCOME``            1      ``NO_OUTCOME`` or the deal's end, ``WENT_OUT`` ... (RULES §6)
``WENT_OUT``           1      the seat that went out, -1 none
``TABLE_VERSION``      1      bumped at every deal, meld and lay-off (observation caches)
``DEALS_PLAYED``       1      deals finished in this game (RULES §7)
``DEALT``              1      1 once a deal has been dealt
``POINTS + s``         4      points booked this deal (RULES §5)
``TOTALS + s``         4      game totals (RULES §7.1)
``LAID_BEFORE + s``    4      1 when seat ``s`` melded or laid off in an earlier turn (§6.2)
``DEAL_POINTS + s``    4      the last finished deal's points per seat (RULES §6.2-6.4)
=====================  =====  ===========================================================

``tab`` - int64, the rules table of one :class:`~treppen_env.rules.Rules` (built once by
:func:`treppen_env.core.tables.rules_table`; the candidate melds' bitsets are the separate uint64
array :data:`treppen_env.melds.MELD_BITS`):

=========================  ===========  ====================================================
slot                       size         meaning
=========================  ===========  ====================================================
``T_CORNER_RUNS`` ...      1 each       the options ``corner_runs``, ``must_use_taken``,
``T_MAX_TURNS``                         ``going_out_credit``, ``romme_double``,
                                        ``hand_penalty``, ``stock_exhausted == "reshuffle"``
                                        and ``max_turns`` (RULES §8)
``T_ALLOWED + m``          637          1 when candidate meld ``m`` is legal (RULES §3.2)
``T_MELD_VALUE + m``       637          points booked for laying candidate ``m`` (§3.3, §5.1)
``T_LAYOFF_VALUE + 3c+t``  52 x 3       points booked for laying off card ``c`` at ``t`` (§5.2)
``T_HAND_VALUE + c``       52           points of card ``c`` left in hand (§3.3, §6.2)
``T_SHAPE + 4m + j``       637 x 4      candidate ``m``'s kind, suit, low and length (meld row
                                        columns ``M_KIND`` .. ``M_LENGTH`` less one)
=========================  ===========  ====================================================

These constants are read by the compiled kernels as compile-time globals; the kernels' on-disk
cache is keyed on this file too (:mod:`treppen_env.core.cache`), so a change here recompiles them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

NUM_CARDS = 52
NUM_RANKS = 13
MAX_SEATS = 4
NUM_TARGETS = 3
#: At most 17 melds fit on the table: each holds 3 or more of the 52 cards.
MAX_MELDS = NUM_CARDS // 3

# ---------------------------------------------------------------- u64 (card bitsets)
HAND = 0
KNOWN = HAND + MAX_SEATS
SLOTS = KNOWN + MAX_SEATS
MELD_BITS = SLOTS + NUM_TARGETS
U64_SIZE = MELD_BITS + MAX_MELDS

# ---------------------------------------------------------------- i8 (cards, meld rows)
STAIRS = 0
STOCK = STAIRS + NUM_CARDS
SLOT_OWNER = STOCK + NUM_CARDS
MELDS = SLOT_OWNER + NUM_TARGETS * NUM_CARDS
M_OWNER, M_KIND, M_SUIT, M_LOW, M_LENGTH = range(5)
MELD_COLS = 5
I8_SIZE = MELDS + MAX_MELDS * MELD_COLS
#: Values of ``M_KIND``.
SET, RUN = 0, 1

# ---------------------------------------------------------------- i64 (counters)
(
    NUM_PLAYERS,
    DEALER,
    CURRENT,
    PHASE,
    TURN,
    STAIRS_LEN,
    STOCK_LEN,
    NUM_MELDS,
    MUST_USE,
    BANNED,
    LAID_THIS_TURN,
    OUTCOME,
    WENT_OUT,
    TABLE_VERSION,
    DEALS_PLAYED,
    DEALT,
) = range(16)
POINTS = 16
TOTALS = POINTS + MAX_SEATS
LAID_BEFORE = TOTALS + MAX_SEATS
DEAL_POINTS = LAID_BEFORE + MAX_SEATS
I64_SIZE = DEAL_POINTS + MAX_SEATS

# ---------------------------------------------------------------- tab (rules table)
NUM_MELD_CANDIDATES = 637
(
    T_CORNER_RUNS,
    T_MUST_USE_TAKEN,
    T_GOING_OUT_CREDIT,
    T_ROMME_DOUBLE,
    T_HAND_PENALTY,
    T_RESHUFFLE,
    T_MAX_TURNS,
) = range(7)
T_ALLOWED = 8
T_MELD_VALUE = T_ALLOWED + NUM_MELD_CANDIDATES
T_LAYOFF_VALUE = T_MELD_VALUE + NUM_MELD_CANDIDATES
T_HAND_VALUE = T_LAYOFF_VALUE + NUM_TARGETS * NUM_CARDS
T_SHAPE = T_HAND_VALUE + NUM_CARDS
SHAPE_COLS = 4
TAB_SIZE = T_SHAPE + SHAPE_COLS * NUM_MELD_CANDIDATES

#: Values of ``PHASE`` (the engine's ``Phase`` enum has the same numbers), and how many there are.
DRAW, MELD, DEAL_OVER = 0, 1, 2
NUM_PHASES = 3
#: Values of ``OUTCOME``; ``OUTCOME - 1`` indexes the engine's ``OUTCOMES`` names.
NO_OUTCOME, WENT_OUT_OUTCOME, ROMME, STOCK_EXHAUSTED, MAX_TURNS_OUTCOME = range(5)


class Position(NamedTuple):
    """A state's three arrays as one argument (a kernel bundle; the slots above)."""

    #: uint64 (:data:`U64_SIZE`,): the card bitsets.
    u64: np.ndarray
    #: int8 (:data:`I8_SIZE`,): cards and small fields.
    i8: np.ndarray
    #: int64 (:data:`I64_SIZE`,): counters, scores and flags.
    i64: np.ndarray

    def copy(self) -> Position:
        """A copy of the three arrays (for a kernel to write; in Python, not in a kernel)."""
        return Position(u64=self.u64.copy(), i8=self.i8.copy(), i64=self.i64.copy())


class Tables(NamedTuple):
    """The rules tables the kernels read, as one argument (a kernel bundle)."""

    #: int64 (:data:`TAB_SIZE`,): the rules table of the preset (:func:`treppen_env.core.tables.rules_table`).
    tab: np.ndarray
    #: uint64: the candidate melds' card bitsets (:data:`treppen_env.melds.MELD_BITS`).
    meld_bits: np.ndarray


def new_arrays(num_players: int) -> Position:
    """Zeroed arrays of a state for ``num_players`` before its first deal."""
    u64 = np.zeros(U64_SIZE, dtype=np.uint64)
    i8 = np.zeros(I8_SIZE, dtype=np.int8)
    i8[SLOT_OWNER : SLOT_OWNER + NUM_TARGETS * NUM_CARDS] = -1
    i64 = np.zeros(I64_SIZE, dtype=np.int64)
    i64[NUM_PLAYERS] = num_players
    i64[PHASE] = DEAL_OVER
    i64[MUST_USE] = i64[BANNED] = i64[WENT_OUT] = -1
    return Position(u64=u64, i8=i8, i64=i64)
