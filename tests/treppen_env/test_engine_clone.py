"""GameState.clone: the cheap copy search plays on (the search agents' inner loop).

A clone must evolve exactly as the original would (same legal masks, same reshuffles) and
independently of it (playing on one never changes the other).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.rules_helpers import snapshot
from treppen_env.engine import GameState
from treppen_env.rules import make_rules


def lay_first(legal: list[int], rng: np.random.Generator) -> int:
    """A random legal action that prefers melds and lay-offs, so tables fill up."""
    lays = [a for a in legal if 53 <= a < 846]
    return int(rng.choice(lays if lays and rng.random() < 0.8 else legal))


def mid_deal(preset: str, players: int, seed: int, steps: int, **options: object) -> GameState:
    state = GameState(make_rules(preset, **options), players, np.random.default_rng(seed))
    state.deal(seed % players)
    rng = np.random.default_rng(seed + 1000)
    for _ in range(steps):
        if state.deal_over:
            break
        state.apply(lay_first(state.legal_actions(), rng))
    return state


@pytest.mark.parametrize(
    ("preset", "players", "options"),
    [
        ("treppenromme", 2, {}),
        ("treppenromme", 4, {}),
        ("rum500", 3, {}),
        ("rum500", 2, {"stock_exhausted": "reshuffle"}),
    ],
)
def test_clone_plays_on_identically_and_independently(preset: str, players: int, options: dict) -> None:
    for seed in range(6):
        state = mid_deal(preset, players, seed, steps=25, **options)
        if state.deal_over:
            continue
        before = snapshot(state)
        twin = state.clone()
        assert snapshot(twin) == before
        # the twin plays the deal out: the original is untouched
        rng = np.random.default_rng(seed)
        trail = []
        while not twin.deal_over:
            action = lay_first(twin.legal_actions(), rng)
            trail.append(action)
            twin.apply(action)
        assert snapshot(state) == before
        # the original replays the same actions to the same end, reshuffles included (RULES §6.4)
        for action in trail:
            state.apply(action)
        assert snapshot(state) == snapshot(twin)
        assert (state.outcome, state.deal_points, state.totals) == (twin.outcome, twin.deal_points, twin.totals)


def test_clone_takes_a_generator_and_copies_the_melds() -> None:
    state = mid_deal("treppenromme", 2, 3, steps=40)
    assert state.melds, "the seed must give a table with melds"
    rng = np.random.default_rng(5)
    twin = state.clone(rng)
    assert twin.rng is rng and state.rng is not rng
    assert all(a is not b and a == b for a, b in zip(state.melds, twin.melds, strict=True))
    twin.melds[0].bits = 0
    assert state.melds[0].bits != 0


def test_clone_before_the_first_deal() -> None:
    state = GameState(make_rules(), 2, np.random.default_rng(0))
    twin = state.clone()
    twin.deal(0)
    assert not hasattr(state, "hands")
