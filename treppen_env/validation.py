"""Validation of a state's arrays from outside input: each card once, counters in range, legal
table melds and the turn's fields (RULES §1.1, §3, §4), checked before a kernel runs on them.
Every problem is a ``ValueError`` naming it.
"""

from __future__ import annotations

import numpy as np

from treppen_env.cards import FULL_DECK, NUM_CARDS, NUM_RANKS, bits_to_cards, card_to_str, cards_to_str, make_card
from treppen_env.core import layout
from treppen_env.melds import MAX_RUN, MIN_RUN, run_allowed, run_cards
from treppen_env.rules import Rules


def _rank_bits(rank: int) -> int:
    return sum(1 << make_card(s, rank) for s in range(4))


def validate_arrays(rules: Rules, num_players: int, u64: np.ndarray, i8: np.ndarray, i64: np.ndarray) -> None:
    """Check that ``(u64, i8, i64)`` hold a position of a deal under ``rules`` (RULES §1.1, §3,
    §4) before a kernel runs on them; see :meth:`treppen_env.engine.GameState.validate`.

    :raises ValueError: naming the first problem found.
    """
    n = num_players
    if i64[layout.NUM_PLAYERS] != n:
        raise ValueError(f"the state's arrays are for {i64[layout.NUM_PLAYERS]} players, not {n}")
    if not i64[layout.DEALT]:
        return
    _check_counters(rules, n, i64)
    for s in range(layout.MAX_SEATS):
        _check_seat_bits(n, s, int(u64[layout.HAND + s]), int(u64[layout.KNOWN + s]))
    for i in range(int(i64[layout.NUM_MELDS])):
        check_meld_row(rules, n, i, i8, int(u64[layout.MELD_BITS + i]))
    if not _each_card_once(u64, i8, i64):
        _name_misplaced_card(u64, i8, i64)
    _check_turn_fields(u64, i64)


def _each_card_once(u64: np.ndarray, i8: np.ndarray, i64: np.ndarray) -> bool:
    """Whether the hands, the staircase, the stock and the table melds hold each card exactly once
    (RULES §1.1): the quick test, on bitsets."""
    bits = u64.tolist()
    seen = 0
    for set_bits in (
        *bits[layout.HAND : layout.HAND + layout.MAX_SEATS],
        *bits[layout.MELD_BITS : layout.MELD_BITS + int(i64[layout.NUM_MELDS])],
    ):
        if seen & set_bits:
            return False
        seen |= set_bits
    for start, slot in ((layout.STAIRS, layout.STAIRS_LEN), (layout.STOCK, layout.STOCK_LEN)):
        for card in i8[start : start + i64[slot]].tolist():
            if not 0 <= card < NUM_CARDS or seen >> card & 1:
                return False
            seen |= 1 << card
    return seen == FULL_DECK


def _name_misplaced_card(u64: np.ndarray, i8: np.ndarray, i64: np.ndarray) -> None:
    """Raise the ``ValueError`` that names a card in two places, a card in none or a card index
    that is not a card (RULES §1.1)."""
    places: dict[int, str] = {}

    def put(card: int, where: str) -> None:
        if not 0 <= card < NUM_CARDS:
            raise ValueError(f"{where} holds card index {card}, not a card 0..{NUM_CARDS - 1}")
        if card in places:
            raise ValueError(f"card {card_to_str(card)} is in two places: {places[card]} and {where} (RULES §1.1)")
        places[card] = where

    for s in range(layout.MAX_SEATS):
        for card in bits_to_cards(int(u64[layout.HAND + s])):
            put(card, f"the hand of seat {s}")
    for name, start, slot in (
        ("the staircase", layout.STAIRS, layout.STAIRS_LEN),
        ("the stock", layout.STOCK, layout.STOCK_LEN),
    ):
        for card in i8[start : start + i64[slot]].tolist():
            put(card, name)
    for i in range(int(i64[layout.NUM_MELDS])):
        for card in bits_to_cards(int(u64[layout.MELD_BITS + i])):
            put(card, f"table meld {i}")
    missing = cards_to_str(c for c in range(NUM_CARDS) if c not in places)
    raise ValueError(f"{NUM_CARDS - len(places)} cards are nowhere in the state: {missing} (RULES §1.1)")


