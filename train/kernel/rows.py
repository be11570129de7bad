"""The rows the batched learner plays (``backend: kernel``): one learner seat per deal of a
:class:`~treppen_env.vector.TreppenVectorEnv`, every other seat random, greedy or a frozen snapshot
of the learner, all played by kernels, through the one deal loop of rows with seats
(:class:`treppen.train.common.seated_rows.SeatedRows`).

Each new deal of a row draws the learner's seat uniformly and each other seat's kind from
``probs`` (``random``, ``greedy``, ``snapshot``; while no snapshot is set, the snapshot share goes
to random and greedy in proportion; RULES §1.2 for the seats). Random and greedy seats play inside
the env's step kernel; snapshot seats are the env's external seats, played between its calls by
:func:`treppen_env.agent_core.action_net_kernels.net_moves` on every waiting row at once, each seat by its own
snapshot of the stack, sampling from its softmax with the row's own generator. So every row handed
back is the learner's decision, and at a deal's end its reward is the learner seat's
(``seat_rewards``, docs/ARCHITECTURE.md "Rewards"); the row is dealt afresh at once.

The whole object pickles (arrays and generators), which is how a checkpoint resumes it exactly.
"""

from __future__ import annotations

import io
import pickle
from collections import defaultdict
from typing import Any

import numpy as np

from treppen.agents.action_net import LegalRows, feature_context, legal_rows
from treppen.train.common.seated_rows import SeatedRows
from treppen_env.agent_core import action_net_kernels, seat_kernels
from treppen_env.rules import Rules

#: Opponent kinds of a seat and the env's kind that plays it (snapshots play between env calls).
KINDS = ("random", "greedy", "snapshot")
_ENV_KIND = {"random": seat_kernels.RANDOM, "greedy": seat_kernels.GREEDY, "snapshot": seat_kernels.EXTERNAL}


