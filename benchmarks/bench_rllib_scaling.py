"""Scaling of the RLlib backend on paper: one env runner's sample rate and the learner's update time.

Builds the RLlib PPO of a config (default ``configs/rllib_selfplay.yaml``, without its imitation
warm start, which does not change the cost of an iteration) on a local Ray instance, once with 1
and once with 2 env runners, and times ``--iterations`` training iterations after a warm-up one.
Each runner then samples an iteration's share on its own (``EnvRunner.sample``), which gives one
runner's rate ``r``; the rest of an iteration's wall time is the learner's update and the weight
sync, ``T_update``. PPO is synchronous, so an iteration of ``B`` env steps with ``N`` runners
takes about ``B / (N r) + T_update``, and::

    projected env steps/s(N) = B / (B / (N r) + T_update)

which the learner's ``T_update`` caps at ``B / T_update``. It prints the measured figures and the
projection for 4, 16 and 64 runners, and writes ``benchmarks/results/bench_rllib_scaling.json``.
Usage (Ray venv)::

    RAY_AUTH_MODE=disabled python benchmarks/bench_rllib_scaling.py [--iterations 2]

Other processes on the machine skew the numbers; the load average is recorded alongside.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "bench_rllib_scaling.json"
PROJECTED = (4, 16, 64)


def measure(config_path: str, runners: int, iterations: int) -> dict[str, float]:
    """Per iteration (means): wall seconds, env and learner steps; and the env steps/s of one
    runner sampling an iteration's worth on its own (all runners at once)."""
    from treppen.train.config import load_config
    from treppen.train.rllib.backend import build_algorithm, iteration_steps, stop_algorithm

    overrides = [f"num_env_runners={runners}", "imitation_decisions=0", "best_every=0", "opponent_best=0"]
    config = load_config(config_path, [*overrides, "opponent_snapshot=0.4"])
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


def project(one: dict[str, float]) -> dict[int, dict[str, float]]:
    """Projected env and learner steps/s for :data:`PROJECTED` runners from the 1-runner figures."""
    rate = one["runner_env_steps_per_s"]
    out = {}
    for n in PROJECTED:
        seconds = one["env_steps"] / (n * rate) + one["update"]
        out[n] = {"env_steps_per_s": one["env_steps"] / seconds, "learner_steps_per_s": one["learner_steps"] / seconds}
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import ray

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/rllib_selfplay.yaml")
    parser.add_argument("--iterations", type=int, default=2)
    args = parser.parse_args(argv)
    ray.init(address="local", num_cpus=3, include_dashboard=False, configure_logging=False, log_to_driver=False)
    try:
        measured = {n: measure(args.config, n, args.iterations) for n in (1, 2)}
    finally:
        ray.shutdown()
    report = {
        "measured": measured,
        "one_runner_env_steps_per_s": measured[1]["runner_env_steps_per_s"],
        "learner_update_s_per_iteration": measured[1]["update"],
        "learner_cap_env_steps_per_s": measured[1]["env_steps"] / measured[1]["update"],
        "projected": project(measured[1]),
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
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
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
