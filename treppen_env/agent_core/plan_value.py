"""The planner's value of the end of a turn, in expected deal points (kernels).

The planner (:mod:`treppen_env.agent_core.planner_kernels`) searches the same turn plans as the greedy
heuristic (:mod:`treppen_env.agent_core.greedy_kernels`: card-disjoint melds and lay-off chains, RULES §4.3)
but scores the cards a plan leaves in hand by what they are likely to cost or bring before the
deal ends, rather than by fixed weights:

- **the opponents' threat** ``t`` (:func:`threat`): how close the opponents are to going out,
  the sum over opponents of ``decay ** (hand size - 1)`` (1 for an opponent holding one card).
  When an opponent goes out it books every card left in the mover's hand (RULES §6.2; in
  ``rum500`` the mover loses them, §6.3), so a kept card costs its hand value times
  ``hold + threat * t``;
- **the chance of melding a kept card later**: a credit for every live card that would complete
  a partial meld with it (a pair, two in a row, a gap; live: not on the table, in the mover's hand
  or an opponent's known cards), worth less the nearer an opponent is to going out
  (``1 - urgency * t``, at least 0);
- **going out next turn**: when the best discard leaves one card that fits an open end of a table
  meld, the mover lays it off and goes out on its next turn; a share ``near_out`` of the going-out
  bonus is counted;
- **the danger of each discard** (RULES §4.1: the next seat can take it): the card fits a table
  meld, or completes or extends a meld with an opponent's known cards; a card whose rank or suit
  neighbours the next seat discarded or declined (the **memory**, public: it drew from the stock
  over it) is less dangerous, by the share ``memory`` per such card;
- **the Rommé** (RULES §6.2): before the mover's first meld of the deal, the plan search keeps the
  melds in hand instead of a plan that lays some but does not go out, when laying nothing scores
  better with ``romme`` times the doubled part of the going-out bonus times the share of the hand
  its plans could lay (:func:`treppen_env.agent_core.greedy_kernels._plan`);
- **the draw**: the stock scores the hand's plan plus ``stock_gain`` + ``take_margin``, as the
  greedy heuristic's settings of the same names do.

The settings row (float64 (:data:`NUM_VALUES`,), slots ``V_*``, defaults :data:`DEFAULT_VALUES`)
was tuned on duplicate decks of one seed (docs/guide/agents.md, "The planner").

Card sets are uint64 bitsets; ``ctx`` is the greedy heuristic's decision context (uint64
(:data:`NUM_CONTEXT`,), slots ``CTX_*``: the next seat's known cards, the other seats' known cards,
the staircase, the dead cards, the cards that fit an open end).
"""

from __future__ import annotations

import numpy as np

from treppen_env.cards import HAND_POINTS, NUM_CARDS, NUM_RANKS, NUM_SUITS, make_card, rank_of, suit_of
from treppen_env.core.bits import bit, count, has, lowest
from treppen_env.core.cache import kernel

#: Slots of the greedy heuristic's decision context ``ctx`` (uint64 bitsets; filled by
#: :func:`treppen_env.agent_core.greedy_kernels._context`): the next seat's known cards, the other
#: seats' known cards (the slot after), the staircase, the dead cards (on the table or known), the
#: cards that fit an open end of a table meld.
CTX_NEXT_KNOWN, CTX_OTHER_KNOWN, CTX_STAIRS, CTX_DEAD, CTX_FITS = range(5)
NUM_CONTEXT = 5

