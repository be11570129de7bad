"""``backend: rllib``: self-play PPO on Ray RLlib's new API stack (docs/ARCHITECTURE.md "Scale-out").

Reads top to bottom: Ray -> PPO config (env, modules, seat mapping) -> algorithm (or restore)
-> training iterations with snapshots, checkpoints, evaluations and Elo -> export. The run folder
has the SB3 backend's layout::

    config.yaml, metadata.json     as for sb3 (``--resume`` reads config.yaml back)
    tb/rllib_ppo/                  TensorBoard: rollout/*, train/* (RLlib's learner stats), eval/*
    checkpoints/rllib_<steps>_steps/    RLlib checkpoints (``Algorithm.save_to_path``; the newest 2 kept)
    checkpoints/policy_<steps>_steps.npz  the learner's policy at that checkpoint, Ray-free
    evals.jsonl, elo.jsonl         as for sb3 (the same evaluation and Elo code)
    final_policy.npz               the final policy; ``agents.load(run_folder)`` plays it without Ray

Steps count the learner's decisions (RLlib's module steps of ``learner``), as ``total_timesteps``
does for sb3. Self-play: every episode the learner takes one seat and each other seat plays
random, greedy or one of ``pool_size`` frozen snapshots of the learner (:class:`SeatMapping`); a
snapshot slot is overwritten with the learner's weights every ``snapshot_every`` steps, round robin
(at the start every slot holds the initial weights). Needs ``pip install 'treppen[ray]'``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from agents.snapshot import ActionFeatureSnapshot, NumpyPolicy
from train.checkpoints import checkpoint_path, checkpoints, latest_checkpoint
from train.config import TrainConfig
from train.rundir import describe_eval, open_run_dir, rating_callbacks
from treppen_env.actions import NUM_ACTIONS
from treppen_env.files import atomic_write
from treppen_env.observation import OBS_SIZE

try:
    import ray
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.learner.learner_group import LearnerGroup
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
except ImportError as err:  # pragma: no cover - exercised without the extra
    raise ImportError("backend: rllib needs Ray RLlib: pip install 'treppen[ray]'") from err

from arena.ray_cluster import init_ray
from train.rllib.modules import (
    GREEDY,
    LEARNER,
    RANDOM,
    AgentModule,
    MaskedPolicyModule,
    SeatMapping,
    TreppenRLlibEnv,
    snapshot_id,
)

CHECKPOINT_PREFIX = "rllib_"
KEEP_CHECKPOINTS = 2
FINAL_POLICY = "final_policy.npz"


# --------------------------------------------------------------------------- the algorithm


def ppo_config(config: TrainConfig, seed: int) -> PPOConfig:
    """RLlib's PPO config (new API stack) for a TrainConfig.

    One training iteration gathers ``n_steps * n_envs`` env steps (all seats) from
    ``num_env_runners`` runners stepping ``n_envs`` envs each; minibatches of ``batch_size``,
    ``n_epochs`` passes; no KL penalty (as SB3); the learner runs in this process.
    """
    rules = config.make_rules()  # the run's one Rules object, pickled to every env runner
    env_config = {"num_players": config.num_players, "rules": rules}
    learner_spec = RLModuleSpec(
        module_class=MaskedPolicyModule,
        model_config={
            "policy": config.policy,
            "net_arch": list(config.net_arch),
            "activation": config.activation,
            "card_dim": config.card_dim,
            "action_dim": config.action_dim,
            **env_config,
        },
    )
    agent_specs = {
        name: RLModuleSpec(
            module_class=AgentModule,
            model_config={"agent": name, "rules": rules, "seed": seed},
        )
        for name in (RANDOM, GREEDY)
    }
    specs = {LEARNER: learner_spec, **agent_specs}
    specs |= {snapshot_id(k): learner_spec for k in range(config.pool_size)}
    probs = {"random": config.opponent_random, "greedy": config.opponent_greedy, "snapshot": config.opponent_snapshot}
    return (
        PPOConfig()
        .environment(TreppenRLlibEnv, env_config=env_config, disable_env_checking=True)
        .framework("torch")
        .env_runners(
            num_env_runners=config.num_env_runners,
            num_envs_per_env_runner=config.n_envs,
            num_cpus_per_env_runner=1,
        )
        .learners(num_learners=0)
        .training(
            lr=config.learning_rate,
            gamma=config.gamma,
            lambda_=config.gae_lambda,
            clip_param=config.clip_range,
            entropy_coeff=config.ent_coef,
            vf_loss_coeff=config.vf_coef,
            grad_clip=config.max_grad_norm,
            grad_clip_by="global_norm",
            use_kl_loss=False,
            train_batch_size_per_learner=config.n_steps * config.n_envs,
            minibatch_size=config.batch_size,
            num_epochs=config.n_epochs,
        )
        .multi_agent(
            policies=set(specs),
            policy_mapping_fn=SeatMapping(config.num_players, probs, config.pool_size),
            policies_to_train=[LEARNER],
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .debugging(seed=seed)
    )


def learner_weights(algo: Algorithm) -> dict[str, np.ndarray]:
    """The learner module's state dict as NumPy arrays (``pi.<i>.weight``, ``vf.<i>.bias``, ...)."""
    state = _learners(algo).get_weights([LEARNER])[LEARNER]
    return {k: np.asarray(v.detach().cpu() if hasattr(v, "detach") else v) for k, v in state.items()}


