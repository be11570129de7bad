"""The SB3 backend's callbacks: checkpoints, the snapshot pool, keep-best, statistics, the
progress bar, and the adapter that runs the evaluations and Elo ratings every backend drives
(:mod:`treppen.train.common.periodic_ratings`) as SB3 callbacks (:class:`RatingCallback`).

:class:`PeriodicCallback` runs a callback's work by :class:`~treppen.train.common.periodic_ratings.Every`'s
schedule at the start of a rollout (just after the previous PPO update), so a checkpoint holds a
freshly updated model and evaluations never interrupt a rollout; the others run at every step.
They log ``selfplay/*`` and ``best/*`` beside SB3's ``rollout/`` and ``train/``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from treppen.agents import PolicyAgent
from treppen.train.common.checkpoints import checkpoint_path, save_model
from treppen.train.common.keep_best import BEST_MODEL, BEST_SNAPSHOT, KeepBestGate
from treppen.train.common.periodic_ratings import Evaluation, Every, Rating
from treppen.train.common.rundir import progress_bar
from treppen.train.sb3.pool import save_snapshot
from treppen_env.rules import Rules


class PeriodicCallback(BaseCallback):
    """Calls :meth:`run` at the first rollout start after every ``every`` steps (0: never).

    :param every: period in environment steps.
    """

    def __init__(self, every: int, verbose: int = 0):
        super().__init__(verbose)
        self.every = every
        self.schedule = Every(every)

    def _init_callback(self) -> None:
        self.schedule = Every(self.every, self.model.num_timesteps)

    def _on_rollout_start(self) -> None:
        steps = self.model.num_timesteps
        if self.schedule.due(steps):
            self.run(steps)

    def _on_step(self) -> bool:
        return True

    def run(self, steps: int) -> None:
        raise NotImplementedError


class RatingCallback(PeriodicCallback):
    """Runs a :class:`~treppen.train.common.periodic_ratings.Rating` (an evaluation, an Elo rating) of the
    SB3 model every ``every`` steps.

    :param every: period in environment steps (0: never).
    :param rating: the rating; its ``model`` becomes the callback's model when training starts.
    """

    def __init__(self, every: int, rating: Rating):
        super().__init__(every)
        self.rating = rating

    def _init_callback(self) -> None:
        super()._init_callback()
        self.rating.model = self.model

    def run(self, steps: int) -> None:
        self.rating.run(steps)


class CheckpointCallback(PeriodicCallback):
    """Saves ``checkpoints/model_<steps>_steps.zip`` atomically every ``every`` steps."""

    def __init__(self, every: int, folder: Path):
        super().__init__(every)
        self.folder = folder

    def run(self, steps: int) -> None:
        save_model(self.model, checkpoint_path(self.folder, steps))


class PoolCallback(PeriodicCallback):
    """Adds a snapshot of the learner to ``pool/`` every ``every`` steps, keeps the newest
    ``size`` and sends the list to every env worker (``env_method("set_pool", paths)``).

    :param every: steps between snapshots.
    :param folder: the pool folder; snapshots already there (a resumed run) are used at once.
    :param size: snapshots kept; older files are deleted.
    """

    def __init__(self, every: int, folder: Path, size: int):
        super().__init__(every)
        self.folder = folder
        self.size = size
        self.pool_size = 0

    def _init_callback(self) -> None:
        super()._init_callback()
        self.folder.mkdir(parents=True, exist_ok=True)
        self._publish()

    def run(self, steps: int) -> None:
        save_snapshot(self.model.policy, self.folder / f"snapshot_{steps:09d}.npz", steps)
        self._publish()

    def _publish(self) -> None:
        paths = sorted(self.folder.glob("snapshot_*.npz"))
        for old in paths[: -self.size]:
            old.unlink()
        paths = paths[-self.size :]
        self.training_env.env_method("set_pool", [str(p) for p in paths])
        self.pool_size = len(paths)

    def _on_rollout_end(self) -> None:
        self.logger.record("selfplay/pool_size", self.pool_size)


class StatsCallback(BaseCallback):
    """Counts illegal actions (must stay 0), logs the learner's mean episode reward per opponent
    kind, and stops training on non-finite policy weights (NaN logits, docs/ARCHITECTURE.md "Training notes")."""

    def __init__(self) -> None:
        super().__init__()
        self.illegal_actions = 0
        self.rewards: dict[str, list[float]] = defaultdict(list)

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if info.get("illegal_action"):
                self.illegal_actions += 1
            episode = info.get("episode")
            if episode is not None:
                for kind in set(info.get("opponents", ())):
                    self.rewards[kind].append(float(episode["r"]))
        return True

    def _on_rollout_end(self) -> None:
        self.logger.record("selfplay/illegal_actions", self.illegal_actions)
        for kind, values in self.rewards.items():
            self.logger.record(f"selfplay/reward_vs_{kind}", float(np.mean(values)))
        self.rewards.clear()

    def _on_rollout_start(self) -> None:
        for name, param in self.model.policy.named_parameters():
            if not bool(param.isfinite().all()):
                raise FloatingPointError(
                    f"policy parameter {name} is not finite after {self.model.num_timesteps} steps; "
                    "lower learning_rate or max_grad_norm and resume from the last checkpoint"
                )


class ProgressCallback(BaseCallback):
    """The run's progress bar (:func:`treppen.train.common.rundir.progress_bar`, as the kernel backend's) over
    the learner's env steps, with steps/s and the latest evaluation.

    SB3 collects whole rollouts (``n_steps * n_envs`` steps), so a run ends at the first rollout
    boundary at or past ``total``; the bar's total is that step count, so it never overshoots.

    :param total: the run's total timesteps.
    :param rollout: steps per rollout, ``n_steps * n_envs``.
    :param evals: the evaluation whose ``latest`` record is shown.
    """

    def __init__(self, total: int, rollout: int, evals: Evaluation | None = None):
        super().__init__()
        self.total = total
        self.rollout = rollout
        self.evals = evals
        self.bar: Any = None
        self._last = (0.0, 0)

    def _on_training_start(self) -> None:
        self.bar = progress_bar(self.model.num_timesteps, self.total, self.rollout)
        self._last = (time.perf_counter(), self.model.num_timesteps)

    def _on_step(self) -> bool:
        self.bar.update(self.model.num_timesteps - self.bar.n)
        return True

    def _on_rollout_start(self) -> None:
        now, steps = time.perf_counter(), self.model.num_timesteps
        if steps == self._last[1]:
            return
        rate = (steps - self._last[1]) / max(now - self._last[0], 1e-9)
        self._last = (now, steps)
        postfix = {"steps/s": f"{rate:.0f}"}  # over the last rollout and update
        latest = self.evals.latest if self.evals else {}
        for name in ("random", "greedy"):
            if name in latest:
                postfix[f"win_{name}"] = f"{latest[name]['winrate']:.2f}"
        self.bar.set_postfix(postfix, refresh=False)

    def _on_training_end(self) -> None:
        self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class KeepBestCallback(PeriodicCallback):
    """Gates the SB3 learner against the best every ``every`` steps (:mod:`treppen.train.common.keep_best`).

    At the start of training, with no best yet, the learner itself (e.g. the imitation student) is
    the first best. Logs ``best/score_vs_best`` and ``best/promotions``.

    :param every: steps between gates (0: never).
    :param run_dir: the run folder (``best_model.zip``, ``best.jsonl``, ``pool/best.npz``).
    :param players: players per table.
    :param rules: rules preset.
    :param decks: duplicate decks per gate.
    :param threshold: score against the best needed to replace it.
    """

    def __init__(
        self,
        every: int,
        run_dir: Path,
        players: int = 2,
        rules: Rules | str = "treppenromme",
        decks: int = 20,
        threshold: float = 0.55,
    ):
        super().__init__(every)
        self.run_dir = run_dir
        self.gate = KeepBestGate(run_dir, players, rules, decks, threshold)

    @property
    def promotions(self) -> int:
        return self.gate.promotions

    @property
    def latest(self) -> dict[str, Any]:
        return self.gate.latest

    @property
    def best_path(self) -> Path:
        return self.run_dir / BEST_MODEL

    def _init_callback(self) -> None:
        super()._init_callback()
        if not self.best_path.is_file():
            self._promote(self.model.num_timesteps)
        else:
            self._publish()

    def _promote(self, steps: int) -> None:
        save_model(self.model, self.best_path)
        save_snapshot(self.model.policy, self.snapshot_path, steps)
        self._publish()

    @property
    def snapshot_path(self) -> Path:
        return self.run_dir / "pool" / BEST_SNAPSHOT

    def _publish(self) -> None:
        """Send the best snapshot to every env worker (the pool's ``"best"`` opponent)."""
        self.snapshot_path.parent.mkdir(parents=True, exist_ok=True)
        if not self.snapshot_path.is_file():
            save_snapshot(PolicyAgent(self.best_path).model.policy, self.snapshot_path)
        self.training_env.env_method("set_best", str(self.snapshot_path))

    def run(self, steps: int) -> None:
        if self.gate.judge(PolicyAgent(self.model), PolicyAgent(self.best_path), steps):
            self._promote(steps)
        self.gate.record(self.logger)
