"""Scripted deals of the ``rum500`` preset from stacked decks (RULES §2-§6, §8).

Two players get 13 cards each (RULES §2.2). With dealer 0 seat 1 plays first (§2.4), and the deck
is dealt deck[0] to seat 1, deck[1] to seat 0, ... (docs/ARCHITECTURE.md "Environment").
"""

from __future__ import annotations

from tests.rules_helpers import assert_illegal, legal_texts, names, new_deal, play
from treppen_env.actions import parse_action
from treppen_env.cards import parse_card
from treppen_env.engine import Phase

# 15 + 2+3+4+5+6+7+8 + 10+10+10+10 + 3 = 93 points in hand.
SEAT0_HAND = ["AS", "2H", "3H", "4H", "5H", "6H", "7H", "8H", "TH", "JH", "QS", "KS", "3D"]
SEAT0_VALUE = 93


def test_first_player_left_of_dealer_rules_2_4() -> None:
    """RULES §2.4: in rum500 the player left of the dealer plays first."""
    assert new_deal("rum500", dealer=0).current == 1
    assert new_deal("rum500", dealer=1).current == 0
    assert new_deal("rum500", num_players=4, dealer=3).current == 0
    assert new_deal("rum500", num_players=3, dealer=1).current == 2


def test_single_take_must_be_used_at_once_rules_4_2() -> None:
    """RULES §4.2: a single card taken must be melded at once; the discard bits stay 0 until then."""
    state = new_deal(
        "rum500",
        hands={1: ["6H", "7H", "2S", "3D", "4C", "5S", "9D", "TC", "JS", "QD", "KC", "AS", "4H"]},
        staircase="8H",
    )
    assert legal_texts(state) == {"draw", "take 1"}
    play(state, "take 1")
    assert state.must_use == parse_card("8H")
    assert legal_texts(state) == {"meld 6H 7H 8H"}
    assert_illegal(state, "discard 2S", "8H", "§4.2")
    assert_illegal(state, "meld 6H 7H 8H 9H")
    play(state, "meld 6H 7H 8H")
    assert state.must_use == -1
    assert state.points[1] == 21
    assert {t for t in legal_texts(state) if t.startswith("discard")} == {
        f"discard {c}" for c in ("2S", "3D", "4C", "5S", "9D", "TC", "JS", "QD", "KC", "AS", "4H")
    }


def test_unusable_single_take_is_illegal_rules_4_2() -> None:
    """RULES §4.2: a take whose deepest card cannot be played at once is masked out and raises."""
    state = new_deal(
        "rum500",
        hands={1: ["6H", "2S", "3D", "4C", "5S", "9D", "TC", "JS", "QD", "KC", "AS", "4H", "8S"]},
        staircase="8H",
    )
    assert legal_texts(state) == {"draw"}
    assert_illegal(state, "take 1", "8H", "§4.2")


def deep_take_deal(seat0: list[str], seat1_meld: bool = False):
    """Staircase 5C then 6C (discarded by seat 1); seat 0 to move in the draw phase."""
    seat1 = ["6C", "2C", "3C", "4C", "7S", "8S", "9D", "TD", "JS", "QD", "KD", "AH", "2D"]
    state = new_deal("rum500", hands={0: seat0, 1: seat1}, staircase="5C", stock=["KC"])
    play(state, "draw")
    if seat1_meld:
        play(state, "meld 2C 3C 4C")
    play(state, "discard 6C")
    assert names(state.staircase) == ["5C", "6C"]
    return state


def test_deep_take_usable_with_taken_cards_rules_4_2() -> None:
    """RULES §4.2: the deepest card taken may be melded together with other taken cards."""
    seat0 = ["7C", "2S", "3S", "9S", "TS", "2H", "7H", "9H", "JH", "QH", "3D", "5D", "8D"]
    state = deep_take_deal(seat0)
    assert legal_texts(state) == {"draw", "take 2"}  # 6C alone cannot be played
    assert_illegal(state, "take 1", "6C", "§4.2")
    play(state, "take 2")
    assert state.must_use == parse_card("5C") and state.banned == -1
    assert legal_texts(state) == {"meld 5C 6C 7C"}
    play(state, "meld 5C 6C 7C")
    assert state.points[0] == 18
    assert legal_texts(state) == {f"discard {c}" for c in seat0 if c != "7C"}


