"""Deals (RULES §2), the game of deals (§7), rules options (§8) and illegal actions."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.rules_helpers import bits, names, new_deal, play, snapshot, stack_deck
from treppen_env.actions import NUM_ACTIONS, parse_action
from treppen_env.cards import card_to_str
from treppen_env.engine import GameState, IllegalActionError, Phase
from treppen_env.rules import PRESETS, Rules, make_rules


def fresh(preset: str = "treppenromme", num_players: int = 2, seed: int = 0, **options: object) -> GameState:
    return GameState(make_rules(preset, **options), num_players, np.random.default_rng(seed))


# ---------------------------------------------------------------------- RULES §2: the deal
def test_deal_order_two_players_design_environment() -> None:
    """docs/ARCHITECTURE.md "Environment", RULES §2.2-2.3: dealer 0: deck[0] to seat 1, deck[1] to seat 0, ...,
    deck[14] is the first staircase card and deck[15] the top of the stock."""
    state = fresh()
    deck = [card_to_str(c) for c in range(52)]
    state.deal(0, deck)
    assert state.hands[1] == sum(1 << c for c in range(0, 14, 2))
    assert state.hands[0] == sum(1 << c for c in range(1, 14, 2))
    assert state.staircase == [14]
    assert state.stock[-1] == 15 and state.stock[0] == 51 and len(state.stock) == 37
    assert state.stock == list(range(51, 14, -1))


def test_deal_order_three_players_dealer_two_rules_2_2() -> None:
    """RULES §2.2: one card at a time clockwise starting left of the dealer (dealer 2: seat 0 first)."""
    state = fresh(num_players=3)
    state.deal(2, list(range(52)))
    assert state.hands == [sum(1 << c for c in range(s, 21, 3)) for s in range(3)]
    assert state.staircase == [21] and state.stock[-1] == 22 and len(state.stock) == 30


def test_deal_order_rum500_thirteen_cards_rules_2_2() -> None:
    """RULES §2.2: rum500 with 2 players deals 13 each; deck[26] starts the staircase."""
    state = fresh("rum500")
    state.deal(1, list(range(52)))  # dealer 1: seat 0 gets deck[0]
    assert state.hands[0] == sum(1 << c for c in range(0, 26, 2))
    assert state.hands[1] == sum(1 << c for c in range(1, 26, 2))
    assert state.staircase == [26] and state.stock[-1] == 27 and len(state.stock) == 25


@pytest.mark.parametrize(
    ("preset", "players", "dealt", "stock"),
    [
        ("treppenromme", 2, 7, 37),
        ("treppenromme", 3, 7, 30),
        ("treppenromme", 4, 7, 23),
        ("rum500", 2, 13, 25),
        ("rum500", 3, 7, 30),
        ("rum500", 4, 7, 23),
    ],
)
def test_cards_dealt_rules_2_2(preset: str, players: int, dealt: int, stock: int) -> None:
    """RULES §2.2-2.3: 7 cards each (rum500 with 2 players: 13), one staircase card, the rest stock."""
    state = fresh(preset, players, seed=players)
    state.deal(0)
    assert [h.bit_count() for h in state.hands] == [dealt] * players
    assert len(state.staircase) == 1 and len(state.stock) == stock
    every = sum(state.hands) + (1 << state.staircase[0]) + sum(1 << c for c in state.stock)
    assert every == (1 << 52) - 1


@pytest.mark.parametrize(("players", "dealer"), [(2, 0), (2, 1), (3, 2), (4, 3)])
def test_first_player_rules_2_4(players: int, dealer: int) -> None:
    """RULES §2.4: the dealer plays first in treppenromme, the player left of the dealer in rum500."""
    assert new_deal("treppenromme", players, dealer).current == dealer
    assert new_deal("rum500", players, dealer).current == (dealer + 1) % players


def test_new_deal_state_rules_2() -> None:
    """RULES §2, §4: a deal starts in the draw phase with nothing booked, laid or known."""
    state = new_deal(num_players=3)
    assert (state.phase, state.turn, state.outcome, state.went_out) == (Phase.DRAW, 0, None, None)
    assert state.points == [0, 0, 0] and state.known == [0, 0, 0] and state.melds == []
    assert (state.banned, state.must_use, state.deal_points) == (-1, -1, None)
    assert state.legal_actions() == [0, 1]  # draw or take the one staircase card


def test_shuffled_deal_repeats_with_seed_rules_2_1() -> None:
    """Randomness comes only from the generator passed in: equal seeds deal equal deals."""
    one, two, other = fresh(seed=5), fresh(seed=5), fresh(seed=6)
    for state in (one, two, other):
        state.deal(0)
    assert (one.hands, one.staircase, one.stock) == (two.hands, two.staircase, two.stock)
    assert (one.hands, one.stock) != (other.hands, other.stock)


@pytest.mark.parametrize("dealer", [-1, 2, True, 1.0])
def test_bad_dealer_raises(dealer: object) -> None:
    """RULES §2.1: the dealer is a seat."""
    with pytest.raises(ValueError, match="dealer"):
        fresh().deal(dealer)  # type: ignore[arg-type]


def test_bad_deck_raises_naming_cards() -> None:
    """A deck must be the 52 cards once each; the error names what is repeated or missing."""
    deck = [card_to_str(c) for c in range(52)]
    with pytest.raises(ValueError, match=r"got 51 cards.*missing: KC"):
        fresh().deal(0, deck[:-1])
    with pytest.raises(ValueError, match=r"repeated: AS.*missing: KC"):
        fresh().deal(0, [*deck[:-1], "AS"])
    with pytest.raises(ValueError, match="'ZZ'"):
        fresh().deal(0, [*deck[:-1], "ZZ"])


# ---------------------------------------------------------------------- RULES §7: the game
def tie_then_win(target: int) -> GameState:
    """Deal 1: both book 27 and the deal is cut after 2 turns. Returns the state after deal 1."""
    state = new_deal(
        hands={0: ["9H", "9D", "9C", "2S", "3S", "5D", "7C"], 1: ["8S", "9S", "TS", "2C", "4H", "6D", "KC"]},
        staircase="QD",
        stock=["JC", "JD"],
        max_turns=2,
        target=target,
    )
    play(state, "draw", "meld 9H 9D 9C", "discard JC", "draw", "meld 8S 9S TS", "discard JD")
    assert (state.outcome, state.deal_points) == ("max_turns", [27, 27])
    return state


def test_tie_for_highest_continues_rules_7_1() -> None:
    """RULES §7.1: an exact tie for the highest total at the target means another deal; the dealer
    then passes to the left and the totals accumulate."""
    state = tie_then_win(target=27)
    assert state.totals == [27, 27]
    assert not state.game_over() and state.winner() is None
    assert state.settlement() == [0, 0]
    hands = {1: ["3C", "5C", "7D", "2S", "KH", "7C", "AS"], 0: ["2H", "4C", "6C", "8D", "KD", "7S", "7H"]}
    state.next_deal(stack_deck(2, state.rules, dealer=1, hands=hands, staircase="QC"))
    assert (state.dealer, state.current) == (1, 1)
    assert state.deal_points is None  # until this deal ends
    assert state.points == [0, 0] and state.outcome is None and state.phase == Phase.DRAW
    assert state.hands == [bits(*hands[0]), bits(*hands[1])]
    play(state, "draw", "discard 2S", "draw", "discard 2H")
    assert (state.outcome, state.deal_points, state.totals) == ("max_turns", [0, 0], [27, 27])
    assert not state.game_over()


def test_game_ends_at_target_with_unique_highest_rules_7_1() -> None:
    """RULES §7.1: the game ends when a total reaches the target with one highest total."""
    below = tie_then_win(target=28)
    assert below.totals == [27, 27] and not below.game_over()
    state = tie_then_win(target=45)
    assert not state.game_over()
    hands = {1: ["6H", "6D", "6C", "2C", "4H", "8D", "KC"], 0: ["3H", "4D", "5S", "9S", "JD", "QH", "TH"]}
    state.next_deal(stack_deck(2, state.rules, dealer=1, hands=hands, staircase="QD", stock=["JC", "JS"]))
    play(state, "draw", "meld 6H 6D 6C", "discard JC")
    assert not state.game_over()  # the deal is still on
    play(state, "draw", "discard JS")
    assert state.deal_points == [0, 18]
    assert state.totals == [27, 45]
    assert state.game_over() and state.winner() == 1
    assert state.deals_played == 2


def test_dealer_rotates_rules_2_1() -> None:
    """RULES §2.1: the deal passes one seat to the left each deal."""
    state = fresh(num_players=3)
    state.deal(0)
    dealers = []
    for _ in range(4):
        dealers.append(state.dealer)
        state.next_deal()
    assert dealers == [0, 1, 2, 0]
    assert state.dealer == 1


def test_rum500_settlement_rules_7_2() -> None:
    """RULES §7.2: the rum500 winner collects from each opponent the difference of their totals."""
    hands = {
        1: ["9H", "9D", "9C", "9S", "2C", "3C", "4C"],
        0: ["AS", "2H", "3H", "4H", "5H", "6H", "7H"],  # 42 in hand
        2: ["KS", "QS", "JS", "TD", "8D", "7D", "6D"],  # 61 in hand
    }
    state = new_deal("rum500", num_players=3, hands=hands, staircase="QC", stock=["KC"], target=40)
    assert state.current == 1
    play(state, "draw", "meld 9S 9H 9D 9C", "meld 2C 3C 4C", "discard KC")
    assert state.deal_points == [-42, 45, -61]
    assert state.game_over() and state.winner() == 1
    assert state.settlement() == [-87, 87 + 106, -106]
    assert sum(state.settlement()) == 0


def test_game_not_over_below_target_rules_7_1() -> None:
    """RULES §7.1: below the target (default 500) the game goes on."""
    hands = {1: ["9H", "9D", "9C", "9S", "2C", "3C", "4C"]}
    state = new_deal("rum500", num_players=3, hands=hands, staircase="QC", stock=["KC"])
    play(state, "draw", "meld 9S 9H 9D 9C", "meld 2C 3C 4C", "discard KC")
    assert state.deal_over and state.rules.target == 500
    assert not state.game_over() and state.winner() is None and state.settlement() == [0, 0, 0]


# ---------------------------------------------------------------------- RULES §8: options
def test_presets_match_table_rules_8() -> None:
    """RULES §8: the option table of both presets."""
    t, r = PRESETS["treppenromme"], PRESETS["rum500"]
    assert (t.cards_dealt(2), t.cards_dealt(3), r.cards_dealt(2), r.cards_dealt(4)) == (7, 7, 13, 7)
    assert (t.dealer_plays_first, r.dealer_plays_first) == (True, False)
    assert (t.corner_runs, r.corner_runs) == (True, False)
    assert (t.ace_set, t.ace_high, t.ace_middle, t.ace_low, t.ace_hand) == (15, 10, 5, 1, 15)
    assert (r.ace_set, r.ace_high, r.ace_low, r.ace_hand) == (15, 15, 1, 15)
    assert (t.must_use_taken, r.must_use_taken) == (False, True)
    assert (t.going_out_credit, t.romme_double, r.going_out_credit) == (True, True, False)
    assert (t.hand_penalty, r.hand_penalty) == (False, True)
    assert (t.stock_exhausted, r.stock_exhausted, t.max_turns, t.target, r.target) == (
        "end",
        "end",
        300,
        500,
        500,
    )
    assert make_rules() == t and make_rules("rum500") == r
    assert make_rules(r, target=1000) == dataclasses.replace(r, target=1000)
    assert make_rules("treppenromme", stock_exhausted="reshuffle").stock_exhausted == "reshuffle"


def test_overrides_rebuild_the_rules_8() -> None:
    """RULES §8: ``overrides`` lists the options that differ from the preset, enough to rebuild."""
    assert PRESETS["rum500"].overrides() == {} and make_rules().overrides() == {}
    rules = make_rules("rum500", target=300, corner_runs=True, hand_penalty=True)
    assert rules.overrides() == {"target": 300, "corner_runs": True}  # hand_penalty is rum500's own
    assert make_rules(rules.name, **rules.overrides()) == rules


def test_unknown_option_rules_8() -> None:
    """RULES §8: an unknown option is a clear error listing the valid ones."""
    with pytest.raises(ValueError, match=r"unknown rules option\(s\) \['jokers'\].*hand_penalty"):
        make_rules("treppenromme", jokers=True)
    with pytest.raises(ValueError, match="unknown rules option"):
        make_rules("treppenromme", name="rum500")
    with pytest.raises(ValueError, match="unknown rules preset 'gin'"):
        make_rules("gin")


@pytest.mark.parametrize("players", [0, 1, 5, 2.0, True])
def test_impossible_player_count_rules_8(players: object) -> None:
    """RULES §1.2, §8: 2 to 4 players; 5 players is a clear error."""
    with pytest.raises(ValueError, match=rf"num_players={players!r} is not allowed: 2 to 4 players"):
        GameState(make_rules(), players, np.random.default_rng())  # type: ignore[arg-type]


def test_deal_size_leaving_no_stock_rules_8() -> None:
    """RULES §2.2-2.3, §8: a deal size that leaves no stock is an error at construction."""
    with pytest.raises(ValueError, match="hand_size_two_players=26 leaves no stock"):
        make_rules(hand_size_two_players=26)
    with pytest.raises(ValueError, match="dealing 13 cards to 4 players uses 52 of 52 cards and leaves no stock"):
        GameState(make_rules(hand_size=13), 4, np.random.default_rng())
    with pytest.raises(ValueError, match=r"dealing 17 cards to 3 players .* at most 16 cards each"):
        GameState(make_rules(hand_size=17), 3, np.random.default_rng())
    # The largest deals still leave a staircase card and one stock card.
    state = GameState(make_rules(hand_size_two_players=25), 2, np.random.default_rng(0))
    state.deal(0)
    assert len(state.staircase) == 1 and len(state.stock) == 1
    GameState(make_rules(hand_size=12), 4, np.random.default_rng())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"stock_exhausted": "redeal"}, r"stock_exhausted='redeal'; choose one of \['end', 'reshuffle'\]"),
        ({"max_turns": 0}, "max_turns=0 must be at least 1"),
        ({"target": -5}, "target=-5 must be at least 1"),
        ({"hand_size": 0}, "hand_size=0 must be at least 1"),
        ({"max_turns": "300"}, "max_turns='300' must be of type int"),
        ({"hand_penalty": 1}, "hand_penalty=1 must be of type bool"),
        ({"ace_set": True}, "ace_set=True must be of type int"),
    ],
)
def test_impossible_values_rules_8(options: dict, message: str) -> None:
    """RULES §8: an impossible option value is a clear error naming the option and the value."""
    with pytest.raises(ValueError, match=message):
        make_rules("treppenromme", **options)


def test_rules_object_built_directly_is_checked_at_construction_rules_8() -> None:
    """RULES §8: an impossible value in a rules object built without make_rules is still a clear
    error when the game is constructed."""
    for bad, message in [
        (Rules(stock_exhausted="redeal"), "stock_exhausted='redeal'"),
        (Rules(max_turns=0), "max_turns=0 must be at least 1"),
        (Rules(hand_size_two_players=26), "hand_size_two_players=26 leaves no stock"),
    ]:
        with pytest.raises(ValueError, match=message):
            GameState(bad, 2, np.random.default_rng())


def test_rules_object_is_frozen_rules_8() -> None:
    """RULES §8: a rules object is fixed once built."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        make_rules().target = 1  # type: ignore[misc]
    assert isinstance(make_rules(), Rules)


