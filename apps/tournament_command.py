"""``treppen tournament``: a duplicate-deal tournament between agents given by spec, rated by Elo
(:mod:`treppen.arena.tournament` plays it, :mod:`treppen.arena.ratings` rates it,
:mod:`treppen.arena.results` writes it).

Usage::

    treppen tournament --agents random greedy runs/exp1 [--players 2] [--decks 100] [--workers 2]
    treppen tournament --agents easy medium hard          # the levels of treppen play and serve

Elo is on the one scale of the project, greedy = 0 (random = 0 when greedy does not play). Before the
first deal each ``llm`` agent's endpoint is asked once (:meth:`treppen.agents.llm.LLMAgent.check_ready`):
one that cannot play is an error (exit 2). A model whose fallback plays more than ``--max-fallback``
of its decisions is warned about during the run and marked in the Elo table.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from treppen.agents import zoo
from treppen.agents.base import Agent
from treppen.apps.options import add_ray_address, out_folder, seed, share, whole
from treppen.arena.agent_stats import FALLBACK_LIMIT, FallbackWatch, over_limit, print_stats, total_stats
from treppen.arena.interrupts import exit_status, interrupts_raise
from treppen.arena.match import build_agents
from treppen.arena.ratings import fit_ratings, reference_anchor
from treppen.arena.ray_address import check_ray_address
from treppen.arena.results import RESULTS_FILE, print_table, write_outputs
from treppen.arena.scale import SCALE_ANCHOR
from treppen.arena.schedule import check_settings, schedule
from treppen.arena.tournament import resolve_specs, run_tournament
from treppen_env.aec import raw_env
from treppen_env.rules import PRESETS, Rules, make_rules

#: Decisions in a deal, about: greedy and random tables average 54 to 67 (2 and 3 players).
DECISIONS_PER_DEAL = 60
#: Decisions timed per agent for the estimate.
PROBE_DECISIONS = 8
#: Runs estimated to take longer than this (seconds) print the estimate first.
LONG_RUN_S = 60.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``treppen tournament``."""
    parser.add_argument(
        "--agents",
        nargs="+",
        required=True,
        metavar="SPEC",
        help="agents: a level (easy, medium, hard), random, greedy, the search (rollout, ismcts), a zoo agent "
        "(ppo-2p, search-2p, ...: treppen zoo list), a model .zip or run folder, each with optional settings "
        "NAME,key=value,... (e.g. greedy,epsilon=0.1 or rollout,playouts=500); LABEL=SPEC names one",
    )
    parser.add_argument("--players", type=whole(2, 4), default=2, help="seats per table, 2..4 (default 2)")
    parser.add_argument(
        "--decks",
        type=whole(1),
        default=None,
        help="number of decks (default 100); each deck is played at every table in every seat rotation; "
        "with 3 or 4 players a multiple of 2 or 6 balances who sits before whom exactly",
    )
    parser.add_argument("--deals", type=whole(1), default=None, help="deprecated: the old name of --decks")
    parser.add_argument("--workers", type=whole(1), default=1, help="worker processes (default 1)")
    add_ray_address(parser, "play the deals", "--workers")
    parser.add_argument(
        "--out",
        type=out_folder,
        default=None,
        help="output folder; rerunning resumes (default runs/tournaments/<agents>_p<players>_s<seed>)",
    )
    parser.add_argument("--rules", default="treppenromme", choices=sorted(PRESETS), help="rules preset")
    parser.add_argument("--seed", type=seed, default=0, help="tournament seed (default 0)")
    parser.add_argument(
        "--record", default=None, metavar="DIR", help="write every deal's game record to DIR/<out folder name>.jsonl"
    )
    parser.add_argument("--boot", type=whole(0), default=1000, help="bootstrap resamples of decks (default 1000)")
    parser.add_argument(
        "--max-fallback",
        type=share,
        default=FALLBACK_LIMIT,
        metavar="SHARE",
        help=f"warn about a model agent (llm) whose fallback plays more than this share of its decisions, and "
        f"mark its row in the Elo table (default {FALLBACK_LIMIT}, i.e. {100 * FALLBACK_LIMIT:.0f}%%)",
    )
    parser.add_argument(
        "--tables-per-deck", type=whole(1), default=None, help="tables per deck (default all combinations of agents)"
    )


def default_out(names: Sequence[str], players: int, seed: int) -> Path:
    """``runs/tournaments/<names>_p<players>_s<seed>`` with unsafe characters replaced."""
    stem = re.sub(r"[^A-Za-z0-9_.+-]+", "_", "_vs_".join(names))[:80]
    return Path("runs") / "tournaments" / f"{stem}_p{players}_s{seed}"


def decision_seconds(agent: Agent, players: int, rules: Rules) -> float:
    """Seconds a decision of ``agent`` takes, timed on the first decisions of a seeded deal in
    which it plays every seat, after one untimed decision (which loads, or first compiles, its kernels)."""
    env = raw_env(num_players=players, rules=rules)
    env.reset(seed=0)
    agent.act(env.observe(env.agent_selection))
    started = time.perf_counter()
    for _ in range(PROBE_DECISIONS):
        env.step(agent.act(env.observe(env.agent_selection)))
    return (time.perf_counter() - started) / PROBE_DECISIONS


