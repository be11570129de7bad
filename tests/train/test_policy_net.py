"""Tests of the action-feature policy (agents/action_features.py, train/sb3/policy_net.py): the feature
table, logits, masking, save/load, NumPy snapshots and play through agents.load."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from treppen import agents
from treppen.agents.action_features import ACTION_COLUMNS, CARD_OBS_INDEX, CHANNELS, action_table
from treppen.agents.heuristic_features import heuristic_features, view_values
from treppen.agents.snapshot import NumpyPolicy
from treppen.arena.tournament import run_tournament
from treppen.train.common.action_feature_net import ActionFeatureNet
from treppen.train.common.config_files import load_config
from treppen.train.sb3.backend import make_model
from treppen.train.sb3.policy_net import ActionFeaturePolicy
from treppen.train.sb3.pool import SelfPlayEnv, save_snapshot
from treppen_env.actions import (
    DISCARD_BASE,
    NUM_ACTIONS,
    encode_layoff,
    encode_take,
    parse_action,
)
from treppen_env.cards import parse_card
from treppen_env.observation import OBS_SIZE, SLICES

COL = {name: i for i, name in enumerate(ACTION_COLUMNS)}


def _observations(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of real positions (random play)."""
    env = SelfPlayEnv(probs={"random": 1.0}, seed=seed)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    observations, masks = [], []
    while len(observations) < n:
        mask = env.action_masks()
        observations.append(obs)
        masks.append(mask)
        obs, _, done, truncated, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        if done or truncated:
            obs, _ = env.reset()
    return np.stack(observations), np.stack(masks)


def _model(**kwargs):
    env = SelfPlayEnv(probs={"random": 1.0}, seed=0)
    model = MaskablePPO(ActionFeaturePolicy, env, n_steps=32, batch_size=16, seed=0, device="cpu", policy_kwargs=kwargs)
    with torch.no_grad():  # spread the logits away from the near-uniform start
        for param in model.policy.parameters():
            param.add_(torch.randn_like(param) * 0.3)
    return model


# --------------------------------------------------------------------------- features


def test_action_table_reference_rows():
    table = action_table("treppenromme")
    assert table.shape == (NUM_ACTIONS, len(ACTION_COLUMNS))
    meld = parse_action("meld QH KH AH 2H")  # a run turning the corner: 10 + 10 + 5 (ace_middle, RULES §3.3) + 2
    row = table[meld]
    assert row[COL["kind_meld_run"]] == 1 and row[COL["meld_length"]] == pytest.approx(4 / 13)
    assert row[COL["points"]] == pytest.approx(0.27)
    cards = [c for c in range(52) if row[COL[f"card_{c}"]]]
    assert cards == sorted(parse_card(c) for c in ("QH", "KH", "AH", "2H"))
    assert row[COL["meld_allowed"]] == 1 and action_table("rum500")[meld, COL["meld_allowed"]] == 0
    take = table[encode_take(9)]
    assert take[COL["kind_take"]] == 1 and take[COL["depth"]] == pytest.approx(9 / 52)
    assert take[COL["depth_7"]] == 1 and take[COL["cards_moved"]] == 0
    lay = table[encode_layoff(parse_card("AS"), "high")]  # an ace after the king books ace_high = 10
    assert lay[COL["target_high"]] == 1 and lay[COL["points"]] == pytest.approx(0.10)
    discard = table[DISCARD_BASE + parse_card("TD")]
    assert discard[COL["kind_discard"]] == 1 and discard[COL["points"]] == 0
    assert (table[:, : COL["card_0"]].sum(axis=1) == 1).all()  # exactly one kind per action


def test_card_entries_read_the_card_and_its_neighbours():
    ace = parse_card("AS")
    row = CARD_OBS_INDEX[ace]
    assert row[0] == SLICES["hand"].start + ace and row[1] == SLICES["staircase"].start + ace
    neighbours = [parse_card(c) for c in ("QS", "KS", "2S", "3S", "AH", "AD", "AC")]
    hand_entries = row[18::7]  # each neighbour block starts with its hand entry
    assert list(hand_entries) == [SLICES["hand"].start + c for c in neighbours]


# --------------------------------------------------------------------------- the net


def test_logits_shape_and_card_sums():
    observations, _ = _observations(40)
    net = ActionFeatureNet()
    with torch.no_grad():
        for param in net.parameters():
            param.add_(torch.randn_like(param) * 0.3)
        net.state_to_action.weight.zero_()  # only the card scores and the action bias remain
        obs = torch.as_tensor(observations)
        logits, state = net(obs)
        assert logits.shape == (40, NUM_ACTIONS) and state.shape == (40, net.hidden)
        cards, state = net.encode(obs)
        scores = net.card_score(cards).numpy()
        bias = net.action_mlp(net.action_table)[:, -1].numpy()
    meld = parse_action("meld 5C 6C 7C")
    expected = bias[meld] + sum(scores[:, parse_card(c), CHANNELS.index("meld_run")] for c in ("5C", "6C", "7C"))
    np.testing.assert_allclose(logits[:, meld].numpy(), expected, rtol=1e-5, atol=1e-5)
    depth = np.rint(observations[:, SLICES["staircase"]] * 52)
    for b in range(40):
        for d in range(1, int(depth[b].max()) + 1):
            taken = scores[b, (depth[b] > 0) & (depth[b] <= d), CHANNELS.index("taken")].sum()
            deepest = scores[b, depth[b] == d, CHANNELS.index("deepest")].sum()
            assert logits[b, encode_take(d)].item() == pytest.approx(bias[encode_take(d)] + taken + deepest, abs=1e-4)


