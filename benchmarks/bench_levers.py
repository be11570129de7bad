"""Which lever gives what (a diagnostic, not a test): search settings rated against one reference on
the same duplicate decks, so that the next step is a measured choice.

Each ``--agents`` spec plays ``--reference`` (default ``rollout``, today's search) with the
tournament code (:func:`treppen.arena.strength.rate_against`: duplicate decks, 95% bootstrap
intervals over decks); the table gives each one's Elo, interval, score and likelihood of being the
stronger. Typical rows: the playout policy swapped at a fixed playout count (``own_playout=net``
with a kernels' net, ``playout=random``), beliefs on and off (``beliefs=greedy``), the objective
(``objective=margin``) against what the ratings count (``win``).

Usage::

    python benchmarks/bench_levers.py --reference rollout,playouts=500 --decks 40 \\
        --agents rollout,playouts=500,beliefs=greedy rollout,playouts=500,objective=margin
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from treppen.arena.strength import rate_against
from treppen_env.files import atomic_write_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_levers", description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", required=True, help="agent specs to rate")
    parser.add_argument("--reference", default="rollout", help="the spec rated 0")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--rules", default="treppenromme")
    parser.add_argument("--decks", type=int, default=40)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("runs/bench/levers"))
    args = parser.parse_args(argv)
    rows = {}
    print(f"| agent | Elo vs {args.reference} | 95% interval | score | P(stronger) |\n|---|---|---|---|---|")
    for k, spec in enumerate(args.agents):
        found = rate_against(
            spec, args.reference, args.players, args.rules, args.decks, args.seed, args.workers, args.out / str(k)
        )
        rows[spec] = found.to_dict()
        print(f"| `{spec}` | {found.elo:+.0f} | [{found.low:+.0f}, {found.high:+.0f}] | {found.score:.3f} | "
              f"{found.likelihood:.2f} |", flush=True)  # fmt: skip
    atomic_write_text(args.out / "levers.json", json.dumps({"reference": args.reference, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
