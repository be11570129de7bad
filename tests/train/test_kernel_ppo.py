"""The batched learner (``backend: kernel``): padded legal-action rows, masked log-probabilities,
the kernels' action net against torch, seat and reward attribution in self-play rows, and a tiny
run that writes, resumes after a kill and equals an uninterrupted run."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import treppen_env
from tests.fixtures import make_kernel_run_fixture as fixture
from tests.train.run_end import assert_run_end
from treppen import agents
from treppen.agents.action_features import ACTION_FEATURES, action_table
from treppen.agents.action_net import ActionNetAgent, feature_context, legal_rows
from treppen.agents.heuristic_features import heuristic_features
from treppen.apps import cli
from treppen.arena.tournament import run_tournament
from treppen.train.common.config_files import config_path, load_config
from treppen.train.kernel.action_net_torch import ActionNet, PredictModel, masked_log_probs, nonzero_entries
from treppen.train.kernel.backend import train_kernel
from treppen.train.kernel.learner import Learner
from treppen.train.kernel.rows import LearnerRows
from treppen_env.agent_core import action_net_kernels
from treppen_env.agent_core.feature_kernels import H_PICK
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
def test_legal_rows_list_each_legal_action_with_its_features_one_position_after_another(batch, features: str):
    obs, masks = batch
    ctx = feature_context(make_rules("treppenromme"))
    rows = legal_rows(obs, masks, ctx, features)
    counts = masks.sum(1)
    assert rows.offsets[0] == 0 and (rows.counts == counts).all() and rows.acts.size == rows.offsets[-1] == counts.sum()
    table = action_table("treppenromme")
    heur = heuristic_features(obs, masks)
    for b in range(len(obs)):
        legal = np.flatnonzero(masks[b])
        place = slice(rows.offsets[b], rows.offsets[b + 1])
        assert (rows.acts[place] == legal).all()
        np.testing.assert_array_equal(rows.feats[place, :ACTION_FEATURES], table[legal])
        if features == "heuristic":
            np.testing.assert_array_equal(rows.feats[place, ACTION_FEATURES:], heur[b, legal])
        else:
            assert rows.feats.shape[1] == ACTION_FEATURES


def test_nonzero_entries_are_numpys_row_by_row(batch) -> None:
    obs = batch[0].copy()
    obs[3] = 0.0  # a row without entries
    obs[5, 7] = -0.5
    entries = nonzero_entries(obs)
    cols, values, counts = entries.cols, entries.values, entries.counts
    rows, expected = np.nonzero(obs)
    np.testing.assert_array_equal(cols, expected)
    np.testing.assert_array_equal(values, obs[rows, expected])
    np.testing.assert_array_equal(counts, np.bincount(rows, minlength=len(obs)))
    assert counts[3] == 0 and cols.dtype == counts.dtype == np.int64 and values.dtype == np.float32


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
    inputs = torch.from_numpy(obs), torch.from_numpy(rows.feats), torch.from_numpy(rows.counts)
    with torch.no_grad():
        t_logits, t_value = net(*inputs)
        l_logits, l_value = loaded(*inputs)
    assert torch.equal(t_logits, l_logits) and torch.equal(t_value, l_value)
    assert t_logits.shape == (len(obs), rows.counts.max()) and t_value.shape == (len(obs),)
    w, shape = net.export(), net.shape()
    logits = np.zeros(t_logits.shape[1])
    for b in range(len(obs)):
        n = int(rows.counts[b])
        action_net_kernels.action_logits(w, shape, obs[b], rows.feats[rows.offsets[b] :], n, logits)
        np.testing.assert_allclose(logits[:n], t_logits[b, :n].numpy(), atol=1e-5, rtol=0)
        assert (t_logits[b, n:] == -torch.inf).all()


def test_masked_log_probs_have_finite_gradients_with_padding() -> None:
    logits = torch.tensor([[1.0, 2.0, 0.0], [0.5, 0.0, 0.0]], requires_grad=True)
    valid = torch.tensor([[True, True, False], [True, False, False]])
    chosen, entropy = masked_log_probs(logits, valid, torch.tensor([1, 0]))
    (chosen.sum() + entropy.sum()).backward()
    assert logits.grad is not None and bool(logits.grad.isfinite().all())
    assert logits.grad[0, 2] == 0 and logits.grad[1].tolist() == [0.0, 0.0, 0.0]


def pick_actions(rows: LearnerRows) -> np.ndarray:
    """The greedy heuristic's pick in every row, read from the learner's legal rows."""
    legal = rows.legal()
    pick = legal.feats[:, ACTION_FEATURES + H_PICK]
    starts, ends = legal.offsets[:-1], legal.offsets[1:]
    return np.array([legal.acts[a + pick[a:b].argmax()] for a, b in zip(starts, ends, strict=True)])


def play(rows: LearnerRows, steps: int) -> tuple[np.ndarray, np.ndarray]:
    rewards, dones = [], []
    for _ in range(steps):
        reward, done = rows.step(pick_actions(rows))
        rewards.append(reward)
        dones.append(done)
    return np.stack(rewards), np.stack(dones)


def test_snapshot_seats_play_inside_the_kernels_as_their_net_says() -> None:
    # a snapshot whose net puts all its weight on the heuristic's pick plays as the kernel's greedy seat
    rules = make_rules("treppenromme")
    net = ActionNet(16, 8, "heuristic", pick_init=200.0)
    greedy = LearnerRows(8, 3, rules, {"greedy": 1.0}, "heuristic", seed=5)
    snapshots = LearnerRows(8, 3, rules, {"snapshot": 1.0}, "heuristic", seed=5)
    snapshots.set_snapshots([net.export()], net.shape())
    for rows in (greedy, snapshots):
        rows.reset()
    assert (snapshots.env.kinds[:, :3] == -1).all() and (greedy.env.kinds[:, :3] != -1).sum() == 16
    expected, done = play(greedy, 150)
    got, got_done = play(snapshots, 150)
    assert done.sum() >= 8  # every row finished a deal at least once
    np.testing.assert_array_equal(got_done, done)
    np.testing.assert_array_equal(got, expected)


def test_every_row_is_the_learners_decision_and_its_reward_its_own_seats(monkeypatch) -> None:
    rules = make_rules("treppenromme")
    net = ActionNet(16, 8, "heuristic")
    rows = LearnerRows(12, 3, rules, {"random": 0.3, "greedy": 0.3, "snapshot": 0.4}, "heuristic", seed=2)
    rows.set_snapshots([net.export(), (net.export() * 2)], net.shape())
    rows.reset()
    finished: list[tuple[int, np.ndarray]] = []
    new_deals = rows.new_deals

    def record(which: np.ndarray) -> None:  # the finished deals' points, before the rows are dealt afresh
        finished.extend((int(rows.learner[i]), rows.env.deal_points[i].copy()) for i in which)
        new_deals(which)

    monkeypatch.setattr(rows, "new_deals", record)
    seats = set()
    for _ in range(200):
        assert (rows.env.to_move == rows.learner).all() and (rows.env.over == 0).all()
        reward, done = rows.step(pick_actions(rows))
        assert (reward[~done] == 0).all()
        for (seat, points), r in zip(finished, reward[done], strict=True):
            others = (points.sum() - points[seat]) / 2
            assert r == np.float32((points[seat] - others) / 100.0)  # the learner seat's own result
            seats.add(seat)
        finished.clear()
    assert seats == {0, 1, 2}


class Killed(BaseException):
    """A kill in the middle of an update: nothing is saved on the way out."""


def tiny_overrides(tmp_path, name: str, *extra: str) -> list[str]:
    """The overrides of the tiny seeded run of tests/fixtures/make_kernel_run_fixture.py (768 steps of
    16 rows), in ``tmp_path/name``."""
    return [*fixture.OVERRIDES, f"runs_dir={tmp_path}", f"name={name}", *extra]


def tiny_config(tmp_path, name: str, *extra: str):
    return load_config(config_path("kernel"), tiny_overrides(tmp_path, name, *extra))


# 0: rollouts and updates in turn; 2: two rollout processes, each rollout running during the update before
@pytest.mark.parametrize("workers", ["rollout_workers=0", "rollout_workers=2"])
def test_a_tiny_run_writes_resumes_after_a_kill_and_equals_an_uninterrupted_run(
    tmp_path, monkeypatch, capsys, workers
) -> None:
    """Killed after its checkpoint at 512 steps, which is then cut short: the resumed run
    names it, continues from the one at 256 and ends as the uninterrupted run."""
    whole = train_kernel(tiny_config(tmp_path, "whole", workers))
    for name in ("config.yaml", "metadata.json", "evals.jsonl", "final_model.npz"):
        assert (whole / name).is_file(), name
    assert sorted(p.name for p in (whole / "checkpoints").iterdir()) == [f"model_{s}_steps.pt" for s in (256, 512, 768)]
    assert sorted(p.name for p in (whole / "pool").iterdir()) == [f"snapshot_{s:09d}.npz" for s in (256, 512, 768)]
    assert any((whole / "tb").iterdir())

    update = Learner.update
    calls = []

    def killed_in_the_fifth_update(self, buffer, lagged=False):
        calls.append(1)
        if len(calls) == 5:  # after the checkpoint at 512 steps (4 updates of 128 steps)
            raise Killed
        return update(self, buffer, lagged)

    monkeypatch.setattr(Learner, "update", killed_in_the_fifth_update)
    with pytest.raises(Killed):
        train_kernel(tiny_config(tmp_path, "killed", workers))
    monkeypatch.setattr(Learner, "update", update)
    assert not (tmp_path / "killed" / "final_model.npz").exists()
    checkpoints = tmp_path / "killed" / "checkpoints"
    newest = checkpoints / "model_512_steps.pt"
    newest.write_bytes(newest.read_bytes()[:1000])
    capsys.readouterr()
    resumed = tmp_path / "killed"
    assert cli.main(["train", "--resume", str(resumed), "device=cpu"]) == 0  # the device may change on resume
    printed = capsys.readouterr().out.splitlines()
    assert printed[:3] == [  # the checkpoints read before the run folder is touched
        f"passed over 1 damaged checkpoint, newest first: {newest} (RuntimeError: PytorchStreamReader failed "
        "reading zip archive: failed finding central directory)",
        f"run folder: {resumed}   (tensorboard --logdir {resumed / 'tb'})",
        f"resuming from {checkpoints / 'model_256_steps.pt'} (256 steps)",
    ]
    a, b = (np.load(run / "final_model.npz") for run in (whole, resumed))
    np.testing.assert_array_equal(a["w"], b["w"])
    last = [json.loads((run / "evals.jsonl").read_text().splitlines()[-1]) for run in (whole, resumed)]
    assert last[0]["greedy"] == last[1]["greedy"] and last[0]["steps"] == last[1]["steps"] == 768
    fresh = ActionNet(16, 8, "heuristic", pick_init=2.0).export()
    assert a["w"].size == fresh.size and not np.array_equal(a["w"], fresh)  # it trained


def test_a_run_ends_as_the_main_jobs_do(tmp_path, capsys) -> None:
    """The batched learner's progress bar is labelled, and its last lines are the main job's
    (tests/train/test_selfplay.py): the Elo on greedy = 0, the time, the next commands."""
    extra = ["total_timesteps=128", "elo_every=128", "elo_decks=2", "progress=true"]
    assert cli.main(["train", "--config", "kernel", *tiny_overrides(tmp_path, "ends"), *extra]) == 0
    out, err = capsys.readouterr()
    run = tmp_path / "ends"
    assert "PPO (the learner's env steps): 100%" in err and "| 128/128 [" in err
    assert assert_run_end(out, run, decks=2, steps=128)[1].startswith("  greedy   +0 (anchor)")


def test_a_saved_net_plays_as_an_agent_without_torch_and_as_torch_chooses(tmp_path, batch) -> None:
    obs, masks = batch
    torch.manual_seed(1)
    net = ActionNet(32, 16, "heuristic")
    with torch.no_grad():
        for p in net.parameters():
            p.mul_(3.0)
    agent = agents.load(str(net.save(tmp_path / "final_model.npz")))
    assert isinstance(agent, ActionNetAgent) and isinstance(agents.load(str(tmp_path)), ActionNetAgent)
    expected, _ = PredictModel(net, feature_context("treppenromme")).predict(obs, action_masks=masks != 0)
    chosen = [agent.act({"observation": o, "action_mask": m}) for o, m in zip(obs, masks, strict=True)]
    assert chosen == expected.tolist()
    assert len(set(chosen)) > 5


def test_a_tiny_run_with_planner_features_saves_a_net_that_plays_with_them(tmp_path, batch) -> None:
    """``features: planner``: the run trains and records its feature set; its final_model.npz plays
    through ``agents.load`` of the run folder as torch chooses on the planner's rows, and whole
    deals inside a search (net playouts and prior) and as an agent."""
    run = train_kernel(tiny_config(tmp_path, "planner", "features=planner", "total_timesteps=256"))
    with np.load(run / "final_model.npz") as saved:
        assert str(saved["features"]) == "planner"
        assert not np.array_equal(saved["w"], ActionNet(16, 8, "planner", pick_init=1.0).export())  # it trained
    agent = agents.load(str(run))
    assert isinstance(agent, ActionNetAgent) and agent.features == "planner"
    obs, masks = batch
    net = ActionNet.load(run / "final_model.npz")
    expected, _ = PredictModel(net, feature_context("treppenromme")).predict(obs, action_masks=masks != 0)
    chosen = [agent.act({"observation": o, "action_mask": m}) for o, m in zip(obs, masks, strict=True)]
    assert chosen == expected.tolist()
    search = f"rollout,net={run / 'final_model.npz'},prior_k=3,playout=net,playouts=4"
    records = run_tournament({"net": str(run), "search": search, "greedy": "greedy"}, players=3, decks=1)
    assert [r["rotation"] for r in records] == [0, 1, 2] and all(r["steps"] > 0 for r in records)


def test_a_deal_over_before_the_learners_first_decision_is_dealt_again(monkeypatch) -> None:
    # an opponent may go out at once (RULES §6.1); the row then holds no decision of the learner's
    rows = LearnerRows(4, 2, make_rules("treppenromme"), {"greedy": 1.0}, "heuristic", seed=0)
    deal_rows = rows.env.deal_rows
    dealt: list[list[int]] = []

    def first_deal_of_row_2_ends_at_once(which: np.ndarray) -> None:
        deal_rows(which)
        dealt.append(which.tolist())
        if len(dealt) == 1:
            rows.env.over[2] = 1

    monkeypatch.setattr(rows.env, "deal_rows", first_deal_of_row_2_ends_at_once)
    rows.reset()
    assert dealt == [[0, 1, 2, 3], [2]]
    assert (rows.env.over == 0).all() and (rows.env.to_move == rows.learner).all()
    assert (rows.legal().counts > 0).all()


def test_rows_pickled_before_the_shared_deal_loop_resume_as_they_were() -> None:
    import pickle

    from treppen.train.kernel.rows import load_rows

    rows = LearnerRows(6, 3, make_rules("treppenromme"), {"random": 0.5, "greedy": 0.5}, "heuristic", seed=4)
    rows.reset()
    old = pickle.loads(pickle.dumps(rows))
    # the checkpoint of a run before train/ had a package per backend: its module and names
    old._all = old.__dict__.pop("all_rows")
    data = pickle.dumps(old).replace(b"treppen.train.kernel.rows", b"treppen.train.kernel_rows")
    assert b"treppen.train.kernel_rows" in data
    restored = load_rows(data)
    np.testing.assert_array_equal(play(restored, 60)[0], play(rows, 60)[0])


def test_checkpoints_are_chosen_by_reading_them_not_by_their_names(tmp_path, capsys) -> None:
    """A finished run resumed further, with garbage and another file torch reads named as newer
    checkpoints: both are named and passed over, and the run goes on from its real newest one."""
    run = train_kernel(tiny_config(tmp_path, "run", "total_timesteps=256", "rollout_workers=0"))
    checkpoints = run / "checkpoints"
    garbage, foreign = checkpoints / "model_999999_steps.pt", checkpoints / "model_5000_steps.pt"
    garbage.write_bytes(b"not a checkpoint\n")
    torch.save({"steps": 5000}, foreign)
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(run), "total_timesteps=512"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[:2] == [
        f"passed over 2 damaged checkpoints, newest first: {garbage} (UnpicklingError: invalid load key, 'n'.); "
        f"{foreign} (ValueError: not a checkpoint of backend kernel (no steps, net, optimizer, sampler and pool in "
        "it))",
        f"run folder: {run}   (tensorboard --logdir {run / 'tb'})",
    ]
    assert printed[2] == f"resuming from {checkpoints / 'model_256_steps.pt'} (256 steps)"
    assert torch.load(checkpoints / "model_512_steps.pt", weights_only=False)["steps"] == 512
