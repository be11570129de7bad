"""Training throughput of the self-play trainer against the SB3 ceiling.

Runs, in one process and one after the other:

1. the real trainer setup: the default config (``configs/selfplay.yaml``), its vector env of
   :class:`treppen.train.pool.SelfPlayEnv` with the opponent pool (a snapshot in the pool, as after the
   first ``snapshot_every`` steps) and its MaskablePPO learner, for a fixed budget of steps;
2. the same MaskablePPO hyperparameters, vector env kind and ``n_envs`` on a trivial env with the
   same observation size and ``Discrete(898)`` masked actions, whose step costs next to nothing:
   the most this machine's SB3 could reach.

It prints both rates and their ratio (target >= 0.7) and writes
``benchmarks/results/bench_train.json`` atomically. Usage::

    .venv/bin/python benchmarks/bench_train.py [--steps 16384] [--config configs/selfplay.yaml]

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
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from treppen.train.callbacks import StatsCallback
from treppen.train.config import TrainConfig, load_config
from treppen.train.pool import save_snapshot
from treppen.train.selfplay import make_model, make_vec_env
from treppen_env.actions import NUM_ACTIONS
from treppen_env.files import atomic_write_text
from treppen_env.observation import OBS_SIZE

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "bench_train.json"
TARGET_RATIO = 0.7


class TrivialMaskedEnv(gym.Env):
    """Same spaces as SingleAgentEnv, no game: fixed observations, a fixed mask of ~30 legal
    actions, episodes of ``length`` steps with a random final reward."""

    def __init__(self, length: int = 60, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (OBS_SIZE,), np.float32)
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.obs = (rng.random(OBS_SIZE) < 0.1).astype(np.float32)
        self.mask = rng.random(NUM_ACTIONS) < 30 / NUM_ACTIONS
        self.mask[0] = True
        self.length = length
        self.t = 0
        self.rng = rng

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self.obs, {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        done = self.t >= self.length
        return self.obs, float(self.rng.normal()) if done else 0.0, done, False, {}

    def action_masks(self) -> np.ndarray:
        return self.mask


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


def bench_trainer(config: TrainConfig, steps: int) -> float:
    """Steps/s of the trainer's env + learner, with one snapshot in the opponent pool."""
    vec_env = make_vec_env(config, config.make_rules(), config.seed)
    model = make_model(config, vec_env, None, config.seed)
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = save_snapshot(model.policy, Path(tmp) / "snapshot.npz")
        vec_env.env_method("set_pool", [str(snapshot)])
        try:
            return steps_per_second(model, steps, StatsCallback())
        finally:
            vec_env.close()


def bench_ceiling(config: TrainConfig, steps: int) -> float:
    """Steps/s of the same learner and vector env kind on :class:`TrivialMaskedEnv`."""
    fns = [functools.partial(_trivial_env, rank) for rank in range(config.n_envs)]
    vec_env = SubprocVecEnv(fns) if config.n_envs > 1 and config.vec_env == "subproc" else DummyVecEnv(fns)
    model = make_model(config, vec_env, None, config.seed)
    try:
        return steps_per_second(model, steps)
    finally:
        vec_env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16384, help="timed steps per measurement")
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "selfplay.yaml")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    args = parser.parse_args()
    config = load_config(args.config, args.overrides)
    torch.set_num_threads(config.torch_threads)
    load_before = os.getloadavg()
    trainer = bench_trainer(config, args.steps)
    ceiling = bench_ceiling(config, args.steps)
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
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
