"""The greedy heuristic's reader of observations: the input layout of
:mod:`treppen_env.agent_core.greedy_kernels` filled from an observation vector (inside a kernel, for
:class:`treppen.agents.GreedyAgent`, the heuristic features and the search's beliefs) or from a decoded
view (:func:`treppen_env.observation.decode`).

It reads only the observation, which holds only what its player may see (docs/ARCHITECTURE.md
"Observations"): the melds come out in the observation's order, sets by rank, then runs by their
low-end card.
"""

from __future__ import annotations

import numpy as np

from treppen_env.agent_core.greedy_kernels import (
    _ZERO,
    BANNED,
    FITS,
    HAND,
    HAND_SIZES,
    KIND_RUN,
    KIND_SET,
    KNOWN,
    LAID_BEFORE,
    M_KIND,
    M_LENGTH,
    M_LOW,
    M_OWNER,
    M_SUIT,
    MUST_USE,
    NUM_PLAYERS,
    NUM_TABLE_MELDS,
    PHASE,
    STAIRS_LEN,
    STOCK,
    Inputs,
    empty_inputs,
    greedy_action,
    must_use_evidence,
)
from treppen_env.agent_core.plan_value import UP
from treppen_env.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS, cards_to_bits, rank_of, suit_of
from treppen_env.core.bits import bit
from treppen_env.core.cache import kernel
from treppen_env.melds import MAX_RUN
from treppen_env.observation import HAND_SCALE, OBS_SIZE, SLICES, PublicView

_TABLE_COLS = 7
_OWNER_COLS = 4
# Observation offsets (treppen_env.observation.LAYOUT).
_O_HAND = SLICES["hand"].start
_O_STAIRS = SLICES["staircase"].start
_O_OWNER = SLICES["meld_owner"].start
_O_TABLE = SLICES["table"].start
_O_KNOWN = SLICES["known"].start
_O_MUST_USE = SLICES["must_use"].start
_O_BANNED = SLICES["banned"].start
_O_HAND_SIZES = SLICES["hand_sizes"].start
_O_STOCK = SLICES["stock_size"].start
_O_PHASE = SLICES["phase"].start
_O_SEATS = SLICES["seats"].start
_O_LAID = SLICES["laid_before"].start


# ---------------------------------------------------------------------- observation
@kernel
def read_observation(obs: np.ndarray, inputs: Inputs) -> None:
    """Fill the input layout ``inputs`` from an observation vector (float32 (969,),
    treppen_env.observation.LAYOUT): what :func:`treppen_env.observation.decode` reads, melds in
    its order (sets by rank, runs by their low-end card; melds never merge, RULES §3.5)."""
    cards, stairs, scalars = inputs.cards, inputs.stairs, inputs.scalars
    n = 0
    for k in range(4):
        if obs[_O_SEATS + k] != 0.0:
            n += 1
    scalars[NUM_PLAYERS] = n
    cards[HAND] = _obs_bits(obs, _O_HAND, 1)
    for k in range(3):
        cards[KNOWN + k] = _obs_bits(obs, _O_KNOWN + k * NUM_CARDS, 1) if k < n - 1 else _ZERO
    for t in range(3):
        cards[FITS + t] = _obs_bits(obs, _O_TABLE + 4 + t, _TABLE_COLS)
    scalars[STAIRS_LEN] = _obs_stairs(obs, stairs)
    scalars[STOCK] = int(np.rint(np.float64(obs[_O_STOCK]) * NUM_CARDS))
    phase = 0
    for k in range(3):
        if obs[_O_PHASE + k] > obs[_O_PHASE + phase]:
            phase = k
    scalars[PHASE] = phase
    scalars[MUST_USE] = _obs_card(obs, _O_MUST_USE)
    scalars[BANNED] = _obs_card(obs, _O_BANNED)
    scalars[LAID_BEFORE] = 1 if obs[_O_LAID] > 0 else 0
    for k in range(4):
        scalars[HAND_SIZES + k] = int(np.rint(np.float64(obs[_O_HAND_SIZES + k]) * HAND_SCALE)) if k < n else 0
    scalars[NUM_TABLE_MELDS] = _obs_melds(obs, inputs.melds, inputs.meld_bits)


@kernel
def _obs_bits(obs: np.ndarray, start: int, stride: int) -> np.uint64:
    """Bitset of the cards ``c`` (RULES §1.1) whose entry ``obs[start + stride * c]`` is nonzero."""
    bits = _ZERO
    for c in range(NUM_CARDS):
        if obs[start + stride * c] != 0.0:
            bits |= bit(c)
    return bits


@kernel
def _obs_card(obs: np.ndarray, start: int) -> int:
    """The first card whose entry from ``start`` is nonzero, or -1 (the must-use card, RULES §4.2,
    or the banned card, §4.4)."""
    for c in range(NUM_CARDS):
        if obs[start + c] != 0.0:
            return c
    return -1


@kernel
def _obs_stairs(obs: np.ndarray, stairs: np.ndarray) -> int:
    """Fill the staircase bottom to top from the depths (top card depth 1/52, RULES §4.1); its length."""
    length = 0
    for c in range(NUM_CARDS):
        if obs[_O_STAIRS + c] != 0.0:
            length += 1
    for c in range(NUM_CARDS):
        x = obs[_O_STAIRS + c]
        if x != 0.0:
            stairs[length - int(np.rint(np.float64(x) * NUM_CARDS))] = c
    return length


