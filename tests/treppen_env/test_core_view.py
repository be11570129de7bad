"""The mover's visible information as arrays (treppen_env.view): what the observation shows."""

from __future__ import annotations

import numpy as np

from tests.env_helpers import swap_hidden
from treppen_env.cards import bits_to_cards
from treppen_env.core import layout
from treppen_env.engine import GameState
from treppen_env.observation import decode, encode
from treppen_env.rules import make_rules
from treppen_env.view import mover_view


def views_along_a_deal(preset: str, players: int, seed: int):
    state = GameState(make_rules(preset), players, np.random.default_rng(seed))
    state.deal(seed % players)
    rng = np.random.default_rng(seed + 1)
    while not state.deal_over:
        yield state
        legal = state.legal_actions()
        lays = [a for a in legal if 53 <= a < 846]
        state.apply(int(rng.choice(lays if lays and rng.random() < 0.7 else legal)))


def test_mover_view_matches_the_observation_and_hides_what_it_should() -> None:
    for preset, players in (("treppenromme", 2), ("rum500", 3), ("treppenromme", 4)):
        for state in views_along_a_deal(preset, players, seed=players):
            view = mover_view(state)
            seen = decode(encode(state, state.current))
            n, seat = players, view.seat
            assert seat == state.current and tuple(bits_to_cards(int(view.hand))) == seen.hand
            assert tuple(view.staircase.tolist()) == seen.staircase
            assert tuple(view.hand_sizes[(seat + k) % n] for k in range(n)) == seen.hand_sizes
            assert view.stock_size == seen.stock_size
            for k in range(1, n):
                assert tuple(bits_to_cards(int(view.known[(seat + k) % n]))) == seen.known[k - 1]
            cards = {tuple(bits_to_cards(int(b))) for b in view.meld_bits.tolist()}
            assert cards == {tuple(sorted(m["cards"])) for m in seen.melds}
            assert view.melds.shape == (len(seen.melds), layout.MELD_COLS)
            assert tuple(view.slots.tolist()) == state.layoff_slots
            assert (view.must_use, view.banned) == (state.must_use, state.banned)
            # nothing of what the mover cannot see enters the view
            other = mover_view(swap_hidden(state, seat, np.random.default_rng(0)))
            for a, b in zip(view, other, strict=True):
                np.testing.assert_array_equal(a, b)