# ---------------------------------------------------------------------- illegal actions
def check_illegal(state: GameState, action: object, *parts: str) -> None:
    """Applying ``action`` raises IllegalActionError (a ValueError) containing ``parts`` and leaves
    the state unchanged."""
    before = snapshot(state)
    with pytest.raises(ValueError) as info:
        state.apply(action)  # type: ignore[arg-type]
    assert isinstance(info.value, IllegalActionError)
    for part in parts:
        assert part in str(info.value)
    assert snapshot(state) == before


def test_illegal_actions_in_draw_phase_rules_4_1() -> None:
    """RULES §4.1: in the draw phase only draw and take are legal; a take cannot go deeper than the
    staircase."""
    state = new_deal(hands={0: ["9H", "9D", "9C", "2S", "3S", "5D", "7C"]}, staircase="QD")
    check_illegal(state, parse_action("discard 9H"), "discard 9H", "draw phase", "§4.1")
    check_illegal(state, parse_action("meld 9H 9D 9C"), "meld 9H 9D 9C", "§4.1")
    check_illegal(state, parse_action("take 2"), "take 2", "only 1 cards")
    check_illegal(state, parse_action("layoff 9S set"), "layoff 9S set")


def test_illegal_actions_in_meld_phase_rules_4_3() -> None:
    """RULES §4.1-4.4: one draw per turn; only cards in hand; lay-offs need a fitting meld end."""
    state = new_deal(hands={0: ["9H", "9D", "9C", "2S", "3S", "5D", "7C"]}, staircase="QD", stock=["KC"])
    play(state, "draw")
    check_illegal(state, parse_action("draw"), "draw", "already drew")
    check_illegal(state, parse_action("take 1"), "take 1", "already drew")
    check_illegal(state, parse_action("meld 9S 9H 9D"), "meld 9S 9H 9D", "9S not in hand")
    check_illegal(state, parse_action("discard QD"), "discard QD", "QD not in hand")
    check_illegal(state, parse_action("layoff 2S low"), "layoff 2S low", "no meld on the table")
    play(state, "meld 9H 9D 9C")
    check_illegal(state, parse_action("layoff 5D set"), "layoff 5D set", "§4.3")
    play(state, "discard KC")
    assert state.current == 1