def test_deep_take_unusable_is_illegal_rules_4_2() -> None:
    """RULES §4.2: taking 2 is illegal when its deepest card 5C cannot be played at once."""
    seat0 = ["AS", "2S", "3S", "9S", "TS", "2H", "7H", "9H", "JH", "QH", "3D", "7D", "8D"]
    state = deep_take_deal(seat0)
    assert legal_texts(state) == {"draw"}
    assert_illegal(state, "take 2", "5C", "§4.2")


def test_deep_take_used_by_layoff_rules_4_2_4_4() -> None:
    """RULES §4.2: laying the deepest card off (here onto the opponent's run) uses it; the next
    action must be that lay-off. Only the deepest card must be used, and the other card of a deeper
    take may then be discarded (§4.4)."""
    seat0 = ["AS", "2S", "3S", "9S", "TS", "2H", "7H", "9H", "JH", "QH", "3D", "7D", "8D"]
    state = deep_take_deal(seat0, seat1_meld=True)
    assert legal_texts(state) == {"draw", "take 2"}
    play(state, "take 2")
    assert legal_texts(state) == {"layoff 5C high"}
    assert_illegal(state, "layoff 6C high")
    play(state, "layoff 5C high")
    assert {"discard 6C", "layoff 6C high", "discard AS"} <= legal_texts(state)
    play(state, "layoff 6C high")
    assert state.points == [11, 9]
    assert names(state.melds[0].cards) == ["2C", "3C", "4C", "5C", "6C"]
    assert "discard AS" in legal_texts(state)


def test_no_corner_runs_rules_3_2() -> None:
    """RULES §3.2: in rum500 the ace is below the 2 or above the king; K-A-2 is masked out and raises,
    and no lay-off turns the corner."""
    seat1 = ["KS", "AS", "2S", "QH", "KH", "AH", "AD", "2D", "3D", "9C", "TC", "5S", "6S"]
    seat0 = ["2H", "KD", "4D", "JH", "7C", "8C", "3C", "4C", "9S", "TS", "5H", "6H", "7D"]
    state = new_deal("rum500", hands={0: seat0, 1: seat1}, staircase="8S", stock=["QC", "JC"])
    play(state, "draw")
    assert_illegal(state, "meld KS AS 2S", "§3.1-3.2")
    melds = {t for t in legal_texts(state) if t.startswith("meld")}
    assert melds == {"meld QH KH AH", "meld AD 2D 3D", "meld AS AH AD"}
    play(state, "meld QH KH AH", "meld AD 2D 3D", "discard QC")
    assert state.points[1] == 35 + 6  # ace high 15, ace low 1 (§3.3)
    play(state, "draw")
    assert_illegal(state, "layoff 2H high")
    assert_illegal(state, "layoff KD low")
    assert {"layoff JH low", "layoff 4D high"} <= legal_texts(state)


def test_going_out_by_discard_deducts_hands_rules_6_3() -> None:
    """RULES §6.3: deal result = booked points minus own hand; no going-out credit, no doubling."""
    seat1 = ["4S", "5S", "6S", "9H", "9D", "9C", "9S", "JD", "QD", "KD", "2C", "3C", "8H"]
    seat0 = ["AS", "2H", "3H", "4H", "5H", "6H", "7H", "TH", "JH", "QS", "KS", "3D", "4D"]
    state = new_deal("rum500", hands={0: seat0, 1: seat1}, staircase="7D", stock=["4C"])
    play(state, "draw", "meld 4S 5S 6S", "meld 9S 9H 9D 9C", "meld JD QD KD", "meld 2C 3C 4C")
    play(state, "discard 8H")
    # The engine labels a first-turn going out "romme" in every preset; rum500 gives it no bonus.
    assert (state.outcome, state.went_out) == ("romme", 1)
    assert state.deal_points == [-(15 + 2 + 3 + 4 + 5 + 6 + 7 + 10 + 10 + 10 + 10 + 3 + 4), 90]
    assert state.deal_points == [-89, 90]
    assert state.totals == [-89, 90]


