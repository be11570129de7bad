"""``backend: kernel``: PPO over the rows of the batched env, opponents played by kernels.

Reads top to bottom: config -> rows (:class:`treppen.train.kernel.rows.LearnerRows`) and net
(:class:`treppen.train.kernel.policy.ActionNet`) -> rollouts -> GAE -> PPO update -> periodic
snapshots, checkpoints, evaluations and Elo -> final model. Each rollout step is one forward pass
over all rows: the learner's legal actions as padded feature rows (B, K, F), a masked softmax, one
sample per row, one env step (the opponents' moves inside it). An update makes ``n_epochs`` passes
over the rollout in minibatches of whole steps (``batch_size / n_envs`` steps of every row, each
padded to its most legal actions) with the clipped PPO loss, value loss and entropy bonus
(:func:`treppen.train.kernel.policy.masked_log_probs`).

Besides the shared layout (:mod:`treppen.train.rundir`), its run folder holds::

    tb/                losses, rewards per opponent kind, evaluations and Elo
    checkpoints/       model_<steps>_steps.pt: net, optimizer, generators and the rows' deals
                       (written atomically); ``--resume`` continues exactly where it was written
    pool/              snapshot_<steps>.npz: the frozen snapshots the opponents draw from
    final_model.npz    the trained net (:meth:`ActionNet.load`; the kernels read its flat weights)
"""

from __future__ import annotations

import io
import pickle
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from treppen.train.callbacks import EloCallback, EvalCallback, Every
from treppen.train.checkpoints import checkpoint_path, checkpoints, newest_readable
from treppen.train.config import KernelConfig, resolve_name
from treppen.train.kernel.policy import ActionNet, PredictModel, masked_log_probs
from treppen.train.kernel.rows import LearnerRows
from treppen.train.rundir import open_run_dir, print_end, print_ratings, progress_bar, rating_callbacks
from treppen_env.files import atomic_write

CHECKPOINT_SUFFIX = ".pt"
FINAL_MODEL = "final_model.npz"


def device_of(name: str) -> torch.device:
    """The torch device of the ``device`` setting: ``auto`` is a GPU where one is present."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


class Logger:
    """TensorBoard scalars gathered by ``record`` and written by ``dump`` (the interface the
    evaluation and Elo callbacks of :mod:`treppen.train.callbacks` log through)."""

    def __init__(self, folder: Path | None):
        self.values: dict[str, float] = {}
        self.writer = None
        if folder is not None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(folder))

    def record(self, key: str, value: float) -> None:
        self.values[key] = float(value)

    def dump(self, steps: int) -> None:
        if self.writer is not None:
            for key, value in self.values.items():
                self.writer.add_scalar(key, value, steps)
            self.writer.flush()
        self.values.clear()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


#: Modules that checkpoints written before train/ had a package per backend name: old -> today's.
MOVED_MODULES = {"treppen.train.kernel_rows": "treppen.train.kernel.rows"}


class _RowsUnpickler(pickle.Unpickler):
    """Unpickles a checkpoint's rows, classes of moved modules from their modules today."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(MOVED_MODULES.get(module, module), name)


def load_rows(data: bytes) -> LearnerRows:
    """A checkpoint's pickled :class:`LearnerRows`, also one written before the shared deal loop
    (:class:`treppen.train.seated_rows.SeatedRows`; its row indices were ``_all``)."""
    rows = _RowsUnpickler(io.BytesIO(data)).load()
    if "all_rows" not in rows.__dict__:
        rows.all_rows = rows.__dict__.pop("_all")
    return rows


