"""How well beliefs about the unseen cards predict where they lie (a benchmark, not a test): the mean
log-loss per unseen card of the uniform deal, of ``beliefs=greedy`` (deals weighted by a greedy
opponent model, :mod:`treppen_env.agent_core.belief_kernels`) and of the belief net
(``beliefs=net``, :mod:`treppen_env.agent_core.belief_net_kernels`), on the same positions (every
turn's start of 2-player ``treppenromme`` deals of greedy against greedy,
:func:`treppen.agents.belief_quality.watch_deals`), by phase of the deal; and their calibration: the
reliability table of each (predictions in ten bins of probability against the share of those cards
the opponent held) and its expected calibration error. The greedy beliefs are counted over
``--samples`` deals.

``python benchmarks/bench_beliefs.py --deals 30 --seed 7301`` writes
``benchmarks/results/bench_beliefs.json`` and prints both tables.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from harness import RESULTS, write

from treppen.agents.belief_net import DEFAULT_FILE
from treppen.agents.belief_quality import calibration, log_loss, watch_deals
from treppen.train.belief_net_torch import PHASES

BELIEFS = ("uniform", "greedy", "net")


def bins(values: np.ndarray) -> list[float | None]:
    """A reliability column for JSON: an empty bin's NaN as null."""
    return [None if math.isnan(v) else v for v in values.tolist()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_beliefs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7301)
    parser.add_argument("--samples", type=int, default=400, help="deals the greedy beliefs are counted over")
    parser.add_argument("--belief-net", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_beliefs.json")
    args = parser.parse_args(argv)
    if args.deals < 1 or args.samples < 1 or args.seed < 0:
        parser.error("--deals and --samples must be 1 or more, --seed 0 or more")
    turns = watch_deals(args.deals, args.seed, args.belief_net, greedy_samples=args.samples)
    table = np.array([(t.turn, *(log_loss(t.predicted[b], t.in_hand) for b in BELIEFS)) for t in turns])
    bounds = [*PHASES.values(), math.inf]
    phases = {}
    print("| phase | positions | uniform | greedy | net | greedy / uniform | net / uniform |")
    print("|---|---|---|---|---|---|---|")
    for (name, low), high in [*zip(PHASES.items(), bounds[1:], strict=True), (("all", 0), math.inf)]:
        pick = (table[:, 0] >= low) & (table[:, 0] < high)
        uniform, greedy, learned = table[pick, 1:].mean(axis=0)
        phases[name] = {"positions": int(pick.sum()), "uniform": uniform, "greedy": greedy, "net": learned}
        print(f"| {name} | {pick.sum()} | {uniform:.4f} | {greedy:.4f} | {learned:.4f} | "
              f"{greedy / uniform:.3f} | {learned / uniform:.3f} |")  # fmt: skip
    truth = np.concatenate([t.in_hand for t in turns])
    reliability = {b: calibration(np.concatenate([t.predicted[b] for t in turns]), truth) for b in BELIEFS}
    print("\n| bin | " + " | ".join(f"{b}: predicted, observed (cards)" for b in BELIEFS) + " |")
    print("|---|" + "---|" * len(BELIEFS))
    for k in range(10):
        cells = [
            f"{r.predicted[k]:.3f}, {r.observed[k]:.3f} ({r.counts[k]})" if r.counts[k] else "-"
            for r in reliability.values()
        ]
        print(f"| {k / 10:.1f}-{(k + 1) / 10:.1f} | " + " | ".join(cells) + " |")
    print("| calibration error | " + " | ".join(f"{r.error:.4f}" for r in reliability.values()) + " |")
    calibrations = {
        b: {"error": r.error, "counts": r.counts.tolist(), "predicted": bins(r.predicted), "observed": bins(r.observed)}
        for b, r in reliability.items()
    }
    write(args.out, {"deals": args.deals, "seed": args.seed, "samples": args.samples, "phases": phases,
                     "calibration": calibrations})  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
