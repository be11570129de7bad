"""The opponent model's temperature, fitted (a measurement, not a test): the temperature (points) of
the softmax over the heuristic's action scores (:mod:`treppen_env.agent_core.belief_kernels`) that makes the
recorded decisions of a mix of opponents most likely, by maximum likelihood.

Each opponent (``--opponents``, default greedy, the shipped policy ``ppo-2p`` and the search at a
small budget) plays ``--deals`` 2-player deals against greedy; every draw and discard decision it
makes is scored by the model with its true hand then, and the log-likelihood summed over all is
maximised over the temperature (SciPy, bounded). Prints the fitted temperature per opponent and
for the mix; the search agents' default (``agents.search.TEMPERATURE``) comes from the mix.
Usage: ``python benchmarks/fit_temperature.py [--deals 20] [--opponents greedy ppo-2p rollout,playouts=200]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

from treppen import agents
from treppen_env import raw_env
from treppen_env.actions import DISCARD_BASE, MELD_BASE
from treppen_env.agent_core import belief_kernels, greedy_kernels
from treppen_env.core.tables import rules_table
from treppen_env.files import atomic_write_text
from treppen_env.melds import MELD_BITS
from treppen_env.rules import make_rules


def decisions(spec: str, deals: int) -> list[tuple]:
    """The (state arrays, seat, action) of every draw and discard of ``spec`` against greedy."""
    out = []
    for deal in range(deals):
        env = raw_env(num_players=2)
        env.reset(seed=deal)
        players = [agents.load(spec, seed=deal), agents.load("greedy")]
        while not env.game.deal_over:
            seat = env.game.current
            action = players[seat].act(env.observe(env.agent_selection))
            if seat == 0 and (action < MELD_BASE or action >= DISCARD_BASE):
                out.append((env.game.arrays().copy(), seat, action))
            env.step(action)
    return out


def log_likelihood(recorded: list[tuple], temperature: float, epsilon: float = 0.05) -> float:
    rules = make_rules("treppenromme")
    b = belief_kernels.new_beliefs(
        2, temperature, epsilon, greedy_kernels.settings_row(), np.zeros((0, belief_kernels.LOCATIONS))
    )
    scratch = belief_kernels.scratch().likelihood
    total = 0.0
    table = rules_table(rules)
    for position, seat, action in recorded:
        u64 = position.u64
        b.decisions.u64[0], b.decisions.i8[0], b.decisions.i64[0] = u64, position.i8, position.i64
        b.decisions.seat[0], b.decisions.action[0], b.undo.steps[0] = seat, action, 0
        b.decisions.size[0] = 1
        total += belief_kernels.decision_log_likelihood(b, 0, u64[seat], table, MELD_BITS, scratch)
    return total


def fit(recorded: list[tuple]) -> float:
    found = minimize_scalar(
        lambda log_t: -log_likelihood(recorded, float(np.exp(log_t))), bounds=(-3, 4), method="bounded"
    )
    return float(np.exp(found.x))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fit_temperature", description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=20)
    parser.add_argument("--opponents", nargs="+", default=["greedy", "ppo-2p", "rollout,playouts=200"])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "fit_temperature.json"))
    args = parser.parse_args(argv)
    every, results = [], {}
    for spec in args.opponents:
        recorded = decisions(spec, args.deals)
        every += recorded
        results[spec] = {"decisions": len(recorded), "temperature": fit(recorded)}
        print(f"{spec}: {len(recorded)} decisions, temperature {results[spec]['temperature']:.2f} points", flush=True)
    results["mix"] = {"decisions": len(every), "temperature": fit(every)}
    print(f"mix: {len(every)} decisions, temperature {results['mix']['temperature']:.2f} points")
    atomic_write_text(Path(args.out), json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
