"""Tests of the self-play trainer (train/config.py, pool.py, evaluate.py, selfplay.py); the
single-agent wrapper it trains on has its own file, tests/test_single_agent.py."""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

import agents
from agents.base import RandomAgent
from agents.snapshot import NumpyPolicy
from apps import cli
from apps import train as train_command
from arena.match import play_match
from train import selfplay
from train.callbacks import EloCallback, ProgressCallback
from train.checkpoints import latest_checkpoint
from train.config import TrainConfig, load_config
from train.evaluate import deal_result, evaluate
from train.pool import SelfPlayEnv, save_snapshot
from treppen_env import raw_env
from treppen_env.actions import NUM_ACTIONS
from treppen_env.files import atomic_write_text
from treppen_env.observation import OBS_SIZE
from treppen_env.rules import make_rules

ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- config


def test_default_configs_load():
    for name in ("selfplay.yaml", "selfplay_long.yaml"):
        config = load_config(ROOT / "configs" / name)
        assert isinstance(config, TrainConfig)
        assert config.num_players == 2 and config.rules == "treppenromme"
    assert load_config(None) == TrainConfig()


def test_overrides_are_typed(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"n_steps": 64, "batch_size": 32, "rules_options": {"target": 300}}))
    config = load_config(
        path,
        [
            "learning_rate=1e-4",
            "net_arch=[64, 32]",
            "rules_options.max_turns=200",
            "name=abc",
            "target_kl=null",
            "gamma=1",
            "progress=false",
        ],
    )
    assert config.learning_rate == 1e-4 and isinstance(config.learning_rate, float)
    assert config.net_arch == [64, 32]
    assert config.rules_options == {"target": 300, "max_turns": 200}
    assert config.name == "abc" and config.target_kl is None and config.progress is False
    assert config.gamma == 1.0 and isinstance(config.gamma, float)


def test_unknown_key_lists_valid_keys(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("learnin_rate: 0.001\n")
    with pytest.raises(ValueError, match="learnin_rate") as err:
        load_config(path)
    assert "learning_rate" in str(err.value) and "n_steps" in str(err.value)
    with pytest.raises(ValueError, match="total_steps"):
        load_config(None, ["total_steps=5"])


def test_a_key_typo_suggests_the_near_key():
    with pytest.raises(
        ValueError, match=r"^unknown config key\(s\) \['total_timestep'\] \(did you mean total_timesteps\?\); "
    ):
        load_config(None, ["total_timestep=5"])
    with pytest.raises(ValueError, match=r"\['max_turn'\] \(did you mean max_turns\?\); valid options"):
        load_config(None, ["rules_options.max_turn=5"])
    with pytest.raises(ValueError) as err:
        load_config(None, ["zzzz=5"])
    assert "did you mean" not in str(err.value)


def test_whole_numbers_written_as_floats_are_ints(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("total_timesteps: 1e5\nn_steps: 2.048e3\n")  # YAML 1.1: a string and a float
    config = load_config(path, ["eval_every=5e4", "n_epochs=10.0"])
    assert (config.total_timesteps, config.n_steps, config.eval_every, config.n_epochs) == (100_000, 2048, 50_000, 10)
    assert all(type(v) is int for v in (config.total_timesteps, config.n_steps, config.eval_every, config.n_epochs))
    with pytest.raises(ValueError, match=r"total_timesteps=1.5 has the wrong type; expected int"):
        load_config(None, ["total_timesteps=1.5"])
    with pytest.raises(ValueError, match=r"total_timesteps=True has the wrong type"):
        load_config(None, ["total_timesteps=true"])


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        (["total_timesteps=-5"], ["total_timesteps", "-5"]),
        (["num_players=5"], ["num_players", "5"]),
        (["n_steps=100", "n_envs=2", "batch_size=64"], ["batch_size=64", "n_steps", "n_envs", "200"]),
        (["learning_rate=abc"], ["learning_rate", "abc"]),
        (["net_arch=[0, 5]"], ["net_arch"]),
        (["opponent_random=0.5"], ["opponent", "sum"]),
        (["rules=gin"], ["gin", "treppenromme"]),
        (["rules_options.max_turn=5"], ["max_turn", "max_turns"]),
        (["vec_env=threads"], ["vec_env", "subproc"]),
        (["learning_rate=0.5"], ["learning_rate", "0.5"]),
        (["n_steps"], ["n_steps", "key=value"]),
        (["seed.x=1"], ["seed.x", "rules_options"]),
    ],
)
def test_bad_values_name_the_key(overrides, words):
    with pytest.raises(ValueError) as err:
        load_config(None, overrides)
    for word in words:
        assert word in str(err.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.yaml"):
        load_config(tmp_path / "nope.yaml")


# --------------------------------------------------------------------------- snapshots


def _model(net_arch=(32, 32), activation=torch.nn.Tanh):
    from sb3_contrib import MaskablePPO

    env = SelfPlayEnv(probs={"random": 1.0}, seed=0)
    kwargs = {"net_arch": {"pi": list(net_arch), "vf": list(net_arch)}, "activation_fn": activation}
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, policy_kwargs=kwargs, seed=0, device="cpu")
    with torch.no_grad():  # spread the logits: the initial action head (gain 0.01) leaves near-ties
        model.policy.action_net.weight.mul_(300)
    return model, env


