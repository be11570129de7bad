"""Training speed (a benchmark, not a test). Variants (the first word; without one, ``sb3``):

- ``sb3``: the self-play trainer's throughput against the SB3 ceiling (below);
- ``kernel``: the batched learner against its rollout workers, processes or Ray actors (:func:`kernel`);
- ``imitation``: the imitation warm start's collection speed (:func:`imitation`);
- ``rllib``: the RLlib backend's scaling on paper, in the Ray venv (:func:`rllib`).

``sb3`` runs, in one process and one after the other:

1. the real trainer setup: the default config (``configs/selfplay.yaml``), its vector env of
   :class:`treppen.train.sb3.pool.SelfPlayEnv` with the opponent pool (a snapshot in the pool, as after the
   first ``snapshot_every`` steps) and its MaskablePPO learner, for a fixed budget of steps;
2. the same MaskablePPO hyperparameters, policy and ``n_envs`` on a trivial env that replays
   recorded real observations and masks, whose step costs next to nothing: the most this machine's
   SB3 could reach with this policy (a ``kernel`` run's ceiling uses in-process envs).

3. the batched learner (``backend: kernel``, ``configs/kernel.yaml``: PPO over the batched env's
   rows, a snapshot in its pool, its rollout workers as the config says: ``auto``, the cores less
   one), rollouts and updates, for ``--kernel-updates`` updates.

It prints the rates, the SB3 trainer's ratio to its ceiling (target >= 0.7), and on its LAST line
the two training rates, the batched learner's first, then MaskablePPO's (env steps per wall
second, training included), as plain numbers; it writes ``benchmarks/results/bench_train.json``
atomically. Usage::

    .venv/bin/python benchmarks/bench_train.py [sb3] [--steps 16384] [--config configs/selfplay.yaml]
        [--kernel-config configs/kernel.yaml] [--kernel-updates 4]

Other processes on the machine skew both numbers; the load average is recorded alongside.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np
import torch
from harness import conditions, rounds_of, run_variant, write
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

import treppen_env
from treppen.train.common.config import KernelConfig, RLlibConfig, SB3Config, TrainConfig
from treppen.train.common.config_files import load_config
from treppen.train.sb3.backend import make_model, make_vec_env
from treppen.train.sb3.callbacks import StatsCallback
from treppen.train.sb3.pool import save_snapshot
from treppen_env.actions import NUM_ACTIONS
from treppen_env.files import atomic_write_text
from treppen_env.observation import OBS_SIZE

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "bench_train.json"
TARGET_RATIO = 0.7


def recorded_positions(count: int = 240, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``count`` real observations (float32 (count, 969)) and masks (bool (count, 898)) of
    random-legal play in ``env()``: inputs the action-feature policy can read."""
    env = treppen_env.env()
    rng = np.random.default_rng(seed)
    obs, masks = [], []
    env.reset(seed=seed)
    while len(obs) < count:
        if any(env.terminations.values()) or any(env.truncations.values()):
            env.reset(seed=int(rng.integers(1 << 30)))
        seen = env.observe(env.agent_selection)
        obs.append(seen["observation"])
        masks.append(seen["action_mask"].astype(bool))
        env.step(int(rng.choice(np.flatnonzero(seen["action_mask"]))))
    return np.stack(obs), np.stack(masks)


