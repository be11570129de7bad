"""The kernels' network's cost per evaluation (a benchmark, not a test): microseconds of one CPU
for the hidden units, the policy's logits of the legal actions and the value, from observations of
mid-deal positions, at the layer shapes the configs use (target: 20 µs or less, so that a playout
stays cheap). Usage: ``python benchmarks/bench_net.py [--positions 200] [--repeats 50]``."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from treppen.agents import GreedyAgent
from treppen.train.kernel_net import KernelNet
from treppen_env import raw_env
from treppen_env.agent_core import net as N
from treppen_env.core.cache import kernel
from treppen_env.files import atomic_write_text

SHAPES = ((32, 1), (64, 1), (64, 2))


@kernel
def evaluate_all(w, shape, data, repeats, work) -> float:
    """Every position's hidden units, legal logits and value, ``repeats`` times; their sum
    (``data``: :func:`positions`; ``work``: the scratch ``(h, scratch, logits)``)."""
    obs, masks, u64s, seats = data
    h, scratch, logits = work
    total = 0.0
    for _ in range(repeats):
        for i in range(obs.shape[0]):
            N.hidden_units(w, shape, obs[i], h, scratch)
            N.policy_logits(w, shape, h, masks[i], logits)
            total += N.value(w, shape, h, u64s[i], seats[i], 2)
    return total


def positions(count: int) -> tuple[np.ndarray, ...]:
    obs, masks, u64s, seats = [], [], [], []
    seed = 0
    while len(obs) < count:
        env = raw_env(num_players=2)
        env.reset(seed=seed)
        greedy = GreedyAgent()
        while not env.game.deal_over and len(obs) < count:
            o = env.observe(env.agent_selection)
            obs.append(o["observation"])
            masks.append(o["action_mask"])
            u64s.append(env.game.arrays()[0].copy())
            seats.append(env.game.current)
            env.step(greedy.act(o))
        seed += 1
    return np.stack(obs), np.stack(masks), np.stack(u64s), np.array(seats, dtype=np.int64)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_net", description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--out", default="runs/bench/bench_net.json")
    args = parser.parse_args(argv)
    data = positions(args.positions)
    results = {}
    for hidden, depth in SHAPES:
        torch.manual_seed(0)
        w, shape = KernelNet(hidden, depth).export()
        h, scratch, logits = np.zeros(hidden, np.float32), np.zeros(hidden, np.float32), np.zeros(N.NUM_ACTIONS)
        evaluate_all(w, shape, data, 1, (h, scratch, logits))  # compile
        start = time.process_time()
        evaluate_all(w, shape, data, args.repeats, (h, scratch, logits))
        micros = (time.process_time() - start) / (args.repeats * args.positions) * 1e6
        results[f"H={hidden}, depth={depth}"] = micros
        print(f"H={hidden}, depth {depth}: {micros:.2f} µs per evaluation (hidden units, legal logits, value)")
    atomic_write_text(Path(args.out), json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
