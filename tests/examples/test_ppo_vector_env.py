"""The CleanRL-style trainer example (examples/ppo_vector_env.py) runs with tiny flags."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ppo_vector_env.py"


def test_the_example_trains_and_reports_its_throughput() -> None:
    spec = importlib.util.spec_from_file_location("ppo_vector_env", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    result = module.main(["--num-envs", "8", "--num-steps", "32", "--updates", "3", "--hidden", "16"])
    assert result["env_steps"] == 8 * 32 * 3
    assert result["env_steps_per_cpu_s_env_only"] > result["env_steps_per_cpu_s_learner"] > 0
    assert math.isfinite(result["mean_reward_of_finished_deals"])  # deals against greedy finished
