"""Beliefs from the opponents' moves: deals of the unseen cards weighted by how likely an opponent
model makes what the opponents were seen to do (Buro et al. 2009; Rebstock et al. 2019).

The decisions come from :class:`treppen_env.history.History`: for each, the position the opponent
decided in (its public part exact), the action it chose, and how its hand then follows from its
hand now: steps back through the turn parts since, newest first, each adding the cards it played,
removing those it took from the staircase and, for a stock draw, one card it could have drawn
(:func:`hand_then`). A candidate deal of the unseen cards gives
every opponent a hand now, so a hand at each of its decisions; the opponent model gives the
probability of the action it chose there (:func:`decision_log_likelihood`). The product is the
deal's weight.

The opponent model is a softmax over the greedy heuristic's own score of every legal action
(:func:`treppen_env.agent_core.feature_kernels.action_scores`, in points) at temperature ``T``, mixed with
``epsilon`` of the uniform choice over the legal actions (so no deal is ruled out for a move the
heuristic would not make, while a move illegal with the deal's hand rules it out):

    P(a) = (1 - epsilon) * exp(s_a / T) / sum_b exp(s_b / T) + epsilon / #legal

over the legal actions ``b`` the heuristic scores (an unscored legal action gets only the
``epsilon`` share).

:func:`determinize` is sampling-importance-resampling: it deals ``candidates`` candidate deals
afresh (:func:`treppen_env.agent_core.playout_kernels.redeal`), weighs them, and keeps one with probability
proportional to its weight; the effective sample size of the weights, ``(sum w)^2 / sum w^2``
divided by the candidates, is added up in ``stats``. Nothing here reads a hidden card: the root
state holds the observer's sampled view, and every candidate is a fresh deal of what it cannot see.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from treppen_env.agent_core import feature_kernels, greedy_kernels, playout_kernels
from treppen_env.core import kernels
from treppen_env.core.bits import bit, count, has, lowest
from treppen_env.core.cache import kernel
from treppen_env.core.generator import random_below, random_unit
from treppen_env.core.layout import (
    CURRENT,
    HAND,
    I8_SIZE,
    I64_SIZE,
    KNOWN,
    MAX_SEATS,
    MUST_USE,
    NUM_CARDS,
    NUM_PLAYERS,
    STOCK,
    STOCK_LEN,
    U64_SIZE,
    Position,
    Tables,
)


class Decisions(NamedTuple):
    """The opponents' decisions a search weighs, one row each (:data:`MAX_DECISIONS` rows; a kernel bundle)."""

    #: The positions decided in, rows of the state layout (:mod:`treppen_env.core.layout`).
    u64: np.ndarray
    i8: np.ndarray
    i64: np.ndarray
    #: int64 (MAX_DECISIONS,): each decision's opponent and chosen action.
    seat: np.ndarray
    action: np.ndarray
    #: int64 (1,): the decisions in use.
    size: np.ndarray


class Undo(NamedTuple):
    """Each decision's steps back from its opponent's hand now to its hand then, newest first
    (:class:`treppen_env.history.Undo`, :func:`hand_then`; a kernel bundle)."""

    #: int64 (MAX_DECISIONS,): the steps of each decision.
    steps: np.ndarray
    #: uint64 (MAX_DECISIONS, MAX_STEPS): the cards each step adds back and removes.
    add: np.ndarray
    remove: np.ndarray
    #: int64 (MAX_DECISIONS, MAX_STEPS): the stock cards each step drew.
    draws: np.ndarray
    #: uint64 (MAX_DECISIONS, MAX_STEPS): the cards such a draw may have been.
    unknown: np.ndarray


class OpponentModel(NamedTuple):
    """The opponent model (see the module docstring; a kernel bundle)."""

    #: Its temperature, points.
    temperature: float
    #: Its share of the uniform choice.
    epsilon: float
    #: The heuristic's settings (float64; its rules: the rules table the kernels are given).
    settings: np.ndarray


