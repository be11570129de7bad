"""The greedy heuristic as Numba kernels over plain arrays of what the mover may see.

:class:`treppen.agents.greedy.GreedyAgent` describes the heuristic; this module is its one
implementation. Its input is a fixed layout of small arrays, built from an observation by
:func:`treppen_env.agent_core.reader.observation_inputs` (or, without Python, by
:func:`treppen_env.agent_core.reader.read_observation` inside a kernel),
or from the public parts of an engine state by :func:`state_inputs` (what a playout kernel
builds the same way without Python). It reads no engine state
and imports no other agent: only the card, meld, action and observation-layout tables and the rules
core's meld enumerator (:func:`treppen_env.core.kernels.list_melds`), so it could live beside the
engine.

Card sets are uint64 bitsets (bit ``c`` set when card ``c``, 0..51, is in the set); seats are
relative to the mover (0 = the mover, 1 = the next seat to the left, ...).

Input layout (what :func:`greedy_action` reads: the fields of :class:`Inputs`, and the mask):

- ``cards``: uint64 (:data:`NUM_CARD_SETS`,)

  ======================  =======================================================================
  ``HAND``                the mover's hand
  ``KNOWN + k - 1``       cards relative seat ``k`` (1..3) publicly holds (taken from the
                          staircase, not yet played; 0 for seats not in play)
  ``FITS + target``       cards that can be laid off now onto a set (target 0), a run's low end
                          (1) or a run's high end (2) (RULES §4.3; the observation's ``fits_*``
                          columns, the engine's ``layoff_slots``)
  ======================  =======================================================================

- ``stairs``: int8 (52,): the staircase from bottom to top in ``stairs[:scalars[STAIRS_LEN]]``
  (RULES §4.1).
- ``scalars``: int64 (:data:`NUM_SCALARS`,)

  ======================  =======================================================================
  ``NUM_PLAYERS``         players in the game (2-4)
  ``STAIRS_LEN``          cards on the staircase
  ``STOCK``               cards in the stock
  ``PHASE``               0 draw, 1 meld/discard, 2 deal over
  ``MUST_USE``            the taken card that must be played at once (rum500, RULES §4.2), or -1
  ``BANNED``              the card that may not be discarded this turn (RULES §4.4), or -1
  ``LAID_BEFORE``         1 when the mover melded or laid off in an earlier turn (RULES §6.2)
  ``NUM_TABLE_MELDS``     melds on the table
  ``HAND_SIZES + k``      cards in relative seat ``k``'s hand (k = 0..3)
  ======================  =======================================================================

- ``melds``: int8 (:data:`MAX_TABLE_MELDS`, :data:`NUM_MELD_COLUMNS`), row ``i < NUM_TABLE_MELDS``
  one table meld, in any order: ``M_OWNER`` (relative seat that laid it), ``M_KIND`` (0 set,
  1 run), ``M_SUIT`` (run suit 0..3, -1 for a set), ``M_LOW`` (a set's rank, a run's low-end
  rank), ``M_LENGTH`` (cards); ``meld_bits``: uint64 (:data:`MAX_TABLE_MELDS`,) its cards.
- ``mask``: int8 (898,): the action mask (the phase is read from it: only draw/take bits set
  means the draw phase).

``STOCK``, ``PHASE``, ``M_OWNER`` and ``HAND_SIZES + 0`` complete the public view for other
kernels; the heuristic itself does not read them.

The rules enter as the rules core's int64 table ``tab`` (:func:`treppen_env.core.tables.rules_table`,
the ``T_*`` slots of :mod:`treppen_env.core.layout`: meld values, allowed melds, lay-off values and
flags), the one encoding of the rules every kernel reads; the agent's constructor settings as
float64 (:data:`NUM_SETTINGS`,).

Tie-breaking and float arithmetic follow the recorded decisions exactly: candidates sorted by
value with ties in candidate order, the first best plan found kept, sums taken left to right in
card order.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from treppen_env.actions import DISCARD_BASE, LAYOFF_BASE, MELD_BASE, NUM_ACTIONS, TARGET_HIGH, TARGET_LOW, TARGET_SET
from treppen_env.agent_core import plan_value
from treppen_env.agent_core.plan_value import (
    CTX_DEAD,
    CTX_FITS,
    CTX_NEXT_KNOWN,
    CTX_OTHER_KNOWN,
    CTX_STAIRS,
    DOWN,
    MATES,
    MEAN_HAND_POINTS,
    UP,
    live_completions,
)
from treppen_env.cards import HAND_POINTS, NUM_CARDS, NUM_RANKS
from treppen_env.core import layout
from treppen_env.core.bits import bit, count, has, lowest
from treppen_env.core.cache import kernel
from treppen_env.core.kernels import MELD_MARKS, list_melds
from treppen_env.melds import MAX_RUN, MELD_BITS, NUM_MELDS


# ---------------------------------------------------------------------- input layout
class Inputs(NamedTuple):
    """The input arrays of a position, laid out as the module docstring says (a kernel bundle)."""

    #: uint64 (:data:`NUM_CARD_SETS`,): ``HAND``, ``KNOWN + k - 1``, ``FITS + target``.
    cards: np.ndarray
    #: int8 (52,): the staircase, bottom to top.
    stairs: np.ndarray
    #: int64 (:data:`NUM_SCALARS`,): counts, phase, must-use card, ban, ...
    scalars: np.ndarray
    #: int8 (:data:`MAX_TABLE_MELDS`, :data:`NUM_MELD_COLUMNS`): the table melds.
    melds: np.ndarray
    #: uint64 (:data:`MAX_TABLE_MELDS`,): each table meld's cards.
    meld_bits: np.ndarray


HAND, KNOWN, FITS = 0, 1, 4
NUM_CARD_SETS = 7
NUM_PLAYERS, STAIRS_LEN, STOCK, PHASE, MUST_USE, BANNED, LAID_BEFORE, NUM_TABLE_MELDS, HAND_SIZES = range(9)
NUM_SCALARS = HAND_SIZES + 4
M_OWNER, M_KIND, M_SUIT, M_LOW, M_LENGTH = range(5)
NUM_MELD_COLUMNS = 5
KIND_SET, KIND_RUN = 0, 1
#: Melds never share a card and hold at least 3 (RULES §3, §3.5).
MAX_TABLE_MELDS = NUM_CARDS // 3

# ---------------------------------------------------------------------- settings layout
S_STOCK_GAIN, S_TAKE_MARGIN, S_CARD_COST, S_OUT_CREDIT, S_MIN_WEIGHT = range(5)
NUM_SETTINGS = 5
#: The heuristic's settings and their defaults (:class:`treppen.agents.GreedyAgent`'s constructor), in
#: the order of the kernels' settings row.
DEFAULT_SETTINGS = {"stock_gain": 3.0, "take_margin": 2.0, "card_cost": 1.0, "out_credit": 5.0, "min_weight": 1.0}

# ---------------------------------------------------------------------- constants
#: Points the going-out bonus adds to the opponents' hands (:func:`_context`).
OUT_EXTRA = 10.0
#: Nodes the turn-plan search may visit per plan (the greedy heuristic).
PLAN_BUDGET = 4000
#: The planner's: enough for an exhaustive search of every hand short of a deep staircase take.
PLANNER_BUDGET = 200_000
#: The most candidates of one hand: every meld, plus a lay-off chain per open end and length.
MAX_CANDIDATES = NUM_MELDS + 2 * MAX_TABLE_MELDS * MAX_RUN
MAX_SLOTS = 2 * MAX_TABLE_MELDS
#: Deepest plan: disjoint candidates hold at least one card each.
MAX_DEPTH = NUM_CARDS + 1
# Rows of a decision's scratch arrays (:class:`Workspace`), each WS_WIDTH long.
WS_WIDTH = MAX_CANDIDATES
# uint64: candidates' cards, sorted, plan stack, context, the taken cards each draw's plan lays
U_WORK, U_SORTED, U_STACK, U_CTX, U_USES = range(5)
NUM_U_ROWS = 5
F_WORK, F_SORTED, F_STACK, F_DANGER, F_SCORES = range(5)  # float64: ..., danger, each draw's score
NUM_F_ROWS = 5
I_WORK, I_SORTED, I_CHOSEN, I_BEST, I_STACK, I_ORDER = range(6)  # int64: first actions, sorted, plans, sort
NUM_I_ROWS = 6
_FULL = np.uint64((1 << NUM_CARDS) - 1)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_HAND_POINTS = np.array(HAND_POINTS, dtype=np.int64)
_MELD_BITS = MELD_BITS.copy()


class Workspace(NamedTuple):
    """The scratch arrays of one decision (:func:`workspace`; a kernel bundle)."""

    #: uint64 (NUM_U_ROWS, WS_WIDTH): rows ``U_*`` (candidates' cards, sorted, plan stack, context,
    #: the taken cards each draw's plan lays).
    wu: np.ndarray
    #: float64 (NUM_F_ROWS, WS_WIDTH): rows ``F_*`` (candidates' values, sorted, plan stack, danger,
    #: each draw's score).
    wf: np.ndarray
    #: int64 (NUM_I_ROWS, WS_WIDTH): rows ``I_*`` (candidates' first actions, sorted, plans, sort order).
    wi: np.ndarray
    #: int64 (MAX_SLOTS, 3): the open ends (:func:`_context`).
    slots: np.ndarray
    #: int8 (:data:`treppen_env.core.kernels.MELD_MARKS`,), zeros: the meld enumerator's marks.
    marks: np.ndarray


# ---------------------------------------------------------------------- sorting
@kernel
def _stable_order(keys: np.ndarray, n: int, descending: bool, order: np.ndarray) -> np.ndarray:
    """Write into ``order[:n]`` the indices of ``keys[:n]`` in ascending (or descending) order,
    equal keys in index order (an insertion sort: a hand has tens of candidates, a table at most
    17 melds, RULES §3); returns ``order``."""
    for i in range(n):
        j = i
        key = keys[i]
        while j > 0 and (keys[order[j - 1]] < key if descending else keys[order[j - 1]] > key):
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
    return order


# ---------------------------------------------------------------------- context
@kernel
def _context(
    inputs: Inputs, tab: np.ndarray, ctx: np.ndarray, slots: np.ndarray, keys: np.ndarray, order: np.ndarray
) -> tuple[int, float]:
    """What a decision knows besides the hand (RULES §4.3, §6.2-6.3).

    Fills ``ctx`` (uint64 (:data:`~treppen_env.agent_core.plan_value.NUM_CONTEXT`,), slots
    ``CTX_*`` of :mod:`~treppen_env.agent_core.plan_value`: next opponent's known cards, the other
    opponents' known cards, staircase cards, dead cards (on the table or known), cards that fit an
    open end) and
    ``slots`` (int64 (MAX_SLOTS, 3): card that fits, target, room left), in the order of
    sets by rank, then runs by their low-end card; ``keys`` and ``order`` (int64, at least 17 long)
    are scratch. Returns (number of slots, going-out bonus).
    """
    cards, stairs, scalars = inputs.cards, inputs.stairs, inputs.scalars
    melds, meld_bits = inputs.melds, inputs.meld_bits
    n = scalars[NUM_PLAYERS]
    next_known = cards[KNOWN] if n > 1 else _ZERO
    other_known = _ZERO
    for k in range(2, n):
        other_known |= cards[KNOWN + k - 1]
    stair_bits = _ZERO
    for i in range(scalars[STAIRS_LEN]):
        stair_bits |= bit(stairs[i])
    on_table = _ZERO
    num_melds = scalars[NUM_TABLE_MELDS]
    for i in range(num_melds):
        on_table |= meld_bits[i]
    fits = cards[FITS + TARGET_SET] | cards[FITS + TARGET_LOW] | cards[FITS + TARGET_HIGH]
    ctx[CTX_NEXT_KNOWN] = next_known
    ctx[CTX_OTHER_KNOWN] = other_known
    ctx[CTX_STAIRS] = stair_bits
    ctx[CTX_DEAD] = on_table | next_known | other_known
    ctx[CTX_FITS] = fits
    # Going out ends the deal: the opponents' hands are credited (doubled on a Rommé, §6.2)
    # or deducted from them (rum500, §6.3); either way it also stops their scoring.
    opp = 0.0
    for k in range(1, n):
        seen = cards[KNOWN + k - 1]
        points = 0
        b = seen
        while b:
            points += _HAND_POINTS[lowest(b)]
            b &= b - _ONE
        opp += points
        opp += (scalars[HAND_SIZES + k] - count(seen)) * MEAN_HAND_POINTS
    if tab[layout.T_GOING_OUT_CREDIT] == 0.0:
        opp /= max(1, n - 1)
    elif tab[layout.T_ROMME_DOUBLE] != 0.0 and scalars[LAID_BEFORE] == 0:
        opp *= 2
    # Open ends, sets by rank then runs by low-end card.
    for i in range(num_melds):
        if melds[i, M_KIND] == KIND_SET:
            keys[i] = melds[i, M_LOW]
        else:
            keys[i] = NUM_RANKS + NUM_RANKS * melds[i, M_SUIT] + melds[i, M_LOW]
    _stable_order(keys, num_melds, False, order)
    num_slots = 0
    for i in order[:num_melds]:
        length = melds[i, M_LENGTH]
        if melds[i, M_KIND] == KIND_SET:
            if length == 3:
                rank = melds[i, M_LOW]
                missing = lowest((MATES[rank] | bit(rank)) & ~meld_bits[i])
                slots[num_slots, 0] = missing
                slots[num_slots, 1] = TARGET_SET
                slots[num_slots, 2] = 1
                num_slots += 1
            continue
        room = MAX_RUN - length
        suit = melds[i, M_SUIT]
        low = DOWN[NUM_RANKS * suit + melds[i, M_LOW]]
        high = UP[NUM_RANKS * suit + (melds[i, M_LOW] + length - 1) % NUM_RANKS]
        if room and has(cards[FITS + TARGET_LOW], low):
            slots[num_slots, 0] = low
            slots[num_slots, 1] = TARGET_LOW
            slots[num_slots, 2] = room
            num_slots += 1
        if room and has(cards[FITS + TARGET_HIGH], high):
            slots[num_slots, 0] = high
            slots[num_slots, 1] = TARGET_HIGH
            slots[num_slots, 2] = room
            num_slots += 1
    return num_slots, opp + OUT_EXTRA


class Decision(NamedTuple):
    """A decision's context, built once per decision by :func:`decision` (the greedy heuristic) or
    :func:`planner_decision` (the planner) and read by the plan search and the scorers (a kernel
    bundle)."""

    #: uint64 (NUM_CONTEXT,): what the decision knows besides the hand (:func:`_context`; slots
    #: ``CTX_*`` of :mod:`treppen_env.agent_core.plan_value`).
    ctx: np.ndarray
    #: The going-out bonus, points.
    out_bonus: float
    #: The open ends in ``work.slots``.
    num_slots: int
    #: float64 (52,): the danger of every card a plan may keep
    #: (:func:`treppen_env.agent_core.plan_value.danger`).
    danger: np.ndarray
    #: The rules table (int64, :func:`treppen_env.core.tables.rules_table`).
    tab: np.ndarray
    #: The settings (float64 (NUM_SETTINGS,), :func:`settings_row`).
    settings: np.ndarray
    #: The decision's scratch arrays.
    work: Workspace
    #: The planner's settings (float64 (:data:`treppen_env.agent_core.plan_value.NUM_VALUES`,),
    #: :func:`treppen_env.agent_core.plan_value.values_row`); size 0: the greedy heuristic's
    #: weights score the plans.
    values: np.ndarray
    #: The opponents' threat (:func:`treppen_env.agent_core.plan_value.threat`; 0 for greedy).
    threat: float
    #: Nodes the plan search may visit per plan.
    budget: int
    #: The planner's value of keeping the chance to go out Rommé (RULES §6.2), points; 0: none.
    romme: float


@kernel
def decision(inputs: Inputs, tab: np.ndarray, settings: np.ndarray, work: Workspace) -> Decision:
    """The greedy heuristic's :class:`Decision` of a position (:class:`Inputs`; RULES §4.1, §4.3,
    §6.2-6.3): its context, open ends and the danger of each card of the hand and the staircase, in
    the scratch arrays ``work``."""
    return _decision(inputs, tab, settings, np.zeros(0), np.zeros(1, dtype=np.uint64), work)


@kernel
def planner_decision(
    inputs: Inputs, memory: np.ndarray, tab: np.ndarray, values: np.ndarray, work: Workspace
) -> Decision:
    """The planner's :class:`Decision` of a position: :func:`decision` with the planner's settings
    ``values`` (float64, :func:`treppen_env.agent_core.plan_value.values_row`), the opponents'
    threat, an exhaustive plan search (:data:`PLANNER_BUDGET`) and the dangers read with
    ``memory`` (uint64 (3,): the cards each opponent, by relative seat 1..3, discarded or declined;
    :mod:`treppen_env.agent_core.planner_kernels`)."""
    return _decision(inputs, tab, np.zeros(NUM_SETTINGS), values, memory, work)


@kernel
def _decision(
    inputs: Inputs, tab: np.ndarray, settings: np.ndarray, values: np.ndarray, memory: np.ndarray, work: Workspace
) -> Decision:
    """:func:`decision` (``values`` of size 0) or :func:`planner_decision`."""
    ctx, danger = work.wu[U_CTX], work.wf[F_DANGER]
    num_slots, out_bonus = _context(inputs, tab, ctx, work.slots, work.wi[I_WORK], work.wi[I_ORDER])
    planner = values.size > 0
    share = values[plan_value.V_MEMORY] if planner else 0.0
    b = inputs.cards[HAND] | ctx[CTX_STAIRS]
    while b:
        c = lowest(b)
        b &= b - _ONE
        danger[c] = plan_value.danger(c, ctx, memory, share)
    scalars = inputs.scalars
    t = plan_value.threat(scalars[HAND_SIZES : HAND_SIZES + 4], scalars[NUM_PLAYERS], values) if planner else 0.0
    romme = 0.0
    if planner and tab[layout.T_ROMME_DOUBLE] != 0.0 and scalars[LAID_BEFORE] == 0:
        romme = values[plan_value.V_ROMME] * (out_bonus - OUT_EXTRA) / 2.0  # the doubled part of the bonus
    return Decision(
        ctx=ctx,
        out_bonus=out_bonus,
        num_slots=num_slots,
        danger=danger,
        tab=tab,
        settings=settings,
        work=work,
        values=values,
        threat=t,
        budget=PLANNER_BUDGET if planner else PLAN_BUDGET,
        romme=romme,
    )


# ---------------------------------------------------------------------- candidates
@kernel
def lay_candidates(hand: np.uint64, d: Decision) -> int:
    """Melds and lay-off chains within ``hand`` (RULES §3.1-3.2, §4.3) in the :class:`Decision`
    ``d``: their card bits, booked value and first action into the work rows ``U_WORK``, ``F_WORK``
    and ``I_WORK``; returns their count. Melds come in candidate order (the rules core's
    :func:`treppen_env.core.kernels.list_melds`: sets by rank and omitted suit, then runs by suit,
    low end, length), then chains by slot: a card laid off onto an open end, then the next card of
    that suit onto the new end, ..."""
    c_bits, c_val, c_first = d.work.wu[U_WORK], d.work.wf[F_WORK], d.work.wi[I_WORK]
    n = list_melds(d.tab, hand, d.work.marks, c_first)
    for k in range(n):
        m = c_first[k]
        c_bits[k] = _MELD_BITS[m]
        c_val[k] = d.tab[layout.T_MELD_VALUE + m]
        c_first[k] = MELD_BASE + m
    return _chain_candidates(hand, d, n)


@kernel
def _chain_candidates(hand: np.uint64, d: Decision, n: int) -> int:
    """Append the lay-off chains within ``hand`` (RULES §4.3) by slot after the first ``n``
    candidates of :func:`lay_candidates`; return the new count."""
    tab, slots = d.tab, d.work.slots
    c_bits, c_val, c_first = d.work.wu[U_WORK], d.work.wf[F_WORK], d.work.wi[I_WORK]
    corner = tab[layout.T_CORNER_RUNS] != 0.0
    for k in range(d.num_slots):
        card, target, room = slots[k, 0], slots[k, 1], slots[k, 2]
        if not has(hand, card):
            continue
        first = LAYOFF_BASE + 3 * card + target
        bits = _ZERO
        value = 0.0
        cur = card
        for _ in range(room):
            bits |= bit(cur)
            value += tab[layout.T_LAYOFF_VALUE + 3 * cur + target]
            c_bits[n] = bits
            c_val[n] = value
            c_first[n] = first
            n += 1
            if target == TARGET_SET or (not corner and cur % NUM_RANKS == 0):
                break  # a set takes one card; without corner runs the ace ends a run (§3.2)
            cur = UP[cur] if target == TARGET_HIGH else DOWN[cur]
            if not has(hand, cur):
                break
    return n


@kernel
def _usable(card: int, cards: np.uint64, d: Decision) -> tuple[bool, int]:
    """Whether ``card`` can be melded with ``cards`` or laid off, possibly via a chain (§4.2),
    and the number of candidates of ``cards`` it left in the work rows of the :class:`Decision`
    ``d`` (-1: it listed none)."""
    if has(d.ctx[CTX_FITS], card):
        return True, -1
    c_bits = d.work.wu[U_WORK]
    n = lay_candidates(cards, d)
    for j in range(n):
        if has(c_bits[j], card):
            return True, n
    return False, n


# ---------------------------------------------------------------------- weights
@kernel
def _weight(c: int, cards: np.uint64, unseen: np.uint64, stair_bits: np.uint64, settings: np.ndarray) -> float:
    """Cost of keeping card ``c`` of ``cards``: hand value (RULES §1.3) + card cost - a credit
    for each live card that would complete a partial meld with it (a pair, two in a row, a gap;
    :func:`treppen_env.agent_core.plan_value.live_completions`)."""
    live = live_completions(c, cards, unseen, stair_bits)
    capped = 3.0 if 3.0 < live else live
    weight = _HAND_POINTS[c] + settings[S_CARD_COST] - settings[S_OUT_CREDIT] * capped
    return settings[S_MIN_WEIGHT] if settings[S_MIN_WEIGHT] > weight else weight


@kernel
def _left_cost(rest: np.uint64, d: Decision, ban: np.uint64, unknown: bool) -> float:
    """Cost of the cards ``rest`` left after a plan, after the turn's best discard (RULES §4.4):
    the sum of their :func:`_keep_weight` less what the best discard saves (:func:`_discard_saving`);
    ``ban`` (a bitset) may not be discarded; ``unknown`` adds the stock card still to be drawn,
    weighing an average card (:func:`_average_weight`)."""
    unseen = ~(d.ctx[CTX_DEAD] | rest) & _FULL
    total = 0.0
    best = 0.0
    have = False
    b = rest
    while b:
        c = lowest(b)
        b &= b - _ONE
        w = _keep_weight(c, rest, unseen, d)
        total += w
        if not has(ban, c):
            saved = _discard_saving(c, w, rest, unseen, d, unknown)
            if not have or saved > best:
                best, have = saved, True
    if unknown:
        average = _average_weight(d)
        total += average
        if not have or average > best:
            best = average
    return total - best


@kernel
def _keep_weight(c: int, cards: np.uint64, unseen: np.uint64, d: Decision) -> float:
    """Cost of keeping card ``c`` of ``cards``: the greedy heuristic's :func:`_weight` or the
    planner's :func:`treppen_env.agent_core.plan_value.weight`."""
    if d.values.size:
        return plan_value.weight(c, cards, unseen, d.ctx[CTX_STAIRS], d.threat, d.values)
    return _weight(c, cards, unseen, d.ctx[CTX_STAIRS], d.settings)


