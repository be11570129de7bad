"""Cards, card sets and the text notation (RULES §1, docs/ARCHITECTURE.md "Cards and notation").

A card is an ``int`` in 0..51: ``card = 13 * suit + rank`` with suits S, H, D, C and ranks
A, 2, ..., 10, J, Q, K (rank 0 is the ace). A set of cards is a Python ``int`` used as a 52-bit
bitset (bit ``card`` set when the card is in the set), so set algebra is one machine operation.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

NUM_SUITS = 4
NUM_RANKS = 13
NUM_CARDS = NUM_SUITS * NUM_RANKS
ACE = 0

SUITS = "SHDC"
RANKS = "A23456789TJQK"
_SUIT_ALIASES = {"♠": "S", "♥": "H", "♦": "D", "♣": "C"}

#: Face value in points of each rank in hand or outside a run, ace excluded (RULES §1.3).
RANK_POINTS = (15, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10)
#: Value in points of a card left in hand at the end of a deal (ace 15, RULES §3.3).
HAND_POINTS = tuple(RANK_POINTS[c % NUM_RANKS] for c in range(NUM_CARDS))

FULL_DECK = (1 << NUM_CARDS) - 1


def make_card(suit: int, rank: int) -> int:
    """Card index of ``rank`` (0 = ace .. 12 = king) in ``suit`` (0 = S .. 3 = C)."""
    return NUM_RANKS * suit + rank


def suit_of(card: int) -> int:
    """Suit index 0..3 (S, H, D, C) of ``card``."""
    return card // NUM_RANKS


def rank_of(card: int) -> int:
    """Rank index 0..12 (A .. K) of ``card``."""
    return card % NUM_RANKS


def card_to_str(card: int) -> str:
    """Two-character text of ``card``, e.g. ``"QH"``, ``"TS"``.

    :raises ValueError: if ``card`` is not in 0..51.
    """
    if not 0 <= card < NUM_CARDS:
        raise ValueError(f"card index {card!r} is not in 0..{NUM_CARDS - 1}")
    return RANKS[card % NUM_RANKS] + SUITS[card // NUM_RANKS]


def parse_card(text: str | int) -> int:
    """Card index of ``text`` such as ``"QH"``, ``"10s"``, ``"T♠"``; an ``int`` is checked and kept.

    :raises ValueError: naming the text when it is not a card.
    """
    if hasattr(text, "__index__") and not isinstance(text, bool):  # int or NumPy integer
        card = operator.index(text)
        card_to_str(card)
        return card
    if not isinstance(text, str):
        raise ValueError(f"not a card: {text!r} (expected text such as 'QH' or an index 0..51)")
    s = text.strip().upper()
    suit = _SUIT_ALIASES.get(s[-1:], s[-1:])
    rank = s[:-1]
    if rank == "10":
        rank = "T"
    if len(rank) != 1 or rank not in RANKS or suit not in SUITS or not suit:
        raise ValueError(f"not a card: {text!r} (rank A 2-9 T/10 J Q K followed by suit S H D C or ♠ ♥ ♦ ♣)")
    return make_card(SUITS.index(suit), RANKS.index(rank))


def parse_deck(deck: Sequence[int | str]) -> list[int]:
    """Card indices of ``deck`` (52 card strings or indices, top first; RULES §1.1, §2).

    :raises ValueError: when the deck is not exactly the 52 distinct cards, naming what is wrong.
    """
    cards = [parse_card(c) for c in deck]
    if len(cards) != NUM_CARDS or len(set(cards)) != NUM_CARDS:
        dupes = sorted(c for c, k in Counter(cards).items() if k > 1)
        absent = sorted(set(range(NUM_CARDS)) - set(cards))
        raise ValueError(
            f"a deck must hold each of the 52 cards exactly once; got {len(cards)} cards"
            + (f", repeated: {' '.join(map(card_to_str, dupes))}" if dupes else "")
            + (f", missing: {' '.join(map(card_to_str, absent))}" if absent else "")
        )
    return cards


def cards_to_bits(cards: Iterable[int]) -> int:
    """Bitset of ``cards``."""
    bits = 0
    for c in cards:
        bits |= 1 << int(c)  # int(): a NumPy integer would turn the bitset into a fixed-width NumPy value
    return bits


def bits_to_cards(bits: int) -> Iterator[int]:
    """Cards of bitset ``bits`` in increasing index order."""
    while bits:
        low = bits & -bits
        yield low.bit_length() - 1
        bits ^= low


_BYTE_FLAGS = [bytes(b >> i & 1 for i in range(8)) for b in range(256)]


def card_flags(bits: int) -> bytes:
    """52 bytes, byte ``card`` 1 when ``card`` is in the bitset ``bits`` and 0 otherwise (for
    writing a card set into a NumPy row in one assignment)."""
    return b"".join([_BYTE_FLAGS[b] for b in bits.to_bytes(7, "little")])[:NUM_CARDS]


def hand_points(bits: int, ace: int = 15) -> int:
    """Points of the cards in ``bits`` when left in hand, an ace counting ``ace`` (RULES §3.3, §6.2)."""
    return sum(ace if c % NUM_RANKS == ACE else HAND_POINTS[c] for c in bits_to_cards(bits))


def cards_to_str(cards: Iterable[int]) -> str:
    """Space-separated text of ``cards`` in the given order."""
    return " ".join(card_to_str(c) for c in cards)
