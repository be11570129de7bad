"""Fixtures of the training tests."""

from __future__ import annotations

import pytest
import torch

from treppen.train.sb3.pool import SelfPlayEnv


@pytest.fixture
def tiny_train() -> list[str]:
    """``treppen train`` overrides of the sb3 recipe (``backend=sb3``: ``configs/selfplay.yaml``) for
    a run of seconds: 512 steps, tiny nets, few evaluation deals."""
    return [
        "backend=sb3",
        "total_timesteps=512",
        "n_envs=2",
        "vec_env=dummy",
        "n_steps=128",
        "batch_size=64",
        "n_epochs=2",
        "net_arch=[32,32]",
        "eval_deals=4",
        "eval_every=256",
        "elo_every=512",
        "elo_decks=2",
        "checkpoint_every=256",
        "snapshot_every=256",
        "pool_size=1",
        "progress=false",
        "policy=mlp",  # the configs' recipe (action features, imitation, keep-best) is tested in test_imitation.py
        "imitation_decisions=0",
        "best_every=0",
        "opponent_random=0.2",
        "opponent_greedy=0.4",
        "opponent_snapshot=0.4",
        "opponent_best=0",
    ]


@pytest.fixture
def mlp_model():
    """Builds ``(model, env)``: a small MlpPolicy MaskablePPO on a SelfPlayEnv against random, its
    action head scaled up so the argmax has no near-ties (keywords ``net_arch``, ``activation``)."""
    return _mlp_model


def _mlp_model(net_arch=(32, 32), activation=torch.nn.Tanh):
    from sb3_contrib import MaskablePPO

    env = SelfPlayEnv(probs={"random": 1.0}, seed=0)
    kwargs = {"net_arch": {"pi": list(net_arch), "vf": list(net_arch)}, "activation_fn": activation}
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, policy_kwargs=kwargs, seed=0, device="cpu")
    with torch.no_grad():  # spread the logits: the initial action head (gain 0.01) leaves near-ties
        model.policy.action_net.weight.mul_(300)
    return model, env
