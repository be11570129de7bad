"""Label shards as Ray tasks (train/expert/ray_labels.py) give the shards of the local job with the
same seed. Skipped without the ``ray`` extra (``pip install -e '.[train,test,ray]'``); CI runs it in
its Ray step (``.ci/run``)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.train.test_labels import assert_same_shards
from treppen.train.expert.labels import LabelJob, read_labels, run_job

# Ray stays on 127.0.0.1 with its cluster mode off (read when ray is imported), as in test_rllib.py
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs the ray extra: pip install '.[ray]'"),
    pytest.mark.xdist_group("ray"),  # one Ray instance per process: beside the other Ray tests
]


def test_ray_tasks_label_the_shards_of_the_local_job(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    import ray

    from treppen.arena.ray_cluster import init_ray

    job = LabelJob(deals=3, search="rollout,playouts=8", shard_deals=1, seed=5)
    started = init_ray("local", num_cpus=2)
    try:
        report = run_job(job, tmp_path / "ray", ray_address="local")
    finally:
        if started:
            ray.shutdown()
    assert report.shards == 3 and report.labels == len(read_labels(tmp_path / "ray")["action"])
    assert "ray: 3 shards on 1 nodes" in capfd.readouterr().err
    run_job(job, tmp_path / "local")
    assert_same_shards(tmp_path / "ray", tmp_path / "local")