@kernel
def _discard_saving(c: int, w: float, hand: np.uint64, unseen: np.uint64, d: Decision, unknown: bool) -> float:
    """What discarding ``c`` (kept, it weighs ``w``) from ``hand`` saves (RULES §4.4): the greedy
    heuristic's weight - danger, or the planner's
    :func:`treppen_env.agent_core.plan_value.discard_value`."""
    if d.values.size:
        return plan_value.discard_value(
            c, w, hand, unseen, d.ctx, d.values, d.danger[c], 0.0 if unknown else d.out_bonus
        )
    return w - d.danger[c]


@kernel
def _average_weight(d: Decision) -> float:
    """The weight of an unknown stock card: an average card's (RULES §1.3), by the greedy heuristic's
    weights or the planner's (:func:`treppen_env.agent_core.plan_value.average_weight`)."""
    if d.values.size:
        return plan_value.average_weight(d.threat, d.values)
    return MEAN_HAND_POINTS + d.settings[S_CARD_COST]


# ---------------------------------------------------------------------- turn plan
@kernel
def _plan(hand: np.uint64, d: Decision, banned: int, include: int, before_draw: bool, listed: int) -> tuple[float, int]:
    """Best score of ``hand`` this turn (RULES §4.3-4.5) in the :class:`Decision` ``d``, and that
    plan's steps.

    A depth-first search over card-disjoint candidates (sorted by booked value, highest first,
    ties in candidate order) with :data:`PLAN_BUDGET` nodes scores each node's plan as booked
    points + going-out bonus when it empties the hand (or leaves one card to discard), else
    booked points - :func:`_left_cost`. The planner (``d.romme`` > 0: it may still go out Rommé,
    RULES §6.2) keeps its melds in hand instead of a plan that lays some but does not go out when
    laying nothing scores better with ``d.romme`` times the share of the hand the best plans
    could lay. ``banned``: the card that may not be discarded (§4.4);
    ``include``: a card every plan must lay (must-use, or a deep take's card); -1 for none;
    ``before_draw``: the unknown stock card joins the hand; ``listed``: the number of ``hand``'s
    candidates already in the work rows (by :func:`_usable`), or -1 to list them. The sorted
    candidates are left in the rows ``*_SORTED`` and the best plan's indices into them in
    ``I_BEST``. Returns (score, steps).
    """
    wu, wf, wi = d.work.wu, d.work.wf, d.work.wi
    work_bits, work_val, work_first = wu[U_WORK], wf[F_WORK], wi[I_WORK]
    s_bits, s_val, s_first = wu[U_SORTED], wf[F_SORTED], wi[I_SORTED]
    chosen, best_chosen = wi[I_CHOSEN], wi[I_BEST]
    n = listed if listed >= 0 else lay_candidates(hand, d)
    order = _stable_order(work_val, n, True, wi[I_ORDER])
    for k in range(n):
        s_bits[k] = work_bits[order[k]]
        s_val[k] = work_val[order[k]]
        s_first[k] = work_first[order[k]]
    need = _ZERO if include < 0 else bit(include)
    ban = _ZERO if banned < 0 else bit(banned)
    best = -np.inf
    best_len = 0
    best_out = False
    held = -np.inf  # the plan that lays nothing (keeps the Rommé, RULES §6.2)
    most_laid = 0
    budget = d.budget
    st_next, st_used, st_booked = wi[I_STACK], wu[U_STACK], wf[F_STACK]
    depth = 0
    st_next[0], st_used[0], st_booked[0] = 0, _ZERO, 0.0
    entered = True
    while depth >= 0:
        if entered:  # a node: score its plan (the leaf), then try its children
            entered = False
            budget -= 1
            used = st_used[depth]
            booked = st_booked[depth]
            if not (need and not used & need):
                rest = hand & ~used
                if not (rest and rest == ban):  # a dead end (§4.5)
                    out = rest == _ZERO or (not before_draw and count(rest) == 1)
                    if out:
                        score = booked + d.out_bonus
                    else:
                        score = booked - _left_cost(rest, d, ban, before_draw)
                    if depth == 0:
                        held = score
                    most_laid = max(most_laid, count(used))
                    if score > best:
                        best = score
                        best_len = depth
                        best_out = out
                        for k in range(depth):
                            best_chosen[k] = chosen[k]
        j = st_next[depth]
        if j >= n or budget <= 0:
            depth -= 1
            continue
        st_next[depth] = j + 1
        if not s_bits[j] & st_used[depth]:
            chosen[depth] = j
            st_used[depth + 1] = st_used[depth] | s_bits[j]
            st_booked[depth + 1] = st_booked[depth] + s_val[j]
            st_next[depth + 1] = j + 1
            depth += 1
            entered = True
    if d.romme > 0.0 and best_len > 0 and not best_out and include < 0:
        kept = held + d.romme * most_laid / count(hand)
        if kept > best:
            return kept, 0
    return best, best_len