(
    V_HOLD,
    V_THREAT,
    V_DECAY,
    V_CARD_COST,
    V_CREDIT,
    V_URGENCY,
    V_NEAR_OUT,
    V_MEMORY,
    V_MIN_WEIGHT,
    V_DANGER,
    V_ROMME,
    V_STOCK_GAIN,
    V_TAKE_MARGIN,
) = range(13)
#: Slots of the planner's settings row.
NUM_VALUES = 13
#: The planner's settings and their defaults, in the order of the row.
DEFAULT_VALUES = {
    "hold": 0.38,
    "threat": 0.16,
    "decay": 0.245,
    "card_cost": 0.8,
    "credit": 6.5,
    "urgency": 0.5,
    "near_out": 0.25,
    "memory": 0.0,
    "min_weight": 1.5,
    "danger": 1.5,
    "romme": 0.5,
    "stock_gain": 1.44,
    "take_margin": 1.64,
}
#: Most live completions a kept card is credited for.
MAX_LIVE = 3.0
MEAN_HAND_POINTS = sum(HAND_POINTS) / NUM_CARDS
_FULL = np.uint64((1 << NUM_CARDS) - 1)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_HAND_POINTS = np.array(HAND_POINTS, dtype=np.int64)
#: Other cards of each card's rank.
MATES = np.array(
    [sum(1 << make_card(s, rank_of(c)) for s in range(NUM_SUITS)) & ~(1 << c) for c in range(NUM_CARDS)],
    dtype=np.uint64,
)
#: Next card up / down in the same suit (the ace follows the king and precedes the 2).
UP = np.array([make_card(suit_of(c), (rank_of(c) + 1) % NUM_RANKS) for c in range(NUM_CARDS)], dtype=np.int64)
DOWN = np.array([make_card(suit_of(c), (rank_of(c) - 1) % NUM_RANKS) for c in range(NUM_CARDS)], dtype=np.int64)


@kernel
def threat(hand_sizes: np.ndarray, num_players: int, values: np.ndarray) -> float:
    """How close the opponents are to going out (RULES §6.1): the sum over relative seats
    1..``num_players``-1 of ``decay ** (hand size - 1)`` (``hand_sizes``: int64, relative seats)."""
    t = 0.0
    for k in range(1, num_players):
        t += values[V_DECAY] ** max(0, hand_sizes[k] - 1)
    return t


@kernel
def _live(bits: np.uint64, unseen: np.uint64, stair_bits: np.uint64) -> float:
    """Live cards among ``bits``: unseen ones count 1, staircase ones (takable, RULES §4.1) 1/2."""
    return count(bits & unseen & ~stair_bits) + 0.5 * count(bits & stair_bits)


@kernel
def live_completions(c: int, cards: np.uint64, unseen: np.uint64, stair_bits: np.uint64) -> float:
    """Live cards that would complete a partial meld of ``c`` with ``cards`` (RULES §3.1-3.2): the
    other suits of a pair, the cards at both ends of two in a row, the middle card of a gap."""
    live = 0.0
    mates = MATES[c]
    if mates & cards:
        live += _live(mates & ~cards, unseen, stair_bits)
    up = UP[c]
    down = DOWN[c]
    if has(cards, up) or has(cards, down):
        lo = DOWN[down] if has(cards, down) else down
        hi = UP[up] if has(cards, up) else up
        live += _live(bit(lo) | bit(hi), unseen, stair_bits)
    else:
        if has(cards, UP[up]):
            live += _live(bit(up), unseen, stair_bits)
        if has(cards, DOWN[down]):
            live += _live(bit(down), unseen, stair_bits)
    return live


@kernel
def weight(c: int, cards: np.uint64, unseen: np.uint64, stair_bits: np.uint64, t: float, values: np.ndarray) -> float:
    """Expected cost in points of keeping card ``c`` of ``cards`` under threat ``t`` (see the
    module docstring): its hand value times ``hold + threat * t`` plus ``card_cost``, less
    ``credit`` per live completion (at most :data:`MAX_LIVE`) times ``1 - urgency * t``; at least
    ``min_weight``."""
    live = min(MAX_LIVE, live_completions(c, cards, unseen, stair_bits))
    time_left = max(0.0, 1.0 - values[V_URGENCY] * t)
    cost = _HAND_POINTS[c] * (values[V_HOLD] + values[V_THREAT] * t) + values[V_CARD_COST]
    w = cost - values[V_CREDIT] * live * time_left
    return max(values[V_MIN_WEIGHT], w)


