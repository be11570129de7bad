"""The batched learner's rollout actors on a two-node Ray cluster on 127.0.0.1, for
tests/train/test_kernel_ray.py, in a process of its own: ``python -m tests.train.kernel_ray OUT``.

One ``ray.cluster_utils.Cluster`` (a head and a worker node of one CPU each, every Ray file in a new
folder under ``/tmp`` through ``RAY_TMPDIR``) serves two scenarios:

- ``actor_lost``: this process drives :class:`treppen.train.kernel.ray_workers.RayWorkers` of two
  actors for three rollouts; the process of one actor is killed (SIGKILL) in the middle of the
  second. Reported: a hash of every position the learner was handed (its observation's entries and
  its legal rows), the rollouts' sizes, the actors' nodes and pids before and after, whether the
  killed actor's rollout was still running when it was killed.
- ``train``: ``treppen train backend=kernel ... ray_address=<cluster>`` as a driver of its own; a
  rollout actor's process killed after the first checkpoint, the learner (SIGKILL) after the
  second; then ``--resume`` finishes the run, and its final model is played in a process that
  cannot import Ray.

``OUT/kernel_ray.json`` reports what the tests check.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.train.node_loss import wait_until

NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False}
#: A small kernel run: 16 rows of 2 players, 256 decisions a rollout.
SMALL = [
    "n_envs=16", "n_steps=16", "batch_size=64", "n_epochs=1", "net_arch=[16]", "action_dim=8", "pool_size=2",
    "snapshot_every=512", "eval_deals=2", "elo_every=0", "device=cpu", "progress=false", "rollout_workers=2",
]  # fmt: skip
#: ``treppen train``'s run: checkpoints every 512 steps (the actor is killed after the first, the
#: learner after the second) up to 3072.
TRAIN = ["backend=kernel", *SMALL, "checkpoint_every=512", "total_timesteps=3072"]
#: Plays the final model where ``import ray`` fails.
WITHOUT_RAY = """
import sys
sys.modules["ray"] = None
import treppen_env
from treppen import agents
agent = agents.load(sys.argv[1])
env = treppen_env.env()
env.reset(seed=0)
print(type(agent).__name__, agent.act(env.observe(env.agent_selection)))
"""


def main(out: Path) -> None:
    temp = Path(tempfile.mkdtemp(prefix="treppen-ray-"))
    os.environ["RAY_TMPDIR"] = str(temp)
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # every node on 127.0.0.1 (see two_nodes.py)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args=NODE)
    report: dict[str, Any] = {}
    try:
        cluster.add_node(**NODE)
        cluster.wait_for_nodes()
        report["nodes"] = sorted(node.node_id for node in [cluster.head_node, *cluster.worker_nodes])
        report["actor_lost"] = actor_lost(cluster.address)
        report["train"] = train(cluster, out / "runs")
    finally:
        cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
    (out / "kernel_ray.json").write_text(json.dumps(report))


def positions(rollout: Any) -> list[str]:
    """A hash of each position of a rollout: its observation's nonzero entries and its legal rows."""
    found = []
    for shard in rollout.shards:
        for step in shard.steps:
            cols, values, nonzeros = step.entries.cols, step.entries.values, step.entries.counts
            entry_ends, row_ends = nonzeros.cumsum(), step.counts.cumsum()
            for b in range(len(step.counts)):
                entries = slice(entry_ends[b] - nonzeros[b], entry_ends[b])
                rows = slice(row_ends[b] - step.counts[b], row_ends[b])
                digest = hashlib.sha256(cols[entries].tobytes() + values[entries].tobytes())
                digest.update(step.feats[rows].tobytes())
                found.append(digest.hexdigest())
    return found


