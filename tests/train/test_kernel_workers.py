"""The batched learner's rollout workers (train/kernel/rollouts.py): a seeded run without workers is
the learner's of before them bit for bit, a rollout in a worker process is the serial learner's bit
for bit, every row of every shard is stepped once per rollout step (as
a serial run steps it), and a lagged rollout is played by the weights before the update, its
ratio clipped against the learner's weights at the update's start (decoupled PPO)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from tests.fixtures import make_kernel_run_fixture as fixture
from treppen.train.common.config_files import config_path, load_config
from treppen.train.kernel.action_net_torch import ActionNet, legal_mask, masked_log_probs
from treppen.train.kernel.backend import make_workers
from treppen.train.kernel.learner import Learner, updates
from treppen.train.kernel.rollouts import (
    ProcessWorkers,
    Rollout,
    SerialWorkers,
    Step,
    build_shard,
    shard_starts,
)

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


def assert_equal(got: Rollout, want: Rollout) -> None:
    """Every array of two rollouts equal, bit for bit (their steps', then each shard's values,
    rewards and dones, so their advantages too)."""
    assert got.size == want.size and got.length == want.length
    for mine, theirs in zip(got.shards, want.shards, strict=True):
        pairs = [(getattr(mine, name), getattr(theirs, name)) for name in ("values", "rewards", "dones", "last")]
        for a, b in zip(mine.steps, theirs.steps, strict=True):
            pairs += [(getattr(a.entries, name), getattr(b.entries, name)) for name in ("cols", "values", "counts")]
            pairs += [(a.feats, b.feats), (a.counts, b.counts), (a.index, b.index), (a.logp, b.logp)]
        for x, y in pairs:
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
    assert got.results() == want.results()


def test_a_seeded_run_without_workers_is_the_learner_of_before_them_bit_for_bit(tmp_path) -> None:
    # kernel_run.npz: the final weights of this run as the serial learner trains it (make_kernel_run_fixture.py),
    # bit for bit on a machine whose CPU rounds torch's float sums as the one that wrote it; two kinds of
    # machines that ran this suite differ by at most 5.6e-6, a change of the learner's code by far more
    before = np.load(fixture.HERE / "kernel_run.npz")["w"]
    weights = fixture.final_weights(tmp_path, "rollout_workers=0")
    assert weights.dtype == before.dtype == np.float32 and weights.shape == before.shape == (16419,)
    np.testing.assert_allclose(weights, before, rtol=0, atol=1e-5)


def test_a_rollout_in_a_worker_process_is_the_serial_learners_bit_for_bit() -> None:
    config = small_config("rollout_workers=0")
    learner = Learner(config, config.seed)
    serial = make_workers(config, learner)
    assert isinstance(serial, SerialWorkers)
    # the serial learner's rows and its sampling generator, handed to one worker process
    start = pickle.dumps((serial.rows, learner.sampler.get_state()))
    process = ProcessWorkers(config, learner, 1, {"shards": [start]})
    try:
        for rollout in range(3):
            if rollout == 1:  # a snapshot joins the pool: both seat it from the next rollout on
                learner.pool = [(60, learner.net.export() * 2)]
            for workers in (serial, process):
                workers.start(learner.net, learner.pool, learner.steps)
            assert_equal(process.wait(), serial.wait())
    finally:
        process.close()


def test_every_row_of_every_worker_is_stepped_once_a_step_as_a_serial_run_steps_it() -> None:
    config = small_config("rollout_workers=3")
    learner = Learner(config, config.seed)
    workers = make_workers(config, learner)
    assert isinstance(workers, ProcessWorkers) and len(workers.processes) == 3
    try:
        rollouts = []
        for _ in range(3):
            workers.start(learner.net, learner.pool, learner.steps)
            rollouts.append(workers.wait())
        after = [pickle.loads(state)[0] for state in workers.state()["shards"]]
    finally:
        workers.close()
    assert not any(p.is_alive() for p in workers.processes)
    # each row's decisions: 6 a rollout, as in a serial run of the 10 rows
    serial = SerialWorkers(small_config("rollout_workers=0"), Learner(config, config.seed))
    serial.start(learner.net, learner.pool, 0)
    (whole,) = serial.wait().shards
    for rollout in rollouts:
        decisions = np.concatenate([sum(np.ones_like(step.index) for step in s.steps) for s in rollout.shards])
        np.testing.assert_array_equal(decisions, sum(np.ones_like(step.index) for step in whole.steps))
        assert decisions.tolist() == [6] * 10
    # the same shards, stepped one after another in this process: the same steps and the same deals after them
    shards = [build_shard(config, start) for start in shard_starts(config, 3, 0, None)]
    for shard in shards:
        shard.prepare(learner.net.export(), learner.pool)
    for rollout in rollouts:
        assert [s.values.shape for s in rollout.shards] == [(6, 4), (6, 3), (6, 3)]  # 10 rows, 6 steps each
        assert_equal(rollout, Rollout([shard.collect(config.n_steps, 0) for shard in shards]))
    for rows, shard in zip(after, shards, strict=True):  # the deals' arrays of every row
        for name in ("_u64", "_i8", "_i64", "_obs"):
            np.testing.assert_array_equal(getattr(rows.env, name), getattr(shard.rows.env, name))


def behaviour_logp(weights: np.ndarray, step: Step) -> np.ndarray:
    """The log-probabilities of a step's chosen actions under the flat ``weights``."""
    net = ActionNet(16, 8, "heuristic")
    net.load_flat(weights)
    counts = torch.from_numpy(step.counts)
    with torch.no_grad():
        logits, _ = net.score(step.entries.map(torch.from_numpy), torch.from_numpy(step.feats), counts)
        logp, _ = masked_log_probs(logits, legal_mask(counts, logits.shape[1]), torch.from_numpy(step.index))
    return logp.numpy()