class Beliefs(NamedTuple):
    """A search's beliefs (:func:`new_beliefs`; a kernel bundle)."""

    #: The decisions weighed, and the steps back to their hands.
    decisions: Decisions
    undo: Undo
    #: The model of the opponents' decisions.
    model: OpponentModel
    #: Candidate deals per kept one (1: no weighting, uniform deals; 0: no deals, the root as it is).
    candidates: int
    #: uint64 (1,): cards the stock is dealt from after a reshuffle (0: any).
    stock_pool: np.ndarray
    #: float64 (NUM_CARDS, LOCATIONS): learned card beliefs the deals are drawn from
    #: (:func:`deal_learned`); no rows: none.
    probs: np.ndarray
    #: float64 (3,): the sum of the effective sample sizes (as shares of the candidates), the
    #: weighted determinizations and the candidates ruled out (weight 0), columns ``ST_*``.
    stats: np.ndarray


class Likelihood(NamedTuple):
    """The arrays :func:`decision_log_likelihood` works in (a kernel bundle)."""

    #: uint64 (U64_SIZE,): a decision's position with the hypothesised hand.
    u64: np.ndarray
    #: int8 (898,): its legal mask.
    mask: np.ndarray
    #: float64 (898,): the heuristic's action scores.
    scores: np.ndarray
    #: float32 (898, NUM_FEATURES): the feature table the scores are written beside.
    features: np.ndarray
    #: The heuristic's inputs and its workspace.
    inputs: greedy_kernels.Inputs
    workspace: greedy_kernels.Workspace


class BeliefWork(NamedTuple):
    """The arrays :func:`determinize` works in (:func:`scratch`; a kernel bundle)."""

    #: The opponent model's scratch.
    likelihood: Likelihood
    #: The candidate deals: uint64 (MAX_CANDIDATES, MAX_SEATS) hands, int8 (MAX_CANDIDATES, 52)
    #: stocks, float64 (MAX_CANDIDATES,) log-weights.
    hands: np.ndarray
    stocks: np.ndarray
    log_weights: np.ndarray


#: Columns of ``Beliefs.stats``.
ST_ESS, ST_WEIGHED, ST_RULED_OUT = range(3)
#: The most decisions a search weighs (2 per opponent turn remembered).
MAX_DECISIONS = 8
#: The most candidate deals per kept one.
MAX_CANDIDATES = 64
#: The most steps back from an opponent's hand now to its hand at a decision.
MAX_STEPS = 4

_ONE = np.uint64(1)
_ZERO_BITS = np.uint64(0)


@kernel
def new_beliefs(
    candidates: int, temperature: float, epsilon: float, settings: np.ndarray, probs: np.ndarray
) -> Beliefs:
    """Empty beliefs (no decisions yet: uniform deals) with ``candidates`` candidate deals per kept
    one, the opponent model's ``temperature`` (points) and ``epsilon``, and the heuristic's
    settings (float64); or, when ``probs`` (float64 (NUM_CARDS, LOCATIONS)) has rows, deals drawn
    from these learned card beliefs (:func:`deal_learned`)."""
    decisions = Decisions(
        u64=np.zeros((MAX_DECISIONS, U64_SIZE), dtype=np.uint64),
        i8=np.zeros((MAX_DECISIONS, I8_SIZE), dtype=np.int8),
        i64=np.zeros((MAX_DECISIONS, I64_SIZE), dtype=np.int64),
        seat=np.zeros(MAX_DECISIONS, dtype=np.int64),
        action=np.zeros(MAX_DECISIONS, dtype=np.int64),
        size=np.zeros(1, dtype=np.int64),
    )
    undo = Undo(
        steps=np.zeros(MAX_DECISIONS, dtype=np.int64),
        add=np.zeros((MAX_DECISIONS, MAX_STEPS), dtype=np.uint64),
        remove=np.zeros((MAX_DECISIONS, MAX_STEPS), dtype=np.uint64),
        draws=np.zeros((MAX_DECISIONS, MAX_STEPS), dtype=np.int64),
        unknown=np.zeros((MAX_DECISIONS, MAX_STEPS), dtype=np.uint64),
    )
    return Beliefs(
        decisions=decisions,
        undo=undo,
        model=OpponentModel(temperature=temperature, epsilon=epsilon, settings=settings),
        candidates=candidates,
        stock_pool=np.zeros(1, dtype=np.uint64),
        probs=probs,
        stats=np.zeros(3),
    )


