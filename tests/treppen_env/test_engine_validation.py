"""Validation of states built from outside input, before any kernel runs on them.

A deck option, a record, a determinization or a state edited field by field must hold each card
exactly once (RULES §1.1), legal melds (§3) and a consistent turn (§4); otherwise a clear
``ValueError`` names the problem instead of play on corrupt arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

import treppen_env
from tests.rules_helpers import bits, new_deal, play
from treppen_env import actions
from treppen_env.cards import FULL_DECK, bits_to_cards, cards_to_bits, parse_card
from treppen_env.core import kernels, layout
from treppen_env.core.tables import rules_table
from treppen_env.determinize import sample_state
from treppen_env.engine import GameState, Phase, TableMeld
from treppen_env.melds import MELD_BITS, NUM_SET_MELDS, allowed_melds, run_index
from treppen_env.observation import SLICES, encode
from treppen_env.rules import make_rules


def dealt(seed: int = 0, players: int = 2) -> GameState:
    state = GameState(make_rules(), players, np.random.default_rng(seed))
    state.deal(0)
    return state


def test_kernel_action_blocks_match_the_action_space() -> None:
    assert (
        kernels.A_DRAW,
        kernels.A_TAKE_BASE,
        kernels.A_MELD_BASE,
        kernels.A_LAYOFF_BASE,
        kernels.A_DISCARD_BASE,
    ) == (
        actions.DRAW,
        actions.TAKE_BASE,
        actions.MELD_BASE,
        actions.LAYOFF_BASE,
        actions.DISCARD_BASE,
    )
    assert (kernels.TARGET_SET, kernels.TARGET_LOW, kernels.TARGET_HIGH) == (
        actions.TARGET_SET,
        actions.TARGET_LOW,
        actions.TARGET_HIGH,
    )
    assert tuple(Phase) == (layout.DRAW, layout.MELD, layout.DEAL_OVER)


def test_a_bad_deck_option_is_named() -> None:
    env = treppen_env.raw_env(num_players=2)
    deck = [f"{r}{s}" for s in "SHDC" for r in "A23456789TJQK"]
    with pytest.raises(ValueError, match=r"repeated: AS.*missing: 2S"):
        env.reset(options={"deck": ["AS", *deck[2:], "AS"]})
    with pytest.raises(ValueError, match="got 51 cards"):
        env.reset(options={"deck": deck[:-1]})


def test_a_card_in_two_places_is_named_before_play() -> None:
    state = dealt()
    card = state.stock[-1]
    state.hands[0] |= 1 << card
    with pytest.raises(ValueError, match=r"card \w\w is in two places: the hand of seat 0 and the stock"):
        state.legal_mask()
    with pytest.raises(ValueError, match="in two places"):
        state.apply(actions.DRAW)


def test_a_missing_card_is_named() -> None:
    state = dealt()
    stock = list(state.stock)
    state.stock = stock[1:]
    with pytest.raises(ValueError, match=r"1 cards are nowhere in the state: \w\w"):
        state.legal_mask()


def test_known_cards_must_be_in_the_hand() -> None:
    state = dealt()
    state.known[1] = 1 << state.stock[0]
    with pytest.raises(ValueError, match=r"seat 1 is known to hold .* not in its hand"):
        state.legal_actions()


def test_a_banned_or_must_use_card_must_be_the_movers() -> None:
    state = dealt()
    state.banned = state.staircase[0]
    with pytest.raises(ValueError, match=r"banned card is .*: it must be a card in the mover's hand"):
        state.legal_mask()
    state = dealt()
    state.apply(actions.DRAW)
    state.must_use = state.stock[0]
    with pytest.raises(ValueError, match="must-use card"):
        state.apply(actions.DISCARD_BASE + next(c for c in range(52) if state.hands[state.current] >> c & 1))


def test_a_table_meld_must_be_a_legal_meld() -> None:
    state = new_deal(hands={0: ["6S", "6H", "6D", "QH", "KH", "AH", "2H"]}, staircase="9C")
    play(state, "draw", "meld 6S 6H 6D")
    (meld,) = state.melds
    state.melds = [TableMeld(meld.owner, "run", 0, 5, 3, meld.bits)]
    with pytest.raises(ValueError, match=r"table meld 0 .*are not the run it describes"):
        state.legal_mask()
    state.melds = [TableMeld(meld.owner, "set", -1, 5, 3, meld.bits | bits("6C"))]
    with pytest.raises(ValueError, match="not a set of 3 or 4 cards"):
        state.legal_mask()
    rum = new_deal("rum500", hands={0: ["QH", "KH", "AH", "2H"]}, staircase="9C")
    rum.apply(actions.DRAW)
    rum.hands[0] &= ~bits("KH", "AH", "2H")
    rum.melds = [TableMeld(0, "run", 1, 12, 3, bits("KH", "AH", "2H"))]  # K-A-2 turns the corner (§3.2)
    with pytest.raises(ValueError, match="not a run allowed by these rules"):
        rum.legal_mask()


def test_from_position_is_validated_and_plays_like_the_dealt_state() -> None:
    state = dealt(3)
    twin = GameState.from_position(
        state.rules,
        np.random.default_rng(3),
        dealer=state.dealer,
        current=state.current,
        phase=state.phase,
        hands=list(state.hands),
        staircase=list(state.staircase),
        stock=list(state.stock),
    )
    np.testing.assert_array_equal(twin.legal_mask(), state.legal_mask())
    for action in (actions.DRAW, actions.DISCARD_BASE + next(iter(c for c in range(52) if state.hands[0] >> c & 1))):
        if state.legal_mask()[action]:
            state.apply(action)
            twin.apply(action)
    assert (twin.hands, twin.staircase, twin.stock) == (state.hands, state.staircase, state.stock)
    with pytest.raises(ValueError, match="in two places"):
        GameState.from_position(
            state.rules,
            np.random.default_rng(0),
            dealer=0,
            current=0,
            phase=Phase.DRAW,
            hands=[bits("AS", "2S"), bits("2S")],
            staircase=[parse_card("3S")],
            stock=[],
        )


def test_a_corrupt_observation_is_rejected_by_determinization() -> None:
    state = dealt(4)
    obs = encode(state, 0)
    bad = obs.copy()
    card = state.staircase[0]
    bad[SLICES["hand"].start + card] = 1.0  # the staircase card also in the observer's hand
    bad[SLICES["hand_sizes"].start] += 1 / 13
    with pytest.raises(ValueError, match="in two places"):
        sample_state(bad, "treppenromme", np.random.default_rng(0))


def test_the_arrays_after_an_edit_are_what_the_kernels_play_on() -> None:
    # edits through the views write the arrays; a consistent edit plays on
    state = dealt(5)
    mine = next(c for c in range(52) if state.hands[0] >> c & 1)
    top = state.stock[-1]
    state.hands[0] ^= (1 << mine) | (1 << top)
    state.stock[-1] = mine
    state.apply(actions.DRAW)
    assert state.hands[state.current] >> mine & 1


@pytest.mark.parametrize("preset", ["treppenromme", "rum500"])
def test_meld_kernels_find_exactly_the_candidates_within_a_hand(preset: str) -> None:
    # the kernels walk ranks and suits; the definition is the candidate table (RULES §3.1-3.2)
    rules = make_rules(preset)
    tab = rules_table(rules)
    allowed = allowed_melds(rules)
    empty = np.zeros(layout.U64_SIZE, dtype=np.uint64)
    assert kernels.NUM_SET_CANDIDATES == NUM_SET_MELDS
    assert all(
        kernels._run_candidate(s, low, n) == run_index(s, low, n)
        for s in range(4)
        for low in range(13)
        for n in (3, 13)
    )
    rng = np.random.default_rng(7)
    for size in [*range(3, 20), 30, 52] * 20:
        hand = cards_to_bits(rng.choice(52, size, replace=False).tolist())
        fits = ((MELD_BITS & np.uint64(FULL_DECK ^ hand)) == 0) & allowed
        card = int(rng.choice(list(bits_to_cards(hand))))
        for must_use in (-1, card):
            mask = np.zeros(actions.NUM_ACTIONS, dtype=np.int8)
            kernels.mark_melds(tab, np.uint64(hand), must_use, mask[actions.MELD_BASE : actions.LAYOFF_BASE])
            expected = fits & ((MELD_BITS >> np.uint64(card) & np.uint64(1)) == 1) if must_use >= 0 else fits
            np.testing.assert_array_equal(mask[actions.MELD_BASE : actions.LAYOFF_BASE] == 1, expected)
        assert kernels.can_play(empty, tab, MELD_BITS, card, np.uint64(hand)) == bool(
            (fits & ((MELD_BITS >> np.uint64(card) & np.uint64(1)) == 1)).any()
        )
