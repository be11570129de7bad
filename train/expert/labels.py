"""Search labels as a dataset job (``treppen label``): the positions of seeded deals, each labelled
by a search with its per-move statistics, written in shards that a killed job never leaves half
written and a resumed job never writes twice.

**The job** (:class:`LabelJob`). Deal ``d`` (``0 <= d < deals``) is dealt and seeded from
``(seed, d)`` alone (:func:`deal_seeds`). Its labelled seat, ``d % num_players``, is played by
``player``: ``"search"`` (the labelling search itself, which then labels the positions it plays)
or any agent spec (a net plays faster: ``runs/a/final_model.npz``); every other seat by
``opponents[d % len(opponents)]`` (greedy, snapshots, any spec). Every decision of the labelled
seat with two or more legal actions gives one label. So a label depends on the job and its deal
only, never on the threads, processes or nodes that computed it.

**Shards.** Shard ``k`` holds deals ``k * shard_deals`` to ``(k + 1) * shard_deals - 1``, in the
file ``shard_<k>.npz`` (five digits) of the job's folder, written atomically
(:func:`treppen_env.files.atomic_write`) once the whole shard is labelled. ``job.json`` beside them
holds the job; a rerun in the folder (the same job) labels only the shards that are not there, so
no position is written twice, and a different job there is refused. A shard's arrays (``n``
labels, ``m`` searched moves in all):

=============  ==================  ================================================================
array          dtype and shape     meaning
=============  ==================  ================================================================
``obs``        float32 (n, 969)    the labelled seat's observation (:mod:`treppen_env.observation`)
``mask``       bool (n, 898)       its legal mask
``action``     int64 (n,)          the search's move (its label)
``played``     int64 (n,)          the move the player played (``action`` with ``player="search"``)
``deal``       int64 (n,)          the job's deal number
``step``       int64 (n,)          the decision's index in its deal (every seat's decisions count)
``first``      int64 (n + 1,)      label ``i``'s searched moves are ``first[i]`` to ``first[i+1]-1``
``moves``      int64 (m,)          the searched moves, greedy's choice first in each label
``playouts``   int64 (m,)          each move's simulations
``value``      float64 (m,)        each move's mean objective (the search's ``objective``, e.g. the
                                   win score in [0, 1]; 0 without playouts)
``target``     float64 (m,)        the target distribution over each label's searched moves
=============  ==================  ================================================================

The target (``target``): ``"softmax"`` (default) is ``softmax(value / temperature)`` over the
moves with playouts (zero for the others), ``"visits"`` each move's share of the playouts (what
IS-MCTS spends on the moves it rates; flat Monte Carlo shares them evenly, so use ``"softmax"``
with ``rollout``). A label whose search had one move (the heuristic's meld or lay-off, RULES
§4.3, under ``moves=plan``) has that move as its target and 0 playouts.

**Throughput.** Shards are labelled on ``threads`` threads (the search kernels release the GIL),
or as Ray tasks across a cluster's nodes when ``ray_address`` is given
(:mod:`treppen.train.expert.ray_labels`); the job's folder then lies on the machine that runs the
command, and the shards' arrays come back to it. A seeded job with a playout budget (not
``seconds`` or ``deadline``) gives the same shards however it is run.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from treppen import agents
from treppen.agents.search import SearchAgent
from treppen.arena.match import play_match
from treppen.train.common.checkpoints import problem
from treppen_env.aec import raw_env
from treppen_env.agent_core import search_kernels
from treppen_env.files import atomic_write, atomic_write_text
from treppen_env.observation import OBS_SIZE
from treppen_env.rules import PRESETS, make_rules

#: The job's settings file and the shards' names in its folder.
JOB_FILE = "job.json"
SHARD = "shard_{:05d}.npz"
SHARD_NAME = re.compile(r"shard_(\d{5})\.npz")
#: Targets a label may carry (:class:`LabelJob`'s ``target``).
TARGETS = ("softmax", "visits")
#: The arrays of a shard, in order (see the module docstring).
ARRAYS = ("obs", "mask", "action", "played", "deal", "step", "first", "moves", "playouts", "value", "target")
#: ``player`` naming the labelling search itself.
SEARCH_PLAYS = "search"


@dataclass(frozen=True)
class LabelJob:
    """A labelling job (see the module docstring).

    :param deals: deals in the job (at least 1).
    :param search: the labelling search's spec (:func:`treppen.agents.load`; a search agent), e.g.
        ``rollout,playouts=500`` or ``rollout,playouts=500,net=FILE,own_playout=net``.
    :param player: who plays the labelled seat: ``"search"`` or an agent spec.
    :param opponents: the other seats' agent specs, deal ``d`` taking ``opponents[d % len]``.
    :param num_players: seats at the table, 2..4.
    :param rules: the rules preset (RULES §1).
    :param seed: the job's seed (deals, agents, searches).
    :param shard_deals: deals per shard (at least 1).
    :param target: ``"softmax"`` or ``"visits"``.
    :param temperature: the softmax target's temperature, in the objective's units (positive).
    :raises ValueError: naming the setting, its value and what is allowed.
    """

    deals: int
    search: str = "rollout,playouts=500"
    player: str = SEARCH_PLAYS
    opponents: tuple[str, ...] = ("greedy",)
    num_players: int = 2
    rules: str = "treppenromme"
    seed: int = 0
    shard_deals: int = 20
    target: str = "softmax"
    temperature: float = 0.05

    def __post_init__(self) -> None:
        object.__setattr__(self, "opponents", tuple(self.opponents))
        if not (isinstance(self.deals, int) and self.deals >= 1):
            raise ValueError(f"deals={self.deals!r} must be a whole number of at least 1")
        if not (isinstance(self.shard_deals, int) and self.shard_deals >= 1):
            raise ValueError(f"shard_deals={self.shard_deals!r} must be a whole number of at least 1")
        if self.num_players not in (2, 3, 4):
            raise ValueError(f"num_players={self.num_players!r} must be 2, 3 or 4")
        if self.rules not in PRESETS:
            raise ValueError(f"rules={self.rules!r}; choose one of {sorted(PRESETS)}")
        if self.target not in TARGETS:
            raise ValueError(f"target={self.target!r}; choose one of {list(TARGETS)}")
        if not (isinstance(self.temperature, (int, float)) and 0 < self.temperature < math.inf):
            raise ValueError(f"temperature={self.temperature!r} must be positive and finite (objective units)")
        if not self.opponents:
            raise ValueError("opponents is empty; give at least one agent spec (e.g. greedy)")

    @property
    def shards(self) -> int:
        """The number of shards."""
        return -(-self.deals // self.shard_deals)

    def shard_range(self, k: int) -> range:
        """The deals of shard ``k``."""
        return range(k * self.shard_deals, min((k + 1) * self.shard_deals, self.deals))

    def to_dict(self) -> dict[str, Any]:
        """The job as JSON-ready values (``job.json``)."""
        out = asdict(self)
        out["opponents"] = list(self.opponents)
        return out

    def check_agents(self) -> None:
        """Build every agent of the job once, so that a bad spec fails before any deal.

        :raises ValueError: for a spec that builds no agent, or a ``search`` that is no search agent.
        """
        rules = make_rules(self.rules)
        searcher = agents.load(self.search, rules=rules)
        if not isinstance(searcher, SearchAgent):
            raise ValueError(f"search={self.search!r} is no search agent (rollout or ismcts, with settings)")
        for spec in ({self.player} - {SEARCH_PLAYS}) | set(self.opponents):
            agents.load(spec, rules=rules)


def deal_seeds(job: LabelJob, deal: int) -> list[int]:
    """The seeds of deal ``deal``: the env's, then one per seat, then the labelling search's."""
    return [int(s) for s in np.random.SeedSequence((job.seed, deal)).generate_state(job.num_players + 2)]


def targets(value: np.ndarray, playouts: np.ndarray, kind: str, temperature: float) -> np.ndarray:
    """A label's target distribution over its searched moves (see the module docstring).

    :param value: float64 (m,) the moves' mean objective; ``playouts``: (m,) their simulations.
    :param kind: ``"softmax"`` or ``"visits"``; ``temperature``: the softmax's, objective units.
    :return: float64 (m,), summing to 1; the first move alone when nothing was played out.
    """
    out = np.zeros(value.size)
    played = playouts > 0
    if not played.any():
        out[0] = 1.0
    elif kind == "visits":
        out = playouts / playouts.sum()
    else:
        z = np.where(played, value / temperature, -np.inf)
        out = np.exp(z - z.max())
        out /= out.sum()
    return out


class _Shard:
    """The labels of one shard as they are found (lists of rows), then as its arrays.

    :param job: the job; ``objective``: the labelling search's (its moves' ``value``).
    """

    def __init__(self, job: LabelJob, objective: str):
        self.job = job
        self.objective = search_kernels.OBJECTIVES[objective]
        self.rows: dict[str, list[Any]] = {name: [] for name in ARRAYS if name != "first"}
        self.counts: list[int] = []

    def add(self, where: tuple[int, int], observation: dict[str, Any], searched: tuple[int, Any, Any], played: int):
        """One label: its ``(deal, step)``, the position, the search's ``(action, moves, statistics)``
        (:meth:`treppen.agents.search.SearchAgent.search_stats`) and the move played."""
        action, moves, stats = searched
        count = stats[:, search_kernels.S_COUNT]
        win, margin = search_kernels.S_WIN, search_kernels.S_MARGIN
        value = np.array([search_kernels.objective_value(r[win] / n, r[margin] / n, self.objective) if n else 0.0
                          for r, n in zip(stats, count, strict=True)])  # fmt: skip
        rows = self.rows
        rows["obs"].append(np.asarray(observation["observation"], dtype=np.float32))
        rows["mask"].append(np.asarray(observation["action_mask"]) != 0)
        rows["action"].append(action)
        rows["played"].append(played)
        rows["deal"].append(where[0])
        rows["step"].append(where[1])
        rows["moves"].append(np.asarray(moves, dtype=np.int64))
        rows["playouts"].append(count.astype(np.int64))
        rows["value"].append(value)
        rows["target"].append(targets(value, count, self.job.target, self.job.temperature))
        self.counts.append(len(moves))

    def arrays(self) -> dict[str, np.ndarray]:
        """The shard's arrays (see the module docstring)."""
        rows, n = self.rows, len(self.counts)
        out = {
            "obs": np.array(rows["obs"], dtype=np.float32).reshape(n, OBS_SIZE),
            "mask": np.array(rows["mask"], dtype=bool).reshape(n, search_kernels.NUM_ACTIONS),
            "first": np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64),
        }
        for name in ("action", "played", "deal", "step"):
            out[name] = np.array(rows[name], dtype=np.int64)
        for name, dtype in (("moves", np.int64), ("playouts", np.int64), ("value", np.float64), ("target", np.float64)):
            out[name] = np.concatenate(rows[name]).astype(dtype) if rows[name] else np.zeros(0, dtype=dtype)
        return {name: out[name] for name in ARRAYS}