def test_a_lagged_rollout_is_played_by_the_weights_before_the_update(monkeypatch) -> None:
    from treppen.train.kernel import rollouts

    monkeypatch.setattr(rollouts, "usable_cores", lambda: 2)
    config = small_config("rollout_workers=auto")
    learner = Learner(config, config.seed)
    played, updated = [], []
    start, update = ProcessWorkers.start, Learner.update

    def recorded(self, net, pool, steps, capture=False):
        played.append(net.export())
        start(self, net, pool, steps, capture)

    def recorded_update(self, rollout, lagged=False):
        assert lagged
        updated.append((rollout, self.net.export()))
        return update(self, rollout, lagged)

    monkeypatch.setattr(ProcessWorkers, "start", recorded)
    monkeypatch.setattr(Learner, "update", recorded_update)
    workers = make_workers(config, learner)
    assert isinstance(workers, ProcessWorkers) and workers.lagged and len(workers.processes) == 1  # 2 cores
    initial = learner.net.export()
    after = []
    try:
        for _ in updates(learner, workers, 300):
            after.append(learner.net.export())
    finally:
        workers.close()
    assert len(after) == 5 and len(played) == 5  # the first two rollouts with the initial weights
    for weights, expected in zip(played, [initial, initial, *after[:3]], strict=True):
        np.testing.assert_array_equal(weights, expected)
    # each update's ratio is to the log-probabilities stored with its rollout: the behaviour policy's,
    # one update behind the learner's from the second update on
    for (rollout, learners), behaviour in zip(updated, played, strict=True):
        step = rollout.shards[0].steps[0]
        np.testing.assert_allclose(step.logp, behaviour_logp(behaviour, step), atol=1e-5, rtol=0)
        assert np.array_equal(learners, behaviour) == (rollout is updated[0][0])
    lagged = updated[1][0].shards[0].steps[0]
    assert np.abs(lagged.logp - behaviour_logp(updated[1][1], lagged)).max() > 1e-3
    # decoupled PPO: the ratio is clipped against the learner's policy as the update found it (the
    # proximal policy), whose log-probabilities the update took before its first epoch
    for rollout, learners in updated:
        for step in rollout.shards[0].steps:
            assert step.proximal is not None and step.proximal.dtype == np.float32
            np.testing.assert_allclose(step.proximal, behaviour_logp(learners, step), atol=1e-5, rtol=0)


def test_an_unlagged_update_clips_against_the_behaviour_policy_itself() -> None:
    """Serial rollouts: the proximal policy is the behaviour policy (the same array), so the
    decoupled weights are exactly 1 and the update is PPO's usual one."""
    config = small_config("rollout_workers=0")
    learner = Learner(config, config.seed)
    workers = make_workers(config, learner)
    workers.start(learner.net, learner.pool, learner.steps)
    rollout = workers.wait()
    learner.update(rollout)
    assert all(step.proximal is step.logp for shard in rollout.shards for step in shard.steps)


@pytest.mark.parametrize(
    ("workers", "cores", "rows", "expected"),
    [("auto", 2, 256, 1), ("auto", 1, 256, 1), ("auto", 4, 256, 3), ("auto", 64, 256, 8), ("auto", 8, 40, 1),
     (3, 64, 16, 3), (0, 8, 256, 0)],
)  # fmt: skip
def test_auto_rollout_workers_are_the_cores_less_one_with_32_rows_each(monkeypatch, workers, cores, rows, expected):
    from treppen.train.kernel import rollouts

    monkeypatch.setattr(rollouts, "usable_cores", lambda: cores)
    config = small_config(f"rollout_workers={workers}", f"n_envs={rows}", f"batch_size={rows * 2}")
    assert rollouts.worker_count(config) == expected
