"""``vec_env: kernel``: Stable-Baselines3's ``VecEnv`` over the batched env (:mod:`treppen_env.vector`).

:class:`KernelVecEnv` holds ``n_envs`` deals as rows of one :class:`~treppen_env.vector.TreppenVectorEnv`
and plays them as :class:`~treppen.train.pool.SelfPlayEnv` does: per episode a random learner seat and
every other seat drawn from the opponent pool (:class:`~treppen.train.pool.OpponentPool`). Random and
greedy opponents play inside the kernel; snapshots, the best model and agent specs decide in Python
between kernel calls (their rows wait). Each step returns the learner's observation of every row, its
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

from treppen.train.pool import OpponentPool, PoolOpponent
from treppen_env.agent_core import seats as S
from treppen_env.core import layout as L
from treppen_env.core import vector as V
from treppen_env.rules import Rules, make_rules
from treppen_env.vector import TreppenVectorEnv

#: Pool kinds the kernel plays itself.
KERNEL_KINDS = {"random": S.RANDOM, "greedy": S.GREEDY}


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
        self.core = TreppenVectorEnv(n_envs, num_players, rules)
        self.pool = OpponentPool(probs or {"random": 1.0}, deterministic, specs)
        seeds = np.random.SeedSequence(seed)
        self._seed = int(seeds.generate_state(1)[0] % 2**31)
        self._rng = np.random.default_rng(seeds.spawn(1)[0])
        use_greedy = (probs or {}).get("greedy", 0.0) > 0
        self.opponents = [
            [PoolOpponent(self.pool, int(s.generate_state(1)[0]), use_greedy, rules) for s in seeds.spawn(num_players)]
            for _ in range(n_envs)
        ]
        self.learner = np.zeros(n_envs, dtype=np.int64)
        self._returns = np.zeros(n_envs)
        self._lengths = np.zeros(n_envs, dtype=np.int64)
        self._actions = np.zeros(n_envs, dtype=np.int64)
        super().__init__(n_envs, self.core.single_observation_space, self.core.single_action_space)

    # ------------------------------------------------------------------ SB3's VecEnv
    def reset(self) -> np.ndarray:
        seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else self._seed
        self._reset_seeds()
        self.core.seed_rows(seed)
        self._new_episodes(self.core._all)
        return self.core._obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        core, acts = self.core, self._actions
        bad = V.illegal_rows(core._masks, acts, np.zeros(self.num_envs, dtype=bool))
        if bad.size:
            raise ValueError(f"illegal learner actions in rows {bad.tolist()[:5]}: a masked policy never plays one")
        core.play_rows(core._all, acts)
        self._python_opponents(core._all)
        self._lengths += 1
        done = core.over != 0
        rewards = np.where(done, core.seat_rewards[core._all, self.learner], np.float32(0.0))
        self._returns += rewards
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        rows = np.flatnonzero(done)
        for i in rows:
            infos[i] = {
                "terminal_observation": core._obs[i].copy(),
                "TimeLimit.truncated": bool(core._i64[i, L.OUTCOME] == L.MAX_TURNS_OUTCOME),
                "episode": {"r": float(self._returns[i]), "l": int(self._lengths[i])},
                "opponents": [o.kind for s, o in enumerate(self.opponents[i]) if s != self.learner[i]],
            }
        if rows.size:
            self._new_episodes(rows)
        return core._obs.copy(), rewards.astype(np.float32), done, infos

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

    # ------------------------------------------------------------------ episodes
    def _new_episodes(self, rows: np.ndarray) -> None:
        """Seat the rows' new deals: a random learner seat and pool opponents (RULES §1.2); the
        kernel plays its kinds up to the learner's or a Python opponent's turn."""
        core = self.core
        n = core.num_players
        for i in rows:
            learner = int(self._rng.integers(n))
            self.learner[i] = learner
            core.observer[i] = learner
            core.kinds[i, :] = S.EXTERNAL
            for s, opponent in enumerate(self.opponents[i]):
                if s != learner:
                    opponent.reset()
                    core.kinds[i, s] = KERNEL_KINDS.get(opponent.kind, S.EXTERNAL)
        self._returns[rows] = 0.0
        self._lengths[rows] = 0
        core.deal_rows(rows)
        self._python_opponents(rows)

    def _python_opponents(self, rows: np.ndarray) -> None:
        """Let the Python opponents of ``rows`` move until each row's learner is to move or its deal is over."""
        core = self.core
        waiting = rows[(core.over[rows] == 0) & (core.to_move[rows] != self.learner[rows])]
        while waiting.size:
            actions = np.full(self.num_envs, -1, dtype=np.int64)
            for i in waiting:
                seat = int(core.to_move[i])
                observation = {"observation": core._obs[i], "action_mask": core._masks[i]}
                actions[i] = self.opponents[i][seat].act(observation)
            core.play_rows(waiting, actions)
            waiting = waiting[(core.over[waiting] == 0) & (core.to_move[waiting] != self.learner[waiting])]
