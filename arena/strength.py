"""An agent's strength against a reference agent: a duplicate tournament and its Elo with an interval.

:func:`rate_against` plays the agent against a reference (greedy by default) with the tournament
code (:func:`treppen.arena.tournament.run_tournament`: every deck in every seat rotation; at a
table of more than two the other seats are copies of the reference) and rates the deals
(:func:`treppen.arena.ratings.fit_ratings`, the reference = 0 Elo, 95% bootstrap intervals over
decks). The model zoo's cards, the strength benchmarks and expert iteration's generations are all
rated by it; :func:`rate_card` makes a zoo card's ``elo`` block, with :func:`rating_command`, the
``treppen tournament`` command that plays the same tournament again.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

from treppen.agents.base import Agent
from treppen.agents.zoo import ModelCard
from treppen.arena.ratings import fit_ratings
from treppen.arena.scale import rating_text
from treppen.arena.tournament import run_tournament
from treppen_env.rules import Rules


@dataclass(frozen=True)
class Strength:
    """An agent's rating against a reference.

    :param elo: Elo against the reference (the reference = 0).
    :param low: the lower end of the 95% bootstrap interval over decks (-inf when unbounded).
    :param high: the upper end (+inf when unbounded).
    :param score: the agent's mean score against the reference (more points 1, equal 0.5).
    :param likelihood: the share of bootstrap fits in which the agent rates above the reference.
    :param decks: duplicate decks played; ``seed`` the tournament's seed; ``deals`` the deals.
    """

    elo: float
    low: float
    high: float
    score: float
    likelihood: float
    decks: int
    seed: int
    deals: int

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict (for JSON files and model cards)."""
        return asdict(self)

    def text(self, reference: str = "greedy") -> str:
        """``+103 [+54, +153] vs greedy, score 0.605, P 1.00 (100 decks)``."""
        return (
            f"{rating_text(self.elo, self.low, self.high)} vs {reference}, score {self.score:.3f}, "
            f"P {self.likelihood:.2f} ({self.decks} decks)"
        )


def rate_against(
    agent: str | Agent,
    reference: str | Agent = "greedy",
    players: int = 2,
    rules: Rules | str = "treppenromme",
    decks: int = 100,
    seed: int = 0,
    workers: int = 1,
    out: str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> Strength:
    """Rate ``agent`` against ``reference`` on duplicate decks.

    :param agent: an agent spec (:func:`treppen.agents.load`) or agent.
    :param reference: the agent rated 0; it also fills the other seats of a table of 3 or 4.
    :param players: seats per table, 2..4.
    :param rules: the rules of every deal.
    :param decks: duplicate decks; ``seed`` picks them (the same seed, the same decks).
    :param workers: worker processes (see :func:`treppen.arena.tournament.run_tournament`).
    :param out: the tournament's folder (``results.jsonl``; rerunning resumes), or None.
    :param progress: show a progress bar.
    :return: the agent's :class:`Strength` against the reference.
    :raises ValueError: as :func:`treppen.arena.tournament.run_tournament`.
    """
    entrants: dict[str, str | Agent] = {"agent": agent, "reference": reference}
    entrants |= {f"reference#{k}": reference for k in range(1, players - 1)}
    records = run_tournament(
        entrants, players=players, decks=decks, seed=seed, rules=rules, workers=workers, out=out, progress=progress
    )
    ratings = fit_ratings(records, anchor="reference", seed=seed)
    i, r = ratings.agents.index("agent"), ratings.agents.index("reference")
    return Strength(
        elo=float(ratings.elo[i]),
        low=float(ratings.ci_low[i]),
        high=float(ratings.ci_high[i]),
        score=float(ratings.score[i, r]),
        likelihood=float(ratings.los[i, r]),
        decks=ratings.n_groups,
        seed=seed,
        deals=ratings.n_deals,
    )


#: The duplicate decks a zoo card is rated on unless it names its own: 100 decks of a seed on which
#: no default or setting of the project was chosen (the defaults were chosen on seed 2026's decks).
CARD_DECKS = {"count": 100, "seed": 9001}


def rating_command(name: str, players: int, rules: str, decks: int, seed: int) -> str:
    """The ``treppen tournament`` command that plays :func:`rate_against`'s tournament of agent ``name``
    against greedy again: the other seats of a table of 3 or 4 are greedy copies.

    ``rating_command("ppo-4p", 4, "treppenromme", 100, 9001)`` is ``treppen tournament --agents ppo-4p
    greedy greedy greedy --players 4 --rules treppenromme --decks 100 --seed 9001``.
    """
    agents = " ".join([name] + ["greedy"] * (players - 1))
    return f"treppen tournament --agents {agents} --players {players} --rules {rules} --decks {decks} --seed {seed}"


def rate_card(
    card: ModelCard,
    decks: int,
    seed: int,
    workers: int = 1,
    out: str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """A zoo card's ``elo`` block (:mod:`treppen.agents.zoo`): its agent rated against greedy at its
    table (:func:`rate_against`), on ``decks`` duplicate decks of ``seed``.

    :param out: the tournament's folder (rerunning resumes), or None.
    :return: :class:`Strength`'s fields, ``decks`` as ``{"count": decks, "seed": seed}`` and the
        ``command`` that plays the rating again (:func:`rating_command`).
    :raises ValueError: as :func:`rate_against`.
    """
    players, rules = card.num_players, card.rules
    strength = rate_against(card.agent_spec(), "greedy", players, rules, decks, seed, workers, out, progress)
    command = rating_command(card.name, players, rules, decks, seed)
    return {**strength.to_dict(), "decks": {"count": decks, "seed": seed}, "command": command}
