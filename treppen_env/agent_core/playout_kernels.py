"""Playouts and determinization as kernels over the compiled core's arrays.

A playout plays a state to the end of its deal with greedy (:mod:`treppen_env.agent_core.greedy_kernels`),
uniformly random legal moves or a net's moves at every seat and returns each seat's deal points
(RULES §6). The
greedy seats decide from what they may see: :func:`treppen_env.agent_core.greedy_kernels.state_inputs`
fills the heuristic's input layout from the state's arrays for the seat to move exactly as the
heuristic's observation reader does from that seat's observation (the same cards, counts and
table, melds in the same order), so a greedy seat in a playout makes the move
:class:`treppen.agents.GreedyAgent` would make from its observation. A net seat (:data:`NET`)
reads the observation of the seat to move, written into the scratch: the small policy/value net
(:mod:`treppen_env.agent_core.policy_value_kernels`) or the batched learner's action net
(:mod:`treppen_env.agent_core.action_net_kernels`, its legal-action rows listed for that one position),
and plays its most probable move or one drawn from its softmax (:func:`net_choice`).

A determinization (:func:`redeal`) replaces what the observer cannot see in a state by a fresh
random deal of the unseen cards: each opponent keeps the cards it is publicly known to hold
(taken from the staircase, RULES §4.1) and gets the rest of its hand from the unseen cards, the
stock gets the others in random order. When an opponent to move must still play a taken card
(RULES §4.2), deals that leave it unable to are dealt again. Start from a state sampled once by
:func:`treppen_env.determinize.sample_state`: its public part is exact, and the kernel redeals
only the hidden part, so every iteration of a search gets a new determinization for the cost of a
shuffle.

Randomness inside the kernels is the SplitMix64 generator of :mod:`treppen_env.core.kernels`,
whose whole state is a uint64 (1,) array the caller seeds: the same seed, the same playouts.

The kernels call kernels of :mod:`treppen_env.core.kernels` and :mod:`treppen_env.agent_core.greedy_kernels`;
their cache is keyed on every core source (:mod:`treppen_env.core.cache`), so an edit to a callee
recompiles its callers too.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from treppen_env.agent_core import action_net_kernels, greedy_kernels, plan_value, planner_kernels, policy_value_kernels
from treppen_env.core import kernels
from treppen_env.core.bits import bit, count, has
from treppen_env.core.cache import kernel
from treppen_env.core.generator import MASK_WORDS, random_below, random_legal
from treppen_env.core.layout import (
    CURRENT,
    DEAL_OVER,
    DEAL_POINTS,
    HAND,
    KNOWN,
    MUST_USE,
    NUM_CARDS,
    NUM_PLAYERS,
    PHASE,
    STAIRS,
    STAIRS_LEN,
    STOCK,
    STOCK_LEN,
    TURN,
    Position,
)
from treppen_env.core.observe import write_observation

#: Policies of a seat in a playout.
GREEDY, RANDOM, NET, PLANNER = 0, 1, 2, 3
POLICIES = {"greedy": GREEDY, "random": RANDOM, "net": NET, "planner": PLANNER}
#: Kinds of the network of :data:`NET` seats (:attr:`NetScratch.kind`): none, the small
#: policy/value net (:mod:`treppen_env.agent_core.policy_value_kernels`), the action net
#: (:mod:`treppen_env.agent_core.action_net_kernels`).
NO_NET, SMALL_NET, ACTION_NET = 0, 1, 2
#: Legal actions (the length of the legal mask).
NUM_ACTIONS = kernels.A_DISCARD_BASE + NUM_CARDS


class Playout(NamedTuple):
    """How the seats of a playout play (a kernel bundle)."""

    #: int64 (num_players,): each seat's :data:`GREEDY`, :data:`RANDOM` or :data:`NET`.
    policies: np.ndarray
    #: float64: the greedy seats' settings (:func:`treppen_env.agent_core.greedy_kernels.settings_row`;
    #: their rules are the rules table the kernels are given).
    settings: np.ndarray
    #: float64: the planner seats' settings (:func:`treppen_env.agent_core.plan_value.values_row`).
    values: np.ndarray


class NetFeatures(NamedTuple):
    """What the action net's feature columns read (a kernel bundle;
    :class:`treppen_env.agent_core.action_net_kernels.FeatureContext`)."""

    #: float32 (898, S): the static action table.
    table: np.ndarray
    #: float64: the heuristic of the feature columns (size 0: the greedy heuristic, else the planner's values).
    values: np.ndarray


class ObservationLayout(NamedTuple):
    """The observation layout a net reads (a kernel bundle; :func:`treppen_env.core.observe.write_observation`)."""

    offsets: np.ndarray
    consts: np.ndarray


class LeafValue(NamedTuple):
    """How a search's playout is valued by the small net's value head (a kernel bundle; :func:`finish`)."""

    #: With ``turns > 0`` the playout is valued after that many turns...
    turns: int
    #: ...weighed ``weight`` (in [0, 1]) against the playout's own result.
    weight: float


class NetScratch(NamedTuple):
    """The network of a playout's :data:`NET` seats and value estimates, with the arrays its forward
    pass works in (:func:`with_net`; a kernel bundle)."""

    #: :data:`NO_NET`, :data:`SMALL_NET` or :data:`ACTION_NET`.
    kind: int
    #: Whether :data:`NET` seats play the net's most probable move (else one drawn from its softmax).
    argmax: bool
    #: float32: the flat weights (none: size 0).
    w: np.ndarray
    #: int64: the net's shape (:data:`treppen_env.agent_core.policy_value_kernels.SHAPE_SIZE` or
    #: :data:`treppen_env.agent_core.action_net_kernels.SHAPE_SIZE` slots, the observation size first).
    shape: np.ndarray
    #: The observation layout's offsets and constants (:func:`treppen_env.core.observe.write_observation`).
    offsets: np.ndarray
    consts: np.ndarray
    #: float32 (observation size,): the observation the network reads.
    obs: np.ndarray
    #: float32 (hidden units,): the small net's hidden units, and the scratch of its deeper layers.
    hidden: np.ndarray
    spare: np.ndarray
    #: float64 (898,): the policy's logits (the small net's by action, the action net's by legal row).
    logits: np.ndarray
    #: The action net's legal-action rows and units (:func:`treppen_env.agent_core.action_net_kernels.row_scratch`).
    rows: action_net_kernels.RowScratch
    #: Turns after which a search's playout is valued by the small net's value head (0: never).
    value_turns: int
    #: The value head's share of that playout's result, in [0, 1].
    value_weight: float


class Scratch(NamedTuple):
    """The arrays one playout loop works in, allocated once (:func:`scratch`; a kernel bundle)."""

    #: int8 (8 MASK_WORDS,): the legal mask padded to whole words
    #: (:func:`treppen_env.core.generator.random_legal` reads it as uint64 words).
    mask: np.ndarray
    #: The greedy seat's inputs and its decision's workspace (:mod:`treppen_env.agent_core.greedy_kernels`).
    inputs: greedy_kernels.Inputs
    workspace: greedy_kernels.Workspace
    #: The network of :data:`NET` seats (none without :func:`with_net`).
    net: NetScratch
    #: uint64 (4,): what each seat was seen to discard or decline since the playout started
    #: (:func:`treppen_env.agent_core.planner_kernels.remember`), and (3,) the planner seat's view of it.
    memory: np.ndarray
    relative: np.ndarray


_ZERO = np.uint64(0)


@kernel
def shuffle(cards: np.ndarray, rng: np.ndarray) -> None:
    """Fisher-Yates shuffle of the int8 array ``cards`` in place with the generator ``rng``."""
    for k in range(cards.size - 1, 0, -1):
        j = random_below(rng, k + 1)
        cards[k], cards[j] = cards[j], cards[k]


@kernel
def _reshuffle(pos: Position, tab: np.ndarray, meld_bits: np.ndarray, mask: np.ndarray, rng: np.ndarray) -> None:
    """RULES §6.4 with ``stock_exhausted="reshuffle"``: the staircase below its top card,
    shuffled, becomes the stock, and the turn ends."""
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    stock = i8[STAIRS : STAIRS + i64[STAIRS_LEN] - 1].copy()
    shuffle(stock, rng)
    kernels.reshuffle(u64, i8, i64, tab, meld_bits, mask, stock)


@kernel
def scratch() -> Scratch:
    """The :class:`Scratch` of a playout loop, without a network (:func:`with_net` gives one)."""
    return with_net(
        kind=NO_NET,
        w=np.zeros(0, dtype=np.float32),
        shape=np.zeros(action_net_kernels.SHAPE_SIZE, dtype=np.int64),
        features=NetFeatures(table=np.zeros((0, 0), dtype=np.float32), values=np.zeros(0)),
        observe=ObservationLayout(offsets=np.zeros(1, dtype=np.int64), consts=np.zeros(1)),
        value=LeafValue(turns=0, weight=0.0),
        argmax=False,
    )


@kernel
def with_net(
    kind: int,
    w: np.ndarray,
    shape: np.ndarray,
    features: NetFeatures,
    observe: ObservationLayout,
    value: LeafValue,
    argmax: bool,
) -> Scratch:
    """:func:`scratch` with a network for :data:`NET` seats.

    :param kind: :data:`SMALL_NET` or :data:`ACTION_NET` (:data:`NO_NET`: none).
    :param w: its flat weights (float32).
    :param shape: its shape (int64).
    :param features: what the action net's feature columns read (:class:`NetFeatures`; unused by the
        small net).
    :param observe: the observation layout the net reads (:class:`ObservationLayout`).
    :param value: how a search's playout is valued by the small net's value head (:class:`LeafValue`).
    :param argmax: whether net seats play the most probable move (else sample; :func:`pick`).
    """
    small = max(shape[policy_value_kernels.SH_HIDDEN], 1) if kind == SMALL_NET else 1
    net = NetScratch(
        kind=kind,
        argmax=argmax,
        w=w,
        shape=shape,
        offsets=observe.offsets,
        consts=observe.consts,
        obs=np.zeros(max(shape[0], 1), dtype=np.float32),
        hidden=np.zeros(small, dtype=np.float32),
        spare=np.zeros(small, dtype=np.float32),
        logits=np.zeros(NUM_ACTIONS),
        rows=action_net_kernels.row_scratch(
            features.table,
            features.values,
            shape if kind == ACTION_NET else np.zeros(action_net_kernels.SHAPE_SIZE, dtype=np.int64),
        ),
        value_turns=value.turns,
        value_weight=value.weight,
    )
    mask = np.zeros(MASK_WORDS * 8, dtype=np.int8)
    return Scratch(
        mask=mask,
        inputs=greedy_kernels.empty_inputs(),
        workspace=greedy_kernels.workspace(),
        net=net,
        memory=np.zeros(4, dtype=np.uint64),
        relative=np.zeros(planner_kernels.MEMORY_SEATS, dtype=np.uint64),
    )


@kernel
def pick(logits: np.ndarray, argmax: bool, rng: np.ndarray) -> int:
    """The index of the largest of ``logits`` (float64; the first of equals) with ``argmax``, else one
    drawn from their softmax with the generator ``rng`` (-inf: never)."""
    if argmax:
        return int(np.argmax(logits))
    return policy_value_kernels.sample_action(logits, rng)


@kernel
def action_net_logits(pos: Position, tab: np.ndarray, settings: np.ndarray, work: Scratch) -> int:
    """The action net's logits of the legal moves of the seat to move, from that seat's observation
    (written into ``work.net.obs``: it sees only what that seat may see) and the legal mask in
    ``work``: the moves in ``work.net.rows.acts[:n]`` (ascending), their logits in
    ``work.net.logits[:n]``; returns ``n``. ``settings``: the greedy heuristic's, for its feature
    columns (the planner's values are the scratch's, :func:`with_net`)."""
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    net = work.net
    rows = net.rows
    write_observation(u64, i8, i64, tab, i64[CURRENT], net.offsets, net.consts, net.obs)
    mask = work.mask[:NUM_ACTIONS]
    n = action_net_kernels.position_features(
        net.obs,
        mask,
        action_net_kernels.FeatureContext(tab=tab, settings=settings, values=rows.values, table=rows.table),
        work.inputs,
        work.workspace,
        rows.extra,
        rows.acts,
        rows.feats,
    )
    action_net_kernels.score_rows(net.w, net.shape, net.obs, rows.feats, n, net.logits, rows.units)
    return n


@kernel
def net_choice(pos: Position, tab: np.ndarray, settings: np.ndarray, rng: np.ndarray, work: Scratch) -> int:
    """The network's move for the seat to move (:attr:`NetScratch.kind`), from that seat's
    observation and the legal mask in ``work``: the most probable legal move with
    ``work.net.argmax``, else one drawn from the softmax of its logits (:func:`pick`, with ``rng``).
    ``settings``: the heuristic's (the action net's feature columns)."""
    net = work.net
    if net.kind == ACTION_NET:
        n = action_net_logits(pos, tab, settings, work)
        return net.rows.acts[pick(net.logits[:n], net.argmax, rng)]
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    write_observation(u64, i8, i64, tab, i64[CURRENT], net.offsets, net.consts, net.obs)
    policy_value_kernels.hidden_units(net.w, net.shape, net.obs, net.hidden, net.spare)
    policy_value_kernels.policy_logits(net.w, net.shape, net.hidden, work.mask[:NUM_ACTIONS], net.logits)
    return pick(net.logits, net.argmax, rng)


@kernel
def greedy_choice(
    u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, tab: np.ndarray, settings: np.ndarray, work: Scratch
) -> int:
    """The greedy heuristic's move for the seat to move, from what that seat may see
    (:func:`treppen_env.agent_core.greedy_kernels.state_inputs`), with the legal mask and arrays of ``work``."""
    greedy_kernels.state_inputs(u64, i8, i64, i64[CURRENT], work.inputs)
    return greedy_kernels.greedy_move(work.inputs, work.mask[:NUM_ACTIONS], tab, settings, work.workspace)


@kernel
def planner_choice(
    u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, tab: np.ndarray, playout: Playout, work: Scratch
) -> int:
    """The planner's move for the seat to move, from what that seat may see
    (:func:`treppen_env.agent_core.greedy_kernels.state_inputs`) and its memory of the playout so far, with
    the legal mask and arrays of ``work``."""
    greedy_kernels.state_inputs(u64, i8, i64, i64[CURRENT], work.inputs)
    memory = planner_kernels.relative_memory(work.memory, i64, work.relative)
    mask = work.mask[:NUM_ACTIONS]
    return planner_kernels.planner_move(work.inputs, memory, mask, tab, playout.values, work.workspace)


@kernel
def advance(
    u64: np.ndarray,
    i8: np.ndarray,
    i64: np.ndarray,
    tab: np.ndarray,
    meld_bits: np.ndarray,
    action: int,
    rng: np.ndarray,
    work: Scratch,
) -> None:
    """Play the legal ``action`` (the legal mask in ``work`` follows), reshuffling with ``rng``
    when the discard emptied the stock (RULES §6.4)."""
    mask = work.mask[:NUM_ACTIONS]
    if kernels.step(u64, i8, i64, tab, meld_bits, mask, action) == kernels.STEP_RESHUFFLE:
        _reshuffle(Position(u64=u64, i8=i8, i64=i64), tab, meld_bits, mask, rng)


@kernel
def start(
    u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, tab: np.ndarray, meld_bits: np.ndarray, work: Scratch
) -> None:
    """Write the state's legal mask into ``work`` (before the first :func:`advance` of a copy) and
    forget the seats' memory."""
    kernels.legal_mask(u64, i8, i64, tab, meld_bits, work.mask[:NUM_ACTIONS])
    work.memory[:] = 0


