"""``vec_env: kernel`` (train/sb3/kernel_vec_env.py): SB3's VecEnv over the batched env, pool
opponents inside the kernel and in Python, SB3's episode infos, and a training run on it."""

from __future__ import annotations

import numpy as np
from stable_baselines3.common.vec_env import VecCheckNan

from treppen.apps import cli
from treppen.train.sb3.kernel_vec_env import KernelVecEnv
from treppen_env.actions import NUM_ACTIONS


def masked_random(env: KernelVecEnv, rng: np.random.Generator) -> np.ndarray:
    masks = np.stack(env.env_method("action_masks"))
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def test_episodes_end_with_sb3_infos_and_the_learner_always_to_move() -> None:
    env = KernelVecEnv(6, 3, "treppenromme", {"random": 0.5, "greedy": 0.5}, seed=3)
    checked = VecCheckNan(env, raise_exception=True)
    obs = checked.reset()
    assert obs.shape == (6, 969) and env.observation_space.contains(obs[0])
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(120):
        checked.step_async(masked_random(env, rng))
        obs, rewards, dones, infos = checked.step_wait()
        assert env.action_masks().any(axis=1).all()  # every row: the learner to move in a live deal
        for i in np.flatnonzero(dones):
            info = infos[i]
            ends += 1
            assert info["episode"]["l"] > 0 and info["episode"]["r"] == rewards[i]
            assert sorted(info["opponents"]) in (["greedy", "greedy"], ["greedy", "random"], ["random", "random"])
            assert info["terminal_observation"].shape == (969,)
        assert (rewards[~dones] == 0).all()
    assert ends > 6


def test_snapshot_opponents_play_in_python_between_kernel_calls(tmp_path, mlp_model) -> None:
    from treppen.train.sb3.pool import save_snapshot

    model, _ = mlp_model(net_arch=(8,))
    path = save_snapshot(model.policy, tmp_path / "snap.npz")
    env = KernelVecEnv(4, 2, "treppenromme", {"random": 0.1, "snapshot": 0.9}, seed=1)
    assert env.env_method("set_pool", [str(path)]) == [1, 1, 1, 1]
    env.reset()
    rng = np.random.default_rng(1)
    kinds = set()
    for _ in range(400):
        env.step_async(masked_random(env, rng))
        _, _, dones, infos = env.step_wait()
        kinds |= {k for i in np.flatnonzero(dones) for k in infos[i]["opponents"]}
    assert "snapshot" in kinds


def test_bad_learner_actions_are_refused() -> None:
    env = KernelVecEnv(2, 2, seed=0)
    env.reset()
    env.step_async(np.array([NUM_ACTIONS - 1, NUM_ACTIONS - 1]))  # discards in the draw phase
    try:
        env.step_wait()
    except ValueError as err:
        assert "illegal learner actions in rows [0, 1]" in str(err)
    else:
        raise AssertionError("an illegal action went through")


def test_train_runs_on_the_kernel_vec_env(tmp_path, tiny_train) -> None:
    overrides = [o for o in tiny_train if not o.startswith("vec_env")] + ["vec_env=kernel", "n_envs=4"]
    assert cli.main(["train", *overrides, f"runs_dir={tmp_path}", "name=kernel"]) == 0
    run = tmp_path / "kernel"
    assert (run / "final_model.zip").is_file()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(next((run / "tb").iterdir())))
    events.Reload()
    assert events.Scalars("selfplay/illegal_actions")[-1].value == 0
    assert "rollout/ep_rew_mean" in events.Tags()["scalars"]


def test_a_deal_over_before_the_learners_first_decision_is_dealt_again(monkeypatch) -> None:
    # an opponent may go out at once (RULES §6.1); the row then holds no decision of the learner's
    env = KernelVecEnv(4, 2, "treppenromme", {"greedy": 1.0}, seed=0)
    core = env.rows.env
    deal_rows = core.deal_rows
    dealt: list[list[int]] = []

    def first_deal_of_row_2_ends_at_once(which: np.ndarray) -> None:
        deal_rows(which)
        dealt.append(which.tolist())
        if len(dealt) == 1:
            core.over[2] = 1

    monkeypatch.setattr(core, "deal_rows", first_deal_of_row_2_ends_at_once)
    env.reset()
    assert dealt == [[0, 1, 2, 3], [2]]
    assert (core.over == 0).all() and (core.to_move == env.rows.learner).all()
    assert env.action_masks().any(axis=1).all()