def estimate_text(agents: Mapping[str, Agent], players: int, rules: Rules, deals: int, workers: int) -> str | None:
    """A line estimating the time of ``deals`` deals when it is over ``LONG_RUN_S`` seconds, else None.

    Every agent plays an equal share of the seats, so a deal takes about ``DECISIONS_PER_DEAL``
    times the agents' mean seconds per decision (:func:`decision_seconds`).

    :param agents: the tournament's agents by name, built for its ``rules``.
    """
    if deals <= 0:
        return None
    seconds = {name: decision_seconds(agent, players, rules) for name, agent in agents.items()}
    total = deals * DECISIONS_PER_DEAL * sum(seconds.values()) / len(seconds) / max(workers, 1)
    if total < LONG_RUN_S:
        return None
    slowest = max(seconds, key=seconds.__getitem__)
    minutes = f"{total / 60:.0f} min" if total < 5400 else f"{total / 3600:.1f} h"
    return (
        f"estimate: about {minutes} for {deals} deals on {workers} worker{'s' if workers != 1 else ''} "
        f"({slowest}: {seconds[slowest]:.2f} s a decision, about {DECISIONS_PER_DEAL} decisions a deal); "
        "Ctrl-C stops, the same command resumes"
    )


def _played(out: Path) -> int:
    """Deals already in ``out``'s results (a rerun resumes them)."""
    path = out / RESULTS_FILE
    return sum(1 for line in path.read_text().splitlines() if line.strip()) if path.is_file() else 0


def decks_argument(decks: int | None, deals: int | None) -> int:
    """The number of decks from ``--decks`` or its deprecated alias ``--deals`` (which counted decks
    too), warning on the alias (a ``DeprecationWarning`` and a line on stderr).

    :raises ValueError: when both are given with different values.
    """
    if deals is None:
        return 100 if decks is None else decks
    message = "--deals is deprecated and counts decks; use --decks"
    warnings.warn(message, DeprecationWarning, stacklevel=2)
    print(f"treppen tournament: warning: {message}", file=sys.stderr)
    if decks is not None and decks != deals:
        raise ValueError(f"--decks {decks} and --deals {deals} disagree; give --decks only")
    return deals


def run(args: argparse.Namespace) -> int:
    """Run ``treppen tournament``: play (or resume), rate, write the files, print the table."""
    check_ray_address(args.ray_address, "--ray-address")  # a cluster that does not answer: refused before any work
    decks = decks_argument(args.decks, args.deals)
    specs = {name: zoo.table_spec(spec, args.players, args.rules) for name, spec in resolve_specs(args.agents).items()}
    names = list(specs)
    rules = make_rules(args.rules)
    built = build_agents(specs, rules)  # an unknown spec is named before the count of agents is checked
    check_settings(names, args.players, decks, args.seed, args.workers)
    if args.boot < 0:
        raise ValueError(f"boot={args.boot}; need >= 0 (0 skips the confidence intervals)")
    out = args.out if args.out is not None else default_out(names, args.players, args.seed)
    if args.record is not None and Path(args.record).exists() and not Path(args.record).is_dir():
        raise ValueError(f"--record {args.record!r} is a file; name a folder (its record file is <out name>.jsonl)")
    todo = len(schedule(names, args.players, decks, args.seed, rules, args.tables_per_deck)) - _played(out)
    if todo > 0:
        for agent in built.values():
            agent.check_ready()  # a model endpoint that cannot play (unreachable, key or model refused) stops here
    estimate = estimate_text(built, args.players, rules, todo, 1 if args.ray_address else args.workers)
    if estimate:
        print(estimate)
    watch = FallbackWatch(args.max_fallback)
    try:
        with interrupts_raise():  # SIGTERM as Ctrl-C: the finished deals are kept
            records = run_tournament(
                specs,
                args.players,
                decks,
                args.seed,
                args.workers,
                out,
                rules,
                args.tables_per_deck,
                progress=True,
                on_record=watch,
                record_to=None if args.record is None else Path(args.record) / f"{out.name}.jsonl",
                ray_address=args.ray_address,
            )
    except KeyboardInterrupt as err:
        results = out / RESULTS_FILE
        kept = f"finished deals are in {results}" if results.is_file() else "no deal had finished"
        print(f"interrupted; {kept}. Rerun to resume.", file=sys.stderr)
        return exit_status(err)
    greedy = [name for name, spec in specs.items() if spec == SCALE_ANCHOR]  # e.g. the level easy
    anchor = reference_anchor(names) if SCALE_ANCHOR in names or not greedy else greedy[0]
    ratings = fit_ratings(records, anchor=anchor, n_boot=args.boot, seed=args.seed)
    ratings = dataclasses.replace(ratings, anchor_spec=specs.get(anchor or ""))  # titled greedy = 0 (easy)
    write_outputs(out, ratings, specs)
    totals = total_stats(records)
    print_table(ratings, marked=over_limit(totals, args.max_fallback), limit=args.max_fallback)
    print_stats(totals)  # the llm agents' replies, retries, fallbacks, tokens, seconds
    print(f"results in {out}/ ({RESULTS_FILE}, ratings.csv, ratings.json, elo.png, pairwise.png)")
    if args.record is not None:
        print(f"game records in {Path(args.record) / f'{out.name}.jsonl'} (treppen replay FILE --deal N)")
    return 0
