"""Scripted deals of the ``treppenromme`` preset from stacked decks (RULES §3-§6).

Two players, dealer 0 unless said otherwise, so seat 0 plays first (RULES §2.4) and the deck is
dealt deck[0] to seat 1, deck[1] to seat 0, ... (docs/ARCHITECTURE.md "Environment").
"""

from __future__ import annotations

import pytest

from tests.rules_helpers import assert_illegal, bits, legal_texts, names, new_deal, play
from treppen_env.actions import parse_action
from treppen_env.cards import parse_card
from treppen_env.engine import Phase

# Seat 1's hand in the going-out deals: 2 + 3 + 5 + 8 + 10 + 10 + 15 = 53 points in hand.
SEAT1_HAND = ["2C", "3D", "5H", "8C", "TD", "QS", "AH"]
SEAT1_VALUE = 53


def test_seventy_five_point_turn_rules_3_4() -> None:
    """RULES §3.4: lay 6-6-6 and Q-K-A-2-3 and lay off a J, a 7 and a 10 in one turn: 18 + 30 + 27."""
    state = new_deal(
        hands={
            0: ["6S", "6H", "6D", "QH", "KH", "AH", "2H"],
            1: ["7S", "7H", "7D", "JH", "TH", "7C", "5D"],
        },
        staircase="3H",
        stock=["4C", "9D", "8C", "KD", "2C", "3C"],
    )
    play(state, "draw", "discard 4C")  # seat 0
    play(state, "draw", "meld 7S 7H 7D", "discard JH")  # seat 1 books 21
    play(state, "draw", "discard 8C", "draw", "discard TH", "draw", "discard 2C", "draw", "discard 7C")
    assert names(state.staircase) == ["3H", "4C", "JH", "8C", "TH", "2C", "7C"]
    assert state.points == [0, 21]
    play(state, "take 7")
    assert state.staircase == []
    booked = []
    for text in ("meld 6S 6H 6D", "meld QH KH AH 2H 3H", "layoff JH low", "layoff TH low", "layoff 7C set"):
        play(state, text)
        booked.append(state.points[0])
    assert booked == [18, 48, 58, 68, 75]
    assert state.points == [75, 21]  # the 7 laid off onto seat 1's set is booked to seat 0 (§5.1)
    assert [(m.owner, names(m.cards)) for m in state.melds] == [
        (1, ["7S", "7H", "7D", "7C"]),
        (0, ["6S", "6H", "6D"]),
        (0, ["TH", "JH", "QH", "KH", "AH", "2H", "3H"]),
    ]
    assert legal_texts(state) == {"discard 4C", "discard 8C", "discard 2C"}


def test_staircase_take_example_rules_4_1() -> None:
    """RULES §4.1: staircase Q-9-2-A-7 (7 on top); taking the 9 takes 9, 2, A, 7 and leaves the Q."""
    state = new_deal(
        hands={0: ["9H", "AC", "4S", "5S", "8D", "9D", "TC"], 1: ["2D", "7S", "3H", "4H", "JC", "QD", "KS"]},
        staircase="QS",
        stock=["2S", "3S", "6C", "7C", "8C"],
    )
    play(state, "draw", "discard 9H", "draw", "discard 2D", "draw", "discard AC", "draw", "discard 7S")
    assert names(state.staircase) == ["QS", "9H", "2D", "AC", "7S"]
    hand = state.hands[0]
    assert state.legal_actions() == [0, 1, 2, 3, 4, 5]  # draw, take 1..5: never more than it holds
    play(state, "take 4")
    assert names(state.staircase) == ["QS"]
    assert state.hands[0] == hand | bits("9H", "2D", "AC", "7S")
    assert state.known[0] == bits("9H", "2D", "AC", "7S")
    assert state.phase == Phase.MELD
    assert state.banned == -1  # a deep take: every card may be discarded (§4.4)


def test_take_whole_staircase_rules_4_1() -> None:
    """RULES §4.1: the whole staircase may be taken; the discard then starts it again (§4.6)."""
    state = new_deal(hands={0: ["9H", "4S", "5S", "8D", "9D", "TC", "KC"]}, staircase="QS", stock=["2S"])
    play(state, "draw", "discard 9H")
    play(state, "take 2")
    assert state.staircase == []
    assert state.legal_mask()[parse_action("take 1")] == 0
    play(state, "discard QS")
    assert names(state.staircase) == ["QS"]
    assert state.legal_mask()[parse_action("take 1")] == 1


