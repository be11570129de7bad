"""Search labels as a dataset job (train/expert/labels.py, ``treppen label``): each label is a
position of the labelled seat with its searched moves' statistics and a target; shards are the same
on one thread or two, survive a kill mid-write, and a resumed job writes no position twice."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from treppen.apps import cli
from treppen.train.expert.labels import ARRAYS, LabelJob, read_labels, run_job, targets
from treppen.train.kernel.action_net_torch import ActionNet

#: Jobs of seconds: four deals in two shards, three in three; a tiny search.
JOB = LabelJob(deals=4, search="rollout,playouts=8", shard_deals=2, seed=3)
SMALL = LabelJob(deals=3, search="rollout,playouts=8", shard_deals=1, seed=3)


def shard_arrays(folder: Path) -> dict[str, dict[str, np.ndarray]]:
    """Every shard file's arrays, by file name."""
    out = {}
    for path in sorted(folder.glob("shard_*.npz")):
        with np.load(path) as data:
            out[path.name] = {name: data[name] for name in data.files}
    return out


def assert_same_shards(a: Path, b: Path) -> None:
    left, right = shard_arrays(a), shard_arrays(b)
    assert list(left) == list(right) and left
    for name in left:
        assert list(left[name]) == list(ARRAYS)
        for key in ARRAYS:
            np.testing.assert_array_equal(left[name][key], right[name][key], err_msg=f"{name} {key}")


@pytest.fixture(scope="module")
def whole_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("labels") / "whole"
    report = run_job(JOB, folder)
    assert (report.shards, report.labels) == (2, report.total_labels) and report.labels > 40
    return folder


def test_each_label_is_a_position_of_its_deals_labelled_seat_with_its_search(whole_job: Path) -> None:
    labels = read_labels(whole_job)
    n = len(labels["action"])
    first, moves, playouts = labels["first"], labels["moves"], labels["playouts"]
    assert labels["obs"].shape == (n, 969) and labels["mask"].shape == (n, 898) and first.shape == (n + 1,)
    assert first[0] == 0 and first[-1] == moves.size == playouts.size == labels["target"].size
    assert sorted(set(labels["deal"].tolist())) == [0, 1, 2, 3]
    assert (labels["action"] == labels["played"]).all()  # the search played the labelled seat
    for i in range(n):
        mask, own = labels["mask"][i], slice(first[i], first[i + 1])
        assert mask.sum() >= 2 and mask[labels["action"][i]] and mask[moves[own]].all()
        assert labels["action"][i] in moves[own]
        assert labels["target"][own].sum() == pytest.approx(1.0)
        assert playouts[own].sum() in (0, 8)  # a lay the heuristic plans is not searched (RULES §4.3)
    for d in range(4):
        steps = labels["step"][labels["deal"] == d]
        assert (np.diff(steps) > 0).all()  # each position once, in the deal's order
    searched = np.diff(first) > 1
    assert searched.sum() > n / 3


def test_targets_are_a_softmax_of_the_values_or_the_visits() -> None:
    value, playouts = np.array([0.5, 0.6, 0.0]), np.array([10, 10, 0])
    soft = targets(value, playouts, "softmax", 0.1)
    np.testing.assert_allclose(soft, [1 / (1 + np.e), np.e / (1 + np.e), 0.0])
    np.testing.assert_allclose(targets(value, np.array([30, 10, 0]), "visits", 0.1), [0.75, 0.25, 0.0])
    np.testing.assert_array_equal(targets(np.zeros(1), np.zeros(1, dtype=np.int64), "softmax", 0.1), [1.0])


def test_two_threads_give_the_shards_of_one(whole_job: Path, tmp_path: Path) -> None:
    run_job(JOB, tmp_path / "threads", threads=2)
    assert_same_shards(whole_job, tmp_path / "threads")


def test_a_resumed_job_labels_only_the_shards_it_lacks(whole_job: Path, tmp_path: Path) -> None:
    folder = tmp_path / "resumed"
    folder.mkdir()
    (folder / "job.json").write_bytes((whole_job / "job.json").read_bytes())
    (folder / "shard_00001.npz").write_bytes((whole_job / "shard_00001.npz").read_bytes())
    stamp = (folder / "shard_00001.npz").stat().st_mtime_ns
    report = run_job(JOB, folder)
    assert report.shards == 1 and report.total_labels == len(read_labels(whole_job)["action"])
    assert (folder / "shard_00001.npz").stat().st_mtime_ns == stamp
    assert_same_shards(whole_job, folder)
    labels = read_labels(folder)
    where = set(zip(labels["deal"].tolist(), labels["step"].tolist(), strict=True))
    assert len(where) == len(labels["action"])  # no position twice
    assert run_job(JOB, folder).shards == 0


KILLED_WRITE = """
import os, signal, sys
import numpy as np
from treppen.train.expert.labels import LabelJob, run_job

def die_mid_write(path, **arrays):  # half of the second shard's file, then the kill
    if len(die_mid_write.calls) == 1:
        with open(path, "wb") as f:
            f.write(b"PK" + b"\\0" * 100)
        os.kill(os.getpid(), signal.SIGKILL)
    die_mid_write.calls.append(path)
    save(path, **arrays)

die_mid_write.calls = []
save = np.savez_compressed
np.savez_compressed = die_mid_write
run_job(LabelJob(deals=3, search="rollout,playouts=8", shard_deals=1, seed=3), sys.argv[1])
"""


