"""Third-party agents in ``agents.load``: ``package.module:ClassName`` and the ``treppen.agents``
entry points, with settings in the spec (docs/ARCHITECTURE.md "Agents")."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from treppen import agents
from treppen.arena.match import play_match
from treppen_env import raw_env

MODULE = '''
import numpy as np

from treppen.agents import Agent


class LowestAgent(Agent):
    """Plays the legal action with the lowest index, or the highest with reverse=true."""

    def __init__(self, seed=None, reverse=False):
        super().__init__(seed)
        self.reverse = reverse

    def act(self, observation):
        legal = np.flatnonzero(observation["action_mask"])
        return int(legal[-1] if self.reverse else legal[0])


class Plain:
    """Not an agents.Agent: any object with act (and reset) will do."""

    def __init__(self, offset=0):
        self.offset = offset
        self.resets = []

    def act(self, observation):
        return int(np.flatnonzero(observation["action_mask"])[self.offset])

    def reset(self, seed=None):
        self.resets.append(seed)


NOT_AN_AGENT = 3


def no_act():
    return object()
'''


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    """A package ``mybots`` on the path, offered as the entry point ``lowest`` of a fake distribution."""
    (tmp_path / "mybots").mkdir()
    (tmp_path / "mybots" / "__init__.py").write_text("")
    (tmp_path / "mybots" / "simple.py").write_text(textwrap.dedent(MODULE))
    info = tmp_path / "mybots-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mybots\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[treppen.agents]\nlowest = mybots.simple:LowestAgent\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    import sys

    for name in [m for m in sys.modules if m.startswith("mybots")]:
        del sys.modules[name]


def first_action(agent) -> int:
    env = raw_env(num_players=2)
    env.reset(seed=0)
    return agent.act(env.observe(env.agent_selection))


def test_module_class_spec_with_settings(third_party):
    agent = agents.load("mybots.simple:LowestAgent")
    assert type(agent).__name__ == "LowestAgent" and agent.reverse is False
    assert first_action(agent) == 0  # draw: the lowest legal action
    backwards = agents.load("mybots.simple:LowestAgent,reverse=true", seed=3)
    assert backwards.reverse is True and first_action(backwards) == 1  # take 1: the highest in the draw phase
    expected = "agent 'mybots.simple:LowestAgent' has no setting 'depth'; allowed: seed=None, reverse=False"
    with pytest.raises(ValueError, match=re.escape(expected)):
        agents.load("mybots.simple:LowestAgent,depth=2")


def test_entry_point_name(third_party):
    agent = agents.load("lowest,reverse=true")
    assert type(agent).__name__ == "LowestAgent" and agent.reverse is True
    installed = r"installed agents \['lowest', 'openspiel'\] \(entry points 'treppen.agents'\)"
    with pytest.raises(ValueError, match=installed):
        agents.load("highest")


def test_plain_objects_are_wrapped_and_play(third_party):
    agent = agents.load("mybots.simple:Plain,offset=0")
    assert isinstance(agent, agents.ExternalAgent) and agent.agent.offset == 0
    result = play_match(raw_env(num_players=2), [agent, agents.load("random")], seed=1, agent_seeds=[5, 6])
    assert result.outcome is not None and agent.agent.resets == [5]
    assert np.isin(result.actions[:1], [0]).all()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nosuchmodule:Agent", "cannot import 'nosuchmodule'"),
        ("mybots.simple:Missing", "module 'mybots.simple' has no 'Missing'"),
        ("mybots.simple:NOT_AN_AGENT", "is not a class or a function that builds an agent"),
        ("mybots.simple:no_act", "which has no act\\(observation\\) method"),
    ],
)
def test_bad_third_party_specs(third_party, spec, message):
    with pytest.raises(ValueError, match=message):
        agents.load(spec)
