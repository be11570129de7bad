"""treppen_env.agent_hooks.random_playout: a whole deal of uniformly random legal actions in one kernel."""

from __future__ import annotations

import numpy as np
import pytest

from treppen_env.agent_hooks import random_playout
from treppen_env.engine import OUTCOMES, GameState
from treppen_env.rules import make_rules


@pytest.mark.parametrize(
    ("preset", "players", "options"),
    [
        ("treppenromme", 2, {}),
        ("treppenromme", 4, {"hand_penalty": True}),
        ("rum500", 3, {}),
        ("rum500", 2, {"stock_exhausted": "reshuffle", "max_turns": 200}),
        ("treppenromme", 2, {"stock_exhausted": "reshuffle", "max_turns": 200}),
    ],
)
def test_random_playouts_end_the_deal_in_a_valid_state(preset: str, players: int, options: dict) -> None:
    outcomes = set()
    for seed in range(30):
        state = GameState(make_rules(preset, **options), players, np.random.default_rng(seed))
        state.deal(seed % players)
        twin = state.clone()
        steps = random_playout(state, seed)
        assert steps > 0 and state.deal_over and state.outcome in OUTCOMES
        state.validate()  # every card still in exactly one place, the table legal
        assert not state.legal_mask().any()
        assert state.totals == state.deal_points
        assert random_playout(twin, seed) == steps and twin.deal_points == state.deal_points  # seeded
        outcomes.add(state.outcome)
    if players == 2:  # random players go out at 2 seats; at 4 the stock runs out first
        assert outcomes & {"went_out", "romme"}


def test_a_playout_from_mid_deal_keeps_the_booked_points() -> None:
    """60 random steps in, seat 1 has booked 14 points (RULES §5.2); the playout from there books
    on top of them (a seeded deal: its end is pinned)."""
    state = GameState(make_rules(), 2, np.random.default_rng(1))
    state.deal(0)
    rng = np.random.default_rng(2)
    for _ in range(60):
        state.apply(int(rng.choice(state.legal_actions())))
    assert not state.deal_over and state.points == [0, 14]
    assert random_playout(state, 3) == 177
    assert (state.outcome, state.deal_points) == ("went_out", [200, 131])