def test_a_kill_mid_write_leaves_whole_shards_and_the_resumed_job_finishes(tmp_path: Path) -> None:
    """Killed while writing its second shard: the first shard is whole, the second is no shard (its
    temporary file is left), and the resumed job writes the shards an uninterrupted job writes."""
    folder = tmp_path / "killed"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", KILLED_WRITE, str(folder)], env=env, timeout=600, check=False)
    assert done.returncode == -9
    assert [p.name for p in folder.glob("shard_*.npz")] == ["shard_00000.npz"]
    assert len(list(folder.glob(".shard_*.tmp.npz"))) == 1
    assert len(read_labels(folder)["action"]) > 5
    report = run_job(SMALL, folder)
    assert report.shards == 2
    run_job(SMALL, tmp_path / "whole")
    assert_same_shards(folder, tmp_path / "whole")


def test_a_net_can_play_the_labelled_seat_while_the_search_labels(tmp_path: Path) -> None:
    torch.manual_seed(0)
    net = ActionNet(16, 8, "heuristic").save(tmp_path / "final_model.npz")  # near-uniform: plays unlike the search
    job = LabelJob(deals=2, search="rollout,playouts=8", player=str(net), shard_deals=2, seed=1)
    run_job(job, tmp_path / "net")
    labels = read_labels(tmp_path / "net")
    assert (labels["action"] != labels["played"]).any()
    assert labels["mask"][np.arange(len(labels["played"])), labels["played"]].all()
    per_label = np.add.reduceat(labels["playouts"], labels["first"][:-1])
    assert set((per_label[np.diff(labels["first"]) > 1]).tolist()) == {8}  # the search ran on the net's positions


def test_another_job_in_the_folder_and_bad_settings_are_refused(whole_job: Path) -> None:
    with pytest.raises(ValueError, match=r"holds another label job \(it differs in seed\)"):
        run_job(LabelJob(deals=4, search="rollout,playouts=8", shard_deals=2, seed=4), whole_job)
    with pytest.raises(ValueError, match="is no search agent"):
        run_job(LabelJob(deals=1, search="greedy"), whole_job.parent / "greedy")
    with pytest.raises(ValueError, match=r"target='kl'; choose one of \['softmax', 'visits'\]"):
        LabelJob(deals=1, target="kl")
    with pytest.raises(ValueError, match="deals=0 must be a whole number of at least 1"):
        LabelJob(deals=0)
    assert not (whole_job.parent / "greedy").exists()


def test_the_command_line_labels_and_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["label", "--out", str(tmp_path / "cli"), "--deals", "1", "--search", "rollout,playouts=4", "--seed", "2"]
    assert cli.main(args) == 0
    first = capsys.readouterr().out
    assert "in 1 shards" in first and "labels/s" in first
    assert cli.main(args) == 0
    assert "labels: 0 in 0 shards" in capsys.readouterr().out
    assert cli.main([*args[:-2], "--seed", "3"]) == 2
    assert "differs in seed" in capsys.readouterr().err


def copy_job(whole_job: Path, folder: Path, job_json: bytes | None) -> Path:
    """``folder`` holding ``whole_job``'s shards and ``job_json`` as its job.json (None: none)."""
    folder.mkdir()
    for shard in whole_job.glob("shard_*.npz"):
        (folder / shard.name).write_bytes(shard.read_bytes())
    if job_json is not None:
        (folder / "job.json").write_bytes(job_json)
    return folder


@pytest.mark.parametrize(
    ("job_json", "words"),
    [
        (None, "holds label shards but no job.json, so they belong to no job known"),
        (b"[1, 2]", "job.json' is not a label job's settings (not a JSON object)"),
        (b'{"deals": 4, "se', "job.json' is not a label job's settings (not a JSON object)"),
        (b"\xff\xfe", "job.json' is not a label job's settings (not a JSON object)"),
    ],
)
def test_shards_of_no_known_job_are_refused_naming_the_folder(whole_job: Path, tmp_path: Path, job_json, words):
    """Shards without a readable job.json may be another job's (another seed): never adopted."""
    folder = copy_job(whole_job, tmp_path / "foreign", job_json)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(ValueError) as err:
        run_job(LabelJob(deals=4, search="rollout,playouts=8", shard_deals=2, seed=4), folder)
    assert str(folder) in str(err.value) and words in str(err.value)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


@pytest.mark.parametrize("damage", ["empty", "cut", "flipped"])
def test_a_damaged_shard_is_labelled_again_and_named(whole_job: Path, tmp_path: Path, capsys, damage) -> None:
    folder = copy_job(whole_job, tmp_path / "damaged", (whole_job / "job.json").read_bytes())
    shard = folder / "shard_00001.npz"
    data = shard.read_bytes()
    shard.write_bytes(
        {"empty": b"", "cut": data[: len(data) // 2], "flipped": data[:100] + b"\0" * 50 + data[150:]}[damage]
    )
    capsys.readouterr()
    report = run_job(JOB, folder)
    out = capsys.readouterr().out
    assert out.startswith(f"labelling 1 damaged shard again: {shard} (") and out.count("\n") == 1, out
    assert report.shards == 1 and report.total_labels == len(read_labels(whole_job)["action"])
    assert_same_shards(whole_job, folder)
