"""Ctrl-C (SIGINT to the process group, as a terminal sends it) and SIGTERM stop ``treppen train``,
``label`` and ``tournament`` keeping what is done: a training run writes a checkpoint and names
``treppen train --resume RUN`` in one line, and each command exits with 130 (SIGINT) or 143
(SIGTERM), without a traceback. The property test kills seeded tiny runs of the batched learner
(rollouts and updates in turn) at random moments (SIGINT, SIGTERM, SIGKILL), resumes them, and gets
the uninterrupted run's final weights bit for bit, with every .jsonl of the folder whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.fixtures import make_kernel_run_fixture as fixture
from treppen.arena.interrupts import Interrupted, ignore_interrupts, interrupts_raise, spawn_context
from treppen.train.expert.labels import read_labels
from treppen_env.files import read_jsonl

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
#: Seconds a command may take to end after the signal (far more than it needs: no speed is measured).
ENDS_WITHIN = 60


def _foreground() -> None:
    """In the child before ``exec``: SIGINT as a terminal's foreground job has it (a test run as a
    shell's background job inherits it ignored, and Python then leaves it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    """``treppen ARGV`` in a process group of its own (as a terminal's foreground job)."""
    return subprocess.Popen(
        [sys.executable, "-m", "treppen.apps.cli", *argv],
        cwd=cwd,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_foreground,
    )


def wait_for(ready: Callable[[], bool], process: subprocess.Popen[str], seconds: float = 300) -> None:
    """Poll until ``ready()``, failing when the process ends first."""
    deadline = time.monotonic() + seconds
    while not ready():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "not ready in time"
        time.sleep(0.02)


def stop(process: subprocess.Popen[str], signum: int, group: bool = True) -> tuple[int, str, str]:
    """Send ``signum`` to the process group (or the process alone); its status and output."""
    if group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    try:
        out, err = process.communicate(timeout=ENDS_WITHIN)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # leave no process behind
        raise
    return process.returncode, out, err


TINY = [*fixture.OVERRIDES, "runs_dir=runs"]


class SignalledWhileCollected:
    """An object whose finalizer receives ``signum`` (as llvmlite's objects may while numba compiles)."""

    def __init__(self, signum: int):
        self.signum = signum

    def __del__(self) -> None:
        signal.raise_signal(self.signum)  # the handler runs here, and Python only reports its exception


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_that_lands_in_a_finalizer_is_not_lost(signum):
    deadline = time.monotonic() + ENDS_WITHIN
    with pytest.raises(Interrupted) as raised, interrupts_raise():
        SignalledWhileCollected(signum)  # collected at once
        while time.monotonic() < deadline:  # the signal comes again as soon as the finalizer is done
            pass
    assert raised.value.signum == signum and time.monotonic() < deadline


def _started(done) -> None:
    ignore_interrupts()
    done.set()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_worker_signalled_while_it_starts_ignores_the_signal(signum):
    context = spawn_context()
    done = context.Event()
    worker = context.Process(target=_started, args=(done,))
    worker.start()
    os.kill(worker.pid, signum)  # it is still importing: the signal waits, then ignore_interrupts drops it
    worker.join(ENDS_WITHIN)
    assert worker.exitcode == 0 and done.is_set()
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the parent blocks nothing after the start


@pytest.mark.parametrize(
    ("workers", "signum", "group", "status"),
    [("rollout_workers=2", signal.SIGINT, True, 130), ("rollout_workers=0", signal.SIGTERM, False, 143)],
    ids=["ctrl-c-two-workers", "sigterm-serial"],
)
def test_a_stopped_training_run_writes_a_checkpoint_and_names_the_resume(tmp_path, workers, signum, group, status):
    run = tmp_path / "runs" / "long"
    argv = ["train", "--config", "kernel", *TINY, "name=long", "total_timesteps=100000000", workers]
    process = start(argv, tmp_path)
    wait_for(lambda: any((run / "checkpoints").glob("model_*_steps.pt")), process)
    code, out, err = stop(process, signum, group)
    assert code == status and "Traceback" not in out + err, err
    last = out.splitlines()[-1]
    steps = int(last.split()[2])
    saved = Path("runs") / "long" / "checkpoints" / f"model_{steps}_steps.pt"
    assert last == f"interrupted at {steps} steps; saved {saved}; continue with `treppen train --resume runs/long`"
    assert torch.load(tmp_path / saved, weights_only=False)["steps"] == steps
    assert not any(run.rglob(".*.tmp*"))  # no half-written file


def test_a_stopped_expert_iteration_keeps_its_stages_and_names_the_resume(tmp_path):
    argv = ["train", "backend=expert", "expert_deals=400", "expert_search=rollout,playouts=8", "runs_dir=runs"]
    process = start([*argv, "name=expert"], tmp_path)
    wait_for((tmp_path / "runs" / "expert" / "gen_0").is_dir, process)
    code, out, err = stop(process, signal.SIGINT)
    assert code == 130 and "Traceback" not in out + err, err
    assert (
        out.splitlines()[-1]
        == "interrupted; the stages written are kept; continue with `treppen train --resume runs/expert`"
    )


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_label_job_keeps_its_whole_shards(tmp_path, signum, status):
    argv = ["label", "--out", "labels", "--deals", "10000", "--shard-deals", "1", "--search", "rollout,playouts=8"]
    process = start([*argv, "--threads", "2"], tmp_path)
    wait_for(lambda: len(list((tmp_path / "labels").glob("shard_*.npz"))) >= 2, process)
    code, out, err = stop(process, signum)
    assert code == status and "Traceback" not in out + err, err
    assert (
        err.rstrip("\n").rsplit("\n", 1)[-1].endswith("interrupted; the shards written are in labels. Rerun to resume.")
    )
    assert len(read_labels(tmp_path / "labels")["action"]) > 0  # every shard reads whole


@pytest.mark.parametrize(("signum", "status", "workers"), [(signal.SIGINT, 130, "2"), (signal.SIGTERM, 143, "1")])
def test_a_stopped_tournament_keeps_its_finished_deals(tmp_path, signum, status, workers):
    argv = ["tournament", "--agents", "greedy", "random", "--decks", "3000", "--workers", workers]
    process = start(argv, tmp_path)
    results = tmp_path / "runs" / "tournaments" / "greedy_vs_random_p2_s0" / "results.jsonl"
    wait_for(lambda: results.is_file() and results.stat().st_size > 0, process)
    code, out, err = stop(process, signum)
    assert code == status and "Traceback" not in out + err, err
    assert err.endswith(f"interrupted; finished deals are in {results.relative_to(tmp_path)}. Rerun to resume.\n")
    assert len(read_jsonl(results, repair=False)) > 0  # every line is whole


@pytest.mark.parametrize("delay", [0.2, 0.4, 0.6, 0.8, 1.0, 1.5])
def test_a_tournament_stopped_while_it_starts_ends_without_a_traceback(tmp_path, delay):
    """Ctrl-C while the command imports, builds its agents or starts its workers: it ends at once,
    with the status of a process that SIGINT ended (130 from Python, or -2 when Python leaves by the
    signal itself), no traceback, no worker left waiting."""
    argv = ["tournament", "--agents", "greedy", "random", "--decks", "3000", "--workers", "2"]
    process = start(argv, tmp_path)
    time.sleep(delay)
    code, out, err = stop(process, signal.SIGINT)
    assert code in (130, -signal.SIGINT) and "Traceback" not in out + err, err
    said = err.strip().splitlines()
    assert not said or "interrupted" in said[-1], err  # nothing when the signal came before Python's handler


#: The tiny seeded run of tests/fixtures/make_kernel_run_fixture.py, rollouts and updates in turn,
#: twice as long (about 5 s of training), evaluated every 256 steps (evals.jsonl is appended meanwhile).
PROPERTY_RUN = ["train", "--config", "kernel", *TINY, "rollout_workers=0", "eval_every=256", "total_timesteps=1536"]


def train_to_the_end(cwd: Path, *argv: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "treppen.apps.cli", *argv], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> np.ndarray:
    """The final weights of the property test's run, not interrupted."""
    folder = tmp_path_factory.mktemp("uninterrupted")
    train_to_the_end(folder, *PROPERTY_RUN, "name=whole")
    return np.load(folder / "runs" / "whole" / "final_model.npz")["w"]


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_run_killed_at_a_random_moment_resumes_to_the_uninterrupted_runs_weights(tmp_path, signum, uninterrupted):
    """Killed once at a seeded random moment of its training (after a random checkpoint) and resumed
    until it ends, the run's
    final weights are the uninterrupted run's bit for bit, and every .jsonl parses."""
    run = tmp_path / "runs" / "tiny"
    process = start([*PROPERTY_RUN, "name=tiny"], tmp_path)
    rng = np.random.default_rng(signum)
    after = run / "checkpoints" / f"model_{256 * rng.integers(1, 6)}_steps.pt"  # 256..1280 of its 1536 steps
    wait_for(after.is_file, process)
    time.sleep(rng.uniform(0, 0.1))  # a random moment of the updates after that checkpoint
    code, _, err = stop(process, signum, group=signum != signal.SIGKILL)
    assert code == (-signum if signum == signal.SIGKILL else 128 + signum) and "Traceback" not in err, err
    assert not (run / "final_model.npz").exists()
    train_to_the_end(tmp_path, "train", "--resume", "runs/tiny")
    np.testing.assert_array_equal(np.load(run / "final_model.npz")["w"], uninterrupted)
    for path in run.rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            assert isinstance(json.loads(line), dict), path
    assert [r["steps"] for r in read_jsonl(run / "evals.jsonl", repair=False)][-1] == 1536
