"""The model zoo's shipped agents (a benchmark, not a test): each one's first action in a fresh
process, and optionally its Elo against greedy played again.

For every card (:func:`treppen.agents.zoo.cards`, or the names given), a new Python process imports
``treppen``, loads the agent by name, deals a table of the card's game and times the agent's first
action from the import on (wall seconds; the kernels load from the disk cache, as after any first
use), and from its end, and reports whether torch was imported (a zoo agent must play without it; target:
under 2 s after the import).
With ``--decks N`` each agent is also rated against greedy on N duplicate decks of the card's deck
seed (:func:`treppen.arena.strength.rate_against`), beside the Elo its card states.

Usage: ``python benchmarks/bench_zoo.py [NAME ...] [--decks 0] [--workers 2] [--out runs/bench/bench_zoo.json]``;
it prints a Markdown table and writes the JSON atomically.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from treppen.agents import zoo
from treppen.apps.zoo import strength_text
from treppen.arena.scale import rating_text
from treppen.arena.strength import rate_against
from treppen_env.files import atomic_write_text

#: The fresh process: the import, the load by name, one deal's first observation and action of the
#: zoo agent; it prints the wall and CPU seconds from the import's start, the wall seconds from its
#: end, and whether torch was imported.
_FIRST_ACTION = """
import sys, time
start, cpu = time.perf_counter(), time.process_time()
import treppen_env
from treppen import agents
imported = time.perf_counter()
name, players, rules = sys.argv[1], int(sys.argv[2]), sys.argv[3]
env = treppen_env.env(num_players=players, rules=rules)
env.reset(seed=0)
agent = agents.load(name, rules=rules, seed=0)
agent.act(env.observe(env.agent_selection))
end = time.perf_counter()
print(end - start, time.process_time() - cpu, end - imported, "torch" in sys.modules)
"""
TARGET_S = 2.0


def first_action(card: zoo.ModelCard) -> dict[str, float | bool]:
    """Wall and CPU seconds from the import to the first action of ``card``'s agent in a fresh
    process, and whether that process imported torch.

    :raises RuntimeError: when the process fails (its stderr in the message).
    """
    command = [sys.executable, "-c", _FIRST_ACTION, card.name, str(card.num_players), card.rules]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{card.name}: the first action failed:\n{done.stderr[-2000:]}")
    wall, cpu, after, torch = done.stdout.split()
    return {
        "first_action_s": float(wall),
        "first_action_cpu_s": float(cpu),
        "after_import_s": float(after),
        "torch_imported": torch == "True",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_zoo", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="zoo agents (default: every card)")
    parser.add_argument("--decks", type=int, default=0, help="rate each against greedy on this many decks (0: no)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the rating tournaments")
    parser.add_argument("--out", type=Path, default=Path("runs/bench/bench_zoo.json"), help="JSON results file")
    args = parser.parse_args(argv)
    cards = [zoo.card(name) for name in args.names] or list(zoo.cards().values())
    rows = {}
    print("| agent | first action, import included (s wall) | (CPU s) | after the import (s wall) | torch imported |"
          " card's Elo | Elo played again |\n|---|---|---|---|---|---|---|")  # fmt: skip
    for card in cards:
        row: dict = first_action(card)
        again = "-"
        if args.decks:
            seed = card.elo.get("decks", {}).get("seed", 2026)
            found = rate_against(card.name, "greedy", card.num_players, card.rules, args.decks, seed, args.workers)
            row["elo"] = found.to_dict()
            again = f"{rating_text(found.elo, found.low, found.high)} ({args.decks} decks)"
        rows[card.name] = row
        times = f"{row['first_action_s']:.2f} | {row['first_action_cpu_s']:.2f} | {row['after_import_s']:.2f}"
        print(f"| `{card.name}` | {times} | {row['torch_imported']} | {strength_text(card)} | {again} |")
    atomic_write_text(args.out, json.dumps({"target_first_action_s": TARGET_S, "agents": rows}, indent=1) + "\n")
    slow = [name for name, row in rows.items() if row["after_import_s"] >= TARGET_S or row["torch_imported"]]
    print(f"written to {args.out}" + (f"; over {TARGET_S} s or with torch: {slow}" if slow else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
