"""``backend: rllib``: self-play PPO on Ray RLlib's new API stack (docs/ARCHITECTURE.md "Scale-out").

Reads top to bottom: Ray -> PPO config (env, modules, seat mapping) -> algorithm (or restore)
-> training iterations with snapshots, checkpoints, evaluations and Elo -> export. The run folder
has the SB3 backend's layout::

    config.yaml, metadata.json     as for sb3 (``--resume`` reads config.yaml back)
    tb/rllib_ppo/                  TensorBoard: rollout/*, train/* (RLlib's learner stats), eval/*
    checkpoints/rllib_<steps>_steps/    RLlib checkpoints (``Algorithm.save_to_path``; the newest 2 kept)
    checkpoints/policy_<steps>_steps.npz  the learner's policy at that checkpoint, Ray-free
    evals.jsonl, elo.jsonl         as for sb3 (the same evaluation and Elo code)
    imitation.jsonl, checkpoints/imitation_round_<r>.pt   the imitation warm start, as for sb3
    best.jsonl, best_policy.npz    with ``best_every``: keep-best's gates and the best policy
    checkpoints/best_module.npz    the best module's weights (read back by ``--resume``)
    final_policy.npz               the final policy; ``agents.load(run_folder)`` plays it without Ray

Steps count the learner's decisions (RLlib's module steps of ``learner``), as ``total_timesteps``
does for sb3. The recipe is the SB3 backend's: the imitation warm start runs the one imitation
code path (:func:`treppen.train.common.imitation.warm_start`) on a fresh learner module
(:class:`treppen.train.rllib.modules.ModuleStudent`), whose weights the learner then starts from
(:func:`imitation_weights`); keep-best is the same gate
(:class:`treppen.train.common.keep_best.KeepBestGate`, :class:`RLlibBest`). Self-play: every episode the learner
takes one seat and each other seat draws an opponent kind of the SB3 pool (:class:`SeatMapping`):
random, greedy, one of ``pool_size`` frozen snapshots of the learner, the best model or an
``opponent_agents`` spec; a snapshot slot is overwritten with the learner's weights every
``snapshot_every`` steps, round robin (at the start every slot, and the best, holds the initial
weights). A failed env runner is restarted (RLlib's ``restart_failed_env_runners``) and the run
goes on. Needs ``pip install 'treppen[ray]'``.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from treppen import agents
from treppen.agents.snapshot import ActionFeatureSnapshot, NumpyPolicy, SnapshotAgent
from treppen.train.common.checkpoints import (
    TrainingStopped,
    checkpoint_path,
    checkpoints,
    latest_checkpoint,
    newest_readable,
)
from treppen.train.common.config import RLlibConfig
from treppen.train.common.keep_best import KeepBestGate
from treppen.train.common.logger import Logger
from treppen.train.common.periodic_ratings import Every
from treppen.train.common.rundir import open_run_dir, print_end, print_ratings, progress_bar, run_ratings
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

from treppen.arena.ray_cluster import init_ray
from treppen.train.rllib.modules import (
    BEST,
    GREEDY,
    LEARNER,
    RANDOM,
    AgentModule,
    MaskedPolicyModule,
    ModuleStudent,
    SeatMapping,
    TreppenRLlibEnv,
    named_agent_id,
    snapshot_id,
)

CHECKPOINT_PREFIX = "rllib_"
KEEP_CHECKPOINTS = 2
FINAL_POLICY = "final_policy.npz"
BEST_POLICY = "best_policy.npz"
BEST_MODULE = "best_module.npz"
MAX_ENV_RUNNER_RESTARTS = 100
#: Iterations without a sample and without a healthy env runner after which a run stops
#: (:class:`TrainingStopped`): RLlib restarts a lost runner within an iteration or two when it can.
STALLED_ITERATIONS = 3


def _healthy_runners(algo: Algorithm) -> int:
    """The env runners that are alive (remote ones; a run without remote runners counts 1)."""
    group = algo.env_runner_group
    if group is None or not group.num_remote_workers():
        return 1
    return group.num_healthy_remote_workers()


# --------------------------------------------------------------------------- the algorithm


def ppo_config(config: RLlibConfig, seed: int) -> PPOConfig:
    """RLlib's PPO config (new API stack) for a config of ``backend: rllib``.

    One training iteration gathers ``n_steps * n_envs * num_players`` env steps (all seats; the
    learner's share is about ``n_steps * n_envs``, as an SB3 rollout) from ``num_env_runners``
    runners stepping ``n_envs`` envs each; minibatches of ``batch_size``, ``n_epochs`` passes; no
    KL penalty (as SB3); the learner runs in this process. A failed env runner is restarted (up to
    :data:`MAX_ENV_RUNNER_RESTARTS` times) and gets the current weights.
    """
    rules = config.make_rules()  # the run's one Rules object, pickled to every env runner
    env_config = {"num_players": config.num_players, "rules": rules}
    specs = module_specs(config, rules, seed)
    mapping = SeatMapping(config.num_players, config.opponent_probs(), config.pool_size, len(config.opponent_agents))
    return (
        PPOConfig()
        .environment(TreppenRLlibEnv, env_config=env_config, disable_env_checking=True)
        .framework("torch")
        .env_runners(
            num_env_runners=config.num_env_runners,
            num_envs_per_env_runner=config.n_envs,
            num_cpus_per_env_runner=1,
        )
        .fault_tolerance(restart_failed_env_runners=True, max_num_env_runner_restarts=MAX_ENV_RUNNER_RESTARTS)
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
            train_batch_size_per_learner=config.n_steps * config.n_envs * config.num_players,
            minibatch_size=config.batch_size,
            num_epochs=config.n_epochs,
        )
        .multi_agent(policies=set(specs), policy_mapping_fn=mapping, policies_to_train=[LEARNER])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .debugging(seed=seed)
    )


def learner_model_config(config: RLlibConfig, rules: Any) -> dict[str, Any]:
    """The learner module's ``model_config`` (:class:`treppen.train.rllib.modules.MaskedPolicyModule`)."""
    return {
        "policy": config.policy,
        "net_arch": list(config.net_arch),
        "activation": config.activation,
        "card_dim": config.card_dim,
        "action_dim": config.action_dim,
        "features": config.features,
        "num_players": config.num_players,
        "rules": rules,
    }


def module_specs(config: RLlibConfig, rules: Any, seed: int) -> dict[str, RLModuleSpec]:
    """The modules: the learner, its frozen copies (``snapshot_<k>``, and ``best`` with
    ``best_every``) and the fixed opponents (``random``, ``greedy``, ``agent_<k>`` per
    ``opponent_agents`` spec when ``opponent_agent`` > 0)."""
    learner = RLModuleSpec(module_class=MaskedPolicyModule, model_config=learner_model_config(config, rules))
    fixed = {RANDOM: RANDOM, GREEDY: GREEDY}
    if config.opponent_agent:
        fixed |= {named_agent_id(k): spec for k, spec in enumerate(config.opponent_agents)}
    specs = {
        module: RLModuleSpec(module_class=AgentModule, model_config={"agent": spec, "rules": rules, "seed": seed})
        for module, spec in fixed.items()
    }
    return specs | {LEARNER: learner} | {module: learner for module in frozen_copies(config)}


def frozen_copies(config: RLlibConfig) -> list[str]:
    """The modules that hold copies of the learner's weights: the snapshot slots and the best."""
    return [snapshot_id(k) for k in range(config.pool_size)] + ([BEST] if config.best_every else [])


def learner_weights(algo: Algorithm) -> dict[str, np.ndarray]:
    """The learner module's state dict as NumPy arrays (``pi.<i>.weight``, ``vf.<i>.bias``, ...)."""
    state = _learners(algo).get_weights([LEARNER])[LEARNER]
    return {k: np.asarray(v.detach().cpu() if hasattr(v, "detach") else v) for k, v in state.items()}


def set_modules(algo: Algorithm, weights: dict[str, dict[str, Any]]) -> None:
    """Set the weights of modules (module id -> state dict) in the learner and in every env
    runner (waiting for them)."""
    learners, runners = _learners(algo), algo.env_runner_group
    assert runners is not None, "the algorithm has no env runners"
    learners.set_weights(weights)
    runners.sync_weights(from_worker_or_learner_group=learners, policies=list(weights), timeout_seconds=60.0)


def learner_module(config: RLlibConfig) -> MaskedPolicyModule:
    """A fresh learner module of ``config`` (seeded by torch's global generator), as the learner's
    spec builds it (:func:`module_specs`)."""
    rules = config.make_rules()
    env = TreppenRLlibEnv({"num_players": config.num_players, "rules": rules})
    agent = env.possible_agents[0]
    return MaskedPolicyModule(
        observation_space=env.observation_space[agent],
        action_space=env.action_space[agent],
        model_config=learner_model_config(config, rules),
    )


def module_state(module: MaskedPolicyModule) -> dict[str, np.ndarray]:
    """A module's state dict as NumPy arrays (what :func:`build_algorithm` starts the learner from)."""
    return {key: value.detach().cpu().numpy() for key, value in module.state_dict().items()}


def imitation_weights(config: RLlibConfig, run_dir: Path) -> dict[str, np.ndarray]:
    """The learner's starting weights after the imitation warm start
    (:func:`treppen.train.common.imitation.warm_start`) of a fresh learner module."""
    from treppen.train.common.imitation import describe_agreement, warm_start

    module = learner_module(config)
    print(describe_agreement(warm_start(ModuleStudent(module, config.learning_rate), config, run_dir)))
    return module_state(module)


def _learners(algo: Algorithm) -> LearnerGroup:
    """The algorithm's learner group (built with it on the new API stack)."""
    assert algo.learner_group is not None, "the algorithm has no learner group"
    return algo.learner_group


def policy_arrays(config: RLlibConfig, weights: dict[str, np.ndarray]) -> dict[str, Any]:
    """The learner's policy as the arrays of a ``train.sb3.pool`` snapshot ``.npz`` (the format
    :meth:`treppen.agents.snapshot.NumpyPolicy.load` reads): ``w<i>``/``b<i>`` of the MLP's layers, or the
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


def learner_policy(algo: Algorithm, config: RLlibConfig) -> NumpyPolicy:
    """The learner's current policy as a NumPy forward pass (no file)."""
    arrays = policy_arrays(config, learner_weights(algo))
    if config.policy == "action_features":
        return ActionFeatureSnapshot({k: v for k, v in arrays.items() if k != "kind"})
    layers = int(arrays["layers"])
    return NumpyPolicy([(arrays[f"w{i}"], arrays[f"b{i}"]) for i in range(layers)], config.activation)


def export_policy(
    algo: Algorithm, config: RLlibConfig, path: Path, steps: int, weights: dict[str, np.ndarray] | None = None
) -> Path:
    """Write the learner's policy (or that of the module ``weights``) as a NumPy snapshot ``.npz``
    (atomically); it plays without Ray or torch (``agents.load``, :class:`treppen.agents.snapshot.NumpyPolicy`)."""
    arrays = policy_arrays(config, learner_weights(algo) if weights is None else weights)
    return write_arrays(path, arrays | {"steps": np.array(steps)})


def write_arrays(path: Path, arrays: dict[str, Any]) -> Path:
    """``np.savez`` of ``arrays`` to ``path``, atomically."""
    return atomic_write(path, lambda tmp: np.savez(tmp, **arrays), suffix=".npz")


class NumpyModel:
    """SB3's ``predict`` over a NumPy policy, so the SB3 backend's evaluation and Elo code (which
    take a MaskablePPO model) rate the RLlib learner unchanged. Deterministic: the masked argmax.

    :param policy: the exported policy.
    :param logger: the logger the ratings record to (``callback.logger`` is ``model.logger``;
        :class:`treppen.train.common.logger.Logger`).
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


def save_checkpoint(algo: Algorithm, config: RLlibConfig, folder: Path, steps: int) -> Path:
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


def build_algorithm(config: RLlibConfig, seed: int, initial: dict[str, np.ndarray] | None = None) -> Algorithm:
    """Build PPO, its learner started from ``initial`` (the imitation warm start; ``None``: its random
    initial weights), every snapshot slot and the best filled with the same weights (a resumed run
    then restores its checkpoint: :func:`restore`)."""
    algo = ppo_config(config, seed).build_algo()
    weights = learner_weights(algo) if initial is None else initial
    start = [LEARNER] if initial is not None else []
    set_modules(algo, {module: weights for module in start + frozen_copies(config)})
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
    """The learner's decisions sampled in one training iteration (0 when nothing was sampled: RLlib
    then reports NaN)."""
    sampled = result.get("env_runners", {}).get("num_module_steps_sampled", {}).get(LEARNER, 0)
    return int(sampled) if math.isfinite(sampled) else 0


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


def train_rllib(config: RLlibConfig, resume: bool = False, command_line: list[str] | None = None) -> Path:
    """Train by self-play with RLlib PPO as ``config`` says; returns the run folder.

    :param config: a checked config with ``backend: rllib``.
    :param resume: continue from the run folder's newest RLlib checkpoint that reads (newer ones
        that do not are named and passed over; :func:`newest_checkpoint`).
    :param command_line: the command recorded in ``metadata.json``.
    :raises ValueError: when starting a new run in a folder that already holds one.
    """
    import torch

    begun = time.perf_counter()
    run_dir = open_run_dir(config, resume, command_line or sys.argv)
    found = newest_checkpoint(run_dir / "checkpoints") if resume else None
    seed = config.seed + (found[0] if found else 0)  # a resumed run does not replay the same deals
    torch.manual_seed(seed)
    torch.set_num_threads(config.torch_threads)
    initial = imitation_weights(config, run_dir) if found is None and config.imitation_decisions else None
    started = init_ray(config.ray_address, num_cpus=max(os.cpu_count() or 1, config.num_env_runners))
    algo = None
    run: RLlibRun | None = None
    try:
        algo = build_algorithm(config, seed, initial=initial)
        steps = restore(algo, found)
        run = RLlibRun(config, run_dir, steps)
        if run.best is not None:
            run.best.start(algo, steps)
        run.learn(algo)
        final = export_policy(algo, config, run_dir / FINAL_POLICY, run.steps)
    finally:
        if algo is not None:
            stop_algorithm(algo)
        if run is not None:
            run.logger.close()
        if started:
            ray.shutdown()
    print(f"final policy: {final}   (agents.load({str(run_dir)!r}) plays it without Ray)")
    if run.best is not None:
        print(f"best policy: {run.best.path} ({run.best.gate.promotions} promotions; {run_dir / 'best.jsonl'})")
    if run.evals.latest:
        print_ratings(run_dir, config.eval_deals, run.evals, run.elo)
    if any(r.get("illegal_actions") for r in run.evals.latest.values() if isinstance(r, dict)):
        warnings.warn("illegal actions in the evaluation; the masks are wrong", stacklevel=1)
    print_end(run_dir, config, time.perf_counter() - begun, run.steps - steps)
    return run_dir


#: The state file of an RLlib checkpoint that holds its metrics (``Algorithm.save_to_path``).
ALGORITHM_STATE = "algorithm_state.pkl"
#: The metric of the learner's decisions sampled so far, in :data:`ALGORITHM_STATE` (Ray 2.60's key).
LEARNER_STEPS = f"env_runners--num_module_steps_sampled_lifetime--{LEARNER}"


def read_checkpoint(path: Path) -> int:
    """The learner's decisions at the RLlib checkpoint folder ``path``, read from it (its name is not
    trusted): every state file of the folder unpickles, and the algorithm state's lifetime count of
    the learner's sampled steps (the count the training loop adds up) is the result.

    :raises ValueError: for a path that is not a folder, or an algorithm state without the count.
    :raises OSError: for a state file missing.
    :raises Exception: whatever unpickling a damaged state file raises (``UnpicklingError``, ``EOFError``, ...).
    """
    if not path.is_dir():
        raise ValueError("not a checkpoint folder")
    for state in sorted(path.rglob("*.pkl")):
        with state.open("rb") as f:
            pickle.load(f)
    with (path / ALGORITHM_STATE).open("rb") as f:
        stats = pickle.load(f).get("metrics_logger", {}).get("stats", {})
    if LEARNER_STEPS not in stats:
        raise ValueError(f"no {LEARNER_STEPS} in its {ALGORITHM_STATE}")
    return int(stats[LEARNER_STEPS]["lifetime_sum"])


def newest_checkpoint(folder: Path) -> tuple[int, Path] | None:
    """(steps, path) of the newest RLlib checkpoint in ``folder`` that reads (:func:`read_checkpoint`;
    its steps as read), passing over (and naming in one line) newer ones that do not
    (:func:`treppen.train.common.checkpoints.newest_readable`); None when there is none.

    :raises ValueError: when there are checkpoints but none reads.
    """
    found = newest_readable(checkpoints(folder, CHECKPOINT_PREFIX, suffix=""), read_checkpoint)
    return None if found is None else (found[2], found[1])


def restore(algo: Algorithm, checkpoint: tuple[int, Path] | None) -> int:
    """Restore ``checkpoint`` (:func:`newest_checkpoint`) into ``algo``; its steps, 0 for None."""
    if checkpoint is None:
        return 0
    steps, path = checkpoint
    algo.restore_from_path(str(path.resolve()))
    print(f"resuming from {path} ({steps} steps)")
    return steps


class RLlibBest:
    """Keep-best for the RLlib learner: the gate both backends use
    (:class:`treppen.train.common.keep_best.KeepBestGate`) on the learner's NumPy policy. The best is
    ``best_policy.npz`` (``agents.load`` plays it), the module ``best`` in the learner and every env
    runner (the ``best`` opponent), and
    ``checkpoints/best_module.npz`` (its weights, read back by ``--resume``).

    :param config: the run's config (``best_decks``, ``best_threshold``).
    :param run_dir: the run folder.
    """

    def __init__(self, config: RLlibConfig, run_dir: Path):
        self.config, self.run_dir = config, run_dir
        self.gate = KeepBestGate(
            run_dir, config.num_players, config.make_rules(), config.best_decks, config.best_threshold
        )

    @property
    def path(self) -> Path:
        return self.run_dir / BEST_POLICY

    @property
    def module_path(self) -> Path:
        return self.run_dir / "checkpoints" / BEST_MODULE

    def start(self, algo: Algorithm, steps: int) -> None:
        """The best of a resumed run back into module ``best``; at the start of a fresh run, the
        learner itself (e.g. the imitation student) is the first best."""
        if self.module_path.is_file():
            with np.load(self.module_path) as data:
                set_modules(algo, {BEST: {k: data[k] for k in data.files}})
        else:
            self.promote(algo, steps)

    def promote(self, algo: Algorithm, steps: int) -> None:
        """Make the learner's current weights the best."""
        weights = learner_weights(algo)
        set_modules(algo, {BEST: weights})
        export_policy(algo, self.config, self.path, steps, weights)
        write_arrays(self.module_path, weights)

    def run(self, algo: Algorithm, steps: int, logger: Any) -> None:
        """Gate the learner against the best; promote it when it passes."""
        candidate = SnapshotAgent(learner_policy(algo, self.config), deterministic=True)
        if self.gate.judge(candidate, agents.load(self.path), steps):
            self.promote(algo, steps)
        self.gate.record(logger)