def test_illegal_index_and_type() -> None:
    """Indices outside 0..897 and non-integers raise IllegalActionError naming them."""
    state = new_deal()
    check_illegal(state, NUM_ACTIONS, "898")
    check_illegal(state, -1, "-1")
    check_illegal(state, "draw", "'draw'")
    check_illegal(state, 1.5, "1.5")


def test_numpy_integer_actions() -> None:
    """Gymnasium samples NumPy integers: they act like ints and leave only ints in the state."""
    state = new_deal(hands={0: ["9H", "9D", "9C", "2S", "3S", "5D", "7C"]}, staircase="QD", stock=["KC"])
    state.apply(np.int64(parse_action("draw")))
    state.apply(np.int32(parse_action("discard 7C")))
    assert names(state.staircase) == ["QD", "7C"]
    assert all(type(c) is int for c in state.staircase)
    state.apply(np.int64(parse_action("take 1")))
    assert state.hands[1] >> (bits("7C").bit_length() - 1) & 1
    assert all(type(h) is int for h in state.hands)
    assert state.legal_mask()[parse_action("discard 7C")] == 0  # just taken (§4.4)


def test_no_action_after_the_deal_rules_6_1() -> None:
    """RULES §6.1: the deal ends at once; afterwards every action is illegal."""
    state = new_deal(hands={0: ["9S", "9H", "9D", "9C", "4S", "5S", "6S"]}, staircase="QD", stock=["7S"])
    play(state, "draw", "meld 9S 9H 9D 9C", "meld 4S 5S 6S 7S")
    assert state.deal_over and not state.legal_mask().any() and state.legal_actions() == []
    check_illegal(state, parse_action("draw"), "draw", "the deal is over")
    check_illegal(state, parse_action("take 1"), "take 1", "the deal is over")
