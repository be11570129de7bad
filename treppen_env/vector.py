"""A batched environment: many deals stepped by one kernel call, for trainers that want speed.

``treppen_env.vector_env(num_envs, ...)`` returns a :class:`TreppenVectorEnv`, a Gymnasium
``VectorEnv`` over ``num_envs`` deals held as rows of the simulation core's arrays
(:mod:`treppen_env.agent_core.seat_kernels` steps them):

- ``opponents="greedy"``, ``"random"`` (or one of those per other seat): one learning seat per row
  (``seat``, default 0); the other seats are played inside the kernel, so every row of a step is
  the learner's decision;
- ``opponents=None`` (self-play): every row is the seat to move, named by
  ``infos["current_player"]``; at a deal's end ``infos["rewards"]`` holds every seat's reward, as
  Pgx reports ``current_player`` and ``rewards``.

Observations are float32 (N, 969) and legal masks int8 (N, 898), in ``infos["action_mask"]`` and
through :meth:`TreppenVectorEnv.action_masks` (for sb3-contrib's MaskablePPO); rewards float32
(N,), terminations and truncations bool (N,). They are written into buffers allocated once, which
the env returns as they are (the caller may keep them until the next step); ``copy=True`` returns
copies.

Seeds: ``reset(seed=s)`` gives row ``i`` the deal of ``env().reset(seed=s + i)`` (dealer 0), each
row dealing its later deals and reshuffles from its own generator, as that env would, so every row
can be checked against the AEC env. Auto-reset follows Gymnasium 1.x's default,
``AutoresetMode.NEXT_STEP``: the step that ends a deal returns its final observation, reward,
``terminated`` (or ``truncated`` at ``max_turns``, RULES §6.5) and the deal's infos
(``deal_points`` (N, players), ``outcome``, ``went_out``, ``rewards``, each with its ``_key``
mask); the row's next step ignores its action and returns the first observation of a new deal.
``autoreset_mode="same_step"`` instead deals at once and returns the new deal's first observation,
the final one in ``infos["final_obs"]`` (the SB3 adapter :mod:`treppen_env.sb3_vec` uses it).

An illegal action raises ``ValueError`` naming the rows, the actions and their text before any row
is stepped, so no row is corrupted (a ``VectorEnv`` has no seat to penalise, unlike ``env()``).
The rules engine is :mod:`treppen_env.engine`'s; only ``episode="deal"`` episodes are batched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from treppen_env import observation
from treppen_env.actions import NUM_ACTIONS, action_to_str
from treppen_env.agent_core import greedy_kernels, playout_kernels, seat_kernels
from treppen_env.cards import NUM_CARDS
from treppen_env.core import kernels, layout, vector_kernels
from treppen_env.core.generator import MASK_WORDS
from treppen_env.core.tables import rules_table
from treppen_env.engine import OUTCOMES
from treppen_env.melds import MELD_BITS
from treppen_env.messages import shorten, whole_number
from treppen_env.rules import Rules, make_rules

#: Opponent kinds a row can seat inside the kernel.
OPPONENTS = {"greedy": seat_kernels.GREEDY, "random": seat_kernels.RANDOM}
REWARDS = {"zero_sum": vector_kernels.ZERO_SUM, "points": vector_kernels.POINTS}
AUTORESET = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP}


class TreppenVectorEnv(VectorEnv):
    """``num_envs`` deals stepped at once (see the module docstring).

    :param num_envs: rows (deals), at least 1.
    :param num_players: 2 to 4 (RULES §1.2).
    :param rules: a preset name or a :class:`~treppen_env.rules.Rules` (RULES §8).
    :param opponents: ``None`` (self-play), ``"greedy"``, ``"random"``, or a list with one of those
        per other seat (in seat order, the learner's left first).
    :param seat: the learner's seat with opponents (0 deals the first deal).
    :param reward: ``"zero_sum"`` or ``"points"`` (docs/ARCHITECTURE.md "Rewards").
    :param copy: return copies of the observation and mask buffers.
    :param autoreset_mode: ``"next_step"`` (Gymnasium's default) or ``"same_step"``.
    :param options: rules options overriding the preset.
    :raises ValueError: for a bad row count, player count, opponent, seat, reward or mode, or an
        unknown rules option.
    """

    def __init__(
        self,
        num_envs: int,
        num_players: int = 2,
        rules: str | Rules = "treppenromme",
        opponents: str | Sequence[str] | None = None,
        seat: int = 0,
        reward: str = "zero_sum",
        copy: bool = False,
        autoreset_mode: str = "next_step",
        **options: Any,
    ):
        num_envs = whole_number(num_envs, "num_envs", 1)
        self.rules = make_rules(rules, **options)
        self.rules.check_players(num_players)
        if reward not in REWARDS:
            raise ValueError(f"reward={reward!r}; choose one of {list(REWARDS)}")
        if autoreset_mode not in AUTORESET:
            raise ValueError(f"autoreset_mode={autoreset_mode!r}; choose one of {list(AUTORESET)}")
        self.num_envs, self.num_players, self.copy = num_envs, num_players, copy
        self.metadata = {"autoreset_mode": AUTORESET[autoreset_mode]}
        self._reward = REWARDS[reward]
        #: Each row's seat kinds (int64 (N, 4): ``EXTERNAL``, ``GREEDY`` or ``RANDOM`` of
        #: :mod:`treppen_env.agent_core.seat_kernels`) and the seat whose final observation a row shows.
        self.kinds, self.seat = self._seat_kinds(opponents, seat)
        self.single_observation_space = gym.spaces.Box(
            observation.OBS_LOW, observation.OBS_HIGH, (observation.OBS_SIZE,), np.float32
        )
        self.single_action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        n = num_envs
        self._u64 = np.zeros((n, layout.U64_SIZE), dtype=np.uint64)
        self._i8 = np.zeros((n, layout.I8_SIZE), dtype=np.int8)
        self._i64 = np.zeros((n, layout.I64_SIZE), dtype=np.int64)
        for i in range(n):
            self._reset_row(i)
        self._tab = rules_table(self.rules)
        self._settings = greedy_kernels.settings_row()
        self._obs = np.zeros((n, observation.OBS_SIZE), dtype=np.float32)
        self._padded = np.zeros((n, 8 * MASK_WORDS), dtype=np.int8)  # rows of whole uint64 words
        self._masks = self._padded[:, :NUM_ACTIONS]
        self.to_move = np.full(n, -1, dtype=np.int64)
        self._actor = np.full(n, -1, dtype=np.int64)
        self.over = np.zeros(n, dtype=np.int8)
        self._pending = np.zeros(n, dtype=np.int8)
        self.seat_rewards = np.zeros((n, layout.MAX_SEATS), dtype=np.float32)
        self.observer = np.full(n, -1 if self.seat is None else self.seat, dtype=np.int64)
        self._kernel_rngs = np.zeros(n, dtype=np.uint64)
        self._rngs = [np.random.default_rng() for _ in range(n)]
        self._autoreset = np.zeros(n, dtype=bool)
        self._work = playout_kernels.scratch()
        self._all = np.arange(n, dtype=np.int64)
        self._dealt = False  # step() needs a reset() first
        #: The step kernel's bundles of what it writes how, and where (the arrays above, in place).
        self._report = seat_kernels.Report(
            offsets=observation.KERNEL_OFFSETS, consts=observation.KERNEL_CONSTS, reward=self._reward
        )
        self._written = seat_kernels.Written(
            obs=self._obs,
            masks=self._padded,
            to_move=self.to_move,
            actor=self._actor,
            over=self.over,
            pending=self._pending,
            rewards=self.seat_rewards,
        )

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Deal every row afresh; with ``seed``, row ``i``'s generator is seeded with ``seed + i``.

        :return: the observations (N, 969) and the infos (``action_mask``, and in self-play
            ``current_player``).
        :raises ValueError: for a seed that is not a whole number of at least 0, or any ``options``
            (the batched env takes none).
        """
        if options:
            raise ValueError(
                f"reset options {sorted(options)}: the batched env takes none (each row deals from its own "
                "generator, seeded by seed + row); to play a given deck, use env().reset(options={'deck': ...})"
            )
        if seed is not None:
            self.seed_rows(seed)
        self.deal_rows(self._all)
        self._autoreset[:] = False
        self._dealt = True
        return self._out(self._obs), self._infos(np.zeros(self.num_envs, dtype=bool))

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Play one action per row (see the module docstring).

        :param actions: int (N,): a legal action of each row's mask (ignored in a row that
            resets this step).
        :return: observations, rewards, terminations, truncations, infos.
        :raises ValueError: for actions of another shape, or an illegal action in any row (no row
            is stepped then).
        :raises gymnasium.error.ResetNeeded: before the first :meth:`reset`.
        """
        if not self._dealt:
            raise gym.error.ResetNeeded("step() before reset(): call reset() first to deal the rows")
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs,) or not np.issubdtype(acts.dtype, np.integer):
            raise ValueError(f"actions must be integers of shape ({self.num_envs},); got {acts.dtype} {acts.shape}")
        acts = acts.astype(np.int64)
        resetting = self._autoreset
        bad = vector_kernels.illegal_rows(self._masks, acts, resetting)
        if bad.size:
            shown = ", ".join(f"row {i}: {_text(acts[i])}" for i in bad[:5])
            raise ValueError(f"illegal actions in {bad.size} rows ({shown}); no row was stepped")
        live = ~resetting
        acts[resetting] = -1
        self.play_rows(self._all if not resetting.any() else np.flatnonzero(live), acts)
        if resetting.any():
            self.deal_rows(np.flatnonzero(resetting))
        done = live & (self.over != 0)
        rewards = self._learner_rewards(done)
        truncations = done & self.truncated
        terminations = done & ~truncations
        infos = self._infos(done)
        if self.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP and done.any():
            infos["final_obs"] = self._obs.copy()
            infos["_final_obs"] = done
            self.deal_rows(np.flatnonzero(done).astype(np.int64))  # the new deals' masks and players to move
            infos["action_mask"] = self._out(self._masks)
            if self.seat is None:
                infos["current_player"] = self.to_move.copy()
        else:
            self._autoreset = done
        return self._out(self._obs), rewards, terminations, truncations, infos

    def seed_rows(self, seed: int) -> None:
        """Seed row ``i``'s generator with ``seed + i`` (its deals and reshuffles, as
        ``env().reset(seed=seed + i)``) and the kernel's random seats.

        :raises ValueError: for a seed that is not a whole number of at least 0.
        """
        seed = whole_number(seed, "seed")
        self._rngs = [np.random.default_rng(seed + i) for i in range(self.num_envs)]
        self._kernel_rngs[:] = np.random.SeedSequence(seed).generate_state(self.num_envs, np.uint64)

    def action_masks(self) -> np.ndarray:
        """The legal masks of the rows' seats to move, bool (N, 898) (sb3-contrib's MaskablePPO)."""
        return self._masks.view(np.bool_)

    @property
    def observations(self) -> np.ndarray:
        """Every row's observation, float32 (N, 969): its seat to move's (once the deal is over,
        its :attr:`observer`'s); the env's buffer, rewritten by every step (a view, not a copy)."""
        return self._obs

    @property
    def masks(self) -> np.ndarray:
        """Every row's legal mask of its seat to move, int8 (N, 898); the env's buffer, as
        ``infos["action_mask"]`` holds it (a view, not a copy)."""
        return self._masks

    @property
    def truncated(self) -> np.ndarray:
        """Whether each row's deal ended at ``max_turns`` (RULES §6.5), bool (N,)."""
        return self._i64[:, layout.OUTCOME] == layout.MAX_TURNS_OUTCOME

    @property
    def deal_points(self) -> np.ndarray:
        """Every row's deal points (int64 (N, players), RULES §7; final once :attr:`over`), a view."""
        return self._i64[:, layout.DEAL_POINTS : layout.DEAL_POINTS + self.num_players]

    def sample_actions(self) -> np.ndarray:
        """A uniformly random legal action of every row (int64 (N,); 0 in a row whose deal is over),
        drawn inside a kernel by the rows' own generators: what ``action_space.sample(mask)`` gives,
        without a Python loop over the rows."""
        return vector_kernels.sample_legal(self._padded, self._kernel_rngs)

    def close(self, **kwargs: Any) -> None:
        """Nothing to release: the deals are arrays of this process."""

    def __getstate__(self) -> dict[str, Any]:
        """The env pickles whole (its deals, generators and seats), without the mask view and the
        scratch, which :meth:`__setstate__` rebuilds (a pickled view would be a copy)."""
        state = self.__dict__.copy()
        del state["_masks"], state["_work"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._masks = self._padded[:, :NUM_ACTIONS]
        self._work = playout_kernels.scratch()

    # ------------------------------------------------------------------ rows
    def _seat_kinds(self, opponents: str | Sequence[str] | None, seat: int) -> tuple[np.ndarray, int | None]:
        n = self.num_players
        kinds = np.full((self.num_envs, layout.MAX_SEATS), seat_kernels.EXTERNAL, dtype=np.int64)
        if opponents is None:
            return kinds, None
        if isinstance(seat, (bool, np.bool_)) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < n:
            raise ValueError(f"seat={shorten(seat)} is not a seat 0..{n - 1}")
        seat = int(seat)
        names = [opponents] * (n - 1) if isinstance(opponents, str) else opponents
        if (
            not isinstance(names, (list, tuple))
            or len(names) != n - 1
            or not all(isinstance(o, str) and o in OPPONENTS for o in names)
        ):
            raise ValueError(
                f"opponents={shorten(opponents)}: give None, one of {sorted(OPPONENTS)}, or a list of one per other "
                f"seat ({n - 1})"
            )
        for k, name in enumerate(names):
            kinds[:, (seat + 1 + k) % n] = OPPONENTS[name]
        return kinds, seat

    def deal_rows(self, rows: np.ndarray) -> None:
        """New deals in ``rows`` (int64 row indices; dealer 0, each from its row's generator), then
        the kernel seats' moves up to the first external seat (for adapters that seat opponents
        of their own through :attr:`kinds` and :attr:`observer`, e.g. ``treppen.train.common.seated_rows``)."""
        per_hand, first = self.rules.cards_dealt(self.num_players), self.rules.dealer_plays_first
        for i in rows:
            cards = self._rngs[i].permutation(NUM_CARDS).astype(np.int8)
            self._reset_row(i)  # an episode is one deal
            kernels.deal(self._u64[i], self._i8[i], self._i64[i], cards, 0, per_hand, first)
        self._actor[rows] = -1
        self.play_rows(rows, np.full(self.num_envs, -1, dtype=np.int64))

    def play_rows(self, rows: np.ndarray, actions: np.ndarray) -> None:
        """Step ``rows`` (int64) with ``actions`` (int64 (N,), legal, -1 for none;
        :func:`treppen_env.agent_core.seat_kernels.step_rows`), reshuffles (RULES §6.4) dealt by the rows'
        generators. Afterwards :attr:`to_move`, :attr:`over`, :attr:`seat_rewards` and the buffers
        describe each row."""
        while rows.size:
            seats = seat_kernels.Seats(
                actions=actions,
                kinds=self.kinds,
                observer=self.observer,
                rngs=self._kernel_rngs,
                settings=self._settings,
            )
            seat_kernels.step_rows(
                layout.Position(u64=self._u64, i8=self._i8, i64=self._i64),
                layout.Tables(tab=self._tab, meld_bits=MELD_BITS),
                rows,
                seats,
                self._report,
                self._written,
                self._work,
            )
            rows = rows[self._pending[rows] != 0]
            for i in rows:
                self._reshuffle(int(i))
            actions = np.full(self.num_envs, -1, dtype=np.int64)

    def _reset_row(self, i: int) -> None:
        """Row ``i``'s arrays as a state before its first deal (:func:`treppen_env.core.layout.new_arrays`)."""
        fresh = layout.new_arrays(self.num_players)
        self._u64[i], self._i8[i], self._i64[i] = fresh.u64, fresh.i8, fresh.i64

    def _reshuffle(self, i: int) -> None:
        u64, i8, i64 = self._u64[i], self._i8[i], self._i64[i]
        rest = i8[layout.STAIRS : layout.STAIRS + i64[layout.STAIRS_LEN] - 1]
        stock = self._rngs[i].permutation(rest).astype(np.int8)
        kernels.reshuffle(u64, i8, i64, self._tab, MELD_BITS, self._masks[i], stock)

    def _learner_rewards(self, done: np.ndarray) -> np.ndarray:
        """Each row's reward: the learner's (with opponents) or the acting seat's, at a deal's end."""
        seats = self.observer if self.seat is not None else self._actor
        return np.where(done, self.seat_rewards[self._all, seats], np.float32(0.0))

    def _infos(self, done: np.ndarray) -> dict[str, Any]:
        infos: dict[str, Any] = {"action_mask": self._out(self._masks)}
        if self.seat is None:
            infos["current_player"] = self.to_move.copy()
        if done.any():
            n = self.num_players
            points = self.deal_points.copy()
            codes = self._i64[:, layout.OUTCOME]
            outcome = np.array([OUTCOMES[o - 1] if d else None for o, d in zip(codes, done, strict=True)])
            went_out = np.where(done, self._i64[:, layout.WENT_OUT], -1)
            rewards = self.seat_rewards[:, :n].copy()
            for key, value in (
                ("deal_points", points),
                ("outcome", outcome),
                ("went_out", went_out),
                ("rewards", rewards),
            ):
                infos[key] = value
                infos[f"_{key}"] = done.copy()
        return infos

    def _out(self, buffer: np.ndarray) -> np.ndarray:
        return buffer.copy() if self.copy else buffer


def _text(action: int) -> str:
    try:
        return f"{action_to_str(int(action))} ({action})"
    except ValueError:
        return f"{action} (not an action 0..{NUM_ACTIONS - 1})"


def vector_env(
    num_envs: int,
    num_players: int = 2,
    rules: str | Rules = "treppenromme",
    opponents: str | Sequence[str] | None = None,
    **kwargs: Any,
) -> TreppenVectorEnv:
    """``num_envs`` deals stepped by one kernel call: a Gymnasium ``VectorEnv`` (see
    :class:`TreppenVectorEnv` for the keywords: ``seat``, ``reward``, ``copy``,
    ``autoreset_mode`` and rules options)."""
    return TreppenVectorEnv(num_envs, num_players, rules, opponents, **kwargs)