@pytest.mark.parametrize("activation", [torch.nn.Tanh, torch.nn.ReLU])
def test_numpy_snapshot_matches_torch_argmax(tmp_path, activation):
    model, env = _model(activation=activation)
    path = save_snapshot(model.policy, tmp_path / "snap.npz", steps=7)
    policy = NumpyPolicy.load(path)
    rng = np.random.default_rng(0)
    observations, masks = [], []
    obs, _ = env.reset(seed=1)
    for _ in range(150):  # real observations and masks of a deal ...
        observations.append(obs)
        masks.append(env.action_masks())
        obs, _, done, truncated, _ = env.step(int(rng.choice(np.flatnonzero(masks[-1]))))
        if done or truncated:
            obs, _ = env.reset()
    for _ in range(150):  # ... and random vectors with random masks
        observations.append(rng.uniform(-1, 2, OBS_SIZE).astype(np.float32))
        mask = rng.random(NUM_ACTIONS) < 0.05
        mask[rng.integers(NUM_ACTIONS)] = True
        masks.append(mask)
    torch_actions, _ = model.predict(np.stack(observations), action_masks=np.stack(masks), deterministic=True)
    numpy_actions = [policy.act(o, m) for o, m in zip(observations, masks, strict=True)]
    assert list(torch_actions) == numpy_actions
    assert all(m[a] for m, a in zip(masks, numpy_actions, strict=True))
    sampled = [policy.act(o, m, rng) for o, m in zip(observations, masks, strict=True)]
    assert all(m[a] for m, a in zip(masks, sampled, strict=True))


def test_pool_opponents_draw_snapshots(tmp_path):
    model, _ = _model()
    paths = [str(save_snapshot(model.policy, tmp_path / f"s{i}.npz")) for i in range(2)]
    env = SelfPlayEnv(num_players=3, probs={"random": 0.0, "greedy": 0.5, "snapshot": 0.5}, seed=3)
    assert env.set_pool(paths) == 2
    kinds = set()
    env.reset(seed=0)
    for _ in range(3000):
        _, _, done, truncated, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
        assert not info.get("illegal_action")
        if done or truncated:
            kinds.update(info["opponents"])
            env.reset()
    assert kinds == {"greedy", "snapshot"}


def test_pool_rejects_bad_probabilities():
    with pytest.raises(ValueError, match="random or greedy"):
        SelfPlayEnv(probs={"snapshot": 1.0})
    with pytest.raises(ValueError, match="heuristic"):
        SelfPlayEnv(probs={"random": 0.5, "heuristic": 0.5})


def test_masked_distribution_keeps_argument_validation(recwarn):
    """sb3-contrib #322: the masked Categorical over 898 actions used to fail torch's Simplex
    check. The installed version passes the probe, so validation (which also catches NaN logits)
    stays on."""
    selfplay.check_distribution_validation()
    assert torch.distributions.Distribution._validate_args
    assert not [w for w in recwarn if "argument" in str(w.message)]


def test_evaluate_is_repeatable():
    model, _ = _model()
    short = make_rules(max_turns=40)  # an untrained argmax policy may dither until the turn limit
    runs = [evaluate(model, lambda s: RandomAgent(seed=s), rules=short, deals=6, batch=4) for _ in range(2)]
    assert runs[0] == runs[1] and runs[0]["deals"] == 6 and runs[0]["illegal_actions"] == 0
    assert set(runs[0]) == {"winrate", "points", "deal_points", "deals", "illegal_actions"}
    assert deal_result({"deal_points": {"player_0": 10, "player_1": 10}}, "player_0") == (0.5, 0.0)
    assert deal_result({"deal_points": {"player_0": 30, "player_1": 0, "player_2": 10}}, "player_0") == (1.0, 25.0)


