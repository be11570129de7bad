"""Rollouts of the batched learner (``backend: kernel``): its rows stepped by the behaviour policy,
in the learner's thread, in worker processes (:class:`ProcessWorkers`) or in Ray actors
(:mod:`treppen.train.kernel.ray_workers`).

The ``n_envs`` rows are split into shards, one per rollout worker. A :class:`Shard` holds its rows
(:class:`~treppen.train.kernel.rows.LearnerRows`), the copy of the policy that plays them and its
sampling generator. Its rollout (:meth:`Shard.collect`) is ``n_steps`` steps of every row, each
one forward pass over the shard's rows, one sample per row and one env step, and hands back its values,
rewards and dones. A rollout is kept as the update reads it (:class:`Step`): each step's observations as their
nonzero entries, its legal rows one position after another, without padding.

Workers start a rollout with the learner's weights and hand it back when it is done:

- :class:`SerialWorkers` (``rollout_workers: 0``): one shard of every row, played by the learner's
  own net and its sampling generator, stepped in the learner's thread when the rollout is asked
  for: rollouts and updates one after the other, the learner of before the workers bit for bit;
- :class:`ProcessWorkers` (``rollout_workers: W``): W shards, each stepped in a process of its own
  (no interpreter lock shared with the learner) while the learner updates on the rollout before.
  That rollout was played by the weights before the last update: a policy lag of one update,
  which decoupled PPO corrects: the ratio clipped against the learner's policy at the update's
  start, each decision weighted by that policy's probability over the behaviour policy's stored
  one (:meth:`treppen.train.kernel.learner.Learner.update`). Each shard has its own seeds, so a
  seeded run is the same whatever the processes' timing, and a checkpoint written while a rollout
  is in flight holds that rollout's start (the shards' rows and generators, the weights playing
  it): ``--resume`` plays it again and continues exactly.

The learner (:mod:`treppen.train.kernel.learner`) computes the advantages and updates; this module
imports nothing of it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections import defaultdict
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, ClassVar, Protocol

import numpy as np
import torch

from treppen.arena.interrupts import ignore_interrupts, spawn_context
from treppen.arena.watchdog import watch_parent
from treppen.train.common.config import KernelConfig
from treppen.train.kernel.action_net_torch import ActionNet, Entries, nonzero_entries
from treppen.train.kernel.rows import LearnerRows, load_rows


class LearnerState(Protocol):
    """What the workers read of the learner (:class:`treppen.train.kernel.learner.Learner`): its
    net and sampling generator (the serial workers play with them) and its steps."""

    net: ActionNet
    sampler: torch.Generator
    steps: int


#: The opponents' pool: (steps, flat weights) of each snapshot, oldest first.
Pool = list[tuple[int, np.ndarray]]


@dataclass
class Step:
    """One rollout step of a shard's ``B`` rows, NumPy arrays as the update reads them.

    :ivar entries: the observations' nonzero :class:`~treppen.train.kernel.action_net_torch.Entries`.
    :ivar feats: float32 (N, F), the positions' legal rows one after another; ``counts``: int64 (B,), their number.
    :ivar index: int64 (B,), the chosen legal row of each position (its place among the position's rows).
    :ivar logp: float32 (B,), its log-probability under the policy that chose it.
    :ivar proximal: float32 (B,), its log-probability under the policy that PPO's ratio is clipped
        against (:meth:`treppen.train.kernel.learner.Learner.update`), set by the update.
    """

    entries: Entries
    feats: np.ndarray
    counts: np.ndarray
    index: np.ndarray
    logp: np.ndarray
    proximal: np.ndarray | None = None


@dataclass
class ShardRollout:
    """A shard's rollout: its ``T`` steps; the values, rewards and dones of its ``B`` rows (float32,
    float32 and bool (T, B)) and the values after the last step (float32 (B,)), from which the
    learner computes advantages (:func:`treppen.train.kernel.learner.gae`); the finished deals'
    learner rewards per opponent kind (:meth:`LearnerRows.take_results`)."""

    steps: list[Step]
    values: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    last: np.ndarray
    results: dict[str, list[float]]


@dataclass
class Rollout:
    """A rollout of every shard; within a step, the rows are the shards' one after another."""

    shards: list[ShardRollout]

    @property
    def length(self) -> int:
        """Steps of every row."""
        return len(self.shards[0].steps)

    @property
    def size(self) -> int:
        """The learner's decisions: steps times rows."""
        return sum(shard.values.size for shard in self.shards)

    def results(self) -> dict[str, list[float]]:
        """The finished deals' learner rewards per opponent kind, of every shard."""
        out: dict[str, list[float]] = defaultdict(list)
        for shard in self.shards:
            for kind, rewards in shard.results.items():
                out[kind].extend(rewards)
        return dict(out)