def set_snapshot(algo: Algorithm, slot: int, weights: dict[str, Any] | None = None) -> None:
    """Copy the learner's weights (or ``weights``) into snapshot slot ``slot``, in the learner and
    in every env runner (waiting for them)."""
    module = snapshot_id(slot)
    learners, runners = _learners(algo), algo.env_runner_group
    assert runners is not None, "the algorithm has no env runners"
    learners.set_weights({module: weights if weights is not None else learner_weights(algo)})
    runners.sync_weights(from_worker_or_learner_group=learners, policies=[module], timeout_seconds=60.0)


def _learners(algo: Algorithm) -> LearnerGroup:
    """The algorithm's learner group (built with it on the new API stack)."""
    assert algo.learner_group is not None, "the algorithm has no learner group"
    return algo.learner_group


def policy_arrays(config: TrainConfig, weights: dict[str, np.ndarray]) -> dict[str, Any]:
    """The learner's policy as the arrays of a ``train.pool`` snapshot ``.npz`` (the format
    :meth:`agents.snapshot.NumpyPolicy.load` reads): ``w<i>``/``b<i>`` of the MLP's layers, or the
    action-feature net's ``state_dict`` with ``kind``."""
    arrays: dict[str, Any] = {}
    if config.policy == "action_features":
        arrays = {k.removeprefix("net."): v for k, v in weights.items() if k.startswith("net.")}
        return arrays | {"kind": np.array("action_features")}
    indices = sorted({int(k.split(".")[1]) for k in weights if k.startswith("pi.") and k.endswith(".weight")})
    for n, i in enumerate(indices):
        arrays[f"w{n}"] = weights[f"pi.{i}.weight"].astype(np.float32)
        arrays[f"b{n}"] = weights[f"pi.{i}.bias"].astype(np.float32)
    return arrays | {"activation": np.array(config.activation), "layers": np.array(len(indices))}


def learner_policy(algo: Algorithm, config: TrainConfig) -> NumpyPolicy:
    """The learner's current policy as a NumPy forward pass (no file)."""
    arrays = policy_arrays(config, learner_weights(algo))
    if config.policy == "action_features":
        return ActionFeatureSnapshot({k: v for k, v in arrays.items() if k != "kind"})
    layers = int(arrays["layers"])
    return NumpyPolicy([(arrays[f"w{i}"], arrays[f"b{i}"]) for i in range(layers)], config.activation)


def export_policy(algo: Algorithm, config: TrainConfig, path: Path, steps: int) -> Path:
    """Write the learner's policy as a NumPy snapshot ``.npz`` (atomically); it plays without Ray or
    torch (``agents.load``, :class:`agents.snapshot.NumpyPolicy`)."""
    arrays = policy_arrays(config, learner_weights(algo)) | {"steps": np.array(steps)}
    return atomic_write(path, lambda tmp: np.savez(tmp, **arrays), suffix=".npz")


class NumpyModel:
    """SB3's ``predict`` over a NumPy policy, so the SB3 backend's evaluation and Elo code (which
    take a MaskablePPO model) rate the RLlib learner unchanged. Deterministic: the masked argmax.

    :param policy: the exported policy.
    :param logger: the SB3 logger the callbacks record to (``callback.logger`` is ``model.logger``).
    """

    def __init__(self, policy: NumpyPolicy, logger: Any = None):
        import gymnasium as gym

        self.policy = policy
        self.logger = logger
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (OBS_SIZE,), np.float32)
        self.action_space: gym.spaces.Discrete = gym.spaces.Discrete(NUM_ACTIONS)

    def predict(self, obs: np.ndarray, action_masks: np.ndarray, deterministic: bool = True) -> tuple[np.ndarray, None]:
        """Masked argmax actions: int64 (B,) for observations (B, OBS_SIZE), or (1,) for one."""
        rows = zip(np.atleast_2d(obs), np.atleast_2d(action_masks), strict=True)
        return np.array([self.policy.act(o, m) for o, m in rows], dtype=np.int64), None