def test_elo_deals_is_a_deprecated_alias_of_elo_decks():
    with pytest.warns(DeprecationWarning, match="elo_deals is deprecated; use elo_decks"):
        assert load_config(None, ["elo_deals=7"]).elo_decks == 7
    with pytest.raises(ValueError, match="disagree; give elo_decks only"), pytest.warns(DeprecationWarning):
        load_config(None, ["elo_deals=7", "elo_decks=8"])


def test_elo_rating_plays_the_runs_rules(tmp_path):
    """Item "one rules object": the Elo tournament plays the run's rules, options included; with
    max_turns=5 every deal is cut off at the turn limit (RULES §6.5)."""
    from stable_baselines3.common.logger import Logger

    model, _ = _model()
    model.set_logger(Logger(folder=None, output_formats=[]))
    elo = EloCallback(0, tmp_path / "elo.jsonl", 2, make_rules(max_turns=5), decks=2)
    elo.init_callback(model)
    elo.run(0)
    assert elo.latest["outcomes"] == {"max_turns": 2 * 3 * 2}  # decks x pairings x seatings
    assert json.loads((tmp_path / "elo.jsonl").read_text())["outcomes"] == elo.latest["outcomes"]


def test_latest_checkpoint_by_steps(tmp_path):
    for name in ("model_900_steps.zip", "model_10000_steps.zip", ".model_20000.tmp.zip", "model_x_steps.zip"):
        (tmp_path / name).write_text("")
    assert latest_checkpoint(tmp_path).name == "model_10000_steps.zip"
    assert latest_checkpoint(tmp_path / "none") is None


# --------------------------------------------------------------------------- training from the CLI

TINY = [
    "total_timesteps=512",
    "n_envs=2",
    "vec_env=dummy",
    "n_steps=128",
    "batch_size=64",
    "n_epochs=2",
    "net_arch=[32,32]",
    "eval_deals=4",
    "eval_every=256",
    "elo_every=512",
    "elo_decks=2",
    "checkpoint_every=256",
    "snapshot_every=256",
    "pool_size=1",
    "progress=false",
    "policy=mlp",  # the configs' recipe (action features, imitation, keep-best) is tested in test_imitation.py
    "imitation_decisions=0",
    "best_every=0",
    "opponent_random=0.2",
    "opponent_greedy=0.4",
    "opponent_snapshot=0.4",
    "opponent_best=0",
]


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
        assert f"{end}/{end}" in str(progress.bar)
    finally:
        progress.close()