@kernel
def _obs_melds(obs: np.ndarray, melds: np.ndarray, meld_bits: np.ndarray) -> int:
    """Fill the meld table from the ``table`` and ``meld_owner`` pieces (RULES §3, §3.5); the
    number of melds."""
    m = 0
    for rank in range(NUM_RANKS):  # sets by rank
        bits = _ZERO
        count = 0
        first = -1
        for s in range(NUM_SUITS):
            c = NUM_RANKS * s + rank
            if obs[_O_TABLE + c * _TABLE_COLS] != 0.0:
                bits |= bit(c)
                count += 1
                if first < 0:
                    first = c
        if count:
            melds[m, M_OWNER] = _owner(obs, first)
            melds[m, M_KIND] = KIND_SET
            melds[m, M_SUIT] = -1
            melds[m, M_LOW] = rank
            melds[m, M_LENGTH] = count
            meld_bits[m] = bits
            m += 1
    for c in range(NUM_CARDS):  # runs by low-end card, walked up to their high end
        if obs[_O_TABLE + c * _TABLE_COLS + 2] == 0.0:
            continue
        bits = bit(c)
        cur = c
        count = 1
        while obs[_O_TABLE + cur * _TABLE_COLS + 3] == 0.0 and count < MAX_RUN:
            cur = UP[cur]
            bits |= bit(cur)
            count += 1
        melds[m, M_OWNER] = _owner(obs, c)
        melds[m, M_KIND] = KIND_RUN
        melds[m, M_SUIT] = c // NUM_RANKS
        melds[m, M_LOW] = c % NUM_RANKS
        melds[m, M_LENGTH] = count
        meld_bits[m] = bits
        m += 1
    return m


@kernel
def _owner(obs: np.ndarray, card: int) -> int:
    """Relative seat that laid the meld holding ``card`` (the ``meld_owner`` piece, RULES §5.1)."""
    best = 0
    for k in range(1, _OWNER_COLS):
        if obs[_O_OWNER + card * _OWNER_COLS + k] > obs[_O_OWNER + card * _OWNER_COLS + best]:
            best = k
    return best


def observation_inputs(obs: np.ndarray) -> Inputs:
    """The input layout (cards, stairs, scalars, melds, meld_bits) read from an observation vector.

    :raises ValueError: when ``obs`` does not have shape (OBS_SIZE,).
    """
    obs = np.asarray(obs, dtype=np.float32)
    if obs.shape != (OBS_SIZE,):
        raise ValueError(f"observation has shape {obs.shape}; expected ({OBS_SIZE},)")
    inputs = empty_inputs()
    read_observation(obs, inputs)
    return inputs


@kernel
def observation_action(
    obs: np.ndarray, mask: np.ndarray, tables: np.ndarray, index: int, infer: bool, settings: np.ndarray
) -> tuple[int, bool]:
    """The greedy action (RULES §4) from an observation vector and mask, in one kernel.

    ``tables``: int64 (k, TAB_SIZE) rules tables (:func:`treppen_env.core.tables.rules_table`);
    table ``index`` is used, or table 1 when
    ``infer`` and the position shows the must-use rule (:func:`must_use_evidence`). Returns
    (action or -1, evidence).
    """
    inputs = empty_inputs()
    read_observation(obs, inputs)
    evidence = must_use_evidence(inputs.scalars, mask)
    if infer and evidence:
        index = 1
    action = greedy_action(inputs, mask, tables[index], settings)
    return action, evidence


def view_inputs(view: PublicView, table: np.ndarray) -> Inputs:
    """The input layout from a decoded observation (:func:`treppen_env.observation.decode`, or a
    view built from a state) and its ``table`` piece (float32 (52, 7))."""
    inputs = empty_inputs()
    cards, stairs, scalars = inputs.cards, inputs.stairs, inputs.scalars
    melds, meld_bits = inputs.melds, inputs.meld_bits
    cards[HAND] = cards_to_bits(view.hand)
    for k, known in enumerate(view.known):
        cards[KNOWN + k] = cards_to_bits(known)
    fits = np.packbits(np.asarray(table)[:, 4:7].T != 0, axis=1, bitorder="little")
    for t in range(3):
        cards[FITS + t] = int.from_bytes(fits[t].tobytes(), "little")
    stairs[: len(view.staircase)] = view.staircase
    scalars[NUM_PLAYERS] = view.num_players
    scalars[STAIRS_LEN] = len(view.staircase)
    scalars[STOCK] = view.stock_size
    scalars[PHASE] = ("draw", "meld", "deal_over").index(view.phase)
    scalars[MUST_USE] = -1 if view.must_use is None else view.must_use
    scalars[BANNED] = -1 if view.banned is None else view.banned
    scalars[LAID_BEFORE] = bool(view.laid_before[0])
    scalars[NUM_TABLE_MELDS] = len(view.melds)
    scalars[HAND_SIZES : HAND_SIZES + view.num_players] = view.hand_sizes
    for i, meld in enumerate(view.melds):
        first = meld["cards"][0]
        is_set = meld["kind"] == "set"
        melds[i] = (
            meld["owner"],
            KIND_SET if is_set else KIND_RUN,
            -1 if is_set else suit_of(first),
            rank_of(first),
            len(meld["cards"]),
        )
        meld_bits[i] = cards_to_bits(meld["cards"])
    return inputs
