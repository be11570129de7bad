"""Melds as pure functions on card bitsets: the candidate table, legality and values (RULES §3, §5).

The 637 candidate melds are listed in the order of the action space (docs/ARCHITECTURE.md "Actions"): first the
65 sets (rank r x 5: the four 3-card sets omitting S, H, D, C in that order, then the 4-card set),
then the 572 runs (suit x low-end rank x length 3..13). A run with low-end rank ``low`` and length
``n`` holds ranks ``low, low+1, ... (mod 13)`` of one suit; it wraps when ``low + n - 1 > 13``
(past the ace above the king), and then it turns the corner (RULES §3.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from treppen_env.cards import ACE, NUM_RANKS, NUM_SUITS, RANK_POINTS, make_card
from treppen_env.rules import Rules

MIN_RUN = 3
MAX_RUN = NUM_RANKS
NUM_SET_MELDS = NUM_RANKS * (NUM_SUITS + 1)
NUM_RUN_LENGTHS = MAX_RUN - MIN_RUN + 1
NUM_RUN_MELDS = NUM_SUITS * NUM_RANKS * NUM_RUN_LENGTHS
NUM_MELDS = NUM_SET_MELDS + NUM_RUN_MELDS


@dataclass(frozen=True)
class MeldShape:
    """One candidate meld. ``kind`` is ``"set"`` or ``"run"``; ``cards`` run from low to high end.

    For a set ``suit`` is -1 and ``low`` is its rank; for a run ``low`` is the low-end rank.
    """

    kind: str
    suit: int
    low: int
    length: int
    cards: tuple[int, ...]
    bits: int


def set_index(rank: int, omitted_suit: int | None) -> int:
    """Candidate index of the set of ``rank`` without ``omitted_suit`` (``None``: all four suits)."""
    return rank * (NUM_SUITS + 1) + (NUM_SUITS if omitted_suit is None else omitted_suit)


def run_index(suit: int, low: int, length: int) -> int:
    """Candidate index of the run of ``suit`` from low-end rank ``low`` with ``length`` cards."""
    return NUM_SET_MELDS + (suit * NUM_RANKS + low) * NUM_RUN_LENGTHS + length - MIN_RUN


def run_cards(suit: int, low: int, length: int) -> tuple[int, ...]:
    """Cards of a run from its low end to its high end."""
    return tuple(make_card(suit, (low + i) % NUM_RANKS) for i in range(length))


def _build() -> tuple[MeldShape, ...]:
    shapes: list[MeldShape] = []
    for rank in range(NUM_RANKS):
        for omitted in (*range(NUM_SUITS), None):
            cards = tuple(make_card(s, rank) for s in range(NUM_SUITS) if s != omitted)
            shapes.append(MeldShape("set", -1, rank, len(cards), cards, _bits(cards)))
    for suit in range(NUM_SUITS):
        for low in range(NUM_RANKS):
            for length in range(MIN_RUN, MAX_RUN + 1):
                cards = run_cards(suit, low, length)
                shapes.append(MeldShape("run", suit, low, length, cards, _bits(cards)))
    return tuple(shapes)


def _bits(cards: tuple[int, ...]) -> int:
    return sum(1 << c for c in cards)


#: Every candidate meld, indexed as in the action space.
MELDS: tuple[MeldShape, ...] = _build()
#: Card bitsets of the candidates, shape (637,), dtype uint64, for vectorised legality tests.
MELD_BITS = np.array([m.bits for m in MELDS], dtype=np.uint64)


def run_allowed(rules: Rules, low: int, length: int) -> bool:
    """Whether a run from low-end rank ``low`` with ``length`` cards is legal (RULES §3.2).

    Without ``corner_runs`` the ace is either the lowest card (rank 0 at the low end) or the
    highest (directly after the king), so the run may not pass the ace: ``low + length <= 14``.
    """
    return _run_allowed(rules.corner_runs, low, length)


def _run_allowed(corner_runs: bool, low: int, length: int) -> bool:
    return MIN_RUN <= length <= MAX_RUN and (corner_runs or low + length - 1 <= NUM_RANKS)


@lru_cache(maxsize=16)
def allowed_melds(rules: Rules) -> np.ndarray:
    """Candidates legal as melds under ``rules`` (shape (637,), dtype bool; RULES §3.1-3.2)."""
    return np.array([m.kind == "set" or run_allowed(rules, m.low, m.length) for m in MELDS])


def ace_run_value(rules: Rules, position: int, length: int) -> int:
    """Points of an ace at index ``position`` (0 = low end) of a run of ``length`` (RULES §3.3).

    Lowest (before the 2): ``ace_low``; highest (after the K): ``ace_high``; else ``ace_middle``.
    """
    if position == 0:
        return rules.ace_low
    if position == length - 1:
        return rules.ace_high
    return rules.ace_middle


@lru_cache(maxsize=16)
def meld_values(rules: Rules) -> tuple[int, ...]:
    """Points booked for laying each candidate meld under ``rules`` (RULES §3.3-3.4, §5.1)."""
    values = []
    for m in MELDS:
        if m.kind == "set":
            values.append(len(m.cards) * (rules.ace_set if m.low == ACE else RANK_POINTS[m.low]))
            continue
        total = 0
        for i, card in enumerate(m.cards):
            rank = card % NUM_RANKS
            total += ace_run_value(rules, i, m.length) if rank == ACE else RANK_POINTS[rank]
        values.append(total)
    return tuple(values)


def layoff_value(rules: Rules, card: int, target: int) -> int:
    """Points booked for laying off ``card`` onto ``target`` (RULES §5.2).

    ``target`` is 0 (a set), 1 (the low end of a run) or 2 (the high end). A laid-off ace books by
    the place it takes: onto a set ``ace_set``, before a 2 ``ace_low``, after a K ``ace_high``.
    """
    rank = card % NUM_RANKS
    if rank != ACE:
        return RANK_POINTS[rank]
    return (rules.ace_set, rules.ace_low, rules.ace_high)[target]
