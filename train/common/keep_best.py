"""Keep-best: every snapshot of the learner is gated against the best model so far.

At each gate the learner plays a small duplicate tournament (:func:`treppen.arena.tournament.run_tournament`)
against the current best: the same decks with the seats swapped, so the luck of the cards cancels;
at 3-4 player tables the other seats are greedy agents. The learner becomes the new best when its
score against the best (win 1, tie 0.5, over every pair of seats they held in one deal) reaches
``threshold``. Every gate appends a line to ``best.jsonl``. :class:`KeepBestGate` is the gate
itself, which the sb3 and rllib backends use; each keeps its best, which the opponent pool draws
with probability ``opponent_best``: sb3 as ``best_model.zip`` in the run folder (beside
``final_model.zip``) and ``pool/best.npz`` (:class:`treppen.train.sb3.callbacks.KeepBestCallback`),
rllib as ``best_policy.npz`` (:class:`treppen.train.rllib.backend.RLlibBest`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from treppen.agents.base import Agent
from treppen.arena.ratings import fit_ratings
from treppen.arena.tournament import run_tournament
from treppen_env.files import append_jsonl, read_jsonl
from treppen_env.rules import Rules

BEST_MODEL = "best_model.zip"
BEST_SNAPSHOT = "best.npz"
GATE_SEED = 4_242


def gate_score(
    candidate: Any,
    best: Any,
    players: int = 2,
    rules: Rules | str = "treppenromme",
    decks: int = 20,
    seed: int = GATE_SEED,
) -> tuple[float, int]:
    """The candidate's duplicate score against the best: mean of win 1 / tie 0.5 / loss 0 over every
    deal in which both sat, and the number of those comparisons.

    :param candidate: an agent (or ``agents.load`` spec).
    :param best: an agent (or spec).
    :param players: seats per table; seats beyond the two are greedy agents.
    :param rules: rules preset.
    :param decks: duplicate decks, each played in every seat rotation.
    :param seed: tournament seed (the same decks at every gate).
    """
    entrants: dict[str, Any] = {"candidate": candidate, "best": best}
    for k in range(players - 2):
        entrants[f"greedy-{k + 1}"] = "greedy"
    records = run_tournament(entrants, players=players, decks=decks, seed=seed, rules=rules)
    ratings = fit_ratings(records, anchor=None, n_boot=0)
    at = {name: i for i, name in enumerate(ratings.agents)}
    i, j = at["candidate"], at["best"]
    return float(ratings.score[i, j]), int(ratings.count[i, j])


class KeepBestGate:
    """The gate both training backends use: a duplicate tournament of the learner against the
    best, ``best.jsonl`` and the promotion count. The backend keeps the best model itself (SB3:
    :class:`treppen.train.sb3.callbacks.KeepBestCallback`; RLlib: :class:`treppen.train.rllib.backend.RLlibBest`).

    :param run_dir: the run folder (``best.jsonl``; a resumed run counts its earlier promotions).
    :param players: players per table.
    :param rules: the run's rules.
    :param decks: duplicate decks per gate.
    :param threshold: score against the best needed to replace it.
    """

    def __init__(
        self,
        run_dir: Path,
        players: int = 2,
        rules: Rules | str = "treppenromme",
        decks: int = 20,
        threshold: float = 0.55,
    ):
        self.log = run_dir / "best.jsonl"
        self.players, self.rules, self.decks, self.threshold = players, rules, decks, threshold
        self.promotions = sum(row["promoted"] for row in read_jsonl(self.log))  # a torn last line is cut
        self.latest: dict[str, Any] = {}

    def judge(self, candidate: Agent, best: Agent, steps: int) -> bool:
        """Gate ``candidate`` (the learner at ``steps``) against ``best``; appends a line to
        ``best.jsonl`` and returns whether the candidate is the new best."""
        score, count = gate_score(candidate, best, self.players, self.rules, self.decks)
        promoted = score >= self.threshold
        self.promotions += promoted
        self.latest = {"steps": steps, "score_vs_best": round(score, 4), "comparisons": count, "promoted": promoted}
        append_jsonl(self.log, self.latest)
        return promoted

    def record(self, logger: Any) -> None:
        """Log the last gate to TensorBoard: ``best/score_vs_best`` and ``best/promotions``."""
        logger.record("best/score_vs_best", self.latest["score_vs_best"])
        logger.record("best/promotions", self.promotions)
