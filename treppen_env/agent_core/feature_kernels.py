"""The heuristic's view of every legal action, as features for a learned policy.

For a position in the greedy heuristic's input layout (:mod:`treppen_env.agent_core.greedy_kernels`: only
what the mover may see), :func:`action_features` writes one row of :data:`NUM_FEATURES` float32
columns per action: what the heuristic computes about that action when it decides. Rows of
illegal actions are zero. The heuristic is the greedy one, or the planner
(:mod:`treppen_env.agent_core.planner_kernels`) with :func:`decision_features`: the same columns from the
planner's :class:`~treppen_env.agent_core.greedy_kernels.Decision` (its move, its plan scores, its weights
and dangers; its memory empty, since the features read one observation). The columns (``H_*``):

==============  ===================================================================================
``H_LEGAL``     1 for a legal action
``H_PICK``      1 for the heuristic's own action (:func:`treppen_env.agent_core.greedy_kernels.greedy_action`)
``H_SCORED``    1 when the heuristic scores the action: a take whose deepest card its plan can use
                (RULES §4.1-4.2), a lay that starts a candidate of its plan search, any discard
``H_GAP``       the action's score minus the best score of the legal actions, in points / 10,
                clipped to [-3, 0] (-3 when not scored)
``H_SCORE``     the action's score in points / 100, clipped to [-3, 3] (0 when not scored)
``H_BOOKED``    points the action books: a meld's or a lay-off's value / 100 (RULES §5.1-5.2)
``H_WEIGHT``    a discard: the card's weight in the hand (its cost of keeping it), points / 20
``H_DANGER``    a discard: how much the card helps the opponents (RULES §4.1), points / 20
``H_USED``      a take: the share of the taken cards the take's plan lays this turn
==============  ===================================================================================

An action's score is the heuristic's value of the turn after it, in points:

- a draw (RULES §4.1-4.2): :func:`treppen_env.agent_core.greedy_kernels.draw_scores`, the score the heuristic
  ranks draws by;
- a meld or lay-off (RULES §4.3): the best of the plan search's candidates that start with it
  (the meld; a chain of lay-offs at one open end), the points that candidate books plus the best
  plan of the cards it leaves (later lays, then the best discard; the must-use card, RULES §4.2,
  still to be played); a lay no candidate starts is not scored;
- a discard (RULES §4.4): minus the weight of the cards kept after it, the card's danger counted
  against it: the heuristic discards the legal card of highest weight - danger (the planner: of
  highest :func:`treppen_env.agent_core.plan_value.discard_value`, which also counts the chance of
  going out next turn; its danger column is the danger times its ``danger`` setting).

So the heuristic's action has the best score up to its tie-breaks, and the learned policy can
weigh the same quantities differently.
"""

from __future__ import annotations

import numpy as np

from treppen_env.actions import DISCARD_BASE, LAYOFF_BASE, MELD_BASE, NUM_ACTIONS, TARGETS
from treppen_env.agent_core import greedy_kernels, plan_value
from treppen_env.agent_core.planner_kernels import MEMORY_SEATS
from treppen_env.agent_core.reader import read_observation
from treppen_env.cards import NUM_CARDS
from treppen_env.core.bits import count, has, lowest
from treppen_env.core.cache import kernel
from treppen_env.core.layout import T_LAYOFF_VALUE, T_MELD_VALUE

H_LEGAL, H_PICK, H_SCORED, H_GAP, H_SCORE, H_BOOKED, H_WEIGHT, H_DANGER, H_USED = range(9)
#: Columns of a feature row.
NUM_FEATURES = 9
#: Names of the columns, in order.
FEATURE_NAMES = ("legal", "pick", "scored", "gap", "score", "booked", "weight", "danger", "used")
GAP_SCALE, GAP_CLIP = 10.0, 3.0
SCORE_SCALE, SCORE_CLIP = 100.0, 3.0
CARD_SCALE = 20.0
_NUM_TARGETS = len(TARGETS)


@kernel
def _clip(x: float, bound: float) -> float:
    """``x`` clipped to [-bound, bound]."""
    return -bound if x < -bound else (bound if x > bound else x)


