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

Where the data do not bound a rating, the prior alone sets its value, so no interval is derived from
it: a rating is unbounded above when the maximum-likelihood estimate lets it grow without limit
relative to the reference (the anchor, or the other agents when the mean is 0). That is when a
reference agent cannot reach it in the graph "i scored against j": nobody in the reference's part of
the results ever scored against it, even through intermediaries. Unbounded below is the mirror
image. In each bootstrap resample such a rating counts as +inf (or -inf), so an interval end that
more than the tail's share of resamples leave open is infinite, and reported as unbounded.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from treppen.arena.scale import SCALE_ANCHOR, elo_text, interval_text

ELO_PER_NAT = 400.0 / math.log(10.0)
"""Elo points per unit of log-strength (natural log): the usual 400-point logistic scale."""


@dataclass(frozen=True)
class Ratings:
    """Fitted ratings; agents sorted by Elo, best first, and every array in that order.

    :param agents: agent names, by Elo descending (ties by name)
    :param elo: Elo per agent; the anchor agent has 0, or the mean is 0 when ``anchor`` is None
    :param ci_low: lower end of the bootstrap percentile interval (NaN without bootstrap); intervals
        are relative to the anchor, whose own interval is [0, 0]. ``-inf`` where the data do not bound
        the rating below (see the module docstring); ``+inf`` where most resamples leave it unbounded
        above, so that neither end is finite.
    :param ci_high: upper end of that interval; ``+inf`` where the data do not bound it above
        (``-inf`` in the mirror case of ``ci_low = +inf``)
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
    :param anchor_spec: the spec the anchor plays, where the caller knows it and it is not the anchor's
        name (the level ``easy`` plays ``greedy``): :attr:`scale` names both
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
    anchor_spec: str | None = None

    TABLE_COLUMNS: ClassVar[tuple[str, ...]] = ("rank", "agent", "elo", "ci", "games", "score")
    #: What the ``score`` column of :meth:`table` means.
    SCORE_NOTE: ClassVar[str] = "score: mean result against each other seat of a deal (more points 1, equal 0.5)"
    #: What an open interval in :meth:`table` means.
    UNBOUNDED_NOTE: ClassVar[str] = (
        "> x, < x, unbounded: the data do not bound that side (in too many deck resamples the agent "
        "won, or lost, every comparison linking it to the rest)"
    )

    @property
    def scale(self) -> str:
        """Where the scale's zero lies, for titles: ``"greedy = 0"`` (the anchor), ``"greedy = 0 (easy)"``
        (an anchor named otherwise, with its :attr:`anchor_spec`) or ``"mean = 0"``."""
        if self.anchor is None:
            return "mean = 0"
        if self.anchor_spec in (None, self.anchor):
            return f"{self.anchor} = 0"
        return f"{self.anchor_spec} = 0 ({self.anchor})"

    @property
    def unbounded(self) -> tuple[str | None, ...]:
        """Per agent, which side of its interval the data leave open: ``"above"`` (``ci_high`` is
        +inf), ``"below"`` (``ci_low`` is -inf), ``"both"``, or None (a finite interval, or none)."""
        sides = []
        for low, high in zip(self.ci_low, self.ci_high, strict=True):
            above = high == math.inf or low == math.inf
            below = low == -math.inf or high == -math.inf
            sides.append("both" if above and below else "above" if above else "below" if below else None)
        return tuple(sides)

    @property
    def mean_score(self) -> np.ndarray:
        """Per agent, the mean score over all its comparisons (NaN without any), float (n,)."""
        n = self.count.sum(axis=1)
        with np.errstate(invalid="ignore"):
            return np.where(n > 0, np.nansum(self.score * self.count, axis=1) / np.maximum(n, 1), math.nan)

    @property
    def ranks(self) -> tuple[int, ...]:
        """Competition ranks ("1224"): agents whose Elo ties (within 1e-6) share the better rank."""
        ranks: list[int] = []
        for i, elo in enumerate(self.elo):
            tied = i > 0 and math.isclose(elo, self.elo[i - 1], rel_tol=0.0, abs_tol=1e-6)
            ranks.append(ranks[-1] if tied else i + 1)
        return tuple(ranks)

    def to_dict(self) -> dict[str, Any]:
        """Return the ratings as plain JSON-ready values (lists; NaN and infinite ends become None).

        An interval end the data do not bound is None, and ``unbounded`` (see :attr:`unbounded`) says
        which side is open; :meth:`from_dict` reads it back.

        :return: dict with one key per field, plus ``unbounded``
        """

        def plain(a: np.ndarray) -> list[Any]:
            return [plain(x) if isinstance(x, np.ndarray) else (x.item() if np.isfinite(x) else None) for x in a]

        out: dict[str, Any] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            out[field.name] = plain(value) if isinstance(value, np.ndarray) else value
        out["agents"] = list(self.agents)
        out["unbounded"] = list(self.unbounded)
        return out

    def table(self, header: bool = True) -> list[tuple[str, ...]]:
        """Return rows of text for a terminal table, best agent first.

        ``rank`` is shared by tied Elo values; ``ci`` is ``[low, high]``, ``> low`` or ``< high`` when
        one side is unbounded, ``unbounded`` when neither end is finite, ``-`` without bootstrap;
        ``score`` is the agent's mean score over all its comparisons (:attr:`SCORE_NOTE`).

        :param header: start with a row of column names (``TABLE_COLUMNS``)
        :return: list of rows, each a tuple of strings
        """
        rows = [self.TABLE_COLUMNS] if header else []
        columns = (self.ranks, self.agents, self.elo, self.ci_low, self.ci_high, self.games, self.mean_score)
        for rank, agent, elo, low, high, games, score in zip(*columns, strict=True):
            ci = "anchor" if agent == self.anchor else interval_text(low, high)  # fixed at 0: no interval
            rows.append((str(rank), agent, elo_text(elo), ci, str(games), f"{score:.3f}"))
        return rows

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Ratings:
        """Rebuild ratings from :meth:`to_dict` output (null becomes NaN, or an infinite end where
        ``unbounded`` says that side is open). Keys that are not fields (e.g. ``specs``) are ignored.

        :raises KeyError: when a field without a default is missing (files written before
            ``anchor_spec`` read without it).
        """
        kwargs: dict[str, Any] = {}
        for field in fields(cls):
            value = data[field.name] if field.name in data or field.default is MISSING else field.default
            if field.name == "agents":
                value = tuple(value)
            elif field.name in ("games", "count"):
                value = np.asarray(value, dtype=int)
            elif isinstance(value, list):
                value = np.asarray(value, dtype=float)  # None -> nan
            kwargs[field.name] = value
        low, high = kwargs["ci_low"], kwargs["ci_high"]
        for k, side in enumerate(data.get("unbounded") or ()):
            if side is not None:  # a null end on an open side is infinite (see ``unbounded``)
                fill_low, fill_high = _OPEN_ENDS[side]
                low[k] = fill_low if np.isnan(low[k]) else low[k]
                high[k] = fill_high if np.isnan(high[k]) else high[k]
        return cls(**kwargs)


#: The value of a missing (null) interval end for each open side: ``above`` with both ends at +inf
#: when no resample bounds the rating, likewise ``below``.
_OPEN_ENDS = {"above": (math.inf, math.inf), "below": (-math.inf, -math.inf), "both": (-math.inf, math.inf)}


#: The agents a tournament's scale is anchored at, the first that played: greedy (:data:`SCALE_ANCHOR`),
#: else random (a table without greedy cannot be on the one scale; its title says so).
REFERENCE_ANCHORS = (SCALE_ANCHOR, "random")


def reference_anchor(names: Sequence[str]) -> str | None:
    """The agent of ``names`` to fix at Elo 0: ``greedy``, else ``random``, else None (mean 0)."""
    return next((a for a in REFERENCE_ANCHORS if a in names), None)


def fit_ratings(
    records: Sequence[dict[str, Any]],
    anchor: str | None = SCALE_ANCHOR,
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
    boots, lows, highs = [], [], []
    for _ in range(n_boot):
        weights = np.bincount(rng.integers(0, len(group_keys), len(group_keys)), minlength=len(group_keys))
        w = np.tensordot(weights.astype(float), group_wins, axes=1)
        if prior > 0 or _strongly_connected(w):
            elo_b = _anchored(_fit_theta(w, prior, start=theta), anchor_idx)
            above, below = _unbounded(w, anchor_idx)
            boots.append(elo_b)
            # an open side is the maximum-likelihood value; open on both sides counts against both ends
            lows.append(np.where(below, -math.inf, np.where(above, math.inf, elo_b)))
            highs.append(np.where(above, math.inf, np.where(below, -math.inf, elo_b)))
    n = len(names)
    if boots:
        b = np.array(boots)
        tail = 100 * (1 - ci_level) / 2
        # nearest ranks outward rather than interpolation: they stay defined next to infinite values
        ci_low = np.percentile(np.array(lows), tail, axis=0, method="lower")
        ci_high = np.percentile(np.array(highs), 100 - tail, axis=0, method="higher")
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


def _reach(wins: np.ndarray) -> np.ndarray:
    """``reach[i, j]``: whether j is reachable from i in the graph with an edge i -> j when i scored
    against j (every agent reaches itself), bool (n, n)."""
    reach = (wins > 0) | np.eye(len(wins), dtype=bool)
    for _ in range(max(1, (len(wins) - 1).bit_length())):  # paths of length 2, 4, ... >= n - 1
        reach = (reach.astype(np.int64) @ reach.astype(np.int64)) > 0
    return reach


def _strongly_connected(wins: np.ndarray) -> bool:
    """Whether the graph with an edge i -> j when i scored against j is strongly connected."""
    return bool(_reach(wins).all())


def _unbounded(wins: np.ndarray, anchor_idx: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Which Elo ratings the data leave unbounded above and below, bool (n,) each.

    Relative to the anchor, i is unbounded above exactly when the anchor cannot reach i: raising i
    together with every agent that reaches i then never lowers the likelihood (nobody outside that
    group ever scored against it), while along a path anchor -> ... -> i each step bounds the rise.
    With the mean as reference, i is unbounded above when some agent cannot reach it, and below when
    it cannot reach some agent.
    """
    reach = _reach(wins)
    if anchor_idx is None:
        reached_by_all, reaches_all = reach.all(axis=0), reach.all(axis=1)
    else:
        reached_by_all, reaches_all = reach[anchor_idx, :], reach[:, anchor_idx]
    return np.logical_not(reached_by_all), np.logical_not(reaches_all)


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
