"""The batched learner's rollout workers (train/kernel/rollouts.py): one worker without lag is the
serial learner bit for bit, rows stepped in threads are each stepped once per rollout step (as a
serial run steps them), and a lagged rollout is played by the weights before the update."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from treppen.train.config_files import config_path, load_config
from treppen.train.kernel.backend import Learner
from treppen.train.kernel.rollouts import (
    Rollout,
    SerialWorkers,
    Shard,
    ThreadWorkers,
    make_workers,
    new_rows,
    updates,
)
from treppen.train.kernel.rows import LearnerRows

SMALL = [
    "n_envs=10",
    "n_steps=6",
    "batch_size=20",
    "n_epochs=2",
    "net_arch=[16]",
    "action_dim=8",
    "pool_size=2",
    "torch_threads=1",
    "device=cpu",
    "progress=false",
    "target_kl=null",
]


def small_config(*extra: str):
    return load_config(config_path("kernel"), [*SMALL, *extra])


def run(learner: Learner, workers, until: int) -> list[dict[str, float]]:
    """The updates' statistics up to ``until`` steps, a snapshot into the pool after the second."""
    stats = []
    for i, (update, _) in enumerate(updates(learner, workers, until)):
        stats.append(update)
        if i == 1:
            learner.pool = [*learner.pool, (learner.steps, learner.net.export())]
    workers.close()
    return stats


def test_one_worker_without_lag_is_the_serial_learner_bit_for_bit() -> None:
    config = small_config("rollout_workers=0")
    serial = Learner(config, config.seed)
    expected = run(serial, make_workers(config, serial), 240)
    assert isinstance(make_workers(config, serial), SerialWorkers)

    threaded = Learner(config, config.seed)
    workers = ThreadWorkers(config, threaded, 1)
    # the serial learner's rows and its one generator (samples, then minibatches), and no lag:
    # the thread, the weights handed over and the rollout's assembly must change nothing
    workers.shards[0] = Shard(config, new_rows(config, 10, config.seed), workers.shards[0].net, threaded.sampler)
    workers.lagged = False  # type: ignore[misc]
    assert run(threaded, workers, 240) == expected and len(expected) == 4
    for a, b in zip(serial.net.state_dict().values(), threaded.net.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_rows_stepped_in_threads_are_each_stepped_once_per_step_as_a_serial_run_steps_them(monkeypatch) -> None:
    config = small_config("rollout_workers=3")
    learner = Learner(config, config.seed)
    stepping: dict[int, int] = {}  # rows object -> the thread stepping it now
    decisions: dict[int, np.ndarray] = {}
    lock = threading.Lock()
    step = LearnerRows.step

    def counted(self, actions):
        with lock:
            assert id(self) not in stepping, "two threads step the same rows"
            stepping[id(self)] = threading.get_ident()
        try:
            return step(self, actions)
        finally:
            with lock:
                del stepping[id(self)]
                decisions.setdefault(id(self), np.zeros(len(actions), dtype=np.int64))[:] += 1

    monkeypatch.setattr(LearnerRows, "step", counted)
    workers = ThreadWorkers(config, learner, 3)
    assert [len(s.rows.all_rows) for s in workers.shards] == [4, 3, 3]
    rollouts = []
    for _ in range(3):
        workers.start(learner.net, learner.pool, learner.steps)
        rollouts.append(workers.wait())
    workers.close()
    assert sorted(d.tolist() for d in decisions.values()) == [[18] * 3, [18] * 3, [18] * 4]

    # the same shards stepped one after another in this thread: every transition equal
    again = ThreadWorkers(config, Learner(config, config.seed), 3)
    again.close()
    for rollout in rollouts:
        serial = Rollout([shard.collect(config.n_steps, 0) for shard in again.shards])
        assert rollout.size == serial.size == 60
        for (got, adv, ret), (want, adv2, ret2) in zip(rollout.pieces([0, 5]), serial.pieces([0, 5]), strict=True):
            np.testing.assert_array_equal(got.feats, want.feats)
            np.testing.assert_array_equal(got.entries.cols, want.entries.cols)
            np.testing.assert_array_equal(got.index, want.index)
            np.testing.assert_array_equal(adv, adv2)
            np.testing.assert_array_equal(ret, ret2)


def test_a_lagged_rollout_is_played_by_the_weights_before_the_update(monkeypatch) -> None:
    config = small_config("rollout_workers=2")
    learner = Learner(config, config.seed)
    played = []
    prepare = Shard.prepare

    def recorded(self, weights, pool):
        if weights is not None and self is workers.shards[0]:
            played.append(weights.copy())
        prepare(self, weights, pool)

    monkeypatch.setattr(Shard, "prepare", recorded)
    workers = ThreadWorkers(config, learner, 2)
    start = learner.net.export()
    after = []
    for _ in updates(learner, workers, 300):
        after.append(learner.net.export())
    workers.close()
    assert len(after) == 5 and len(played) == 5  # the first two rollouts with the initial weights
    for weights, expected in zip(played, [start, start, *after[:3]], strict=True):
        np.testing.assert_array_equal(weights, expected)


@pytest.mark.parametrize(
    ("workers", "cores", "expected"), [("auto", 2, 1), ("auto", 1, 1), ("auto", 4, 3), ("auto", 64, 4), (3, 64, 3), (0, 8, 0)]
)
def test_auto_rollout_workers_are_the_cores_less_one_up_to_four(monkeypatch, workers, cores: int, expected: int) -> None:
    from treppen.train.kernel import rollouts

    monkeypatch.setattr(rollouts.os, "cpu_count", lambda: cores)
    assert rollouts.worker_count(small_config(f"rollout_workers={workers}")) == expected
