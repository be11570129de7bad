"""Duplicate-deal tournaments between agents, rated by Elo (DESIGN "Command line", STYLE "Tournament").

This module plays a tournament: the schedule comes from :mod:`train.schedule` (which deck, table
and seating; duplicate decks with balanced seating orders), each deal is played by
:func:`agents.match.play_match`, rating is :mod:`train.ratings`, and the files are
:mod:`train.results`.

The out dir holds ``tournament.json`` (settings), ``results.jsonl`` (one line per deal, so an
interrupted tournament resumes) and the ratings outputs; :mod:`train.results` reads and writes them
and describes their formats.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import re
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from agents.base import Agent
from agents.match import MatchError, play_match
from train.ratings import fit_ratings
from train.results import (
    FORMAT_VERSION,
    RESULTS_FILE,
    open_out_dir,
    print_table,
    record_key,
    write_outputs,
)
from train.schedule import DealSpec, Key, check_settings, schedule
from treppen_env import records as game_records
from treppen_env.rules import PRESETS, Rules, make_rules

BUILTIN_SPECS = ("random", "greedy", "human")
RUN_MODEL_STEMS = ("final_model", "model")
"""Model files named after their run folder (``agents.load`` picks them for a run folder)."""


def play_deal(spec: DealSpec, agents: Mapping[str, Agent], game_record: bool = False) -> dict[str, Any]:
    """Play one deal of a schedule and return its record.

    Each seat's agent is reset with its seed first (``agent.reset(seed=...)``), so the record
    depends only on ``spec``.

    :param spec: the deal
    :param agents: agent by name (must hold every name in ``spec.seats``)
    :param game_record: also return the deal's game record (DESIGN "Game records", seats named by
        agent name) under the key ``"game_record"``
    :return: the record (see the module docstring)
    :raises ValueError: when an agent is missing or plays an illegal action
    """
    from treppen_env import raw_env

    missing = [name for name in spec.seats if name not in agents]
    if missing:
        raise ValueError(f"deal {spec.deal_id}: no agent named {missing}; have {sorted(agents)}")
    env = raw_env(num_players=spec.players, rules=spec.rules)
    options = {"deck": list(spec.deck), "dealer": spec.dealer}
    seats = [agents[name] for name in spec.seats]
    try:
        result = play_match(env, seats, seed=spec.seed, options=options, agent_seeds=spec.agent_seeds)
    except MatchError as err:
        raise ValueError(f"agent {spec.seats[err.seat]!r} in deal {spec.deal_id}: {err}") from None
    result_record: dict[str, Any] = {
        "deal": spec.deal_id,
        "deck_id": spec.deck_id,
        "table": list(spec.table),
        "rotation": spec.rotation,
        "dealer": spec.dealer,
        "agents": list(spec.seats),
        "points": result.deal_points,
        "outcome": result.outcome,
        "went_out": result.went_out,
        "steps": len(result.actions),
        "seed": spec.seed,
    }
    if game_record:
        extra = {"deal_id": spec.deal_id, "deck_id": spec.deck_id, "seed": spec.seed}
        (result_record["game_record"],) = game_records.record_match(
            result.actions, spec.seats, seed=spec.seed, options=options, extra=extra,
            num_players=spec.players, rules=spec.rules,
        )  # fmt: skip
    return result_record


def agent_name(spec: str) -> str:
    """Display name of an agent spec: the built-in name, a model file's stem, or its run's name.

    ``runs/exp1``, ``runs/exp1/final_model.zip`` and ``runs/exp1/model.zip`` are ``exp1``;
    ``runs/exp1/best_model.zip`` is ``exp1-best_model``; ``runs/exp1/ckpt/ck_1000_steps.zip`` is
    ``ck_1000_steps``.
    """
    if spec in BUILTIN_SPECS:
        return spec
    path = Path(spec)
    if path.suffix != ".zip":
        return path.name or spec
    run = path.parent.name
    if path.stem in RUN_MODEL_STEMS and run:
        return run
    return f"{run}-{path.stem}" if path.stem == "best_model" and run else path.stem


def resolve_specs(items: Sequence[str]) -> dict[str, str]:
    """Names for agent specs: ``NAME=SPEC`` names one explicitly, duplicates get ``-2``, ``-3``, ...

    A spec's own settings (``ismcts,seconds=1``, see :mod:`agents.spec`) are not a name: an item
    is ``NAME=SPEC`` only when no comma comes before its first ``=``.

    :param items: agent specs as given on the command line
    :return: spec by unique name, in the given order
    """
    out: dict[str, str] = {}
    for item in items:
        head, eq, rest = item.partition("=")
        named = bool(eq) and "," not in head  # "ismcts,seconds=1" is a spec with a setting, not NAME=SPEC
        name, spec = (head, rest) if named else (agent_name(item), item)
        unique, k = name, 1
        while unique in out:
            k += 1
            unique = f"{name}-{k}"
        out[unique] = spec
    return out


def build_agents(sources: Mapping[str, str | Agent]) -> dict[str, Agent]:
    """Agents by name from specs (via ``agents.load``) or ready agents.

    :raises ValueError: for an unknown spec or ``human`` (a tournament has no terminal)
    """
    import agents as agent_lib

    built = {}
    for name, source in sources.items():
        if isinstance(source, str):
            if source == "human":
                raise ValueError(f"agent {name!r}: 'human' cannot play a tournament; use `treppen play`")
            built[name] = agent_lib.load(source)
        else:
            built[name] = source
    return built


_WORKER_AGENTS: dict[str, Agent] = {}


def _init_worker(sources: Mapping[str, str | Agent]) -> None:
    """Worker initializer: load the agents once per process, one torch thread each."""
    _WORKER_AGENTS.update(build_agents(sources))
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _play_in_worker(spec: DealSpec, game_record: bool) -> dict[str, Any]:
    return play_deal(spec, _WORKER_AGENTS, game_record)


def run_tournament(
    agents: Mapping[str, Agent | str],
    players: int = 2,
    decks: int = 100,
    seed: int = 0,
    workers: int = 1,
    out: str | os.PathLike | None = None,
    rules: Rules | str = "treppenromme",
    tables_per_deck: int | None = None,
    limit: int | None = None,
    progress: bool = False,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    record_to: str | os.PathLike | None = None,
    ray_address: str | None = None,
) -> list[dict[str, Any]]:
    """Play a duplicate tournament (resuming the one in ``out``) and return its records.

    :param agents: agent by name: an :class:`~agents.base.Agent` or an ``agents.load`` spec; with
        ``workers > 1`` each worker gets a pickled copy (or loads the spec) once
    :param players: seats per table, 2..4
    :param decks: number of decks; each is played at every table in every seat rotation
    :param seed: tournament seed
    :param workers: worker processes (spawned); 1 plays in this process
    :param out: folder for ``tournament.json`` and ``results.jsonl`` (None: keep nothing on disk)
    :param rules: the rules of every deal (or a preset name); ``tournament.json`` records the
        preset and the options that differ from it
    :param tables_per_deck: see :func:`train.schedule.schedule`
    :param limit: play at most this many new deals, then return (None: all)
    :param progress: show a progress bar
    :param on_record: called with each new record
    :param record_to: a ``.jsonl`` file to append each new deal's game record to (DESIGN "Game
        records"; ``treppen replay`` and ``treppen serve`` replay them), or None
    :param ray_address: play the deals as Ray tasks (``workers`` is then ignored): ``"auto"`` or
        ``"host:port"`` joins a cluster, ``"local"`` starts a local instance (see
        :func:`train.ray_cluster.init_ray`); None plays in this machine's processes
    :return: the records of the schedule played so far (including earlier runs), in schedule order
    :raises ValueError: for bad settings, an unknown spec or an out dir with other settings
    """
    names = list(agents)
    check_settings(names, players, decks, seed, workers)
    if limit is not None and limit < 0:
        raise ValueError(f"limit={limit}; need None (no limit) or >= 0")
    rules = make_rules(rules)
    specs = schedule(names, players, decks, seed, rules, tables_per_deck)
    built = build_agents(agents)
    header = {
        "version": FORMAT_VERSION,
        "agents": {n: a if isinstance(a, str) else repr(a) for n, a in agents.items()},
        "players": players,
        "rules": {"preset": rules.name, "options": rules.overrides()},
        "seed": seed,
        "decks": decks,
        "tables_per_deck": tables_per_deck,
    }
    done: dict[Key, dict[str, Any]] = {} if out is None else open_out_dir(Path(out), header)
    wanted = {s.key for s in specs}
    stray = [k for k in done if k not in wanted]
    if stray:
        raise ValueError(f"{out}/{RESULTS_FILE} holds deals outside this schedule, e.g. {stray[0]}")
    todo = [s for s in specs if s.key not in done]
    todo = todo if limit is None else todo[:limit]

    from tqdm import tqdm

    if progress and done:  # a rerun of the same command: say what is there
        state = "complete" if len(done) == len(specs) else f"resuming, {len(done)} of {len(specs)} deals played"
        print(f"tournament in {out}: {state}" + ("; rating the results again" if not todo else ""))
    fh = None if out is None else open(Path(out) / RESULTS_FILE, "a", encoding="utf-8")
    bar = tqdm(total=len(specs), initial=len(done), unit="deal", desc="tournament", disable=not (progress and todo))
    try:
        recorded = _recorded_deals(record_to)
        if ray_address is not None:
            from train.ray_cluster import play_on_ray

            played = play_on_ray(todo, agents, ray_address, record_to is not None)
        else:
            played = _play_all(todo, built if workers == 1 else agents, workers, record_to is not None)
        for rec in played:
            game_record = rec.pop("game_record", None)
            if record_to is not None and game_record["deal_id"] not in recorded:  # written before the result
                game_record["agents"] = [_spec_of(agents, name) for name in game_record["agents"]]
                game_records.append(record_to, game_record)
            done[record_key(rec)] = rec
            if fh is not None:
                fh.write(json.dumps(rec) + "\n")
                fh.flush()
            if on_record is not None:
                on_record(rec)
            bar.update()
    finally:
        bar.close()
        if fh is not None:
            fh.close()
    return [done[s.key] for s in specs if s.key in done]


def _spec_of(agents: Mapping[str, Agent | str], name: str) -> str:
    """The spec an agent was given by (its name when it was given as an object)."""
    source = agents[name]
    return source if isinstance(source, str) else name


def _recorded_deals(path: str | os.PathLike | None) -> set[str]:
    """Deal ids already in the game record file ``path`` (a resumed tournament appends the rest)."""
    if path is None or not Path(path).is_file():
        return set()
    return {str(r.get("deal_id")) for r in game_records.read(path, repair=True)}


def _play_all(todo: list[DealSpec], agents: Mapping[str, Agent | str], workers: int, game_record: bool = False):
    """Yield the records of ``todo``, in order with one worker, as they finish with more."""
    if workers == 1:
        for spec in todo:
            yield play_deal(spec, agents, game_record)  # type: ignore[arg-type]
        return
    if not todo:
        return
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(dict(agents),))
    try:
        queue = iter(todo)
        pending = {pool.submit(_play_in_worker, s, game_record) for s in itertools.islice(queue, 4 * workers)}
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                try:
                    record = fut.result()
                except BrokenProcessPool as err:
                    msg = f"a worker process died ({err}); rerun with --workers 1 to see the error"
                    raise RuntimeError(msg) from err
                yield record
                pending |= {pool.submit(_play_in_worker, s, game_record) for s in itertools.islice(queue, 1)}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``treppen tournament``."""
    parser.add_argument(
        "--agents",
        nargs="+",
        required=True,
        metavar="SPEC",
        help="agents: random, greedy, a model .zip or run folder, each with optional settings "
        "NAME,key=value,... (e.g. greedy,epsilon=0.1); LABEL=SPEC names one",
    )
    parser.add_argument("--players", type=int, default=2, help="seats per table, 2..4 (default 2)")
    parser.add_argument(
        "--decks",
        type=int,
        default=None,
        help="number of decks (default 100); each deck is played at every table in every seat rotation; "
        "with 3 or 4 players a multiple of 2 or 6 balances who sits before whom exactly",
    )
    parser.add_argument("--deals", type=int, default=None, help="deprecated: the old name of --decks")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="play the deals as Ray tasks: auto or host:port joins a Ray cluster, local starts one here "
        "(needs the ray extra; --workers is then ignored)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="output folder; rerunning resumes (default runs/tournaments/<agents>_p<players>_s<seed>)",
    )
    parser.add_argument("--rules", default="treppenromme", choices=sorted(PRESETS), help="rules preset")
    parser.add_argument("--seed", type=int, default=0, help="tournament seed (default 0)")
    parser.add_argument(
        "--record", default=None, metavar="DIR", help="write every deal's game record to DIR/<out folder name>.jsonl"
    )
    parser.add_argument("--boot", type=int, default=1000, help="bootstrap resamples of decks (default 1000)")
    parser.add_argument(
        "--tables-per-deck", type=int, default=None, help="tables per deck (default all combinations of agents)"
    )