# ---------------------------------------------------------------------- decisions
@kernel
def greedy_action(inputs: Inputs, mask: np.ndarray, tab: np.ndarray, settings: np.ndarray) -> int:
    """The greedy heuristic's action (RULES §4): from the input layout of the module docstring
    (:class:`Inputs`), the action mask, the rules table ``tab`` and the settings; -1
    when the mask has no legal action.

    Draw phase (RULES §4.1-4.2): every legal staircase take whose deepest card the plan can use
    (a deep card taken for nothing is never considered) is scored against the stock (the
    current hand's plan plus ``stock_gain`` plus ``take_margin``); the stock wins ties. Meld
    phase (RULES §4.3-4.5): the first legal step of the best plan (a step laying the must-use
    card first), else the discard of highest weight - danger (ties: the higher card), else the
    most valuable legal lay (ties: the higher action).
    """
    return greedy_move(inputs, mask, tab, settings, workspace())


@kernel
def workspace() -> Workspace:
    """The scratch arrays of one decision (:func:`greedy_move`, :class:`Workspace`): uint64,
    float64 and int64 rows of :data:`WS_WIDTH` (``U_*``, ``F_*``, ``I_*`` name them), the open-end
    slots and the meld enumerator's marks. A caller that decides many times (a playout) allocates
    them once."""
    return Workspace(
        wu=np.empty((NUM_U_ROWS, WS_WIDTH), dtype=np.uint64),
        wf=np.empty((NUM_F_ROWS, WS_WIDTH), dtype=np.float64),
        wi=np.empty((NUM_I_ROWS, WS_WIDTH), dtype=np.int64),
        slots=np.empty((MAX_SLOTS, 3), dtype=np.int64),
        marks=np.zeros(MELD_MARKS, dtype=np.int8),
    )