@kernel
def play_to_end(
    pos: Position, tab: np.ndarray, meld_bits: np.ndarray, playout: Playout, rng: np.ndarray, work: Scratch
) -> int:
    """Play the state ``pos`` (its arrays changed in place) to the end of its deal, each seat by
    its policy (the :class:`Playout` ``playout``), with the generator ``rng`` for random moves and
    reshuffles (RULES §6.4) and the arrays ``work`` of :func:`scratch`; the number of moves."""
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    start(u64, i8, i64, tab, meld_bits, work)
    moves = 0
    while i64[PHASE] != DEAL_OVER:
        policy_move(pos, tab, meld_bits, playout, rng, work)
        moves += 1
    return moves


@kernel
def finish(
    pos: Position,
    tab: np.ndarray,
    meld_bits: np.ndarray,
    playout: Playout,
    rng: np.ndarray,
    work: Scratch,
    observer: int,
) -> tuple[float, float]:
    """Play a search's simulation on to its end (:func:`play_to_end`) and return ``observer``'s
    ``(win, margin)`` (:func:`outcome`'s units); with a value network
    (:func:`with_net`), after ``value_turns`` turns its value head's score of the observer's side
    is mixed in, ``value_weight`` of it (1: the playout stops there, its margin counted 0)."""
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    net = work.net
    if net.value_turns <= 0:
        play_to_end(pos, tab, meld_bits, playout, rng, work)
        return outcome(i64, observer)
    start(u64, i8, i64, tab, meld_bits, work)
    stop = i64[TURN] + net.value_turns
    while i64[PHASE] != DEAL_OVER and i64[TURN] < stop:
        policy_move(pos, tab, meld_bits, playout, rng, work)
    if i64[PHASE] == DEAL_OVER:
        return outcome(i64, observer)
    write_observation(u64, i8, i64, tab, observer, net.offsets, net.consts, net.obs)
    policy_value_kernels.hidden_units(net.w, net.shape, net.obs, net.hidden, net.spare)
    estimate = 0.5 * (policy_value_kernels.value(net.w, net.shape, net.hidden, u64, observer, i64[NUM_PLAYERS]) + 1.0)
    if net.value_weight >= 1.0:
        return estimate, 0.0
    play_to_end(pos, tab, meld_bits, playout, rng, work)
    win, margin = outcome(i64, observer)
    return net.value_weight * estimate + (1.0 - net.value_weight) * win, margin


