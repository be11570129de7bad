"""Elo ratings from tournament match records (pure: no env or agent imports).

This module owns the step from deal records to ratings: the pairwise score and count matrices, a
Bradley-Terry maximum-likelihood fit on the 400-point Elo scale, bootstrap confidence intervals over
whole decks and the likelihood-of-superiority (LOS) matrix.

A record is a dict with ``"deal"`` (deal id), ``"agents"`` (one name per seat) and ``"points"`` (deal
points per seat, same order); an optional ``"deck_id"`` (None = absent) groups duplicate deals that
share one deck.
Every pair of seats held by two different agents is one comparison: higher points scores 1, equal
points 0.5 each. For two players this is the plain win/draw/loss; for 3-4 players it is the "full
rank breaking" of the finishing order (ties share a place), whose Bradley-Terry fit is a consistent
estimator of Plackett-Luce strengths (Azari Soufiani, Parkes and Xia 2014). The pairs of one deal are
not independent, so the intervals come from resampling whole decks, never from the likelihood.

The model is Bradley-Terry (Hunter 2004): ``P(i beats j) = 1 / (1 + exp(theta_j - theta_i))`` with
``elo = 400 / ln(10) * theta``. The maximum-likelihood estimate exists only when the directed graph
"i scored against j" is strongly connected (Hunter 2004, Assumption 1); ``prior > 0`` adds the penalty
``prior * sum(theta**2)`` (choix's ``alpha``) so that agents that won or lost everything stay finite.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np
from scipy.optimize import minimize
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

ELO_PER_NAT = 400.0 / math.log(10.0)
"""Elo points per unit of log-strength (natural log): the usual 400-point logistic scale."""


@dataclass(frozen=True)
class Ratings:
    """Fitted ratings; agents sorted by Elo, best first, and every array in that order.

    :param agents: agent names, by Elo descending (ties by name)
    :param elo: Elo per agent; the anchor agent has 0, or the mean is 0 when ``anchor`` is None
    :param ci_low: lower end of the bootstrap percentile interval (NaN without bootstrap); intervals
        are relative to the anchor, whose own interval is [0, 0]
    :param ci_high: upper end of that interval
    :param games: number of deals each agent took part in
    :param score: ``score[i, j]`` = mean score of agent i against agent j (win 1, draw 0.5) over
        every pair of seats they held in one deal; NaN where they never met
    :param count: ``count[i, j]`` = number of those comparisons
    :param los: ``los[i, j]`` = share of bootstrap fits in which i rates above j (ties count half):
        the likelihood that i is stronger; NaN on the diagonal and without bootstrap
    :param anchor: the agent fixed at Elo 0, or None when the mean Elo is 0
    :param prior: the penalty ``prior * sum(theta**2)`` used in every fit
    :param ci_level: coverage of the interval, e.g. 0.95
    :param n_deals: number of records rated
    :param n_groups: number of decks (bootstrap units)
    :param n_boot: bootstrap fits used; with ``prior=0`` resamples whose estimate is infinite are left out
    """

    agents: tuple[str, ...]
    elo: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    games: np.ndarray
    score: np.ndarray
    count: np.ndarray
    los: np.ndarray
    anchor: str | None
    prior: float
    ci_level: float
    n_deals: int
    n_groups: int
    n_boot: int

    TABLE_COLUMNS: ClassVar[tuple[str, ...]] = ("rank", "agent", "elo", "ci", "games", "score")

    def to_dict(self) -> dict[str, Any]:
        """Return the ratings as plain JSON-ready values (lists; NaN becomes None).

        :return: dict with one key per field
        """

        def plain(a: np.ndarray) -> list[Any]:
            return [plain(x) if isinstance(x, np.ndarray) else (None if np.isnan(x) else x.item()) for x in a]

        out: dict[str, Any] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            out[field.name] = plain(value) if isinstance(value, np.ndarray) else value
        out["agents"] = list(self.agents)
        return out

    def table(self, header: bool = True) -> list[tuple[str, ...]]:
        """Return rows of text for a terminal table, best agent first.

        The ``score`` column is the agent's mean score over all its comparisons.

        :param header: start with a row of column names (``TABLE_COLUMNS``)
        :return: list of rows, each a tuple of strings
        """
        rows = [self.TABLE_COLUMNS] if header else []
        overall = self.score * self.count
        for i, agent in enumerate(self.agents):
            n = self.count[i].sum()
            mean = np.nansum(overall[i]) / n if n else math.nan
            ci = "-" if np.isnan(self.ci_low[i]) else f"[{self.ci_low[i]:+.0f}, {self.ci_high[i]:+.0f}]"
            rows.append((str(i + 1), agent, f"{self.elo[i]:+.0f}", ci, str(self.games[i]), f"{mean:.3f}"))
        return rows


def fit_ratings(
    records: Sequence[dict[str, Any]],
    anchor: str | None = "random",
    require_anchor: bool = False,
    prior: float = 0.01,
    n_boot: int = 1000,
    seed: int | np.random.Generator | None = 0,
    ci_level: float = 0.95,
) -> Ratings:
    """Fit Bradley-Terry ratings on the Elo scale, with bootstrap intervals over whole decks.

    The point estimate and the pairwise matrices do not depend on the order of ``records``; with the
    same ``seed`` neither do the intervals (decks are resampled in sorted order of their ids).

    :param records: deal records, see the module docstring
    :param anchor: agent whose Elo is fixed at 0; if it is absent (or None) the mean Elo is 0 instead
        and ``Ratings.anchor`` is None
    :param require_anchor: raise instead of falling back when ``anchor`` is absent
    :param prior: penalty ``prior * sum(theta**2)`` on log-strengths (choix's ``alpha``); 0 gives the
        exact maximum-likelihood estimate, which needs every agent to have both scored and conceded
        points against the rest (strongly connected results)
    :param n_boot: number of bootstrap resamples of decks; 0 skips intervals and LOS
    :param seed: seed or Generator for the bootstrap
    :param ci_level: coverage of the percentile interval, in (0, 1)
    :return: the fitted ratings
    :raises ValueError: on malformed records, fewer than 2 agents, a missing required anchor, bad
        parameters, or ``prior=0`` results whose maximum-likelihood estimate is infinite
    """
    if prior < 0 or n_boot < 0 or not 0 < ci_level < 1:
        raise ValueError(
            f"need prior >= 0, n_boot >= 0 and 0 < ci_level < 1; got prior={prior}, "
            f"n_boot={n_boot}, ci_level={ci_level}"
        )
    names, group_keys, group_wins, games = _tabulate(records)
    if anchor is not None and anchor not in names and require_anchor:
        raise ValueError(f"anchor {anchor!r} played no deal; agents are {names}. Pass anchor=None for mean 0.")
    anchor_idx = names.index(anchor) if anchor in names else None
    wins = group_wins.sum(axis=0)
    if prior == 0 and not _strongly_connected(wins):
        raise ValueError(
            "the maximum-likelihood ratings are infinite: some agents won (or lost) every comparison "
            "against the rest, or never met them (Hunter 2004, Assumption 1). Use prior > 0, e.g. 0.01."
        )
    theta = _fit_theta(wins, prior)
    elo = _anchored(theta, anchor_idx)

    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        weights = np.bincount(rng.integers(0, len(group_keys), len(group_keys)), minlength=len(group_keys))
        w = np.tensordot(weights.astype(float), group_wins, axes=1)
        if prior > 0 or _strongly_connected(w):
            boots.append(_anchored(_fit_theta(w, prior, start=theta), anchor_idx))
    n = len(names)
    if boots:
        b = np.array(boots)
        tail = 100 * (1 - ci_level) / 2
        ci_low, ci_high = np.percentile(b, [tail, 100 - tail], axis=0)
        diff = b[:, :, None] - b[:, None, :]
        los = (diff > 0).mean(axis=0) + 0.5 * (diff == 0).mean(axis=0)
        np.fill_diagonal(los, np.nan)
    else:
        ci_low = ci_high = np.full(n, np.nan)
        los = np.full((n, n), np.nan)

    count = np.rint(wins + wins.T).astype(int)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(count > 0, wins / count, np.nan)
    order = sorted(range(n), key=lambda i: (-elo[i], names[i]))
    grid = np.ix_(order, order)
    return Ratings(
        agents=tuple(names[i] for i in order),
        elo=elo[order],
        ci_low=ci_low[order],
        ci_high=ci_high[order],
        games=games[order],
        score=score[grid],
        count=count[grid],
        los=los[grid],
        anchor=anchor if anchor_idx is not None else None,
        prior=float(prior),
        ci_level=float(ci_level),
        n_deals=len(records),
        n_groups=len(group_keys),
        n_boot=len(boots),
    )


def _tabulate(records: Sequence[dict[str, Any]]) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Check records and sum them into per-deck score matrices.

    :return: sorted agent names, sorted deck keys, ``wins[g, i, j]`` = score of i against j in deck g,
        and the number of deals per agent
    :raises ValueError: on a malformed record or fewer than 2 agents
    """
    pairs: list[tuple[str, list[str], list[float]]] = []
    for k, rec in enumerate(records):
        if not isinstance(rec, dict) or not {"deal", "agents", "points"} <= rec.keys():
            raise ValueError(f"record {k} must be a dict with keys 'deal', 'agents', 'points'; got {rec!r}")
        agents, points = list(rec["agents"]), list(rec["points"])
        if len(agents) != len(points) or len(agents) < 2:
            raise ValueError(
                f"record {k} (deal {rec['deal']!r}) needs one points entry per seat and at least 2 seats; "
                f"got {len(agents)} agents {agents} and {len(points)} points {points}"
            )
        if not all(isinstance(a, str) for a in agents):
            raise ValueError(f"record {k} (deal {rec['deal']!r}): agent names must be strings, got {agents}")
        try:
            values = [float(p) for p in points]
        except (TypeError, ValueError):
            msg = f"record {k} (deal {rec['deal']!r}): points must be numbers, got {points}"
            raise ValueError(msg) from None
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"record {k} (deal {rec['deal']!r}): points must be finite, got {points}")
        pairs.append((_group_key(rec), agents, values))
    names = sorted({a for _, agents, _ in pairs for a in agents})
    if len(names) < 2:
        raise ValueError(f"need at least 2 distinct agents to rate; got {names} in {len(records)} records")
    index = {a: i for i, a in enumerate(names)}
    keys = sorted({key for key, _, _ in pairs})
    gindex = {key: g for g, key in enumerate(keys)}
    wins = np.zeros((len(keys), len(names), len(names)))
    games = np.zeros(len(names), dtype=int)
    for key, agents, values in pairs:
        w = wins[gindex[key]]
        for a in set(agents):
            games[index[a]] += 1
        for s in range(len(agents)):
            for t in range(s + 1, len(agents)):
                i, j = index[agents[s]], index[agents[t]]
                if i != j:
                    result = 1.0 if values[s] > values[t] else 0.0 if values[s] < values[t] else 0.5
                    w[i, j] += result
                    w[j, i] += 1.0 - result
    return names, keys, wins, games