class LearnerRows(SeatedRows):
    """``rows`` deals, each with one learner seat (see the module docstring).

    :param rows: deals played side by side.
    :param num_players: 2 to 4; ``rules``: the run's rules.
    :param probs: probabilities of the opponent kinds of :data:`KINDS` (summing to 1).
    :param features: ``cards``, ``heuristic`` or ``planner`` (the legal rows' columns,
        :mod:`treppen.agents.action_net`).
    :param seed: seeds the deals, the seats, the kinds and the snapshots' sampling.
    """

    def __init__(self, rows: int, num_players: int, rules: Rules, probs: dict[str, float], features: str, seed: int):
        unknown = sorted(set(probs) - set(KINDS))
        if unknown:
            raise ValueError(f"opponent kinds {unknown}; choose among {list(KINDS)}")
        super().__init__(rows, num_players, rules, seed)
        self.features = features
        self.ctx = feature_context(rules)
        self.probs = {k: float(probs.get(k, 0.0)) for k in KINDS}
        self.env.seed_rows(self.deal_seed)
        self.net_rngs = self.seeds.spawn(1)[0].generate_state(rows, np.uint64)
        self.kinds = np.zeros((rows, num_players), dtype=np.int64)  # index into KINDS; the learner's seat -1
        self.picks = np.zeros((rows, num_players), dtype=np.int64)  # the snapshot of each snapshot seat
        self.stack = np.zeros((0, 0), dtype=np.float32)
        self.shape = np.zeros(action_net_kernels.SHAPE_SIZE, dtype=np.int64)
        #: Finished deals' learner rewards per opponent kind since :meth:`take_results`.
        self.results: dict[str, list[float]] = defaultdict(list)
        self._actions = np.full(rows, -1, dtype=np.int64)

    @property
    def obs(self) -> np.ndarray:
        """The learner's observation of every row, float32 (rows, 969) (the env's buffer)."""
        return self.env.observations

    def set_snapshots(self, weights: list[np.ndarray], shape: np.ndarray) -> None:
        """The frozen nets snapshot seats draw from (flat weights of one ``shape``,
        :func:`treppen_env.agent_core.action_net_kernels.layout`); seats already seated keep their draw's index
        when it still exists, else the newest."""
        if weights:
            self.stack = np.stack(weights).astype(np.float32)
            self.shape = np.asarray(shape, dtype=np.int64)
            np.minimum(self.picks, len(weights) - 1, out=self.picks)

    def reset(self) -> None:
        """New deals in every row, each seated afresh."""
        self.new_deals(self.all_rows)

    def legal(self) -> LegalRows:
        """The learner's legal-action rows of every row."""
        return legal_rows(self.env.observations, self.env.masks, self.ctx, self.features)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Play the learner's legal ``actions`` (int64 (rows,)), then the opponents up to the learner's
        next decision; finished rows are dealt afresh.

        :return: rewards (float32 (rows,), the learner seat's at a deal's end, else 0) and dones (bool (rows,)).
        """
        rewards, done = self.play(actions)
        finished = np.flatnonzero(done)
        for i in finished:
            for kind in {KINDS[k] for k in self.kinds[i] if k >= 0}:
                self.results[kind].append(float(rewards[i]))
        if finished.size:
            self.new_deals(finished)
        return rewards, done

    def take_results(self) -> dict[str, list[float]]:
        """The finished deals' rewards per opponent kind since the last call (and forget them)."""
        out, self.results = dict(self.results), defaultdict(list)
        return out

    def seat(self, i: int, learner: int) -> None:
        """Draw the kinds of row ``i``'s other seats (and the snapshot each snapshot seat plays)."""
        n = self.num_players
        probs = np.array([self.probs[k] for k in KINDS])
        if not len(self.stack):  # no snapshot yet: its share to random and greedy
            probs[KINDS.index("snapshot")] = 0.0
        self.kinds[i] = self.rng.choice(len(KINDS), size=n, p=probs / probs.sum())
        self.kinds[i, learner] = -1
        self.picks[i] = self.rng.integers(max(len(self.stack), 1), size=n)
        for s in range(n):
            if s != learner:
                self.env.kinds[i, s] = _ENV_KIND[KINDS[self.kinds[i, s]]]

    def external_actions(self, waiting: np.ndarray) -> np.ndarray:
        """The snapshot seats' moves in ``waiting``: each by its snapshot's net, sampled in the kernels."""
        env = self.env
        legal = legal_rows(env.observations[waiting], env.masks[waiting], self.ctx, self.features)
        picks = self.picks[waiting, env.to_move[waiting]]
        chosen = np.zeros(waiting.size, dtype=np.int64)
        rngs = self.net_rngs[waiting]
        action_net_kernels.net_moves(
            action_net_kernels.NetStack(weights=self.stack, shape=self.shape),
            env.observations[waiting],
            legal,
            self.all_rows[: waiting.size],
            picks,
            rngs,
            chosen,
        )
        self.net_rngs[waiting] = rngs
        self._actions[:] = -1
        self._actions[waiting] = chosen
        return self._actions


#: Modules that checkpoints written before train/ had a package per backend name: old -> today's.
MOVED_MODULES = {"treppen.train.kernel_rows": "treppen.train.kernel.rows"}


class _RowsUnpickler(pickle.Unpickler):
    """Unpickles a checkpoint's rows, classes of moved modules from their modules today."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(MOVED_MODULES.get(module, module), name)


def load_rows(data: bytes) -> LearnerRows:
    """A checkpoint's pickled :class:`LearnerRows`, also one written before the shared deal loop
    (:class:`treppen.train.common.seated_rows.SeatedRows`; its row indices were ``_all``)."""
    rows = _RowsUnpickler(io.BytesIO(data)).load()
    if "all_rows" not in rows.__dict__:
        rows.all_rows = rows.__dict__.pop("_all")
    return rows
