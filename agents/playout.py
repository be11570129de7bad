"""Playouts and determinization as kernels over the compiled core's arrays.

A playout plays a state to the end of its deal with greedy (:mod:`agents.greedy_core`) or
uniformly random legal moves at every seat and returns each seat's deal points (RULES §6). The
greedy seats decide from what they may see: :func:`state_inputs` fills the heuristic's input
layout from the state's arrays for the seat to move exactly as the heuristic's observation reader
does from that seat's observation (the same cards, counts and table, melds in the same order), so
a greedy seat in a playout makes the move :class:`agents.GreedyAgent` would make from its
observation.

A determinization (:func:`redeal`) replaces what the observer cannot see in a state by a fresh
random deal of the unseen cards: each opponent keeps the cards it is publicly known to hold
(taken from the staircase, RULES §4.1) and gets the rest of its hand from the unseen cards, the
stock gets the others in random order. When an opponent to move must still play a taken card
(RULES §4.2), deals that leave it unable to are dealt again. Start from a state sampled once by
:func:`treppen_env.determinize.sample_state`: its public part is exact, and the kernel redeals
only the hidden part, so every iteration of a search gets a new determinization for the cost of a
shuffle.

Randomness inside the kernels is Numba's generator, seeded by the ``seed`` argument of the entry
points (:func:`play_out`, :func:`redeal`): the same seed gives the same playouts.

The kernels call kernels of :mod:`treppen_env.core.kernels` and :mod:`agents.greedy_core`.
Numba's on-disk cache of a kernel is keyed on its own source file only, so after editing one of
those modules in a source checkout, clear this module's cache (``__pycache__/playout*.nbi`` and
``.nbc``) too; an installed release compiles all of them afresh.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from agents import greedy_core as G
from treppen_env.core import kernels as K
from treppen_env.core.layout import (
    BANNED,
    CURRENT,
    DEAL_OVER,
    DEAL_POINTS,
    HAND,
    KNOWN,
    LAID_BEFORE,
    M_KIND,
    M_LENGTH,
    M_LOW,
    M_OWNER,
    M_SUIT,
    MAX_MELDS,
    MELD_BITS,
    MELD_COLS,
    MELDS,
    MUST_USE,
    NUM_CARDS,
    NUM_MELDS,
    NUM_PLAYERS,
    NUM_RANKS,
    PHASE,
    SET,
    SLOTS,
    STAIRS,
    STAIRS_LEN,
    STOCK,
    STOCK_LEN,
)
from treppen_env.engine import GameState

#: Policies of a seat in a playout.
GREEDY, RANDOM = 0, 1
POLICIES = {"greedy": GREEDY, "random": RANDOM}

_ZERO = np.uint64(0)
_ONE = np.uint64(1)

jit = numba.njit(cache=True, nogil=True)


@jit
def state_inputs(u64, i8, i64, cards, stairs, scalars, melds, meld_bits) -> None:
    """Fill the greedy heuristic's input layout (:mod:`agents.greedy_core`) for the seat to move
    from a state's arrays: its hand, the cards each other seat publicly holds (relative seats),
    the lay-off slots (RULES §4.3), the staircase, the counts, the must-use card (§4.2), the ban
    (§4.4), its laid-before flag (§6.2) and the table melds, sets by rank then runs by low-end
    card, as its observation lists them."""
    n = i64[NUM_PLAYERS]
    seat = i64[CURRENT]
    cards[G.HAND] = u64[HAND + seat]
    for k in range(3):
        cards[G.KNOWN + k] = u64[KNOWN + (seat + k + 1) % n] if k < n - 1 else _ZERO
    for t in range(3):
        cards[G.FITS + t] = u64[SLOTS + t]
    length = i64[STAIRS_LEN]
    for k in range(length):
        stairs[k] = i8[STAIRS + k]
    scalars[G.NUM_PLAYERS] = n
    scalars[G.STAIRS_LEN] = length
    scalars[G.STOCK] = i64[STOCK_LEN]
    scalars[G.PHASE] = i64[PHASE]
    scalars[G.MUST_USE] = i64[MUST_USE]
    scalars[G.BANNED] = i64[BANNED]
    scalars[G.LAID_BEFORE] = i64[LAID_BEFORE + seat]
    for k in range(4):
        scalars[G.HAND_SIZES + k] = K.count(u64[HAND + (seat + k) % n]) if k < n else 0
    set_row = np.full(NUM_RANKS, -1, dtype=np.int8)
    run_row = np.full(NUM_CARDS, -1, dtype=np.int8)
    for i in range(i64[NUM_MELDS]):
        row = MELDS + MELD_COLS * i
        if i8[row + M_KIND] == SET:
            set_row[i8[row + M_LOW]] = i
        else:
            run_row[NUM_RANKS * i8[row + M_SUIT] + i8[row + M_LOW]] = i
    m = 0
    for rank in range(NUM_RANKS):
        if set_row[rank] >= 0:
            _copy_meld(u64, i8, set_row[rank], seat, n, melds, meld_bits, m)
            m += 1
    for card in range(NUM_CARDS):
        if run_row[card] >= 0:
            _copy_meld(u64, i8, run_row[card], seat, n, melds, meld_bits, m)
            m += 1
    scalars[G.NUM_TABLE_MELDS] = m


@jit
def _copy_meld(u64, i8, i, seat, n, melds, meld_bits, m) -> None:
    """Table meld ``i`` of the state into row ``m`` of the heuristic's meld table, its owner as a
    seat relative to ``seat`` (of ``n`` players)."""
    row = MELDS + MELD_COLS * i
    is_set = i8[row + M_KIND] == SET
    melds[m, G.M_OWNER] = (i8[row + M_OWNER] - seat) % n
    melds[m, G.M_KIND] = G.KIND_SET if is_set else G.KIND_RUN
    melds[m, G.M_SUIT] = -1 if is_set else i8[row + M_SUIT]
    melds[m, G.M_LOW] = i8[row + M_LOW]
    melds[m, G.M_LENGTH] = i8[row + M_LENGTH]
    meld_bits[m] = u64[MELD_BITS + i]


@jit
def random_move(mask) -> int:
    """A uniformly random legal action of ``mask`` (int8 (898,)), from Numba's generator."""
    legal = 0
    for a in range(mask.size):
        legal += mask[a] != 0
    pick = np.random.randint(legal)
    for a in range(mask.size):
        if mask[a] != 0:
            if pick == 0:
                return a
            pick -= 1
    return -1