@kernel
def outcome(i64: np.ndarray, seat: int) -> tuple[float, float]:
    """``(win, margin)`` of ``seat`` in a finished deal: its mean score against the other seats
    (more points 1, equal 0.5; the ratings' score) and its points minus the mean of the others',
    / 100 (RULES §6.2)."""
    n = i64[NUM_PLAYERS]
    mine = i64[DEAL_POINTS + seat]
    total = 0
    score = 0.0
    for s in range(n):
        theirs = i64[DEAL_POINTS + s]
        total += theirs
        if s != seat:
            score += 1.0 if mine > theirs else (0.5 if mine == theirs else 0.0)
    return score / (n - 1), (mine - (total - mine) / (n - 1)) / 100.0


@kernel
def policy_move(
    pos: Position, tab: np.ndarray, meld_bits: np.ndarray, playout: Playout, rng: np.ndarray, work: Scratch
) -> None:
    """Play one move of the seat to move by its policy in ``playout`` (:func:`policy_action`),
    kept in the seats' memory; the legal mask in ``work`` must be the state's."""
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    action = policy_action(pos, tab, playout, rng, work)
    planner_kernels.remember(work.memory, i8, i64, action)
    advance(u64, i8, i64, tab, meld_bits, action, rng, work)


@kernel
def policy_action(pos: Position, tab: np.ndarray, playout: Playout, rng: np.ndarray, work: Scratch) -> int:
    """The move of the seat to move by its policy in ``playout`` (:data:`GREEDY`, :data:`RANDOM`,
    :data:`NET`, the network of ``work``, or :data:`PLANNER`), not yet played; the legal mask in
    ``work`` must be the state's."""
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    policy = playout.policies[i64[CURRENT]]
    if policy == GREEDY:
        return greedy_choice(u64, i8, i64, tab, playout.settings, work)
    if policy == NET:
        return net_choice(pos, tab, playout.settings, rng, work)
    if policy == PLANNER:
        return planner_choice(u64, i8, i64, tab, playout, work)
    return random_legal(work.mask.view(np.uint64), rng)


