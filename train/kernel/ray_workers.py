"""Rollout workers of ``backend: kernel`` on a Ray cluster (``ray_address`` set): each a Ray actor of
one CPU (:class:`RolloutActor`) holding a shard of the rows, its own copy of the policy and the
opponents' snapshots (a :class:`treppen.train.kernel.rollouts.Shard`), spread over the cluster's
nodes. The learner stays one process, on its GPU where one is present: it sends each rollout's
weights (and the pool when it changed) and updates on the rollout before meanwhile, as with the
processes of :class:`treppen.train.kernel.rollouts.ProcessWorkers`.

A lost actor (its process or its node gone) is replaced by a new one whose rows are dealt afresh
under a seed of their own, and the new one plays the rollout the lost one did not finish: the lost
actor's transitions are never used, and no transition is used twice. When a replacement finds no
room on the cluster for :data:`PLACE_SECONDS`, or a shard loses :data:`TRIES` actors in one rollout,
the run stops (:class:`treppen.train.common.checkpoints.TrainingStopped`) with a checkpoint. A checkpoint
holds no rows (they live in the actors): ``--resume`` deals new ones, seeded by the run's steps.
Needs ``pip install 'treppen[ray]'``, and treppen installed on every node.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import ray
import torch

from treppen.arena.ray_cluster import init_ray
from treppen.train.common.checkpoints import TrainingStopped
from treppen.train.common.config import KernelConfig
from treppen.train.kernel.action_net_torch import ActionNet
from treppen.train.kernel.rollouts import (
    Pool,
    Rollout,
    ShardRollout,
    ShardStart,
    Workers,
    build_shard,
    changed_pool,
    derived_seed,
    shard_sizes,
)

#: Seconds a replacement actor may wait for room on the cluster before the run stops.
PLACE_SECONDS = 300.0
#: Actors a shard may lose in one rollout before the run stops.
TRIES = 3


class RolloutActor:
    """A shard of the rows in a Ray actor of one CPU (``start``: :func:`treppen.train.kernel.rollouts.build_shard`'s;
    the actor class is :data:`REMOTE_ACTOR`)."""

    def __init__(self, config: KernelConfig, start: ShardStart):
        torch.set_num_threads(1)
        self.shard = build_shard(config, start)

    def collect(self, weights: Any, pool: Pool | None, n_steps: int, steps: int) -> ShardRollout:
        """The shard's next rollout, played by the flat ``weights`` (see :meth:`Shard.collect`)."""
        self.shard.prepare(weights, pool)
        return self.shard.collect(n_steps, steps)

    def where(self) -> tuple[str, int]:
        """The id of the actor's node and its process id."""
        return ray.get_runtime_context().get_node_id(), os.getpid()


#: :class:`RolloutActor` as a Ray actor class of one CPU.
REMOTE_ACTOR: Any = ray.remote(num_cpus=1)(RolloutActor)


class RayWorkers(Workers):
    """Rollout actors on the cluster at ``config.ray_address`` (see the module docstring).

    :param config: the run's config: ``rollout_workers`` actors (``auto``: the cluster's CPUs).
    :param steps: the run's steps (a resumed run's): its actors' rows are seeded by them.
    """

    lagged = True

    def __init__(self, config: KernelConfig, steps: int):
        self.config, self.steps = config, steps
        self.connected = init_ray(config.ray_address)
        # rollouts come back read-only from Ray's object store; the update only reads them
        warnings.filterwarnings("ignore", "The given NumPy array is not writable", UserWarning)
        count = config.rollout_workers
        if count == "auto":
            count = min(max(1, int(ray.cluster_resources().get("CPU", 1))), config.n_envs)
        self.sizes = shard_sizes(config, max(count, 1))
        #: How many actors each shard has had (the lost ones and the one now).
        self.incarnations = [1] * len(self.sizes)
        self.actors = [self._actor(i) for i in range(len(self.sizes))]
        self.sent: list[tuple[int, ...] | None] = [None] * len(self.sizes)  # the pool each actor holds
        self.running: list[Any] = []
        self.weights: Any = None  # the rollout's weights in Ray's object store
        self.pool: Pool = []
        self.at_steps = steps
        nodes = ray.get([actor.where.remote() for actor in self.actors])
        print(f"rollout actors: {len(self.actors)} on {len({node for node, _ in nodes})} node(s) of the Ray cluster")

    def _actor(self, i: int) -> Any:
        seed = derived_seed(self.config.seed, self.steps, i, self.incarnations[i])
        actor = REMOTE_ACTOR.options(scheduling_strategy="SPREAD")
        return actor.remote(self.config, (self.sizes[i], seed, derived_seed(seed, 1)))

    def _submit(self, i: int) -> Any:
        """Start the rollout of shard ``i`` (the pool only to an actor that holds another)."""
        pool = changed_pool(self.sent, i, self.pool)
        return self.actors[i].collect.remote(self.weights, pool, self.config.n_steps, self.at_steps)

    def start(self, net: ActionNet, pool: Pool, steps: int, capture: bool = False) -> None:
        if self.running:
            raise RuntimeError("a rollout is running; wait for it first")
        self.weights, self.pool, self.at_steps = ray.put(net.export()), pool, steps
        self.running = [self._submit(i) for i in range(len(self.actors))]

    def wait(self) -> Rollout:
        if not self.running:
            raise RuntimeError("no rollout was started")
        shards = []
        for i in range(len(self.actors)):
            for _ in range(TRIES):
                try:
                    shards.append(ray.get(self.running[i]))
                    break
                except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError) as err:
                    self._replace(i, err)
                    self.running[i] = self._submit(i)
            else:
                self.running = []
                raise TrainingStopped(f"rollout actor {i} was lost {TRIES} times in one rollout")
        self.running = []
        return Rollout(shards)

    def _replace(self, i: int, err: Exception) -> None:
        """A new actor for shard ``i``, its rows dealt afresh; :class:`TrainingStopped` when the
        cluster has no room for it."""
        self.incarnations[i] += 1
        self.actors[i] = self._actor(i)
        self.sent[i] = None
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        print(f"rollout actor {i} lost ({reason}); a new one deals its rows afresh and plays its rollout")
        try:
            ray.get(self.actors[i].where.remote(), timeout=PLACE_SECONDS)
        except ray.exceptions.GetTimeoutError:
            raise TrainingStopped(
                f"rollout actor {i} was lost and the cluster had no room for a new one in {PLACE_SECONDS:.0f} s"
            ) from None

    def close(self) -> None:
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
        if self.connected:
            ray.shutdown()