@kernel
def greedy_move(inputs: Inputs, mask: np.ndarray, tab: np.ndarray, settings: np.ndarray, work: Workspace) -> int:
    """:func:`greedy_action` with the scratch arrays ``work`` of :func:`workspace` given (the same
    action)."""
    if not _any_legal(mask):
        return -1
    return move(inputs, mask, decision(inputs, tab, settings, work))


@kernel
def _any_legal(mask: np.ndarray) -> bool:
    """Whether the action mask has a legal action."""
    for a in range(NUM_ACTIONS):
        if mask[a]:
            return True
    return False


@kernel
def move(inputs: Inputs, mask: np.ndarray, d: Decision) -> int:
    """The move of the :class:`Decision` ``d`` (the greedy heuristic's or the planner's) for the
    position ``inputs`` with the action mask ``mask`` (at least one legal action): the best draw
    (:func:`draw_scores`) in the draw phase, else the next step of the best plan or the best discard
    (RULES §4.1-4.5)."""
    first_legal = 0
    while not mask[first_legal]:
        first_legal += 1
    last_legal = NUM_ACTIONS - 1
    while not mask[last_legal]:
        last_legal -= 1
    if last_legal < MELD_BASE:
        depth = draw_scores(inputs.cards[HAND], inputs.stairs, inputs.scalars, mask, d)
        return _best_draw(mask, d.work.wf[F_SCORES], depth)
    return _meld(inputs.cards[HAND], inputs.scalars, mask, first_legal, d)


