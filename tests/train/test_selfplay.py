"""Self-play training from the command line (apps/train.py, train/sb3/backend.py): tiny runs, resume,
checkpoints, the progress bar."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from tests.train.run_end import assert_run_end
from treppen import agents
from treppen.agents.base import RandomAgent
from treppen.apps import cli
from treppen.apps import train as train_command
from treppen.arena.match import play_match
from treppen.arena.scale import elo_text
from treppen.train.common.checkpoints import latest_checkpoint
from treppen.train.common.config import SB3Config
from treppen.train.common.config_files import load_config
from treppen.train.common.rundir import LOCK_FILE
from treppen.train.sb3.callbacks import ProgressCallback
from treppen_env import raw_env


def test_latest_checkpoint_by_steps(tmp_path):
    for name in ("model_900_steps.zip", "model_10000_steps.zip", ".model_20000.tmp.zip", "model_x_steps.zip"):
        (tmp_path / name).write_text("")
    assert latest_checkpoint(tmp_path)[1].name == "model_10000_steps.zip"
    assert latest_checkpoint(tmp_path / "none") is None


@pytest.mark.parametrize(
    ("start", "total", "end"), [(0, 1500, 2048), (0, 2048, 2048), (1024, 1025, 2048), (2048, 2048, 2048)]
)
def test_progress_bar_total_is_the_rollout_boundary_the_run_ends_at(start, total, end):
    """SB3 collects whole rollouts (here 512 steps x 2 envs): the bar counts to the step the run
    really ends at, so it keeps its total (tqdm drops a total that the count has passed)."""
    progress = ProgressCallback(total, rollout=512 * 2)
    progress.model = argparse.Namespace(num_timesteps=start)
    progress._on_training_start()
    try:
        assert (progress.bar.n, progress.bar.total) == (start, end)
        progress.model.num_timesteps = end
        progress._on_step()
        assert str(progress.bar).startswith("PPO (the learner's env steps):") and f"{end}/{end}" in str(progress.bar)
    finally:
        progress.close()


def test_train_cli_smoke_and_resume(tmp_path, capsys, tiny_train):
    assert cli.main(["train", *tiny_train, f"runs_dir={tmp_path}", "name=smoke"]) == 0
    run = tmp_path / "smoke"
    printed = capsys.readouterr().out
    assert "final model" in printed
    assert re.search(r"^total time: \d+ min \d+ s for 512 steps \(training and evaluations\)$", printed, re.M)
    for name in ("config.yaml", "metadata.json", "evals.jsonl", "final_model.zip"):
        assert (run / name).is_file(), name
    assert any((run / "tb").rglob("events.out.tfevents.*"))
    assert latest_checkpoint(run / "checkpoints")[1].name == "model_512_steps.zip"
    assert [p.name for p in (run / "pool").glob("*.npz")] == ["snapshot_000000256.npz"]
    evals = [json.loads(line) for line in (run / "evals.jsonl").read_text().splitlines()]
    assert [e["steps"] for e in evals] == [256, 512]
    assert all(e[name]["illegal_actions"] == 0 for e in evals for name in ("random", "greedy"))
    elos = [json.loads(line) for line in (run / "elo.jsonl").read_text().splitlines()]
    assert [e["steps"] for e in elos] == [512]  # one rating in the run, none repeated at the end
    # the seeded run: 2 decks x 3 pairings x 2 seatings; the data do not bound the learner's rating
    # from below (ci_unbounded names the side), so its interval is null
    assert elos[0] == {
        "steps": 512,
        "scale": "greedy = 0",  # the one scale of every Elo figure
        "elo": {"greedy": 0.0, "random": -682.7, "learner": -1365.4},
        "ci": [None, None],
        "ci_unbounded": "below",
        "los_vs_greedy": 0.0,
        "deals": 12,
        "outcomes": {"went_out": 10, "stock_exhausted": 2},
    }
    end = assert_run_end(printed, run, decks=2, steps=512)
    rows = {line.split()[0]: line.split("   learner vs")[0].split(None, 1)[1].strip() for line in end[1:4]}
    assert rows["greedy"] == "+0 (anchor)"
    assert rows["learner"].startswith(elo_text(elos[0]["elo"]["learner"]))
    assert rows["random"].startswith(elo_text(elos[0]["elo"]["random"]))
    meta = json.loads((run / "metadata.json").read_text())
    assert {"python", "torch", "stable_baselines3", "sb3_contrib", "treppen"} <= set(meta["versions"])
    assert meta["command_line"][:2] == ["treppen", "train"] and meta["seed"] == 0 and meta["start_time"]
    assert load_config(run / "config.yaml").name == "smoke"

    _play_legal_deals(run / "final_model.zip")

    # a new run may not overwrite this one; --resume continues it with a larger budget
    assert cli.main(["train", *tiny_train, f"runs_dir={tmp_path}", "name=smoke"]) == 2
    assert cli.main(["train", "--resume", str(run), "total_timesteps=1024"]) == 0
    assert latest_checkpoint(run / "checkpoints")[1].name == "model_1024_steps.zip"
    from sb3_contrib import MaskablePPO

    assert MaskablePPO.load(run / "final_model.zip").num_timesteps == 1024
    assert len(json.loads((run / "metadata.json").read_text())["resumes"]) == 1
    capsys.readouterr()
    before = {p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file() and p.name != LOCK_FILE}
    assert cli.main(["train", "--resume", str(run)]) == 0  # complete: said so, nothing touched but its lock
    printed = capsys.readouterr().out
    assert printed.startswith(f"the run {run} is complete: 1024 steps of total_timesteps=1024; nothing changed.\n")
    assert {p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file() and p.name != LOCK_FILE} == before
    assert [p.name for p in (run / "pool").glob("*.npz")] == ["snapshot_000000768.npz"]  # pool_size=1
    with pytest.raises(ValueError, match="learning_rate"):  # fixed by the saved model
        train_command.run(argparse.Namespace(resume=run, config=None, overrides=["learning_rate=1e-3"]))
    assert load_config(run / "config.yaml").total_timesteps == 1024

    newest = run / "checkpoints" / "model_1024_steps.zip"  # cut short by a kill or a full disk
    newest.write_bytes(newest.read_bytes()[:1000])
    assert cli.main(["train", "--resume", str(run), "total_timesteps=1280"]) == 0
    printed = capsys.readouterr().out
    assert f"passed over 1 damaged checkpoint, newest first: {newest} (BadZipFile: File is not a zip file)\n" in printed
    assert f"resuming from {run / 'checkpoints' / 'model_768_steps.zip'} (768 steps)" in printed
    assert MaskablePPO.load(run / "final_model.zip").num_timesteps == 1280


def _play_legal_deals(model_path: Path, deals: int = 3) -> None:
    """The saved model, loaded as a PolicyAgent, plays whole deals through the raw env (which
    raises on an illegal action)."""
    learner = agents.load(str(model_path))
    assert isinstance(learner, agents.PolicyAgent)
    env = raw_env(num_players=2)
    for seed in range(deals):
        result = play_match(env, [RandomAgent(seed=seed), learner], seed=seed)
        assert result.outcome is not None and len(result.actions) > 0


def test_train_cli_subprocess_envs(tmp_path, tiny_train):
    """SubprocVecEnv workers (forkserver): snapshots reach the workers, masks come back."""
    overrides = [o for o in tiny_train if not o.startswith("vec_env")] + [
        "vec_env=subproc",
        "opponent_random=0",
        "opponent_greedy=0.5",
        "opponent_snapshot=0.5",
    ]
    assert cli.main(["train", *overrides, "total_timesteps=768", f"runs_dir={tmp_path}", "name=sub"]) == 0
    run = tmp_path / "sub"
    assert (run / "final_model.zip").is_file()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(next((run / "tb").iterdir())))
    events.Reload()
    assert events.Scalars("selfplay/illegal_actions")[-1].value == 0
    assert events.Scalars("selfplay/pool_size")[-1].value == 1
    assert "selfplay/reward_vs_snapshot" in events.Tags()["scalars"]


def test_the_end_lines_show_imitation_apart_and_count_promotions(tmp_path, capsys):
    from treppen.train.common.rundir import describe_time
    from treppen.train.sb3.backend import print_summary

    assert describe_time(125.2, 0, 512) == "total time: 2 min 5 s for 512 steps (training and evaluations)"
    assert describe_time(125.2, 65, 512) == (
        "total time: 2 min 5 s: imitation 1 min 5 s, then 1 min 0 s for 512 PPO steps and evaluations"
    )
    evals = argparse.Namespace(latest={"greedy": {"winrate": 0.5, "points": 1.0}})
    keep_best = argparse.Namespace(best_path=tmp_path / "best_model.zip", promotions=1)
    config = SB3Config(eval_deals=50)
    print_summary(tmp_path, tmp_path / "final_model.zip", evals, argparse.Namespace(ratings=None), keep_best, config)
    printed = capsys.readouterr().out
    assert "(1 promotion; " in printed
    assert "evaluation, 50 ordinary deals against each (" in printed and "vs greedy: win 50.0%" in printed


def test_resume_falls_back_to_the_newest_readable_checkpoint(tmp_path, capsys):
    """A checkpoint cut short by a full disk or a kill is passed over, and said so."""
    import zipfile

    from treppen.train.common.checkpoints import readable_checkpoint

    folder = tmp_path / "checkpoints"
    folder.mkdir()
    assert readable_checkpoint(folder) is None
    for steps in (256, 512, 768):
        with zipfile.ZipFile(folder / f"model_{steps}_steps.zip", "w") as archive:
            archive.writestr("data", "{}" * 100)
            archive.writestr("policy.pth", b"\0" * 1000)
    newest = folder / "model_768_steps.zip"
    newest.write_bytes(newest.read_bytes()[:500])
    assert readable_checkpoint(folder) == (512, folder / "model_512_steps.zip")
    middle = folder / "model_512_steps.zip"
    with zipfile.ZipFile(middle, "w") as archive:  # a whole zip without the model's parameters
        archive.writestr("data", "{}")
    assert readable_checkpoint(folder) == (256, folder / "model_256_steps.zip")
    assert capsys.readouterr().out == (  # one line, the newest first
        f"passed over 1 damaged checkpoint, newest first: {newest} (BadZipFile: File is not a zip file)\n"
        f"passed over 2 damaged checkpoints, newest first: {newest} (BadZipFile: File is not a zip file); "
        f"{middle} (ValueError: no ['policy.pth'] in it)\n"
    )
    for path in folder.iterdir():
        path.write_bytes(b"")
    with pytest.raises(
        ValueError,
        match=rf"^no checkpoint in {re.escape(str(folder))} can be read \(3 tried; the newest: "
        rf"{re.escape(str(newest))} \(BadZipFile: File is not a zip file\)\); remove them to start again$",
    ):
        readable_checkpoint(folder)
