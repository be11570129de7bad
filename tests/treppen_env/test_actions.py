"""The Discrete(898) action space: blocks, decoding and text (docs/ARCHITECTURE.md "Actions", RULES §4)."""

from __future__ import annotations

import numpy as np
import pytest

from treppen_env.actions import (
    DISCARD_BASE,
    DRAW,
    LAYOFF_BASE,
    MELD_BASE,
    MELD_RUN_BASE,
    MELD_SET_BASE,
    NUM_ACTIONS,
    Action,
    action_to_str,
    decode,
    encode_discard,
    encode_layoff,
    encode_meld,
    encode_take,
    parse_action,
)
from treppen_env.cards import parse_card
from treppen_env.melds import run_index, set_index


def test_block_offsets_design_actions() -> None:
    """docs/ARCHITECTURE.md "Actions": draw 0, take 1-52, sets 53-117, runs 118-689, lay-offs 690-845,
    discards 846-897."""
    assert (DRAW, MELD_SET_BASE, MELD_RUN_BASE, LAYOFF_BASE, DISCARD_BASE, NUM_ACTIONS) == (
        0,
        53,
        118,
        690,
        846,
        898,
    )
    assert MELD_BASE == MELD_SET_BASE


def test_all_actions_round_trip_rules_4() -> None:
    """Every one of the 898 actions is written as distinct text and read back to itself."""
    texts = [action_to_str(a) for a in range(NUM_ACTIONS)]
    assert len(set(texts)) == NUM_ACTIONS
    assert [parse_action(t) for t in texts] == list(range(NUM_ACTIONS))
    assert [parse_action(t.lower()) for t in texts] == list(range(NUM_ACTIONS))
    assert all(str(decode(a)) == t for a, t in enumerate(texts))


@pytest.mark.parametrize(
    ("index", "action", "text"),
    [
        (0, Action("draw"), "draw"),
        (1, Action("take", depth=1), "take 1"),
        (52, Action("take", depth=52), "take 52"),
        (53, Action("meld", meld=0), "meld AH AD AC"),
        (57, Action("meld", meld=4), "meld AS AH AD AC"),
        (117, Action("meld", meld=64), "meld KS KH KD KC"),
        (118, Action("meld", meld=65), "meld AS 2S 3S"),
        (128, Action("meld", meld=75), "meld AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS"),
        (129, Action("meld", meld=76), "meld 2S 3S 4S"),
        (689, Action("meld", meld=636), "meld KC AC 2C 3C 4C 5C 6C 7C 8C 9C TC JC QC"),
        (690, Action("layoff", card=0, target=0), "layoff AS set"),
        (691, Action("layoff", card=0, target=1), "layoff AS low"),
        (692, Action("layoff", card=0, target=2), "layoff AS high"),
        (845, Action("layoff", card=51, target=2), "layoff KC high"),
        (846, Action("discard", card=0), "discard AS"),
        (897, Action("discard", card=51), "discard KC"),
    ],
)
def test_decode_block_boundaries_design_actions(index: int, action: Action, text: str) -> None:
    """docs/ARCHITECTURE.md "Actions": the first and last index of each block decode as the table says."""
    assert decode(index) == action
    assert action_to_str(index) == text
    assert parse_action(text) == index


@pytest.mark.parametrize("bad", [-1, 898, 1000, 2.5])
def test_decode_out_of_range_raises(bad: object) -> None:
    """Indices outside 0..897 are not actions."""
    with pytest.raises(ValueError, match=r"not in 0\.\.897"):
        decode(bad)  # type: ignore[arg-type]


def test_decode_accepts_numpy_integers() -> None:
    """Gymnasium samples NumPy integers; they decode like ints."""
    assert decode(np.int64(897)) == Action("discard", card=51)


def test_encoders_match_blocks_rules_4_3() -> None:
    """The encode_* helpers land in their blocks; lay-off targets by name or number."""
    assert encode_take(3) == 3
    assert encode_meld(set_index(11, 3)) == parse_action("meld QS QH QD")
    assert encode_meld(run_index(1, 11, 4)) == parse_action("meld QH KH AH 2H")
    assert encode_layoff(parse_card("7S"), "set") == encode_layoff(parse_card("7S"), 0) == 690 + 3 * 6
    assert encode_layoff(parse_card("2H"), "low") == 690 + 3 * 14 + 1
    assert encode_discard(parse_card("TD")) == 846 + 35
    for bad in (
        lambda: encode_take(0),
        lambda: encode_take(53),
        lambda: encode_meld(637),
        lambda: encode_layoff(0, "middle"),
        lambda: encode_layoff(0, 3),
        lambda: encode_discard(52),
    ):
        with pytest.raises(ValueError):
            bad()


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("meld 2H QH KH AH", "meld QH KH AH 2H"),  # any order for a wrapping run
        ("meld KH QH AH", "meld QH KH AH"),
        ("meld 6C 6S 6H", "meld 6S 6H 6C"),  # sets in any order
        ("MELD 10♠ j♠ q♠", "meld TS JS QS"),
        ("Layoff 7s SET", "layoff 7S set"),
        ("  discard   td ", "discard TD"),
        ("TAKE 3", "take 3"),
        ("Draw", "draw"),
    ],
)
def test_parse_is_lenient_rules_4(text: str, canonical: str) -> None:
    """docs/ARCHITECTURE.md "Actions": parsing is case-insensitive and reads a meld's cards in any order."""
    assert action_to_str(parse_action(text)) == canonical


@pytest.mark.parametrize(
    "text",
    [
        "",
        "draw 1",
        "take",
        "take 0",
        "take 53",
        "take x",
        "discard",
        "discard XX",
        "layoff 7S",
        "layoff 7S middle",
        "meld QH KH",
        "meld QH KH 2H",
        "meld QH QH QS",
        "meld 5S 6H 7S",
        "meld 5S 5H 5D 5C 6S",
        "pass",
    ],
)
def test_bad_text_raises_naming_it(text: str) -> None:
    """parse_action raises ValueError naming the text it cannot read."""
    with pytest.raises(ValueError) as info:
        parse_action(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize(("text", "given"), [("meld 9H 9D", 2), ("meld 9H", 1), ("meld", 0)])
def test_a_short_meld_says_a_meld_needs_three_cards_rules_3_1(text: str, given: int) -> None:
    with pytest.raises(ValueError) as info:
        parse_action(text)
    assert str(info.value) == (
        f"cannot read action {text!r}: a meld needs at least three cards, {given} given (RULES §3.1, §3.2)"
    )