@kernel
def redeal(
    pos: Position,
    tab: np.ndarray,
    meld_bits: np.ndarray,
    observer: int,
    rng: np.ndarray,
    tries: int,
    stock_pool: np.uint64 = _ZERO,
) -> bool:
    """Deal the cards ``observer`` cannot see afresh (the arrays of ``pos`` changed in place): each
    other seat keeps its publicly known cards (RULES §4.1) and gets the rest of its hand from the
    unseen cards, the stock the others in random order. When another seat is to move with a
    must-use card (RULES §4.2), deals it could not play it from are dealt again, at most ``tries``
    times in all.

    :param stock_pool: cards known to lie in the stock or in hands drawn from it since a reshuffle
        (uint64 bitset; 0 for none): the stock is dealt from them only (RULES §6.4; the staircase
        that became the stock was public), when enough of them are unseen.
    :return: whether a deal was found (the arrays hold the last one tried either way).
    """
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    n = i64[NUM_PLAYERS]
    need = np.zeros(4, dtype=np.int64)
    hidden = _ZERO
    for s in range(n):
        if s != observer:
            secret = u64[HAND + s] & ~u64[KNOWN + s]
            need[s] = count(secret)
            hidden |= secret
    stock_len = i64[STOCK_LEN]
    pool = np.empty(count(hidden) + stock_len, dtype=np.int8)
    j = 0
    for c in range(NUM_CARDS):
        if has(hidden, c):
            pool[j] = c
            j += 1
    pool[j:] = i8[STOCK : STOCK + stock_len]
    reshuffled = _reshuffled_first(pool, stock_pool, stock_len)
    mover, must_use = i64[CURRENT], i64[MUST_USE]
    for _ in range(tries):
        if reshuffled:  # the stock from the reshuffled cards, the hands from the rest (RULES §6.4)
            shuffle(pool[:reshuffled], rng)
            shuffle(pool[stock_len:], rng)
            j = stock_len
        else:
            shuffle(pool, rng)
            j = 0
        for s in range(n):
            if s != observer:
                hand = u64[KNOWN + s]
                for k in range(need[s]):
                    hand |= bit(pool[j + k])
                u64[HAND + s] = hand
                j += need[s]
        i8[STOCK : STOCK + stock_len] = pool[:stock_len] if reshuffled else pool[j:]
        if must_use < 0 or mover == observer or kernels.can_play(u64, tab, meld_bits, must_use, u64[HAND + mover]):
            return True
    return False


