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
from treppen_env.core.bits import bit, count, lowest
from treppen_env.core.cache import kernel
from treppen_env.core.generator import next_random, random_below
from treppen_env.core.layout import (
    HAND,
    I8_SIZE,
    I64_SIZE,
    KNOWN,
    MAX_SEATS,
    NUM_CARDS,
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


@kernel
def new_beliefs(candidates: int, temperature: float, epsilon: float, settings: np.ndarray) -> Beliefs:
    """Empty beliefs (no decisions yet: uniform deals) with ``candidates`` candidate deals per kept
    one, the opponent model's ``temperature`` (points) and ``epsilon``, and the heuristic's
    settings (float64)."""
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
    afresh: uniformly (:func:`treppen_env.agent_core.playout_kernels.redeal`) without decisions to weigh, else
    the one of ``b.candidates`` fresh deals kept by its weight (sampling-importance-resampling,
    see the module docstring); ``b.candidates == 0`` copies ``root`` as it is (a full-information
    search, for diagnostics). ``work`` is :func:`scratch`."""
    u64, i8, i64 = det.u64, det.i8, det.i64
    count = b.candidates if b.decisions.size[0] > 0 else 1
    hands, stocks, logw = work.hands, work.stocks, work.log_weights
    best = -np.inf
    for c in range(count):
        u64[:] = root.u64
        i8[:] = root.i8
        i64[:] = root.i64
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
    pick = (next_random(rng) >> np.uint64(11)) * (1.0 / 9007199254740992.0) * total
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