def going_out_deal(**options: object):
    return new_deal(
        hands={0: ["4S", "5S", "6S", "9H", "9D", "9C", "9S"], 1: SEAT1_HAND},
        staircase="7D",
        stock=["JC", "4D", "7S"],
        **options,
    )


def test_going_out_by_discard_rules_6_1_6_2() -> None:
    """RULES §6.1-6.2: out by discarding the last card after melding in an earlier turn: single credit."""
    state = going_out_deal()
    play(state, "draw", "meld 9H 9D 9C", "discard JC", "draw", "discard 4D")
    play(state, "draw", "meld 4S 5S 6S 7S")
    assert not state.deal_over
    play(state, "discard 9S")
    assert state.deal_over and state.phase == Phase.DEAL_OVER
    assert (state.outcome, state.went_out) == ("went_out", 0)
    assert state.points == [27 + 22, 0]
    assert state.deal_points == [27 + 22 + SEAT1_VALUE, 0]
    assert state.totals == [102, 0]
    assert not state.legal_mask().any()
    assert_illegal(state, "draw")


def test_going_out_by_laying_off_rules_6_1_6_2() -> None:
    """RULES §6.1-6.2: out by laying off the last card; the deal ends at once, single credit."""
    state = going_out_deal()
    play(state, "draw", "meld 9H 9D 9C", "discard JC", "draw", "discard 4D")
    play(state, "draw", "meld 4S 5S 6S 7S", "layoff 9S set")
    assert (state.outcome, state.went_out) == ("went_out", 0)
    assert state.deal_points == [27 + 22 + 9 + SEAT1_VALUE, 0]
    assert state.hands[0] == 0
    assert names(state.staircase) == ["7D", "JC", "4D"]


def test_going_out_by_melding_is_romme_rules_6_2() -> None:
    """RULES §6.2: out by melding every card with no earlier meld: Rommé, the credit doubles."""
    state = going_out_deal()
    play(state, "draw", "discard JC", "draw", "discard 4D")  # turn 1 without a meld
    play(state, "draw", "meld 9S 9H 9D 9C", "meld 4S 5S 6S 7S")
    assert (state.outcome, state.went_out) == ("romme", 0)
    assert state.deal_points == [36 + 22 + 2 * SEAT1_VALUE, 0]
    assert state.totals == [164, 0]


def test_romme_by_discard_with_hand_penalty_rules_6_2() -> None:
    """RULES §6.2: option hand_penalty: holders lose their hand values, doubled after a Rommé."""
    state = new_deal(
        hands={0: ["4S", "5S", "6S", "9H", "9D", "9C", "KD"], 1: SEAT1_HAND},
        staircase="7D",
        stock=["7S"],
        hand_penalty=True,
    )
    play(state, "draw", "meld 9H 9D 9C", "meld 4S 5S 6S 7S", "discard KD")
    assert state.outcome == "romme"
    assert state.deal_points == [27 + 22 + 2 * SEAT1_VALUE, -2 * SEAT1_VALUE]


def test_going_out_with_hand_penalty_rules_6_2() -> None:
    """RULES §6.2: hand_penalty without Rommé deducts single hand values from the holders."""
    state = going_out_deal(hand_penalty=True)
    play(state, "draw", "meld 9H 9D 9C", "discard JC", "draw", "discard 4D")
    play(state, "draw", "meld 4S 5S 6S 7S", "discard 9S")
    assert state.deal_points == [49 + SEAT1_VALUE, -SEAT1_VALUE]


def test_three_players_credit_sums_both_opponents_rules_6_2() -> None:
    """RULES §6.2: the credit is the sum of all opponents' hands (here 3 players, dealer 2)."""
    state = new_deal(
        num_players=3,
        dealer=2,
        hands={
            2: ["4S", "5S", "6S", "9H", "9D", "9C", "KD"],
            0: ["2C", "3D", "5H", "8C", "TD", "QS", "AH"],
            1: ["AS", "AD", "AC", "2D", "2H", "KS", "QH"],
        },
        staircase="7D",
        stock=["7S"],
    )
    assert state.current == 2  # the dealer plays first (§2.4)
    play(state, "draw", "meld 9H 9D 9C", "meld 4S 5S 6S 7S", "discard KD")
    assert (state.outcome, state.went_out) == ("romme", 2)
    assert state.deal_points == [0, 0, 49 + 2 * (53 + 69)]


