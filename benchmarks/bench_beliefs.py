"""How well beliefs about the unseen cards predict where they lie (a benchmark, not a test): the mean
log-loss per unseen card of the uniform deal, of ``beliefs=greedy`` (deals weighted by a greedy
opponent model, :mod:`treppen_env.agent_core.belief_kernels`) and of the belief net
(``beliefs=net``, :mod:`treppen_env.agent_core.belief_net_kernels`), on the same positions: every
turn's start of 2-player ``treppenromme`` deals of greedy against greedy, seen by the player to
move, whose :class:`~treppen_env.history.History` watched the deal from its start. The greedy
beliefs are counted over ``--samples`` deals (:meth:`treppen.agents.search.SearchAgent.card_beliefs`),
their probabilities kept inside ``[1 / (2 samples), 1 - 1 / (2 samples)]``.

``python benchmarks/bench_beliefs.py --deals 30 --seed 7301`` writes
``benchmarks/results/bench_beliefs.json`` and prints a table by phase of the deal.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from harness import RESULTS, write

from treppen.agents import GreedyAgent, RolloutAgent
from treppen.agents.belief_net import DEFAULT_FILE, load_belief_net
from treppen.train.belief_net_torch import PHASES
from treppen_env import raw_env
from treppen_env.agent_core import belief_net_kernels
from treppen_env.agent_core.belief_kernels import IN_STOCK
from treppen_env.cards import bits_to_cards
from treppen_env.determinize import sample_state


def card_losses(p_hand: np.ndarray, in_hand: np.ndarray) -> float:
    """The mean log-loss of the unseen cards' places, each card in the opponent's hand with
    probability ``p_hand`` (float64 (m,)), else in the stock; ``in_hand`` (bool (m,)) is the truth."""
    return float(-np.mean(np.log(np.where(in_hand, p_hand, 1.0 - p_hand))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_beliefs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7301)
    parser.add_argument("--samples", type=int, default=400, help="deals the greedy beliefs are counted over")
    parser.add_argument("--belief-net", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_beliefs.json")
    args = parser.parse_args(argv)
    net, _ = load_belief_net(args.belief_net)
    rows: list[tuple[int, float, float, float]] = []  # turn, uniform, greedy, net
    floor = 1 / (2 * args.samples)
    for k in range(args.deals):
        env = raw_env(num_players=2)
        env.reset(seed=args.seed + k)
        players = [GreedyAgent(), GreedyAgent()]
        watchers = [RolloutAgent(seed=k, beliefs="greedy"), RolloutAgent(seed=k, beliefs="greedy")]
        while not env.game.deal_over:
            state, seat = env.game, env.game.current
            obs = env.observe(env.agent_selection)
            watcher = watchers[seat]
            watcher.history.observe(obs, state.known[seat])
            if state.phase.name == "DRAW":
                other = 1 - seat
                known = bits_to_cards(state.known[seat])
                hidden = state.hands[other] & ~state.known[other]
                unseen = sorted(set(bits_to_cards(hidden)) | set(state.stock))
                in_hand = np.array([hidden >> c & 1 for c in unseen], dtype=bool)
                uniform = np.full(len(unseen), hidden.bit_count() / len(unseen))
                greedy = np.clip(watcher.card_beliefs(obs, known, samples=args.samples)[1][unseen], floor, 1 - floor)
                root = sample_state(obs, state.rules, np.random.default_rng(0), known)
                probs = belief_net_kernels.card_probabilities(net, root.arrays(), 0, watcher.history.table)
                learned = 1.0 - probs[unseen, IN_STOCK]
                losses = [card_losses(p, in_hand) for p in (uniform, greedy, learned)]
                rows.append((state.turn, *losses))
            action = players[seat].act(obs)
            watcher.history.acted(action)
            env.step(action)
    table = np.array(rows)
    bounds = [*PHASES.values(), math.inf]
    report = {}
    print("| phase | positions | uniform | greedy | net | greedy / uniform | net / uniform |")
    print("|---|---|---|---|---|---|---|")
    for (name, low), high in [*zip(PHASES.items(), bounds[1:], strict=True), (("all", 0), math.inf)]:
        pick = (table[:, 0] >= low) & (table[:, 0] < high)
        uniform, greedy, learned = table[pick, 1:].mean(axis=0)
        report[name] = {"positions": int(pick.sum()), "uniform": uniform, "greedy": greedy, "net": learned}
        print(f"| {name} | {pick.sum()} | {uniform:.4f} | {greedy:.4f} | {learned:.4f} | "
              f"{greedy / uniform:.3f} | {learned / uniform:.3f} |")  # fmt: skip
    write(args.out, {"deals": args.deals, "seed": args.seed, "samples": args.samples, "phases": report})
    return 0


if __name__ == "__main__":
    sys.exit(main())
