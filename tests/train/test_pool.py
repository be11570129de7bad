"""The opponent pool (train/sb3/pool.py): NumPy snapshots of the learner and the seats that play them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from treppen.agents.snapshot import NumpyPolicy
from treppen.train.sb3.pool import SelfPlayEnv, save_snapshot
from treppen_env.actions import NUM_ACTIONS
from treppen_env.observation import OBS_SIZE


@pytest.mark.parametrize("activation", [torch.nn.Tanh, torch.nn.ReLU])
def test_numpy_snapshot_matches_torch_argmax(tmp_path, activation, mlp_model):
    model, env = mlp_model(activation=activation)
    path = save_snapshot(model.policy, tmp_path / "snap.npz", steps=7)
    policy = NumpyPolicy.load(path)
    rng = np.random.default_rng(0)
    observations, masks = [], []
    obs, _ = env.reset(seed=1)
    for _ in range(150):  # real observations and masks of a deal ...
        observations.append(obs)
        masks.append(env.action_masks())
        obs, _, done, truncated, _ = env.step(int(rng.choice(np.flatnonzero(masks[-1]))))
        if done or truncated:
            obs, _ = env.reset()
    for _ in range(150):  # ... and random vectors with random masks
        observations.append(rng.uniform(-1, 2, OBS_SIZE).astype(np.float32))
        mask = rng.random(NUM_ACTIONS) < 0.05
        mask[rng.integers(NUM_ACTIONS)] = True
        masks.append(mask)
    torch_actions, _ = model.predict(np.stack(observations), action_masks=np.stack(masks), deterministic=True)
    numpy_actions = [policy.act(o, m) for o, m in zip(observations, masks, strict=True)]
    assert list(torch_actions) == numpy_actions
    assert all(m[a] for m, a in zip(masks, numpy_actions, strict=True))
    sampled = [policy.act(o, m, rng) for o, m in zip(observations, masks, strict=True)]
    assert all(m[a] for m, a in zip(masks, sampled, strict=True))


def test_pool_opponents_draw_snapshots(tmp_path, mlp_model):
    model, _ = mlp_model()
    paths = [str(save_snapshot(model.policy, tmp_path / f"s{i}.npz")) for i in range(2)]
    env = SelfPlayEnv(num_players=3, probs={"random": 0.0, "greedy": 0.5, "snapshot": 0.5}, seed=3)
    assert env.set_pool(paths) == 2
    kinds = set()
    env.reset(seed=0)
    for _ in range(3000):
        _, _, done, truncated, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
        assert not info.get("illegal_action")
        if done or truncated:
            kinds.update(info["opponents"])
            env.reset()
    assert kinds == {"greedy", "snapshot"}


def test_pool_rejects_bad_probabilities():
    with pytest.raises(ValueError, match="random or greedy"):
        SelfPlayEnv(probs={"snapshot": 1.0})
    with pytest.raises(ValueError, match="heuristic"):
        SelfPlayEnv(probs={"random": 0.5, "heuristic": 0.5})
