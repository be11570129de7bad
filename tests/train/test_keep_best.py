"""Tests of keep-best (train/common/keep_best.py) and of the opponent pool's best and agent kinds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import DummyVecEnv

from treppen.arena.ratings import fit_ratings
from treppen.train.common import keep_best
from treppen.train.common.config_files import load_config
from treppen.train.common.keep_best import gate_score
from treppen.train.common.rundir import describe_strength
from treppen.train.sb3.callbacks import KeepBestCallback
from treppen.train.sb3.pool import OpponentPool, SelfPlayEnv


def test_gate_score_is_a_duplicate_score():
    score, count = gate_score("greedy", "random", decks=3)
    assert count == 3 * 2  # every deck in both seatings
    assert score == pytest.approx(4 / 6)  # greedy wins 4 of the 6 seeded deals
    reverse, _ = gate_score("random", "greedy", decks=3)
    assert reverse == pytest.approx(2 / 6)  # the same deals seen from the other side


def test_gate_promotes_only_above_the_threshold(tmp_path, monkeypatch):
    env = DummyVecEnv([lambda: SelfPlayEnv(probs={"random": 0.5, "best": 0.5}, seed=0)])
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=32, batch_size=16, seed=0, device="cpu", policy_kwargs={"net_arch": [16]}
    )
    model.set_logger(configure(None, []))
    gate = KeepBestCallback(100, tmp_path, threshold=0.55)
    gate.init_callback(model)
    assert (tmp_path / "best_model.zip").is_file() and (tmp_path / "pool" / "best.npz").is_file()
    assert env.envs[0].pool.best is not None  # the workers got the first best (the learner at start)
    scores = iter([(0.55, 40), (0.5, 40), (0.7, 40)])
    monkeypatch.setattr(keep_best, "gate_score", lambda *args: next(scores))
    before = (tmp_path / "best_model.zip").stat().st_mtime_ns
    for steps in (100, 200, 300):
        gate.run(steps)
    lines = [json.loads(line) for line in (tmp_path / "best.jsonl").read_text().splitlines()]
    assert [(r["steps"], r["promoted"]) for r in lines] == [(100, True), (200, False), (300, True)]
    assert gate.promotions == 2 and (tmp_path / "best_model.zip").stat().st_mtime_ns >= before
    again = KeepBestCallback(100, tmp_path)  # a resumed run counts the earlier promotions
    again.init_callback(model)
    assert again.promotions == 2


def test_pool_draws_best_and_named_agents():
    pool = OpponentPool({"random": 0.2, "best": 0.4, "agent": 0.4}, specs=["greedy"])
    rng = np.random.default_rng(0)
    kinds = {pool.draw(rng)[0] for _ in range(200)}
    assert kinds == {"random", "agent"}  # no best loaded yet: its share goes to the others
    with pytest.raises(ValueError, match="agent"):
        OpponentPool({"random": 0.5, "agent": 0.5})
    env = SelfPlayEnv(probs={"random": 0.0, "greedy": 0.5, "agent": 0.5}, seed=1, specs=["random"])
    seen = set()
    for seed in range(20):
        env.reset(seed=seed)
        seen.add(env.opponents[0].kind)
    assert seen == {"greedy", "agent"}
    with pytest.raises(ValueError, match="best_every"):
        load_config(None, ["best_every=0", "opponent_best=0.2", "opponent_snapshot=0.2"])


def _records(decks: int, beats_greedy: bool, first: int = 0) -> list[dict]:
    """Synthetic duplicate records: the learner always beats random, and beats (or loses to) greedy."""
    out = []
    for deck in range(first, first + decks):
        for a, b in (("learner", "random"), ("learner", "greedy"), ("greedy", "random")):
            for seats in ((a, b), (b, a)):
                won = a if (a, b) != ("learner", "greedy") or beats_greedy else b
                points = [10 if s == won else 0 for s in seats]
                out.append({"deal": len(out), "deck_id": deck, "agents": list(seats), "points": points})
    return out


def test_final_lines_give_head_to_head_scores_and_an_honest_verdict():
    weaker = describe_strength(fit_ratings(_records(30, beats_greedy=False), n_boot=100))
    assert "learner vs greedy: score 0.000 over 60 deals" in weaker[0] + weaker[1] + weaker[2]
    assert weaker[-1].startswith("learner is weaker than greedy")
    assert [line.split("   learner")[0].rstrip() for line in weaker if line.startswith("greedy")] == [
        "greedy   +0 (anchor)"
    ]
    stronger = describe_strength(fit_ratings(_records(30, beats_greedy=True), n_boot=100))
    assert stronger[-1].startswith("learner is stronger than greedy")
    few = describe_strength(fit_ratings(_records(1, beats_greedy=True), n_boot=100))
    assert few[-1].startswith("1 decks are too few to tell whether learner beats greedy")
    mixed = describe_strength(fit_ratings(_records(6, True) + _records(6, False, first=6), n_boot=100))
    assert mixed[-1].startswith("these 12 decks cannot tell whether learner beats greedy")
