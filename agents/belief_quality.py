"""How well beliefs about the unseen cards predict where they lie: the turns of watched deals, with the
truth and each belief's probabilities, their log-loss and their calibration. Used by
``benchmarks/bench_beliefs.py`` (the agents guide's figures) and ``notebooks/04_move_analysis.ipynb``.

The deals are 2-player ``treppenromme``, greedy against greedy; at each turn's start (RULES §4.1) the
player to move, whose :class:`~treppen_env.history.History` watched the deal from its start, holds
beliefs about each card it cannot see: in the opponent's hand, or in the stock.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from treppen.agents.belief_net import DEFAULT_FILE, load_belief_net
from treppen.agents.greedy import GreedyAgent
from treppen.agents.search import RolloutAgent
from treppen_env import raw_env
from treppen_env.agent_core import belief_net_kernels
from treppen_env.agent_core.belief_kernels import IN_STOCK
from treppen_env.cards import bits_to_cards
from treppen_env.determinize import sample_state


@dataclass(frozen=True)
class WatchedTurn:
    """One turn's start, seen by the player to move.

    :param turn: the deal's turn (0 first).
    :param in_hand: bool (m,): for each unseen card (ascending), whether the opponent holds it (else
        it is in the stock): the truth.
    :param predicted: float64 (m,) by belief name (``uniform``, ``net``, and ``greedy`` when counted):
        the probability that the opponent holds each unseen card.
    """

    turn: int
    in_hand: np.ndarray
    predicted: dict[str, np.ndarray]


def watch_deals(
    deals: int, seed: int, belief_net: str | os.PathLike[str] = DEFAULT_FILE, greedy_samples: int = 0
) -> list[WatchedTurn]:
    """Play ``deals`` deals (seeds ``seed``, ``seed + 1``, ...) of greedy against greedy and give
    every turn's start with the uniform deal's and the belief net's probabilities, and with
    ``beliefs="greedy"``'s counted over ``greedy_samples`` deals when that is positive (kept inside
    ``[1 / (2 greedy_samples), 1 - 1 / (2 greedy_samples)]``, so that no count of 0 is certain).

    :raises ValueError: when ``deals``, ``seed`` or ``greedy_samples`` is not a whole number of 0 or more.
    :raises FileNotFoundError: when there is no belief net at ``belief_net``.
    """
    for name, value in (("deals", deals), ("seed", seed), ("greedy_samples", greedy_samples)):
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name}={value!r} must be a whole number of 0 or more")
    net, _ = load_belief_net(belief_net)
    floor = 1 / (2 * greedy_samples) if greedy_samples else 0.0
    turns: list[WatchedTurn] = []
    for k in range(deals):
        env = raw_env(num_players=2)
        env.reset(seed=seed + k)
        players = [GreedyAgent(), GreedyAgent()]
        watchers = [RolloutAgent(seed=k, beliefs="greedy"), RolloutAgent(seed=k, beliefs="greedy")]
        while not env.game.deal_over:
            state, seat = env.game, env.game.current
            obs = env.observe(env.agent_selection)
            watcher = watchers[seat]
            watcher.history.observe(obs, state.known[seat])
            if state.phase.name == "DRAW":
                hidden = state.hands[1 - seat] & ~state.known[1 - seat]
                unseen = sorted(set(bits_to_cards(hidden)) | set(state.stock))
                known = bits_to_cards(state.known[seat])
                root = sample_state(obs, state.rules, np.random.default_rng(0), known)
                probs = belief_net_kernels.card_probabilities(net, root.arrays(), 0, watcher.history.table)
                predicted = {
                    "uniform": np.full(len(unseen), hidden.bit_count() / len(unseen)),
                    "net": 1.0 - probs[unseen, IN_STOCK],
                }
                if greedy_samples:
                    counted = watcher.card_beliefs(obs, known, samples=greedy_samples)[1][unseen]
                    predicted["greedy"] = np.clip(counted, floor, 1 - floor)
                in_hand = np.array([hidden >> c & 1 for c in unseen], dtype=bool)
                turns.append(WatchedTurn(state.turn, in_hand, predicted))
            action = players[seat].act(obs)
            watcher.history.acted(action)
            env.step(action)
    return turns


def _checked(p_hand: np.ndarray, in_hand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``p_hand`` as float64 (m,) in [0, 1] and ``in_hand`` as bool (m,), m >= 1; else ValueError."""
    p, truth = np.asarray(p_hand, dtype=np.float64), np.asarray(in_hand)
    if p.ndim != 1 or p.shape != truth.shape or not p.size:
        raise ValueError(f"need predictions and truths of one equal length >= 1, not {p.shape} and {truth.shape}")
    if truth.dtype != np.bool_:
        raise ValueError(f"the truths must be bool (in the opponent's hand or not), not {truth.dtype}")
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError("the predictions must be probabilities in [0, 1]")
    return p, truth


def log_loss(p_hand: np.ndarray, in_hand: np.ndarray) -> float:
    """The mean log-loss (nats per card) of cards each in the opponent's hand with probability
    ``p_hand`` (float64 (m,), in [0, 1]; a certain miss costs ``inf``), else in the stock;
    ``in_hand`` (bool (m,)) is the truth.

    :raises ValueError: for arrays of other shapes or types, or predictions outside [0, 1].
    """
    p, truth = _checked(p_hand, in_hand)
    with np.errstate(divide="ignore"):
        return float(-np.mean(np.log(np.where(truth, p, 1.0 - p))))


@dataclass(frozen=True)
class Calibration:
    """A reliability table: predictions grouped into equal-width bins of probability.

    :param predicted: float64 (bins,): the mean predicted probability in each bin (NaN when empty).
    :param observed: float64 (bins,): the share of its cards that were in the opponent's hand (NaN
        when empty).
    :param counts: int64 (bins,): the cards in each bin.
    """

    predicted: np.ndarray
    observed: np.ndarray
    counts: np.ndarray

    @property
    def error(self) -> float:
        """The expected calibration error: the mean over cards of ``|observed - predicted|`` of
        their bin (0 when every bin's share matches its mean prediction)."""
        full = self.counts > 0
        gaps = np.abs(self.observed[full] - self.predicted[full])
        return float(np.sum(gaps * self.counts[full]) / np.sum(self.counts))


def calibration(p_hand: np.ndarray, in_hand: np.ndarray, bins: int = 10) -> Calibration:
    """The reliability table of predictions ``p_hand`` (float64 (m,), in [0, 1]) against the truth
    ``in_hand`` (bool (m,)), over ``bins`` equal bins of [0, 1] (the last one closed).

    :raises ValueError: when ``bins`` is not a whole number of 1 or more, or as :func:`log_loss`.
    """
    if not isinstance(bins, int | np.integer) or isinstance(bins, bool) or bins < 1:
        raise ValueError(f"bins={bins!r} must be a whole number of 1 or more")
    p, truth = _checked(p_hand, in_hand)
    which = np.minimum((p * bins).astype(np.int64), bins - 1)
    counts = np.bincount(which, minlength=bins)
    with np.errstate(invalid="ignore"):
        predicted = np.bincount(which, weights=p, minlength=bins) / counts
        observed = np.bincount(which, weights=truth.astype(np.float64), minlength=bins) / counts
    return Calibration(predicted, observed, counts)