class TrivialMaskedEnv(gym.Env):
    """Same spaces as SingleAgentEnv, no game: it replays recorded positions (the mask of the
    current one) in episodes of ``length`` steps with a random final reward."""

    def __init__(self, length: int = 60, seed: int = 0):
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (OBS_SIZE,), np.float32)
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.obs, self.masks = recorded_positions(seed=seed)
        self.length = length
        self.t = 0
        self.rng = np.random.default_rng(seed)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self.obs[0], {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        done = self.t >= self.length
        return self.obs[self.t % len(self.obs)], float(self.rng.normal()) if done else 0.0, done, False, {}

    def action_masks(self) -> np.ndarray:
        return self.masks[self.t % len(self.masks)]


def _trivial_env(rank: int) -> gym.Env:
    torch.set_num_threads(1)
    return TrivialMaskedEnv(seed=rank)


def steps_per_second(model, steps: int, callback=None) -> float:
    """Steps/s of ``model.learn(steps)`` after one warm-up rollout and update."""
    warmup = model.n_steps * model.n_envs
    model.learn(warmup, callback=callback, reset_num_timesteps=False)
    start = time.perf_counter()
    model.learn(steps, callback=callback, reset_num_timesteps=False)
    return steps / (time.perf_counter() - start)


class PhaseTimes(BaseCallback):
    """Wall seconds of the rollouts (of which ``env``: the vector env's ``step_wait``, the
    opponents' moves included) and of the whole ``learn`` call; the rest is the PPO update."""

    def __init__(self) -> None:
        super().__init__()
        self.rollout = self.env = 0.0
        self._start = 0.0

    def _init_callback(self) -> None:
        vec_env = self.training_env
        step_wait = vec_env.step_wait

        def timed() -> Any:
            start = time.perf_counter()
            try:
                return step_wait()
            finally:
                self.env += time.perf_counter() - start

        vec_env.step_wait = timed

    def _on_rollout_start(self) -> None:
        self._start = time.perf_counter()

    def _on_rollout_end(self) -> None:
        self.rollout += time.perf_counter() - self._start

    def _on_step(self) -> bool:
        return True


def bench_trainer(config: SB3Config, steps: int) -> tuple[float, dict[str, float]]:
    """Steps/s of the trainer's env + learner, with one snapshot in the opponent pool, and the
    shares of one PPO step's wall time: ``env`` (the vector env's step, opponents included),
    ``policy`` (the rest of the rollout: the policy's forward pass, the buffer) and ``update``."""
    vec_env = make_vec_env(config, config.make_rules(), config.seed)
    model = make_model(config, vec_env, None, config.seed)
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = save_snapshot(model.policy, Path(tmp) / "snapshot.npz")
        vec_env.env_method("set_pool", [str(snapshot)])
        try:
            warmup = model.n_steps * model.n_envs
            model.learn(warmup, callback=StatsCallback(), reset_num_timesteps=False)
            phases = PhaseTimes()
            start = time.perf_counter()
            model.learn(steps, callback=[StatsCallback(), phases], reset_num_timesteps=False)
            total = time.perf_counter() - start
        finally:
            vec_env.close()
    shares = {
        "env": phases.env / total,
        "policy": (phases.rollout - phases.env) / total,
        "update": (total - phases.rollout) / total,
    }
    return steps / total, {k: round(v, 3) for k, v in shares.items()}


def bench_ceiling(config: SB3Config, steps: int) -> float:
    """Steps/s of the same learner and vector env kind on :class:`TrivialMaskedEnv`."""
    fns = [functools.partial(_trivial_env, rank) for rank in range(config.n_envs)]
    vec_env = SubprocVecEnv(fns) if config.n_envs > 1 and config.vec_env == "subproc" else DummyVecEnv(fns)
    model = make_model(config, vec_env, None, config.seed)
    try:
        return steps_per_second(model, steps)
    finally:
        vec_env.close()


def bench_kernel(config: KernelConfig, updates: int) -> dict[str, Any]:
    """Env steps per wall second and per CPU second (this process; Ray actors' CPU not counted) of
    the batched learner with its config's rollout workers over ``updates`` rollouts and updates,
    after one warm-up update, with one snapshot in its pool; and the shares of the wall time the
    learner's thread spent updating and waiting for rollouts (with ``rollout_workers: 0`` the
    rollouts themselves), with the load average before and after."""
    from treppen.train.kernel.backend import make_workers
    from treppen.train.kernel.learner import Learner
    from treppen.train.kernel.learner import updates as loop

    learner = Learner(config, config.seed)
    with tempfile.TemporaryDirectory() as tmp:
        learner.snapshot(Path(tmp))
    workers = make_workers(config, learner)
    spent = {"update": 0.0, "wait": 0.0}

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args)
            finally:
                spent[name] += time.perf_counter() - start

        return run

    learner.update, workers.wait = timed("update", learner.update), timed("wait", workers.wait)  # type: ignore[method-assign]
    per_update = config.n_steps * config.n_envs
    try:
        steps = loop(learner, workers, (updates + 1) * per_update)
        next(steps)  # the warm-up update
        spent.update(update=0.0, wait=0.0)
        load, start, cpu = os.getloadavg()[0], time.perf_counter(), time.process_time()
        for _ in steps:
            pass
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        workers.close()
    timed_steps = updates * per_update
    return {
        "steps_per_s": timed_steps / wall,
        "steps_per_cpu_s": timed_steps / cpu,
        "update_share": spent["update"] / wall,
        "wait_share": spent["wait"] / wall,
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


#: A backend's config class.
Loaded = TypeVar("Loaded", bound=TrainConfig)


def backend_config(config: TrainConfig, kind: type[Loaded]) -> Loaded:
    """``config`` as the backend's config the measurement needs.

    :raises ValueError: for a config of another backend.
    """
    if not isinstance(config, kind):
        raise ValueError(f"a config of backend {config.backend} where one of backend {kind.backend} is needed")
    return config


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_train sb3", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16384, help="timed steps per measurement")
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "selfplay.yaml")
    parser.add_argument("--kernel-config", type=Path, default=ROOT / "configs" / "kernel.yaml")
    parser.add_argument("--kernel-updates", type=int, default=4, help="timed updates of the batched learner")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    args = parser.parse_args(argv)
    config = backend_config(load_config(args.config, args.overrides), SB3Config)
    torch.set_num_threads(config.torch_threads)
    load_before = os.getloadavg()
    trainer, shares = bench_trainer(config, args.steps)
    ceiling = bench_ceiling(config, args.steps)
    kernel_config = backend_config(load_config(args.kernel_config), KernelConfig)
    torch.set_num_threads(kernel_config.torch_threads)
    kernel = bench_kernel(kernel_config, args.kernel_updates)
    ratio = trainer / ceiling
    result = {
        "benchmark": "bench_train",
        "config": str(args.config.relative_to(ROOT) if args.config.is_relative_to(ROOT) else args.config),
        "overrides": args.overrides,
        "n_envs": config.n_envs,
        "vec_env": config.vec_env,
        "net_arch": config.net_arch,
        "timed_steps": args.steps,
        "trainer_steps_per_s": round(trainer, 1),
        "ceiling_steps_per_s": round(ceiling, 1),
        "ratio": round(ratio, 3),
        "step_time_shares": shares,
        "kernel_config": str(
            args.kernel_config.relative_to(ROOT) if args.kernel_config.is_relative_to(ROOT) else args.kernel_config
        ),
        "kernel_steps_per_s": round(kernel["steps_per_s"], 1),
        "kernel_steps_per_cpu_s": round(kernel["steps_per_cpu_s"], 1),
        "kernel_rollout_workers": kernel_config.rollout_workers,
        "kernel_update_share": round(kernel["update_share"], 3),
        "kernel_wait_share": round(kernel["wait_share"], 3),
        "kernel_load_average": [kernel["load_before"], kernel["load_after"]],
        "kernel_over_maskable": round(kernel["steps_per_s"] / trainer, 2),
        "target_ratio": TARGET_RATIO,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(RESULTS, json.dumps(result, indent=2) + "\n")
    print(
        f"trainer: {trainer:.0f} steps/s   SB3 ceiling (trivial env): {ceiling:.0f} steps/s   "
        f"ratio {ratio:.2f} (target >= {TARGET_RATIO})"
    )
    print("one PPO step's wall time: " + ", ".join(f"{k} {v:.0%}" for k, v in shares.items()))
    print(
        f"batched learner (backend kernel, {args.kernel_config.name}, rollout_workers="
        f"{kernel_config.rollout_workers}): {kernel['steps_per_s']:.0f} steps/s, {kernel['steps_per_cpu_s']:.0f} per "
        f"CPU s; the learner updates {kernel['update_share']:.0%} of the time and waits for rollouts "
        f"{kernel['wait_share']:.0%}; {kernel['steps_per_s'] / trainer:.1f}x MaskablePPO "
        f"(load average {kernel['load_before']:.1f} before, {kernel['load_after']:.1f} after)"
    )
    print(f"written to {RESULTS}")
    print(f"{kernel['steps_per_s']:.0f} {trainer:.0f}")
    return 0


# --- kernel: the batched learner against its rollout workers


def kernel(argv: Sequence[str] | None = None) -> int:
    """The batched learner's env steps per wall second against ``rollout_workers``: each setting of
    ``--workers`` measured over ``--updates`` updates (:func:`bench_kernel`), the settings taking
    turns for ``--rounds`` rounds in one run, each figure with its load average. With
    ``--ray-address`` the workers are Ray actors on that cluster (in the Ray venv, e.g. a local
    2-node cluster: ``ray start --head --port 6390 --node-ip-address 127.0.0.1 --num-cpus 1`` and
    ``ray start --address 127.0.0.1:6390 --node-ip-address 127.0.0.1 --num-cpus 1``).
    ``bench_train.py kernel [--workers 0 1 2 4] [--rounds 2] [--updates 4] [--ray-address ADDR]``.
    """
    parser = argparse.ArgumentParser(prog="bench_train kernel", description="the batched learner against its workers")
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "kernel.yaml")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2, 4], help="rollout_workers settings")
    parser.add_argument("--rounds", type=int, default=2, help="turns of every setting")
    parser.add_argument("--updates", type=int, default=4, help="timed updates per measurement")
    parser.add_argument("--ray-address", default=None, help="the workers as Ray actors on this cluster")
    parser.add_argument("--out", type=Path, default=RESULTS.with_name("bench_train_kernel.json"))
    args = parser.parse_args(argv)
    before = conditions()
    ray = [f"ray_address={args.ray_address}"] if args.ray_address else []
    rows: dict[int, list[dict[str, Any]]] = {n: [] for n in args.workers}
    for _ in range(args.rounds):
        for n in args.workers:
            if ray and n == 0:
                continue  # no actors: the serial learner
            config = backend_config(load_config(args.config, [f"rollout_workers={n}", *ray]), KernelConfig)
            torch.set_num_threads(config.torch_threads)
            row = bench_kernel(config, args.updates)
            rows[n].append({key: round(value, 3) for key, value in row.items()})
            print(
                f"rollout_workers={n}{' (Ray actors)' if ray and n else ''}: {row['steps_per_s']:,.0f} env steps/s, "
                f"{row['steps_per_cpu_s']:,.0f} per CPU s of the learner's process; "
                f"updating {row['update_share']:.0%}, "
                f"waiting for rollouts {row['wait_share']:.0%}; load average {row['load_before']:.1f}, "
                f"{row['load_after']:.1f} after",
                flush=True,
            )
    write(args.out, {"config": str(args.config), "ray_address": args.ray_address, "measured": rows}, before)
    return 0


