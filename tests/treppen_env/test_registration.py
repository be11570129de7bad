"""``gymnasium.make`` of the single-agent env (treppen_env.registration): ids tied to ENV_VERSION,
Gymnasium's env checker, and a registration that the rules engine's import does without."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium
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


def test_make_takes_the_envs_arguments_and_asks_for_opponents() -> None:
    opponents = [RandomAgent(), GreedyAgent(rules="rum500")]
    env = gymnasium.make("treppen/Rum500-v0", num_players=3, opponents=opponents, seat=1).unwrapped
    assert env.opponents == opponents and env.num_players == 3 and env.seat_choice == 1
    with pytest.raises(ValueError, match=r"gymnasium.make needs opponents=: .*treppen.agents.load\('greedy'\)"):
        gymnasium.make("treppen/Treppenromme-v0")


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
