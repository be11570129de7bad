"""The training config (train/common/config.py): defaults, sections, typed overrides, clear errors for
bad keys and values."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
import yaml

from treppen.apps import train as train_command
from treppen.train.common.config import (
    BACKEND_CONFIGS,
    CONFIGS,
    READERS,
    SHARED,
    KernelConfig,
    RLlibConfig,
    SB3Config,
    TrainConfig,
)
from treppen.train.common.config_files import config_from_dict, config_path, default_config, load_config, save_config

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def test_default_configs_load():
    for name in ("selfplay.yaml", "selfplay_long.yaml"):
        config = load_config(ROOT / "configs" / name)
        assert isinstance(config, TrainConfig)
        assert config.num_players == 2 and config.rules == "treppenromme"
    assert load_config(None) == SB3Config()


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
    with pytest.raises(ValueError, match=r"config key total_timesteps=1.5: Input should be a valid integer"):
        load_config(None, ["total_timesteps=1.5"])
    with pytest.raises(ValueError, match=r"config key total_timesteps=True: Input should be a valid integer"):
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
        (["features=plan"], ["features='plan'", "['cards', 'heuristic', 'planner']"]),
        (["imitation_value=best"], ["imitation_value='best'", "['results', 'search']"]),
        (["imitation_threads=0"], ["imitation_threads"]),
    ],
)
def test_bad_values_name_the_key(overrides, words):
    with pytest.raises(ValueError) as err:
        load_config(None, overrides)
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["rollout_workers=-1"],
            "config key rollout_workers=-1: Value error, should be a whole number, 0 or more, or 'auto'",
        ),
        (
            ["rollout_workers=many"],
            "config key rollout_workers='many': Value error, should be a whole number, 0 or more, or 'auto'",
        ),
        (
            ["rollout_workers=true"],
            "config key rollout_workers=True: Value error, should be a whole number, 0 or more, or 'auto'",
        ),
        (
            ["n_envs=4", "batch_size=8", "rollout_workers=5"],
            "rollout_workers=5 exceeds n_envs=4: each worker steps at least one row; use at most 4",
        ),
    ],
)
def test_bad_rollout_workers_name_the_key_and_what_is_allowed(overrides, message):
    with pytest.raises(ValueError) as err:
        load_config(config_path("kernel"), overrides)
    assert str(err.value).endswith(f"overrides '{' '.join(overrides)}': {message}")
    assert load_config(config_path("kernel"), ["rollout_workers=3.0"]).rollout_workers == 3


def test_missing_config_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.yaml"):
        load_config(tmp_path / "nope.yaml")


def test_a_mistyped_shipped_config_name_gets_the_closest_one():
    with pytest.raises(FileNotFoundError) as err:
        config_path("selfply")
    assert "config 'selfply': no such file, and no shipped config of that name (did you mean selfplay?) [" in str(
        err.value
    )


def test_elo_deals_is_a_deprecated_alias_of_elo_decks():
    with pytest.warns(DeprecationWarning, match="elo_deals is deprecated; use elo_decks"):
        assert load_config(None, ["elo_deals=7"]).elo_decks == 7
    with pytest.raises(ValueError, match="disagree; give elo_decks only"), pytest.warns(DeprecationWarning):
        load_config(None, ["elo_deals=7", "elo_decks=8"])


def test_one_config_format_serves_both_backends():
    recipe = load_config(Path(__file__).parents[2] / "configs" / "rllib_selfplay.yaml")  # the default recipe, on RLlib
    assert recipe.imitation_decisions and recipe.best_every and recipe.opponent_best
    with pytest.raises(ValueError, match="snapshot_deterministic=True is sb3 only"):
        load_config(None, ["backend=rllib", "snapshot_deterministic=true"])
    with pytest.raises(ValueError, match="ray_address='auto' is for backends rllib, kernel; backend sb3 does not"):
        load_config(None, ["ray_address=auto"])
    assert load_config(None, ["backend=rllib", "ray_address=auto", "num_env_runners=8"]).num_env_runners == 8
    with pytest.raises(ValueError, match="num_env_runners=8 is rllib only; backend kernel does not read it"):
        load_config(config_path("kernel"), ["ray_address=auto", "num_env_runners=8"])
    kernel = load_config(config_path("kernel"), ["ray_address=auto", "rollout_workers=8"])
    assert (kernel.ray_address, kernel.rollout_workers) == ("auto", 8)


@pytest.mark.parametrize("backend", ["sb3", "rllib", "kernel", "expert"])
def test_each_backends_defaults_are_its_shipped_config(backend):
    """One source per value: a backend's config built in Python holds its own shipped config's values
    (configs/kernel.yaml for kernel, not the sb3 recipe's); the keys a file leaves out keep the
    defaults train/common/config.py writes."""
    shipped = yaml.safe_load((ROOT / "configs" / f"{BACKEND_CONFIGS[backend]}.yaml").read_text())
    defaults = CONFIGS[backend]().to_dict()
    assert {key: defaults[key] for key in shipped if key != backend} == {
        k: v for k, v in shipped.items() if k != backend
    }
    assert {key: defaults[backend][key] for key in shipped[backend]} == shipped[backend]


def test_the_sb3_defaults_are_the_recipe():
    recipe = yaml.safe_load((ROOT / "configs" / "selfplay.yaml").read_text())
    defaults = SB3Config().to_dict()
    section = defaults["sb3"]
    assert (section["n_envs"], section["vec_env"], section["total_timesteps"]) == (8, "dummy", 40_000)
    assert (defaults["backend"], section["opponent_agents"], defaults["name"]) == ("sb3", [], None)
    first, second = SB3Config(), SB3Config()
    first.net_arch.append(1)
    assert second.net_arch == recipe["sb3"]["net_arch"]  # each config its own copy


#: A shipped config of each backend.
SHIPPED = {"sb3": "selfplay", "rllib": "rllib_selfplay", "kernel": "kernel", "expert": "expert_iteration"}


def test_the_shipped_configs_are_in_sections_of_their_backends():
    for backend, name in SHIPPED.items():
        data = yaml.safe_load(config_path(name).read_text())
        assert set(data) - set(SHARED) == {"backend", backend}
        assert set(data[backend]) <= set(CONFIGS[backend].section())
        assert load_config(config_path(name)).backend == backend
    assert READERS["policy"] == ("sb3", "rllib") and READERS["target_kl"] == ("sb3", "kernel")
    assert READERS["imitation_epochs"] == ("sb3", "rllib", "expert") and READERS["pick_init"] == ("kernel",)


def test_every_backend_only_key_is_refused_by_every_backend_that_does_not_read_it():
    checked = 0
    for key, readers in READERS.items():
        value = json.dumps(getattr(CONFIGS[readers[0]](), key))  # a value the readers take
        for backend in set(CONFIGS) - set(readers):
            for override in (f"{key}={value}", f"{backend}.{key}={value}"):
                with pytest.raises(ValueError) as err:
                    load_config(config_path(SHIPPED[backend]), [override])
                message = str(err.value)
                assert "\n" not in message and f"backend {backend} does not read it" in message
                who = f"{readers[0]} only" if len(readers) == 1 else f"for backends {', '.join(readers)}"
                assert f"config key {key}=" in message and f" is {who};" in message
                checked += 1
    assert checked > 100


def test_a_section_of_another_backend_is_refused():
    with pytest.raises(ValueError, match=r"config section sb3 \(.*\) is for backend sb3; backend rllib reads section"):
        load_config(config_path("selfplay"), ["backend=rllib"])
    with pytest.raises(ValueError, match=r"section kernel \(pick_init\) is for backend kernel; backend sb3 reads"):
        load_config(None, ["kernel.pick_init=1"])
    with pytest.raises(ValueError, match="seed is a shared key; give it at the top level"):
        config_from_dict({"backend": "kernel", "kernel": {"seed": 3}})
    with pytest.raises(ValueError, match="config key n_envs is given twice, at the top level and in section sb3"):
        config_from_dict({"n_envs": 4, "sb3": {"n_envs": 8}})


def test_overrides_reach_the_section_flat_or_by_name(tmp_path):
    path = config_path("kernel")
    assert load_config(path, ["pick_init=2"]).pick_init == load_config(path, ["kernel.pick_init=2"]).pick_init == 2.0
    config = load_config(path, ["learning_rate=1e-4", "seed=3", "rules_options.max_turns=50"])
    assert isinstance(config, KernelConfig) and (config.learning_rate, config.seed) == (1e-4, 3)
    assert config.rules_options == {"max_turns": 50}
    save_config(config, tmp_path / "config.yaml")
    saved = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert set(saved) == {"backend", *SHARED, "kernel"} and saved["kernel"]["learning_rate"] == 1e-4
    assert load_config(tmp_path / "config.yaml") == config


def test_old_flat_configs_load_where_each_key_is_the_backends(tmp_path):
    path = tmp_path / "old.yaml"
    keys = {"backend": "kernel", "seed": 2, "n_envs": 16, "batch_size": 64, "n_steps": 8, "pick_init": 0.5}
    path.write_text(yaml.safe_dump({**keys, "opponent_snapshot": 0.4}))
    config = load_config(path)
    assert isinstance(config, KernelConfig) and (config.seed, config.n_envs, config.pick_init) == (2, 16, 0.5)
    path.write_text("backend: kernel\npolicy: mlp\n")
    with pytest.raises(ValueError, match="config key policy='mlp' is for backends sb3, rllib; backend kernel"):
        load_config(path)
    config = config_from_dict({"backend": "rllib", "num_env_runners": 3, "policy": "mlp"})  # a flat mapping
    assert isinstance(config, RLlibConfig) and (config.num_env_runners, config.policy) == (3, "mlp")


def test_a_run_folders_flat_config_from_before_the_sections_resumes(tmp_path, monkeypatch):
    old = FIXTURES / "run_config_before_sections.yaml"
    expected = load_config(config_path("kernel"), ["name=kernel_run", "total_timesteps=768"])
    assert load_config(old, saved_run=True) == expected  # the keys kernel does not read are dropped
    with pytest.raises(ValueError, match="config key num_env_runners=2 is rllib only; backend kernel does not read it"):
        load_config(old)  # as a config file of the user's, those keys are refused
    run = tmp_path / "kernel_run"
    run.mkdir()
    (run / "config.yaml").write_text(old.read_text())
    started = []
    monkeypatch.setattr(train_command, "train", lambda config, **kw: started.append((config, kw)))
    args = argparse.Namespace(resume=run, config=None, overrides=["kernel.total_timesteps=1536"])
    assert train_command.run(args) == 0
    ((config, kw),) = started
    assert kw["resume"] and config.total_timesteps == 1536 and config.run_dir == run


def test_the_guides_table_of_keys_names_the_backends_that_read_each():
    guide = (ROOT / "docs" / "guide" / "training.md").read_text()
    section = guide.split("## The config")[1].split("\n## ")[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ")]
    listed = {}
    for keys, readers, _ in rows[1:]:  # below the header
        for key in re.findall(r"`(\w+)`", keys):
            listed[key] = tuple(CONFIGS) if readers == "every backend" else tuple(readers.split(", "))
    assert listed == {"backend": tuple(CONFIGS), **dict.fromkeys(SHARED, tuple(CONFIGS)), **READERS}


def test_without_a_config_the_named_backend_runs_its_shipped_one():
    assert default_config([]) == default_config(["seed=3"]) == config_path("kernel")
    assert default_config(["backend=sb3"]) == config_path("selfplay")
    assert default_config(["seed=3", "backend=kernel"]) == config_path("kernel")
    assert [default_config([f"backend={b}"]).stem for b in CONFIGS] == list(SHIPPED.values())
    with pytest.raises(ValueError, match=r"backend='gin': choose one of \['sb3', 'rllib', 'kernel', 'expert'\]"):
        default_config(["backend=gin"])


@pytest.mark.parametrize("backend", list(CONFIGS))
def test_a_config_of_one_line_runs_on_its_backends_shipped_config(backend, tmp_path):
    """``backend: X`` alone takes every key from X's shipped config (configs/kernel.yaml for kernel,
    whose opponent mix sums to 1, where the sb3 recipe's kinds without best and agent sum to 0.8)."""
    path = tmp_path / "one_line.yaml"
    path.write_text(f"backend: {backend}\n")
    config = load_config(path)
    assert type(config) is CONFIGS[backend]
    assert config == load_config(config_path(BACKEND_CONFIGS[backend]))


def test_a_key_the_file_leaves_out_takes_the_backends_shipped_value(tmp_path):
    path = tmp_path / "kernel.yaml"
    path.write_text("backend: kernel\nkernel:\n  n_envs: 64\n  batch_size: 512\n  elo_deals: 4\n")
    with pytest.warns(DeprecationWarning, match="elo_deals"):
        config = load_config(path)
    shipped = load_config(config_path("kernel"))
    assert (config.n_envs, config.batch_size, config.elo_decks) == (64, 512, 4)
    assert config.opponent_probs() == shipped.opponent_probs() == {"random": 0.1, "greedy": 0.5, "snapshot": 0.4}
    assert (config.total_timesteps, config.pick_init) == (shipped.total_timesteps, 1.0)


@pytest.mark.parametrize("given", [".", "./", "sub/.."])
def test_resume_by_a_path_without_the_folders_name_keeps_its_name(given, tmp_path, monkeypatch):
    """``--resume .`` inside the run folder (or a path ending in ``..``) resumes that folder by its own
    name, which its saved config.yaml then holds: it never becomes ``name: ''``."""
    run = tmp_path / "runs" / "kernel_run"
    (run / "sub").mkdir(parents=True)
    save_config(load_config(config_path("kernel"), ["name=kernel_run", f"runs_dir={run.parent}"]), run / "config.yaml")
    monkeypatch.chdir(run)
    started = []
    monkeypatch.setattr(train_command, "train", lambda config, **kw: started.append(config))
    assert train_command.run(argparse.Namespace(resume=Path(given), config=None, overrides=[])) == 0
    (config,) = started
    assert (config.name, Path(config.runs_dir)) == ("kernel_run", run.parent)
