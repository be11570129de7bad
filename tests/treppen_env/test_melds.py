"""Meld candidates, legality and values as pure functions (RULES §3, §5.2)."""

from __future__ import annotations

import numpy as np
import pytest

from treppen_env.actions import LAYOFF_BASE, MELD_BASE, NUM_ACTIONS, parse_action
from treppen_env.cards import FULL_DECK, cards_to_bits, parse_card
from treppen_env.core import kernels
from treppen_env.core.tables import rules_table
from treppen_env.melds import (
    MELD_BITS,
    MELDS,
    NUM_MELDS,
    NUM_RUN_MELDS,
    NUM_SET_MELDS,
    allowed_melds,
    layoff_value,
    meld_values,
    run_allowed,
    run_index,
    set_index,
)
from treppen_env.rules import make_rules

TREPPEN = make_rules("treppenromme")
RUM500 = make_rules("rum500")


def meld_of(text: str) -> int:
    """Candidate index of a meld written as card texts, e.g. ``"QH KH AH"``."""
    return parse_action("meld " + text) - MELD_BASE


def value(rules, text: str) -> int:
    return meld_values(rules)[meld_of(text)]


@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("6S 6H 6D 6C", 24),
        ("AS AH AD", 45),
        ("QH KH AH", 30),
        ("QH KH AH 2H", 27),
        ("AH 2H 3H", 6),
        ("5S 6S 7S 8S 9S", 35),
        ("6S 6H 6D", 18),
        ("QH KH AH 2H 3H", 30),
    ],
)
def test_reference_values_rules_3_4(text: str, points: int) -> None:
    """RULES §3.4: every reference value of the treppenromme preset."""
    assert value(TREPPEN, text) == points


@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("AS AH AD AC", 60),  # set: ace 15
        ("JD QD KD AD", 40),  # high: ace 10 after the K
        ("AD 2D 3D 4D", 10),  # low: ace 1 before the 2
        ("KD AD 2D", 17),  # middle: ace 5 turning the corner
        ("JC QC KC AC 2C 3C 4C", 44),  # middle again, further from the corner
    ],
)
def test_ace_values_treppenromme_rules_3_3(text: str, points: int) -> None:
    """RULES §3.3: ace in a set 15, high 10, low 1, middle 5 (treppenromme)."""
    assert value(TREPPEN, text) == points


@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("AS AH AD", 45),
        ("AS AH AD AC", 60),
        ("QH KH AH", 35),  # ace high 15
        ("AH 2H 3H", 6),  # ace low 1
        ("6S 6H 6D 6C", 24),
        ("5S 6S 7S 8S 9S", 35),
    ],
)
def test_ace_values_rum500_rules_3_3(text: str, points: int) -> None:
    """RULES §3.3: rum500 aces count 15 everywhere except 1 as the low card of a run."""
    assert value(RUM500, text) == points


def test_thirteen_card_run_values_rules_3_2_3_3() -> None:
    """RULES §3.2-3.3: a 13-card run is laid with a chosen low end; the ace counts by its place."""
    a_to_k = "AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS"
    two_to_a = "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS"
    six_to_5 = "6S 7S 8S 9S TS JS QS KS AS 2S 3S 4S 5S"
    assert meld_of(a_to_k) == run_index(0, 0, 13)
    assert meld_of(two_to_a) == run_index(0, 1, 13)
    assert meld_of(six_to_5) == run_index(0, 5, 13)
    # 2..10 = 54, J Q K = 30, ace low 1 / high 10 (15 in rum500) / middle 5.
    assert value(TREPPEN, a_to_k) == 85
    assert value(TREPPEN, two_to_a) == 94
    assert value(TREPPEN, six_to_5) == 89
    assert value(RUM500, a_to_k) == 85
    assert value(RUM500, two_to_a) == 99


def test_candidate_table_layout_rules_3_1_3_2() -> None:
    """docs/ARCHITECTURE.md "Actions": 65 sets (rank x omitted suit S H D C, then all four) and 572 runs."""
    assert (NUM_SET_MELDS, NUM_RUN_MELDS, NUM_MELDS) == (65, 572, 637)
    assert len(MELDS) == len(MELD_BITS) == 637
    assert [parse_card(c) for c in ("7H", "7D", "7C")] == list(MELDS[set_index(6, 0)].cards)
    assert MELDS[set_index(6, None)].length == 4
    assert set_index(0, 0) == 0 and set_index(12, None) == 64
    assert run_index(0, 0, 3) == 65 and run_index(3, 12, 13) == 636
    shape = MELDS[run_index(1, 11, 4)]
    assert (shape.kind, shape.suit, shape.low, shape.length) == ("run", 1, 11, 4)
    assert [parse_card(c) for c in ("QH", "KH", "AH", "2H")] == list(shape.cards)
    assert all(int(MELD_BITS[i]) == m.bits for i, m in enumerate(MELDS))
    assert all(m.bits.bit_count() == m.length == len(m.cards) for m in MELDS)


