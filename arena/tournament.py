"""Duplicate-deal tournaments between agents, rated by Elo (docs/ARCHITECTURE.md "Command line").

This module plays a tournament: the schedule comes from :mod:`treppen.arena.schedule` (which deck, table
and seating; duplicate decks with balanced seating orders), each deal is played by
:func:`treppen.arena.match.play_match`, rating is :mod:`treppen.arena.ratings`, and the files are
:mod:`treppen.arena.results`.

The out dir holds ``tournament.json`` (settings), ``results.jsonl`` (one line per deal, so an
interrupted tournament resumes) and the ratings outputs; :mod:`treppen.arena.results` reads and writes them
and describes their formats.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from treppen.agents import SPECS
from treppen.agents.base import Agent
from treppen.arena.interrupts import ignore_interrupts, interrupts_held, spawn_context
from treppen.arena.match import build_agents, play_deal
from treppen.arena.results import (
    FORMAT_VERSION,
    RESULTS_FILE,
    open_out_dir,
    record_key,
)
from treppen.arena.schedule import DealSpec, Key, check_settings, schedule
from treppen.arena.watchdog import watch_parent
from treppen_env import records as game_records
from treppen_env.files import end_whole_line
from treppen_env.messages import shorten
from treppen_env.rules import Rules, make_rules

RUN_MODEL_STEMS = ("final_model", "model")
"""Model files named after their run folder (``agents.load`` picks them for a run folder)."""


def agent_name(spec: str) -> str:
    """Display name of an agent spec: a built-in agent's spec as it is, a model file's stem, or its run's name.

    ``runs/exp1``, ``runs/exp1/final_model.zip`` and ``runs/exp1/model.zip`` are ``exp1``;
    ``runs/exp1/best_model.zip`` is ``exp1-best_model``; ``runs/exp1/ckpt/ck_1000_steps.zip`` is
    ``ck_1000_steps``.
    """
    if spec.split(",")[0] in SPECS:  # a built-in agent with its settings: "llm,base_url=http://...,model=m"
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

    A spec's own settings (``ismcts,seconds=1``, see :mod:`treppen.agents.spec`) are not a name: an item
    is ``NAME=SPEC`` only when no comma comes before its first ``=``.

    :param items: agent specs as given on the command line
    :return: spec by unique name, in the given order
    :raises ValueError: for ``NAME=SPEC`` with an empty name (``=greedy``).
    """
    out: dict[str, str] = {}
    for item in items:
        head, eq, rest = item.partition("=")
        named = bool(eq) and "," not in head  # "ismcts,seconds=1" is a spec with a setting, not NAME=SPEC
        if named and not head.strip():
            raise ValueError(
                f"agent {shorten(item)}: no name before '='; give LABEL=SPEC (e.g. best={rest or 'greedy'})"
            )
        name, spec = (head, rest) if named else (agent_name(item), item)
        unique, k = name, 1
        while unique in out:
            k += 1
            unique = f"{name}-{k}"
        out[unique] = spec
    return out


_WORKER_AGENTS: dict[str, Agent] = {}


def _init_worker(sources: Mapping[str, str | Agent], rules: Rules) -> None:
    """Worker initializer: end with the parent, load the agents once per process, one torch thread each."""
    watch_parent()
    ignore_interrupts()
    _WORKER_AGENTS.update(build_agents(sources, rules))
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

    :param agents: agent by name: an :class:`~treppen.agents.base.Agent` or an ``agents.load`` spec; with
        ``workers > 1`` each worker gets a pickled copy (or loads the spec) once
    :param players: seats per table, 2..4
    :param decks: number of decks; each is played at every table in every seat rotation
    :param seed: tournament seed
    :param workers: worker processes (spawned); 1 plays in this process
    :param out: folder for ``tournament.json`` and ``results.jsonl`` (None: keep nothing on disk)
    :param rules: the rules of every deal (or a preset name); ``tournament.json`` records the
        preset and the options that differ from it
    :param tables_per_deck: see :func:`treppen.arena.schedule.schedule`
    :param limit: play at most this many new deals, then return (None: all)
    :param progress: show a progress bar
    :param on_record: called with each new record
    :param record_to: a ``.jsonl`` file to append each new deal's game record to (docs/ARCHITECTURE.md
        "Game records"; ``treppen replay`` and ``treppen serve`` replay them), or None
    :param ray_address: play the deals as Ray tasks (``workers`` is then ignored): ``"auto"`` or
        ``"host:port"`` joins a cluster, ``"local"`` starts a local instance (see
        :func:`treppen.arena.ray_cluster.init_ray`); None plays in this machine's processes
    :return: the records of the schedule played so far (including earlier runs), in schedule order
    :raises ValueError: for bad settings, an unknown spec or an out dir with other settings
    """
    names = list(agents)
    check_settings(names, players, decks, seed, workers)
    if limit is not None and limit < 0:
        raise ValueError(f"limit={limit}; need None (no limit) or >= 0")
    rules = make_rules(rules)
    specs = schedule(names, players, decks, seed, rules, tables_per_deck)
    built = build_agents(agents, rules)
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
    if out is not None:
        end_whole_line(Path(out) / RESULTS_FILE)
    fh = None if out is None else open(Path(out) / RESULTS_FILE, "a", encoding="utf-8")
    bar = tqdm(total=len(specs), initial=len(done), unit="deal", desc="tournament", disable=not (progress and todo))
    try:
        recorded = _recorded_deals(record_to)
        if ray_address is not None:
            from treppen.arena.ray_cluster import play_on_ray

            played = play_on_ray(todo, agents, ray_address, record_to is not None)
        else:
            played = _play_all(todo, built if workers == 1 else agents, workers, rules, record_to is not None)
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


def _play_all(
    todo: list[DealSpec], agents: Mapping[str, Agent | str], workers: int, rules: Rules, game_record: bool = False
):
    """Yield the records of ``todo``, in order with one worker, as they finish with more."""
    if workers == 1:
        for spec in todo:
            yield play_deal(spec, agents, game_record)  # type: ignore[arg-type]
        return
    if not todo:
        return
    pool = ProcessPoolExecutor(
        workers, mp_context=spawn_context(), initializer=_init_worker, initargs=(dict(agents), rules)
    )
    try:
        queue = iter(todo)
        with interrupts_held():  # the pool starts its workers here: no signal may stop it halfway
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
                with interrupts_held():
                    pending |= {pool.submit(_play_in_worker, s, game_record) for s in itertools.islice(queue, 1)}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