@kernel
def _best_draw(mask: np.ndarray, scores: np.ndarray, depth: int) -> int:
    """RULES §4.1-4.2: the draw of best score (:func:`draw_scores`), the stock or the shallower
    take on ties; without a scored draw and with the stock empty, the first legal take."""
    best_action = 0
    best = scores[0]
    for d in range(1, depth + 1):
        if scores[d] > best:
            best_action, best = d, scores[d]
    if best_action == 0 and not mask[0]:
        for a in range(1, MELD_BASE):
            if mask[a]:
                return a
    return best_action


@kernel
def draw_scores(hand: np.uint64, stairs: np.ndarray, scalars: np.ndarray, mask: np.ndarray, d: Decision) -> int:
    """The heuristic's score of every draw (RULES §4.1-4.2) in the :class:`Decision` ``d``, in
    points, into ``d.work.wf[F_SCORES][k]`` for draw action ``k`` (0 the stock, ``k`` the take down to
    depth ``k``); returns the staircase's length.

    The stock scores the current hand's plan (the unknown card joining it) plus ``stock_gain``
    plus ``take_margin``; a take scores the plan of the hand with the taken cards, which must lay
    the deepest one when it lies below the top (or always, under the must-use rule) and may not
    discard a top card taken alone; an illegal draw, or a take whose deepest card the plan cannot
    use (a deep card taken for nothing is never considered), scores -inf. ``d.work.wu[U_USES][k]`` holds
    the taken cards that take's plan lays this turn (a bitset).
    """
    scores, uses = d.work.wf[F_SCORES], d.work.wu[U_USES]
    s_bits, best_chosen = d.work.wu[U_SORTED], d.work.wi[I_BEST]
    depth = scalars[STAIRS_LEN]
    scores[0] = -np.inf
    uses[0] = _ZERO
    if mask[0]:
        score, _ = _plan(hand, d, -1, -1, True, -1)
        scores[0] = score + _stock_bonus(d)
    must_use_taken = d.tab[layout.T_MUST_USE_TAKEN] != 0.0
    taken = _ZERO
    for take in range(1, depth + 1):
        card = np.int64(stairs[depth - take])
        taken |= bit(card)
        scores[take] = -np.inf
        uses[take] = _ZERO
        if not mask[take]:
            continue
        include = card if take > 1 or must_use_taken else -1
        listed = -1
        if include >= 0:
            usable, listed = _usable(card, hand | taken, d)
            if not usable:
                continue
        banned = card if take == 1 else -1
        score, steps = _plan(hand | taken, d, banned, include, False, listed)
        laid = _ZERO
        for k in range(steps):
            laid |= s_bits[best_chosen[k]]
        scores[take] = score
        uses[take] = laid & taken
    return depth


