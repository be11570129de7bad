"""The batched learner (``backend: kernel``): padded legal-action rows, masked log-probabilities,
the kernels' action net against torch, seat and reward attribution in self-play rows, and a tiny
run that writes, resumes after a kill and equals an uninterrupted run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import treppen_env
from treppen.agents.action_features import ACTION_FEATURES, action_table
from treppen.agents.heuristic_features import heuristic_features
from treppen.train.kernel_policy import ActionNet, feature_context, legal_rows, masked_log_probs
from treppen_env.core import learner_rows as R
from treppen_env.rules import make_rules


def positions(rows: int = 16, steps: int = 6, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Observations (float32) and masks (int8) of random play against greedy, ``steps`` batches of ``rows``."""
    env = treppen_env.vector_env(rows, 2, opponents="greedy", copy=True)
    obs, infos = env.reset(seed=seed)
    out_obs, out_masks = [], []
    for _ in range(steps):
        out_obs.append(obs)
        out_masks.append(infos["action_mask"])
        obs, _, _, _, infos = env.step(env.sample_actions())
    return np.concatenate(out_obs), np.concatenate(out_masks)


@pytest.fixture(scope="module")
def batch() -> tuple[np.ndarray, np.ndarray]:
    return positions()


@pytest.mark.parametrize("features", ["heuristic", "cards"])
def test_legal_rows_list_each_legal_action_with_its_features_and_pad_the_rest(batch, features: str) -> None:
    obs, masks = batch
    ctx = feature_context(make_rules("treppenromme"))
    rows = legal_rows(obs, masks, ctx, features)
    counts = masks.sum(1)
    assert rows.acts.shape[1] == counts.max() and (rows.counts == counts).all()
    table = action_table("treppenromme")
    heur = heuristic_features(obs, masks)
    for b in range(len(obs)):
        legal = np.flatnonzero(masks[b])
        n = legal.size
        assert (rows.acts[b, :n] == legal).all() and (rows.acts[b, n:] == -1).all()
        np.testing.assert_array_equal(rows.feats[b, :n, :ACTION_FEATURES], table[legal])
        if features == "heuristic":
            np.testing.assert_array_equal(rows.feats[b, :n, ACTION_FEATURES:], heur[b, legal])
        else:
            assert rows.feats.shape[2] == ACTION_FEATURES
        assert (rows.feats[b, n:] == 0).all()


def test_masked_log_probs_equal_a_reference_on_padded_rows() -> None:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(5, 7, generator=gen) * 4
    counts = [1, 3, 7, 2, 5]
    valid = torch.arange(7)[None, :] < torch.tensor(counts)[:, None]
    index = torch.tensor([0, 2, 6, 1, 3])
    logits = logits.masked_fill(~valid, 1e9)  # padding holds garbage that must not count
    chosen, entropy = masked_log_probs(logits, valid, index)
    for b, n in enumerate(counts):
        row = logits[b, :n].double()
        reference = row - torch.logsumexp(row, 0)
        assert float(chosen[b]) == pytest.approx(float(reference[index[b]]), abs=1e-6)
        p = reference.exp()
        assert float(entropy[b]) == pytest.approx(float(-(p * reference).sum()), abs=1e-6)
    assert float(entropy[0]) == 0.0


@pytest.mark.parametrize(("hidden", "action_dim", "features"), [(32, 16, "heuristic"), (64, 8, "cards")])
def test_the_kernel_net_equals_torch_on_saved_weights(tmp_path, batch, hidden: int, action_dim: int, features: str):
    obs, masks = batch
    torch.manual_seed(hidden)
    net = ActionNet(hidden, action_dim, features, pick_init=2.0)
    with torch.no_grad():
        for p in net.parameters():
            p.mul_(3.0)  # larger weights than at initialisation: saturating units, spread logits
    loaded = ActionNet.load(net.save(tmp_path / "net.npz"))
    rows = legal_rows(obs, masks, feature_context(make_rules("treppenromme")), features)
    valid = rows.acts >= 0
    with torch.no_grad():
        t_logits, t_value = net(torch.from_numpy(obs), torch.from_numpy(rows.feats), torch.from_numpy(valid))
        l_logits, l_value = loaded(torch.from_numpy(obs), torch.from_numpy(rows.feats), torch.from_numpy(valid))
    assert torch.equal(t_logits, l_logits) and torch.equal(t_value, l_value)
    w, shape = net.export(), net.shape()
    logits = np.zeros(rows.acts.shape[1])
    for b in range(len(obs)):
        n = int(rows.counts[b])
        R.action_logits(w, shape, obs[b], rows.feats[b], n, logits)
        np.testing.assert_allclose(logits[:n], t_logits[b, :n].numpy(), atol=1e-5, rtol=0)


def test_masked_log_probs_have_finite_gradients_with_padding() -> None:
    logits = torch.tensor([[1.0, 2.0, 0.0], [0.5, 0.0, 0.0]], requires_grad=True)
    valid = torch.tensor([[True, True, False], [True, False, False]])
    chosen, entropy = masked_log_probs(logits, valid, torch.tensor([1, 0]))
    (chosen.sum() + entropy.sum()).backward()
    assert logits.grad is not None and bool(logits.grad.isfinite().all())
    assert logits.grad[0, 2] == 0 and logits.grad[1].tolist() == [0.0, 0.0, 0.0]