class _Table:
    """The agents of a shard's deals, built once per shard (threads and Ray tasks share none)."""

    def __init__(self, job: LabelJob):
        rules = make_rules(job.rules)
        self.job = job
        self.env = raw_env(num_players=job.num_players, rules=rules)
        self.searcher = agents.load(job.search, rules=rules)
        self.player = self.searcher if job.player == SEARCH_PLAYS else agents.load(job.player, rules=rules)
        self.opponents = {spec: agents.load(spec, rules=rules) for spec in set(job.opponents)}

    def label_deal(self, deal: int, shard: _Shard, stop: threading.Event | None = None) -> None:
        """Play deal ``deal`` and add its labelled seat's labels to ``shard``; once ``stop`` is set,
        raise :class:`Cancelled` at the next decision."""
        job, searcher, player = self.job, self.searcher, self.player
        seeds = deal_seeds(job, deal)
        labelled = deal % job.num_players
        other = self.opponents[job.opponents[deal % len(job.opponents)]]
        seats = [player if s == labelled else other for s in range(job.num_players)]
        if player is not searcher:
            searcher.reset(seed=seeds[-1])
        step = 0

        def record(_env: Any, seat: int, observation: dict[str, Any], action: int) -> None:
            nonlocal step
            if stop is not None and stop.is_set():
                raise Cancelled(f"deal {deal}")
            if seat == labelled and np.count_nonzero(observation["action_mask"]) > 1:
                if player is searcher:
                    assert searcher.last_search is not None
                    searched = (int(action), *searcher.last_search)
                else:
                    searched = searcher.search_stats(observation)
                shard.add((deal, step), observation, searched, int(action))
            step += 1

        play_match(self.env, seats, seed=seeds[0], agent_seeds=seeds[1:-1], on_step=record)