@kernel
def hand_then(undo: Undo, j: int, hand_now: np.uint64, rng: np.ndarray) -> np.uint64:
    """The hand decision ``j``'s opponent held then, from a hand now (uint64 bitsets): step by step
    back (``undo``), newest first, the cards it played added, those it took from the staircase
    removed (RULES §4.1), and for a stock draw one random card of those not publicly its own before."""
    hand = hand_now
    for k in range(undo.steps[j]):
        hand = (hand | undo.add[j, k]) & ~undo.remove[j, k]
        for _ in range(undo.draws[j, k]):
            pool = hand & undo.unknown[j, k]
            if pool == np.uint64(0):
                break
            skip = random_below(rng, count(pool))
            while skip:
                pool &= pool - _ONE
                skip -= 1
            hand &= ~bit(lowest(pool))
    return hand


@kernel
def decision_log_likelihood(
    b: Beliefs, j: int, hand: np.uint64, tab: np.ndarray, meld_bits: np.ndarray, scratch: Likelihood
) -> float:
    """The opponent model's log-probability (see the module docstring) of decision ``j``'s action,
    had its opponent held ``hand`` then; -inf when the action is illegal with that hand."""
    decisions, model = b.decisions, b.model
    u64, mask, scores = scratch.u64, scratch.mask, scratch.scores
    u64[:] = decisions.u64[j]
    seat = decisions.seat[j]
    u64[HAND + seat] = hand
    i8, i64 = decisions.i8[j], decisions.i64[j]
    kernels.legal_mask(u64, i8, i64, tab, meld_bits, mask)
    action = decisions.action[j]
    if not mask[action]:
        return -np.inf
    greedy_kernels.state_inputs(u64, i8, i64, seat, scratch.inputs)
    feature_kernels.action_scores(
        scratch.inputs, mask, tab, model.settings, scratch.workspace, scores, scratch.features
    )
    legal, best = 0, -np.inf
    for a in range(mask.size):
        if mask[a]:
            legal += 1
            best = max(best, scores[a])
    share = model.epsilon / legal
    if best == -np.inf:  # nothing scored: the uniform choice
        return np.log(1.0 / legal)
    total = 0.0
    for a in range(mask.size):
        if mask[a] and scores[a] > -np.inf:
            total += np.exp((scores[a] - best) / model.temperature)
    p = share
    if scores[action] > -np.inf:
        p += (1.0 - model.epsilon) * np.exp((scores[action] - best) / model.temperature) / total
    return np.log(p)


@kernel
def log_weight(
    b: Beliefs, u64: np.ndarray, tab: np.ndarray, meld_bits: np.ndarray, rng: np.ndarray, scratch: Likelihood
) -> float:
    """The log-weight of a candidate deal (``u64``: its card bitsets): the sum over the decisions of
    their log-likelihoods with the hands the deal implies (:func:`hand_then`)."""
    total = 0.0
    for j in range(b.decisions.size[0]):
        hand = hand_then(b.undo, j, u64[HAND + b.decisions.seat[j]], rng)
        total += decision_log_likelihood(b, j, hand, tab, meld_bits, scratch)
        if total == -np.inf:
            break
    return total


@kernel
def scratch() -> BeliefWork:
    """The :class:`BeliefWork` of :func:`determinize` (with the :class:`Likelihood` scratch of
    :func:`decision_log_likelihood`)."""
    likelihood = Likelihood(
        u64=np.zeros(U64_SIZE, dtype=np.uint64),
        mask=np.zeros(kernels.A_DISCARD_BASE + NUM_CARDS, dtype=np.int8),
        scores=np.zeros(kernels.A_DISCARD_BASE + NUM_CARDS),
        features=np.zeros((kernels.A_DISCARD_BASE + NUM_CARDS, feature_kernels.NUM_FEATURES), dtype=np.float32),
        inputs=greedy_kernels.empty_inputs(),
        workspace=greedy_kernels.workspace(),
    )
    return BeliefWork(
        likelihood=likelihood,
        hands=np.zeros((MAX_CANDIDATES, MAX_SEATS), dtype=np.uint64),
        stocks=np.zeros((MAX_CANDIDATES, NUM_CARDS), dtype=np.int8),
        log_weights=np.zeros(MAX_CANDIDATES),
    )


