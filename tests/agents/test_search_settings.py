"""The search agents' settings (agents.search_settings): one frozen dataclass, read by the agents
and the spec parser alike, with bounded budgets (docs/ARCHITECTURE.md "Agents")."""

from __future__ import annotations

import dataclasses

import pytest

from treppen import agents
from treppen.agents import ISMCTSAgent, RolloutAgent
from treppen.agents.search_settings import (
    DEFAULT_PLAYOUTS,
    MAX_PLAYOUTS,
    ISMCTSSettings,
    RolloutSettings,
    SearchSettings,
)
from treppen.agents.spec import settings_of


def test_the_agents_take_their_settings_whole_or_by_name() -> None:
    settings = RolloutSettings(playouts=8, deadline=0.5, bias=0.1)
    agent = RolloutAgent(seed=0, settings=settings)
    assert agent.settings is settings
    assert RolloutAgent(seed=0, playouts=8, deadline=0.5, bias=0.1).settings == settings
    assert RolloutAgent(seed=0, settings=settings, playouts=9).settings == dataclasses.replace(settings, playouts=9)
    assert (agent.playouts, agent.settings.deadline, agent.settings.bias) == (8, 0.5, 0.1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.playouts = 9  # type: ignore[misc]
    with pytest.raises(ValueError, match="ISMCTSAgent takes ISMCTSSettings, not RolloutSettings"):
        ISMCTSAgent(settings=settings)


def test_an_agents_settings_are_replaced_whole_and_checked() -> None:
    """The settings are the agent's ``settings`` only (no attribute forwards to them): a change
    makes a checked copy."""
    agent = RolloutAgent(seed=0, beliefs="greedy")
    before = agent.settings
    agent.settings = agent.settings.with_(beliefs="uniform")
    assert agent.settings == dataclasses.replace(before, beliefs="uniform") and before.beliefs == "greedy"
    with pytest.raises(ValueError, match="beliefs='some'; choose one of"):
        agent.settings.with_(beliefs="some")
    assert not hasattr(agent, "beliefs")


def test_finish_by_gives_the_next_decisions_the_time_left_as_their_deadline() -> None:
    agent = RolloutAgent(seed=0, playouts=8)
    agent.clock = lambda: 10.0  # type: ignore[method-assign]
    agent.finish_by(12.5)
    assert agent.settings == RolloutSettings(playouts=8, deadline=2.5)
    agent.finish_by(9.0)  # passed: the floor budget
    assert agent.settings.deadline == 0.0


def test_the_playout_cap_defaults_only_without_another_budget() -> None:
    assert SearchSettings().playout_cap == DEFAULT_PLAYOUTS
    assert SearchSettings(seconds=1).playout_cap is None
    assert SearchSettings(deadline=1).playout_cap is None
    assert SearchSettings(deadline=1, playouts=500).playout_cap == 500
    assert SearchSettings(deadline=1).deadline == 1.0 and isinstance(SearchSettings(deadline=1).deadline, float)


def test_the_spec_parser_reads_the_settings_fields() -> None:
    """One source: a spec may set exactly the dataclass's fields, with its defaults."""
    for factory, settings in ((RolloutAgent, RolloutSettings), (ISMCTSAgent, ISMCTSSettings)):
        allowed = settings_of(factory)
        assert list(allowed) == ["seed", "rules", *settings.keys()]
        assert {k: allowed[k] for k in settings.keys()} == settings.keys()
    assert "value_turns" in settings_of(ISMCTSAgent) and "c" not in settings_of(RolloutAgent)
    agent = agents.load("ismcts,deadline=1,value_weight=0.5", seed=0)
    assert agent.settings == ISMCTSSettings(deadline=1.0, value_weight=0.5)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("rollout,playouts=1000000000", rf"playouts=1000000000 must be a whole number .* at most {MAX_PLAYOUTS}"),
        ("ismcts,playouts=1000001", r"playouts=1000001 must be .* at most 1000000"),
        ("rollout,seconds=1e9", r"seconds=1000000000\.0 must be positive and finite, at most 600 CPU seconds"),
        ("rollout,seconds=-1", "seconds=-1 must be positive"),
        ("rollout,deadline=601", r"deadline=601 must be 0\.\.600 wall-clock seconds per decision"),
        ("ismcts,deadline=-0.5", r"deadline=-0\.5 must be 0\.\.600"),
        ("rollout,deadline=nan", r"deadline=nan must be 0\.\.600"),
        ("rollout,deadline=soon", r"setting deadline='soon' must be float or none"),
        ("ismcts,value_turns=2,net=x.npz", "value_turns=2: IS-MCTS plays every simulation to its end"),
        ("rollout,own_playout=net", "net playouts and values need a network"),
        ("rollout,candidates=65", "candidates=65 must be a whole number 2..64"),
    ],
)
def test_budgets_out_of_bounds_are_refused_naming_the_setting_and_range(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        agents.load(spec)
