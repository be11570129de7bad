"""The one deal loop of rows with seats: every row of a :class:`~treppen_env.vector.TreppenVectorEnv`
is a deal with one learner seat; each other seat is played inside the kernel (random, greedy) or
between kernel calls by the caller (an external seat), so every row handed back is the learner's
decision.

:meth:`SeatedRows.new_deals` seats each new deal (the learner's seat drawn uniformly, RULES §1.2;
the other seats by the subclass's :meth:`~SeatedRows.seat`), deals it and lets the external seats
move (the subclass's :meth:`~SeatedRows.external_actions`) until the learner is to move. A deal
that an opponent ends before the learner's first decision (it went out at once, RULES §6.1) holds
no decision of the learner's, so the row is dealt afresh. :meth:`SeatedRows.play` plays the
learner's actions and the external seats' replies. The sb3 backend's ``vec_env: kernel``
(:class:`treppen.train.sb3.kernel_vec_env.KernelVecEnv`) and the batched learner
(:class:`treppen.train.kernel.rows.LearnerRows`) play their rows through it.
"""

from __future__ import annotations

import numpy as np

from treppen_env.agent_core import seat_kernels
from treppen_env.rules import Rules
from treppen_env.vector import TreppenVectorEnv


class SeatedRows:
    """``rows`` deals, each with one learner seat (see the module docstring).

    :param rows: deals played side by side.
    :param num_players: 2 to 4; ``rules``: the run's rules.
    :param seed: seeds the rows' deals (:attr:`deal_seed`) and the learner's seats; a subclass spawns
        its own generators from :attr:`seeds` after these.
    """

    def __init__(self, rows: int, num_players: int, rules: Rules, seed: int | None):
        self.env = TreppenVectorEnv(rows, num_players, rules)
        self.num_players = num_players
        self.seeds = np.random.SeedSequence(seed)
        #: The seed of the rows' deals (:meth:`TreppenVectorEnv.seed_rows`).
        self.deal_seed = int(self.seeds.generate_state(1)[0] % 2**31)
        self.rng = np.random.default_rng(self.seeds.spawn(1)[0])
        #: Each row's learner seat, int64 (rows,).
        self.learner = np.zeros(rows, dtype=np.int64)
        self.all_rows = np.arange(rows, dtype=np.int64)

    def seat(self, i: int, learner: int) -> None:
        """Seat the opponents of row ``i``'s new deal: the kind of each seat but ``learner`` in
        ``env.kinds[i]`` (a kernel kind of :mod:`treppen_env.agent_core.seat_kernels`; the seats left
        ``EXTERNAL`` move through :meth:`external_actions`)."""
        raise NotImplementedError

    def external_actions(self, waiting: np.ndarray) -> np.ndarray:
        """The moves of the external seats to move in the rows ``waiting`` (int64 row indices):
        int64 (rows,), a legal action in each waiting row, -1 in the others."""
        raise NotImplementedError

    def new_deals(self, rows: np.ndarray) -> None:
        """New deals in ``rows`` (int64 row indices), each seated afresh and played up to the
        learner's first decision; a row whose deal ends before it is dealt again (RULES §6.1)."""
        env = self.env
        for i in rows:
            learner = int(self.rng.integers(self.num_players))
            self.learner[i] = learner
            env.observer[i] = learner
            env.kinds[i, :] = seat_kernels.EXTERNAL
            self.seat(int(i), learner)
        env.deal_rows(rows)
        self.opponents_move(rows)
        again = rows[env.over[rows] != 0]  # an opponent went out before the learner's first decision
        if again.size:
            self.new_deals(again)  # no decision of the learner's to reward: deal afresh

    def opponents_move(self, rows: np.ndarray) -> None:
        """Let the external seats of ``rows`` move until each row's learner is to move or its deal is over."""
        env = self.env
        waiting = rows[(env.over[rows] == 0) & (env.to_move[rows] != self.learner[rows])]
        while waiting.size:
            env.play_rows(waiting, self.external_actions(waiting))
            waiting = waiting[(env.over[waiting] == 0) & (env.to_move[waiting] != self.learner[waiting])]

    def play(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Play the learner's legal ``actions`` (int64 (rows,)) in every row, then the opponents up to
        the learner's next decision. A finished row keeps its final state until :meth:`new_deals`.

        :return: rewards (float32 (rows,), the learner seat's at a deal's end, else 0) and dones (bool (rows,)).
        """
        env = self.env
        env.play_rows(self.all_rows, np.asarray(actions, dtype=np.int64))
        self.opponents_move(self.all_rows)
        done = env.over != 0
        rewards = np.where(done, env.seat_rewards[self.all_rows, self.learner], np.float32(0.0)).astype(np.float32)
        return rewards, done
