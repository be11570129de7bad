"""``treppen replay FILE [--deal N]``: a recorded deal move by move in the terminal.

Each move is printed with the table after it, drawn by :func:`treppen_env.render.render_text` (all
hands shown); the replay checks every move and, at the end, the record's outcome and points.
"""

from __future__ import annotations

import argparse
from typing import Any

from treppen.apps.options import add_record_arguments
from treppen_env import records
from treppen_env.render import render_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_record_arguments(parser)
    parser.add_argument("--moves-only", action="store_true", help="print the moves without the table")


def run(args: argparse.Namespace) -> int:
    """Print deal ``--deal`` of ``FILE`` move by move.

    :raises FileNotFoundError: when there is no such file.
    :raises ValueError: for a file that is not a record file, a deal number out of range or a
        record that does not replay (naming the step).
    """
    record, count = read_deal(args.file, args.deal)
    gap = "" if args.moves_only else "\n"  # a blank line between tables, none between bare moves
    print(f"record {args.deal} of {count} in {args.file}: {describe(record)}")
    for step in records.replay(record, where=f"{args.file}, record {args.deal}"):
        if step.index >= 0:
            print(f"{gap}{step.index + 1}. P{step.seat}: {step.text}")
        if not args.moves_only:
            print(render_text(step.env.game))
    went_out = "" if record["went_out"] is None else f", P{record['went_out']} went out"
    outcome = record["outcome"].replace("_", " ")
    print(f"{gap}result: {outcome}{went_out}; deal points {record['deal_points']} (replay checked)")
    return 0


def read_deal(path: str, deal: int) -> tuple[dict[str, Any], int]:
    """Deal ``deal`` (1 = the first) of the record file ``path``, and how many deals it holds.

    :raises FileNotFoundError: when there is no such file.
    :raises ValueError: for a file that is not a record file or holds no deals, or a deal number
        out of range (naming ``--deal``).
    """
    deals = records.read(path)
    if not deals:
        raise ValueError(f"{path} holds no deals")
    if not 1 <= deal <= len(deals):
        raise ValueError(f"--deal {deal}: {path} holds deals 1..{len(deals)}")
    return deals[deal - 1], len(deals)


def describe(record: dict[str, Any]) -> str:
    """Rules, seats and which deal of its game the record is (the tables count deals that way)."""
    seats = ", ".join(f"P{i} {spec}" for i, spec in enumerate(record["agents"]))
    deal = f"deal {record['game_deal']} of a game" if "game_deal" in record else "a single deal (the table: deal 1)"
    return f"{record['rules']}, {seats}; {deal}"