def test_single_staircase_card_may_not_be_discarded_rules_4_4() -> None:
    """RULES §4.4: a single staircase card just taken may not be discarded in the same turn."""
    state = new_deal(
        hands={0: ["9H", "4S", "5S", "8D", "9D", "TC", "KC"], 1: ["2D", "7S", "3H", "4H", "JC", "QD", "KS"]},
        staircase="QS",
        stock=["2S", "3S", "6C"],
    )
    play(state, "draw", "discard 9H")
    deep = state.clone()
    play(state, "take 1")
    assert state.banned == parse_card("9H")
    assert_illegal(state, "discard 9H", "§4.4")
    discards = {t for t in legal_texts(state) if t.startswith("discard")}
    assert discards == {f"discard {c}" for c in ("2D", "7S", "3H", "4H", "JC", "QD", "KS")}
    play(state, "discard 2D")
    play(state, "draw", "discard 2S")
    play(state, "draw")
    assert "discard 9H" in legal_texts(state)  # the ban lasts one turn only

    play(deep, "take 2")  # a deeper take: both cards may be discarded, the top one too
    assert {"discard QS", "discard 9H"} <= legal_texts(deep)
    play(deep, "discard 9H")
    assert names(deep.staircase) == ["9H"]


def dead_end_deal(taken: str):
    return new_deal(hands={0: ["5S", "6S", "7S", "9H", "9D", "9C", "9S"], 1: SEAT1_HAND}, staircase=taken, stock=["2D"])


def test_no_dead_end_meld_rules_4_5() -> None:
    """RULES §4.5: a meld leaving only the card that may not be discarded is illegal."""
    state = dead_end_deal("QD")
    play(state, "take 1", "meld 9H 9D 9C", "layoff 9S set")
    assert_illegal(state, "meld 5S 6S 7S", "§4.5")
    assert legal_texts(state) == {"discard 5S", "discard 6S", "discard 7S"}


def test_no_dead_end_layoff_rules_4_5() -> None:
    """RULES §4.5: a lay-off leaving only the card that may not be discarded is illegal."""
    state = dead_end_deal("QD")
    play(state, "take 1", "meld 5S 6S 7S", "meld 9H 9D 9C")
    assert_illegal(state, "layoff 9S set", "§4.5")
    assert legal_texts(state) == {"discard 9S"}


@pytest.mark.parametrize(("taken", "end"), [("8S", "high"), ("4S", "low")])
def test_dead_end_allowed_when_card_can_be_laid_off_rules_4_5(taken: str, end: str) -> None:
    """RULES §4.5: the meld is legal when the banned card can then be laid off; that goes out."""
    state = dead_end_deal(taken)
    play(state, "take 1", "meld 9H 9D 9C", "layoff 9S set", "meld 5S 6S 7S")
    assert legal_texts(state) == {f"layoff {taken} {end}"}
    play(state, f"layoff {taken} {end}")
    assert (state.outcome, state.went_out) == ("romme", 0)
    assert state.deal_points == [27 + 9 + 18 + int(taken[0]) + 2 * SEAT1_VALUE, 0]


def test_layoffs_both_ends_onto_opponents_meld_rules_4_3_5_1() -> None:
    """RULES §4.3, §5.1: lay-offs at both ends, several in a row, onto an opponent's run; each is
    booked to the player laying off, and the run stays its owner's."""
    state = new_deal(
        hands={0: ["5H", "6H", "7H", "QC", "QD", "JS", "TS"], 1: ["AH", "2H", "3H", "4H", "8H", "9H", "KC"]},
        staircase="2S",
        stock=["3S", "QS"],
    )
    play(state, "draw", "meld 5H 6H 7H", "discard 3S")
    play(state, "draw")  # no meld of one's own is needed before laying off (§4.3)
    booked = []
    for text in (
        "layoff 4H low",
        "layoff 8H high",
        "layoff 3H low",
        "layoff 9H high",
        "layoff 2H low",
        "layoff AH low",
    ):
        play(state, text)
        booked.append(state.points[1])
    assert booked == [4, 12, 15, 24, 26, 27]  # the ace before the 2 books 1 (§5.2)
    assert state.points == [18, 27]
    (run,) = state.melds
    assert (run.owner, run.kind, run.low, run.length) == (0, "run", 0, 9)
    assert names(run.cards) == ["AH", "2H", "3H", "4H", "5H", "6H", "7H", "8H", "9H"]
    assert legal_texts(state) == {"discard KC", "discard QS"}


