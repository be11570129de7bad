"""``vec_env: kernel``: Stable-Baselines3's ``VecEnv`` over the batched env (:mod:`treppen_env.vector`).

:class:`KernelVecEnv` holds ``n_envs`` deals as rows of one :class:`~treppen_env.vector.TreppenVectorEnv`
and plays them as :class:`~treppen.train.sb3.pool.SelfPlayEnv` does: per episode a random learner seat and
every other seat drawn from the opponent pool (:class:`~treppen.train.sb3.pool.OpponentPool`), through
the one deal loop of rows with seats (:class:`treppen.train.common.seated_rows.SeatedRows`; a deal that an
opponent ends before the learner's first decision is dealt again). Random and greedy opponents
play inside the kernel; snapshots, the best model and agent specs decide in Python between kernel
calls (their rows wait). Each step returns the learner's observation of every row, its
reward, ``done`` and SB3's infos: at an episode's end ``terminal_observation``,
``TimeLimit.truncated`` (``max_turns``, RULES §6.5), ``episode`` (``r``, ``l``: what SB3's ``Monitor``
writes) and ``opponents`` (the kinds that played). ``env_method`` offers ``action_masks`` (for
sb3-contrib's MaskablePPO), ``set_pool`` and ``set_best`` (the callbacks refresh the pool through
them). The masks come from the kernel, so a masked learner's actions are always legal; any other is
a ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from treppen.train.common.seated_rows import SeatedRows
from treppen.train.sb3.pool import OpponentPool, PoolOpponent
from treppen_env.agent_core import seat_kernels
from treppen_env.core import vector_kernels
from treppen_env.rules import Rules, make_rules

#: Pool kinds the kernel plays itself.
KERNEL_KINDS = {"random": seat_kernels.RANDOM, "greedy": seat_kernels.GREEDY}


class PoolRows(SeatedRows):
    """The rows of a :class:`KernelVecEnv`: every other seat a :class:`PoolOpponent` of the shared
    pool, redrawn every deal; random and greedy play inside the kernel, the others in Python.

    :param pool: the shared pool; ``use_greedy``: build greedy agents (the pool can draw greedy).
    """

    def __init__(
        self, n_envs: int, num_players: int, rules: Rules, pool: OpponentPool, use_greedy: bool, seed: int | None
    ):
        super().__init__(n_envs, num_players, rules, seed)
        self.opponents = [
            [PoolOpponent(pool, int(s.generate_state(1)[0]), use_greedy, rules) for s in self.seeds.spawn(num_players)]
            for _ in range(n_envs)
        ]

    def seat(self, i: int, learner: int) -> None:
        """Each other seat draws its opponent from the pool (RULES §1.2)."""
        for s, opponent in enumerate(self.opponents[i]):
            if s != learner:
                opponent.reset()
                self.env.kinds[i, s] = KERNEL_KINDS.get(opponent.kind, seat_kernels.EXTERNAL)

    def external_actions(self, waiting: np.ndarray) -> np.ndarray:
        """The Python opponents' moves, each from its seat's observation."""
        env = self.env
        actions = np.full(len(self.all_rows), -1, dtype=np.int64)
        for i in waiting:
            observation = {"observation": env.observations[i], "action_mask": env.masks[i]}
            actions[i] = self.opponents[i][int(env.to_move[i])].act(observation)
        return actions


class KernelVecEnv(VecEnv):
    """``n_envs`` self-play deals stepped by one kernel call (see the module docstring).

    :param n_envs: rows.
    :param num_players: 2 to 4; ``rules``: a :class:`Rules` or a preset name.
    :param probs: probabilities of the opponent kinds (:class:`OpponentPool`).
    :param deterministic: snapshots play their argmax action.
    :param seed: seeds the deals (row ``i`` deals as ``env().reset(seed=seed + i)`` would) and the
        seats and opponents.
    :param specs: agent specs of the ``"agent"`` kind.
    """

    render_mode = None  # SB3's VecEnv asks its envs for it

    def __init__(
        self,
        n_envs: int,
        num_players: int = 2,
        rules: Rules | str = "treppenromme",
        probs: dict[str, float] | None = None,
        deterministic: bool = False,
        seed: int | None = None,
        specs: Sequence[str] = (),
    ):
        rules = make_rules(rules)
        self.pool = OpponentPool(probs or {"random": 1.0}, deterministic, specs)
        self.rows = PoolRows(n_envs, num_players, rules, self.pool, (probs or {}).get("greedy", 0.0) > 0, seed)
        self.core = self.rows.env
        self._returns = np.zeros(n_envs)
        self._lengths = np.zeros(n_envs, dtype=np.int64)
        self._actions = np.zeros(n_envs, dtype=np.int64)
        super().__init__(n_envs, self.core.single_observation_space, self.core.single_action_space)

    # ------------------------------------------------------------------ SB3's VecEnv
    def reset(self) -> np.ndarray:
        seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else self.rows.deal_seed
        self._reset_seeds()
        self.core.seed_rows(seed)
        self._new_episodes(self.rows.all_rows)
        return self.core.observations.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        core, acts = self.core, self._actions
        bad = vector_kernels.illegal_rows(core.masks, acts, np.zeros(self.num_envs, dtype=bool))
        if bad.size:
            raise ValueError(f"illegal learner actions in rows {bad.tolist()[:5]}: a masked policy never plays one")
        rewards, done = self.rows.play(acts)
        self._lengths += 1
        self._returns += rewards
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        finished = np.flatnonzero(done)
        for i in finished:
            infos[i] = {
                "terminal_observation": core.observations[i].copy(),
                "TimeLimit.truncated": bool(core.truncated[i]),
                "episode": {"r": float(self._returns[i]), "l": int(self._lengths[i])},
                "opponents": [o.kind for s, o in enumerate(self.rows.opponents[i]) if s != self.rows.learner[i]],
            }
        if finished.size:
            self._new_episodes(finished)
        return core.observations.copy(), rewards, done, infos

    def action_masks(self) -> np.ndarray:
        """The learner's legal masks, bool (n_envs, 898)."""
        return self.core.action_masks().copy()

    def close(self) -> None:
        self.core.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        """``action_masks`` per row; ``set_pool`` and ``set_best`` once for the shared pool."""
        rows = list(self._get_indices(indices))
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in rows]
        if method_name == "set_pool":
            self.pool.set_snapshots(*method_args, **method_kwargs)
            return [len(self.pool.snapshots)] * len(rows)
        if method_name == "set_best":
            self.pool.set_best(*method_args, **method_kwargs)
            return [True] * len(rows)
        raise AttributeError(f"KernelVecEnv has no env method {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def _new_episodes(self, rows: np.ndarray) -> None:
        """New deals in ``rows``, their episode returns and lengths from 0."""
        self.rows.new_deals(rows)
        self._returns[rows] = 0.0
        self._lengths[rows] = 0
