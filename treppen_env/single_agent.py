"""Single-agent Gymnasium view of the AEC env for Stable-Baselines3 (docs/ARCHITECTURE.md "Single-agent view").

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

from treppen_env import observation
from treppen_env.actions import DRAW, NUM_ACTIONS, check_action
from treppen_env.aec import raw_env
from treppen_env.messages import shorten
from treppen_env.registration import register_envs
from treppen_env.rules import Rules

Opponent = Callable[[dict[str, np.ndarray]], int]
ILLEGAL_REWARD = -1.0
#: The one legal action after a reset whose episode ended before the learner's first move.
ACKNOWLEDGE = DRAW
# Where the env is: before the first reset, the learner to move, acknowledging an episode that
# ended before its first move, episode over.
NEW, PLAYING, ACKNOWLEDGING, OVER = range(4)


class SingleAgentEnv(gym.Env):
    """One learning seat against opponents that act inside ``step``.

    Observation: float32 array of shape (OBS_SIZE,) in [-10, 10]; action: ``Discrete(898)``.
    Reward: the learner's env reward (zero-sum deal points / 100 by default), summed over the
    opponents' moves in between; a deal that ends before the learner's first move still reaches
    it (see :meth:`reset`). Actions, as in ``env()``: one outside ``Discrete(898)`` raises
    ``ValueError``; one of the space that the mask forbids (Gymnasium's and SB3's checkers step
    random actions) ends the episode with reward -1 and ``info["illegal_action"] = True``
    (PettingZoo's classic convention); training must see none. ``step`` and ``action_masks``
    before ``reset``, and ``step`` after the episode ended, raise ``RuntimeError``.

    :param opponents: an agent (anything with ``act(obs) -> int`` and optionally
        ``reset(seed=None)``, called at every episode start and reseeded when ``reset`` gets a
        seed) or a callable ``obs -> int``, for every other seat; or a sequence of
        ``num_players - 1`` of them, in seat order after the learner. Agent specs (``"greedy"``)
        are the agents layer's to load: ``gymnasium.make`` takes them
        (:func:`treppen.agents.opponents.make_single_agent`), or ``treppen.agents.load(spec)``.
    :param num_players: 2 to 4.
    :param rules: rules preset or :class:`~treppen_env.rules.Rules` object (RULES §8).
    :param seat: the learner's seat, or ``"random"`` to draw it each episode from the env's generator.
    :param env_kwargs: further arguments of :class:`treppen_env.raw_env` (``episode``, ``reward``,
        rules options).
    :raises ValueError: for a bad seat, an opponent that is neither an agent nor a callable, a
        wrong number of opponents or bad env arguments.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}  # text frames; Gymnasium's checker asks for fps

    def __init__(
        self,
        opponents: Opponent | Sequence[Opponent],
        num_players: int = 2,
        rules: str | Rules = "treppenromme",
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
        self.observation_space = gym.spaces.Box(
            observation.OBS_LOW, observation.OBS_HIGH, (observation.OBS_SIZE,), np.float32
        )
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.learner = "player_0"
        self._learner_seat = 0
        self._stage = NEW
        self._pending_reward = 0.0
        self._seat_rng = np.random.default_rng()

    def _check_seat(self, seat: Any) -> None:
        if seat == "random":
            return
        if isinstance(seat, bool) or not hasattr(seat, "__index__") or not 0 <= seat < self.num_players:
            raise ValueError(f"seat={seat!r}; choose 'random' or a seat 0..{self.num_players - 1}")

    def set_opponents(self, opponents: Opponent | Sequence[Opponent]) -> None:
        """Replace the opponents (e.g. from a training callback via ``env_method``).

        :raises ValueError: for an opponent that is neither an agent (with ``act``) nor a callable
            (a spec string names the way to load it), or a sequence that does not hold
            ``num_players - 1`` opponents.
        """
        if isinstance(opponents, str):
            raise ValueError(
                f"opponents={shorten(opponents)} is an agent spec; SingleAgentEnv plays agents: "
                f"gymnasium.make(..., opponents={shorten(opponents)}) loads it, or pass treppen.agents.load(spec)"
            )
        if isinstance(opponents, Sequence):
            if len(opponents) != self.num_players - 1:
                raise ValueError(
                    f"{len(opponents)} opponents given for {self.num_players} players; "
                    f"give one opponent, or a sequence of {self.num_players - 1}"
                )
            seats = list(opponents)
        else:
            seats = [opponents] * (self.num_players - 1)
        for i, opponent in enumerate(seats):
            if not callable(getattr(opponent, "act", None)) and not callable(opponent):
                name = f"opponents[{i}]" if isinstance(opponents, Sequence) else "opponents"
                what = "an agent spec: treppen.agents.load loads it" if isinstance(opponent, str) else "no agent"
                raise ValueError(
                    f"{name}={shorten(opponent)} is {what}; give an agent with act(observation) -> int "
                    "or a callable observation -> int"
                )
        self.opponents = seats

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """Deal, and let the opponents move until the learner is to move.

        If the episode ends before the learner's first move (an opponent goes out, or goes Rommé,
        on its first turn, RULES §6.1-6.2; with ``episode="game"``, in a deal that ends the game),
        that deal still counts: ``reset`` returns the learner's observation at the deal's
        end, ``action_masks()`` holds the one action :data:`ACKNOWLEDGE`, and the step that plays
        it returns the deal's reward, ``terminated`` or ``truncated`` and the deal's ``info``
        (``deal_points``, ``outcome``...), as any episode's last step does. SB3 thus sees a
        one-step episode, and evaluations count the deal; a ``deck`` option always plays its deal.

        :param seed: seeds the deals, the learner's seat draw and the opponents (``seed + 1 + i``).
        :param options: passed to the AEC env's ``reset`` (``deck``, ``dealer``), plus ``seat``
            to fix the learner's seat for this episode.
        :return: the learner's observation (float32, (OBS_SIZE,)) and an info dict: the infos
            (``deal_points``, ``outcome``, ``went_out``, with ``episode="game"`` ``totals``) of
            the last deal that ended before the learner's first move, else empty.
        :raises ValueError: for a bad seat, deck or dealer.
        """
        super().reset(seed=seed)
        if seed is not None:
            self._seat_rng = np.random.default_rng([seed, 1])
        options = dict(options or {})
        seat = options.pop("seat", self.seat_choice)
        self._check_seat(seat)
        if seat == "random":
            seat = int(self._seat_rng.integers(self.num_players))
        self.learner = self.aec.possible_agents[seat]
        self._learner_seat = int(seat)
        for i, opponent in enumerate({id(o): o for o in self.opponents}.values()):
            if hasattr(opponent, "reset"):
                opponent.reset(seed=None if seed is None else seed + 1 + i)
        self.aec.reset(seed=seed, options=options)
        # Rewards of deals that end before the learner moves reach it with its first step.
        self._pending_reward = self._play_opponents()
        self._stage = ACKNOWLEDGING if self._done() else PLAYING
        return self._observation(), dict(self.aec.infos[self.learner])

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Play the learner's ``action`` and then the opponents until the learner is to move again
        or the episode ends.

        :param action: an int (or NumPy integer) 0..897 marked in ``action_masks()``.
        :return: (observation float32 (OBS_SIZE,), reward, terminated, truncated, info). The
            reward is the learner's, summed over the opponents' moves in between; at the end of
            a deal ``info`` holds ``deal_points``, ``outcome`` and ``went_out`` (RULES §6). An
            action of the space that the mask forbids ends the episode with reward -1 and
            ``info["illegal_action"] = True`` (PettingZoo's classic convention).
        :raises ValueError: for an action outside ``Discrete(898)`` (``898``, ``-1``, ``1.5``,
            ``True``, ``None``), naming it and the space, as ``env()`` does.
        :raises RuntimeError: before ``reset()``, and after the episode ended (call ``reset()``).
        """
        if self._stage != PLAYING:
            return self._step_outside_play(action)
        if type(action) is not int or not 0 <= action < NUM_ACTIONS:
            action = check_action(action)
        aec = self.aec
        if not aec.legal_mask()[action]:
            return self._end_illegal()
        aec.step(action)
        reward = self._pending_reward + aec.rewards[self.learner] + self._play_opponents()
        self._pending_reward = 0.0
        return self._result(reward)

    def action_masks(self) -> np.ndarray:
        """Legal actions of the learner: bool array of shape (898,). Only :data:`ACKNOWLEDGE`
        when the episode ended before the learner's first move; all False once it is over.

        :raises RuntimeError: before ``reset()`` (SB3's ``get_action_masks`` on a fresh env).
        """
        if self._stage == PLAYING:
            return self.aec.legal_mask().astype(bool)
        if self._stage == ACKNOWLEDGING:
            mask = np.zeros(NUM_ACTIONS, dtype=bool)
            mask[ACKNOWLEDGE] = True
            return mask
        if self._stage == OVER:
            return np.zeros(NUM_ACTIONS, dtype=bool)
        raise RuntimeError("call reset() before action_masks()")

    def _step_outside_play(self, action: object) -> tuple[np.ndarray, float, bool, bool, dict]:
        """``step`` before reset, after the episode, or acknowledging a deal that ended early."""
        if self._stage == NEW:
            raise RuntimeError("call reset() before step()")
        if self._stage == OVER:
            raise RuntimeError("step() after the episode ended (terminated or truncated); call reset() first")
        if check_action(action) != ACKNOWLEDGE:
            return self._end_illegal()
        reward, self._pending_reward = self._pending_reward, 0.0
        return self._result(reward)

    def _result(self, reward: float) -> tuple[np.ndarray, float, bool, bool, dict]:
        aec, learner = self.aec, self.learner
        terminated, truncated = aec.terminations[learner], aec.truncations[learner]
        info = dict(aec.infos[learner])
        if terminated or truncated:
            self._stage = OVER
        return self._observation(), float(reward), bool(terminated), bool(truncated), info

    def _end_illegal(self) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._stage = OVER
        return self._observation(), ILLEGAL_REWARD, True, False, {"illegal_action": True}

    def render(self) -> str | None:  # type: ignore[override]  # ansi text: gymnasium's RenderFrame is a TypeVar
        return self.aec.render()

    def _done(self) -> bool:
        return self.aec.terminations[self.learner] or self.aec.truncations[self.learner]

    def _observation(self) -> np.ndarray:
        # the env's incremental encoder, without observe()'s copy of the mask (action_masks() has it)
        return self.aec._encoder.encode(self.aec.game, self._learner_seat)

    def _play_opponents(self) -> float:
        """Let the opponents move until the learner is to move or the episode is over; return the
        learner's rewards collected meanwhile."""
        aec = self.aec
        reward = 0.0
        learner_seat = self._learner_seat
        while not self._done() and aec.agent_selection != self.learner:
            agent = aec.agent_selection
            seat = aec.game.current
            opponent = self.opponents[(seat - learner_seat) % self.num_players - 1]
            act = opponent.act if hasattr(opponent, "act") else opponent
            aec.step(act(aec.observe(agent)))
            reward += aec.rewards[self.learner]
        return reward


register_envs()  # Gymnasium is imported by now: gymnasium.make finds this env's ids
