"""The greedy heuristic's kernels (treppen_env.agent_core.greedy_kernels, treppen_env.agent_core.reader): the recorded
decisions, and that they read only what the mover may see (RULES §4; docs/ARCHITECTURE.md "Agents")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.agents.public_view import public_view
from tests.env_helpers import swap_hidden
from tests.fixtures.make_greedy_fixture import CONFIGS, PLAYS, PRESETS, make_agent, observation
from treppen.agents import GreedyAgent
from treppen_env.agent_core import greedy_kernels, reader
from treppen_env.agent_hooks import heuristic_inputs
from treppen_env.engine import GameState
from treppen_env.observation import Encoder, encode
from treppen_env.rules import make_rules

FIXTURE = Path(__file__).parents[1] / "fixtures" / "greedy_decisions.npz"


def test_actions_match_the_recorded_decisions():
    """Every recorded position (tests/fixtures/make_greedy_fixture.py), every configuration."""
    with np.load(FIXTURE) as npz:
        data = {name: npz[name] for name in npz.files}
    actions = data["actions"]
    assert actions.shape[0] >= 20_000 and actions.shape[1] == len(CONFIGS)
    wrong = []
    for p_index, preset in enumerate(PRESETS):
        agents = [make_agent(c, preset) for c in CONFIGS]
        for n in np.flatnonzero(data["preset"] == p_index):
            obs = observation(data["obs_q"][n], data["mask"][n], int(data["max_turns"][n]))
            for k, (config, agent) in enumerate(zip(CONFIGS, agents, strict=True)):
                if config["rules"] is None:
                    agent.reset()
                got = agent.act(obs)
                if got != actions[n, k]:
                    wrong.append((int(n), k, preset, int(data["players"][n]), PLAYS[data["play"][n]], got))
    assert not wrong, f"{len(wrong)} decisions differ, e.g. (position, config, preset, players, play, got): {wrong[:5]}"


def deal_states(preset: str, players: int, seed: int, greedy: bool):
    """The states of one seeded deal, played by greedy or uniformly random moves."""
    rules = make_rules(preset)
    state = GameState(rules, players, np.random.default_rng(seed))
    state.deal(seed % players)
    agent = GreedyAgent(rules=rules)
    rng = np.random.default_rng(seed + 1)
    while not state.deal_over:
        yield state
        obs = {"observation": encode(state, state.current), "action_mask": state.legal_mask().copy()}
        legal = np.flatnonzero(obs["action_mask"])
        state.apply(agent.act(obs) if greedy else int(legal[rng.integers(legal.size)]))


@pytest.mark.parametrize(
    ("preset", "players"), [("treppenromme", 2), ("treppenromme", 4), ("rum500", 2), ("rum500", 3)]
)
def test_inputs_from_a_state_equal_those_from_the_observation(preset, players):
    """The arrays built from a state's public view equal those read from the mover's observation,
    and so does the action (the search playouts' path and the observation path)."""
    encoder = Encoder()
    agent = GreedyAgent(rules=preset)
    for seed in range(3):
        for state in deal_states(preset, players, seed, greedy=seed % 2 == 0):
            seat = state.current
            from_obs = reader.observation_inputs(encode(state, seat))
            view, table = public_view(state, seat, encoder)
            from_view = reader.view_inputs(view, table)
            for a, b in zip(from_obs, from_view, strict=True):
                np.testing.assert_array_equal(a, b)
            assert_same_inputs(heuristic_inputs(state, seat), from_obs)
            mask = state.legal_mask()
            obs = {"observation": encode(state, seat), "action_mask": mask.copy()}
            action = agent.act(obs)
            assert agent.decide(view, table, mask, np.flatnonzero(mask)) == action
            assert agent.decide_state(state) == action


def assert_same_inputs(got: greedy_kernels.Inputs, expected: greedy_kernels.Inputs) -> None:
    """Equal input arrays, the meld table compared as a set of rows (its order is free)."""
    np.testing.assert_array_equal(got.cards, expected.cards)
    np.testing.assert_array_equal(got.stairs, expected.stairs)
    np.testing.assert_array_equal(got.scalars, expected.scalars)
    rows = sorted(zip(map(tuple, got.melds.tolist()), got.meld_bits.tolist(), strict=True))
    want = sorted(zip(map(tuple, expected.melds.tolist()), expected.meld_bits.tolist(), strict=True))
    assert rows == want


@pytest.mark.parametrize(("preset", "players"), [("treppenromme", 3), ("rum500", 4)])
def test_reads_only_what_the_mover_may_see(preset, players):
    """Two states that differ only in cards the mover cannot see (the stock order, the opponents'
    unseen hand cards) give the same kernel inputs and the same action, from the observation and
    from the state."""
    rng = np.random.default_rng(5)
    encoder = Encoder()
    agent = GreedyAgent(rules=preset)
    checked = 0
    for seed in range(4):
        for state in deal_states(preset, players, seed, greedy=seed % 2 == 1):
            seat = state.current
            other = swap_hidden(state, seat, rng)
            assert other.hands != state.hands or other.stock != state.stock or len(state.stock) < 2
            actions = []
            for s in (state, other):
                mask = s.legal_mask()
                view, table = public_view(s, seat, encoder)
                obs = {"observation": encode(s, seat), "action_mask": mask.copy()}
                actions += [agent.act(obs), agent.decide(view, table, mask, np.flatnonzero(mask))]
                actions.append(agent.decide_state(s))
                inputs = reader.observation_inputs(obs["observation"])
                if s is state:
                    first, first_state = inputs, heuristic_inputs(s, seat)
                else:
                    for a, b in zip(first, inputs, strict=True):
                        np.testing.assert_array_equal(a, b)
                    for a, b in zip(first_state, heuristic_inputs(s, seat), strict=True):
                        np.testing.assert_array_equal(a, b)
            assert len(set(actions)) == 1
            checked += 1
    assert checked > 50


def test_inputs_of_other_dtypes_and_errors():
    agent = GreedyAgent(rules="treppenromme")
    state = next(deal_states("treppenromme", 2, 0, greedy=True))
    obs = {"observation": encode(state, state.current), "action_mask": np.zeros_like(state.legal_mask())}
    with pytest.raises(ValueError, match="no legal action"):
        agent.act(obs)
    frozen = {"observation": encode(state, state.current), "action_mask": state.legal_mask().copy()}
    expected = agent.act(frozen)
    for array in frozen.values():
        array.flags.writeable = False
    assert agent.act(frozen) == expected  # read-only arrays are copied, not compiled for
    assert agent.act({k: v.astype(bool if k == "action_mask" else np.float64) for k, v in frozen.items()}) == expected
    with pytest.raises(ValueError, match="shape"):
        agent.act({"observation": obs["observation"][:-1], "action_mask": state.legal_mask()})
