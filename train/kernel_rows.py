"""The rows the batched learner plays (``backend: kernel``): one learner seat per deal of a
:class:`~treppen_env.vector.TreppenVectorEnv`, every other seat random, greedy or a frozen snapshot
of the learner, all played by kernels.

Each new deal of a row draws the learner's seat uniformly and each other seat's kind from
``probs`` (``random``, ``greedy``, ``snapshot``; while no snapshot is set, the snapshot share goes
to random and greedy in proportion; RULES §1.2 for the seats). Random and greedy seats play inside
the env's step kernel; snapshot seats are the env's external seats, played between its calls by
:func:`treppen_env.agent_core.action_net.net_moves` on every waiting row at once, each seat by its own
snapshot of the stack, sampling from its softmax with the row's own generator. So every row handed
back is the learner's decision, and at a deal's end its reward is the learner seat's
(``seat_rewards``, docs/ARCHITECTURE.md "Rewards"); the row is dealt afresh at once.

The whole object pickles (arrays and generators), which is how a checkpoint resumes it exactly.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from treppen.agents.action_net import LegalRows, feature_context, legal_rows
from treppen_env.actions import NUM_ACTIONS
from treppen_env.agent_core import action_net as R
from treppen_env.agent_core import playout as P
from treppen_env.agent_core import seats as V
from treppen_env.rules import Rules
from treppen_env.vector import TreppenVectorEnv

#: Opponent kinds of a seat and the env's kind that plays it (snapshots play between env calls).
KINDS = ("random", "greedy", "snapshot")
_ENV_KIND = {"random": V.RANDOM, "greedy": V.GREEDY, "snapshot": V.EXTERNAL}


class LearnerRows:
    """``rows`` deals, each with one learner seat (see the module docstring).

    :param rows: deals played side by side.
    :param num_players: 2 to 4; ``rules``: the run's rules.
    :param probs: probabilities of the opponent kinds of :data:`KINDS` (summing to 1).
    :param features: ``cards`` or ``heuristic`` (the legal rows' columns, :mod:`treppen.agents.action_net`).
    :param seed: seeds the deals, the seats, the kinds and the snapshots' sampling.
    """

    def __init__(self, rows: int, num_players: int, rules: Rules, probs: dict[str, float], features: str, seed: int):
        unknown = sorted(set(probs) - set(KINDS))
        if unknown:
            raise ValueError(f"opponent kinds {unknown}; choose among {list(KINDS)}")
        self.env = TreppenVectorEnv(rows, num_players, rules)
        self.num_players, self.features = num_players, features
        self.ctx = feature_context(rules)
        self.probs = {k: float(probs.get(k, 0.0)) for k in KINDS}
        seeds = np.random.SeedSequence(seed)
        self.env.seed_rows(int(seeds.generate_state(1)[0] % 2**31))
        self.rng = np.random.default_rng(seeds.spawn(1)[0])
        self.net_rngs = seeds.spawn(1)[0].generate_state(rows, np.uint64)
        self.learner = np.zeros(rows, dtype=np.int64)
        self.kinds = np.zeros((rows, num_players), dtype=np.int64)  # index into KINDS; the learner's seat -1
        self.picks = np.zeros((rows, num_players), dtype=np.int64)  # the snapshot of each snapshot seat
        self.stack = np.zeros((0, 0), dtype=np.float32)
        self.shape = np.zeros(R.SHAPE_SIZE, dtype=np.int64)
        #: Finished deals' learner rewards per opponent kind since :meth:`take_results`.
        self.results: dict[str, list[float]] = defaultdict(list)
        self._actions = np.full(rows, -1, dtype=np.int64)
        self._all = np.arange(rows, dtype=np.int64)

    def __setstate__(self, state: dict) -> None:
        """Unpickled (a checkpoint): the env's views and scratch arrays are rebuilt, as pickling copies views."""
        self.__dict__.update(state)
        env = self.env
        env._masks = env._padded[:, :NUM_ACTIONS]
        env._work = P.scratch()

    @property
    def obs(self) -> np.ndarray:
        """The learner's observation of every row, float32 (rows, 969) (the env's buffer)."""
        return self.env._obs

    def set_snapshots(self, weights: list[np.ndarray], shape: np.ndarray) -> None:
        """The frozen nets snapshot seats draw from (flat weights of one ``shape``,
        :func:`treppen_env.agent_core.action_net.layout`); seats already seated keep their draw's index
        when it still exists, else the newest."""
        if weights:
            self.stack = np.stack(weights).astype(np.float32)
            self.shape = np.asarray(shape, dtype=np.int64)
            np.minimum(self.picks, len(weights) - 1, out=self.picks)

    def reset(self) -> None:
        """New deals in every row, each seated afresh."""
        self._new_deals(self._all)

    def legal(self) -> LegalRows:
        """The learner's padded legal-action rows of every row."""
        return legal_rows(self.env._obs, self.env._masks, self.ctx, self.features)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Play the learner's legal ``actions`` (int64 (rows,)), then the opponents up to the learner's
        next decision; finished rows are dealt afresh.

        :return: rewards (float32 (rows,), the learner seat's at a deal's end, else 0) and dones (bool (rows,)).
        """
        env = self.env
        env.play_rows(self._all, np.asarray(actions, dtype=np.int64))
        self._snapshot_moves(self._all)
        done = env.over != 0
        rewards = np.where(done, env.seat_rewards[self._all, self.learner], np.float32(0.0)).astype(np.float32)
        finished = np.flatnonzero(done)
        for i in finished:
            for kind in {KINDS[k] for k in self.kinds[i] if k >= 0}:
                self.results[kind].append(float(rewards[i]))
        if finished.size:
            self._new_deals(finished)
        return rewards, done

    def take_results(self) -> dict[str, list[float]]:
        """The finished deals' rewards per opponent kind since the last call (and forget them)."""
        out, self.results = dict(self.results), defaultdict(list)
        return out

    def _new_deals(self, rows: np.ndarray) -> None:
        env, n = self.env, self.num_players
        probs = np.array([self.probs[k] for k in KINDS])
        if not len(self.stack):  # no snapshot yet: its share to random and greedy
            probs[KINDS.index("snapshot")] = 0.0
        probs = probs / probs.sum()
        for i in rows:
            seat = int(self.rng.integers(n))
            self.learner[i] = seat
            env.observer[i] = seat
            self.kinds[i] = self.rng.choice(len(KINDS), size=n, p=probs)
            self.kinds[i, seat] = -1
            self.picks[i] = self.rng.integers(max(len(self.stack), 1), size=n)
            env.kinds[i, :] = V.EXTERNAL
            for s in range(n):
                if s != seat:
                    env.kinds[i, s] = _ENV_KIND[KINDS[self.kinds[i, s]]]
        env.deal_rows(rows)
        self._snapshot_moves(rows)
        again = rows[env.over[rows] != 0]  # an opponent went out before the learner's first decision (RULES §6.1)
        if again.size:
            self._new_deals(again)  # no decision of the learner's to reward: deal afresh

    def _snapshot_moves(self, rows: np.ndarray) -> None:
        """Let the snapshot seats of ``rows`` move until each row's learner is to move or its deal is over."""
        env = self.env
        waiting = rows[(env.over[rows] == 0) & (env.to_move[rows] != self.learner[rows])]
        while waiting.size:
            legal = legal_rows(env._obs[waiting], env._masks[waiting], self.ctx, self.features)
            picks = self.picks[waiting, env.to_move[waiting]]
            chosen = np.zeros(waiting.size, dtype=np.int64)
            rngs = self.net_rngs[waiting]
            R.net_moves(
                (self.stack, self.shape),
                env._obs[waiting],
                legal.bundle(),
                self._all[: waiting.size],
                picks,
                rngs,
                chosen,
            )
            self.net_rngs[waiting] = rngs
            self._actions[:] = -1
            self._actions[waiting] = chosen
            env.play_rows(waiting, self._actions)
            waiting = waiting[(env.over[waiting] == 0) & (env.to_move[waiting] != self.learner[waiting])]