@pytest.mark.parametrize(
    ("preset", "dealer", "high", "low", "on_set"),
    [("treppenromme", 0, 10, 1, 15), ("rum500", 1, 15, 1, 15)],
)
def test_ace_layoff_values_rules_5_2(preset: str, dealer: int, high: int, low: int, on_set: int) -> None:
    """RULES §5.2: a laid-off ace books after a K 10, before a 2 1, onto a set 15 (rum500 15/1/15)."""
    state = new_deal(
        preset,
        dealer=dealer,
        hands={0: ["JD", "QD", "KD", "2C", "3C", "4C", "9S"], 1: ["AD", "AC", "7H", "8H", "TH", "JH", "QH"]},
        staircase="5S",
        stock=["6S", "7S"],
    )
    assert state.current == 0
    play(state, "draw", "meld JD QD KD", "meld 2C 3C 4C", "discard 6S")
    before = state.points[0]
    play(state, "draw", "layoff AD high")
    assert state.points[1] == high
    play(state, "layoff AC low")
    assert state.points == [before, high + low]
    assert names(state.melds[0].cards) == ["JD", "QD", "KD", "AD"]
    assert names(state.melds[1].cards) == ["AC", "2C", "3C", "4C"]

    sets = new_deal(
        preset,
        dealer=dealer,
        hands={0: ["AS", "AH", "AD", "2C", "3D", "4H", "9S"], 1: ["AC", "7H", "8H", "TH", "JH", "QH", "KS"]},
        staircase="5S",
        stock=["6S", "7S"],
    )
    play(sets, "draw", "meld AS AH AD", "discard 6S")
    assert sets.points[0] == 45
    play(sets, "draw", "layoff AC set")
    assert sets.points == [45, on_set]
    assert sets.melds[0].length == 4


def test_booked_values_never_change_rules_5_2() -> None:
    """RULES §5.2: a 2 laid off onto Q-K-A books 2 and the ace keeps its 10 (32, not Q-K-A-2's 27)."""
    state = new_deal(hands={0: ["QH", "KH", "AH", "2H", "5C", "8D", "9S"]}, staircase="5S", stock=["6S"])
    play(state, "draw", "meld QH KH AH")
    assert state.points[0] == 30
    play(state, "layoff 2H high")
    assert state.points[0] == 32
    assert names(state.melds[0].cards) == ["QH", "KH", "AH", "2H"]
    other = new_deal(hands={0: ["QH", "KH", "AH", "2H", "5C", "8D", "9S"]}, staircase="5S", stock=["6S"])
    play(other, "draw", "meld QH KH AH 2H")
    assert other.points[0] == 27


def test_corner_runs_rules_3_2_3_3() -> None:
    """RULES §3.2-3.3: runs turn the corner (K-A-2, ace 5); a K extends A-2-3 below the ace."""
    state = new_deal(
        hands={0: ["KS", "AS", "2S", "AH", "2H", "3H", "9C"], 1: ["KH", "QS", "5D", "6D", "8D", "9D", "TD"]},
        staircase="5C",
        stock=["6C", "7C"],
    )
    play(state, "draw")
    assert {"meld KS AS 2S", "meld AH 2H 3H"} <= legal_texts(state)
    play(state, "meld KS AS 2S", "meld AH 2H 3H", "discard 6C")
    assert state.points[0] == 17 + 6
    play(state, "draw")
    assert {"layoff KH low", "layoff QS low"} <= legal_texts(state)
    play(state, "layoff KH low", "layoff QS low")
    assert state.points == [23, 20]  # the ace of A-2-3 keeps its 1 (§5.2)
    assert names(state.melds[0].cards) == ["QS", "KS", "AS", "2S"]
    assert names(state.melds[1].cards) == ["KH", "AH", "2H", "3H"]


def test_melds_never_merge_rules_3_5() -> None:
    """RULES §3.5: a card that would join two runs is laid off onto one of them; they stay two."""
    state = new_deal(
        hands={0: ["3H", "4H", "5H", "7H", "8H", "9H", "KC"], 1: ["6H", "2S", "3S", "8S", "JD", "QD", "KD"]},
        staircase="5C",
        stock=["6C", "7C"],
    )
    play(state, "draw", "meld 3H 4H 5H", "meld 7H 8H 9H", "discard 6C", "draw")
    assert {"layoff 6H high", "layoff 6H low"} <= legal_texts(state)
    assert state.legal_mask()[parse_action("meld 3H 4H 5H 6H 7H 8H 9H")] == 0
    play(state, "layoff 6H high")
    assert [names(m.cards) for m in state.melds] == [["3H", "4H", "5H", "6H"], ["7H", "8H", "9H"]]
    assert state.points == [12 + 24, 6]


