"""The one match loop (``arena.match.play_match``): a scripted deal, replay from the action list,
returns over deals and games, the wrapped env's illegal-move ending and bad input."""

from __future__ import annotations

import io
import logging
from typing import Any

import numpy as np
import pytest

import treppen_env
from tests.env_helpers import B_DECK, B_TURN_1
from treppen.agents import Agent, GreedyAgent, RandomAgent
from treppen.arena.match import MatchError, play_match
from treppen_env.actions import parse_action


class Scripted(Agent):
    """Plays the given actions (text), then the first legal action."""

    def __init__(self, texts: list[str]):
        super().__init__()
        self.queue = [parse_action(t) for t in texts]

    def act(self, observation: dict[str, Any]) -> int:
        return self.queue.pop(0) if self.queue else int(np.flatnonzero(observation["action_mask"])[0])


def test_scripted_deal_gives_every_action_and_the_result():
    """Scenario B (RULES §2.4, §4): player_0's scripted first turn comes first in the action list,
    and the result matches what the env reports."""
    env = treppen_env.raw_env(num_players=2)
    seen = []
    result = play_match(
        env,
        [Scripted(list(B_TURN_1)), Scripted(["take 1"])],
        options={"deck": B_DECK, "dealer": 0},
        on_step=lambda env, seat, obs, action: seen.append((seat, action)),
    )
    assert result.actions[:5] == [parse_action(t) for t in (*B_TURN_1, "take 1")]
    assert seen == [(0, a) for a in result.actions[:4]] + [(1, result.actions[4])] + seen[5:]
    assert [a for _, a in seen] == result.actions
    info = env.infos["player_0"]
    assert result.outcome == info["outcome"]
    assert result.deal_points == [info["deal_points"]["player_0"], info["deal_points"]["player_1"]]
    assert result.infos == [env.infos["player_0"], env.infos["player_1"]]
    assert result.rewards == pytest.approx([env.rewards["player_0"], env.rewards["player_1"]])


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_action_list_replays_the_deal(num_players):
    """Replaying ``actions`` on the same seed gives the same deal (the record is complete)."""
    env = treppen_env.raw_env(num_players=num_players)
    seats = [GreedyAgent(seed=1), *(RandomAgent(seed=s) for s in range(2, num_players + 1))]
    result = play_match(env, seats, seed=5)
    env.reset(seed=5)
    for action in result.actions:
        env.step(action)
    assert env.game.deal_over
    assert result.deal_points == list(env.game.deal_points)
    assert result.went_out == env.game.went_out
    points = np.array(result.deal_points, dtype=float)
    zero_sum = (points - (points.sum() - points) / (num_players - 1)) / 100
    assert result.rewards == pytest.approx(zero_sum.tolist())


def test_agent_seeds_make_the_match_repeatable():
    env = treppen_env.raw_env(num_players=3)
    seats = [RandomAgent(), RandomAgent(), GreedyAgent(epsilon=0.5)]
    first = play_match(env, seats, seed=3, agent_seeds=[1, 2, 3])
    play_match(env, seats, seed=4)  # moves the agents' generators on
    again = play_match(env, seats, seed=3, agent_seeds=[1, 2, 3])
    assert first == again


def test_a_game_returns_each_seats_margin_over_the_game():
    """episode="game" (RULES §7): the returns sum every deal's rewards, so they equal the final
    totals' zero-sum margins / 100."""
    env = treppen_env.raw_env(num_players=3, episode="game")
    result = play_match(env, [GreedyAgent(seed=0), GreedyAgent(seed=1), RandomAgent(seed=2)], seed=0)
    totals = np.array([result.infos[0]["totals"][a] for a in env.possible_agents], dtype=float)
    assert env.game.deals_played > 1 and totals.max() >= env.rules.target
    assert result.rewards == pytest.approx(((totals - (totals.sum() - totals) / 2) / 100).tolist())


def test_illegal_action_raises_on_raw_env_and_ends_the_wrapped_env(caplog):
    illegal = parse_action("discard AS")  # no discard before drawing (RULES §4)
    with pytest.raises(MatchError, match=r"seat 1 \(Scripted\(\)\): player_1:") as caught:
        play_match(treppen_env.raw_env(num_players=2), [RandomAgent(seed=0), Scripted(["discard AS"])], seed=0)
    assert caught.value.seat == 1
    env = treppen_env.env(num_players=2)
    with caplog.at_level(logging.WARNING):
        result = play_match(env, [Scripted(["discard AS"]), RandomAgent(seed=0)], seed=0)
    assert "Illegal move made" in caplog.text
    assert result.actions == [illegal]
    assert result.outcome is None and result.went_out is None
    assert result.rewards == [-1.0, 0.0]


def test_an_agent_needs_only_act():
    """docs/guide/agents.md "Your own agent": ``reset`` is optional."""

    class First:
        def act(self, observation):
            return int(np.flatnonzero(observation["action_mask"])[0])

    result = play_match(treppen_env.raw_env(num_players=2), [First(), RandomAgent(seed=0)], seed=1)
    assert (result.outcome, result.went_out, result.deal_points, len(result.actions)) == ("went_out", 0, [157, 30], 38)


def test_one_agent_per_seat():
    with pytest.raises(ValueError, match="3 agents given for 2 seats"):
        play_match(treppen_env.raw_env(num_players=2), [RandomAgent()] * 3)


@pytest.mark.parametrize("game", [False, True])
def test_treppen_play_prints_the_opponents_moves_and_each_deal(monkeypatch, capsys, tmp_path, game):
    """``treppen play`` runs on the match loop: a person always choosing the first listed move
    plays random to the end; every deal's result is printed once and recorded (docs/ARCHITECTURE.md "Game records")."""
    from treppen.apps import cli
    from treppen_env import records

    monkeypatch.setattr("sys.stdin", io.StringIO("0\n" * 5000))
    args = ["play", "--opponents", "random", "--seed", "0", "--record", str(tmp_path), *(["--game"] if game else [])]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "P+1: " in out  # the table's name for the opponent
    deals = out.count("Deal over:")
    assert deals >= 1 if game else deals == 1
    assert (" points, total " in out) == game
    (path,) = tmp_path.iterdir()
    recorded = records.read(path)
    assert len(recorded) == deals and [r["agents"] for r in recorded] == [["human", "random"]] * deals
    for record in recorded:
        records.check(record)
