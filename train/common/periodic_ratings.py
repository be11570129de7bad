"""The periodic ratings of a training run that every PPO backend drives: the schedule, and the
evaluations and Elo ratings that fill ``evals.jsonl`` and ``elo.jsonl``.

:class:`Every` says when a period is due. :class:`Evaluation` and :class:`EloRating` are plain
objects: a backend sets their ``model`` (anything with SB3's ``predict(obs, action_masks=...)``
and a ``logger`` with ``record(key, value)``: a MaskablePPO model, or the kernel and RLlib
backends' own wrappers) and calls ``run(steps)`` when its schedule says so. The SB3 backend runs
them from a callback at the start of a rollout (:class:`treppen.train.sb3.callbacks.RatingCallback`).
They log ``eval/*`` (TensorBoard).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from treppen.agents import PolicyAgent
from treppen.arena.ratings import Ratings, fit_ratings
from treppen.arena.scale import SCALE_ANCHOR
from treppen.arena.tournament import run_tournament
from treppen.train.common.evaluate import evaluate
from treppen_env.files import append_jsonl
from treppen_env.rules import Rules


class Every:
    """Due once the step count passes each multiple of ``every`` (0: never); the next multiple is
    derived from the steps, so a resumed run keeps the schedule.

    :param every: the period, in the learner's steps.
    :param steps: the steps so far (a resumed run's).
    """

    def __init__(self, every: int, steps: int = 0):
        self.every = every
        self.next_at = (steps // every + 1) * every if every else 0

    def due(self, steps: int) -> bool:
        """Whether ``steps`` passed the next multiple since the last time it was due."""
        if not self.every or steps < self.next_at:
            return False
        self.next_at = (steps // self.every + 1) * self.every
        return True


class Rating:
    """A periodic rating of the learner's ``model`` (set by the backend before :meth:`run`), which
    logs through ``model.logger``; ``latest`` is the record of the last run (empty before)."""

    model: Any = None

    def __init__(self) -> None:
        self.latest: dict[str, Any] = {}

    @property
    def logger(self) -> Any:
        return self.model.logger

    def run(self, steps: int) -> None:
        raise NotImplementedError


class Evaluation(Rating):
    """Evaluates the learner against each named opponent.

    Logs ``eval/winrate_vs_<name>``, ``eval/points_vs_<name>`` (mean margin over the others, points)
    and ``eval/deal_points_vs_<name>`` (the learner's mean deal points) and appends one line per
    evaluation to ``evals.jsonl``.

    :param opponents: the opponents' names (``random``, ``greedy``: :func:`treppen.train.common.evaluate.evaluate`).
    :param path: the JSON lines file.
    :param eval_kwargs: arguments of :func:`treppen.train.common.evaluate.evaluate` (players, rules, deals).
    """

    def __init__(self, opponents: Sequence[str], path: Path, **eval_kwargs: Any):
        super().__init__()
        self.opponents = opponents
        self.path = path
        self.eval_kwargs = eval_kwargs

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


class EloRating(Rating):
    """Rates the learner by Elo in a small duplicate tournament against the
    fixed references random and greedy, as ``treppen tournament`` would, on the one scale of every
    Elo figure: greedy = 0 (:data:`~treppen.arena.ratings.SCALE_ANCHOR`).

    Logs ``eval/elo`` (the learner's Elo), ``eval/elo_ci_low`` / ``eval/elo_ci_high`` (its 95%
    bootstrap interval; infinite on a side the data do not bound) and ``eval/elo_random``, and appends
    one line per rating to ``elo.jsonl`` (``scale`` says where 0 is; an unbounded end is null and
    ``ci_unbounded`` names the open side; ``outcomes`` counts how the deals ended). ``ratings`` holds the latest
    :class:`~treppen.arena.ratings.Ratings`.

    :param path: the JSON lines file.
    :param players: seats per table (a 4-player table adds a second random agent).
    :param rules: the rules of the deals (the run's, options included).
    :param decks: decks; each is replayed for every table and seat rotation.
    :param seed: tournament seed (the same decks at every rating).
    :param n_boot: bootstrap resamples for the interval.
    """

    def __init__(self, path: Path, players: int, rules: Rules, decks: int, seed: int = 0, n_boot: int = 200):
        super().__init__()
        self.path = path
        self.players, self.rules, self.decks, self.seed, self.n_boot = players, rules, decks, seed, n_boot
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