def _group_key(rec: dict[str, Any]) -> str:
    """Return the bootstrap unit of a record: its ``deck_id`` if given (not None), else its ``deal``."""
    deck = rec.get("deck_id")
    value: Hashable = rec["deal"] if deck is None else deck
    return f"{'deal' if deck is None else 'deck'}:{type(value).__name__}:{value!r}"


def _strongly_connected(wins: np.ndarray) -> bool:
    """Whether the graph with an edge i -> j when i scored against j is strongly connected."""
    n_comp, _ = connected_components(wins > 0, directed=True, connection="strong")
    return bool(n_comp == 1)


def _fit_theta(wins: np.ndarray, prior: float, start: np.ndarray | None = None) -> np.ndarray:
    """Maximise the penalised Bradley-Terry log-likelihood of a score matrix.

    The term ``0.5 * sum(theta)**2`` only fixes the free shift (its gradient is 0 at the optimum, where
    the penalised solution already has mean 0), so the Hessian is positive definite.

    :param wins: ``wins[i, j]`` = score of i against j (fractional for draws)
    :param prior: penalty ``prior * sum(theta**2)``
    :param start: initial log-strengths (zeros if None)
    :return: log-strengths with mean 0
    """
    count = wins + wins.T
    row_wins = wins.sum(axis=1)

    def fun(theta: np.ndarray) -> float:
        d = theta[:, None] - theta[None, :]
        nll = float(np.sum(wins * np.logaddexp(0.0, -d)))
        return nll + prior * float(theta @ theta) + 0.5 * float(theta.sum()) ** 2

    def jac(theta: np.ndarray) -> np.ndarray:
        p = expit(theta[:, None] - theta[None, :])
        return (count * p).sum(axis=1) - row_wins + 2 * prior * theta + theta.sum()

    def hess(theta: np.ndarray) -> np.ndarray:
        p = expit(theta[:, None] - theta[None, :])
        h = -count * p * (1 - p)
        np.fill_diagonal(h, 0.0)
        np.fill_diagonal(h, -h.sum(axis=1))
        return h + 2 * prior * np.eye(len(theta)) + 1.0

    x0 = np.zeros(len(row_wins)) if start is None else start
    theta = minimize(fun, x0, jac=jac, hess=hess, method="trust-exact", options={"gtol": 1e-8}).x
    # trust-exact may stop where rounding in ``fun`` hides further progress; two plain Newton steps
    # (quadratic convergence near the optimum) polish the estimate to machine precision.
    for _ in range(2):
        theta = theta - np.linalg.solve(hess(theta), jac(theta))
    assert np.abs(jac(theta)).max() <= 1e-7 * max(1.0, count.sum()), "Bradley-Terry fit did not converge"
    return theta - theta.mean()


def _anchored(theta: np.ndarray, anchor_idx: int | None) -> np.ndarray:
    """Convert log-strengths to Elo with the anchor at 0 (or the mean at 0 when there is none)."""
    elo = ELO_PER_NAT * theta
    return elo - (elo[anchor_idx] if anchor_idx is not None else elo.mean())