def derived_seed(*parts: int) -> int:
    """A seed of its own for each sequence of ``parts`` (the run's seed, a step count, a shard)."""
    return int(np.random.SeedSequence(list(parts)).generate_state(1, np.uint32)[0])


def new_rows(config: KernelConfig, count: int, seed: int) -> LearnerRows:
    """``count`` rows of the run's game and opponents, seeded by ``seed``, dealt."""
    rules = config.make_rules()
    rows = LearnerRows(count, config.num_players, rules, config.opponent_probs(), config.features, seed)
    rows.reset()
    return rows


def shard_sizes(config: KernelConfig, workers: int) -> list[int]:
    """The rows of each of ``workers`` shards: ``n_envs`` split as evenly as can be."""
    return [len(part) for part in np.array_split(np.arange(config.n_envs), workers)]


class Shard:
    """Rows and the policy that plays them (see the module docstring).

    :param config: the run's config.
    :param rows: the rows, dealt; ``net``: the policy playing them (on its device);
        ``sampler``: the generator of the samples.
    """

    def __init__(self, config: KernelConfig, rows: LearnerRows, net: ActionNet, sampler: torch.Generator):
        self.config, self.rows, self.net, self.sampler = config, rows, net, sampler
        self.pool_steps: tuple[int, ...] | None = None

    def prepare(self, weights: np.ndarray | None, pool: Pool | None) -> None:
        """Take the policy's flat weights (``None``: keep the net's) and the opponents' ``pool``
        (``None``, or the pool the rows already hold: keep theirs)."""
        if weights is not None:
            self.net.load_flat(weights)
        if pool is not None and tuple(s for s, _ in pool) != self.pool_steps:
            self.rows.set_snapshots([w for _, w in pool], self.net.shape())
            self.pool_steps = tuple(s for s, _ in pool)

    def collect(self, n_steps: int, steps: int) -> ShardRollout:
        """``n_steps`` steps of every row: one forward pass and one env step each; ``steps``: the
        run's steps so far, named by errors."""
        rows, net = self.rows, self.net
        device = next(net.parameters()).device
        out, values, rewards, dones = [], [], [], []
        for _ in range(n_steps):
            legal = rows.legal()
            entries = nonzero_entries(rows.obs)
            counts = legal.counts
            with torch.no_grad():
                logits, value = net.score(
                    entries.map(lambda a: torch.from_numpy(a).to(device)),
                    torch.from_numpy(legal.feats).to(device),
                    torch.from_numpy(counts).to(device),
                )
                logits = logits.cpu()
                check_finite(logits, counts, steps)
                logp_all = torch.log_softmax(logits, dim=1)
                index = torch.multinomial(logp_all.exp(), 1, generator=self.sampler).squeeze(1)
            reward, done = rows.step(legal.acts[legal.offsets[:-1] + index.numpy()])
            logp = logp_all.gather(1, index[:, None]).squeeze(1)
            out.append(Step(entries=entries, feats=legal.feats, counts=counts, index=index.numpy(), logp=logp.numpy()))
            values.append(value.cpu())
            rewards.append(torch.from_numpy(reward))
            dones.append(torch.from_numpy(done))
        with torch.no_grad():
            legal = rows.legal()
            entries = nonzero_entries(rows.obs)
            _, last = net.score(
                entries.map(lambda a: torch.from_numpy(a).to(device)),
                torch.from_numpy(legal.feats).to(device),
                torch.from_numpy(legal.counts).to(device),
            )
        return ShardRollout(
            steps=out,
            values=torch.stack(values).numpy(),
            rewards=torch.stack(rewards).numpy(),
            dones=torch.stack(dones).numpy(),
            last=last.cpu().numpy(),
            results=rows.take_results(),
        )

    def state(self) -> bytes:
        """The rows and the sampling generator's state, pickled (what a checkpoint holds of a shard)."""
        return pickle.dumps((self.rows, self.sampler.get_state()))


def check_finite(logits: torch.Tensor, counts: np.ndarray, steps: int) -> None:
    """Raise a clear error for a row without legal actions or with non-finite logits (NaN weights)."""
    if counts.min() < 1:
        rows = np.flatnonzero(counts < 1).tolist()[:5]
        raise RuntimeError(f"learner rows {rows} have no legal action at {steps} steps; the rows are out of step")
    bad = torch.isnan(logits).any(1) | ~torch.isfinite(logits).any(1)
    if bool(bad.any()):
        raise FloatingPointError(
            f"the policy's logits are not finite in rows {bad.nonzero().flatten().tolist()[:5]} at {steps} steps; "
            "lower learning_rate or max_grad_norm and resume from the last checkpoint"
        )