# --- imitation: the warm start's collection speed


def imitation(argv: Sequence[str] | None = None) -> int:
    """Imitation collection speed: decisions per CPU second that :func:`treppen.train.common.imitation.collect`
    records with the greedy teacher at every seat, as the default config's warm start does (16
    tables side by side, 2 players, treppenromme). Each round collects ``--decisions`` decisions
    from new seeded deals (CPU seconds of this process); a first, untimed round loads the kernels.
    ``bench_train.py imitation [--decisions 4000] [--rounds 5]``.
    """
    from treppen.train.common.imitation import collect, make_teacher

    parser = argparse.ArgumentParser(prog="bench_train imitation", description="imitation collection speed")
    parser.add_argument("--decisions", type=int, default=4000, help="decisions per round")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds")
    parser.add_argument("--out", type=Path, default=RESULTS.with_name("bench_train_imitation.json"))
    args = parser.parse_args(argv)
    before = conditions()
    collect(lambda: make_teacher("greedy"), 200, seed=10_000)
    seeds = iter(range(args.rounds))
    found = rounds_of(
        lambda: len(collect(lambda: make_teacher("greedy"), args.decisions, seed=next(seeds))), args.rounds
    )
    print(
        f"imitation collection: {found['median']:,.0f} decisions per CPU s [{found['low']:,.0f}, {found['high']:,.0f}]"
    )
    write(args.out, {"decisions_per_cpu_s": found}, before)
    return 0


