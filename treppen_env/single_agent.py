"""Single-agent Gymnasium view of the AEC env for Stable-Baselines3 (DESIGN "Single-agent view").

One seat learns; every other seat is played inside the env by opponents, so each transition and
each reward belongs to the learner (the trap of PettingZoo #1147 cannot occur). The observation is
the flat float32 vector of :mod:`treppen_env.observation`; the mask comes from ``action_masks()``
for sb3-contrib's MaskablePPO.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from treppen_env import observation as O
from treppen_env.actions import NUM_ACTIONS
from treppen_env.aec import raw_env

Opponent = Callable[[dict[str, np.ndarray]], int]
ILLEGAL_REWARD = -1.0


class SingleAgentEnv(gym.Env):
    """One learning seat against opponents that act inside ``step``.

    Observation: float32 array of shape (OBS_SIZE,) in [-10, 10]; action: ``Discrete(898)``.
    Reward: the learner's env reward (zero-sum deal points / 100 by default), summed over the
    opponents' moves in between. An illegal action (Gymnasium's and SB3's checkers step random
    actions) ends the episode with reward -1 and ``info["illegal_action"] = True`` instead of
    raising (PettingZoo's classic convention); training must see none.

    :param opponents: an agent (anything with ``act(obs) -> int`` and optionally
        ``reset(seed=None)``, called at every episode start and reseeded when ``reset`` gets a
        seed) or a callable ``obs -> int``, for every other seat; or a sequence of
        ``num_players - 1`` of them, in seat order after the learner.
    :param num_players: 2 to 4.
    :param rules: rules preset (RULES §8).
    :param seat: the learner's seat, or ``"random"`` to draw it each episode from the env's generator.
    :param env_kwargs: further arguments of :class:`treppen_env.raw_env` (``episode``, ``reward``,
        rules options).
    :raises ValueError: for a bad seat, a wrong number of opponents or bad env arguments.
    """

    metadata = {"render_modes": ["ansi", "human"]}

    def __init__(
        self,
        opponents: Opponent | Sequence[Opponent],
        num_players: int = 2,
        rules: str = "treppenromme",
        seat: int | str = "random",
        render_mode: str | None = None,
        **env_kwargs: Any,
    ):
        super().__init__()
        self.aec = raw_env(num_players=num_players, rules=rules, render_mode=render_mode, **env_kwargs)
        self.num_players = num_players
        self._check_seat(seat)
        self.seat_choice = seat
        self.render_mode = render_mode
        self.set_opponents(opponents)
        self.observation_space = gym.spaces.Box(O.OBS_LOW, O.OBS_HIGH, (O.OBS_SIZE,), np.float32)
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.learner = "player_0"
        self._pending_reward = 0.0
        self._seat_rng = np.random.default_rng()

    def _check_seat(self, seat: object) -> None:
        if seat == "random":
            return
        if isinstance(seat, bool) or not hasattr(seat, "__index__") or not 0 <= seat < self.num_players:
            raise ValueError(f"seat={seat!r}; choose 'random' or a seat 0..{self.num_players - 1}")

    def set_opponents(self, opponents: Opponent | Sequence[Opponent]) -> None:
        """Replace the opponents (e.g. from a training callback via ``env_method``).

        :raises ValueError: when a sequence does not hold ``num_players - 1`` opponents.
        """
        if isinstance(opponents, Sequence):
            if len(opponents) != self.num_players - 1:
                raise ValueError(
                    f"{len(opponents)} opponents given for {self.num_players} players; "
                    f"give one opponent, or a sequence of {self.num_players - 1}"
                )
            self.opponents = list(opponents)
        else:
            self.opponents = [opponents] * (self.num_players - 1)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """Deal until the learner is to move; ``options`` are passed to the AEC env's ``reset``
        (``deck``, ``dealer``) plus ``seat`` to fix the learner's seat for this episode."""
        super().reset(seed=seed)
        if seed is not None:
            self._seat_rng = np.random.default_rng([seed, 1])
        options = dict(options or {})
        seat = options.pop("seat", self.seat_choice)
        self._check_seat(seat)
        if seat == "random":
            seat = int(self._seat_rng.integers(self.num_players))
        self.learner = self.aec.possible_agents[seat]
        for i, opponent in enumerate({id(o): o for o in self.opponents}.values()):
            if hasattr(opponent, "reset"):
                opponent.reset(seed=None if seed is None else seed + 1 + i)
        self.aec.reset(seed=seed, options=options)
        # With episode="game" an opponent may end a deal before the learner moves: that deal's
        # reward is the learner's too, and comes with its first step.
        self._pending_reward = self._play_opponents()
        while self._done():  # an opponent ended the one-deal episode before the learner moved
            self.aec.reset(options={k: v for k, v in options.items() if k != "deck"})
            self._pending_reward = self._play_opponents()
        return self._observation(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Play the learner's ``action`` and then the opponents until the learner is to move again
        or the episode ends. Returns (observation, reward, terminated, truncated, info)."""
        aec = self.aec
        if not aec.legal_mask()[action]:
            info = {"illegal_action": True}
            return self._observation(), ILLEGAL_REWARD, True, False, info
        aec.step(int(action))
        reward = self._pending_reward + aec.rewards[self.learner] + self._play_opponents()
        self._pending_reward = 0.0
        learner = self.learner
        terminated, truncated = aec.terminations[learner], aec.truncations[learner]
        info = dict(aec.infos[learner]) if (terminated or truncated or aec.infos[learner]) else {}
        return self._observation(), float(reward), bool(terminated), bool(truncated), info

    def action_masks(self) -> np.ndarray:
        """Legal actions of the learner: bool array of shape (898,) (all False once done)."""
        if self._done():
            return np.zeros(NUM_ACTIONS, dtype=bool)
        return self.aec.legal_mask().astype(bool)

    def render(self) -> str | None:
        return self.aec.render()

    def _done(self) -> bool:
        return self.aec.terminations[self.learner] or self.aec.truncations[self.learner]

    def _observation(self) -> np.ndarray:
        return O.encode(self.aec.game, self.aec.possible_agents.index(self.learner))

    def _play_opponents(self) -> float:
        """Let the opponents move until the learner is to move or the episode is over; return the
        learner's rewards collected meanwhile."""
        aec = self.aec
        reward = 0.0
        learner_seat = aec.possible_agents.index(self.learner)
        while not self._done() and aec.agent_selection != self.learner:
            agent = aec.agent_selection
            seat = aec.possible_agents.index(agent)
            opponent = self.opponents[(seat - learner_seat) % self.num_players - 1]
            act = opponent.act if hasattr(opponent, "act") else opponent
            aec.step(int(act(aec.observe(agent))))
            reward += aec.rewards[self.learner]
        return reward