@kernel
def copy_position(source: Position, target: Position) -> None:
    """``target``'s arrays become copies of ``source``'s (a root into a determinization, a
    determinization into a simulation)."""
    target.u64[:] = source.u64
    target.i8[:] = source.i8
    target.i64[:] = source.i64


@kernel
def determinize(
    root: Position,
    det: Position,
    tab: np.ndarray,
    meld_bits: np.ndarray,
    observer: int,
    rng: np.ndarray,
    b: Beliefs,
    work: BeliefWork,
) -> None:
    """``det`` (u64, i8, i64) becomes a copy of ``root`` with what ``observer`` cannot see dealt
    afresh: from the learned card beliefs ``b.probs`` when it has rows (:func:`deal_learned`, exact;
    uniformly should no deal fit them), else uniformly
    (:func:`treppen_env.agent_core.playout_kernels.redeal`) without decisions to weigh, else
    the one of ``b.candidates`` fresh deals kept by its weight (sampling-importance-resampling,
    see the module docstring); ``b.candidates == 0`` copies ``root`` as it is (a full-information
    search, for diagnostics). ``work`` is :func:`scratch`."""
    u64, i8, i64 = det.u64, det.i8, det.i64
    if b.probs.shape[0] > 0 and b.candidates != 0:
        copy_position(root, det)
        if not deal_learned(det, Tables(tab=tab, meld_bits=meld_bits), observer, b.probs, b.stock_pool[0], rng, 100):
            copy_position(root, det)
            playout_kernels.redeal(det, tab, meld_bits, observer, rng, 100, b.stock_pool[0])
        return
    count = b.candidates if b.decisions.size[0] > 0 else 1
    hands, stocks, logw = work.hands, work.stocks, work.log_weights
    best = -np.inf
    for c in range(count):
        copy_position(root, det)
        if b.candidates == 0:  # everything known (a diagnostic's full-information search): no redeal
            return
        playout_kernels.redeal(det, tab, meld_bits, observer, rng, 100, b.stock_pool[0])
        if count == 1:
            return
        hands[c] = u64[HAND : HAND + MAX_SEATS]
        stocks[c, : i64[STOCK_LEN]] = i8[STOCK : STOCK + i64[STOCK_LEN]]
        logw[c] = log_weight(b, u64, tab, meld_bits, rng, work.likelihood)
        best = max(best, logw[c])
    weights = np.exp(logw[:count] - best) if best > -np.inf else np.ones(count)
    total = weights.sum()
    b.stats[ST_ESS] += total * total / (weights * weights).sum() / count
    b.stats[ST_WEIGHED] += 1.0
    b.stats[ST_RULED_OUT] += (weights == 0.0).sum()
    pick = random_unit(rng) * total
    chosen = count - 1
    for c in range(count):
        pick -= weights[c]
        if pick < 0.0:
            chosen = c
            break
    u64[HAND : HAND + MAX_SEATS] = hands[chosen]
    i8[STOCK : STOCK + i64[STOCK_LEN]] = stocks[chosen, : i64[STOCK_LEN]]


class Dealer(NamedTuple):
    """How determinizations are dealt: the beliefs and their scratch (a kernel bundle; :func:`scratch`)."""

    beliefs: Beliefs
    work: BeliefWork


@kernel
def card_counts(
    root: Position,
    det: Position,
    tables: Tables,
    observer: int,
    rng: np.ndarray,
    dealer: Dealer,
    samples: int,
    counts: np.ndarray,
) -> None:
    """Deal ``samples`` determinizations (:func:`determinize`, by the :class:`Dealer`; ``tables``:
    the rules core's :class:`~treppen_env.core.layout.Tables`) and count
    in ``counts`` (float64 (MAX_SEATS, 52)) how often each seat holds each card it is not publicly
    known to hold: the beliefs' probability that it holds the card, times ``samples``."""
    tab, meld_bits = tables.tab, tables.meld_bits
    u64 = det.u64
    for _ in range(samples):
        determinize(root, det, tab, meld_bits, observer, rng, dealer.beliefs, dealer.work)
        for s in range(MAX_SEATS):
            if s == observer:
                continue
            hidden = u64[HAND + s] & ~u64[KNOWN + s]
            while hidden:
                c = lowest(hidden)
                hidden &= ~bit(c)
                counts[s, c] += 1.0