@jit
def _reshuffle(u64, i8, i64, tab, meld_bits, mask) -> None:
    """RULES §6.4 with ``stock_exhausted="reshuffle"``: the staircase below its top card,
    shuffled, becomes the stock, and the turn ends."""
    below = i64[STAIRS_LEN] - 1
    stock = np.empty(below, dtype=np.int8)
    for k in range(below):
        stock[k] = i8[STAIRS + k]
    np.random.shuffle(stock)
    K.reshuffle(u64, i8, i64, tab, meld_bits, mask, stock)


@jit
def _play_to_end(
    u64,
    i8,
    i64,
    tab,
    meld_bits,
    mask,
    policies,
    row,
    settings,
    inputs_cards,
    inputs_stairs,
    inputs_scalars,
    inputs_melds,
    inputs_bits,
    ws,
) -> int:
    """Play the state (arrays changed in place) to the end of its deal, each seat by its policy
    (:data:`GREEDY` or :data:`RANDOM`); the number of moves played."""
    moves = 0
    while i64[PHASE] != DEAL_OVER:
        if policies[i64[CURRENT]] == GREEDY:
            state_inputs(u64, i8, i64, inputs_cards, inputs_stairs, inputs_scalars, inputs_melds, inputs_bits)
            action = G.greedy_move(
                inputs_cards, inputs_stairs, inputs_scalars, inputs_melds, inputs_bits, mask, row, settings, *ws
            )
        else:
            action = random_move(mask)
        if K.step(u64, i8, i64, tab, meld_bits, mask, action) == K.STEP_RESHUFFLE:
            _reshuffle(u64, i8, i64, tab, meld_bits, mask)
        moves += 1
    return moves


@jit
def playouts(u64, i8, i64, tab, meld_bits, policies, row, settings, seed, points) -> int:
    """``points.shape[0]`` playouts from the state ``(u64, i8, i64)`` (left unchanged), each seat
    playing its policy; playout ``k``'s deal points per seat go to ``points[k, :n]`` (RULES §6).
    Numba's generator is seeded with ``seed`` first. Returns the moves played in all."""
    np.random.seed(seed)
    n = i64[NUM_PLAYERS]
    cu64, ci8, ci64 = u64.copy(), i8.copy(), i64.copy()
    mask = np.zeros(K.A_DISCARD_BASE + NUM_CARDS, dtype=np.int8)
    cards = np.zeros(G.NUM_CARD_SETS, dtype=np.uint64)
    stairs = np.zeros(NUM_CARDS, dtype=np.int8)
    scalars = np.zeros(G.NUM_SCALARS, dtype=np.int64)
    melds = np.zeros((MAX_MELDS, G.NUM_MELD_COLUMNS), dtype=np.int8)
    bits = np.zeros(MAX_MELDS, dtype=np.uint64)
    ws = G.workspace()
    moves = 0
    for k in range(points.shape[0]):
        cu64[:] = u64
        ci8[:] = i8
        ci64[:] = i64
        K.legal_mask(cu64, ci8, ci64, tab, meld_bits, mask)
        moves += _play_to_end(
            cu64, ci8, ci64, tab, meld_bits, mask, policies, row, settings, cards, stairs, scalars, melds, bits, ws
        )
        for s in range(n):
            points[k, s] = ci64[DEAL_POINTS + s]
    return moves


