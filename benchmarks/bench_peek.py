"""The most better beliefs could give (a diagnostic, not a test): a rollout searcher shown the
opponent's true hand (the stock still unknown and shuffled), and one shown the stock's order too,
each head to head against the same searcher without them, on duplicate decks (2 players).

The peeking searchers read the engine's state, which no agent may: this is a benchmark of the
ceiling, never a player. Every deck is played twice, the seats swapped; the score counts more
points 1, equal 0.5, with a 95% bootstrap interval over decks and its Elo.
Usage: ``python benchmarks/bench_peek.py [--decks 60] [--playouts 2000] [--out runs/bench/bench_peek.json]``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from treppen.agents import RolloutAgent
from treppen.agents.search import _Root
from treppen.arena.schedule import schedule
from treppen_env import raw_env
from treppen_env.files import atomic_write_text


class Peeker(RolloutAgent):
    """A rollout searcher whose root is the engine's true state, its opponent's hand known to it
    (``stock=False``: the stock is still dealt afresh) or everything (``stock=True``)."""

    def __init__(self, env: Any, stock: bool, **settings: Any):
        super().__init__(**settings)
        self.env, self.stock = env, stock

    def _root(self, observation: dict[str, Any], own_known: int) -> _Root:
        state = self.env.game.clone()
        state.known = list(state.hands)  # every hand is known to the searcher
        root = _Root(state, self)
        if self.stock:
            root.beliefs = root.beliefs._replace(candidates=0)
        return root


def play(deck: list[str], seats: list[Any], env: Any) -> list[int]:
    env.reset(options={"deck": deck, "dealer": 0})
    for agent in seats:
        agent.reset()
    while not env.game.deal_over:
        seat = env.game.current
        env.step(seats[seat].act(env.observe(env.agent_selection)))
    return env.game.deal_points


def score(points: list[int], seat: int) -> float:
    mine, theirs = points[seat], points[1 - seat]
    return 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_peek", description=__doc__.splitlines()[0])
    parser.add_argument("--decks", type=int, default=60)
    parser.add_argument("--playouts", type=int, default=2000)
    parser.add_argument("--out", default="runs/bench/bench_peek.json")
    args = parser.parse_args(argv)
    decks = [d.deck for d in schedule(["a", "b"], 2, args.decks, 2026) if d.seats == ("a", "b")]
    results = {}
    for stock in (False, True):
        per_deck = []
        for k, deck in enumerate(decks):
            env = raw_env(num_players=2)
            row = []
            for peek_seat in (0, 1):
                peeker = Peeker(env, stock, seed=k, playouts=args.playouts)
                plain = RolloutAgent(seed=k, playouts=args.playouts)
                seats = [peeker, plain] if peek_seat == 0 else [plain, peeker]
                row.append(score(play(list(deck), seats, env), peek_seat))
            per_deck.append(np.mean(row))
        scores = np.array(per_deck)
        boot = np.random.default_rng(0).choice(scores, (2000, scores.size)).mean(axis=1)
        low, high = np.quantile(boot, [0.025, 0.975])
        name = "hand and stock shown" if stock else "opponent's hand shown"
        results[name] = {"score": float(scores.mean()), "low": float(low), "high": float(high),
                         "elo": _elo(scores.mean()), "decks": len(decks)}  # fmt: skip
        print(f"{name}: score {scores.mean():.3f} [{low:.3f}, {high:.3f}], about {_elo(scores.mean()):+.0f} Elo")
    atomic_write_text(Path(args.out), json.dumps(results, indent=1) + "\n")
    return 0


def _elo(score: float) -> float:
    score = min(max(score, 1e-3), 1 - 1e-3)
    return 400 * math.log10(score / (1 - score))


if __name__ == "__main__":
    raise SystemExit(main())
