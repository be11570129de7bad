"""Training callbacks of the self-play trainer: checkpoints, opponent pool, evaluation, Elo,
statistics and the progress bar.

Periodic work runs at the start of a rollout (just after the previous PPO update), when the step
count has passed the next multiple of its period; so a checkpoint holds a freshly updated model
and evaluations never interrupt a rollout. SB3's ``rollout/`` and ``train/`` tags are left alone;
these callbacks add ``selfplay/*`` and ``eval/*``.
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from treppen.agents import PolicyAgent
from treppen.arena.ratings import Ratings, fit_ratings
from treppen.arena.scale import SCALE_ANCHOR
from treppen.arena.tournament import run_tournament
from treppen.train.checkpoints import checkpoint_path, save_model
from treppen.train.evaluate import evaluate
from treppen.train.pool import save_snapshot
from treppen_env.files import append_jsonl
from treppen_env.rules import Rules


class PeriodicCallback(BaseCallback):
    """Calls :meth:`run` at the first rollout start after every ``every`` steps (0: never).

    :param every: period in environment steps.
    """

    def __init__(self, every: int, verbose: int = 0):
        super().__init__(verbose)
        self.every = every
        self.next_at = 0

    def _init_callback(self) -> None:
        steps = self.model.num_timesteps
        self.next_at = (steps // self.every + 1) * self.every if self.every else 0

    def _on_rollout_start(self) -> None:
        steps = self.model.num_timesteps
        if self.every and steps >= self.next_at:
            self.next_at = (steps // self.every + 1) * self.every
            self.run(steps)

    def _on_step(self) -> bool:
        return True

    def run(self, steps: int) -> None:
        raise NotImplementedError


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


class EvalCallback(PeriodicCallback):
    """Evaluates the learner against each named opponent every ``every`` steps.

    Logs ``eval/winrate_vs_<name>``, ``eval/points_vs_<name>`` (mean margin over the others, points)
    and ``eval/deal_points_vs_<name>`` (the learner's mean deal points) and appends one line per
    evaluation to ``evals.jsonl``.

    :param every: steps between evaluations (0: only when :meth:`run` is called directly).
    :param opponents: the opponents' names (``random``, ``greedy``: :func:`treppen.train.evaluate.evaluate`).
    :param path: the JSON lines file.
    :param eval_kwargs: arguments of :func:`treppen.train.evaluate.evaluate` (players, rules, deals).
    """

    def __init__(self, every: int, opponents: Sequence[str], path: Path, **eval_kwargs: Any):
        super().__init__(every)
        self.opponents = opponents
        self.path = path
        self.eval_kwargs = eval_kwargs
        self.latest: dict[str, Any] = {}

    def run(self, steps: int) -> None:
        start = time.perf_counter()
        record: dict[str, Any] = {"steps": steps, "time": time.time()}
        for name in self.opponents:
            result = evaluate(self.model, name, **self.eval_kwargs)
            self.logger.record(f"eval/winrate_vs_{name}", result["winrate"])
            self.logger.record(f"eval/points_vs_{name}", result["points"])
            self.logger.record(f"eval/deal_points_vs_{name}", result["deal_points"])
            record[name] = result
        record["seconds"] = round(time.perf_counter() - start, 2)
        append_jsonl(self.path, record)
        self.latest = record


class EloCallback(PeriodicCallback):
    """Rates the learner by Elo every ``every`` steps in a small duplicate tournament against the
    fixed references random and greedy, as ``treppen tournament`` would, on the one scale of every
    Elo figure: greedy = 0 (:data:`~treppen.arena.ratings.SCALE_ANCHOR`).

    Logs ``eval/elo`` (the learner's Elo), ``eval/elo_ci_low`` / ``eval/elo_ci_high`` (its 95%
    bootstrap interval; infinite on a side the data do not bound) and ``eval/elo_random``, and appends
    one line per rating to ``elo.jsonl`` (``scale`` says where 0 is; an unbounded end is null and
    ``ci_unbounded`` names the open side; ``outcomes`` counts how the deals ended). ``ratings`` holds the latest
    :class:`~treppen.arena.ratings.Ratings`.

    :param every: steps between ratings (0: only when :meth:`run` is called directly).
    :param path: the JSON lines file.
    :param players: seats per table (a 4-player table adds a second random agent).
    :param rules: the rules of the deals (the run's, options included).
    :param decks: decks; each is replayed for every table and seat rotation.
    :param seed: tournament seed (the same decks at every rating).
    :param n_boot: bootstrap resamples for the interval.
    """

    def __init__(
        self, every: int, path: Path, players: int, rules: Rules, decks: int, seed: int = 0, n_boot: int = 200
    ):
        super().__init__(every)
        self.path = path
        self.players, self.rules, self.decks, self.seed, self.n_boot = players, rules, decks, seed, n_boot
        self.latest: dict[str, Any] = {}
        self.ratings: Ratings | None = None

    def run(self, steps: int) -> None:
        entrants: dict[str, Any] = {"learner": PolicyAgent(self.model), "random": "random", "greedy": "greedy"}
        if self.players == 4:
            entrants["random-2"] = "random"
        records = run_tournament(entrants, players=self.players, decks=self.decks, seed=self.seed, rules=self.rules)
        ratings = fit_ratings(records, anchor=SCALE_ANCHOR, require_anchor=True, n_boot=self.n_boot, seed=self.seed)
        self.ratings = ratings
        at = {name: i for i, name in enumerate(ratings.agents)}
        learner = at["learner"]
        self.logger.record("eval/elo", float(ratings.elo[learner]))
        self.logger.record("eval/elo_ci_low", float(ratings.ci_low[learner]))
        self.logger.record("eval/elo_ci_high", float(ratings.ci_high[learner]))
        self.logger.record("eval/elo_random", float(ratings.elo[at["random"]]))
        self.latest = {
            "steps": steps,
            "scale": ratings.scale,
            "elo": {name: round(float(ratings.elo[i]), 1) for name, i in at.items()},
            "ci": [_json_end(ratings.ci_low[learner]), _json_end(ratings.ci_high[learner])],
            "ci_unbounded": ratings.unbounded[learner],
            "los_vs_greedy": round(float(ratings.los[learner, at["greedy"]]), 3),
            "deals": len(records),
            "outcomes": dict(Counter(r["outcome"] for r in records)),
        }
        append_jsonl(self.path, self.latest)


def _json_end(value: float) -> float | None:
    """An interval end for a JSON line: rounded to 0.1 Elo, None when unbounded (infinite)."""
    return round(float(value), 1) if np.isfinite(value) else None


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
    """A tqdm progress bar, ``PPO``, over the learner's env steps (as ``total_timesteps`` counts
    them) with steps/s and the latest evaluation.

    SB3 collects whole rollouts (``n_steps * n_envs`` steps), so a run ends at the first rollout
    boundary at or past ``total``; the bar's total is that step count, so it never overshoots.

    :param total: the run's total timesteps.
    :param rollout: steps per rollout, ``n_steps * n_envs``.
    :param evals: the EvalCallback whose ``latest`` record is shown.
    """

    def __init__(self, total: int, rollout: int, evals: EvalCallback | None = None):
        super().__init__()
        self.total = total
        self.rollout = rollout
        self.evals = evals
        self.bar: Any = None
        self._last = (0.0, 0)

    def _on_training_start(self) -> None:
        from tqdm.auto import tqdm

        start = self.model.num_timesteps
        end = start + math.ceil(max(0, self.total - start) / self.rollout) * self.rollout
        desc = "PPO (the learner's env steps)"  # what the bar counts: what total_timesteps counts
        self.bar = tqdm(total=end, initial=start, desc=desc, unit="step", dynamic_ncols=True, mininterval=1.0)
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