@kernel
def danger(card: int, ctx: np.ndarray, memory: np.ndarray, memory_share: float) -> float:
    """How much discarding ``card`` helps the opponents, in points (RULES §4.1: the next seat can
    take it): its hand value + 10 when it fits an open end of a table meld; else, for the next
    seat (weight 1) and the others (1/2), its value + 15 when it completes a meld with their known
    cards, 4 when it extends one; the next seat's part discounted by ``memory_share`` for each rank
    mate or suit neighbour it discarded or declined (``memory[0]``, a uint64 bitset; at most to 0).
    With ``memory_share`` 0 this is the greedy heuristic's danger."""
    value = _HAND_POINTS[card]
    if has(ctx[CTX_FITS], card):
        return value + 10.0
    up = UP[card]
    down = DOWN[card]
    signs = count(MATES[card] & memory[0]) + count((bit(up) | bit(down)) & memory[0])
    result = 0.0
    for who in range(2):
        known = ctx[CTX_NEXT_KNOWN + who]  # who 0: the next seat; 1: the others
        if known == _ZERO:
            continue
        weight_of = 1.0 if who == 0 else 0.5
        if who == 0:
            weight_of *= max(0.0, 1.0 - memory_share * signs)
        mates = count(MATES[card] & known)
        run = (has(known, up) and (has(known, UP[up]) or has(known, down))) or (
            has(known, down) and has(known, DOWN[down])
        )
        if mates >= 2 or run:
            result += weight_of * (value + 15.0)
        elif mates or has(known, up) or has(known, down):
            result += weight_of * 4.0
    return result


@kernel
def average_weight(t: float, values: np.ndarray) -> float:
    """The :func:`weight` of an unknown card (the stock's, before the draw): an average card's hand
    value (RULES §1.3) times ``hold + threat * t``, plus ``card_cost``."""
    return MEAN_HAND_POINTS * (values[V_HOLD] + values[V_THREAT] * t) + values[V_CARD_COST]


@kernel
def discard_value(
    c: int,
    w: float,
    hand: np.uint64,
    unseen: np.uint64,
    ctx: np.ndarray,
    values: np.ndarray,
    danger_c: float,
    out_bonus: float,
) -> float:
    """What discarding ``c`` from ``hand`` saves, in points: its :func:`weight` ``w`` less its
    danger ``danger_c`` times ``danger``, plus ``near_out`` times ``out_bonus`` times the chance of
    going out next turn with the cards it leaves (:func:`out_chance`; a caller scoring a plan before
    the draw gives an ``out_bonus`` of 0)."""
    saved = w - values[V_DANGER] * danger_c
    return saved + values[V_NEAR_OUT] * out_bonus * out_chance(hand & ~bit(c), unseen, ctx)


@kernel
def out_chance(left: np.uint64, unseen: np.uint64, ctx: np.ndarray) -> float:
    """The chance that the next stock draw lets a hand of ``left`` go out (RULES §6.1), for one or
    two cards (0 for more): one card goes out when the drawn card fits an open end of a table meld
    (laid off, the other discarded); two go out when the drawn card completes a meld with them."""
    k = count(left)
    pool = count(unseen)
    if k == 0 or k > 2 or pool == 0:
        return 0.0
    if k == 1:
        return count(unseen & ctx[CTX_FITS]) / pool
    c = lowest(left)
    return live_completions(c, left, unseen, np.uint64(0)) / pool


def values_row(**values: float) -> np.ndarray:
    """The planner's settings as the kernels read them: float64 (:data:`NUM_VALUES`,), defaults
    (:data:`DEFAULT_VALUES`) for those not given.

    :raises ValueError: for a name that is no setting (listing the settings).
    """
    unknown = sorted(set(values) - set(DEFAULT_VALUES))
    if unknown:
        raise ValueError(f"unknown planner settings {unknown}; the settings: {list(DEFAULT_VALUES)}")
    return np.array([float(values.get(k, v)) for k, v in DEFAULT_VALUES.items()], dtype=np.float64)