@kernel
def action_features(
    inputs: greedy_kernels.Inputs,
    mask: np.ndarray,
    tab: np.ndarray,
    settings: np.ndarray,
    work: greedy_kernels.Workspace,
    out: np.ndarray,
) -> None:
    """Fill ``out`` (float32 (898, NUM_FEATURES), overwritten) with the greedy heuristic's features
    of every action (see the module docstring) of the position in its input layout
    (:class:`treppen_env.agent_core.greedy_kernels.Inputs`), with its mask (int8 (898,)), rules table and
    settings, using the scratch arrays ``work`` of :func:`treppen_env.agent_core.greedy_kernels.workspace`."""
    decision_features(inputs, mask, tab, settings, np.zeros(0), work, out)


@kernel
def decision_features(
    inputs: greedy_kernels.Inputs,
    mask: np.ndarray,
    tab: np.ndarray,
    settings: np.ndarray,
    values: np.ndarray,
    work: greedy_kernels.Workspace,
    out: np.ndarray,
) -> None:
    """:func:`action_features` of the heuristic that ``values`` names: size 0 the greedy heuristic
    (with ``settings``), else the planner with these settings (float64
    (:data:`~treppen_env.agent_core.plan_value.NUM_VALUES`,),
    :func:`treppen_env.agent_core.plan_value.values_row`)."""
    out[:] = 0.0
    if not greedy_kernels._any_legal(mask):
        return
    pick = greedy_kernels.move(inputs, mask, _decide(inputs, tab, settings, values, work))
    scores = np.empty(NUM_ACTIONS)
    decision_scores(inputs, mask, _decide(inputs, tab, settings, values, work), scores, out)
    best = -np.inf
    for a in range(NUM_ACTIONS):
        if mask[a] and scores[a] > best:
            best = scores[a]
    for a in range(NUM_ACTIONS):
        if not mask[a]:
            continue
        out[a, H_LEGAL] = 1.0
        if scores[a] > -np.inf:
            out[a, H_SCORED] = 1.0
            out[a, H_GAP] = _clip((scores[a] - best) / GAP_SCALE, GAP_CLIP)
            out[a, H_SCORE] = _clip(scores[a] / SCORE_SCALE, SCORE_CLIP)
        else:
            out[a, H_GAP] = -GAP_CLIP
    out[pick, H_PICK] = 1.0


@kernel
def _decide(
    inputs: greedy_kernels.Inputs,
    tab: np.ndarray,
    settings: np.ndarray,
    values: np.ndarray,
    work: greedy_kernels.Workspace,
) -> greedy_kernels.Decision:
    """The greedy heuristic's :class:`~treppen_env.agent_core.greedy_kernels.Decision` (``values`` of size
    0) or the planner's, its memory empty."""
    if values.size:
        return greedy_kernels.planner_decision(inputs, np.zeros(MEMORY_SEATS, dtype=np.uint64), tab, values, work)
    return greedy_kernels.decision(inputs, tab, settings, work)


@kernel
def action_scores(
    inputs: greedy_kernels.Inputs,
    mask: np.ndarray,
    tab: np.ndarray,
    settings: np.ndarray,
    work: greedy_kernels.Workspace,
    scores: np.ndarray,
    out: np.ndarray,
) -> None:
    """The greedy heuristic's score of every action (see the module docstring), in points, into
    ``scores`` (float64 (898,)): -inf for an illegal action or one the heuristic does not score;
    the booked points, weights, dangers and a take's used share go to ``out`` as in
    :func:`action_features` (the other columns untouched). The greedy action has the best score up
    to its tie-breaks; the search's opponent model weighs the scores (:mod:`treppen_env.agent_core.belief_kernels`)."""
    decision_scores(inputs, mask, greedy_kernels.decision(inputs, tab, settings, work), scores, out)