class Cancelled(Exception):
    """A shard's labelling stopped before its end (the job was interrupted)."""


def label_shard(job: LabelJob, k: int, stop: threading.Event | None = None) -> dict[str, np.ndarray]:
    """Play and label the deals of shard ``k`` (see the module docstring): its arrays.

    :param stop: once set, stop at the next decision (raising :class:`Cancelled`).
    """
    table = _Table(job)
    shard = _Shard(job, table.searcher.settings.objective)
    for deal in job.shard_range(k):
        table.label_deal(deal, shard, stop)
    return shard.arrays()


def write_shard(folder: Path, k: int, arrays: dict[str, np.ndarray]) -> Path:
    """Write shard ``k``'s arrays atomically (compressed ``.npz``)."""
    named: dict[str, Any] = dict(arrays)
    return atomic_write(folder / SHARD.format(k), lambda tmp: np.savez_compressed(tmp, **named), suffix=".npz")


def done_shards(folder: Path) -> set[int]:
    """The shards written in ``folder`` (a temporary file of an interrupted write is none)."""
    return {int(m.group(1)) for p in folder.glob("shard_*.npz") if (m := SHARD_NAME.fullmatch(p.name))}


def damaged_shards(folder: Path, shards: set[int]) -> dict[int, str]:
    """The ``shards`` of ``folder`` that do not read whole (cut short, empty, an array missing or
    failing its CRC check), each with its problem (:func:`treppen.train.common.checkpoints.problem`)."""
    damaged = {}
    for k in sorted(shards):
        try:
            with np.load(folder / SHARD.format(k)) as data:
                for name in ARRAYS:
                    data[name]
        except Exception as err:  # the file's damage, whatever numpy or zipfile makes of it
            damaged[k] = problem(err)
    return damaged


