"""``treppen label``: search labels as a dataset job (:mod:`treppen.train.expert.labels`): the
positions of seeded deals, each labelled by a search with every searched move's playouts and mean
value and a target distribution, in shards written atomically; rerunning resumes.

Usage::

    treppen label --out runs/labels/gen0 --deals 5000 --search rollout,playouts=500 --threads 2
    treppen label --out runs/labels/fast --deals 5000 --player runs/a/final_model.npz \\
        --search rollout,playouts=500,net=runs/a/final_model.npz,own_playout=net
    treppen label --out runs/labels/big --deals 50000 --ray-address auto   # Ray tasks on a cluster

The last line gives the labels written and labels per wall second.
"""

from __future__ import annotations

import argparse
import sys

from treppen.apps.options import add_ray_address, out_folder, positive, seed, whole
from treppen_env.rules import PRESETS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``treppen label``."""
    parser.add_argument(
        "--out", type=out_folder, required=True, help="the job's folder (job.json, shard_*.npz); rerunning resumes"
    )
    parser.add_argument("--deals", type=whole(1), required=True, help="deals to play and label")
    parser.add_argument(
        "--search", default="rollout,playouts=500", metavar="SPEC", help="the labelling search (rollout or ismcts)"
    )
    parser.add_argument(
        "--player",
        default="search",
        metavar="SPEC",
        help="who plays the labelled seat: search (the labelling search itself) or an agent spec, e.g. a net",
    )
    parser.add_argument(
        "--opponents", nargs="+", default=["greedy"], metavar="SPEC", help="the other seats, by turns per deal"
    )
    parser.add_argument("--players", type=whole(2, 4), default=2, help="seats per table, 2..4 (default 2)")
    parser.add_argument("--rules", default="treppenromme", choices=sorted(PRESETS), help="rules preset")
    parser.add_argument("--seed", type=seed, default=0, help="the job's seed (default 0)")
    parser.add_argument("--shard-deals", type=whole(1), default=20, help="deals per shard (default 20)")
    parser.add_argument(
        "--target",
        default="softmax",
        choices=["softmax", "visits"],
        help="target distribution: softmax of the moves' values (default) or their share of the playouts",
    )
    parser.add_argument(
        "--temperature",
        type=positive("a temperature"),
        default=0.05,
        help="the softmax target's temperature, objective units",
    )
    parser.add_argument("--threads", type=whole(1), default=1, help="threads of this process (default 1)")
    add_ray_address(parser, "label shards", "--threads")


def run(args: argparse.Namespace) -> int:
    """Run ``treppen label``: label the shards the folder lacks, then print what was done."""
    from treppen.arena.interrupts import exit_status, interrupts_raise
    from treppen.arena.ray_address import check_ray_address
    from treppen.train.expert.labels import LabelJob, run_job

    check_ray_address(args.ray_address, "--ray-address")  # a cluster that does not answer: refused before any work
    job = LabelJob(
        deals=args.deals,
        search=args.search,
        player=args.player,
        opponents=tuple(args.opponents),
        num_players=args.players,
        rules=args.rules,
        seed=args.seed,
        shard_deals=args.shard_deals,
        target=args.target,
        temperature=args.temperature,
    )
    try:
        with interrupts_raise():  # SIGTERM as Ctrl-C: the shards written are kept
            report = run_job(job, args.out, args.threads, args.ray_address, progress=True)
    except KeyboardInterrupt as err:
        print(f"interrupted; the shards written are in {args.out}. Rerun to resume.", file=sys.stderr)
        return exit_status(err)
    print(
        f"labels: {report.labels} in {report.shards} shards, {report.seconds:.1f} s, {report.rate:.1f} labels/s; "
        f"{report.total_labels} labels in {args.out}"
    )
    return 0