# --- rllib: the RLlib backend's scaling on paper

#: Env runner counts the RLlib projection is given for.
PROJECTED = (4, 16, 64)


def rllib_measure(config_path: str, runners: int, iterations: int) -> dict[str, float]:
    """Per iteration (means): wall seconds, env and learner steps; and the env steps/s of one
    runner sampling an iteration's worth on its own (all runners at once)."""
    from treppen.train.rllib.backend import build_algorithm, iteration_steps, stop_algorithm

    overrides = [f"num_env_runners={runners}", "imitation_decisions=0", "best_every=0", "opponent_best=0"]
    config = backend_config(load_config(config_path, [*overrides, "opponent_snapshot=0.4"]), RLlibConfig)
    batch = config.n_steps * config.n_envs * config.num_players
    algo = build_algorithm(config, seed=0)
    try:
        algo.train()  # warm-up: the first iteration builds the connectors and the episodes
        rows = []
        for _ in range(iterations):
            start = time.perf_counter()
            result = algo.train()
            rows.append(
                {
                    "wall": time.perf_counter() - start,
                    "env_steps": result["env_runners"]["num_env_steps_sampled"],
                    "learner_steps": iteration_steps(result),
                }
            )

        def sample(runner: Any) -> float:
            start = time.perf_counter()
            runner.sample(num_timesteps=batch // runners)
            return time.perf_counter() - start

        seconds = algo.env_runner_group.foreach_env_runner(sample, local_env_runner=False)
    finally:
        stop_algorithm(algo)
    means = {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}
    rate = (batch // runners) / (sum(seconds) / len(seconds))
    return means | {"runner_env_steps_per_s": rate, "update": means["wall"] - means["env_steps"] / (runners * rate)}


def rllib_projection(one: dict[str, float]) -> dict[int, dict[str, float]]:
    """Projected env and learner steps/s for :data:`PROJECTED` runners from the 1-runner figures."""
    rate = one["runner_env_steps_per_s"]
    out = {}
    for n in PROJECTED:
        seconds = one["env_steps"] / (n * rate) + one["update"]
        out[n] = {"env_steps_per_s": one["env_steps"] / seconds, "learner_steps_per_s": one["learner_steps"] / seconds}
    return out


def rllib(argv: Sequence[str] | None = None) -> int:
    """Scaling of the RLlib backend on paper: one env runner's sample rate and the learner's update
    time. Builds the RLlib PPO of a config (default ``configs/rllib_selfplay.yaml``, without its
    imitation warm start, which does not change the cost of an iteration) on a local Ray instance,
    once with 1 and once with 2 env runners, and times ``--iterations`` training iterations after a
    warm-up one. Each runner then samples an iteration's share on its own (``EnvRunner.sample``),
    which gives one runner's rate ``r``; the rest of an iteration's wall time is the learner's
    update and the weight sync, ``T_update``. PPO is synchronous, so an iteration of ``B`` env steps
    with ``N`` runners takes about ``B / (N r) + T_update``, and::

        projected env steps/s(N) = B / (B / (N r) + T_update)

    which the learner's ``T_update`` caps at ``B / T_update``. In the Ray venv:
    ``RAY_AUTH_MODE=disabled python benchmarks/bench_train.py rllib [--iterations 2]``.
    """
    import ray

    parser = argparse.ArgumentParser(prog="bench_train rllib", description="the RLlib backend's scaling on paper")
    parser.add_argument("--config", default="configs/rllib_selfplay.yaml")
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS.with_name("bench_train_rllib.json"))
    args = parser.parse_args(argv)
    before = conditions()
    ray.init(address="local", num_cpus=3, include_dashboard=False, configure_logging=False, log_to_driver=False)
    try:
        measured = {n: rllib_measure(args.config, n, args.iterations) for n in (1, 2)}
    finally:
        ray.shutdown()
    report = {
        "measured": measured,
        "one_runner_env_steps_per_s": measured[1]["runner_env_steps_per_s"],
        "learner_update_s_per_iteration": measured[1]["update"],
        "learner_cap_env_steps_per_s": measured[1]["env_steps"] / measured[1]["update"],
        "projected": rllib_projection(measured[1]),
    }
    for n, row in measured.items():
        print(
            f"{n} runner(s): {row['env_steps'] / row['wall']:.0f} env steps/s measured "
            f"({row['learner_steps'] / row['wall']:.0f} learner steps/s); a runner samples "
            f"{row['runner_env_steps_per_s']:.0f} env steps/s; update and sync {row['update']:.2f} s per "
            f"iteration of {row['env_steps']:.0f} env steps"
        )
    for n, row in report["projected"].items():
        print(
            f"projected {n} runners: {row['env_steps_per_s']:.0f} env steps/s "
            f"({row['learner_steps_per_s']:.0f} learner steps/s)"
        )
    write(args.out, report, before)
    return 0


if __name__ == "__main__":
    raise SystemExit(
        run_variant({"sb3": main, "kernel": kernel, "imitation": imitation, "rllib": rllib}, default="sb3")
    )