class Workers:
    """Rollout workers: :meth:`start` a rollout with the learner's weights, :meth:`wait` for it.

    :cvar lagged: whether a rollout runs while the learner updates (the next one is started before
        the update on this one), so that its policy lags one update behind the learner's.
    """

    lagged: ClassVar[bool]

    def start(self, net: ActionNet, pool: Pool, steps: int, capture: bool = False) -> None:
        """Start the next rollout, played by ``net``'s weights as they are now, the opponents'
        snapshots of ``pool``; ``steps``: the run's steps; ``capture``: keep the rollout's start
        for a checkpoint written while it runs (:meth:`state`)."""
        raise NotImplementedError

    def wait(self) -> Rollout:
        """The rollout started last, once every shard finished it."""
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        """What a checkpoint holds of the rows (and of a rollout in flight)."""
        return {}

    def close(self) -> None:
        """Stop the workers (after a rollout in flight ends)."""


class SerialWorkers(Workers):
    """``rollout_workers: 0``: every row in one shard, played by the learner's own net and
    generator in the learner's thread (see the module docstring).

    :param state: a checkpoint to resume: its ``rows`` (of a serial run), else new rows seeded by
        the run's seed and its steps.
    """

    lagged = False

    def __init__(self, config: KernelConfig, learner: LearnerState, state: dict[str, Any] | None = None):
        if state and "rows" in state:
            rows = load_rows(state["rows"])
        else:
            rows = new_rows(config, config.n_envs, derived_seed(config.seed, learner.steps) if state else config.seed)
        self.shard = Shard(config, rows, learner.net, learner.sampler)
        self.n_steps = config.n_steps
        self.started: tuple[Pool, int] | None = None

    def start(self, net: ActionNet, pool: Pool, steps: int, capture: bool = False) -> None:
        self.started = (pool, steps)

    def wait(self) -> Rollout:
        if self.started is None:
            raise RuntimeError("no rollout was started")
        (pool, steps), self.started = self.started, None
        self.shard.prepare(None, pool)
        return Rollout([self.shard.collect(self.n_steps, steps)])

    def state(self) -> dict[str, Any]:
        return {"rows": pickle.dumps(self.shard.rows)}

    @property
    def rows(self) -> LearnerRows:
        """The rows."""
        return self.shard.rows


def changed_pool(sent: list[tuple[int, ...] | None], i: int, pool: Pool) -> Pool | None:
    """``pool`` for worker ``i`` when it holds another (``sent[i]``, then updated), else ``None``."""
    key = tuple(s for s, _ in pool)
    changed, sent[i] = sent[i] != key, key
    return pool if changed else None


#: How a worker's shard starts: a saved :meth:`Shard.state`, or its rows, their seed and its sampler's seed.
ShardStart = bytes | tuple[int, int, int]


def shard_starts(config: KernelConfig, workers: int, steps: int, state: dict[str, Any] | None) -> list[ShardStart]:
    """How each of ``workers`` shards starts: from a checkpoint's ``shards`` when it holds
    ``workers`` of them, else new rows, seeded by the run's seed (and its ``steps`` when resuming)."""
    saved = state.get("shards", []) if state else []
    if len(saved) == workers:
        return list(saved)
    parts = (config.seed, steps) if state else (config.seed,)
    return [
        (size, derived_seed(*parts, i), derived_seed(*parts, i, 1))
        for i, size in enumerate(shard_sizes(config, workers))
    ]


def build_shard(config: KernelConfig, start: ShardStart) -> Shard:
    """The shard that ``start`` describes (:data:`ShardStart`), its policy a net of the run's
    shape whose weights come with each rollout."""
    net = ActionNet(config.net_arch[-1], config.action_dim, config.features).requires_grad_(False)
    if isinstance(start, bytes):
        rows, generator = pickle.loads(start)
        sampler = torch.Generator()
        sampler.set_state(generator)
    else:
        rows, sampler = new_rows(config, start[0], start[1]), torch.Generator().manual_seed(start[2])
    return Shard(config, rows, net, sampler)


def _serve(conn: Connection, config: KernelConfig, start: ShardStart) -> None:
    """A rollout worker process: its shard (:func:`build_shard`) and the requests on ``conn``:
    ``("collect", weights, pool, steps, capture)`` (answered by ``("state", ...)`` first when
    ``capture``, then ``("rollout", ...)``), ``("state",)`` and ``("stop",)``; an error is sent
    back as ``("error", err)``."""
    watch_parent()
    ignore_interrupts()  # Ctrl-C reaches the whole process group: the learner stops the workers
    torch.set_num_threads(1)
    shard = build_shard(config, start)
    while True:
        try:
            kind, *args = conn.recv()
        except EOFError:  # the learner is gone
            return
        if kind == "stop":
            return
        try:
            if kind == "state":
                conn.send(("state", shard.state()))
                continue
            weights, pool, steps, capture = args
            shard.prepare(weights, pool)
            if capture:
                conn.send(("state", shard.state()))
            conn.send(("rollout", shard.collect(config.n_steps, steps)))
        except Exception as err:  # the learner raises it
            conn.send(("error", err))


