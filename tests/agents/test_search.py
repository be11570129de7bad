"""Search agents: rollout and IS-MCTS (docs/ARCHITECTURE.md "Agents").

No peeking (same observation + seed = same action whatever the hidden cards), only legal actions,
budgets respected (counted in simulations, never timed tightly), seeds repeat, specs.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import agents
from agents import GreedyAgent, ISMCTSAgent, RolloutAgent
from agents.search import public_view
from arena.match import play_match
from tests.env_helpers import swap_hidden
from treppen_env import raw_env
from treppen_env.engine import GameState
from treppen_env.observation import Encoder, decode, encode, views
from treppen_env.rules import make_rules


def greedy_position(preset: str, players: int, seed: int, steps: int) -> GameState:
    """The position after ``steps`` greedy moves of a seeded deal (not over)."""
    rules = make_rules(preset)
    state = GameState(rules, players, np.random.default_rng(seed))
    state.deal(0)
    greedy = GreedyAgent(rules=rules)
    for _ in range(steps):
        state.apply(greedy.act(observe(state)))
    assert not state.deal_over
    return state


def observe(state: GameState) -> dict:
    return {"observation": encode(state, state.current), "action_mask": state.legal_mask().copy()}


def discard_position() -> GameState:
    """A 2-player treppenromme position where the mover chooses its discard (a searched choice)."""
    state = greedy_position("treppenromme", 2, 3, 9)
    assert state.legal_mask()[846:].sum() >= 5
    return state


SEARCHERS = {
    "ismcts": lambda seed: ISMCTSAgent(seed=seed, iterations=12),
    "rollout": lambda seed: RolloutAgent(seed=seed, k=2),
    "ismcts-all-random": lambda seed: ISMCTSAgent(seed=seed, iterations=12, moves="all", playout="random"),
}


@pytest.mark.parametrize("name", sorted(SEARCHERS))
def test_no_peeking_same_observation_same_action(name: str) -> None:
    """Two positions that look the same to the searcher but hide different cards: same action."""
    state = discard_position()
    rng = np.random.default_rng(0)
    acted = set()
    for trial in range(3):
        other = swap_hidden(state, state.current, rng)
        assert other.hands != state.hands  # the hidden cards really differ
        obs, obs2 = observe(state), observe(other)
        np.testing.assert_array_equal(obs["observation"], obs2["observation"])
        first, second = SEARCHERS[name](trial), SEARCHERS[name](trial)
        action = first.act(obs)
        assert second.act(obs2) == action
        assert first.simulations > 0  # the action was searched, not forced
        acted.add(action)
    assert acted <= set(np.flatnonzero(state.legal_mask()).tolist())


@pytest.mark.parametrize(("preset", "players"), [("treppenromme", 2), ("rum500", 3), ("treppenromme", 4)])
def test_search_agents_play_only_legal_actions(preset: str, players: int) -> None:
    """Whole deals against greedy through the match loop (raw_env raises on an illegal action)."""
    env = raw_env(num_players=players, rules=preset)
    for seed, (name, make) in enumerate(
        [
            ("ismcts", lambda: ISMCTSAgent(rules=preset, iterations=3)),
            ("rollout", lambda: RolloutAgent(rules=preset, k=1)),
        ]
    ):
        seats = [make(), *(GreedyAgent(rules=preset) for _ in range(players - 1))]
        result = play_match(env, seats, seed=seed, agent_seeds=list(range(players)))
        assert result.outcome is not None, name
        assert sum(1 for _ in result.actions) > players


def test_budget_in_iterations_is_counted_exactly() -> None:
    state = discard_position()
    obs = observe(state)
    ismcts = ISMCTSAgent(seed=0, iterations=7)
    ismcts.act(obs)
    assert ismcts.simulations == 7
    rollout = RolloutAgent(seed=0, k=3)
    rollout.act(obs)
    candidates = state.legal_mask()[846:].sum()  # plan moves at a discard: every legal discard
    assert rollout.simulations == 3 * candidates
    capped = RolloutAgent(seed=0, k=3, iterations=5)
    capped.act(obs)
    assert capped.simulations == 5


def test_budget_in_seconds_stops_the_search() -> None:
    """A tiny time budget ends the search long before its iteration cap (bound kept generous)."""
    obs = observe(discard_position())
    agent = ISMCTSAgent(seed=0, iterations=10**6, seconds=0.01)
    start = time.process_time()
    agent.act(obs)
    assert 1 <= agent.simulations < 10**6
    assert time.process_time() - start < 30.0


def test_forced_moves_are_not_searched() -> None:
    """With one searched choice (greedy lays in plan mode, or one legal action) nothing is simulated."""
    state = greedy_position("treppenromme", 2, 3, 0)
    agent = ISMCTSAgent(seed=0, iterations=5)
    mask = np.zeros_like(state.legal_mask())
    mask[0] = 1
    assert agent.act({"observation": encode(state, state.current), "action_mask": mask}) == 0
    assert agent.simulations == 0


@pytest.mark.parametrize("name", sorted(SEARCHERS))
def test_same_seed_same_action(name: str) -> None:
    state = greedy_position("treppenromme", 2, 5, 4)
    obs = observe(state)
    agent = SEARCHERS[name](11)
    first = agent.act(obs)
    agent.reset(seed=11)
    assert agent.act(obs) == first
    assert SEARCHERS[name](11).act(obs) == first


def test_public_view_equals_the_decoded_observation() -> None:
    """The playouts' fast path sees exactly what the observation holds, and greedy decides alike."""
    for preset, players in (("treppenromme", 2), ("rum500", 3), ("treppenromme", 4)):
        rules = make_rules(preset)
        greedy = GreedyAgent(rules=rules)
        encoder = Encoder()
        state = GameState(rules, players, np.random.default_rng(players))
        state.deal(1)
        rng = np.random.default_rng(0)
        while not state.deal_over:
            for seat in range(players):
                obs = encode(state, seat)
                view, table = public_view(state, seat, encoder)
                assert view == decode(obs)
                np.testing.assert_array_equal(table, views(obs)["table"])
            mask = state.legal_mask()
            action = greedy.act(observe(state))
            view, table = public_view(state, state.current, encoder)
            assert greedy.decide(view, table, mask, np.flatnonzero(mask)) == action
            lays = [a for a in np.flatnonzero(mask).tolist() if 53 <= a < 846]
            state.apply(int(rng.choice(lays)) if lays and rng.random() < 0.5 else action)