def test_train_cli_smoke_and_resume(tmp_path, capsys):
    assert cli.main(["train", *TINY, f"runs_dir={tmp_path}", "name=smoke"]) == 0
    run = tmp_path / "smoke"
    printed = capsys.readouterr().out
    assert "final model" in printed
    assert re.search(r"^total time: \d+ min \d+ s for 512 steps \(training and evaluations\)$", printed, re.M)
    for name in ("config.yaml", "metadata.json", "evals.jsonl", "final_model.zip"):
        assert (run / name).is_file(), name
    assert any((run / "tb").rglob("events.out.tfevents.*"))
    assert latest_checkpoint(run / "checkpoints").name == "model_512_steps.zip"
    assert [p.name for p in (run / "pool").glob("*.npz")] == ["snapshot_000000256.npz"]
    evals = [json.loads(line) for line in (run / "evals.jsonl").read_text().splitlines()]
    assert [e["steps"] for e in evals] == [256, 512]
    assert all(e[name]["illegal_actions"] == 0 for e in evals for name in ("random", "greedy"))
    elos = [json.loads(line) for line in (run / "elo.jsonl").read_text().splitlines()]
    assert [e["steps"] for e in elos] == [512]  # one rating in the run, none repeated at the end
    assert elos[0]["elo"]["random"] == 0 and set(elos[0]["elo"]) == {"learner", "random", "greedy"}
    assert elos[0]["deals"] == 2 * 3 * 2  # decks x pairings x seatings
    low, high = elos[0]["ci"]  # null where the data do not bound it (ci_unbounded names the side)
    learner = elos[0]["elo"]["learner"]
    assert elos[0]["ci_unbounded"] in (None, "above", "below", "both")
    assert (low is None or low <= learner) and (high is None or learner <= high)
    meta = json.loads((run / "metadata.json").read_text())
    assert {"python", "torch", "stable_baselines3", "sb3_contrib", "treppen"} <= set(meta["versions"])
    assert meta["command_line"][:2] == ["treppen", "train"] and meta["seed"] == 0 and meta["start_time"]
    assert load_config(run / "config.yaml").name == "smoke"

    _play_legal_deals(run / "final_model.zip")

    # a new run may not overwrite this one; --resume continues it with a larger budget
    assert cli.main(["train", *TINY, f"runs_dir={tmp_path}", "name=smoke"]) == 2
    assert cli.main(["train", "--resume", str(run), "total_timesteps=1024"]) == 0
    assert latest_checkpoint(run / "checkpoints").name == "model_1024_steps.zip"
    from sb3_contrib import MaskablePPO

    assert MaskablePPO.load(run / "final_model.zip").num_timesteps == 1024
    assert len(json.loads((run / "metadata.json").read_text())["resumes"]) == 1
    capsys.readouterr()
    before = {p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()}
    assert cli.main(["train", "--resume", str(run)]) == 0  # complete: said so, nothing touched
    printed = capsys.readouterr().out
    assert printed.startswith(f"the run {run} is complete: 1024 steps of total_timesteps=1024; nothing changed.\n")
    assert {p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()} == before
    assert [p.name for p in (run / "pool").glob("*.npz")] == ["snapshot_000000768.npz"]  # pool_size=1
    with pytest.raises(ValueError, match="learning_rate"):  # fixed by the saved model
        train_command.run(argparse.Namespace(resume=run, config=None, overrides=["learning_rate=1e-3"]))
    assert load_config(run / "config.yaml").total_timesteps == 1024


def _play_legal_deals(model_path: Path, deals: int = 3) -> None:
    """The saved model, loaded as a PolicyAgent, plays whole deals through the raw env (which
    raises on an illegal action)."""
    learner = agents.load(str(model_path))
    assert isinstance(learner, agents.PolicyAgent)
    env = raw_env(num_players=2)
    for seed in range(deals):
        result = play_match(env, [RandomAgent(seed=seed), learner], seed=seed)
        assert result.outcome is not None and len(result.actions) > 0


def test_train_cli_subprocess_envs(tmp_path):
    """SubprocVecEnv workers (forkserver): snapshots reach the workers, masks come back."""
    overrides = [o for o in TINY if not o.startswith("vec_env")] + [
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


def test_atomic_writes_respect_the_umask(tmp_path):
    """Result files written atomically get the usual mode (mkstemp alone would make them 0600)."""
    umask = os.umask(0o022)
    os.umask(umask)
    path = atomic_write_text(tmp_path / "out.txt", "x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert path.read_text() == "x" and [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_rllib_backend_rejects_sb3_only_settings():
    with pytest.raises(ValueError, match=r"backend=rllib does not support \{'best_every': 1000\}"):
        load_config(None, ["backend=rllib", "best_every=1000"])
    with pytest.raises(ValueError, match="ray_address='auto' needs backend=rllib"):
        load_config(None, ["ray_address=auto"])
    assert load_config(None, ["backend=rllib", "ray_address=auto", "num_env_runners=8"]).num_env_runners == 8


def test_the_end_lines_show_imitation_apart_and_count_promotions(tmp_path, capsys):
    from train.selfplay import describe_time, print_summary

    assert describe_time(125.2, 0, 512) == "total time: 2 min 5 s for 512 steps (training and evaluations)"
    assert describe_time(125.2, 65, 512) == (
        "total time: 2 min 5 s: imitation 1 min 5 s, then 1 min 0 s for 512 PPO steps and evaluations"
    )
    evals = argparse.Namespace(latest={"greedy": {"winrate": 0.5, "points": 1.0}})
    keep_best = argparse.Namespace(best_path=tmp_path / "best_model.zip", promotions=1)
    print_summary(tmp_path, tmp_path / "final_model.zip", evals, argparse.Namespace(ratings=None), keep_best, 50)
    printed = capsys.readouterr().out
    assert "(1 promotion; " in printed
    assert "evaluation, 50 ordinary deals against each (" in printed and "vs greedy: win 50.0%" in printed