def actor_lost(address: str) -> dict[str, Any]:
    """Three rollouts of two actors; one actor's process killed while the second runs."""
    import ray

    from treppen.train.common.config_files import config_path, load_config
    from treppen.train.kernel.learner import Learner
    from treppen.train.kernel.ray_workers import RayWorkers

    config = load_config(config_path("kernel"), [*SMALL, "n_steps=960", f"ray_address={address}"])
    learner = Learner(config, config.seed)
    workers = RayWorkers(config, 0)
    report: dict[str, Any] = {"sizes": [], "positions": []}
    try:
        report["before"] = ray.get([actor.where.remote() for actor in workers.actors])
        for rollout in range(3):
            workers.start(learner.net, learner.pool, learner.steps)
            if rollout == 1:  # 7,680 steps an actor: over a second, at any speed this machine has
                time.sleep(0.3)
                ready, _ = ray.wait(workers.running[:1], timeout=0)
                report["killed_while_running"] = not ready
                os.kill(report["before"][0][1], signal.SIGKILL)
            done = workers.wait()
            report["sizes"].append(done.size)
            report["positions"].extend(positions(done))
        report["after"] = ray.get([actor.where.remote() for actor in workers.actors])
        report["incarnations"] = workers.incarnations
    finally:
        workers.close()
        ray.shutdown()
    return report


def actor_pids(cluster: Any) -> list[int]:
    """The pids of the cluster's rollout actors: ``ray::RolloutActor`` processes below its raylets."""
    nodes = [cluster.head_node, *cluster.worker_nodes]
    raylets = {info.process.pid for node in nodes for info in node.all_processes["raylet"]}
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if not cmdline.read_bytes().startswith(b"ray::RolloutActor"):
                continue
            pid = parent = int(cmdline.parent.name)
            while parent > 1 and parent not in raylets:
                status = (cmdline.parent.parent / str(parent) / "status").read_text()
                parent = int(status.split("PPid:")[1].split()[0])
        except (OSError, IndexError, ValueError):  # a process that ended meanwhile
            continue
        if parent in raylets:
            found.append(pid)
    return sorted(found)


def run(command: list[str]) -> subprocess.Popen[str]:
    """A ``treppen`` command as a driver of its own."""
    full = [sys.executable, "-m", "treppen.apps.cli", *command]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # its lines reach the pipe before it is killed
    return subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def train(cluster: Any, runs: Path) -> dict[str, Any]:
    """``treppen train`` on the cluster: an actor killed after the first checkpoint, the learner
    after the second, ``--resume`` to the end, the final model played without Ray."""
    run_dir = runs / "on_ray"
    checkpoints = run_dir / "checkpoints"
    proc = run(["train", *TRAIN, f"ray_address={cluster.address}", f"runs_dir={runs}", "name=on_ray"])
    wait_until(lambda: (checkpoints / "model_512_steps.pt").is_file() and len(actor_pids(cluster)) == 2, proc, 300)
    report: dict[str, Any] = {"actors": actor_pids(cluster)}
    os.kill(report["actors"][0], signal.SIGKILL)
    wait_until(lambda: (checkpoints / "model_1024_steps.pt").is_file(), proc, 300)
    proc.kill()
    first, _ = proc.communicate(timeout=60)
    report |= {"first": first[-4000:], "first_returncode": proc.returncode}
    report["checkpoints_at_kill"] = sorted(p.name for p in checkpoints.glob("*.pt"))
    resumed = run(["train", "--resume", str(run_dir), f"ray_address={cluster.address}"])
    output, _ = resumed.communicate(timeout=600)
    report |= {"resumed": output[-4000:], "resumed_returncode": resumed.returncode}
    report["checkpoints"] = sorted(p.name for p in checkpoints.glob("*.pt"))
    played = subprocess.run(
        [sys.executable, "-c", WITHOUT_RAY, str(run_dir)], capture_output=True, text=True, timeout=300, check=False
    )
    report["without_ray"] = played.stdout.strip() or played.stderr[-2000:]
    return report


if __name__ == "__main__":
    main(Path(sys.argv[1]))
