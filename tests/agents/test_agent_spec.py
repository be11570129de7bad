"""Agent specs with settings, ``NAME[,key=value]...`` (agents.spec, docs/ARCHITECTURE.md "Agents")."""

from __future__ import annotations

from pathlib import Path

import pytest

from treppen import agents
from treppen.agents import GreedyAgent
from treppen.agents.spec import parse_spec, parse_value
from treppen.arena.tournament import resolve_specs
from treppen_env.rules import make_rules


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3", 3),
        ("-2", -2),
        ("0.25", 0.25),
        ("1e-3", 0.001),
        ("true", True),
        ("False", False),
        ("none", None),
        ("greedy", "greedy"),
    ],
)
def test_values_are_read_as_bool_none_int_float_or_text(text: str, value: object) -> None:
    parsed = parse_value(text)
    assert parsed == value and type(parsed) is type(value)


def test_parse_spec_splits_base_and_settings() -> None:
    assert parse_spec("greedy") == ("greedy", {})
    assert parse_spec("ismcts,seconds=0.25,seed=7") == ("ismcts", {"seconds": 0.25, "seed": 7})
    assert parse_spec("rollout,playouts=8,playout=greedy") == ("rollout", {"playouts": 8, "playout": "greedy"})
    assert parse_spec("pkg.mod:Cls,flag=true") == ("pkg.mod:Cls", {"flag": True})
    assert parse_spec(Path("runs/a/model.zip")) == ("runs/a/model.zip", {})


def test_an_existing_path_with_commas_is_taken_whole(tmp_path: Path) -> None:
    odd = tmp_path / "run,1"
    odd.mkdir()
    assert parse_spec(str(odd)) == (str(odd), {})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (",k=1", "no name"),
        ("greedy,epsilon", "not key=value"),
        ("greedy,=1", "not key=value"),
        ("greedy,epsilon=0.1,epsilon=0.2", "given twice"),
    ],
)
def test_malformed_specs_are_rejected(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_spec(spec)


def test_load_passes_settings_to_the_constructor() -> None:
    greedy = agents.load("greedy,epsilon=0.5,card_cost=2,rules=rum500", seed=3)
    assert isinstance(greedy, GreedyAgent)
    assert (greedy.epsilon, greedy.card_cost, greedy.rules.name) == (0.5, 2.0, "rum500")
    assert isinstance(greedy.card_cost, float)  # an int given for a float setting becomes a float
    assert agents.load("greedy,epsilon=0.5", epsilon=0.1).epsilon == 0.5  # the spec wins over kwargs


def test_load_rejects_unknown_settings_and_bad_values_listing_the_allowed_ones() -> None:
    with pytest.raises(
        ValueError, match=r"agent 'greedy' has no setting 'budget'; allowed: seed=None, rules=None, epsilon=0\.0"
    ):
        agents.load("greedy,budget=3")
    with pytest.raises(ValueError, match="epsilon='x' must be float"):
        agents.load("greedy,epsilon=x")
    with pytest.raises(ValueError, match="show_table=1 must be true or false"):
        agents.load("human,show_table=1")
    with pytest.raises(ValueError, match=r"unknown agent spec 'grredy'.*NAME,key=value"):
        agents.load("grredy,epsilon=0.1")


def test_tournament_names_keep_settings_apart_from_labels() -> None:
    specs = resolve_specs(["greedy,epsilon=0.1", "eps=greedy,epsilon=0.2", "greedy"])
    assert specs == {"greedy,epsilon=0.1": "greedy,epsilon=0.1", "eps": "greedy,epsilon=0.2", "greedy": "greedy"}


def test_load_hands_the_games_rules_to_agents_that_take_them():
    """The table's rules reach every agent that simulates or scores by them (RULES §8); the others
    are built as before, and a ``rules`` setting in the spec wins."""
    assert agents.load("ismcts", rules="rum500").rules.name == "rum500"
    assert agents.load("greedy", rules=make_rules("rum500", max_turns=50)).rules.max_turns == 50
    assert agents.load("greedy,rules=treppenromme", rules="rum500").rules.name == "treppenromme"
    assert isinstance(agents.load("random", rules="rum500"), agents.RandomAgent)


def test_the_levels_are_agent_specs_with_settings() -> None:
    """easy, medium and hard name their agent at a 2-player table of the rules' preset (the zoo's)."""
    assert isinstance(agents.load("easy,epsilon=0.5"), GreedyAgent) and agents.load("easy,epsilon=0.5").epsilon == 0.5
    hard = agents.load("hard,playouts=3", rules="rum500")  # the zoo's search-rum500-2p, fewer playouts
    assert isinstance(hard, agents.RolloutAgent) and hard.playouts == 3 and hard.rules.name == "rum500"
    assert type(agents.load("medium")).__name__ == "SnapshotAgent"  # ppo-2p, NumPy weights
