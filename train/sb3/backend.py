"""``backend: sb3``: self-play training of a MaskablePPO agent (sb3-contrib) on this machine.

Reads top to bottom: config -> seeding -> envs with the opponent pool -> MaskablePPO -> callbacks
-> learn -> save. Besides the shared layout (:mod:`treppen.train.common.rundir`), its run folder holds::

    tb/                SB3's rollout/ and train/, plus selfplay/ and eval/
    checkpoints/       model_<steps>_steps.zip, written atomically (and imitation_round_<r>.pt)
    imitation.jsonl    one line per imitation round: losses, held-out agreement with the teacher
    pool/              snapshot_<steps>.npz: NumPy weights of the opponent snapshots
    final_model.zip    the trained model (load with ``agents.load(path)`` or MaskablePPO.load)
    best_model.zip     with ``best_every``: the best model by duplicate gates (best.jsonl, pool/best.npz)
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.distributions import MaskableCategorical
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from treppen.agents.policy import legacy_classes
from treppen.arena.interrupts import ignore_interrupts, interrupts_held
from treppen.arena.watchdog import watch_parent
from treppen.train.common.checkpoints import (
    checkpoint_path,
    checkpoint_steps,
    readable_checkpoint,
    save_model,
)
from treppen.train.common.config import RecipeBase, SB3Config, resolve_name
from treppen.train.common.imitation import describe_agreement, warm_start
from treppen.train.common.periodic_ratings import EloRating, Evaluation
from treppen.train.common.rundir import open_run_dir, print_end, print_ratings, run_ratings
from treppen.train.sb3.callbacks import (
    CheckpointCallback,
    KeepBestCallback,
    PoolCallback,
    ProgressCallback,
    RatingCallback,
    StatsCallback,
)
from treppen.train.sb3.kernel_vec_env import KernelVecEnv
from treppen.train.sb3.policy_net import ActionFeaturePolicy
from treppen.train.sb3.pool import SelfPlayEnv
from treppen.train.sb3.student import PolicyStudent
from treppen_env.actions import NUM_ACTIONS
from treppen_env.rules import Rules


def train_sb3(config: SB3Config, resume: bool = False, command_line: list[str] | None = None) -> Path:
    """Train a MaskablePPO agent by self-play as ``config`` says; returns the run folder.

    :param config: a checked config of ``backend: sb3`` (see :func:`treppen.train.common.config_files.load_config`).
    :param resume: continue the run folder's newest checkpoint that reads whole (``reset_num_timesteps=False``;
        newer ones that do not are named and passed over).
    :param command_line: the command to record in ``metadata.json`` (default: ``sys.argv``).
    :raises ValueError: when starting a new run in a folder that already holds one.
    """
    started = time.perf_counter()
    run_dir = resolve_name(config).run_dir
    found = readable_checkpoint(run_dir / "checkpoints") if resume else None  # read before anything is written
    start_steps, checkpoint = found or (0, None)
    if resume and report_complete(run_dir, config.total_timesteps, start_steps):
        return run_dir  # a finished run that is resumed stays as it is
    run_dir = open_run_dir(config, resume, command_line)
    seed = config.seed + start_steps  # a resumed run reseeds with its step count: no replayed deals
    set_random_seed(seed)
    torch.set_num_threads(config.torch_threads)
    check_distribution_validation()
    rules = config.make_rules()  # built once, handed to every layer
    vec_env = make_vec_env(config, rules, seed)  # every opponent seat drawn per episode from the pool
    model, imitation_s = load_or_make_model(config, vec_env, run_dir, checkpoint, seed, resume)
    run = RunCallbacks.make(config, rules, run_dir)
    try:
        trained = learn(model, config, run, run_dir, fresh=checkpoint is None)
    finally:
        close_quietly(vec_env)
    finish(model, config, run, run_dir, trained)
    print_end(run_dir, config, time.perf_counter() - started, model.num_timesteps - start_steps, imitation_s)
    if run.stats.illegal_actions:
        warnings.warn(f"{run.stats.illegal_actions} illegal actions during training; the masks are wrong", stacklevel=1)
    return run_dir


def load_or_make_model(
    config: SB3Config, vec_env: VecEnv, run_dir: Path, checkpoint: Path | None, seed: int, resume: bool
) -> tuple[MaskablePPO, float]:
    """The learner and the seconds its imitation warm start took: the checkpoint's model, or a
    fresh one (warm-started by imitation when the config asks for it: clone the teacher, then PPO
    fine-tunes)."""
    if checkpoint is not None:
        print(f"resuming from {checkpoint} ({checkpoint_steps(checkpoint)} steps)")
        model = MaskablePPO.load(
            checkpoint,
            env=vec_env,
            device="cpu",
            tensorboard_log=str(run_dir / "tb"),
            custom_objects=legacy_classes(checkpoint),  # a checkpoint saved under an older module layout
        )
        model.set_random_seed(seed)
        return model, 0.0
    if resume:
        print(f"no checkpoint in {run_dir / 'checkpoints'}; starting the run from step 0")
    model = make_model(config, vec_env, run_dir / "tb", seed)
    if not config.imitation_decisions:
        return model, 0.0
    started = time.perf_counter()
    print(describe_agreement(warm_start(PolicyStudent(model.policy), config, run_dir)))
    return model, time.perf_counter() - started


@dataclass
class RunCallbacks:
    """The callbacks of a run: statistics, checkpoints, the snapshot pool, keep-best gating,
    evaluations, Elo and the progress bar."""

    stats: StatsCallback
    evals: Evaluation
    elo: EloRating
    keep_best: KeepBestCallback | None
    progress: ProgressCallback | None
    all: list[BaseCallback]

    @classmethod
    def make(cls, config: SB3Config, rules: Rules, run_dir: Path) -> RunCallbacks:
        evals, elo = run_ratings(config, rules, run_dir)
        stats = StatsCallback()
        keep_best = None
        if config.best_every:
            keep_best = KeepBestCallback(
                config.best_every, run_dir, config.num_players, rules, config.best_decks, config.best_threshold
            )
        rollout = config.n_steps * config.n_envs
        progress = ProgressCallback(config.total_timesteps, rollout, evals) if config.progress else None
        everything = [
            stats,
            CheckpointCallback(config.checkpoint_every, run_dir / "checkpoints"),
            PoolCallback(config.snapshot_every, run_dir / "pool", config.pool_size),
            *([keep_best] if keep_best else []),
            RatingCallback(config.eval_every, evals),
            RatingCallback(config.elo_every, elo),
            *([progress] if progress else []),
        ]
        return cls(stats, evals, elo, keep_best, progress, everything)


def learn(model: MaskablePPO, config: SB3Config, run: RunCallbacks, run_dir: Path, fresh: bool) -> bool:
    """PPO up to ``total_timesteps``; Ctrl-C saves a checkpoint first, so ``--resume`` continues.

    :return: whether any steps were trained (a finished run has none left).
    """
    remaining = config.total_timesteps - model.num_timesteps
    if remaining <= 0:  # the last checkpoint reached the total, the final model is not written yet
        return False
    try:
        model.learn(remaining, callback=run.all, tb_log_name="ppo", reset_num_timesteps=fresh)
    except KeyboardInterrupt:
        saved = save_model(model, checkpoint_path(run_dir / "checkpoints", model.num_timesteps))
        print(
            f"\ninterrupted at {model.num_timesteps} steps; saved {saved}; continue with "
            f"`treppen train --resume {run_dir}`"
        )
        raise
    finally:
        if run.progress is not None:
            run.progress.close()
    return True


def finish(model: MaskablePPO, config: SB3Config, run: RunCallbacks, run_dir: Path, trained: bool) -> None:
    """Save the final model, evaluate, rate and gate it at its last step, and print the summary."""
    save_model(model, checkpoint_path(run_dir / "checkpoints", model.num_timesteps))
    final = save_model(model, run_dir / "final_model.zip")
    steps = model.num_timesteps
    if trained:
        if run.evals.latest.get("steps") != steps:
            run.evals.run(steps)
        if config.elo_every and run.elo.latest.get("steps") != steps:
            run.elo.run(steps)
        if run.keep_best is not None and run.keep_best.latest.get("steps") != steps:
            run.keep_best.run(steps)  # the final model is gated too
        model.logger.dump(steps)
    print_summary(run_dir, final, run.evals, run.elo, run.keep_best, config)


def report_complete(run_dir: Path, total_timesteps: int, steps: int) -> bool:
    """Whether the run in ``run_dir``, whose newest checkpoint that reads has ``steps`` steps, already
    has ``total_timesteps`` steps and its final model; if so, say so (a resume then changes nothing)."""
    final = run_dir / "final_model.zip"
    if steps < total_timesteps or not final.is_file():
        return False
    print(
        f"the run {run_dir} is complete: {steps} steps of total_timesteps={total_timesteps}; nothing changed.\n"
        f"final model: {final}; to train further, resume with a larger total_timesteps=N"
    )
    return True


def print_summary(
    run_dir: Path,
    final: Path,
    evals: Evaluation,
    elo: EloRating,
    keep_best: KeepBestCallback | None,
    config: SB3Config,
) -> None:
    """The last lines of a run: where the models are, the evaluations, the Elo (greedy = 0) with the
    head-to-head scores beside it and a verdict against greedy that the data support.

    The two figures against greedy differ: the evaluation plays ``config.eval_deals`` ordinary deals
    against each opponent; the Elo plays duplicate decks (each deck with every seating)."""
    print(f"final model: {final}")
    if keep_best is not None:
        count = f"{keep_best.promotions} promotion{'' if keep_best.promotions == 1 else 's'}"
        print(f"best model: {keep_best.best_path} ({count}; {run_dir / 'best.jsonl'})")
    print_ratings(run_dir, config.eval_deals, evals, elo)


def close_quietly(vec_env: VecEnv) -> None:
    """Close the envs; after Ctrl-C the subprocess workers may already be gone (they got SIGINT too)."""
    try:
        vec_env.close()
    except (BrokenPipeError, EOFError, ConnectionResetError):
        pass


def make_model(config: SB3Config, vec_env: VecEnv, tb_dir: Path | None, seed: int) -> MaskablePPO:
    """A fresh MaskablePPO learner (``config.policy``) with the config's hyperparameters (on the CPU).

    :param config: the run's config.
    :param vec_env: the training envs.
    :param tb_dir: TensorBoard folder, or None for no TensorBoard logs.
    :param seed: seeds torch, the policy and the envs.
    """
    policy, policy_kwargs = policy_spec(config)
    return MaskablePPO(
        policy,
        vec_env,
        learning_rate=config.learning_rate,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        max_grad_norm=config.max_grad_norm,
        target_kl=config.target_kl,
        policy_kwargs=policy_kwargs,
        tensorboard_log=None if tb_dir is None else str(tb_dir),
        seed=seed,
        device="cpu",
        verbose=config.verbose,
    )


def policy_spec(config: RecipeBase) -> tuple[Any, dict[str, Any]]:
    """The MaskablePPO policy (class or name) and its ``policy_kwargs`` for ``config.policy``."""
    if config.policy == "action_features":
        rules = config.make_rules()  # saved in the model file as the preset and its overrides
        return ActionFeaturePolicy, {
            "rules": rules.name,
            "rules_options": rules.overrides(),
            "card_dim": config.card_dim,
            "hidden": config.net_arch[-1],
            "action_dim": config.action_dim,
            "features": config.features,
        }
    return "MlpPolicy", {
        "net_arch": {"pi": list(config.net_arch), "vf": list(config.net_arch)},
        "activation_fn": {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[config.activation],
    }


def _make_env(config: SB3Config, rules: Rules, rank: int, seed: int) -> Monitor:
    """One env worker: SelfPlayEnv in a Monitor (for SB3's ``rollout/ep_rew_mean``); a worker
    process ends with its parent."""
    watch_parent()
    ignore_interrupts()
    torch.set_num_threads(1)  # the worker runs no torch; keep it from competing for the cores
    env = SelfPlayEnv(
        config.num_players,
        rules,
        config.opponent_probs(),
        config.snapshot_deterministic,
        seed=seed * 1000 + rank,
        specs=config.opponent_agents,
    )
    return Monitor(env)


def make_vec_env(config: SB3Config, rules: Rules, seed: int) -> VecEnv:
    """``n_envs`` SelfPlayEnvs: in subprocesses (``SubprocVecEnv``) or in-process (``DummyVecEnv``,
    always for one env), or the rows of one batched env (``vec_env: kernel``, :class:`KernelVecEnv`).

    :param config: the run's config.
    :param rules: the run's rules, built once from ``config.rules`` and ``config.rules_options``.
    :param seed: seeds the envs (env ``rank`` gets ``seed * 1000 + rank``).

    ``action_masks`` is a method of the env class itself, which subprocess envs need (sb3-contrib #49).
    """
    if config.vec_env == "kernel":
        return KernelVecEnv(
            config.n_envs,
            config.num_players,
            rules,
            config.opponent_probs(),
            config.snapshot_deterministic,
            seed * 1000,
            config.opponent_agents,
        )
    fns: list[Callable[[], gym.Env]] = [
        functools.partial(_make_env, config, rules, rank, seed) for rank in range(config.n_envs)
    ]
    if config.n_envs > 1 and config.vec_env == "subproc":
        with interrupts_held():  # each worker starts with Ctrl-C blocked, until _make_env ignores it
            return SubprocVecEnv(fns)
    return DummyVecEnv(fns)


def check_distribution_validation() -> None:
    """Guard against sb3-contrib's Simplex crash with ~900 actions (sb3-contrib #322, #81, #247).

    Older sb3-contrib rebuilt the masked Categorical from cached float32 probabilities whose sum
    can miss 1 by more than torch's tolerance over 898 categories, so ``validate_args`` raised on a
    perfectly good policy. 2.9.2 clears that cache first; this probe keeps the check honest for
    other versions. If the probe crashes, argument validation is switched off globally: the crash
    is a rounding artefact, and NaN logits are caught separately (StatsCallback checks the weights).
    """
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(64, NUM_ACTIONS, generator=gen) * 30
    masks = torch.rand(64, NUM_ACTIONS, generator=gen) < 0.05
    masks[:, 0] = True
    try:
        dist = MaskableCategorical(logits=logits, masks=masks, validate_args=True)
        dist.apply_masking(masks)
        dist.log_prob(dist.sample())
    except ValueError as err:
        warnings.warn(
            f"masked distribution fails torch's argument check ({err}); disabling "
            "torch.distributions argument validation (sb3-contrib #322)",
            stacklevel=1,
        )
        torch.distributions.Distribution.set_default_validate_args(False)