# --------------------------------------------------------------------------- checkpoints


def save_checkpoint(algo: Algorithm, config: TrainConfig, folder: Path, steps: int) -> Path:
    """Save the algorithm (atomically: a temp folder renamed into place) and its NumPy policy;
    keep the newest :data:`KEEP_CHECKPOINTS` RLlib checkpoints (each holds every module)."""
    target = checkpoint_path(folder, steps, CHECKPOINT_PREFIX, suffix="")
    tmp = folder / f".tmp_{target.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    algo.save_to_path(str(tmp.resolve()))
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    export_policy(algo, config, folder / f"policy_{steps}_steps.npz", steps)
    for _, old in checkpoints(folder, CHECKPOINT_PREFIX, suffix="")[:-KEEP_CHECKPOINTS]:
        shutil.rmtree(old, ignore_errors=True)
    return target


def build_algorithm(config: TrainConfig, seed: int, checkpoint: Path | None = None) -> Algorithm:
    """Build PPO; restore ``checkpoint`` or, for a fresh run, fill every snapshot slot with the
    learner's initial weights."""
    algo = ppo_config(config, seed).build_algo()
    if checkpoint is not None:
        algo.restore_from_path(str(checkpoint.resolve()))
    else:
        weights = learner_weights(algo)
        for slot in range(config.pool_size):
            set_snapshot(algo, slot, weights)
    return algo


def stop_algorithm(algo: Algorithm) -> None:
    """``algo.stop()``, then remove the empty log folder that Ray's ``Trainable`` makes under
    ``~/ray_results`` for every algorithm (RLlib writes nothing there when run without Tune), and
    ``~/ray_results`` itself when that leaves it empty: a run leaves nothing in the home folder."""
    logdir = Path(algo.logdir)
    algo.stop()
    with contextlib.suppress(OSError):  # not empty: keep
        logdir.rmdir()
        logdir.parent.rmdir()


# --------------------------------------------------------------------------- training


def iteration_steps(result: dict[str, Any]) -> int:
    """The learner's decisions sampled in one training iteration."""
    sampled = result.get("env_runners", {}).get("num_module_steps_sampled", {})
    return int(sampled.get(LEARNER, 0))


def log_result(logger: Any, result: dict[str, Any]) -> None:
    """RLlib's iteration results to TensorBoard: ``rollout/*`` (the learner's mean return, episode
    lengths, episodes and env steps of all seats) and ``train/*`` (the learner's finite stats:
    losses, entropy, explained variance, gradient norm)."""
    runners = result.get("env_runners", {})
    returns = runners.get("module_episode_returns_mean", {})
    if LEARNER in returns:
        logger.record("rollout/ep_rew_mean", float(returns[LEARNER]))
    for key in ("episode_len_mean", "num_episodes", "num_env_steps_sampled"):
        if key in runners:
            logger.record(f"rollout/{key}", float(runners[key]))
    for key, value in result.get("learners", {}).get(LEARNER, {}).items():
        if isinstance(value, (int, float, np.floating)) and not isinstance(value, bool) and np.isfinite(value):
            logger.record(f"train/{key}", float(value))


class Periodic:
    """Whether a period of ``every`` steps was crossed since the last check (0: never)."""

    def __init__(self, every: int, steps: int):
        self.every = every
        self.last = steps

    def due(self, steps: int) -> bool:
        crossed = bool(self.every) and steps // self.every > self.last // self.every
        self.last = steps
        return crossed