@kernel
def _reshuffled_first(pool: np.ndarray, stock_pool: np.uint64, stock_len: int) -> int:
    """Move the cards of ``stock_pool`` to the front of ``pool`` (int8 cards); their number, or 0
    when there is no pool or it holds fewer cards than the stock (then the stock is dealt freely)."""
    front = 0
    for k in range(pool.size):
        if has(stock_pool, pool[k]):
            pool[front], pool[k] = pool[k], pool[front]
            front += 1
    return front if stock_pool != _ZERO and front >= stock_len else 0


@kernel
def playouts(
    pos: Position,
    tab: np.ndarray,
    meld_bits: np.ndarray,
    observer: int,
    playout: Playout,
    seed: int,
    points: np.ndarray,
) -> int:
    """``points.shape[0]`` playouts of the state ``pos`` (left unchanged), each seat playing its
    policy (the :class:`Playout` ``playout``), each from a fresh determinization for ``observer``
    (:func:`redeal`), or from the state as it is when ``observer`` is -1; playout ``k``'s deal
    points per seat go to ``points[k, :n]`` (RULES §6). The generator is seeded with ``seed``.
    Returns the moves played in all (the inner loop of flat Monte Carlo search)."""
    u64, i8, i64 = pos.u64, pos.i8, pos.i64
    rng = np.full(1, seed, dtype=np.uint64)
    work = scratch()
    n = i64[NUM_PLAYERS]
    copy = Position(u64=u64.copy(), i8=i8.copy(), i64=i64.copy())
    moves = 0
    for k in range(points.shape[0]):
        copy.u64[:] = u64
        copy.i8[:] = i8
        copy.i64[:] = i64
        if observer >= 0:
            redeal(copy, tab, meld_bits, observer, rng, 100)
        moves += play_to_end(copy, tab, meld_bits, playout, rng, work)
        for s in range(n):
            points[k, s] = copy.i64[DEAL_POINTS + s]
    return moves


