"""Evaluations and Elo ratings during training (train/common/evaluate.py,
train/common/periodic_ratings.py), and the masked distribution check."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from treppen.agents import GreedyAgent
from treppen.train.common.evaluate import deal_result, evaluate
from treppen.train.common.periodic_ratings import EloRating
from treppen.train.sb3 import backend as sb3_backend
from treppen_env.rules import make_rules
from treppen_env.single_agent import SingleAgentEnv


def test_masked_distribution_keeps_argument_validation(recwarn):
    """sb3-contrib #322: the masked Categorical over 898 actions used to fail torch's Simplex
    check. The installed version passes the probe, so validation (which also catches NaN logits)
    stays on."""
    sb3_backend.check_distribution_validation()
    assert torch.distributions.Distribution._validate_args
    assert not [w for w in recwarn if "argument" in str(w.message)]


def test_evaluate_is_repeatable(mlp_model):
    model, _ = mlp_model()
    short = make_rules(max_turns=40)  # an untrained argmax policy may dither until the turn limit
    runs = [evaluate(model, "random", rules=short, deals=6) for _ in range(2)]
    assert runs[0] == runs[1] and runs[0]["deals"] == 6 and runs[0]["illegal_actions"] == 0
    assert set(runs[0]) == {"winrate", "points", "deal_points", "deals", "illegal_actions"}
    assert deal_result({"deal_points": {"player_0": 10, "player_1": 10}}, "player_0") == (0.5, 0.0)
    assert deal_result({"deal_points": {"player_0": 30, "player_1": 0, "player_2": 10}}, "player_0") == (1.0, 25.0)


def test_evaluate_plays_the_deals_the_greedy_agent_would(mlp_model):
    """The kernel's greedy seats play as GreedyAgent in SingleAgentEnv on the same seeded deals:
    deal i seeded seed + i // players, the learner at seat i % players."""
    model, _ = mlp_model()
    short = make_rules(max_turns=30)
    result = evaluate(model, "greedy", rules=short, deals=4, seed=7)
    points = []
    for i in range(4):
        env = SingleAgentEnv(GreedyAgent(), 2, short, seat=i % 2)
        obs, _ = env.reset(seed=7 + i // 2)
        done, info = False, {}
        while not done:
            action, _ = model.predict(obs[None], action_masks=env.action_masks()[None], deterministic=True)
            obs, _, terminated, truncated, info = env.step(int(action[0]))
            done = terminated or truncated
        points.append(info["deal_points"][env.learner])
    assert result["deals"] == 4 and result["illegal_actions"] == 0
    assert result["deal_points"] == pytest.approx(np.mean(points))
    with pytest.raises(ValueError, match="opponent='heuristic'; choose one of"):
        evaluate(model, "heuristic")


def test_elo_rating_plays_the_runs_rules(tmp_path, mlp_model):
    """Item "one rules object": the Elo tournament plays the run's rules, options included; with
    max_turns=5 every deal is cut off at the turn limit (RULES §6.5)."""
    from stable_baselines3.common.logger import Logger

    model, _ = mlp_model()
    model.set_logger(Logger(folder=None, output_formats=[]))
    elo = EloRating(tmp_path / "elo.jsonl", 2, make_rules(max_turns=5), decks=2)
    elo.model = model
    elo.run(0)
    assert elo.latest["outcomes"] == {"max_turns": 2 * 3 * 2}  # decks x pairings x seatings
    assert json.loads((tmp_path / "elo.jsonl").read_text())["outcomes"] == elo.latest["outcomes"]
