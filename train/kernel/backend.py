"""``backend: kernel``: PPO over the rows of the batched env, opponents played by kernels.

Reads top to bottom: config -> net (:class:`treppen.train.kernel.action_net_torch.ActionNet`) and rollout
workers (:mod:`treppen.train.kernel.rollouts`: the rows, :class:`treppen.train.kernel.rows.LearnerRows`,
stepped in the learner's thread, in worker processes or in Ray actors) -> rollouts with GAE ->
PPO update -> periodic snapshots, checkpoints, evaluations and Elo -> final model. Each rollout step
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
from torch import nn

from treppen.agents.action_net import feature_context
from treppen.arena.interrupts import stop_requests
from treppen.train.common.checkpoints import TrainingStopped, checkpoint_path, checkpoints, newest_readable
from treppen.train.common.config import KernelConfig, resolve_name
from treppen.train.common.logger import Logger
from treppen.train.common.ratings import EloRating, Evaluation, Every
from treppen.train.common.rundir import open_run_dir, print_end, print_ratings, progress_bar, run_ratings
from treppen.train.kernel.action_net_torch import ActionNet, Entries, PredictModel, legal_mask, masked_log_probs
from treppen.train.kernel.rollouts import (
    Pool,
    ProcessWorkers,
    Rollout,
    SerialWorkers,
    Step,
    Workers,
    updates,
    worker_count,
)
from treppen_env.files import atomic_write

CHECKPOINT_SUFFIX = ".pt"
FINAL_MODEL = "final_model.npz"


def device_of(name: str) -> torch.device:
    """The torch device of the ``device`` setting: ``auto`` is a GPU where one is present."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