def test_corner_runs_allowed_only_in_treppenromme_rules_3_2() -> None:
    """RULES §3.2: treppenromme runs may turn the corner; rum500 runs may not."""
    assert run_allowed(TREPPEN, 12, 3)  # K-A-2
    assert not run_allowed(RUM500, 12, 3)
    assert run_allowed(RUM500, 11, 3)  # Q-K-A
    assert run_allowed(RUM500, 0, 3)  # A-2-3
    assert not run_allowed(RUM500, 11, 4)  # Q-K-A-2
    assert run_allowed(RUM500, 0, 13) and run_allowed(RUM500, 1, 13)
    assert not run_allowed(RUM500, 2, 13)
    assert not run_allowed(TREPPEN, 0, 2) and not run_allowed(TREPPEN, 0, 14)
    # Sets are always allowed; of the 572 runs, rum500 keeps those that do not pass the ace.
    assert int(allowed_melds(TREPPEN).sum()) == 637
    # Per suit: from the ace 11 lengths (3..13); from rank k = 1..11 lengths 3..14-k (12 - k); none
    # from the king. 11 + 66 = 77 runs per suit.
    assert int(allowed_melds(RUM500).sum()) == 65 + 4 * 77


@pytest.mark.parametrize(
    ("preset", "card", "target", "points"),
    [
        ("treppenromme", "AS", 0, 15),  # onto a set
        ("treppenromme", "AS", 1, 1),  # before a 2
        ("treppenromme", "AS", 2, 10),  # after a K
        ("rum500", "AS", 0, 15),
        ("rum500", "AS", 1, 1),
        ("rum500", "AS", 2, 15),
        ("treppenromme", "2H", 2, 2),
        ("treppenromme", "KH", 1, 10),
        ("rum500", "7C", 0, 7),
    ],
)
def test_layoff_values_rules_5_2(preset: str, card: str, target: int, points: int) -> None:
    """RULES §5.2: a laid-off ace books by the place it takes; other cards their face value."""
    assert layoff_value(make_rules(preset), parse_card(card), target) == points


def melds_within(cards: int, rules) -> list[int]:
    """Candidate indices the engine's meld kernel marks legal within the card set ``cards``."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    kernels.mark_melds(rules_table(rules), np.uint64(cards), -1, mask[MELD_BASE:LAYOFF_BASE])
    return np.flatnonzero(mask[MELD_BASE:LAYOFF_BASE]).tolist()


@pytest.mark.parametrize("rules", [TREPPEN, RUM500], ids=["corner", "no_corner"])
def test_melds_within_equals_the_vectorised_test_rules_3_1_3_2(rules):
    """The engine's meld kernel finds exactly the allowed candidates inside a card set, for random
    hands of every size, whole suits (13-card runs, wrapping runs) and four-of-a-kind ranks."""
    rng = np.random.default_rng(0)
    allowed = allowed_melds(rules)
    hands = [cards_to_bits(rng.choice(52, size=int(rng.integers(0, 30)), replace=False)) for _ in range(3000)]
    hands += [0, FULL_DECK, (1 << 13) - 1, cards_to_bits(range(13, 26)) | cards_to_bits([0, 26, 39])]
    counts = []
    for cards in hands:
        expected = np.flatnonzero(((MELD_BITS & np.uint64(FULL_DECK ^ cards)) == 0) & allowed).tolist()
        found = melds_within(cards, rules)
        assert sorted(found) == expected and len(set(found)) == len(found), hex(cards)
        counts.append(len(found))
    assert max(counts) == int(allowed.sum()) and sum(c > 0 for c in counts) > 1000
    assert sorted(melds_within(cards_to_bits(map(parse_card, "QH KH AH 2H".split())), TREPPEN)) == sorted(
        [meld_of("QH KH AH"), meld_of("KH AH 2H"), meld_of("QH KH AH 2H")]
    )
    assert sorted(melds_within(cards_to_bits(map(parse_card, "QH KH AH 2H".split())), RUM500)) == [meld_of("QH KH AH")]