@jit
def redeal(u64, i8, i64, tab, meld_bits, observer, seed, tries) -> bool:
    """Deal the cards ``observer`` cannot see afresh (the state's arrays changed in place): each
    other seat keeps its publicly known cards (RULES §4.1) and gets the rest of its hand from the
    unseen cards, the stock the others in random order. When another seat is to move with a
    must-use card (RULES §4.2), deals it could not play it from are dealt again, at most ``tries``
    times in all. Numba's generator is seeded with ``seed`` first (``seed < 0``: not reseeded).

    :return: whether a deal was found (the arrays hold the last one tried either way).
    """
    if seed >= 0:
        np.random.seed(seed)
    n = i64[NUM_PLAYERS]
    need = np.zeros(4, dtype=np.int64)
    hidden = _ZERO
    for s in range(n):
        if s != observer:
            secret = u64[HAND + s] & ~u64[KNOWN + s]
            need[s] = K.count(secret)
            hidden |= secret
    total = K.count(hidden) + i64[STOCK_LEN]
    pool = np.empty(total, dtype=np.int8)
    j = 0
    for c in range(NUM_CARDS):
        if K.has(hidden, c):
            pool[j] = c
            j += 1
    for k in range(i64[STOCK_LEN]):
        pool[j + k] = i8[STOCK + k]
    mover, must_use = i64[CURRENT], i64[MUST_USE]
    for _ in range(tries):
        np.random.shuffle(pool)
        j = 0
        for s in range(n):
            if s != observer:
                hand = u64[KNOWN + s]
                for k in range(need[s]):
                    hand |= K.bit(pool[j + k])
                u64[HAND + s] = hand
                j += need[s]
        for k in range(i64[STOCK_LEN]):
            i8[STOCK + k] = pool[j + k]
        if must_use < 0 or mover == observer or K.can_play(u64, tab, meld_bits, must_use, u64[HAND + mover]):
            return True
    return False


# ---------------------------------------------------------------------------------- Python face
def seat_policies(policy: str | list[str], num_players: int) -> np.ndarray:
    """The policy of every seat as the kernels read it (int64 (num_players,)).

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
    state: GameState, policy: str | list[str] = "greedy", count: int = 1, seed: int = 0, greedy: Any = None
) -> np.ndarray:
    """Play ``count`` playouts of ``state`` (left unchanged) to the end of its deal.

    :param state: a position inside a deal (RULES §4).
    :param policy: ``"greedy"`` or ``"random"`` at every seat, or one per seat.
    :param count: playouts.
    :param seed: seeds the random moves and reshuffles (the same seed, the same playouts).
    :param greedy: the :class:`agents.GreedyAgent` whose settings the greedy seats use (default:
        the default heuristic); the rules are the state's.
    :return: int64 (count, num_players): each playout's deal points per seat (RULES §6).
    :raises ValueError: for a deal that is over, or a bad policy.
    """
    from agents.greedy import GreedyAgent

    if state.deal_over:
        raise ValueError("the deal is over: there is nothing to play out")
    u64, i8, i64 = state.arrays()
    tab, meld_bits = state.tables
    agent = greedy if greedy is not None else GreedyAgent(rules=state.rules)
    points = np.zeros((count, state.num_players), dtype=np.int64)
    playouts(
        u64, i8, i64, tab, meld_bits, seat_policies(policy, state.num_players), G.rules_row(state.rules),
        agent._current_settings(), seed, points,
    )  # fmt: skip
    return points


@jit
def determinized_playouts(u64, i8, i64, tab, meld_bits, observer, policies, row, settings, seed, points) -> int:
    """``points.shape[0]`` playouts, each from a fresh determinization of the state for
    ``observer`` (:func:`redeal` of a copy; the state is left unchanged), each seat playing its
    policy; deal points per seat in ``points[k, :n]``. Numba's generator is seeded with ``seed``
    first. Returns the moves played in all (the inner loop of flat Monte Carlo search)."""
    np.random.seed(seed)
    n = i64[NUM_PLAYERS]
    cu64, ci8, ci64 = u64.copy(), i8.copy(), i64.copy()
    mask = np.zeros(K.A_DISCARD_BASE + NUM_CARDS, dtype=np.int8)
    cards = np.zeros(G.NUM_CARD_SETS, dtype=np.uint64)
    stairs = np.zeros(NUM_CARDS, dtype=np.int8)
    scalars = np.zeros(G.NUM_SCALARS, dtype=np.int64)
    melds = np.zeros((MAX_MELDS, G.NUM_MELD_COLUMNS), dtype=np.int8)
    bits = np.zeros(MAX_MELDS, dtype=np.uint64)
    ws = G.workspace()
    moves = 0
    for k in range(points.shape[0]):
        cu64[:] = u64
        ci8[:] = i8
        ci64[:] = i64
        redeal(cu64, ci8, ci64, tab, meld_bits, observer, -1, 100)
        K.legal_mask(cu64, ci8, ci64, tab, meld_bits, mask)
        moves += _play_to_end(
            cu64, ci8, ci64, tab, meld_bits, mask, policies, row, settings, cards, stairs, scalars, melds, bits, ws
        )
        for s in range(n):
            points[k, s] = ci64[DEAL_POINTS + s]
    return moves
