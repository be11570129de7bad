"""The kernels' network (treppen_env/agent_core/policy_value_kernels.py,
train/expert/policy_value_torch.py): the Numba forward
pass equals torch on saved weights, for every layer shape the configs use."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from treppen.agents import GreedyAgent
from treppen.train.expert.policy_value_torch import KernelNet, fit
from treppen_env import raw_env
from treppen_env.agent_core import policy_value_kernels
from treppen_env.observation import OBS_SIZE


def positions(count: int = 24):
    """Observations, masks and the other seats' hands of the movers of seeded greedy deals."""
    out = []
    seed = 0
    while len(out) < count:
        env = raw_env(num_players=3)
        env.reset(seed=seed)
        greedy = GreedyAgent()
        while not env.game.deal_over and len(out) < count:
            obs = env.observe(env.agent_selection)
            seat = env.game.current
            u64 = env.game.arrays().u64.copy()
            hands = np.zeros(policy_value_kernels.VALUE_EXTRA, dtype=np.float32)
            for k in range(1, 3):
                for c in range(52):
                    hands[(k - 1) * 52 + c] = env.game.hands[(seat + k) % 3] >> c & 1
            out.append((obs["observation"], obs["action_mask"], hands, u64, seat))
            env.step(greedy.act(obs))
        seed += 1
    return out


@pytest.mark.parametrize(("hidden", "depth"), [(32, 1), (64, 2), (16, 3)])
def test_the_numba_forward_pass_equals_torch(tmp_path, hidden: int, depth: int) -> None:
    torch.manual_seed(hidden + depth)
    net = KernelNet(hidden, depth)
    with torch.no_grad():
        for p in net.parameters():
            p.mul_(3.0)  # larger weights than at initialisation: saturating units, spread logits
    w, shape = policy_value_kernels.load(net.save(tmp_path / "net.npz"))
    h, scratch, logits = (
        np.zeros(hidden, np.float32),
        np.zeros(hidden, np.float32),
        np.zeros(policy_value_kernels.NUM_ACTIONS),
    )
    for obs, mask, hands, u64, seat in positions():
        with torch.no_grad():
            t_logits, t_value = net(
                torch.as_tensor(obs[None]), torch.as_tensor(mask[None] != 0), torch.as_tensor(hands[None])
            )
        policy_value_kernels.hidden_units(w, shape, obs, h, scratch)
        policy_value_kernels.policy_logits(w, shape, h, mask, logits)
        legal = mask != 0
        np.testing.assert_allclose(logits[legal], t_logits[0].numpy()[legal], atol=1e-5, rtol=0)
        assert np.isneginf(logits[~legal]).all()
        assert policy_value_kernels.value(w, shape, h, u64, seat, 3) == pytest.approx(float(t_value[0]), abs=1e-5)


def test_fit_learns_the_labels_and_the_outcomes() -> None:
    data = positions(64)
    obs = np.stack([d[0] for d in data])
    masks = np.stack([d[1] != 0 for d in data])
    hands = np.stack([d[2] for d in data])
    actions = np.array([np.flatnonzero(m)[-1] for m in masks])  # the last legal action
    outcomes = np.where(np.arange(64) % 2 == 0, 1.0, -1.0).astype(np.float32)
    net = KernelNet(32, 1)
    torch.manual_seed(0)
    stats = fit(net, obs, masks, actions, hands, outcomes, epochs=60, batch_size=32, learning_rate=3e-3)
    assert stats["agreement"] > 0.9 and stats["value_loss"] < 0.5
    assert OBS_SIZE == obs.shape[1]


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="hidden=0"):
        KernelNet(0)