def default_out(names: Sequence[str], players: int, seed: int) -> Path:
    """``runs/tournaments/<names>_p<players>_s<seed>`` with unsafe characters replaced."""
    stem = re.sub(r"[^A-Za-z0-9_.+-]+", "_", "_vs_".join(names))[:80]
    return Path("runs") / "tournaments" / f"{stem}_p{players}_s{seed}"


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
    decks = decks_argument(args.decks, args.deals)
    specs = resolve_specs(args.agents)
    names = list(specs)
    check_settings(names, args.players, decks, args.seed, args.workers)
    if args.boot < 0:
        raise ValueError(f"boot={args.boot}; need >= 0 (0 skips the confidence intervals)")
    out = Path(args.out) if args.out else default_out(names, args.players, args.seed)
    try:
        records = run_tournament(
            specs,
            args.players,
            decks,
            args.seed,
            args.workers,
            out,
            make_rules(args.rules),
            args.tables_per_deck,
            progress=True,
            record_to=None if args.record is None else Path(args.record) / f"{out.name}.jsonl",
            ray_address=args.ray_address,
        )
    except KeyboardInterrupt:
        print(f"interrupted; finished deals are in {out / RESULTS_FILE}. Rerun to resume.", file=sys.stderr)
        return 130
    ratings = fit_ratings(records, anchor="random", n_boot=args.boot, seed=args.seed)
    write_outputs(out, ratings, specs)
    print_table(ratings)
    print(f"results in {out}/ ({RESULTS_FILE}, ratings.csv, ratings.json, elo.png, pairwise.png)")
    if args.record is not None:
        print(f"game records in {Path(args.record) / f'{out.name}.jsonl'} (treppen replay FILE --deal N)")
    return 0
