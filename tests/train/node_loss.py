"""Losing a node of a Ray cluster on 127.0.0.1, for tests/train/test_rllib.py, in a process of its
own: ``python -m tests.train.node_loss OUT``.

Three scenarios, each on its own ``ray.cluster_utils.Cluster`` (every Ray file in a new folder under
``/tmp`` through ``RAY_TMPDIR``), with ``treppen tournament`` and ``treppen train`` run as drivers
of their own against it:

- ``tournament``: a head without CPUs (the driver's node, whose worker processes start first) and
  two worker nodes of one CPU each, which start theirs alike; one worker node is removed
  after :data:`LOSE_AFTER` of the deals, by then it has played some; the tournament runs to its end.
- ``train_on``: a head and a worker node of one CPU each, an env runner on each; the worker node is
  removed after the first checkpoint; training goes on with the runner left and finishes.
- ``train_stopped``: a head without CPUs and a worker node of one CPU holding the only env runner;
  the worker node is removed after the first checkpoint, so no runner can be restarted anywhere:
  the run stops with its checkpoint and names the resume command; a new worker node joins and
  ``--resume`` finishes the run.

``OUT/node_loss.json`` reports what the tests check: return codes, outputs, the results' lines and
the run folders.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The tournament's agents: a small seeded search (about 0.1 s a deal, so that the deals do not all
#: end before the node is lost) against greedy.
AGENTS = ("rollout,playouts=40", "greedy")
#: Deals of the tournament (24 decks, 2 seatings each) and the number played before the worker node
#: is removed.
TOURNAMENT = ["--agents", *AGENTS, "--decks", "24", "--seed", "5", "--boot", "0"]
DEALS, LOSE_AFTER = 48, 24
#: ``treppen train`` overrides of a tiny RLlib run that checkpoints every iteration.
TRAIN = [
    "backend=rllib", "n_envs=1", "n_steps=300", "batch_size=100", "n_epochs=1", "net_arch=[32]", "pool_size=2",
    "snapshot_every=1000000", "eval_every=1000000", "eval_deals=2", "elo_every=0", "best_every=0",
    "imitation_decisions=0", "checkpoint_every=300", "progress=false", "opponent_random=0.5", "opponent_greedy=0.5",
    "opponent_snapshot=0", "opponent_best=0",
]  # fmt: skip
TOTAL = 1500
NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False}


def main(out: Path) -> None:
    temp = Path(tempfile.mkdtemp(prefix="treppen-ray-"))
    os.environ["RAY_TMPDIR"] = str(temp)
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # every node on 127.0.0.1 (see two_nodes.py)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    report: dict[str, Any] = {}
    try:
        report["tournament"] = on_cluster(0, lambda c: tournament(c, out / "tournament"), workers=2)
        report["train_on"] = on_cluster(1, lambda c: train_losing_a_node(c, out, "train_on", runners=2))
        report["train_stopped"] = on_cluster(0, lambda c: train_losing_a_node(c, out, "train_stopped", runners=1))
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    (out / "node_loss.json").write_text(json.dumps(report))


def on_cluster(head_cpus: int, scenario: Callable[[Any], dict[str, Any]], workers: int = 1) -> dict[str, Any]:
    """Run ``scenario(cluster)`` on a new cluster of a head node (``head_cpus``) and ``workers``
    worker nodes."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={**NODE, "num_cpus": head_cpus})
    try:
        for _ in range(workers):
            cluster.add_node(**NODE)
        cluster.wait_for_nodes()
        return scenario(cluster)
    finally:
        cluster.shutdown()


def run(command: list[str], **kwargs: Any) -> subprocess.Popen[str]:
    """A ``treppen`` command as a driver of its own."""
    full = [sys.executable, "-m", "treppen.apps.cli", *command]
    return subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def wait_until(found: Callable[[], bool], proc: subprocess.Popen[str], timeout: float = 240) -> None:
    """Wait for ``found()``; fail with the end of ``proc``'s stderr (or its stdout, where stderr goes
    there) when it ends first or after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not found():
        if proc.poll() is not None or time.monotonic() > deadline:
            stream = proc.stderr or proc.stdout
            error = stream.read()[-3000:] if stream else ""
            raise RuntimeError(f"gave up waiting (exit {proc.poll()}): {error}")
        time.sleep(0.2)


def finish(proc: subprocess.Popen[str], timeout: float = 300) -> dict[str, Any]:
    out, err = proc.communicate(timeout=timeout)
    return {"returncode": proc.returncode, "stdout": out[-4000:], "stderr": err[-4000:]}


def lose_worker(cluster: Any) -> None:
    """Remove one of the cluster's worker nodes (its processes are killed, as when a machine is lost)."""
    cluster.remove_node(next(iter(cluster.worker_nodes)))


def tournament(cluster: Any, folder: Path) -> dict[str, Any]:
    """The tournament of :data:`TOURNAMENT`, a worker node removed after :data:`LOSE_AFTER` deals."""
    results = folder / "results.jsonl"
    proc = run(["tournament", *TOURNAMENT, "--out", str(folder), "--ray-address", cluster.address])

    def played() -> bool:
        return results.is_file() and len(results.read_text().splitlines()) >= LOSE_AFTER

    wait_until(played, proc)
    lost_at = len(results.read_text().splitlines())
    lose_worker(cluster)
    return {**finish(proc), "lost_at": lost_at, "lines": results.read_text().splitlines()}


def train_losing_a_node(cluster: Any, out: Path, name: str, runners: int) -> dict[str, Any]:
    """A tiny RLlib run on the cluster, its worker node removed after the first checkpoint; when it
    stopped, ``--resume`` once a new worker node joined."""
    run_dir = out / "runs" / name
    common = [f"ray_address={cluster.address}", f"num_env_runners={runners}"]
    proc = run(["train", *TRAIN, *common, f"total_timesteps={TOTAL}", f"runs_dir={out / 'runs'}", f"name={name}"])
    wait_until(lambda: any((run_dir / "checkpoints").glob("rllib_*_steps")), proc)
    lose_worker(cluster)
    first = finish(proc)
    report: dict[str, Any] = {"first": first, "checkpoints_after_loss": _checkpoints(run_dir)}
    if first["returncode"] != 0:
        cluster.add_node(**NODE)
        cluster.wait_for_nodes()
        report["resumed"] = finish(run(["train", "--resume", str(run_dir), *common]))
    report["checkpoints"] = _checkpoints(run_dir)
    report["final_policy"] = (run_dir / "final_policy.npz").is_file()
    return report


def _checkpoints(run_dir: Path) -> list[str]:
    return sorted(p.name for p in (run_dir / "checkpoints").glob("rllib_*_steps"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
