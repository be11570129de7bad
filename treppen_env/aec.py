"""Treppenrommé as a PettingZoo AEC environment.

==================  =========================================================================
Import              ``from treppen_env import env`` (or ``raw_env``)
Actions             Discrete, masked
Parallel API        No
Manual Control      ``treppen play`` (HumanAgent)
Agents              ``agents= ['player_0', ..., 'player_{n-1}']``, n = 2..4
Action Shape        Discrete(898)
Action Values       Discrete(898)
Observation Shape   dict: ``observation`` (OBS_SIZE,) float32, ``action_mask`` (898,) int8
Observation Values  ``observation`` in [-10, 10], ``action_mask`` in {0, 1}
==================  =========================================================================

Observation space: see :mod:`treppen_env.observation` (seats relative to the observer, only what
that player may know). Legal actions mask: ``action_mask`` is exact (RULES §4, docs/ARCHITECTURE.md "Actions");
it is all zeros for an agent that is not to move. Action space: see :mod:`treppen_env.actions`.

Rewards: at the end of a deal, ``(points_i - mean of the others' points) / 100`` (zero-sum), or
with ``reward="points"`` own deal points / 100. ``infos[agent]`` then holds ``deal_points``,
``outcome`` (``went_out``, ``romme``, ``stock_exhausted``, ``max_turns``), ``went_out`` and,
with ``episode="game"``, ``totals``. A deal cut off at ``max_turns`` is a truncation (RULES §6.5),
and so is a game cut off at the rules option ``max_deals`` (default 200, ``episode="game"``).

Bad input: an action outside ``Discrete(898)`` (``898``, ``-1``, ``1.5``, ``True``, ``None`` for a
live agent; NumPy integers are actions) raises ``ValueError`` naming it and the space, in
:class:`raw_env`, ``env()`` and :class:`treppen_env.SingleAgentEnv`. Once every agent is done
(``agents`` empty), ``step`` warns as PettingZoo's ``OrderEnforcingWrapper`` does and ``last``
raises ``RuntimeError``; call ``reset()``.

Version History (:data:`treppen_env.ENV_VERSION`, the env's ``metadata["name"]``; game records, run
folders and model cards store it): v0 (initial release). Later changes keep the name, since legal play and its
rewards are unchanged: out-of-space actions (``True``, ``-1``) raise ``ValueError`` in every layer;
``env()``'s ``agent_iter()`` loop runs to its end after an illegal move; games stop at
``max_deals``; ``SingleAgentEnv`` keeps deals that end before the learner's first move.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers import OrderEnforcingWrapper
from pettingzoo.utils.wrappers.order_enforcing import AECOrderEnforcingIterable, AECOrderEnforcingIterator

from treppen_env import observation
from treppen_env.actions import NUM_ACTIONS, action_to_str, check_action
from treppen_env.engine import GameState, IllegalActionError
from treppen_env.messages import whole_number
from treppen_env.render import render_text
from treppen_env.rules import Rules, make_rules
from treppen_env.version import ENV_VERSION

EPISODES = ("deal", "game")
REWARDS = ("zero_sum", "points")
ILLEGAL_REWARD = -1.0


class raw_env(AECEnv, EzPickle):
    """The bare AEC environment; an illegal action raises ``ValueError``.

    :param num_players: 2 to 4 (RULES §1.2).
    :param rules: preset name, ``"treppenromme"`` or ``"rum500"``, or a :class:`~treppen_env.rules.Rules`
        object (RULES §8).
    :param render_mode: ``None``, ``"ansi"`` (``render()`` returns text) or ``"human"`` (prints).
    :param episode: ``"deal"`` (one deal per episode) or ``"game"`` (deals until the target, §7).
    :param reward: ``"zero_sum"`` (default) or ``"points"`` (own deal points / 100).
    :param options: rules options overriding the preset (see :class:`treppen_env.rules.Rules`).
    :raises ValueError: for a bad player count, preset, option, render mode, episode or reward.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "name": ENV_VERSION, "is_parallelizable": False}

    def __init__(
        self,
        num_players: int = 2,
        rules: str | Rules = "treppenromme",
        render_mode: str | None = None,
        episode: str = "deal",
        reward: str = "zero_sum",
        **options: Any,
    ):
        EzPickle.__init__(self, num_players, rules, render_mode, episode, reward, **options)
        super().__init__()
        self.rules = make_rules(rules, **options)
        self.rules.check_players(num_players)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode={render_mode!r}; choose None or one of {self.metadata['render_modes']}")
        if episode not in EPISODES:
            raise ValueError(f"episode={episode!r}; choose one of {list(EPISODES)}")
        if reward not in REWARDS:
            raise ValueError(f"reward={reward!r}; choose one of {list(REWARDS)}")
        self.num_players = num_players
        self.render_mode = render_mode
        self.episode = episode
        self.reward_mode = reward
        self.possible_agents = [f"player_{i}" for i in range(num_players)]
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(
                    observation.OBS_LOW, observation.OBS_HIGH, (observation.OBS_SIZE,), np.float32
                ),
                "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
            }
        )
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces: dict[str, spaces.Space] = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        self._rng = np.random.default_rng()
        self.state_: GameState | None = None
        self._encoder = observation.Encoder()

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    @property
    def game(self) -> GameState:
        """The engine state (for tests, tournaments and rendering; agents must use observations).

        :raises RuntimeError: before ``reset()``.
        """
        if self.state_ is None:
            raise RuntimeError("call reset() before using the environment")
        return self.state_

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Deal a new episode.

        :param seed: seeds the environment's generator (deals and reshuffles).
        :param options: ``"deck"`` (52 card strings or indices, top first) and ``"dealer"`` (a
            seat, default 0) replay one deal exactly; other keys are ignored.
            With ``episode="game"`` the deck is the first deal's; later deals are shuffled.
        :raises ValueError: for a malformed deck (one string, not 52 distinct cards, an unknown
            card), naming what is wrong, a dealer that is not a seat, or a seed that is not a whole
            number of at least 0.
        """
        if seed is not None:
            self._rng = np.random.default_rng(whole_number(seed, "seed"))
        options = options or {}
        deck = options.get("deck")
        if isinstance(deck, str):
            raise ValueError(
                f"deck {deck[:20]!r}... is one string; give a sequence of 52 cards, top first, "
                "as card strings or indices (e.g. deck.split())"
            )
        state = GameState(self.rules, self.num_players, self._rng)
        state.deal(options.get("dealer", 0), deck)
        self.state_ = state
        self._encoder = observation.Encoder()
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.agents[state.current]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``{"observation": float32 (OBS_SIZE,), "action_mask": int8 (898,)}`` of ``agent``."""
        state = self.game
        seat = self._seat[agent]
        if seat == state.current and not state.deal_over:
            mask = state.legal_mask().copy()
        else:
            mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        return {"observation": self._encoder.encode(state, seat), "action_mask": mask}

    def legal_mask(self) -> np.ndarray:
        """Read-only view of the mask of the agent to move (int8, (898,)); do not modify."""
        return self.game.legal_mask()

    def step(self, action: int | None) -> None:
        """Play ``action`` (an int 0..897, or a NumPy integer) for ``agent_selection``.

        A terminated or truncated agent steps with ``None``, which removes it from ``agents``
        (PettingZoo's dead step). Once ``agents`` is empty, ``step`` only warns, as PettingZoo's
        ``OrderEnforcingWrapper`` does ("step() called after all agents are terminated or
        truncated. Should reset() first.").

        :raises ValueError: for an action outside ``Discrete(898)`` (naming it and the space), or
            an illegal one (with the action as text and the rule it breaks, RULES §4); the state
            is then unchanged. A dead agent's action other than ``None`` raises PettingZoo's
            ``ValueError``.
        :raises RuntimeError: before ``reset()``.
        """
        state = self.game
        if not self.agents:
            EnvLogger.warn_step_after_terminated_truncated()
            return
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if type(action) is not int or not 0 <= action < NUM_ACTIONS:
            action = _check_action(agent, action)
        try:
            state.apply(action)
        except IllegalActionError as err:
            raise IllegalActionError(f"{agent}: {err}") from None
        self._cumulative_rewards[agent] = 0.0
        # Like its rewards, an agent sees a deal's infos once, at its next last() (episode="game").
        self.infos[agent] = {}
        if state.deal_over:
            self._finish_deal(state)
        else:
            self.rewards = dict.fromkeys(self.agents, 0.0)
        self.agent_selection = self.agents[state.current]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def last(self, observe: bool = True) -> tuple[dict[str, np.ndarray] | None, float, bool, bool, dict]:
        """``(observation, cumulative reward, terminated, truncated, info)`` of ``agent_selection``.

        :raises RuntimeError: before ``reset()``, and once every agent is done (``agents`` is
            empty: the episode is over and each agent has had its final ``last()``).
        """
        _ = self.game  # before reset(): RuntimeError
        if not self.agents:
            raise RuntimeError("last(): every agent is done (agents is empty); call reset() to start a new episode")
        return super().last(observe)

    def _finish_deal(self, state: GameState) -> None:
        """Rewards and infos at the end of a deal; start the next one in a game (RULES §6-7).

        The episode ends with the deal (``episode="deal"``: a truncation at ``max_turns``, RULES
        §6.5) or with the game (``"game"``: at the target, §7.1; a truncation at ``max_deals``).
        """
        points = state.deal_points
        assert points is not None  # the deal is over
        rewards = deal_rewards(points, self.reward_mode)
        self.rewards = {a: rewards[i] for i, a in enumerate(self.agents)}
        info: dict[str, Any] = {
            "deal_points": {a: points[i] for i, a in enumerate(self.agents)},
            "outcome": state.outcome,
            "went_out": None if state.went_out is None else self.agents[state.went_out],
        }
        if self.episode == "game":
            info["totals"] = {a: state.totals[i] for i, a in enumerate(self.agents)}
            over = state.game_over()
            if not over and state.deals_played < self.rules.max_deals:
                state.next_deal()
                self.infos = {a: dict(info) for a in self.agents}
                return
            cut = not over  # cut off at max_deals
        else:
            cut = state.outcome == "max_turns"
        self.infos = {a: dict(info) for a in self.agents}
        self.terminations = dict.fromkeys(self.agents, not cut)
        self.truncations = dict.fromkeys(self.agents, cut)

    def render(self) -> str | None:
        """``"ansi"``: the table as text, with the hand of the agent to move; ``"human"`` prints it.

        :raises ValueError: when the env was made without a render mode.
        """
        if self.render_mode is None:
            raise ValueError(f"render_mode is None; make the env with one of {self.metadata['render_modes']}")
        state = self.game
        text = render_text(state, observer=state.current)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass

    def __deepcopy__(self, memo: dict) -> raw_env:
        """A full copy, the deal in progress included. (EzPickle's ``__getstate__``, which pickling
        and ``copy`` use, keeps only the constructor arguments: the copy would not be reset.)"""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def __str__(self) -> str:
        return self.metadata["name"]


