"""``treppen replay FILE [--deal N]``: a recorded deal move by move in the terminal
(docs/ARCHITECTURE.md "Game records").

Each move is printed with the table after it, drawn by :func:`treppen_env.render.render_text` (all
hands shown); the replay checks every move and, at the end, the record's outcome and points.
"""

from __future__ import annotations

import argparse

from treppen_env import records
from treppen_env.render import render_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", help="a record file (.jsonl or .jsonl.gz) written by play, tournament --record or serve"
    )
    parser.add_argument("--deal", type=int, default=1, metavar="N", help="which deal of the file, 1 = first (default)")
    parser.add_argument("--moves-only", action="store_true", help="print the moves without the table")


def run(args: argparse.Namespace) -> int:
    """Print deal ``--deal`` of ``FILE`` move by move.

    :raises FileNotFoundError: when there is no such file.
    :raises ValueError: for a file that is not a record file, a deal number out of range or a
        record that does not replay (naming the step).
    """
    deals = records.read(args.file)
    if not deals:
        raise ValueError(f"{args.file} holds no deals")
    if not 1 <= args.deal <= len(deals):
        raise ValueError(f"--deal {args.deal}: {args.file} holds deals 1..{len(deals)}")
    record = deals[args.deal - 1]
    seats = ", ".join(f"P{i} {spec}" for i, spec in enumerate(record["agents"]))
    print(f"deal {args.deal} of {len(deals)} in {args.file}: {record['rules']}, {seats}")
    for step in records.replay(record, where=f"{args.file}, deal {args.deal}"):
        if step.index >= 0:
            print(f"\n{step.index + 1}. P{step.seat}: {step.text}")
        if not args.moves_only:
            print(render_text(step.env.game))
    went_out = "" if record["went_out"] is None else f", P{record['went_out']} went out"
    print(f"\nresult: {record['outcome']}{went_out}; deal points {record['deal_points']} (replay checked)")
    return 0
