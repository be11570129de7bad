"""The single-agent Gymnasium view (treppen_env.SingleAgentEnv, docs/ARCHITECTURE.md "Single-agent view"): seats,
rewards, deals that end before the learner moves, bad input and order of calls, env checkers."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from tests.env_helpers import stack_deck
from treppen import agents
from treppen.agents.base import RandomAgent
from treppen_env import SingleAgentEnv
from treppen_env.actions import NUM_ACTIONS, parse_action
from treppen_env.observation import OBS_SIZE, decode
from treppen_env.single_agent import ACKNOWLEDGE


class Recorder:
    """An opponent that plays randomly and records which seat it played for."""

    def __init__(self, env_ref: list, seed: int = 0):
        self.env_ref = env_ref
        self.agent = RandomAgent(seed=seed)
        self.seats: list[int] = []

    def act(self, obs: dict) -> int:
        aec = self.env_ref[0].aec
        assert obs["action_mask"].any()
        self.seats.append(aec.possible_agents.index(aec.agent_selection))
        return self.agent.act(obs)


def scripted(*texts: str):
    """An opponent (a callable ``obs -> action``) playing the given actions, written as text."""
    moves = iter(texts)
    return lambda obs: parse_action(next(moves))


def random_legal(env: SingleAgentEnv, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(env.action_masks())))


# Scenario R (2 players, treppenromme, dealer 0 plays first, RULES §2.4): player_0 goes out Rommé
# on its first turn, before player_1 ever moves (RULES §6.1-6.2): it books the run A-7 of spades
# (ace low 1 + 2..7 = 28, RULES §3.3, §5) and twice player_1's hand KH KD KC 9H 9D 4C 2C (54).
R_DECK = stack_deck(2, hands={0: "AS 2S 3S 4S 5S 6S 7S".split(), 1: "KH KD KC 9H 9D 4C 2C".split()}, stock=["QD"])
R_SCRIPT = ("draw", "meld AS 2S 3S 4S 5S 6S 7S", "discard QD")
R_INFO = {"deal_points": {"player_0": 136, "player_1": 0}, "outcome": "romme", "went_out": "player_0"}


# --------------------------------------------------------------------------- seats and rewards
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_every_seat_opponents_move_and_rewards_are_the_learners(num_players):
    for seat in range(num_players):
        ref: list = []
        recorder = Recorder(ref, seed=seat)
        env = SingleAgentEnv(recorder, num_players=num_players, seat=seat)
        ref.append(env)
        rng = np.random.default_rng(seat)
        for episode in range(2):
            obs, _ = env.reset(seed=100 * num_players + 10 * seat + episode)
            assert env.learner == f"player_{seat}"
            order, total = [], 0.0
            done = truncated = False
            while not (done or truncated):
                assert decode(obs).to_move == 0  # the learner moves whenever it gets an observation
                before = len(recorder.seats)
                order.append(seat)
                obs, reward, done, truncated, info = env.step(random_legal(env, rng))
                order.extend(recorder.seats[before:])
                total += reward
            assert not info.get("illegal_action")
            assert set(order) == set(range(num_players)), "every opponent seat must move"
            assert seat not in recorder.seats
            turns = [s for i, s in enumerate(order) if i == 0 or s != order[i - 1]]
            assert all(b == (a + 1) % num_players for a, b in itertools.pairwise(turns))
            points = info["deal_points"]
            mine = points[env.learner]
            others = [p for a, p in points.items() if a != env.learner]
            assert total == pytest.approx((mine - sum(others) / len(others)) / 100)
            assert total == pytest.approx(env.aec.rewards[env.learner])


def test_checks_the_seat():
    assert SingleAgentEnv(RandomAgent(seed=0), seat=np.int64(1)).reset(seed=0)[0].shape == (OBS_SIZE,)
    for seat in (2, -1, "left", True):
        with pytest.raises(ValueError, match=r"choose 'random' or a seat 0\.\.1"):
            SingleAgentEnv(RandomAgent(seed=0), seat=seat)
    with pytest.raises(ValueError, match="seat=5"):
        SingleAgentEnv(RandomAgent(seed=0)).reset(seed=0, options={"seat": 5})


# --------------------------------------------------------------------------- a deal over before the learner moves
def test_deal_over_before_the_learners_first_move_is_one_acknowledging_step():
    env = SingleAgentEnv(scripted(*R_SCRIPT), seat=1)
    obs, info = env.reset(seed=0, options={"deck": R_DECK, "dealer": 0})
    # the deck's own deal, not a new one: reset returns the learner's view of its end
    view = decode(obs)
    assert (view.phase, view.points, view.hand_sizes) == ("deal_over", (0, 28), (7, 0))  # booked (RULES §5)
    assert info == R_INFO
    mask = env.action_masks()
    assert mask.dtype == bool and mask.shape == (NUM_ACTIONS,)
    assert np.flatnonzero(mask).tolist() == [ACKNOWLEDGE] == [0]
    obs, reward, terminated, truncated, info = env.step(ACKNOWLEDGE)
    assert (reward, terminated, truncated, info) == (pytest.approx(-1.36), True, False, R_INFO)
    assert decode(obs).phase == "deal_over" and not env.action_masks().any()
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(ACKNOWLEDGE)


def test_deal_over_before_the_learner_moves_other_actions():
    env = SingleAgentEnv(scripted(*R_SCRIPT), seat=1)
    env.reset(options={"deck": R_DECK, "dealer": 0})
    with pytest.raises(ValueError, match=r"action 898 is not in the action space Discrete\(898\)"):
        env.step(898)
    # an action of the space other than the one in the mask: the documented illegal-action result
    assert env.step(1)[1:] == (-1.0, True, False, {"illegal_action": True})


class ScenarioR(SingleAgentEnv):
    """Every episode is scenario R, with the learner at seat 1: over before the learner moves."""

    def __init__(self) -> None:
        super().__init__(RandomAgent(seed=0), seat=1)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.set_opponents(scripted(*R_SCRIPT))
        return super().reset(seed=seed, options={"deck": R_DECK, "dealer": 0})


def test_deal_over_before_the_learner_moves_reaches_sb3_as_a_one_step_episode():
    # SB3's loop: get_action_masks on the VecEnv, step, Monitor's episode record in the infos
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    vec = DummyVecEnv([lambda: Monitor(ScenarioR())])
    vec.reset()
    for _ in range(2):  # the VecEnv resets by itself and deals scenario R again
        masks = get_action_masks(vec)
        assert np.flatnonzero(masks[0]).tolist() == [ACKNOWLEDGE]
        _, rewards, dones, infos = vec.step(np.array([ACKNOWLEDGE]))
        assert rewards.tolist() == [pytest.approx(-1.36)] and dones.tolist() == [True]
        assert infos[0]["episode"]["r"] == pytest.approx(-1.36) and infos[0]["episode"]["l"] == 1
        assert {k: infos[0][k] for k in R_INFO} == R_INFO


def test_maskable_ppo_learns_on_one_step_episodes():
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")
    model = sb3_contrib.MaskablePPO("MlpPolicy", ScenarioR(), n_steps=16, batch_size=16, n_epochs=1, seed=0)
    model.learn(32)
    episodes = list(model.ep_info_buffer)
    assert len(episodes) == 32
    assert all(e["l"] == 1 and e["r"] == pytest.approx(-1.36) for e in episodes)


def test_evaluation_counts_a_deal_over_before_the_learner_moves():
    # train.evaluate plays SingleAgentEnv episodes through the mask: the acknowledging step counts
    from treppen.train.common.evaluate import deal_result

    env = SingleAgentEnv(scripted(*R_SCRIPT), seat=1)
    env.reset(options={"deck": R_DECK, "dealer": 0})
    *_, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert deal_result(info, env.learner) == (0.0, -136.0)


def test_game_keeps_the_reward_of_a_deal_over_before_the_learner_moved():
    """episode="game": the dealer (an opponent) goes out Rommé in its first turn (RULES §6.2);
    that deal's reward reaches the learner's first step, so its rewards sum to its game margin."""
    env = SingleAgentEnv(agents.GreedyAgent(seed=0), seat=1, episode="game", target=300)
    _, info = env.reset(seed=0, options={"deck": R_DECK})
    game = env.aec.game
    assert (game.deals_played, game.totals) == (1, [144, 0])
    assert info == {
        "deal_points": {"player_0": 144, "player_1": 0},
        "outcome": "romme",
        "went_out": "player_0",
        "totals": {"player_0": 144, "player_1": 0},
    }
    rng = np.random.default_rng(0)
    total, done, steps = 0.0, False, 0
    while not done:
        _, reward, terminated, truncated, info = env.step(random_legal(env, rng))
        total, steps = total + reward, steps + 1
        done = terminated or truncated
    assert (game.deals_played, steps, info["totals"]) == (3, 69, {"player_0": 418, "player_1": 137})
    assert total == pytest.approx((137 - 418) / 100)  # the first deal's -1.44 included


def test_game_over_before_the_learner_moves():
    env = SingleAgentEnv(scripted(*R_SCRIPT), seat=1, episode="game", target=100)
    _, info = env.reset(options={"deck": R_DECK, "dealer": 0})
    game_info = {**R_INFO, "totals": {"player_0": 136, "player_1": 0}}
    assert info == game_info
    assert env.step(ACKNOWLEDGE)[1:] == (pytest.approx(-1.36), True, False, game_info)


# --------------------------------------------------------------------------- bad input and order of calls
def test_illegal_action_ends_the_episode():
    env = SingleAgentEnv(RandomAgent(seed=0))
    obs, _ = env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    after, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated, info) == (-1.0, True, False, {"illegal_action": True})
    np.testing.assert_array_equal(after, obs)  # nothing was played
    assert not env.action_masks().any()


@pytest.mark.parametrize("action", [898, -1, 1.5, True, None])
def test_actions_outside_the_space_raise(action):
    # one behaviour with raw_env and env() (tests/treppen_env/test_env.py); True is not "take 1", -1 not "discard KC"
    env = SingleAgentEnv(RandomAgent(seed=0))
    env.reset(seed=0)
    with pytest.raises(ValueError) as err:
        env.step(action)
    assert str(err.value) == (
        f"action {action!r} is not in the action space Discrete(898): an action is an int (or NumPy integer) 0..897"
    )
    env.step(random_legal(env, np.random.default_rng(0)))  # the episode goes on


def test_calls_before_the_first_reset_raise():
    env = SingleAgentEnv(RandomAgent(seed=0))
    with pytest.raises(RuntimeError, match=r"^call reset\(\) before action_masks\(\)$"):
        env.action_masks()
    with pytest.raises(RuntimeError, match=r"^call reset\(\) before step\(\)$"):
        env.step(0)


def test_sb3_get_action_masks_before_reset_raises_clearly():
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import DummyVecEnv

    with pytest.raises(RuntimeError, match=r"call reset\(\) before action_masks\(\)"):
        get_action_masks(DummyVecEnv([lambda: SingleAgentEnv(RandomAgent(seed=0))]))


@pytest.mark.parametrize("how", ["played", "illegal"])
def test_step_after_the_episode_ended_raises(how):
    env = SingleAgentEnv(RandomAgent(seed=0))
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    if how == "illegal":
        env.step(int(np.flatnonzero(~env.action_masks())[0]))
    else:
        while not any(env.step(random_legal(env, rng))[2:4]):
            pass
    assert not env.action_masks().any()
    with pytest.raises(
        RuntimeError, match=r"^step\(\) after the episode ended \(terminated or truncated\); call reset\(\) first$"
    ):
        env.step(0)
    env.reset(seed=4)  # a reset starts over
    assert env.action_masks().any()


def test_a_deck_given_as_one_string_raises():
    env = SingleAgentEnv(RandomAgent(seed=0))
    with pytest.raises(ValueError, match="is one string; give a sequence of 52 cards"):
        env.reset(options={"deck": " ".join(R_DECK)})


# --------------------------------------------------------------------------- env checkers
# Warnings the checkers may give our envs, with the reason each is acceptable. Any other warning
# fails the test (today the checkers give none).
ALLOWED_CHECKER_WARNINGS: frozenset[str] = frozenset()


def checker_warnings(env, gymnasium: bool = True) -> list[str]:
    """Warnings of Gymnasium's and SB3's env checkers on ``env`` outside the allow-list."""
    from gymnasium.utils.env_checker import check_env as gym_check
    from stable_baselines3.common.env_checker import check_env as sb3_check

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if gymnasium:
            gym_check(env, skip_render_check=True)
        sb3_check(env, warn=True)
    return [str(w.message) for w in caught if str(w.message) not in ALLOWED_CHECKER_WARNINGS]


def test_passes_the_env_checkers_without_warnings():
    from treppen.train.sb3.pool import SelfPlayEnv

    assert checker_warnings(SingleAgentEnv(RandomAgent(seed=0), num_players=3)) == []
    assert checker_warnings(SingleAgentEnv(RandomAgent(seed=0), episode="game")) == []
    assert checker_warnings(SelfPlayEnv(probs={"random": 0.5, "greedy": 0.5}, seed=0), gymnasium=False) == []


def test_env_checker_test_can_fail():
    # control: an observation space without bounds draws Gymnasium's checker warnings
    import gymnasium

    env = SingleAgentEnv(RandomAgent(seed=0))
    env.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (OBS_SIZE,), np.float32)
    found = checker_warnings(env)
    assert [message[message.index("A Box") :][:50] for message in found] == [
        "A Box observation space minimum value is -infinity",
        "A Box observation space maximum value is infinity.",
    ]