def test_specs_build_search_agents_with_their_budgets() -> None:
    agent = agents.load("ismcts,seconds=0.25,iterations=500,playout=random,c=1", seed=2)
    assert isinstance(agent, ISMCTSAgent)
    assert (agent.seconds, agent.iterations, agent.playout, agent.c) == (0.25, 500, "random", 1.0)
    rollout = agents.load("rollout,k=8,playout=greedy,rules=rum500")
    assert isinstance(rollout, RolloutAgent) and (rollout.k, rollout.rules.name) == (8, "rum500")
    with pytest.raises(ValueError, match=r"agent 'ismcts' has no setting 'budget'; allowed: seed=None, rules="):
        agents.load("ismcts,budget=3")
    with pytest.raises(ValueError, match="playout='smart'; choose one of"):
        agents.load("ismcts,playout=smart")
    with pytest.raises(ValueError, match="iterations=0 must be at least 1"):
        agents.load("rollout,iterations=0")
    with pytest.raises(ValueError, match="seconds=0 must be positive"):
        agents.load("ismcts,seconds=0")


def test_rollout_keeps_greedys_choice_unless_a_candidate_beats_it_by_the_margin() -> None:
    state = discard_position()
    obs = observe(state)
    greedy = GreedyAgent(rules="treppenromme").act(obs)
    cautious = RolloutAgent(seed=0, k=2, margin=1e9)
    assert cautious.act(obs) == greedy
    assert cautious.simulations > 0


def test_search_under_other_rules_than_the_game_is_a_clear_error() -> None:
    """The root sample reproduces the mask exactly under the right rules; other rules are caught."""
    state = next(  # a draw where rum500 forbids a take that treppenromme allows (RULES §4.2)
        s
        for n in range(80)
        if 1 <= sum((s := greedy_position("rum500", 2, 1, n)).legal_mask()[1:53]) < len(s.staircase)
    )
    with pytest.raises(ValueError, match=r"does not follow the rules 'treppenromme'.*ismcts,rules=rum500"):
        ISMCTSAgent(seed=0).act(observe(state))
    assert ISMCTSAgent(seed=0, rules="rum500", iterations=2).act(observe(state)) in state.legal_actions()