@kernel
def _stock_bonus(d: Decision) -> float:
    """What the stock's unknown card adds to a draw's score (RULES §4.1): ``stock_gain`` +
    ``take_margin``, the greedy heuristic's settings or the planner's values."""
    if d.values.size:
        return d.values[plan_value.V_STOCK_GAIN] + d.values[plan_value.V_TAKE_MARGIN]
    return d.settings[S_STOCK_GAIN] + d.settings[S_TAKE_MARGIN]


@kernel
def _meld(hand: np.uint64, scalars: np.ndarray, mask: np.ndarray, first_legal: int, d: Decision) -> int:
    """RULES §4.3-4.5: the next step of the best plan, else the safest discard."""
    s_bits, s_first, best_chosen = d.work.wu[U_SORTED], d.work.wi[I_SORTED], d.work.wi[I_BEST]
    banned = scalars[BANNED]
    include = scalars[MUST_USE]
    _, steps = _plan(hand, d, banned, include, False, -1)
    if include >= 0:  # steps that lay the must-use card first, each group in plan order
        for k in range(steps):
            j = best_chosen[k]
            if has(s_bits[j], include) and mask[s_first[j]]:
                return s_first[j]
    for k in range(steps):
        j = best_chosen[k]
        if (include < 0 or not has(s_bits[j], include)) and mask[s_first[j]]:
            return s_first[j]
    best_card = -1
    best_key = 0.0
    unseen = ~(d.ctx[CTX_DEAD] | hand) & _FULL
    for c in range(NUM_CARDS):
        if mask[DISCARD_BASE + c]:
            key = _discard_saving(c, _keep_weight(c, hand, unseen, d), hand, unseen, d, False)
            if best_card < 0 or key >= best_key:
                best_card, best_key = c, key
    if best_card >= 0:
        return DISCARD_BASE + best_card
    # Nothing to discard (a must-use card pending): the most valuable legal lay.
    best_play = -1
    best_value = 0.0
    for a in range(MELD_BASE, DISCARD_BASE):
        if mask[a]:
            if a < LAYOFF_BASE:
                value = d.tab[layout.T_MELD_VALUE + a - MELD_BASE]
            else:
                value = d.tab[layout.T_LAYOFF_VALUE + a - LAYOFF_BASE]
            if best_play < 0 or value >= best_value:
                best_play, best_value = a, value
    return best_play if best_play >= 0 else first_legal