@kernel
def decision_scores(
    inputs: greedy_kernels.Inputs, mask: np.ndarray, d: greedy_kernels.Decision, scores: np.ndarray, out: np.ndarray
) -> None:
    """:func:`action_scores` in the :class:`~treppen_env.agent_core.greedy_kernels.Decision` ``d`` of the
    position ``inputs`` (the greedy heuristic's or the planner's)."""
    cards, stairs, scalars = inputs.cards, inputs.stairs, inputs.scalars
    scores[:] = -np.inf
    draw = True
    for a in range(MELD_BASE, NUM_ACTIONS):
        if mask[a]:
            draw = False
            break
    if draw:
        depth = greedy_kernels.draw_scores(cards[greedy_kernels.HAND], stairs, scalars, mask, d)
        for k in range(depth + 1):
            if mask[k]:
                scores[k] = d.work.wf[greedy_kernels.F_SCORES][k]
            if k > 0 and scores[k] > -np.inf:
                out[k, H_USED] = count(d.work.wu[greedy_kernels.U_USES][k]) / k
    else:
        _turn_scores(cards[greedy_kernels.HAND], scalars, mask, d, scores, out)


@kernel
def _turn_scores(
    hand: np.uint64,
    scalars: np.ndarray,
    mask: np.ndarray,
    d: greedy_kernels.Decision,
    scores: np.ndarray,
    out: np.ndarray,
) -> None:
    """The meld phase's scores (RULES §4.3-4.4; see the module docstring) in the
    :class:`~treppen_env.agent_core.greedy_kernels.Decision` ``d`` into ``scores``, and the booked points,
    weights and dangers into ``out``."""
    tab, wu, wf, wi = d.tab, d.work.wu, d.work.wf, d.work.wi
    banned = scalars[greedy_kernels.BANNED]
    must_use = scalars[greedy_kernels.MUST_USE]
    for a in range(MELD_BASE, DISCARD_BASE):
        if mask[a]:
            value = tab[T_MELD_VALUE + a - MELD_BASE] if a < LAYOFF_BASE else tab[T_LAYOFF_VALUE + a - LAYOFF_BASE]
            out[a, H_BOOKED] = value / SCORE_SCALE
    # every candidate of the plan search (a meld, a lay-off chain) is scored with the best plan of
    # the cards it leaves; a lay's score is that of the best candidate it starts
    n = greedy_kernels.lay_candidates(hand, d)
    c_bits = wu[greedy_kernels.U_WORK][:n].copy()
    c_val = wf[greedy_kernels.F_WORK][:n].copy()
    c_first = wi[greedy_kernels.I_WORK][:n].copy()
    for j in range(n):
        a = c_first[j]
        if not mask[a]:
            continue
        include = must_use if must_use >= 0 and not has(c_bits[j], must_use) else -1
        rest, _ = greedy_kernels._plan(hand & ~c_bits[j], d, banned, include, False, -1)
        if c_val[j] + rest > scores[a]:
            scores[a] = c_val[j] + rest
    unseen = ~(d.ctx[plan_value.CTX_DEAD] | hand) & greedy_kernels._FULL
    weights = np.zeros(NUM_CARDS)
    kept = 0.0
    b = hand
    while b:
        c = lowest(b)
        b &= b - greedy_kernels._ONE
        weights[c] = greedy_kernels._keep_weight(c, hand, unseen, d)
        kept += weights[c]
    for c in range(NUM_CARDS):
        a = DISCARD_BASE + c
        if mask[a]:
            scores[a] = greedy_kernels._discard_saving(c, weights[c], hand, unseen, d, False) - kept
            out[a, H_WEIGHT] = weights[c] / CARD_SCALE
            out[a, H_DANGER] = (
                d.danger[c] * d.values[plan_value.V_DANGER] if d.values.size else d.danger[c]
            ) / CARD_SCALE


@kernel
def batch_features(
    obs: np.ndarray, masks: np.ndarray, tab: np.ndarray, settings: np.ndarray, values: np.ndarray, out: np.ndarray
) -> None:
    """Features (float32 (B, 898, NUM_FEATURES)) of observations (float32 (B, 969)) and their
    masks (int8 (B, 898)) into ``out``, each position read by
    :func:`treppen_env.agent_core.reader.read_observation` (only what its mover may see): the
    greedy heuristic's (``values`` of size 0) or the planner's, as :func:`decision_features`."""
    inputs = greedy_kernels.empty_inputs()
    work = greedy_kernels.workspace()
    for b in range(obs.shape[0]):
        read_observation(obs[b], inputs)
        decision_features(inputs, masks[b], tab, settings, values, work, out[b])
