"""The batched learner's rollout actors on a two-node Ray cluster on 127.0.0.1 (train/kernel/ray_workers.py),
run in a process of its own (tests/train/kernel_ray.py): a lost actor is replaced and no position
reaches the learner twice; a run survives the loss of an actor, resumes after the learner is killed
and its model plays without Ray. Skipped without the ``ray`` extra (``pip install -e '.[train,test,ray]'``);
CI runs it in its Ray step (``.ci/run``)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="needs the ray extra: pip install '.[ray]'"
)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("kernel_ray")
    done = subprocess.run(
        [sys.executable, "-m", "tests.train.kernel_ray", str(out)], capture_output=True, text=True, timeout=1500
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((out / "kernel_ray.json").read_text())


def test_an_actor_killed_mid_rollout_is_replaced_and_no_position_reaches_the_learner_twice(report) -> None:
    lost = report["actor_lost"]
    assert lost["killed_while_running"]
    assert sorted(node for node, _ in lost["before"]) == report["nodes"]  # one actor on each node
    assert lost["incarnations"] == [2, 1]
    assert lost["after"][0][1] != lost["before"][0][1] and lost["after"][1] == lost["before"][1]
    assert lost["sizes"] == [15360, 15360, 15360]  # the lost actor's rows played again by the new one, in full
    assert len(lost["positions"]) == 46080 == len(set(lost["positions"]))


def test_a_run_on_the_cluster_survives_a_lost_actor_resumes_after_the_learner_is_killed_and_plays_without_ray(
    report,
) -> None:
    run = report["train"]
    assert len(run["actors"]) == 2
    assert "rollout actors: 2 on 2 node(s) of the Ray cluster" in run["first"]
    assert re.search(r"rollout actor [01] lost \(.*\); a new one deals its rows afresh", run["first"])
    assert run["first_returncode"] == -9
    assert {"model_512_steps.pt", "model_1024_steps.pt"} <= set(run["checkpoints_at_kill"])
    assert "model_3072_steps.pt" not in run["checkpoints_at_kill"]
    assert run["resumed_returncode"] == 0, run["resumed"]
    assert re.search(r"resuming from \S+model_(\d+)_steps\.pt", run["resumed"])
    assert "model_3072_steps.pt" in run["checkpoints"] and "final model:" in run["resumed"]
    assert run["without_ray"].startswith("ActionNetAgent ")
