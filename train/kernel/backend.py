"""``backend: kernel``: PPO over the rows of the batched env, opponents played by kernels.

The run: config -> the learner (:mod:`treppen.train.kernel.learner`: the net,
:class:`treppen.train.kernel.action_net_torch.ActionNet`, its loop of rollouts, advantages and PPO
updates) and its rollout workers (:mod:`treppen.train.kernel.rollouts`: the rows,
:class:`treppen.train.kernel.rows.LearnerRows`, stepped in the learner's thread, in worker processes
or in Ray actors) -> periodic snapshots, checkpoints, evaluations and Elo -> final model. Each rollout step
is one forward pass over a worker's rows: the learner's legal actions as feature rows, a masked
softmax, one sample per row, one env step (the opponents' moves inside it). An update makes
``n_epochs`` passes over the rollout in minibatches of whole steps (``batch_size / n_envs`` steps of
every row) with the clipped PPO loss, value loss and entropy bonus
(:func:`treppen.train.kernel.action_net_torch.masked_log_probs`); with ``rollout_workers`` above 0 the next
rollout runs meanwhile, played by the weights before this update.

Besides the shared layout (:mod:`treppen.train.common.rundir`), its run folder holds::

    tb/                losses, rewards per opponent kind, evaluations and Elo
    checkpoints/       model_<steps>_steps.pt: net, optimizer, generators and the rows' deals
                       (written atomically); ``--resume`` continues exactly where it was written
                       (on Ray: the rows are dealt afresh)
    pool/              snapshot_<steps>.npz: the frozen snapshots the opponents draw from
    final_model.npz    the trained net (:meth:`ActionNet.load`; the kernels read its flat weights)
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from treppen.agents.action_net import feature_context
from treppen.arena.interrupts import stop_requests
from treppen.train.common.checkpoints import TrainingStopped, checkpoints, newest_readable
from treppen.train.common.config import KernelConfig, resolve_name
from treppen.train.common.logger import Logger
from treppen.train.common.periodic_ratings import EloRating, Evaluation, Every
from treppen.train.common.rundir import open_run_dir, print_end, print_ratings, progress_bar, run_ratings
from treppen.train.kernel.action_net_torch import PredictModel
from treppen.train.kernel.learner import CHECKPOINT_SUFFIX, Learner, updates
from treppen.train.kernel.rollouts import (
    ProcessWorkers,
    SerialWorkers,
    Workers,
    worker_count,
)

FINAL_MODEL = "final_model.npz"


def make_workers(config: KernelConfig, learner: Learner, state: dict[str, Any] | None = None) -> Workers:
    """The run's rollout workers: on Ray with ``ray_address``, else serial (``rollout_workers: 0``)
    or processes; ``state``: a checkpoint to resume."""
    if config.ray_address is not None:
        from treppen.train.kernel.ray_workers import RayWorkers

        return RayWorkers(config, learner.steps)
    count = worker_count(config)
    return ProcessWorkers(config, learner, count, state) if count else SerialWorkers(config, learner, state)


def train_kernel(config: KernelConfig, resume: bool = False, command_line: list[str] | None = None) -> Path:
    """Train the action net by PPO over the batched env as ``config`` says; returns the run folder.

    :param config: a checked config of ``backend: kernel`` (:func:`treppen.train.common.config_files.load_config`).
    :param resume: continue from the run folder's newest checkpoint that reads, exactly as it was written
        (newer ones that do not read are named and passed over).
    :param command_line: the command to record in ``metadata.json`` (default: ``sys.argv``).
    :raises ValueError: when starting a new run in a folder that already holds one.
    """
    started = time.perf_counter()
    run_dir = resolve_name(config).run_dir
    found = checkpoints(run_dir / "checkpoints", suffix=CHECKPOINT_SUFFIX) if resume else []
    readable = newest_readable(found, read_checkpoint)  # read before anything is written
    state = None if readable is None else readable[2]
    if state is not None and state["steps"] >= config.total_timesteps and (run_dir / FINAL_MODEL).is_file():
        print(
            f"the run {run_dir} is complete: {state['steps']} of total_timesteps={config.total_timesteps}; "
            "nothing changed."
        )
        return run_dir
    run_dir = open_run_dir(config, resume, command_line)
    torch.set_num_threads(config.torch_threads)
    learner = Learner(config, config.seed)
    if readable is not None and state is not None:
        print(f"resuming from {readable[1]} ({state['steps']} steps)")
        learner.restore(state)
    start_steps = learner.steps
    logger = Logger(run_dir / "tb")
    evals, elo = run_ratings(config, config.make_rules(), run_dir)
    model = PredictModel(learner.net, feature_context(config.make_rules()), logger)
    for callback in (evals, elo):
        callback.model = model  # played through predict(), logged through .logger
    periods = {
        name: Every(every, learner.steps)
        for name, every in (
            ("snapshot", config.snapshot_every),
            ("checkpoint", config.checkpoint_every),
            ("eval", config.eval_every),
            ("elo", config.elo_every),
        )
    }
    workers = make_workers(config, learner, state)
    bar = _progress(config, learner.steps)
    try:
        with stop_requests() as stop:  # Ctrl-C or SIGTERM: stop after the update, with a checkpoint
            # a checkpoint due after this update (or a stop) keeps the start of the rollout running meanwhile
            due = lambda steps: bool(stop) or copy.copy(periods["checkpoint"]).due(steps)  # noqa: E731
            for stats, results in updates(learner, workers, config.total_timesteps, capture=due):
                _record(logger, stats, results)
                if bar is not None:
                    bar.update(learner.steps - bar.n)
                if periods["snapshot"].due(learner.steps):
                    learner.snapshot(run_dir / "pool")
                if periods["checkpoint"].due(learner.steps) and not stop:
                    learner.save(run_dir / "checkpoints", workers)
                if periods["eval"].due(learner.steps) and not stop:
                    evals.run(learner.steps)
                if periods["elo"].due(learner.steps) and not stop:
                    elo.run(learner.steps)
                logger.dump(learner.steps)
                if stop:
                    break
            saved = learner.save(run_dir / "checkpoints", workers)  # the last one, while the workers hold their rows
    except KeyboardInterrupt:  # a second signal, or one outside the main thread's handlers: rows may be mid-step
        print(f"\nstopped at once; continue from the last checkpoint with `treppen train --resume {run_dir}`")
        raise
    except TrainingStopped as lost:  # rollout workers lost for good (on Ray)
        saved = learner.save(run_dir / "checkpoints", workers)
        raise TrainingStopped(
            f"training stopped at {learner.steps} of {config.total_timesteps} steps: {lost}; saved {saved}; continue "
            f"with `treppen train --resume {run_dir}` once the cluster has room (or with rollout_workers=N for fewer)"
        ) from None
    finally:
        workers.close()
        if bar is not None:
            bar.close()
    if stop:
        print(
            f"\ninterrupted at {learner.steps} steps; saved {saved}; continue with `treppen train --resume {run_dir}`"
        )
        raise stop.stop()
    _finish(learner, run_dir, evals, elo, logger)
    print_end(run_dir, config, time.perf_counter() - started, learner.steps - start_steps)
    return run_dir


def read_checkpoint(path: Path) -> dict[str, Any]:
    """A checkpoint's state (:meth:`Learner.state`), its tensors on the CPU (a run trained on a GPU
    resumes on any device).

    :raises ValueError: for a file that loads but is no checkpoint of this backend (its steps, net and
        optimizer missing).
    """
    state = torch.load(path, weights_only=False, map_location="cpu")
    if not isinstance(state, dict) or not {"steps", "net", "optimizer", "sampler", "pool"} <= set(state):
        raise ValueError("not a checkpoint of backend kernel (no steps, net, optimizer, sampler and pool in it)")
    return state


def _finish(learner: Learner, run_dir: Path, evals: Evaluation, elo: EloRating, logger: Logger) -> None:
    """Save the final model, evaluate and rate it, and print the summary."""
    final = learner.net.save(run_dir / FINAL_MODEL)
    if evals.latest.get("steps") != learner.steps:
        evals.run(learner.steps)
    if learner.config.elo_every and elo.latest.get("steps") != learner.steps:
        elo.run(learner.steps)
    logger.dump(learner.steps)
    logger.close()
    print(f"final model: {final}")
    print_ratings(run_dir, learner.config.eval_deals, evals, elo)


def _progress(config: KernelConfig, start: int) -> Any:
    """The run's progress bar (:func:`treppen.train.common.rundir.progress_bar`; ``None`` with ``progress: false``)."""
    return progress_bar(start, config.total_timesteps, config.n_steps * config.n_envs) if config.progress else None


def _record(logger: Logger, stats: dict[str, float], results: dict[str, list[float]]) -> None:
    """The update's losses (``train/*``) and the finished deals' mean reward per opponent kind (``selfplay/*``)."""
    for key, value in stats.items():
        logger.record(f"train/{key}", value)
    for kind, values in results.items():
        logger.record(f"selfplay/reward_vs_{kind}", float(np.mean(values)))