def read_labels(folder: str | Path) -> dict[str, np.ndarray]:
    """Every shard of a job's folder, in shard order, as one set of arrays (``first`` offsets over
    all the moves; see the module docstring).

    :raises FileNotFoundError: when the folder holds no shard.
    """
    folder = Path(folder)
    parts = []
    for k in sorted(done_shards(folder)):
        with np.load(folder / SHARD.format(k)) as data:
            parts.append({name: data[name] for name in ARRAYS})
    if not parts:
        raise FileNotFoundError(f"no label shards (shard_*.npz) in {str(folder)!r}")
    out = {name: np.concatenate([p[name] for p in parts]) for name in ARRAYS if name != "first"}
    starts = np.cumsum([0] + [p["first"][-1] for p in parts[:-1]])
    out["first"] = np.concatenate([[0]] + [p["first"][1:] + s for p, s in zip(parts, starts, strict=True)])
    return {name: out[name] for name in ARRAYS}


def open_job(folder: str | Path, job: LabelJob) -> Path:
    """The job's folder, with ``job.json`` written (a new job) or checked (a rerun).

    :raises ValueError: when the folder holds another job (naming the settings that differ), a
        ``job.json`` that is not a job's, or shards without a ``job.json`` (naming the folder).
    """
    folder = Path(folder)
    path = folder / JOB_FILE
    if path.is_file():
        try:
            saved = json.loads(path.read_bytes())
        except ValueError:  # JSONDecodeError and UnicodeDecodeError
            saved = None
        if not isinstance(saved, dict):
            raise ValueError(
                f"{str(path)!r} is not a label job's settings (not a JSON object), so the shards in {str(folder)!r} "
                "belong to no job known; give another --out"
            )
        differ = sorted(k for k, v in job.to_dict().items() if saved.get(k) != v)
        if differ:
            raise ValueError(
                f"{str(folder)!r} holds another label job (it differs in {', '.join(differ)}); "
                "give the same settings to resume it, or another --out"
            )
    elif done_shards(folder):
        raise ValueError(
            f"{str(folder)!r} holds label shards but no {JOB_FILE}, so they belong to no job known (they may be "
            "another job's: another seed, search or deals); give another --out, or put the job's job.json back"
        )
    else:
        atomic_write_text(path, json.dumps(job.to_dict(), indent=2) + "\n")
    return folder


