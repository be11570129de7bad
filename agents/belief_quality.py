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

    :raises ValueError: when ``deals`` or ``greedy_samples`` is negative.
    :raises FileNotFoundError: when there is no belief net at ``belief_net``.
    """
    if deals < 0 or greedy_samples < 0:
        raise ValueError(f"deals and greedy_samples must be 0 or more, not {deals} and {greedy_samples}")
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


def log_loss(p_hand: np.ndarray, in_hand: np.ndarray) -> float:
    """The mean log-loss (nats per card) of cards each in the opponent's hand with probability
    ``p_hand`` (float64 (m,), inside (0, 1)), else in the stock; ``in_hand`` (bool (m,)) is the truth."""
    return float(-np.mean(np.log(np.where(in_hand, p_hand, 1.0 - p_hand))))


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

    :raises ValueError: when ``bins`` is under 1 or the arrays differ in length or are empty.
    """
    if bins < 1 or len(p_hand) != len(in_hand) or not len(p_hand):
        raise ValueError(f"need bins >= 1 and as many truths as predictions, at least one: {bins}, "
                         f"{len(p_hand)}, {len(in_hand)}")  # fmt: skip
    which = np.minimum((np.asarray(p_hand) * bins).astype(np.int64), bins - 1)
    counts = np.bincount(which, minlength=bins)
    with np.errstate(invalid="ignore"):
        predicted = np.bincount(which, weights=p_hand, minlength=bins) / counts
        observed = np.bincount(which, weights=in_hand.astype(np.float64), minlength=bins) / counts
    return Calibration(predicted, observed, counts)