def test_masked_actions_get_probability_zero():
    model = _model(hidden=32, card_dim=16, action_dim=16)
    observations, masks = _observations(30, seed=1)
    obs_tensor, _ = model.policy.obs_to_tensor(observations)
    with torch.no_grad():
        probs = model.policy.get_distribution(obs_tensor, action_masks=masks).distribution.probs.numpy()
    assert probs.shape == (30, NUM_ACTIONS)
    assert (probs[~masks] == 0).all()
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-5)
    actions, _ = model.predict(observations, action_masks=masks, deterministic=False)
    assert masks[np.arange(30), actions].all()


def test_save_load_round_trip_and_agents_load_plays(tmp_path):
    model = _model(rules="rum500", hidden=32, card_dim=16, action_dim=16)
    observations, _ = _observations(20, seed=2)
    path = tmp_path / "model.zip"
    model.save(path)
    loaded = MaskablePPO.load(path, device="cpu")
    assert isinstance(loaded.policy, ActionFeaturePolicy)
    assert loaded.policy.net_kwargs == model.policy.net_kwargs
    with torch.no_grad():
        np.testing.assert_array_equal(
            policy_logits(model.policy, observations).numpy(), policy_logits(loaded.policy, observations).numpy()
        )
    agent = agents.load(str(path))  # plays whole deals with legal actions only
    records = run_tournament({"model": agent, "random": "random"}, players=2, decks=2, rules="rum500")
    assert len(records) == 4 and all(r["steps"] > 0 for r in records)


def test_numpy_snapshot_matches_torch(tmp_path):
    model = _model(hidden=32, card_dim=16, action_dim=16)
    snapshot = NumpyPolicy.load(save_snapshot(model.policy, tmp_path / "snap.npz"))
    observations, masks = _observations(60, seed=3)
    with torch.no_grad():
        logits = policy_logits(model.policy, observations).numpy()
    for obs, mask, row in zip(observations, masks, logits, strict=True):
        legal = np.flatnonzero(mask)
        np.testing.assert_allclose(snapshot.logits(obs, legal), row[legal], rtol=1e-4, atol=1e-4)
        assert snapshot.act(obs, mask) == legal[np.argmax(row[legal])]


def test_a_planner_feature_policy_reads_the_planners_view_in_torch_numpy_and_its_saved_file(tmp_path):
    """``features="planner"``: the net's heuristic columns are the planner's, its settings travel
    with the weights, the NumPy snapshot and the saved model give torch's logits."""
    model = _model(hidden=32, card_dim=16, action_dim=16, features="planner")
    net = model.policy.net
    np.testing.assert_array_equal(net.heuristic_values.numpy(), view_values("planner"))
    observations, masks = _observations(40, seed=4)
    obs = torch.from_numpy(observations)
    planner = heuristic_features(observations, masks, "treppenromme", view_values("planner"))
    np.testing.assert_array_equal(net.heuristic(obs, masks).numpy(), planner)
    assert not np.array_equal(planner, heuristic_features(observations, masks))
    with torch.no_grad():
        logits = net(obs, masks)[0].numpy()
    snapshot = NumpyPolicy.load(save_snapshot(model.policy, tmp_path / "snap.npz"))
    for one, mask, row in zip(observations, masks, logits, strict=True):
        legal = np.flatnonzero(mask)
        np.testing.assert_allclose(snapshot.logits(one, legal), row[legal], rtol=1e-4, atol=1e-4)
        assert snapshot.act(one, mask) == legal[np.argmax(row[legal])]
    model.save(tmp_path / "model.zip")
    loaded = MaskablePPO.load(tmp_path / "model.zip", device="cpu").policy.net
    assert loaded.features == "planner"
    with torch.no_grad():
        np.testing.assert_array_equal(loaded(obs, masks)[0].numpy(), logits)


def test_config_selects_the_policy():
    env = SelfPlayEnv(probs={"random": 1.0}, seed=0)
    config = load_config(None, ["policy=action_features", "net_arch=[48]", "card_dim=8", "n_steps=32", "batch_size=16"])
    model = make_model(config, env, None, seed=0)
    assert isinstance(model.policy, ActionFeaturePolicy) and model.policy.net.hidden == 48
    mlp = make_model(load_config(None, ["policy=mlp", "n_steps=32", "batch_size=16"]), env, None, 0)
    assert not isinstance(mlp.policy, ActionFeaturePolicy)
    with pytest.raises(ValueError, match="policy='lstm'"):
        load_config(None, ["policy=lstm"])
    assert OBS_SIZE == model.observation_space.shape[0]


def policy_logits(policy: Any, obs: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Unmasked logits (B, 898) of any MaskablePPO actor-critic policy for observations (B, 969)."""
    obs_t = obs if torch.is_tensor(obs) else torch.as_tensor(np.asarray(obs, dtype=np.float32))
    features = policy.extract_features(obs_t, policy.pi_features_extractor)
    return policy.action_net(policy.mlp_extractor.forward_actor(features))