class Learner:
    """The state of a run: the rows, the net and its optimizer, the sampling generator, the pool
    of snapshots and the step count (all of it in a checkpoint).

    :param config: the run's config; ``seed``: seeds the rows, torch and the sampling.
    """

    def __init__(self, config: KernelConfig, seed: int):
        self.config = config
        self.device = device_of(config.device)
        torch.manual_seed(seed)
        self.net = ActionNet(config.net_arch[-1], config.action_dim, config.features, config.pick_init).to(self.device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=config.learning_rate, eps=1e-5)
        probs = config.opponent_probs()
        self.rows = LearnerRows(config.n_envs, config.num_players, config.make_rules(), probs, config.features, seed)
        self.rows.reset()
        self.sampler = torch.Generator().manual_seed(seed)
        self.pool: list[tuple[int, np.ndarray]] = []
        self.steps = 0

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "net": self.net.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "sampler": self.sampler.get_state(),
            "torch": torch.get_rng_state(),
            "rows": pickle.dumps(self.rows),
            "pool": self.pool,
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.steps = int(state["steps"])
        self.net.load_state_dict(state["net"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.sampler.set_state(state["sampler"])
        torch.set_rng_state(state["torch"])
        self.rows = load_rows(state["rows"])
        self.pool = list(state["pool"])

    def save(self, folder: Path) -> Path:
        path = checkpoint_path(folder, self.steps, suffix=CHECKPOINT_SUFFIX)
        return atomic_write(path, lambda tmp: torch.save(self.state(), tmp), suffix=CHECKPOINT_SUFFIX)

    def snapshot(self, folder: Path) -> None:
        """Freeze the net into the opponents' pool (the newest ``pool_size`` kept) and ``pool/``."""
        self.pool = [*self.pool, (self.steps, self.net.export())][-self.config.pool_size :]
        self.rows.set_snapshots([w for _, w in self.pool], self.net.shape())
        self.net.save(folder / f"snapshot_{self.steps:09d}.npz")
        kept = {f"snapshot_{s:09d}.npz" for s, _ in self.pool}
        for old in folder.glob("snapshot_*.npz"):
            if old.name not in kept:
                old.unlink()

    # ------------------------------------------------------------------ PPO
    def rollout(self) -> dict[str, Any]:
        """``n_steps`` steps of every row: one forward pass and one env step each."""
        c, rows, net = self.config, self.rows, self.net
        buffer: dict[str, Any] = {k: [] for k in ("obs", "feats", "valid", "index", "logp", "value", "reward", "done")}
        for _ in range(c.n_steps):
            legal = rows.legal()
            obs = torch.from_numpy(rows.obs.copy())
            feats, valid = torch.from_numpy(legal.feats), torch.from_numpy(legal.acts >= 0)
            with torch.no_grad():
                logits, value = net(obs.to(self.device), feats.to(self.device), valid.to(self.device))
                logits = logits.cpu()
                _check_finite(logits, legal.counts, self.steps)
                logp_all = torch.log_softmax(logits, dim=1)
                index = torch.multinomial(logp_all.exp(), 1, generator=self.sampler).squeeze(1)
            actions = legal.acts[np.arange(len(index)), index.numpy()]
            reward, done = rows.step(actions)
            for key, item in (
                ("obs", obs),
                ("feats", feats),
                ("valid", valid),
                ("index", index),
                ("logp", logp_all.gather(1, index[:, None]).squeeze(1)),
                ("value", value.cpu()),
                ("reward", torch.from_numpy(reward)),
                ("done", torch.from_numpy(done)),
            ):
                buffer[key].append(item)
        with torch.no_grad():
            legal = rows.legal()
            _, last = net(
                torch.from_numpy(rows.obs.copy()).to(self.device),
                torch.from_numpy(legal.feats).to(self.device),
                torch.from_numpy(legal.acts >= 0).to(self.device),
            )
        buffer["advantage"], buffer["return"] = self._gae(buffer, last.cpu())
        self.steps += c.n_steps * c.n_envs
        return buffer

    def _gae(self, buffer: dict[str, Any], last: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Advantages and returns (T, B): GAE(gamma, lambda); a done row's next state is a new deal."""
        c = self.config
        values = torch.stack(buffer["value"])
        rewards, dones = torch.stack(buffer["reward"]), torch.stack(buffer["done"]).float()
        advantages = torch.zeros_like(values)
        running = torch.zeros_like(last)
        following = last
        for t in reversed(range(len(values))):
            live = 1.0 - dones[t]
            delta = rewards[t] + c.gamma * following * live - values[t]
            running = delta + c.gamma * c.gae_lambda * live * running
            advantages[t] = running
            following = values[t]
        return advantages, advantages + values

    def update(self, buffer: dict[str, Any]) -> dict[str, float]:
        """``n_epochs`` passes of clipped PPO over the rollout in minibatches of whole steps."""
        c = self.config
        steps = len(buffer["obs"])
        per_batch = max(1, c.batch_size // c.n_envs)
        totals: dict[str, list[float]] = {
            k: [] for k in ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
        }
        buffer["all_obs"] = torch.stack(buffer["obs"])  # (T, B, 969), stacked once
        for _ in range(c.n_epochs):
            order = torch.randperm(steps, generator=self.sampler).tolist()
            kls = []
            for start in range(0, steps, per_batch):
                stats = self._minibatch(buffer, order[start : start + per_batch])
                kls.append(stats["approx_kl"])
                for key, value in stats.items():
                    totals[key].append(value)
            if c.target_kl is not None and np.mean(kls) > 1.5 * c.target_kl:
                break
        return {key: float(np.mean(values)) for key, values in totals.items()}

    def _minibatch(self, buffer: dict[str, Any], steps: list[int]) -> dict[str, float]:
        c, dev = self.config, self.device
        width = max(buffer["feats"][t].shape[1] for t in steps)

        def pad(x: torch.Tensor, value: float | bool) -> torch.Tensor:
            extra = width - x.shape[1]
            if not extra:
                return x
            filler = torch.full((x.shape[0], extra, *x.shape[2:]), value, dtype=x.dtype)
            return torch.cat([x, filler], dim=1)

        obs = buffer["all_obs"][steps].reshape(-1, buffer["all_obs"].shape[-1]).to(dev)
        feats = torch.cat([pad(buffer["feats"][t], 0.0) for t in steps]).to(dev)
        valid = torch.cat([pad(buffer["valid"][t], False) for t in steps]).to(dev)
        index = torch.cat([buffer["index"][t] for t in steps]).to(dev)
        old_logp = torch.cat([buffer["logp"][t] for t in steps]).to(dev)
        returns = buffer["return"][steps].reshape(-1).to(dev)
        adv = buffer["advantage"][steps].reshape(-1).to(dev)
        logits, value = self.net(obs, feats, valid)
        logp, entropy = masked_log_probs(logits, valid, index)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        ratio = (logp - old_logp).exp()
        policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - c.clip_range, 1 + c.clip_range)).mean()
        value_loss = ((value - returns) ** 2).mean()
        loss = policy_loss + c.vf_coef * value_loss - c.ent_coef * entropy.mean()
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.net.parameters(), c.max_grad_norm)
        self.optimizer.step()
        with torch.no_grad():
            log_ratio = logp - old_logp
            return {
                "policy_loss": float(policy_loss),
                "value_loss": float(value_loss),
                "entropy": float(entropy.mean()),
                "approx_kl": float(((log_ratio.exp() - 1) - log_ratio).mean()),
                "clip_fraction": float(((ratio - 1).abs() > c.clip_range).float().mean()),
            }


def train_kernel(config: KernelConfig, resume: bool = False, command_line: list[str] | None = None) -> Path:
    """Train the action net by PPO over the batched env as ``config`` says; returns the run folder.

    :param config: a checked config of ``backend: kernel`` (:func:`treppen.train.config_files.load_config`).
    :param resume: continue from the run folder's newest checkpoint that reads, exactly as it was written
        (newer ones that do not read are named and passed over).
    :param command_line: the command to record in ``metadata.json`` (default: ``sys.argv``).
    :raises ValueError: when starting a new run in a folder that already holds one.
    """
    started = time.perf_counter()
    run_dir = resolve_name(config).run_dir
    found = checkpoints(run_dir / "checkpoints", suffix=CHECKPOINT_SUFFIX) if resume else []
    if found and found[-1][0] >= config.total_timesteps and (run_dir / FINAL_MODEL).is_file():
        print(
            f"the run {run_dir} is complete: {found[-1][0]} of total_timesteps={config.total_timesteps}; "
            "nothing changed."
        )
        return run_dir
    run_dir = open_run_dir(config, resume, command_line)
    torch.set_num_threads(config.torch_threads)
    learner = Learner(config, config.seed)
    readable = newest_readable(found, read_checkpoint)
    if readable:
        print(f"resuming from {readable[1]} ({readable[0]} steps)")
        learner.restore(readable[2])
    start_steps = learner.steps
    logger = Logger(run_dir / "tb")
    evals, elo = rating_callbacks(config, config.make_rules(), run_dir)
    model = PredictModel(learner.net, learner.rows.ctx, logger)
    for callback in (evals, elo):
        callback.model = model  # type: ignore[assignment]  # played through predict(), logged through .logger
    periods = {
        name: Every(every, learner.steps)
        for name, every in (
            ("snapshot", config.snapshot_every),
            ("checkpoint", config.checkpoint_every),
            ("eval", config.eval_every),
            ("elo", config.elo_every),
        )
    }
    bar = _progress(config, learner.steps)
    try:
        while learner.steps < config.total_timesteps:
            buffer = learner.rollout()
            stats = learner.update(buffer)
            _record(logger, stats, learner.rows.take_results())
            if bar is not None:
                bar.update(learner.steps - bar.n)
            if periods["snapshot"].due(learner.steps):
                learner.snapshot(run_dir / "pool")
            if periods["checkpoint"].due(learner.steps):
                learner.save(run_dir / "checkpoints")
            if periods["eval"].due(learner.steps):
                evals.run(learner.steps)
            if periods["elo"].due(learner.steps):
                elo.run(learner.steps)
            logger.dump(learner.steps)
    except KeyboardInterrupt:
        saved = learner.save(run_dir / "checkpoints")
        print(
            f"\ninterrupted at {learner.steps} steps; saved {saved}; continue with `treppen train --resume {run_dir}`"
        )
        raise
    finally:
        if bar is not None:
            bar.close()
    _finish(learner, run_dir, evals, elo, logger)
    print_end(run_dir, config, time.perf_counter() - started, learner.steps - start_steps)
    return run_dir


def read_checkpoint(path: Path) -> dict[str, Any]:
    """A checkpoint's state (:meth:`Learner.state`), its tensors on the CPU (a run trained on a GPU
    resumes on any device)."""
    state: dict[str, Any] = torch.load(path, weights_only=False, map_location="cpu")
    return state


def _finish(learner: Learner, run_dir: Path, evals: EvalCallback, elo: EloCallback, logger: Logger) -> None:
    """Save the last checkpoint and the final model, evaluate and rate it, and print the summary."""
    learner.save(run_dir / "checkpoints")
    final = learner.net.save(run_dir / FINAL_MODEL)
    if evals.latest.get("steps") != learner.steps:
        evals.run(learner.steps)
    if learner.config.elo_every and elo.latest.get("steps") != learner.steps:
        elo.run(learner.steps)
    logger.dump(learner.steps)
    logger.close()
    print(f"final model: {final}")
    print_ratings(run_dir, learner.config.eval_deals, evals, elo)


def _check_finite(logits: torch.Tensor, counts: np.ndarray, steps: int) -> None:
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


def _progress(config: KernelConfig, start: int) -> Any:
    """The run's progress bar (:func:`treppen.train.rundir.progress_bar`; ``None`` with ``progress: false``)."""
    return progress_bar(start, config.total_timesteps, config.n_steps * config.n_envs) if config.progress else None


def _record(logger: Logger, stats: dict[str, float], results: dict[str, list[float]]) -> None:
    """The update's losses (``train/*``) and the finished deals' mean reward per opponent kind (``selfplay/*``)."""
    for key, value in stats.items():
        logger.record(f"train/{key}", value)
    for kind, values in results.items():
        logger.record(f"selfplay/reward_vs_{kind}", float(np.mean(values)))