def test_thirteen_card_run_rules_3_2() -> None:
    """RULES §3.2: a 13-card run is laid with a chosen low end (any in treppenromme), and takes no
    lay-off. Dealt 13 cards each by the explicit option hand_size_two_players=13 (§8)."""
    spades = ["AS", "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "TS", "JS", "QS", "KS"]
    state = new_deal(hands={0: spades}, staircase="5C", stock=["6C"], hand_size_two_players=13)
    play(state, "draw")
    runs = {t for t in legal_texts(state) if t.startswith("meld") and len(t.split()) == 14}
    assert len(runs) == 13
    assert "meld 6S 7S 8S 9S TS JS QS KS AS 2S 3S 4S 5S" in runs
    play(state, "meld 6S 7S 8S 9S TS JS QS KS AS 2S 3S 4S 5S")
    assert state.points[0] == 89  # ace in the middle: 5
    (run,) = state.melds
    assert (run.low, run.length) == (5, 13)
    assert legal_texts(state) == {"discard 6C"}


def test_stock_exhausted_ends_deal_rules_6_4() -> None:
    """RULES §6.4: the deal ends when the turn that drew the last stock card is over; no credit."""
    state = new_deal(hands={0: ["9H", "9D", "9C", "2S", "3S", "5D", "7C"]}, staircase="KD", stock=["JC"])
    play(state, "draw", "meld 9H 9D 9C", "discard JC")
    while len(state.stock) > 1:
        drawn = state.stock[-1]
        play(state, "draw")
        state.apply(parse_action("discard AS") + drawn)
    assert (state.turn, state.current) == (36, 0)
    play(state, "draw")
    assert state.stock == [] and state.phase == Phase.MELD and not state.deal_over
    hand = state.hands[0]
    play(state, "discard 7C")
    assert (state.outcome, state.went_out) == ("stock_exhausted", None)
    assert state.deal_points == [27, 0]
    assert state.hands[0] == hand & ~bits("7C")


def test_stock_exhausted_with_hand_penalty_rules_6_4() -> None:
    """RULES §6.4: with hand_penalty the hands are deducted when the stock runs out."""
    state = new_deal(
        hands={0: ["9H", "9D", "9C", "2S", "3S", "5D", "7C"], 1: SEAT1_HAND},
        staircase="KD",
        stock=["JC"],
        hand_penalty=True,
    )
    play(state, "draw", "meld 9H 9D 9C", "discard JC")
    while state.stock:
        drawn = state.stock[-1]
        play(state, "draw")
        state.apply(parse_action("discard AS") + drawn)
    assert state.outcome == "stock_exhausted"
    assert state.deal_points == [27 - (2 + 3 + 5 + 7), -SEAT1_VALUE]


def test_stock_exhausted_reshuffle_rules_6_4() -> None:
    """RULES §6.4 option reshuffle: the staircase except its top becomes the stock; play goes on."""
    state = new_deal(stock_exhausted="reshuffle", seed=7)
    while len(state.stock) > 1:
        drawn = state.stock[-1]
        play(state, "draw")
        state.apply(parse_action("discard AS") + drawn)
    drawn = state.stock[-1]
    play(state, "draw")
    staircase = list(state.staircase)
    assert len(staircase) == 37  # the first card and 36 discards
    state.apply(parse_action("discard AS") + drawn)
    assert state.outcome is None and not state.deal_over
    assert state.staircase == [drawn]
    assert sorted(state.stock) == sorted(staircase)
    assert (state.turn, state.current, state.phase) == (37, 1, Phase.DRAW)
    top = state.stock[-1]
    play(state, "draw")
    assert state.hands[1] >> top & 1


def test_max_turns_truncates_rules_6_5() -> None:
    """RULES §6.5: after max_turns turns the deal ends as in §6.4, reported as "max_turns"."""
    state = new_deal(hands={0: ["9H", "9D", "9C", "2S", "3S", "5D", "7C"], 1: SEAT1_HAND}, staircase="KD", max_turns=3)
    play(state, "draw", "meld 9H 9D 9C", "discard 7C", "take 1", "discard QS", "take 1")
    assert not state.deal_over
    play(state, "discard 5D")
    assert (state.outcome, state.went_out, state.turn) == ("max_turns", None, 3)
    assert state.deal_points == [27, 0]
