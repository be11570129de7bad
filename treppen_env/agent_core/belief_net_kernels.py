"""Kernels of the belief net: where the cards a seat cannot see lie, read from what it has seen.

**The table's history.** An observation holds no move history, so the kernels keep, per seat, what
it did in the open this deal (:class:`TableHistory`, absolute seats): the turn (``TURN + 1``) at
which it last discarded each card (RULES §4.4), at which it last declined each card, that is
left it on the staircase when it drew (RULES §4.1: the whole staircase at a stock draw, the cards
below the taken ones at a take), and at which it laid each card in a meld or lay-off (§4.3).
:func:`note_action` updates it before each action is played.
:class:`treppen_env.history.History` rebuilds the same arrays from an observer's own observations
(2 players), so an agent reads what the kernels recorded in training.

**The input** (:func:`belief_inputs`, float32 (:data:`NUM_INPUTS`,)) is relative to the observer:
:data:`NUM_PLANES` planes of 52 cards, then :data:`NUM_SCALARS` numbers:

=======================  =========================================================================
plane                    card ``c`` is ...
=======================  =========================================================================
``P_MINE``               in the observer's hand
``P_TABLE``              on the table (a meld)
``P_STAIRS``             on the staircase; ``P_DEPTH``: 1 / (1 + its depth from the top)
``P_UNSEEN``             unseen by the observer (in a hidden hand or the stock)
``P_SEAT + 6 r + k``     for the seat ``r`` = 1..3 places to the observer's left: ``k`` = 0 publicly
                         in its hand (RULES §4.1), 1 discarded by it, 2 that discard's recency
                         1 / (1 + turns since), 3 declined by it, 4 that decline's recency, 5 laid
                         by it (a meld or lay-off)
=======================  =========================================================================

The scalars: each seat ``r``'s hidden cards / 13 (3), the stock's size / 52, the turn / 40.

**Training positions** come from deals the kernels play (:func:`record_deals`): each seat plays
a policy of the playouts drawn per deal (the greedy heuristic, the planner, ...), with a share of
uniformly random moves; every turn's start is a position for its mover, labelled with where each
card it cannot see truly lies (:func:`true_places`).

**The net** (:class:`treppen.train.belief_net_torch.BeliefNetTorch` trains it in torch): two ReLU layers
and a linear head of ``52 x 4`` logits, a card's relative locations (the stock, seats ``r`` =
1..3); :func:`card_probabilities` masks the locations not in play or without hidden cards and
takes each unseen card's softmax, in absolute seats (the columns of
:data:`treppen_env.agent_core.belief_kernels.LOCATIONS`), so that each card's probabilities sum to
1; then it scales them (:func:`fit_counts`) so that each location's also sum to the cards it hides.
Its weights are a :class:`BeliefNet` bundle of float32 arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from treppen_env.agent_core import planner_kernels, playout_kernels
from treppen_env.agent_core.belief_kernels import IN_STOCK, LOCATIONS
from treppen_env.core import kernels
from treppen_env.core.bits import bit, count, has
from treppen_env.core.cache import kernel
from treppen_env.core.generator import random_below, random_legal, random_unit
from treppen_env.core.layout import (
    CURRENT,
    DEAL_OVER,
    DRAW,
    HAND,
    KNOWN,
    MAX_SEATS,
    MELD_BITS,
    NUM_CARDS,
    NUM_MELDS,
    NUM_PLAYERS,
    PHASE,
    STAIRS,
    STAIRS_LEN,
    STOCK_LEN,
    TURN,
    Position,
    Tables,
)

#: Planes of the input (see the module docstring).
P_MINE, P_TABLE, P_STAIRS, P_DEPTH, P_UNSEEN = range(5)
P_SEAT = 5
SEAT_PLANES = 6
K_KNOWN, K_DISCARDED, K_DISCARD_RECENCY, K_DECLINED, K_DECLINE_RECENCY, K_LAID = range(SEAT_PLANES)
NUM_PLANES = P_SEAT + SEAT_PLANES * (MAX_SEATS - 1)
#: Scalars after the planes: hidden cards of seats 1..3 (S_HIDDEN + r - 1), the stock, the turn.
S_HIDDEN = NUM_PLANES * NUM_CARDS
S_STOCK = S_HIDDEN + MAX_SEATS - 1
S_TURN = S_STOCK + 1
NUM_SCALARS = MAX_SEATS + 1
NUM_INPUTS = S_HIDDEN + NUM_SCALARS
#: Relative locations of the net's head, a card's: the stock, then seats 1..3 to the observer's left.
REL_STOCK = 0
NUM_REL = MAX_SEATS
#: Rounds of :func:`fit_counts` (real positions need up to about 15 for column sums within 1e-9).
SCALING_ROUNDS = 50
#: The scales of the scalars: a hand, the pack, a long deal's turns.
HAND_SCALE, TURN_SCALE = 13.0, 40.0

_ZERO = np.uint64(0)


class TableHistory(NamedTuple):
    """What each seat did in the open this deal (absolute seats; a kernel bundle)."""

    #: int64 (MAX_SEATS, NUM_CARDS): the turn + 1 at which the seat last discarded the card, 0 never.
    discarded: np.ndarray
    #: int64 (MAX_SEATS, NUM_CARDS): the turn + 1 at which the seat last left the card on the staircase
    #: when it drew, 0 never.
    declined: np.ndarray
    #: int64 (MAX_SEATS, NUM_CARDS): the turn + 1 at which the seat laid the card (a meld or lay-off), 0 never.
    laid: np.ndarray


class BeliefNet(NamedTuple):
    """The belief net's weights (float32; a kernel bundle): ``h1 = relu(w1' x + b1)``,
    ``h2 = relu(w2' h1 + b2)``, ``logits = w3' h2 + b3`` (52 x 4, card-major)."""

    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    w3: np.ndarray
    b3: np.ndarray


@kernel
def new_history() -> TableHistory:
    """An empty :class:`TableHistory` (a deal's start)."""
    return TableHistory(
        discarded=np.zeros((MAX_SEATS, NUM_CARDS), dtype=np.int64),
        declined=np.zeros((MAX_SEATS, NUM_CARDS), dtype=np.int64),
        laid=np.zeros((MAX_SEATS, NUM_CARDS), dtype=np.int64),
    )


@kernel
def note_action(pos: Position, meld_bits: np.ndarray, action: int, history: TableHistory) -> None:
    """Record in ``history`` what the seat to move in ``pos`` does in the open by ``action``, before
    it is played: the staircase cards a draw leaves (RULES §4.1), the cards it lays (§4.3; the
    candidate melds' bitsets ``meld_bits``) or the card it discards (§4.4)."""
    i8, i64 = pos.i8, pos.i64
    seat, when = i64[CURRENT], i64[TURN] + 1
    if action < kernels.A_MELD_BASE:
        left = i64[STAIRS_LEN] - (action - kernels.A_TAKE_BASE if action != kernels.A_DRAW else 0)
        for k in range(left):
            history.declined[seat, i8[STAIRS + k]] = when
    elif action >= kernels.A_DISCARD_BASE:
        history.discarded[seat, action - kernels.A_DISCARD_BASE] = when
    else:
        if action < kernels.A_LAYOFF_BASE:
            cards = meld_bits[action - kernels.A_MELD_BASE]
        else:
            cards = bit((action - kernels.A_LAYOFF_BASE) // kernels.NUM_TARGETS)
        for c in range(NUM_CARDS):
            if has(cards, c):
                history.laid[seat, c] = when


@kernel
def table_cards(u64: np.ndarray, i64: np.ndarray) -> np.uint64:
    """The cards on the table (uint64 bitset): every meld's (RULES §3)."""
    cards = _ZERO
    for m in range(i64[NUM_MELDS]):
        cards |= u64[MELD_BITS + m]
    return cards


@kernel
def unseen_cards(pos: Position, observer: int) -> np.uint64:
    """The cards ``observer`` cannot see (uint64 bitset): the others' hands but their public cards,
    and the stock."""
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    seen = u64[HAND + observer] | table_cards(u64, i64)
    for k in range(i64[STAIRS_LEN]):
        seen |= bit(i8[STAIRS + k])
    for s in range(i64[NUM_PLAYERS]):
        seen |= u64[KNOWN + s]
    return ~seen & ((np.uint64(1) << np.uint64(NUM_CARDS)) - np.uint64(1))


@kernel
def belief_inputs(pos: Position, observer: int, history: TableHistory, out: np.ndarray) -> None:
    """The belief net's input for ``observer`` (see the module docstring) into ``out`` (float32
    (NUM_INPUTS,)); it reads only what ``observer`` may see."""
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    n, now = i64[NUM_PLAYERS], i64[TURN] + 1
    out[:] = 0.0
    mine, table, unseen = u64[HAND + observer], table_cards(u64, i64), unseen_cards(pos, observer)
    stairs = i64[STAIRS_LEN]
    for k in range(stairs):
        c = i8[STAIRS + k]
        out[P_STAIRS * NUM_CARDS + c] = 1.0
        out[P_DEPTH * NUM_CARDS + c] = 1.0 / (stairs - k)
    for c in range(NUM_CARDS):
        out[P_MINE * NUM_CARDS + c] = has(mine, c)
        out[P_TABLE * NUM_CARDS + c] = has(table, c)
        out[P_UNSEEN * NUM_CARDS + c] = has(unseen, c)
    for r in range(1, n):
        seat = (observer + r) % n
        base = (P_SEAT + SEAT_PLANES * (r - 1)) * NUM_CARDS
        for c in range(NUM_CARDS):
            out[base + K_KNOWN * NUM_CARDS + c] = has(u64[KNOWN + seat], c)
            if history.discarded[seat, c] > 0:
                out[base + K_DISCARDED * NUM_CARDS + c] = 1.0
                out[base + K_DISCARD_RECENCY * NUM_CARDS + c] = 1.0 / (1 + now - history.discarded[seat, c])
            if history.declined[seat, c] > 0:
                out[base + K_DECLINED * NUM_CARDS + c] = 1.0
                out[base + K_DECLINE_RECENCY * NUM_CARDS + c] = 1.0 / (1 + now - history.declined[seat, c])
            out[base + K_LAID * NUM_CARDS + c] = history.laid[seat, c] > 0
        out[S_HIDDEN + r - 1] = count(u64[HAND + seat] & ~u64[KNOWN + seat]) / HAND_SCALE
    out[S_STOCK] = i64[STOCK_LEN] / NUM_CARDS
    out[S_TURN] = i64[TURN] / TURN_SCALE


@kernel
def _dense(w: np.ndarray, b: np.ndarray, x: np.ndarray, relu: bool) -> np.ndarray:
    """``w' x + b`` (float32), through a ReLU when ``relu``."""
    y = b.copy()
    for i in range(x.size):
        if x[i] != 0.0:
            y += x[i] * w[i]
    if relu:
        for j in range(y.size):
            y[j] = max(y[j], np.float32(0.0))
    return y


@kernel
def logits(net: BeliefNet, x: np.ndarray) -> np.ndarray:
    """The net's logits (float32 (NUM_CARDS, NUM_REL)) for the input ``x`` (float32 (NUM_INPUTS,))."""
    h1 = _dense(net.w1, net.b1, x, True)
    h2 = _dense(net.w2, net.b2, h1, True)
    return _dense(net.w3, net.b3, h2, False).reshape(NUM_CARDS, NUM_REL)


@kernel
def card_probabilities(net: BeliefNet, pos: Position, observer: int, history: TableHistory) -> np.ndarray:
    """Each card's probability of lying in each place (float64 (NUM_CARDS, LOCATIONS); columns
    absolute seats and :data:`~treppen_env.agent_core.belief_kernels.IN_STOCK`): for the cards
    ``observer`` cannot see, the net's softmax over the places that hide cards (the others' hidden
    parts, the stock); 0 elsewhere."""
    u64, i64 = pos.u64, pos.i64
    n = i64[NUM_PLAYERS]
    x = np.empty(NUM_INPUTS, dtype=np.float32)
    belief_inputs(pos, observer, history, x)
    z = logits(net, x)
    places = np.full(NUM_REL, -1, dtype=np.int64)
    if i64[STOCK_LEN] > 0:
        places[REL_STOCK] = IN_STOCK
    for r in range(1, n):
        seat = (observer + r) % n
        if u64[HAND + seat] & ~u64[KNOWN + seat] != _ZERO:
            places[r] = seat
    probs = np.zeros((NUM_CARDS, LOCATIONS))
    unseen = unseen_cards(pos, observer)
    for c in range(NUM_CARDS):
        if not has(unseen, c):
            continue
        top = -np.inf
        for r in range(NUM_REL):
            if places[r] >= 0:
                top = max(top, z[c, r])
        total = 0.0
        for r in range(NUM_REL):
            if places[r] >= 0:
                probs[c, places[r]] = np.exp(z[c, r] - top)
                total += probs[c, places[r]]
        probs[c] /= total
    counts = np.zeros(LOCATIONS)
    counts[IN_STOCK] = i64[STOCK_LEN]
    for r in range(1, n):
        seat = (observer + r) % n
        counts[seat] = count(u64[HAND + seat] & ~u64[KNOWN + seat])
    fit_counts(probs, unseen, counts)
    return probs


@kernel
def fit_counts(probs: np.ndarray, unseen: np.uint64, counts: np.ndarray) -> None:
    """Scale the rows ``unseen`` of ``probs`` (float64 (NUM_CARDS, LOCATIONS), each row summing to
    1) in place so that each location's column also sums to its number of unseen cards ``counts``
    (float64 (LOCATIONS,)): :data:`SCALING_ROUNDS` rounds of iterative proportional fitting, each
    scaling every column with cards to its count, then every row to 1 (it ends on the rows, so each
    card's probabilities sum to 1 exactly, the columns to within rounding on real positions).
    Factors per location and per card leave the deals drawn from ``probs`` unchanged
    (:func:`treppen_env.agent_core.belief_kernels.deal_learned`: each deal puts as many cards in
    each location, and each card in one)."""
    for _ in range(SCALING_ROUNDS):
        for place in range(LOCATIONS):
            total = 0.0
            for c in range(NUM_CARDS):
                if has(unseen, c):
                    total += probs[c, place]
            if total > 0.0:
                for c in range(NUM_CARDS):
                    probs[c, place] *= counts[place] / total
        for c in range(NUM_CARDS):
            if has(unseen, c):
                probs[c] /= probs[c].sum()


@kernel
def true_places(pos: Position, observer: int, out: np.ndarray) -> None:
    """Where each card ``observer`` cannot see truly lies, as the net's relative location
    (:data:`REL_STOCK`, or seat ``r`` to its left), into ``out`` (int64 (NUM_CARDS,)); -1 for the
    cards it sees (the labels of the belief net's training)."""
    u64, i64 = pos.u64, pos.i64
    n = i64[NUM_PLAYERS]
    unseen = unseen_cards(pos, observer)
    for c in range(NUM_CARDS):
        out[c] = -1
        if not has(unseen, c):
            continue
        out[c] = REL_STOCK
        for r in range(1, n):
            if has(u64[HAND + (observer + r) % n], c):
                out[c] = r


class DealPlan(NamedTuple):
    """How :func:`record_deals` plays its deals (a kernel bundle)."""

    #: Cards dealt to each hand (RULES §2.2) and whether the dealer plays first (§2.4).
    per_hand: int
    dealer_first: bool
    #: int64 (K,): the playout policies (:data:`treppen_env.agent_core.playout_kernels.POLICIES`)
    #: each seat's policy is drawn from, uniformly, at every deal.
    choices: np.ndarray
    #: The share of moves played uniformly at random instead.
    random_share: float


class Recording(NamedTuple):
    """The positions :func:`record_deals` writes, one row each (a kernel bundle)."""

    #: float32 (N, NUM_INPUTS): the mover's belief-net input (:func:`belief_inputs`).
    inputs: np.ndarray
    #: int8 (N, NUM_CARDS): where each card the mover cannot see lies (:func:`true_places`), -1 seen.
    places: np.ndarray
    #: int64 (N,): the turn of the position (RULES §6.5).
    turns: np.ndarray


@kernel
def record_deals(
    template: Position,
    tables: Tables,
    playout: playout_kernels.Playout,
    work: playout_kernels.Scratch,
    plan: DealPlan,
    seed: int,
    out: Recording,
) -> int:
    """Play deals from a shuffled pack (the game and seats of ``template``, its arrays changed)
    until ``out`` is full, and write the position at the start of every turn for its mover; the
    seats' policies are drawn from ``plan.choices`` at each deal (into ``playout.policies``), the
    dealer rotates (RULES §2.1). Returns the positions written."""
    u64, i8, i64 = template.u64, template.i8, template.i64
    tab, meld_bits = tables.tab, tables.meld_bits
    n = i64[NUM_PLAYERS]
    rng = np.full(1, seed, dtype=np.uint64)
    cards = np.arange(NUM_CARDS).astype(np.int8)
    places = np.empty(NUM_CARDS, dtype=np.int64)
    history = new_history()
    written, dealer = 0, 0
    while written < out.turns.size:
        playout_kernels.shuffle(cards, rng)
        kernels.deal(u64, i8, i64, cards, dealer, plan.per_hand, plan.dealer_first)
        dealer = (dealer + 1) % n
        for s in range(n):
            playout.policies[s] = plan.choices[random_below(rng, plan.choices.size)]
        history.discarded[:] = 0
        history.declined[:] = 0
        history.laid[:] = 0
        playout_kernels.start(u64, i8, i64, tab, meld_bits, work)
        while i64[PHASE] != DEAL_OVER and written < out.turns.size:
            if i64[PHASE] == DRAW:
                belief_inputs(template, i64[CURRENT], history, out.inputs[written])
                true_places(template, i64[CURRENT], places)
                out.places[written] = places
                out.turns[written] = i64[TURN]
                written += 1
            if random_unit(rng) < plan.random_share:
                action = random_legal(work.mask.view(np.uint64), rng)
            else:
                action = playout_kernels.policy_action(template, tab, playout, rng, work)
            note_action(template, meld_bits, action, history)
            planner_kernels.remember(work.memory, i8, i64, action)
            playout_kernels.advance(u64, i8, i64, tab, meld_bits, action, rng, work)
    return written