@kernel
def empty_inputs() -> Inputs:
    """Zeroed :class:`Inputs` of the module's layout, for kernels and Python alike."""
    return Inputs(
        cards=np.zeros(NUM_CARD_SETS, dtype=np.uint64),
        stairs=np.zeros(NUM_CARDS, dtype=np.int8),
        scalars=np.zeros(NUM_SCALARS, dtype=np.int64),
        melds=np.zeros((MAX_TABLE_MELDS, NUM_MELD_COLUMNS), dtype=np.int8),
        meld_bits=np.zeros(MAX_TABLE_MELDS, dtype=np.uint64),
    )


@kernel
def must_use_evidence(scalars: np.ndarray, mask: np.ndarray) -> bool:
    """Whether the position shows the must-use rule (RULES §4.2): a must-use card in the meld
    phase, or a draw-phase mask that filters staircase takes."""
    last = -1
    for a in range(NUM_ACTIONS):
        if mask[a]:
            last = a
    if last < 0:
        return False
    if last < MELD_BASE:
        for d in range(1, scalars[STAIRS_LEN] + 1):
            if not mask[d]:
                return True
        return False
    return scalars[MUST_USE] >= 0


# ---------------------------------------------------------------------- engine states
@kernel
def state_inputs(u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, seat: int, inputs: Inputs) -> None:
    """Fill the input layout ``inputs`` (:class:`Inputs`) for ``seat`` from a state's arrays
    (:mod:`treppen_env.core.layout`):
    its hand, the cards each other seat publicly holds (relative seats),
    the lay-off slots (RULES §4.3), the staircase, the counts, the must-use card (§4.2), the ban
    (§4.4), its laid-before flag (§6.2) and the table melds, sets by rank then runs by low-end
    card, as its observation lists them."""
    cards, stairs, scalars = inputs.cards, inputs.stairs, inputs.scalars
    melds, meld_bits = inputs.melds, inputs.meld_bits
    n = i64[layout.NUM_PLAYERS]
    cards[HAND] = u64[layout.HAND + seat]
    for k in range(3):
        cards[KNOWN + k] = u64[layout.KNOWN + (seat + k + 1) % n] if k < n - 1 else _ZERO
    for t in range(3):
        cards[FITS + t] = u64[layout.SLOTS + t]
    length = i64[layout.STAIRS_LEN]
    for k in range(length):
        stairs[k] = i8[layout.STAIRS + k]
    scalars[NUM_PLAYERS] = n
    scalars[STAIRS_LEN] = length
    scalars[STOCK] = i64[layout.STOCK_LEN]
    scalars[PHASE] = i64[layout.PHASE]
    scalars[MUST_USE] = i64[layout.MUST_USE]
    scalars[BANNED] = i64[layout.BANNED]
    scalars[LAID_BEFORE] = i64[layout.LAID_BEFORE + seat]
    for k in range(4):
        scalars[HAND_SIZES + k] = count(u64[layout.HAND + (seat + k) % n]) if k < n else 0
    set_row = np.full(NUM_RANKS, -1, dtype=np.int8)
    run_row = np.full(NUM_CARDS, -1, dtype=np.int8)
    for i in range(i64[layout.NUM_MELDS]):
        row = layout.MELDS + layout.MELD_COLS * i
        if i8[row + layout.M_KIND] == layout.SET:
            set_row[i8[row + layout.M_LOW]] = i
        else:
            run_row[NUM_RANKS * i8[row + layout.M_SUIT] + i8[row + layout.M_LOW]] = i
    m = 0
    for rank in range(NUM_RANKS):
        if set_row[rank] >= 0:
            _copy_meld(u64, i8, set_row[rank], seat, n, melds, meld_bits, m)
            m += 1
    for card in range(NUM_CARDS):
        if run_row[card] >= 0:
            _copy_meld(u64, i8, run_row[card], seat, n, melds, meld_bits, m)
            m += 1
    scalars[NUM_TABLE_MELDS] = m


