"""The batched learner (``backend: kernel``) in one read: the loop of rollouts and updates, the
advantages, PPO's epochs and what each update logs.

:func:`updates` is the loop a run (:mod:`treppen.train.kernel.backend`) and the benchmark drive: the
rollout workers (:mod:`treppen.train.kernel.rollouts`, which imports nothing of this module) play a
rollout with the learner's weights; :func:`gae` turns each shard's values, rewards and dones into
advantages and returns; :meth:`Learner.update` runs ``n_epochs`` passes of clipped PPO over the
rollout in minibatches of whole steps and returns the statistics the run logs (``train/*``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from treppen.train.common.checkpoints import checkpoint_path
from treppen.train.common.config import KernelConfig
from treppen.train.kernel.action_net_torch import ActionNet, Entries, legal_mask, masked_log_probs
from treppen.train.kernel.rollouts import Pool, Rollout, ShardRollout, Step, Workers
from treppen_env.files import atomic_write

#: A checkpoint's file suffix (torch's pickle of :meth:`Learner.state` and the workers' rows).
CHECKPOINT_SUFFIX = ".pt"


def updates(
    learner: Learner, workers: Workers, until: int, capture: Callable[[int], bool] = lambda steps: False
) -> Iterator[tuple[dict[str, float], dict[str, list[float]]]]:
    """Rollouts and updates until the learner's steps reach ``until``: yields each update's
    statistics and its rollout's finished deals (:meth:`Rollout.results`) after the update. With
    lagged workers the next rollout is already running then (started with ``capture(steps)``);
    else it starts when the loop is resumed, with what the caller changed (the pool) in between."""
    if learner.steps >= until:
        return
    workers.start(learner.net, learner.pool, learner.steps)
    while True:
        rollout = workers.wait()
        learner.steps += rollout.size
        more = learner.steps < until
        if more and workers.lagged:
            workers.start(learner.net, learner.pool, learner.steps, capture(learner.steps))
        yield learner.update(rollout, workers.lagged), rollout.results()
        if not more:
            return
        if not workers.lagged:
            workers.start(learner.net, learner.pool, learner.steps)


def gae(shard: ShardRollout, config: KernelConfig) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and returns (float32 (T, B)) of a shard's rollout: GAE(``gamma``, ``gae_lambda``)
    of its values, rewards and dones, ``last`` the values after the last step; a done row's next
    state is a new deal."""
    values, last = torch.from_numpy(shard.values), torch.from_numpy(shard.last)
    rewards, dones = torch.from_numpy(shard.rewards), torch.from_numpy(shard.dones).float()
    advantages = torch.zeros_like(values)
    running = torch.zeros_like(last)
    following = last
    for t in reversed(range(len(values))):
        live = 1.0 - dones[t]
        delta = rewards[t] + config.gamma * following * live - values[t]
        running = delta + config.gamma * config.gae_lambda * live * running
        advantages[t] = running
        following = values[t]
    return advantages.numpy(), (advantages + values).numpy()


def pieces(
    rollout: Rollout, targets: list[tuple[np.ndarray, np.ndarray]], steps: list[int]
) -> list[tuple[Step, np.ndarray, np.ndarray]]:
    """Each of ``steps``' shard steps, in order, with its advantages and returns (float32 (B,)) of
    ``targets`` (:func:`gae` of each shard)."""
    return [
        (shard.steps[t], advantage[t], returns[t])
        for t in steps
        for shard, (advantage, returns) in zip(rollout.shards, targets, strict=True)
    ]


def device_of(name: str) -> torch.device:
    """The torch device of the ``device`` setting: ``auto`` is a GPU where one is present."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


class Learner:
    """The learner's state: the net and its optimizer, the generator of its minibatches (and, with
    ``rollout_workers: 0``, of the rollouts' samples), the pool of snapshots and the step count;
    a checkpoint holds it with the rows of the rollout workers (:mod:`treppen.train.kernel.rollouts`).
    Its :meth:`update` is PPO's epochs over a rollout.

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
        targets = [gae(shard, c) for shard in rollout.shards]
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
                stats = self._minibatch(pieces(rollout, targets, order[start : start + per_batch]))
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