def train_rllib(config: TrainConfig, resume: bool = False, command_line: list[str] | None = None) -> Path:
    """Train by self-play with RLlib PPO as ``config`` says; returns the run folder.

    :param config: a checked config with ``backend: rllib``.
    :param resume: continue from the run folder's newest RLlib checkpoint.
    :param command_line: the command recorded in ``metadata.json``.
    :raises ValueError: when starting a new run in a folder that already holds one.
    """
    import torch

    run_dir = open_run_dir(config, resume, command_line or sys.argv)
    latest = latest_checkpoint(run_dir / "checkpoints", CHECKPOINT_PREFIX, suffix="") if resume else None
    steps = latest[0] if latest else 0
    seed = config.seed + steps  # a resumed run does not replay the same deals
    torch.manual_seed(seed)
    torch.set_num_threads(config.torch_threads)
    started = init_ray(config.ray_address, num_cpus=max(os.cpu_count() or 1, config.num_env_runners))
    run = RLlibRun(config, run_dir, steps)
    algo = None
    try:
        if latest:
            print(f"resuming from {latest[1]} ({steps} steps)")
        algo = build_algorithm(config, seed, latest[1] if latest else None)
        run.learn(algo)
        final = export_policy(algo, config, run_dir / FINAL_POLICY, run.steps)
    finally:
        if algo is not None:
            stop_algorithm(algo)
        run.logger.close()
        if started:
            ray.shutdown()
    print(f"final policy: {final}   (agents.load({str(run_dir)!r}) plays it without Ray)")
    if run.evals.latest:
        print(f"evaluations: {run_dir / 'evals.jsonl'}   " + describe_eval(run.evals.latest))
    if any(r.get("illegal_actions") for r in run.evals.latest.values() if isinstance(r, dict)):
        warnings.warn("illegal actions in the evaluation; the masks are wrong", stacklevel=1)
    return run_dir


class RLlibRun:
    """The training loop of one run: iterations, then the periodic snapshot, checkpoint, evaluation
    and Elo; TensorBoard through SB3's logger. Evaluations and Elo are the SB3 backend's
    callbacks, driven here with the learner's NumPy policy (:class:`NumpyModel`).

    :param config: the run's config.
    :param run_dir: the run folder.
    :param steps: the learner's decisions so far (a resumed run's checkpoint).
    """

    def __init__(self, config: TrainConfig, run_dir: Path, steps: int):
        from stable_baselines3.common.logger import configure

        self.config, self.run_dir, self.steps = config, run_dir, steps
        self.logger = configure(str(run_dir / "tb" / "rllib_ppo"), ["tensorboard"])
        self.evals, self.elo = rating_callbacks(config, config.make_rules(), run_dir)
        self.periods = {
            name: Periodic(every, steps)
            for name, every in (
                ("snapshot", config.snapshot_every),
                ("checkpoint", config.checkpoint_every),
                ("eval", config.eval_every),
                ("elo", config.elo_every),
            )
        }

    def rate(self, algo: Algorithm, callback: Any) -> None:
        """Run an evaluation or Elo callback on the learner's current policy."""
        callback.model = NumpyModel(learner_policy(algo, self.config), self.logger)
        callback.run(self.steps)

    def learn(self, algo: Algorithm) -> None:
        """Train until ``total_timesteps``; Ctrl-C saves a checkpoint first (``--resume`` continues)."""
        config, checkpoints = self.config, self.run_dir / "checkpoints"
        start, start_steps = time.perf_counter(), self.steps
        bar = _progress(config, self.steps)
        try:
            while self.steps < config.total_timesteps:
                self.iterate(algo, start, start_steps)
                if bar is not None:
                    bar.update(self.steps - bar.n)
        except KeyboardInterrupt:
            saved = save_checkpoint(algo, config, checkpoints, self.steps)
            print(
                f"\ninterrupted at {self.steps} steps; saved {saved}; "
                f"continue with `treppen train --resume {self.run_dir}`"
            )
            raise
        finally:
            if bar is not None:
                bar.close()
        if self.steps == start_steps:
            print(f"the run has {self.steps} of total_timesteps={config.total_timesteps} steps; raise total_timesteps=")
            return
        save_checkpoint(algo, config, checkpoints, self.steps)
        if self.evals.latest.get("steps") != self.steps:
            self.rate(algo, self.evals)
        if config.elo_every and self.elo.latest.get("steps") != self.steps:
            self.rate(algo, self.elo)
        self.logger.dump(self.steps)

    def iterate(self, algo: Algorithm, start: float, start_steps: int) -> None:
        """One training iteration and the periodic work it makes due."""
        config = self.config
        result = algo.train()
        self.steps += iteration_steps(result)
        log_result(self.logger, result)
        self.logger.record("time/steps_per_second", (self.steps - start_steps) / (time.perf_counter() - start))
        if self.periods["snapshot"].due(self.steps):
            set_snapshot(algo, (self.steps // config.snapshot_every - 1) % config.pool_size)
        if self.periods["checkpoint"].due(self.steps):
            save_checkpoint(algo, config, self.run_dir / "checkpoints", self.steps)
        if self.periods["eval"].due(self.steps):
            self.rate(algo, self.evals)
        if self.periods["elo"].due(self.steps):
            self.rate(algo, self.elo)
        self.logger.dump(self.steps)


def _progress(config: TrainConfig, steps: int) -> Any:
    if not config.progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=config.total_timesteps, initial=steps, unit="step", dynamic_ncols=True, mininterval=1.0)