def deal_rewards(points: Sequence[int], reward: str = "zero_sum") -> list[float]:
    """Each seat's reward for a deal that ended with ``points`` (one per seat, RULES §6.2-6.4).

    :param reward: ``"zero_sum"``: ``(points_i - mean of the others' points) / 100``, which sum to
        zero at any number of seats; ``"points"``: ``points_i / 100``.
    :return: one float per seat.
    """
    if reward == "points":
        return [p / 100.0 for p in points]
    total, others = sum(points), len(points) - 1
    return [(p - (total - p) / others) / 100.0 for p in points]


def _check_action(agent: str, action: object) -> int:
    """:func:`treppen_env.actions.check_action` with the agent named in the error (slow path)."""
    try:
        return check_action(action)
    except ValueError as err:
        raise ValueError(f"{agent}: {err}") from None


def _forwarded(name: str) -> property:
    """A read-only attribute of the wrapped ``raw_env``; ``AttributeError`` before ``reset()``."""

    def get(self: ClassicWrapper) -> Any:
        if not self._has_reset:
            raise AttributeError(f"{name} cannot be accessed before reset")
        return getattr(self.env, name)

    return property(get)


class ClassicWrapper(OrderEnforcingWrapper):
    """PettingZoo's classic wrapper chain in one thin layer (docs/ARCHITECTURE.md "Performance notes").

    Acts as ``OrderEnforcingWrapper(TerminateIllegalWrapper(AssertOutOfBoundsWrapper(env), -1))``:
    an action outside ``Discrete(898)`` (``898``, ``-1``, ``1.5``, ``True``, ``None`` for a live
    agent) raises ``ValueError`` naming it and the space; an illegal action warns ("Illegal move
    made, game terminating with current player losing."), ends the episode for every agent and
    gives the offender ``-1`` (the others 0), with ``info["illegal_action"]`` its text. The
    ``agent_iter()`` loop then runs on: each agent gets its final ``last()`` and steps ``None``
    until ``agents`` is empty. A step once ``agents`` is empty only warns; so does PettingZoo.
    """

    env: raw_env
    # The attributes agent_iter() and last() read at every step, forwarded without the two
    # __getattr__ levels of PettingZoo's wrappers (and, as there, an AttributeError before reset()).
    agents = _forwarded("agents")
    agent_selection = _forwarded("agent_selection")
    rewards = _forwarded("rewards")
    terminations = _forwarded("terminations")
    truncations = _forwarded("truncations")
    infos = _forwarded("infos")

    def step(self, action: int | None) -> None:
        """As ``OrderEnforcingWrapper.step`` with the checks above, calling ``raw_env.step`` directly."""
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        raw = self.env
        self._has_updated = True  # agent_iter() goes on, after an illegal move too
        if not raw.agents:
            EnvLogger.warn_step_after_terminated_truncated()
            return
        try:
            raw.step(action)  # checks the action; the state is unchanged when it is illegal
        except IllegalActionError:
            self._terminate_illegal(raw, check_action(action))

    def agent_iter(self, max_iter: int = 2**63) -> _AgentIterable:
        """PettingZoo's order-enforcing ``agent_iter`` reading the raw env directly."""
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _AgentIterable(self, max_iter)

    def last(self, observe: bool = True) -> tuple:
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self.env.last(observe)

    @staticmethod
    def _terminate_illegal(raw: raw_env, action: int) -> None:
        EnvLogger.warn_on_illegal_move()
        offender = raw.agent_selection
        raw._cumulative_rewards[offender] = 0.0
        raw.terminations = dict.fromkeys(raw.agents, True)
        raw.truncations = dict.fromkeys(raw.agents, True)
        raw.rewards = dict.fromkeys(raw.agents, 0.0)
        raw.rewards[offender] = ILLEGAL_REWARD
        raw.infos[offender] = {**raw.infos[offender], "illegal_action": action_to_str(int(action))}
        raw._accumulate_rewards()
        raw._deads_step_first()


class _AgentIterable(AECOrderEnforcingIterable):
    def __iter__(self) -> _AgentIterator:
        return _AgentIterator(self.env, self.max_iter)


class _AgentIterator(AECOrderEnforcingIterator):
    """As PettingZoo's ``AECOrderEnforcingIterator`` (stop when no agent is left or after
    ``max_iter``; assert a ``step()`` between two agents), one attribute lookup per item."""

    def __next__(self) -> str:
        wrapper = self.env
        raw = wrapper.env
        if not raw.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        assert wrapper._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        wrapper._has_updated = False
        return raw.agent_selection


def env(**kwargs: Any) -> ClassicWrapper:
    """The environment wrapped as PettingZoo's classic games are (see :class:`raw_env` for the
    arguments and :class:`ClassicWrapper` for illegal moves)."""
    return ClassicWrapper(raw_env(**kwargs))
