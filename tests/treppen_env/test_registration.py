"""``gymnasium.make`` of the single-agent env (treppen_env.registration, made by
treppen.agents.opponents): ids tied to ENV_VERSION, defaults, opponents by spec, Gymnasium's env
checker, ``make_vec`` in async mode, bad opponents refused at make, and a registration that the
rules engine's import does without."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import treppen_env
from treppen.agents import GreedyAgent, RandomAgent
from treppen_env.registration import GYM_IDS
from treppen_env.single_agent import SingleAgentEnv


def test_the_ids_carry_the_env_version() -> None:
    assert treppen_env.ENV_VERSION == "treppen_v0"
    assert GYM_IDS == {"treppenromme": "treppen/Treppenromme-v0", "rum500": "treppen/Rum500-v0"}
    assert set(GYM_IDS.values()) <= set(gymnasium.registry)


@pytest.mark.parametrize(
    ("env_id", "rules"), [("treppen/Treppenromme-v0", "treppenromme"), ("treppen/Rum500-v0", "rum500")]
)
def test_make_passes_gymnasiums_env_checker(env_id: str, rules: str) -> None:
    env = gymnasium.make(env_id, opponents=GreedyAgent(rules=rules))
    inner = env.unwrapped
    assert isinstance(inner, SingleAgentEnv) and inner.aec.rules.name == rules  # RULES §8 presets
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker's warnings too
        check_env(inner)
        observation, _ = env.reset(seed=0)
    assert observation.shape == inner.observation_space.shape == (969,)
    env.close()


@pytest.mark.parametrize(
    ("env_id", "rules"), [("treppen/Treppenromme-v0", "treppenromme"), ("treppen/Rum500-v0", "rum500")]
)
def test_every_id_makes_with_its_defaults(env_id: str, rules: str) -> None:
    """As every id of Gymnasium's registry does: greedy plays the other seat, by the id's rules."""
    env = gymnasium.make(env_id)
    (opponent,) = env.unwrapped.opponents
    assert isinstance(opponent, GreedyAgent) and opponent.rules is env.unwrapped.aec.rules
    assert env.unwrapped.aec.rules.name == rules
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    with pytest.warns(UserWarning, match="is different from the unwrapped version"):
        check_env(env)  # as made: it warns that a wrapper is on, and passes
    env.close()


def test_make_takes_the_envs_arguments() -> None:
    opponents = [RandomAgent(), GreedyAgent(rules="rum500")]
    env = gymnasium.make("treppen/Rum500-v0", num_players=3, opponents=opponents, seat=1).unwrapped
    assert env.opponents == opponents and env.num_players == 3 and env.seat_choice == 1


def test_make_loads_opponents_by_spec() -> None:
    """One spec for every other seat (loaded once), or one per seat, mixed with agents and callables;
    the rules options reach the env and the agents the specs name alike."""
    env = gymnasium.make("treppen/Treppenromme-v0", num_players=4, opponents="random").unwrapped
    assert len(env.opponents) == 3 and isinstance(env.opponents[0], RandomAgent)
    assert env.opponents[0] is env.opponents[1] is env.opponents[2]
    first_legal = lambda observation: int(observation["action_mask"].argmax())  # noqa: E731
    env = gymnasium.make(
        "treppen/Treppenromme-v0", num_players=4, opponents=["greedy", first_legal, "random"], corner_runs=False
    ).unwrapped
    greedy, callable_, random = env.opponents
    assert isinstance(greedy, GreedyAgent) and callable_ is first_legal and isinstance(random, RandomAgent)
    assert greedy.rules is env.aec.rules and not env.aec.rules.corner_runs
    env.reset(seed=1)  # the three play until the learner is to move


def test_make_with_a_zoo_agent_plays_a_deal() -> None:
    env = gymnasium.make("treppen/Treppenromme-v0", opponents="ppo-2p")
    assert repr(env.unwrapped.opponents[0]).startswith("SnapshotAgent(")  # the zoo card's NumPy policy
    env.reset(seed=4)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        action = int(env.unwrapped.action_masks().argmax())
        _, _, terminated, truncated, info = env.step(action)
        steps += 1
    assert info["outcome"] in ("went_out", "romme", "stock_exhausted", "max_turns") and steps > 1


def test_make_vec_async_steps_with_specs() -> None:
    """A spec string pickles: each subprocess loads its own opponents."""
    envs = gymnasium.make_vec("treppen/Treppenromme-v0", num_envs=4, vectorization_mode="async", opponents="greedy")
    try:
        observations, _ = envs.reset(seed=0)
        masks = envs.call("action_masks")
        actions = np.array([int(mask.argmax()) for mask in masks])
        observations, rewards, terminated, truncated, _ = envs.step(actions)
        assert observations.shape == (4, 969) and rewards.shape == (4,)
        assert not (terminated | truncated).all()
    finally:
        envs.close()


def test_a_saved_spec_makes_the_same_env() -> None:
    env = gymnasium.make("treppen/Rum500-v0", num_players=3, opponents=["greedy", "random"])
    again = gymnasium.make(gymnasium.envs.registration.EnvSpec.from_json(env.spec.to_json()))
    kinds = [type(o) for o in again.unwrapped.opponents]
    assert kinds == [GreedyAgent, RandomAgent] and again.unwrapped.aec.rules.name == "rum500"


@pytest.mark.parametrize(
    ("opponents", "message"),
    [
        ([None], r"^opponents\[0\]=None is no agent; give an agent with act\(observation\) -> int or a callable"),
        (None, r"^opponents=None is no agent"),
        ([3], r"^opponents\[0\]=3 is no agent"),
        (object(), r"^opponents=<object object at .*> is no agent"),
        (["greedy", "random"], r"^2 opponents given for 2 players; give one opponent, or a sequence of 1$"),
        ("grredy", r"^unknown agent spec 'grredy' \(did you mean greedy\?\); valid specs: "),
        (["nobody"], r"^unknown agent spec 'nobody'; valid specs: "),
    ],
)
def test_bad_opponents_are_refused_at_make(opponents: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gymnasium.make("treppen/Treppenromme-v0", opponents=opponents)


def test_the_env_itself_points_a_spec_to_its_loader() -> None:
    """The env package loads no agents: a spec given to the class directly says where it loads."""
    with pytest.raises(ValueError, match=r"opponents='greedy' is an agent spec; SingleAgentEnv plays agents: "):
        SingleAgentEnv("greedy")
    with pytest.raises(ValueError, match=r"opponents\[1\]='random' is an agent spec: treppen.agents.load loads it"):
        SingleAgentEnv([RandomAgent(), "random"], num_players=3)


@pytest.mark.parametrize(
    "code",
    [
        "import gymnasium, treppen_env",  # Gymnasium first: the package's import registers
        "import treppen_env, gymnasium; treppen_env.SingleAgentEnv",  # else the first use of an env
    ],
)
def test_the_ids_are_registered_in_a_fresh_interpreter(code: str) -> None:
    program = f"{code}\nprint(sorted(i for i in gymnasium.registry if i.startswith('treppen/')))"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['treppen/Rum500-v0', 'treppen/Treppenromme-v0']"