def _check_counters(rules: Rules, n: int, i64: np.ndarray) -> None:
    """Seats, phase, turn and the piles' and table's lengths are in range."""
    for name, slot, top in (
        ("dealer", layout.DEALER, n),
        ("seat to move", layout.CURRENT, n),
        ("phase", layout.PHASE, 3),
    ):
        if not 0 <= i64[slot] < top:
            raise ValueError(f"the {name} is {i64[slot]}; expected 0..{top - 1}")
    if not 0 <= i64[layout.TURN] <= rules.max_turns:
        raise ValueError(f"turn {i64[layout.TURN]} is not in 0..max_turns={rules.max_turns} (RULES §6.5)")
    for name, slot, top in (
        ("staircase", layout.STAIRS_LEN, NUM_CARDS),
        ("stock", layout.STOCK_LEN, NUM_CARDS),
        ("table", layout.NUM_MELDS, layout.MAX_MELDS),
    ):
        if not 0 <= i64[slot] <= top:
            raise ValueError(f"the {name} holds {i64[slot]} entries; expected 0..{top}")


def _check_seat_bits(n: int, seat: int, hand: int, known: int) -> int:
    """``seat``'s hand after checking its bitsets: cards only, none for a seat not in play, and
    the publicly known cards in the hand (RULES §4.1)."""
    if (hand | known) & ~FULL_DECK:
        raise ValueError(f"seat {seat}'s card bitsets have bits above card {NUM_CARDS - 1}")
    if seat >= n and hand | known:
        raise ValueError(f"seat {seat} is not in play ({n} players) but holds cards")
    if known & ~hand:
        stray = cards_to_str(bits_to_cards(known & ~hand))
        raise ValueError(f"seat {seat} is known to hold {stray}, which are not in its hand (RULES §4.1)")
    return hand


def check_meld_row(rules: Rules, n: int, i: int, i8: np.ndarray, bits: int) -> int:
    """The cards of table meld ``i`` after checking its row is a legal meld (RULES §3.1-3.2)."""
    owner, kind, suit, low, length = i8[
        layout.MELDS + layout.MELD_COLS * i : layout.MELDS + layout.MELD_COLS * (i + 1)
    ].tolist()
    where = f"table meld {i} (owner {owner}, kind {kind}, suit {suit}, low {low}, length {length})"
    if not 0 <= owner < n:
        raise ValueError(f"{where}: the owner is not a seat 0..{n - 1}")
    if not 0 <= low < NUM_RANKS:
        raise ValueError(f"{where}: the low rank is not 0..{NUM_RANKS - 1}")
    if kind == layout.SET:
        ok = suit == -1 and 3 <= length <= 4 and bits & ~_rank_bits(low) == 0 and bits.bit_count() == length
        if not ok:
            raise ValueError(
                f"{where}: not a set of 3 or 4 cards of one rank (RULES §3.1): {cards_to_str(bits_to_cards(bits))}"
            )
    elif kind == layout.RUN:
        if not (0 <= suit < 4 and MIN_RUN <= length <= MAX_RUN and run_allowed(rules, low, length)):
            raise ValueError(f"{where}: not a run allowed by these rules (RULES §3.2)")
        if bits != sum(1 << c for c in run_cards(suit, low, length)):
            raise ValueError(f"{where}: its cards {cards_to_str(bits_to_cards(bits))} are not the run it describes")
    else:
        raise ValueError(f"{where}: the kind is not {layout.SET} (set) or {layout.RUN} (run)")
    return bits


def _check_turn_fields(u64: np.ndarray, i64: np.ndarray) -> None:
    """The must-use and banned cards are in the mover's hand, in the meld phase (RULES §4.2,
    §4.4); a turn starts with a staircase card (§4.6)."""
    phase, hand = int(i64[layout.PHASE]), int(u64[layout.HAND + int(i64[layout.CURRENT])])
    if phase == layout.DRAW and i64[layout.STAIRS_LEN] == 0:
        raise ValueError("a turn starts with an empty staircase (RULES §4.6)")
    for name, slot in (("must-use card", layout.MUST_USE), ("banned card", layout.BANNED)):
        card = int(i64[slot])
        if card != -1 and (phase != layout.MELD or not 0 <= card < NUM_CARDS or not hand >> card & 1):
            text = card_to_str(card) if 0 <= card < NUM_CARDS else str(card)
            raise ValueError(
                f"the {name} is {text}: it must be a card in the mover's hand in the meld phase, "
                "or -1 for none (RULES §4.2, §4.4)"
            )
