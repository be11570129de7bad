"""The batched env (treppen_env/vector.py, treppen_env/core/vector_kernels.py): row for row the AEC env's
deals for the same seeds and actions, Gymnasium's next-step auto-reset, kernel opponents, and bad
actions refused before any row moves."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import treppen_env
from treppen.agents import GreedyAgent
from treppen_env.core.layout import STOCK_LEN
from treppen_env.vector import TreppenVectorEnv

SETTINGS = [("treppenromme", 2), ("treppenromme", 3), ("treppenromme", 4), ("rum500", 2), ("rum500", 4)]


def aec_rows(seed: int, num_envs: int, num_players: int, rules: str, **options):
    envs = []
    for i in range(num_envs):
        env = treppen_env.raw_env(num_players=num_players, rules=rules, **options)
        env.reset(seed=seed + i)
        envs.append(env)
    return envs


@pytest.mark.parametrize(("rules", "players"), SETTINGS)
def test_self_play_rows_equal_the_aec_env_deal_for_deal(rules: str, players: int) -> None:
    num_envs, seed = 6, 100
    vec = treppen_env.vector_env(num_envs, players, rules)
    obs, infos = vec.reset(seed=seed)
    envs = aec_rows(seed, num_envs, players, rules)
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(300):
        resetting = vec._autoreset.copy()
        actions = np.zeros(num_envs, dtype=np.int64)  # ignored in a resetting row
        for i, env in enumerate(envs):
            if resetting[i]:
                continue
            want = env.observe(env.agent_selection)
            assert infos["current_player"][i] == env.possible_agents.index(env.agent_selection)
            np.testing.assert_array_equal(obs[i], want["observation"])
            np.testing.assert_array_equal(infos["action_mask"][i], want["action_mask"])
            actions[i] = rng.choice(np.flatnonzero(want["action_mask"]))
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        for i, env in enumerate(envs):
            if resetting[i]:  # the row's next deal, from its generator as the AEC env's next reset()
                env.reset()
                assert rewards[i] == 0 and not terminated[i] and not truncated[i]
                continue
            mover = env.agent_selection
            env.step(int(actions[i]))
            assert terminated[i] == any(env.terminations.values()) and truncated[i] == any(env.truncations.values())
            if not (terminated[i] or truncated[i]):
                assert rewards[i] == 0
                continue
            finished += 1
            agents = env.possible_agents
            assert rewards[i] == pytest.approx(env.rewards[mover])
            np.testing.assert_allclose(infos["rewards"][i], [env.rewards[a] for a in agents], atol=1e-6)
            info = env.infos[agents[0]]
            assert list(infos["deal_points"][i]) == [info["deal_points"][a] for a in agents]
            assert infos["outcome"][i] == info["outcome"]
            assert infos["went_out"][i] == (-1 if info["went_out"] is None else agents.index(info["went_out"]))
            np.testing.assert_array_equal(obs[i], env.observe(mover)["observation"])  # the final observation
            assert not infos["action_mask"][i].any() and infos["current_player"][i] == -1
    assert finished >= num_envs  # whole deals, then the rows' next deals


def test_the_row_after_a_deal_starts_the_next_deal() -> None:
    vec = treppen_env.vector_env(1, 2, "treppenromme", opponents="greedy")
    obs, infos = vec.reset(seed=7)
    env = treppen_env.raw_env(num_players=2)
    env.reset(seed=7)
    rng = np.random.default_rng(1)
    done = False
    while not done:
        action = int(rng.choice(np.flatnonzero(infos["action_mask"][0])))
        obs, reward, term, trunc, infos = vec.step(np.array([action]))
        done = bool(term[0] or trunc[0])
    assert "deal_points" in infos and infos["_deal_points"][0] and not infos["action_mask"][0].any()
    obs, reward, term, trunc, infos = vec.step(np.array([12345 % 898]))  # ignored: the row resets
    assert reward[0] == 0 and not term[0] and infos["action_mask"][0].any()
    env.reset()  # the AEC env's next deal from the same generator
    np.testing.assert_array_equal(obs[0], env.observe("player_0")["observation"])


def test_greedy_opponents_play_inside_the_kernel_as_the_greedy_agent() -> None:
    num_envs = 4
    vec = treppen_env.vector_env(num_envs, 3, "treppenromme", opponents="greedy", seat=1)
    obs, infos = vec.reset(seed=20)
    envs = aec_rows(20, num_envs, 3, "treppenromme")
    greedy = GreedyAgent()
    rng = np.random.default_rng(2)
    live = np.ones(num_envs, dtype=bool)
    while live.any():
        actions = np.zeros(num_envs, dtype=np.int64)
        for i, env in enumerate(envs):
            if not live[i]:  # the row plays on in its next deals
                actions[i] = np.flatnonzero(infos["action_mask"][i])[0] if infos["action_mask"][i].any() else 0
                continue
            while env.agent_selection != "player_1" and not any(env.terminations.values()):
                env.step(greedy.act(env.observe(env.agent_selection)))
            want = env.observe("player_1")
            np.testing.assert_array_equal(obs[i], want["observation"])
            np.testing.assert_array_equal(vec.action_masks()[i], want["action_mask"] != 0)
            actions[i] = rng.choice(np.flatnonzero(want["action_mask"]))
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        for i, env in enumerate(envs):
            if not live[i]:
                continue
            env.step(int(actions[i]))
            while not any(env.terminations.values()) and not any(env.truncations.values()):
                if env.agent_selection == "player_1":
                    break
                env.step(greedy.act(env.observe(env.agent_selection)))
            if terminated[i] or truncated[i]:
                assert rewards[i] == pytest.approx(env.rewards["player_1"])
                np.testing.assert_array_equal(obs[i], env.observe("player_1")["observation"])
                live[i] = False


def test_an_illegal_action_raises_and_moves_no_row() -> None:
    vec = TreppenVectorEnv(3, 2, "treppenromme")
    obs, infos = vec.reset(seed=0)
    before = (obs.copy(), vec._u64.copy(), vec._i64.copy())
    actions = np.array([np.flatnonzero(m)[0] for m in infos["action_mask"]])
    actions[1] = 897  # a discard in the draw phase
    with pytest.raises(
        ValueError, match=r"illegal actions in 1 rows \(row 1: discard KC \(897\)\); no row was stepped"
    ):
        vec.step(actions)
    for was, now in zip(before, (obs, vec._u64, vec._i64), strict=True):
        np.testing.assert_array_equal(was, now)
    with pytest.raises(ValueError, match="shape"):
        vec.step(actions[:2])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_envs": 0}, "num_envs=0"),
        ({"opponents": "smart"}, "opponents='smart'"),
        ({"opponents": "greedy", "seat": 2}, "seat=2"),
        ({"reward": "elo"}, "reward='elo'"),
        ({"autoreset_mode": "never"}, "autoreset_mode='never'"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        treppen_env.vector_env(**{"num_envs": 2, **kwargs})


def test_reshuffles_use_the_rows_generators() -> None:
    vec = treppen_env.vector_env(3, 2, "treppenromme", stock_exhausted="reshuffle")
    obs, _ = vec.reset(seed=5)
    envs = aec_rows(5, 3, 2, "treppenromme", stock_exhausted="reshuffle")
    rng = np.random.default_rng(3)
    reshuffles = 0
    live = [True] * 3
    while any(live):
        actions = np.zeros(3, dtype=np.int64)
        for i, env in enumerate(envs):
            if live[i]:
                actions[i] = rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))
            else:  # the row deals on; keep it legal
                actions[i] = vec.sample_actions()[i]
        stock = vec._i64[:, STOCK_LEN].copy()
        obs, _, term, trunc, _ = vec.step(actions)
        for i, env in enumerate(envs):
            if not live[i]:
                continue
            env.step(int(actions[i]))
            if term[i] or trunc[i]:
                live[i] = False
                continue
            reshuffles += int(vec._i64[i, STOCK_LEN] > stock[i])
            np.testing.assert_array_equal(obs[i], env.observe(env.agent_selection)["observation"])
    assert reshuffles >= 3  # random play exhausts the stock: the staircase became it, as in env()


def test_same_step_auto_reset_returns_the_next_deal_at_once() -> None:
    vec = treppen_env.vector_env(4, 2, opponents="random", autoreset_mode="same_step")
    vec.reset(seed=3)
    ended = 0
    for _ in range(400):
        _obs, rewards, term, trunc, infos = vec.step(vec.sample_actions())
        assert infos["action_mask"].any(axis=1).all()  # every row has a live deal
        done = term | trunc
        if done.any():
            ended += int(done.sum())
            assert infos["_final_obs"].tolist() == done.tolist() and infos["_deal_points"].tolist() == done.tolist()
            assert (rewards[~done] == 0).all()
    assert ended >= 4


def test_messages_of_bad_calls_say_what_is_wrong():
    """Each message names the real problem."""
    env = treppen_env.vector_env(np.int64(2))  # a NumPy integer is a whole number
    assert env.num_envs == 2 and type(env.num_envs) is int
    with pytest.raises(gym.error.ResetNeeded, match=r"step\(\) before reset\(\): call reset\(\) first"):
        env.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match=r"^seed=-1 must be a whole number of at least 0$"):
        env.reset(seed=-1)
    with pytest.raises(ValueError, match=r"^reset options \['deck'\]: the batched env takes none"):
        env.reset(options={"deck": list(range(52))})
    with pytest.raises(ValueError, match=r"^opponents=123: give None, one of \['greedy', 'random'\], or a list"):
        treppen_env.vector_env(2, opponents=123)
    with pytest.raises(ValueError, match=r"^opponents=\[\['greedy'\]\]: give None"):
        treppen_env.vector_env(2, opponents=[["greedy"]])
    with pytest.raises(ValueError, match=r"^seed=-3 must be a whole number of at least 0$"):
        treppen_env.raw_env().reset(seed=-3)
    big = np.uint64(2**64 - 1)  # rows get seed + row as Python ints: no wrap-around to 0, 1, 2
    env = treppen_env.vector_env(3)
    env.reset(seed=big)
    assert [r.bit_generator.seed_seq.entropy for r in env._rngs] == [2**64 - 1, 2**64, 2**64 + 1]


def test_a_pickled_env_steps_on_as_the_original_through_its_public_buffers() -> None:
    import pickle

    env = TreppenVectorEnv(4, 3, opponents="greedy")
    env.reset(seed=7)
    copy = pickle.loads(pickle.dumps(env))
    assert copy.masks.base is copy._padded  # the mask is a view again, not a pickled copy
    for _ in range(40):
        actions = env.sample_actions()
        for e in (env, copy):
            e.step(actions)
        np.testing.assert_array_equal(copy.observations, env.observations)
        np.testing.assert_array_equal(copy.masks, env.masks)
        np.testing.assert_array_equal(copy.truncated, env.truncated)
    assert env.observations is env._obs and env.masks.base is env._padded  # the buffers, not copies
