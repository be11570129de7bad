"""A two-node Ray cluster on 127.0.0.1 for tests/train/test_rllib.py, in a process of its own
(the tests' process is already connected to their one-node instance): ``python -m
tests.train.two_nodes OUT``.

It starts a head and a worker node (``ray.cluster_utils.Cluster``, one CPU each, every Ray file
in a new folder under ``/tmp`` through ``RAY_TMPDIR``: Unix socket paths must stay short), trains
the tiny PPO of the tests for one iteration with one env runner on each node, saves a checkpoint,
runs ``treppen tournament --ray-address`` against the cluster and shuts it down; then it restores
the checkpoint on a one-node instance, shuts that down and removes its Ray folder.
``OUT/two_nodes.json`` reports what the tests check: the node ids and addresses, the env runners'
nodes, the steps, the learner's action on a fixed observation before and after the restore, the
tournament's stderr, the Ray folder and the pids of every Ray process that ran.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TOURNAMENT = ["--agents", "random", "greedy", "--decks", "16", "--seed", "5", "--boot", "0"]


def main(out: Path) -> None:
    temp = Path(tempfile.mkdtemp(prefix="treppen-ray-"))
    os.environ["RAY_TMPDIR"] = str(temp)  # every Ray file of this cluster, ray_current_cluster included
    # Ray resolves 127.0.0.1 to the machine's outward address unless cluster mode is off (read when
    # ray is imported); off, every node, the driver and the tournament's driver use 127.0.0.1 (the
    # nodes still form a cluster)
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray
    from ray.cluster_utils import Cluster

    node_args = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args=node_args)
    report: dict[str, Any] = {"temp": str(temp)}
    try:
        cluster.add_node(**node_args)
        nodes = [cluster.head_node, *cluster.worker_nodes]
        ray.init(address=cluster.address, configure_logging=False, log_to_driver=False)
        report["nodes"] = sorted(node.node_id for node in nodes)
        report["addresses"] = sorted({node.node_ip_address for node in nodes} | {cluster.address.split(":")[0]})
        report |= train_on(out)
        report["tournament_stderr"] = tournament(cluster.address, out / "on_ray")
        report["pids"] = ray_pids(nodes)
    finally:
        ray.shutdown()
        cluster.shutdown()
    try:
        report |= resume_on_one_node(Path(report["checkpoint"]))
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
    (out / "two_nodes.json").write_text(json.dumps(report))


def train_on(out: Path) -> dict[str, Any]:
    """One training iteration with an env runner on each node, then a checkpoint."""
    import ray

    from tests.train.test_rllib import TINY, ModuleAgent, fixed_observation
    from treppen.train.common.config_files import config_from_dict
    from treppen.train.rllib.backend import build_algorithm, iteration_steps, save_checkpoint, stop_algorithm

    config = config_from_dict(dict(TINY))
    algo = build_algorithm(config, seed=0)
    try:

        def where(runner: Any) -> tuple[str, int]:
            return ray.get_runtime_context().get_node_id(), os.getpid()

        runners = algo.env_runner_group.foreach_env_runner(where, local_env_runner=False)
        steps = iteration_steps(algo.train())
        checkpoint = save_checkpoint(algo, config, out / "checkpoints", steps)
        action = ModuleAgent(algo.get_module("learner")).act(fixed_observation())
    finally:
        stop_algorithm(algo)
    return {
        "runner_nodes": sorted(node for node, _ in runners),
        "runner_pids": [pid for _, pid in runners],
        "steps": steps,
        "checkpoint": str(checkpoint),
        "action": action,
    }


def resume_on_one_node(checkpoint: Path) -> dict[str, Any]:
    """Restore the checkpoint, as ``--resume`` does, on a local one-node instance."""
    import ray

    from tests.train.test_rllib import TINY, ModuleAgent, fixed_observation
    from treppen.train.common.config_files import config_from_dict
    from treppen.train.rllib.backend import build_algorithm, newest_checkpoint, restore, stop_algorithm

    ray.init(address="local", num_cpus=1, include_dashboard=False, configure_logging=False, log_to_driver=False)
    pids = ray_pids([ray._private.worker._global_node])
    algo = build_algorithm(config_from_dict({**TINY, "num_env_runners": 0}), seed=1)
    try:
        restore(algo, newest_checkpoint(checkpoint.parent))
        action = ModuleAgent(algo.get_module("learner")).act(fixed_observation())
    finally:
        stop_algorithm(algo)
    return {"resumed_nodes": len(ray.nodes()), "resumed_action": action, "resumed_pids": pids}


def tournament(address: str, folder: Path) -> str:
    """``treppen tournament --ray-address`` against the cluster (a driver of its own); its stderr."""
    command = [sys.executable, "-m", "treppen.apps.cli", "tournament", *TOURNAMENT, "--out", str(folder)]
    done = subprocess.run(
        [*command, "--ray-address", address], capture_output=True, text=True, timeout=300, check=False
    )
    if done.returncode:
        raise RuntimeError(f"treppen tournament failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stderr


def ray_pids(nodes: list[Any]) -> list[int]:
    """The pids of the nodes' Ray processes (GCS, raylets, ...) and of the workers they started."""
    pids = {info.process.pid for node in nodes for infos in node.all_processes.values() for info in infos}
    for pid in list(pids):
        children = Path(f"/proc/{pid}/task/{pid}/children")
        if children.is_file():
            pids |= {int(p) for p in children.read_text().split()}
    return sorted(pids)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