@kernel
def _copy_meld(
    u64: np.ndarray, i8: np.ndarray, i: int, seat: int, n: int, melds: np.ndarray, meld_bits: np.ndarray, m: int
) -> None:
    """Table meld ``i`` of the state into row ``m`` of the heuristic's meld table, its owner as a
    seat relative to ``seat`` (of ``n`` players)."""
    row = layout.MELDS + layout.MELD_COLS * i
    is_set = i8[row + layout.M_KIND] == layout.SET
    melds[m, M_OWNER] = (i8[row + layout.M_OWNER] - seat) % n
    melds[m, M_KIND] = KIND_SET if is_set else KIND_RUN
    melds[m, M_SUIT] = -1 if is_set else i8[row + layout.M_SUIT]
    melds[m, M_LOW] = i8[row + layout.M_LOW]
    melds[m, M_LENGTH] = i8[row + layout.M_LENGTH]
    meld_bits[m] = u64[layout.MELD_BITS + i]


def settings_row(**settings: float) -> np.ndarray:
    """The settings as the kernels read them: float64 (NUM_SETTINGS,), defaults for those not given.

    :raises ValueError: for a name that is no setting (listing the settings).
    """
    unknown = sorted(set(settings) - set(DEFAULT_SETTINGS))
    if unknown:
        raise ValueError(f"unknown greedy settings {unknown}; the settings: {list(DEFAULT_SETTINGS)}")
    return np.array([float(settings.get(k, v)) for k, v in DEFAULT_SETTINGS.items()], dtype=np.float64)