#: What labels a list of shards: yields ``(k, arrays)`` as each is done.
Labeller = Callable[[LabelJob, Sequence[int]], Iterator[tuple[int, dict[str, np.ndarray]]]]


def on_threads(threads: int) -> Labeller:
    """Label shards on ``threads`` threads of this process, at most two shards in flight per thread;
    when the caller stops (Ctrl-C), the shards in flight stop at their next decision."""

    def run(job: LabelJob, todo: Sequence[int]) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        if threads == 1:
            for k in todo:
                yield k, label_shard(job, k)
            return
        stop = threading.Event()
        pool = ThreadPoolExecutor(threads)
        try:
            waiting = iter(todo)
            pending = {pool.submit(label_shard, job, k, stop): k for k in _take(waiting, 2 * threads)}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    k = pending.pop(future)
                    yield k, future.result()
                    pending.update({pool.submit(label_shard, job, j, stop): j for j in _take(waiting, 1)})
        finally:  # done, or interrupted (Ctrl-C): the shards in flight stop at their next decision
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)

    return run


def _take(items: Iterator[int], n: int) -> list[int]:
    return [k for _, k in zip(range(n), items, strict=False)]


@dataclass
class JobReport:
    """What a run of a job did: shards and labels written now, labels in the folder, wall seconds."""

    shards: int
    labels: int
    total_labels: int
    seconds: float

    @property
    def rate(self) -> float:
        """Labels written per wall second."""
        return self.labels / self.seconds if self.seconds > 0 else 0.0


def run_job(
    job: LabelJob,
    folder: str | Path,
    threads: int = 1,
    ray_address: str | None = None,
    progress: bool = False,
) -> JobReport:
    """Label the job's shards that ``folder`` lacks (see the module docstring). A shard of the
    folder that does not read whole is labelled again, named in a line on stdout
    (:func:`damaged_shards`).

    :param threads: threads of this process (without ``ray_address``), at least 1.
    :param ray_address: label the shards as Ray tasks: ``"local"``, ``"auto"`` or ``host:port``
        (:func:`treppen.arena.ray_cluster.init_ray`); None: this process's threads.
    :param progress: show a progress bar (shards, labels, labels per second).

    :raises ValueError: for another job in the folder (or shards of no known job), a bad spec or ``threads``.
    """
    if not (isinstance(threads, int) and threads >= 1):
        raise ValueError(f"threads={threads!r} must be a whole number of at least 1")
    job.check_agents()
    folder = open_job(folder, job)
    done = done_shards(folder)
    damaged = damaged_shards(folder, done)
    if damaged:
        named = "; ".join(f"{folder / SHARD.format(k)} ({why})" for k, why in damaged.items())
        print(f"labelling {len(damaged)} damaged shard{'s' * (len(damaged) > 1)} again: {named}", flush=True)
        done -= set(damaged)
    todo = [k for k in range(job.shards) if k not in done]
    if ray_address is None:
        labeller = on_threads(threads)
    else:
        from treppen.train.expert.ray_labels import on_ray

        labeller = on_ray(ray_address, label_shard)
    from tqdm import tqdm

    bar = tqdm(total=job.shards, initial=len(done), unit="shard", desc="labels", disable=not (progress and todo))
    started, labels = time.perf_counter(), 0
    try:
        for k, arrays in labeller(job, todo):
            write_shard(folder, k, arrays)
            labels += len(arrays["action"])
            bar.update(1)
            bar.set_postfix(labels=labels, per_s=f"{labels / (time.perf_counter() - started):.1f}")
    finally:
        bar.close()
    total = sum(_label_count(folder / SHARD.format(k)) for k in done) + labels
    return JobReport(len(todo), labels, total, time.perf_counter() - started)


def _label_count(path: Path) -> int:
    with np.load(path) as data:
        return len(data["action"])