class Learner:
    """The learner's state: the net and its optimizer, the generator of its minibatches (and, with
    ``rollout_workers: 0``, of the rollouts' samples), the pool of snapshots and the step count;
    a checkpoint holds it with the rows of the rollout workers (:mod:`treppen.train.kernel.rollouts`).

    :param config: the run's config; ``seed``: seeds torch and the generator.
    """

    def __init__(self, config: KernelConfig, seed: int):
        self.config = config
        self.device = device_of(config.device)
        torch.manual_seed(seed)
        self.net = ActionNet(config.net_arch[-1], config.action_dim, config.features, config.pick_init).to(self.device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=config.learning_rate, eps=1e-5)
        self.sampler = torch.Generator().manual_seed(seed)
        self.pool: Pool = []
        self.steps = 0

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "net": self.net.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "sampler": self.sampler.get_state(),
            "torch": torch.get_rng_state(),
            "pool": self.pool,
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.steps = int(state["steps"])
        self.net.load_state_dict(state["net"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.sampler.set_state(state["sampler"])
        torch.set_rng_state(state["torch"])
        self.pool = list(state["pool"])

    def save(self, folder: Path, workers: Workers) -> Path:
        """The checkpoint of :meth:`state` and the workers' rows (:meth:`Workers.state`), written atomically."""
        state = self.state() | workers.state()
        path = checkpoint_path(folder, self.steps, suffix=CHECKPOINT_SUFFIX)
        return atomic_write(path, lambda tmp: torch.save(state, tmp), suffix=CHECKPOINT_SUFFIX)

    def snapshot(self, folder: Path) -> None:
        """Freeze the net into the opponents' pool (the newest ``pool_size`` kept; the workers
        seat it from their next rollout on) and ``pool/``."""
        self.pool = [*self.pool, (self.steps, self.net.export())][-self.config.pool_size :]
        self.net.save(folder / f"snapshot_{self.steps:09d}.npz")
        kept = {f"snapshot_{s:09d}.npz" for s, _ in self.pool}
        for old in folder.glob("snapshot_*.npz"):
            if old.name not in kept:
                old.unlink()

    # ------------------------------------------------------------------ PPO
    def update(self, rollout: Rollout, lagged: bool = False) -> dict[str, float]:
        """``n_epochs`` passes of clipped PPO over the rollout in minibatches of whole steps.

        :param lagged: the rollout was played by the weights before the last update (rollout
            workers beside the learner). PPO is then decoupled (Hilton et al. 2021, "Batch
            size-invariance for policy optimization"): the ratio is clipped, and ``target_kl``
            measured, against the net as it is now (the proximal policy, its log-probabilities
            taken once before the first epoch), and each decision's loss is weighted by the
            proximal policy's probability over the behaviour policy's. Unlagged, both policies are
            the one that played the rollout: the weights are 1 and PPO is the usual one.
        """
        c = self.config
        steps = rollout.length
        per_batch = max(1, c.batch_size // c.n_envs)
        every = [step for shard in rollout.shards for step in shard.steps]
        if lagged:
            for start in range(0, len(every), per_batch):
                self._set_proximal(every[start : start + per_batch])
        else:
            for step in every:
                step.proximal = step.logp
        totals: dict[str, list[float]] = {
            k: [] for k in ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
        }
        for _ in range(c.n_epochs):
            order = torch.randperm(steps, generator=self.sampler).tolist()
            kls = []
            for start in range(0, steps, per_batch):
                stats = self._minibatch(rollout.pieces(order[start : start + per_batch]))
                kls.append(stats["approx_kl"])
                for key, value in stats.items():
                    totals[key].append(value)
            if c.target_kl is not None and np.mean(kls) > 1.5 * c.target_kl:
                break
        return {key: float(np.mean(values)) for key, values in totals.items()}

    def _set_proximal(self, steps: list[Step]) -> None:
        """Each step's ``proximal`` log-probabilities (float32 (B,)): the net's as it is now, in one
        forward pass over ``steps``."""
        with torch.no_grad():
            logits, _ = self._score(steps)
            valid = legal_mask(self._cat([step.counts for step in steps]), logits.shape[1])
            logp = masked_log_probs(logits, valid, self._cat([step.index for step in steps]))[0].cpu().numpy()
        for step, part in zip(steps, np.split(logp, np.cumsum([len(step.index) for step in steps])[:-1]), strict=True):
            step.proximal = part

    def _cat(self, arrays: list[np.ndarray]) -> torch.Tensor:
        return torch.cat([torch.from_numpy(a) for a in arrays]).to(self.device)

    def _score(self, steps: list[Step]) -> tuple[torch.Tensor, torch.Tensor]:
        """The net's logits and values over ``steps``' positions, one after another."""
        cat = self._cat
        entries = Entries(
            cols=cat([step.entries.cols for step in steps]),
            values=cat([step.entries.values for step in steps]),
            counts=cat([step.entries.counts for step in steps]),
        )
        return self.net.score(entries, cat([step.feats for step in steps]), cat([step.counts for step in steps]))

    def _minibatch(self, pieces: list[tuple[Step, np.ndarray, np.ndarray]]) -> dict[str, float]:
        c, cat = self.config, self._cat
        steps = [step for step, _, _ in pieces]
        counts, index = cat([step.counts for step in steps]), cat([step.index for step in steps])
        behaviour, proximal = cat([step.logp for step in steps]), cat([step.proximal for step in steps])
        adv, returns = cat([a for _, a, _ in pieces]), cat([r for _, _, r in pieces])
        logits, value = self._score(steps)
        valid = legal_mask(counts, logits.shape[1])
        logp, entropy = masked_log_probs(logits, valid, index)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        weight = (proximal - behaviour).exp()
        ratio = (logp - proximal).exp()
        clipped = torch.max(-adv * ratio, -adv * ratio.clamp(1 - c.clip_range, 1 + c.clip_range))
        policy_loss = (weight * clipped).mean()
        value_loss = ((value - returns) ** 2).mean()
        loss = policy_loss + c.vf_coef * value_loss - c.ent_coef * entropy.mean()
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.net.parameters(), c.max_grad_norm)
        self.optimizer.step()
        with torch.no_grad():
            log_ratio = logp - proximal
            return {
                "policy_loss": float(policy_loss),
                "value_loss": float(value_loss),
                "entropy": float(entropy.mean()),
                "approx_kl": float(((log_ratio.exp() - 1) - log_ratio).mean()),
                "clip_fraction": float(((ratio - 1).abs() > c.clip_range).float().mean()),
            }


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