class RLlibRun:
    """The training loop of one run: iterations, then the periodic snapshot, checkpoint, keep-best
    gate, evaluation and Elo; TensorBoard through SB3's logger. Evaluations and Elo are the SB3
    backend's callbacks, driven here with the learner's NumPy policy (:class:`NumpyModel`).

    :param config: the run's config.
    :param run_dir: the run folder.
    :param steps: the learner's decisions so far (a resumed run's checkpoint).
    """

    def __init__(self, config: RLlibConfig, run_dir: Path, steps: int):
        self.config, self.run_dir, self.steps = config, run_dir, steps
        self.logger = Logger(run_dir / "tb" / "rllib_ppo")
        self.evals, self.elo = run_ratings(config, config.make_rules(), run_dir)
        self.best = RLlibBest(config, run_dir) if config.best_every else None
        self.periods = {
            name: Every(every, steps)
            for name, every in (
                ("snapshot", config.snapshot_every),
                ("checkpoint", config.checkpoint_every),
                ("best", config.best_every),
                ("eval", config.eval_every),
                ("elo", config.elo_every),
            )
        }

    def rate(self, algo: Algorithm, callback: Any) -> None:
        """Run an evaluation or Elo callback on the learner's current policy."""
        callback.model = NumpyModel(learner_policy(algo, self.config), self.logger)
        callback.run(self.steps)

    def learn(self, algo: Algorithm) -> None:
        """Train until ``total_timesteps``; Ctrl-C saves a checkpoint first (``--resume`` continues).

        :raises TrainingStopped: when every env runner is lost and RLlib restarts none for
            :data:`STALLED_ITERATIONS` iterations (a lost node with no room left for them, or the
            restart limit spent): a checkpoint of the steps so far is saved (when the learner can
            still save one; else the newest is kept) and the message names the resume command.
        """
        config, checkpoints = self.config, self.run_dir / "checkpoints"
        start, start_steps = time.perf_counter(), self.steps
        bar = _progress(config, self.steps)
        stalled = 0
        try:
            while self.steps < config.total_timesteps:
                before = self.steps
                self.iterate(algo, start, start_steps)
                stalled = stalled + 1 if self.steps == before and not _healthy_runners(algo) else 0
                if stalled >= STALLED_ITERATIONS:
                    raise TrainingStopped(self._stopped(algo, "every env runner is lost and none was restarted"))
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
        if self.best is not None and self.best.gate.latest.get("steps") != self.steps:
            self.best.run(algo, self.steps, self.logger)  # the final policy is gated too
        self.logger.dump(self.steps)

    def _stopped(self, algo: Algorithm, reason: str) -> str:
        """Save what can be saved after a failure RLlib cannot recover from; the message."""
        checkpoints = self.run_dir / "checkpoints"
        try:
            saved = str(save_checkpoint(algo, self.config, checkpoints, self.steps))
        except Exception as err:  # the learner is gone too: the newest periodic checkpoint stays
            found = latest_checkpoint(checkpoints, CHECKPOINT_PREFIX, suffix="")
            saved = f"nothing ({type(err).__name__}: {err}); the newest checkpoint is {found[1] if found else 'none'}"
        return (
            f"training stopped at {self.steps} of {self.config.total_timesteps} steps: {reason}; saved {saved}; "
            f"continue with `treppen train --resume {self.run_dir}` once the cluster has room for "
            f"{self.config.num_env_runners} env runners (or with num_env_runners=N for fewer)"
        )

    def iterate(self, algo: Algorithm, start: float, start_steps: int) -> None:
        """One training iteration and the periodic work it makes due."""
        config = self.config
        result = algo.train()
        self.steps += iteration_steps(result)
        log_result(self.logger, result)
        self.logger.record("time/steps_per_second", (self.steps - start_steps) / (time.perf_counter() - start))
        if self.periods["snapshot"].due(self.steps):
            slot = (self.steps // config.snapshot_every - 1) % config.pool_size
            set_modules(algo, {snapshot_id(slot): learner_weights(algo)})
        if self.periods["best"].due(self.steps) and self.best is not None:
            self.best.run(algo, self.steps, self.logger)
        if self.periods["checkpoint"].due(self.steps):
            save_checkpoint(algo, config, self.run_dir / "checkpoints", self.steps)
        if self.periods["eval"].due(self.steps):
            self.rate(algo, self.evals)
        if self.periods["elo"].due(self.steps):
            self.rate(algo, self.elo)
        self.logger.dump(self.steps)


def _progress(config: RLlibConfig, steps: int) -> Any:
    """The run's progress bar over the learner's decisions (:func:`treppen.train.common.rundir.progress_bar`;
    an iteration's count varies, so the bar's total is ``total_timesteps``)."""
    return progress_bar(steps, config.total_timesteps) if config.progress else None