class ProcessWorkers(Workers):
    """``rollout_workers: W``: W shards, each in a worker process of its own (see the module docstring),
    started by ``spawn``; they end with the learner's process.

    :param workers: the number of shards and processes.
    :param state: a checkpoint to resume: its ``shards`` when it holds ``workers`` of them (and,
        when written during a rollout, that rollout's weights in ``behaviour``: it is played
        again), else new rows seeded by the run's seed and its steps.
    """

    lagged = True

    def __init__(self, config: KernelConfig, learner: LearnerState, workers: int, state: dict[str, Any] | None = None):
        starts = shard_starts(config, workers, learner.steps, state)
        resumed = bool(state) and isinstance(starts[0], bytes)
        context = spawn_context()
        self.pipes: list[Connection] = []
        self.processes: list[Any] = []
        for i, start in enumerate(starts):
            ours, theirs = context.Pipe()
            process = context.Process(target=_serve, args=(theirs, config, start), name=f"rollout-{i}", daemon=True)
            process.start()
            theirs.close()
            self.pipes.append(ours)
            self.processes.append(process)
        #: The weights of the rollout in flight when the resumed checkpoint was written: played again.
        self.relaunch: np.ndarray | None = state.get("behaviour") if state and resumed else None
        self.sent: list[tuple[int, ...] | None] = [None] * workers
        self.running = self.capture = False
        self.captured: list[bytes] | None = None
        self.weights: np.ndarray | None = None

    def start(self, net: ActionNet, pool: Pool, steps: int, capture: bool = False) -> None:
        if self.running:
            raise RuntimeError("a rollout is running; wait for it first")
        weights = net.export()
        relaunch, self.relaunch = self.relaunch, None
        for i, pipe in enumerate(self.pipes):
            if relaunch is not None:  # the rollout in flight when the checkpoint was written, played again
                pipe.send(("collect", relaunch, None, steps, capture))
                self.sent[i] = None
            else:
                pipe.send(("collect", weights, changed_pool(self.sent, i, pool), steps, capture))
        self.weights = relaunch if relaunch is not None else weights
        self.running, self.capture, self.captured = True, capture, None

    def _receive(self, i: int, kind: str) -> Any:
        """The answer ``kind`` of worker ``i``; its error raised here."""
        try:
            got, value = self.pipes[i].recv()
        except EOFError:
            raise RuntimeError(f"rollout worker process {i} ended (exit {self.processes[i].exitcode})") from None
        if got == "error":
            raise value
        if got != kind:
            raise RuntimeError(f"rollout worker process {i} answered {got!r} where {kind!r} was due")
        return value

    def _captured(self) -> list[bytes]:
        if self.captured is None:
            self.captured = [self._receive(i, "state") for i in range(len(self.pipes))]
        return self.captured

    def wait(self) -> Rollout:
        if not self.running:
            raise RuntimeError("no rollout was started")
        if self.capture:
            self._captured()
        self.running = False
        return Rollout([self._receive(i, "rollout") for i in range(len(self.pipes))])

    def state(self) -> dict[str, Any]:
        """The shards as the rollout in flight started them (with its weights) when it was started
        with ``capture``; else the shards as they are after it (a rollout in flight is dropped)."""
        if self.running and self.capture:
            return {"shards": self._captured(), "behaviour": self.weights}
        if self.running:
            self.wait()
        for pipe in self.pipes:
            pipe.send(("state",))
        return {"shards": [self._receive(i, "state") for i in range(len(self.pipes))]}

    def close(self) -> None:
        if self.running:  # a rollout in flight (a stop saved its start): taken, so that the workers read "stop"
            with contextlib.suppress(Exception):  # a worker that ended or failed: the run ends anyway
                self.wait()
        for pipe in self.pipes:
            try:
                pipe.send(("stop",))
            except OSError:  # the process ended already
                pass
        for process in self.processes:
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()


#: The fewest rows ``auto`` gives a worker: with fewer, a step's fixed costs outweigh its rows.
AUTO_ROWS = 32


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the system has one (a container's
    or ``taskset``'s share), else the machine's."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else os.cpu_count() or 1


def worker_count(config: KernelConfig) -> int:
    """The rollout workers on this machine: ``rollout_workers``; ``auto`` the cores less one
    (:func:`usable_cores`), at least 1, at most one per :data:`AUTO_ROWS` rows."""
    if config.rollout_workers != "auto":
        return config.rollout_workers
    return max(1, min(usable_cores() - 1, config.n_envs // AUTO_ROWS))
