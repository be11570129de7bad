"""Cards and their text notation (RULES §1, docs/ARCHITECTURE.md "Cards and notation")."""

from __future__ import annotations

import numpy as np
import pytest

from treppen_env.cards import (
    FULL_DECK,
    HAND_POINTS,
    NUM_CARDS,
    RANK_POINTS,
    bits_to_cards,
    card_flags,
    card_to_str,
    cards_to_bits,
    cards_to_str,
    hand_points,
    make_card,
    parse_card,
    parse_deck,
    rank_of,
    suit_of,
)


@pytest.mark.parametrize(
    ("text", "index"),
    [
        ("AS", 0),
        ("2S", 1),
        ("TS", 9),
        ("KS", 12),
        ("AH", 13),
        ("QH", 24),
        ("7D", 32),
        ("AC", 39),
        ("KC", 51),
    ],
)
def test_index_is_13_suit_plus_rank_rules_1_1(text: str, index: int) -> None:
    """RULES §1.1, docs/ARCHITECTURE.md "Cards and notation": card = 13 * suit + rank, suits S H D C, ranks A 2 .. K."""
    assert parse_card(text) == index
    assert card_to_str(index) == text
    assert make_card(suit_of(index), rank_of(index)) == index


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10♠", "TS"),
        ("10S", "TS"),
        ("10s", "TS"),
        ("ts", "TS"),
        ("qh", "QH"),
        ("Q♥", "QH"),
        ("a♦", "AD"),
        ("7♣", "7C"),
        (" kc ", "KC"),
        ("T♠", "TS"),
    ],
)
def test_parse_aliases_and_case_rules_1_1(text: str, expected: str) -> None:
    """docs/ARCHITECTURE.md "Cards and notation": `10` for T, suit symbols, case-insensitive parsing."""
    assert card_to_str(parse_card(text)) == expected


def test_every_card_round_trips_rules_1_1() -> None:
    """RULES §1.1: 52 distinct cards, each written and read back to itself."""
    texts = [card_to_str(c) for c in range(NUM_CARDS)]
    assert len(set(texts)) == NUM_CARDS
    assert [parse_card(t) for t in texts] == list(range(NUM_CARDS))
    assert [parse_card(t.lower()) for t in texts] == list(range(NUM_CARDS))


@pytest.mark.parametrize("text", ["", "X", "1S", "11H", "QX", "QHH", "10", "S", "AJ", "♠", "0S"])
def test_bad_text_raises_naming_it_rules_1_1(text: str) -> None:
    """docs/ARCHITECTURE.md "Cards and notation": bad text raises ValueError naming the text."""
    with pytest.raises(ValueError, match="not a card") as info:
        parse_card(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("value", [-1, 52, 100])
def test_bad_index_raises_rules_1_1(value: int) -> None:
    """RULES §1.1: indices are 0..51 only."""
    with pytest.raises(ValueError, match=str(value)):
        card_to_str(value)
    with pytest.raises(ValueError, match=str(value)):
        parse_card(value)


def test_int_and_non_text_input_rules_1_1() -> None:
    """docs/ARCHITECTURE.md "Cards and notation": an index is accepted as is; other objects raise ValueError."""
    assert parse_card(24) == 24
    with pytest.raises(ValueError, match="not a card"):
        parse_card(True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a card"):
        parse_card(2.0)  # type: ignore[arg-type]


def test_bitsets_rules_1_1() -> None:
    """Card sets are 52-bit ints; conversion keeps the cards, in index order."""
    cards = [parse_card(t) for t in ("KC", "AS", "7D", "QH")]
    bits = cards_to_bits(cards)
    assert bits == (1 << 51) | 1 | (1 << 32) | (1 << 24)
    assert list(bits_to_cards(bits)) == [0, 24, 32, 51]
    assert list(bits_to_cards(FULL_DECK)) == list(range(NUM_CARDS))
    assert cards_to_str(cards) == "KC AS 7D QH"


def test_card_values_rules_1_3() -> None:
    """RULES §1.3: 2-10 face value, J Q K 10; in hand an ace is 15 (§3.3)."""
    assert RANK_POINTS == (15, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10)
    assert [HAND_POINTS[parse_card(t)] for t in ("AS", "2H", "9D", "TC", "JS", "QH", "KD")] == [
        15,
        2,
        9,
        10,
        10,
        10,
        10,
    ]
    assert hand_points(cards_to_bits(parse_card(t) for t in ("AS", "AH", "5C", "KD"))) == 45
    assert hand_points(cards_to_bits([parse_card("AS"), parse_card("5C")]), ace=1) == 6
    # The whole pack: 4 * (15 + 2 + ... + 10 + 30) = 4 * 99.
    assert hand_points(FULL_DECK) == 396


def test_parse_card_takes_numpy_integers_rules_1_1() -> None:
    """A deck may come as NumPy integers (e.g. ``rng.permutation(52)``); bools are not cards."""
    assert parse_card(np.int64(51)) == 51 and type(parse_card(np.int64(51))) is int
    with pytest.raises(ValueError, match="not a card"):
        parse_card(True)
    with pytest.raises(ValueError, match="52"):
        parse_card(np.int64(52))


def test_parse_deck_reads_text_and_indices_rules_1_1_2() -> None:
    """RULES §1.1, §2: a deck is the 52 cards, top first, as text or indices (mixed is fine)."""
    text = [card_to_str(c) for c in range(NUM_CARDS)][::-1]
    assert parse_deck(text) == list(range(NUM_CARDS))[::-1]
    assert parse_deck([*text[:2], *range(49, -1, -1)]) == list(range(NUM_CARDS))[::-1]
    assert parse_deck(np.arange(NUM_CARDS)) == list(range(NUM_CARDS))


def test_parse_deck_names_repeated_and_missing_cards() -> None:
    deck = [card_to_str(c) for c in range(NUM_CARDS)]
    with pytest.raises(ValueError, match=r"got 52 cards, repeated: 2S, missing: AS$"):
        parse_deck(["2S", *deck[1:]])
    with pytest.raises(ValueError, match=r"got 51 cards, missing: KC$"):
        parse_deck(deck[:-1])
    with pytest.raises(ValueError, match="not a card: 'ZZ'"):
        parse_deck(["ZZ", *deck[1:]])


def test_card_flags_marks_each_card_of_a_bitset() -> None:
    assert card_flags(0) == bytes(52)
    assert card_flags(FULL_DECK) == bytes([1] * 52)
    cards = [0, 7, 8, 13, 31, 40, 51]
    assert [i for i, f in enumerate(card_flags(cards_to_bits(cards))) if f] == cards
    assert len(card_flags(cards_to_bits([51]))) == NUM_CARDS