# ---------------------------------------------------------------------------------- Python face
def seat_policies(policy: str | list[str], num_players: int) -> np.ndarray:
    """The policy of every seat as the kernels read them (int64 (num_players,)).

    :param policy: ``"greedy"`` or ``"random"`` for every seat, or one name per seat.
    :raises ValueError: for an unknown name or a list of the wrong length.
    """
    names = [policy] * num_players if isinstance(policy, str) else list(policy)
    if len(names) != num_players:
        raise ValueError(f"{len(names)} seat policies for {num_players} players")
    unknown = sorted({p for p in names if p not in POLICIES})
    if unknown:
        raise ValueError(f"unknown playout policy {unknown}; choose from {sorted(POLICIES)}")
    return np.array([POLICIES[p] for p in names], dtype=np.int64)


def play_out(
    state: Any,
    policy: str | list[str] = "greedy",
    count: int = 1,
    seed: int = 0,
    observer: int | None = None,
    settings: np.ndarray | None = None,
) -> np.ndarray:
    """Play ``count`` playouts of ``state`` (a :class:`treppen_env.engine.GameState`, left
    unchanged) to the end of its deal.

    :param state: a position inside a deal (RULES §4).
    :param policy: ``"greedy"`` or ``"random"`` at every seat, or one per seat.
    :param count: playouts.
    :param seed: seeds the random moves, reshuffles and redeals (the same seed, the same playouts).
    :param observer: redeal what this seat cannot see before every playout (a determinization);
        ``None`` plays the state's own cards.
    :param settings: the greedy seats' settings row (:func:`treppen_env.agent_core.greedy_kernels.settings_row`;
        default: the default heuristic); the rules are the state's.
    :return: int64 (count, num_players): each playout's deal points per seat (RULES §6).
    :raises ValueError: for a deal that is over, or a bad policy or observer.
    """
    if state.deal_over:
        raise ValueError("the deal is over: there is nothing to play out")
    n = state.num_players
    if observer is not None and not 0 <= observer < n:
        raise ValueError(f"observer {observer} is not a seat 0..{n - 1}")
    tab, meld_bits = state.tables.tab, state.tables.meld_bits
    points = np.zeros((count, n), dtype=np.int64)
    playout = Playout(
        policies=seat_policies(policy, n),
        settings=greedy_kernels.settings_row() if settings is None else settings,
        values=plan_value.values_row(),
    )
    playouts(state.arrays(), tab, meld_bits, -1 if observer is None else observer, playout, seed & (2**64 - 1), points)
    return points