# ------------------------------------------------------------------ deals from learned card beliefs
#: Columns of a card-location table (float64 (NUM_CARDS, LOCATIONS)): seat ``s``'s hidden cards at
#: column ``s`` (absolute seats), the stock at :data:`IN_STOCK`.
IN_STOCK = MAX_SEATS
LOCATIONS = MAX_SEATS + 1


@kernel
def _strides(caps: np.ndarray) -> np.ndarray:
    """Mixed-radix strides (int64 (L,)) over the remaining capacities of the first ``L - 1``
    locations (the last one's follows from the cards left); the last entry is the table size."""
    strides = np.ones(caps.size, dtype=np.int64)
    for place in range(1, caps.size):
        strides[place] = strides[place - 1] * (caps[place - 1] + 1)
    return strides


@kernel
def _choice_weights(
    weights: np.ndarray, caps: np.ndarray, strides: np.ndarray, after: np.ndarray, i: int, index: int, out: np.ndarray
) -> float:
    """For card ``i`` with the remaining capacities at mixed-radix ``index``: each location's
    weight times the ways to place the cards after it (``after``, the table of card ``i + 1``)
    into ``out`` (float64 (L,)); their sum."""
    last = caps.size - 1
    left = weights.shape[0] - i
    total = 0.0
    used = 0
    for place in range(last):
        rem = (index // strides[place]) % (caps[place] + 1)
        used += rem
        out[place] = weights[i, place] * after[index - strides[place]] if rem > 0 else 0.0
        total += out[place]
    rest = left - used
    out[last] = weights[i, last] * after[index] if 0 < rest <= caps[last] else 0.0
    return total + out[last]


@kernel
def sample_locations(weights: np.ndarray, caps: np.ndarray, rng: np.ndarray, out: np.ndarray) -> bool:
    """Place ``m`` cards into ``L`` locations exactly by capacity, each whole placement drawn with
    probability proportional to the product of its cards' weights (the conditional distribution of
    independent card locations given the locations' sizes).

    A dynamic programme over the cards from the last counts, for every vector of remaining
    capacities, the weighted ways to place the cards left (each card's table rescaled by its
    largest entry, which cancels); the cards are then placed in order, each location drawn with
    its weight times the ways to place the rest. Exact for any ``L``; its table has
    ``prod(caps[:-1] + 1)`` entries a card.

    :param weights: float64 (m, L), non-negative.
    :param caps: int64 (L,), summing to ``m``.
    :param rng: the SplitMix64 generator state (uint64 (1,)).
    :param out: int64 (m,): each card's location.
    :return: False when no placement has a positive weight (``out`` then unchanged).
    """
    m, locations = weights.shape
    strides = _strides(caps)
    size = strides[locations - 1]
    ways = np.zeros((m + 1, size))
    ways[m, 0] = 1.0
    choice = np.zeros(locations)
    for i in range(m - 1, -1, -1):
        for index in range(size):
            ways[i, index] = _choice_weights(weights, caps, strides, ways[i + 1], i, index, choice)
        top = ways[i].max()
        if top > 0.0:
            ways[i] /= top
    index = 0
    for place in range(locations - 1):
        index += caps[place] * strides[place]
    if ways[0, index] <= 0.0:
        return False
    for i in range(m):
        total = _choice_weights(weights, caps, strides, ways[i + 1], i, index, choice)
        pick = random_unit(rng) * total
        chosen = locations - 1
        for place in range(locations):
            if choice[place] > 0.0:
                chosen = place
                pick -= choice[place]
                if pick < 0.0:
                    break
        out[i] = chosen
        if chosen < locations - 1:
            index -= strides[chosen]
    return True


class Places(NamedTuple):
    """Where the unseen cards of a position go (:func:`hidden_places`; a kernel bundle)."""

    #: int64 (P,): each place's seat, :data:`IN_STOCK` last.
    seats: np.ndarray
    #: int64 (P,): each place's cards.
    caps: np.ndarray
    #: int64 (m,): the unseen cards, ascending.
    cards: np.ndarray


@kernel
def hidden_places(pos: Position, observer: int) -> Places:
    """The places that hide cards from ``observer``, the other seats' hidden parts and the stock,
    with their sizes, and the cards they hold (RULES §4.1: a seat's taken cards are public)."""
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    n, stock_len = i64[NUM_PLAYERS], i64[STOCK_LEN]
    seats = np.zeros(n, dtype=np.int64)
    caps = np.zeros(n, dtype=np.int64)
    hidden = _ZERO_BITS
    place = 0
    for s in range(n):
        if s != observer:
            secret = u64[HAND + s] & ~u64[KNOWN + s]
            seats[place], caps[place] = s, count(secret)
            hidden |= secret
            place += 1
    seats[place], caps[place] = IN_STOCK, stock_len
    for k in range(stock_len):
        hidden |= bit(i8[STOCK + k])
    cards = np.empty(count(hidden), dtype=np.int64)
    for k in range(cards.size):
        cards[k] = lowest(hidden)
        hidden &= hidden - _ONE
    return Places(seats=seats[: place + 1], caps=caps[: place + 1], cards=cards)


@kernel
def place_weights(places: Places, probs: np.ndarray, stock_pool: np.uint64) -> np.ndarray:
    """Each unseen card's weight of each place (float64 (m, P)): its probability in ``probs``,
    at least 1e-9; after a reshuffle, 0 in the stock for a card outside ``stock_pool`` (RULES
    §6.4), when the pool holds enough unseen cards to fill the stock."""
    cards, stock = places.cards, places.seats.size - 1
    pooled = 0
    for k in range(cards.size):
        if has(stock_pool, cards[k]):
            pooled += 1
    reshuffled = stock_pool != _ZERO_BITS and pooled >= places.caps[stock]
    weights = np.empty((cards.size, places.seats.size))
    for k in range(cards.size):
        for place in range(places.seats.size):
            weights[k, place] = max(probs[cards[k], places.seats[place]], 1e-9)
        if reshuffled and not has(stock_pool, cards[k]):
            weights[k, stock] = 0.0
    return weights


@kernel
def deal_learned(
    pos: Position, tables: Tables, observer: int, probs: np.ndarray, stock_pool: np.uint64, rng: np.ndarray, tries: int
) -> bool:
    """Deal the cards ``observer`` cannot see (the arrays of ``pos`` changed in place) from learned
    beliefs: every other seat keeps its publicly known cards (RULES §4.1), and the unseen cards are
    placed into the seats' hidden parts and the stock, exactly by their sizes
    (:func:`hidden_places`), each placement drawn with probability proportional to the product of
    its cards' weights (:func:`place_weights`, :func:`sample_locations`); the stock's order is
    uniform. A deal from which a seat to move with a must-use card (RULES §4.2) could not play it
    is dealt again, at most ``tries`` times in all.

    :param probs: float64 (NUM_CARDS, LOCATIONS): each card's probability of each place
        (columns: seats, :data:`IN_STOCK`).
    :param stock_pool: the cards a reshuffled stock is dealt from (0: none;
        :func:`treppen_env.agent_core.playout_kernels.redeal`).
    :return: False when no deal was found (the arrays hold the last one tried, or are unchanged
        when no placement fits the constraints).
    """
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    places = hidden_places(pos, observer)
    weights = place_weights(places, probs, stock_pool)
    cards, seats, stock_place = places.cards, places.seats, places.seats.size - 1
    where = np.empty(cards.size, dtype=np.int64)
    stock = np.empty(places.caps[stock_place], dtype=np.int8)
    mover, must_use = i64[CURRENT], i64[MUST_USE]
    for _ in range(tries):
        if not sample_locations(weights, places.caps, rng, where):
            return False
        for place in range(stock_place):
            u64[HAND + seats[place]] = u64[KNOWN + seats[place]]
        j = 0
        for k in range(cards.size):
            if where[k] == stock_place:
                stock[j] = cards[k]
                j += 1
            else:
                u64[HAND + seats[where[k]]] |= bit(cards[k])
        playout_kernels.shuffle(stock, rng)
        i8[STOCK : STOCK + stock.size] = stock
        if must_use < 0 or mover == observer:
            return True
        if kernels.can_play(u64, tables.tab, tables.meld_bits, must_use, u64[HAND + mover]):
            return True
    return False