def test_going_out_by_melding_rules_6_1_6_3() -> None:
    """RULES §6.1, §6.3: out by melding the last cards in a later turn: booked minus hands."""
    seat1 = ["4S", "5S", "6S", "7S", "9H", "9D", "9C", "9S", "JD", "QD", "KD", "2C", "3C"]
    state = new_deal("rum500", hands={0: SEAT0_HAND, 1: seat1}, staircase="7D", stock=["QC", "8C", "4C"])
    play(state, "draw", "meld JD QD KD", "discard QC")
    play(state, "draw", "discard 8C")
    play(state, "draw", "meld 4S 5S 6S 7S", "meld 9S 9H 9D 9C")
    assert not state.deal_over
    play(state, "meld 2C 3C 4C")
    assert (state.outcome, state.went_out) == ("went_out", 1)
    assert state.deal_points == [-SEAT0_VALUE, 30 + 22 + 36 + 9]


SEAT1_STOCK_HAND = ["9H", "9D", "9C", "2S", "3S", "4D", "5D", "6C", "7C", "8S", "TD", "JC", "QH"]
SEAT1_LEFT = 2 + 3 + 4 + 5 + 6 + 7 + 8 + 10 + 10 + 10


def test_stock_exhausted_deducts_hands_rules_6_4() -> None:
    """RULES §6.4: stock exhausted: nobody went out; rum500 deducts the hands from the holders."""
    state = new_deal("rum500", hands={0: SEAT0_HAND, 1: SEAT1_STOCK_HAND}, staircase="KD")
    drawn = state.stock[-1]
    play(state, "draw", "meld 9H 9D 9C")
    while not state.deal_over:
        if state.phase == Phase.DRAW:
            drawn = state.stock[-1]
            play(state, "draw")
        state.apply(parse_action("discard AS") + drawn)
    assert state.turn == 25 and state.stock == []
    assert (state.outcome, state.went_out) == ("stock_exhausted", None)
    assert state.deal_points == [-SEAT0_VALUE, 27 - SEAT1_LEFT]


def test_max_turns_deducts_hands_rules_6_5() -> None:
    """RULES §6.5: the max_turns cut ends the deal as §6.4 does (rum500: hands deducted)."""
    state = new_deal(
        "rum500", hands={0: SEAT0_HAND, 1: SEAT1_STOCK_HAND}, staircase="KD", stock=["AD", "AC"], max_turns=2
    )
    play(state, "draw", "meld 9H 9D 9C", "discard AD", "draw")
    assert not state.deal_over
    play(state, "discard AC")
    assert (state.outcome, state.turn) == ("max_turns", 2)
    assert state.deal_points == [-SEAT0_VALUE, 27 - SEAT1_LEFT]


def test_thirteen_card_run_rules_3_2() -> None:
    """RULES §3.2: rum500 lays a 13-card run from the ace (A..K) or the 2 (2..A) only."""
    spades = ["AS", "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "TS", "JS", "QS", "KS"]
    hearts = [c[0] + "H" for c in spades]
    state = new_deal("rum500", hands={1: spades, 0: hearts}, staircase="5C", stock=["6C"])
    play(state, "draw")
    runs = {t for t in legal_texts(state) if t.startswith("meld") and len(t.split()) == 14}
    assert runs == {
        "meld AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS",
        "meld 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    }
    assert_illegal(state, "meld 6S 7S 8S 9S TS JS QS KS AS 2S 3S 4S 5S")
    play(state, "meld 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS")
    assert state.points[1] == 99
    assert legal_texts(state) == {"discard 6C"}
    play(state, "discard 6C")
    assert state.deal_points == [-(15 + 54 + 30), 99]
