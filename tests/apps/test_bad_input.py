"""Bad input never gives a traceback: every command turns a bad file, spec, config or
checkpoint into one line naming it and what is allowed, exits with status 2 and changes nothing
(no run folder, no tournament folder, the zoo still lists its agents)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from treppen import agents
from treppen.agents import zoo
from treppen.apps import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """Bad files of every kind a command reads."""
    made = {
        "malformed.yaml": "n_envs: [1,\n  x: }\n",
        "tag.yaml": 'n_envs: !!python/object/apply:os.system ["echo owned"]\n',
        "duplicate.yaml": "n_envs: 2\nn_envs: 4\n",
        "list.yaml": "- 1\n- 2\n",
        "bomb.yaml": _bomb("net_arch"),
        "teacher_bomb.yaml": _bomb("imitation_teacher"),
        "torn.jsonl": '{"format": "treppen-record-1", "deal_id": "x"',
        "text.txt": "hello\n",
    }
    for name, text in made.items():
        (tmp_path / name).write_text(text)
    paths = {name: tmp_path / name for name in made}
    zip_model = tmp_path / "cut.zip"
    zip_model.write_bytes(b"PK\x03\x04" + b"\0" * 40)  # a zip cut short
    paths["cut.zip"] = zip_model
    npz = tmp_path / "policy.npz"
    shutil.copy(zoo.cards()["ppo-2p"].weights_path, npz)
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped byte
    npz.write_bytes(bytes(data))
    paths["flipped.npz"] = npz
    run = tmp_path / "runs" / "old"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("n_envs: 2\nseed: [1,\n")
    paths["run_broken_config"] = run
    paths["broken_tournament"] = tmp_path / "tournament"
    paths["broken_tournament"].mkdir()
    (paths["broken_tournament"] / "tournament.json").write_text('{"version": 2, "agents"')
    paths["folder"] = tmp_path / "a_folder"
    paths["folder"].mkdir()
    paths.update(unreadable_nets(tmp_path))
    return paths


def unreadable_nets(folder: Path) -> dict[str, Path]:
    """Files named where a net is wanted (``net=``, ``prior=``) that are none: empty, an ``.npz`` of
    other arrays, a torch checkpoint, random bytes."""
    nets = {name: folder / name for name in ("empty.npz", "other.npz", "checkpoint.pt", "random.npz")}
    nets["empty.npz"].write_bytes(b"")
    np.savez(nets["other.npz"], a=np.zeros(3))
    torch.save({"steps": 1, "net": {"w": torch.zeros(2)}}, nets["checkpoint.pt"])
    nets["random.npz"].write_bytes(np.random.default_rng(0).bytes(2000))
    return nets


def _bomb(key: str) -> str:
    """YAML setting ``key`` to five levels of anchors, 9**5 leaves (a "billion laughs"), nested in
    ``rules_options`` (a mapping field, so that the unknown keys are not the first problem)."""
    lines = ["rules_options:", "  x0: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for level, (name, below) in enumerate((("b", "a"), ("c", "b"), ("d", "c"), ("e", "d")), 1):
        lines.append(f"  x{level}: &{name} [{', '.join([f'*{below}'] * 9)}]")
    return "\n".join([*lines, f"{key}: [{', '.join(['*e'] * 9)}]"]) + "\n"


#: (case, command line with {placeholders} of the files fixture, words the error line must hold).
CASES = [
    ("train-malformed-yaml", ["train", "--config", "{malformed.yaml}"], ["malformed.yaml", "line 2"]),
    ("train-yaml-tag", ["train", "--config", "{tag.yaml}"], ["tag.yaml", "line 1", "python/object/apply", "plain"]),
    ("train-duplicate-key", ["train", "--config", "{duplicate.yaml}"], ["duplicate.yaml", "line 2", "given twice"]),
    ("train-not-a-mapping", ["train", "--config", "{list.yaml}"], ["list.yaml", "mapping"]),
    ("train-folder-config", ["train", "--config", "{folder}"], ["a_folder", "is a folder"]),
    ("train-missing-config", ["train", "--config", "{folder}/nope.yaml"], ["nope.yaml", "no such file"]),
    ("train-text-config", ["train", "--config", "{text.txt}"], ["text.txt", "mapping"]),
    ("train-override", ["train", "n_steps"], ["n_steps", "key=value"]),
    ("train-override-yaml", ["train", "net_arch=[1,"], ["net_arch=[1,"]),
    ("train-override-tag", ["train", "seed=!!python/name:os.system"], ["seed=", "python/name"]),
    ("train-unknown-key", ["train", "total_timestep=5"], ["total_timestep", "did you mean total_timesteps"]),
    (
        "train-opponent-agents-int",
        ["train", "--config", "selfplay", "opponent_agents=[1]", "opponent_agent=0.1", "opponent_greedy=0.4"],
        ["opponent_agents[0]=1", "string"],
    ),
    ("train-anchor-bomb", ["train", "--config", "{bomb.yaml}"], ["bomb.yaml", "net_arch[0]"]),
    ("train-anchor-bomb-teacher", ["train", "--config", "{teacher_bomb.yaml}"], ["imitation_teacher", "string"]),
    (
        "train-bad-teacher",
        ["train", "--config", "selfplay", "imitation_teacher=rollout,playouts=x"],
        ["imitation_teacher", "playouts='x'"],
    ),
    (
        "train-bad-opponent-spec",
        ["train", "--config", "selfplay", "opponent_agents=[nope]", "opponent_agent=0.1", "opponent_greedy=0.4"],
        ["opponent_agents", "unknown agent spec 'nope'"],
    ),
    ("train-nan", ["train", "gamma=.nan"], ["gamma=nan", "finite"]),
    (  # a key the backend does not read: named, with the backends that read it
        "train-key-kernel-does-not-read",
        ["train", "--config", "kernel", "policy=mlp"],
        ["policy='mlp'", "for backends sb3, rllib", "backend kernel does not read it"],
    ),
    (
        "train-key-sb3-does-not-read",
        ["train", "--config", "selfplay", "pick_init=1.0"],
        ["pick_init=1.0", "kernel only", "backend sb3 does not read it"],
    ),
    ("train-section-of-another-backend", ["train", "rllib.num_env_runners=4"], ["section rllib", "backend kernel"]),
    ("train-resume-broken-config", ["train", "--resume", "{run_broken_config}"], ["config.yaml", "line 3"]),
    ("train-resume-missing", ["train", "--resume", "{folder}/nope"], ["nope", "does not exist"]),
    ("train-resume-not-a-run", ["train", "--resume", "{folder}"], ["a_folder", "not a run folder"]),
    ("tournament-long-spec", ["tournament", "--agents", "x" * 10_000, "greedy"], ["(10000 characters)"]),
    ("tournament-seed-abc", ["tournament", "--agents", "greedy,seed=abc", "random"], ["seed='abc'", "int or none"]),
    ("tournament-setting-type", ["tournament", "--agents", "rollout,playout=5", "random"], ["playout=5", "str"]),
    ("tournament-function", ["tournament", "--agents", "json:loads", "random"], ["json:loads", "keyword settings"]),
    ("tournament-not-a-model", ["tournament", "--agents", "{text.txt}", "random"], ["text.txt", "cannot read it"]),
    ("tournament-cut-zip", ["tournament", "--agents", "{cut.zip}", "random"], ["cut.zip", "cannot read it"]),
    ("tournament-flipped-npz", ["tournament", "--agents", "{flipped.npz}", "random"], ["policy.npz", "cannot read"]),
    ("tournament-empty-spec", ["tournament", "--agents", "", "random"], ["agent spec is empty", "valid specs"]),
    ("tournament-run-folder", ["tournament", "--agents", "{folder}", "random"], ["a_folder", "holds none of"]),
    ("tournament-no-name", ["tournament", "--agents", ",seed=1", "random"], ["no name before its settings"]),
    ("tournament-setting", ["tournament", "--agents", "greedy,seed", "random"], ["'seed' is not key=value"]),
    (
        "tournament-broken-settings",
        ["tournament", "--agents", "random", "greedy", "--out", "{broken_tournament}"],
        ["tournament.json", "not a tournament's settings"],
    ),
    (
        "tournament-record-file",
        ["tournament", "--agents", "random", "greedy", "--record", "{text.txt}"],
        ["--record", "text.txt", "is a file"],
    ),
    ("play-bad-spec", ["play", "--opponents", "nope"], ["unknown agent spec 'nope'"]),
    ("play-bad-setting", ["play", "--opponents", "greedy,colour=1"], ["no setting 'colour'"]),
    ("serve-bad-spec", ["serve", "--opponents", "greedy,seed=abc"], ["seed='abc'"]),
    ("replay-not-a-record", ["replay", "{text.txt}"], ["text.txt"]),
    ("replay-torn", ["replay", "{torn.jsonl}"], ["torn.jsonl"]),
    ("replay-folder", ["replay", "{folder}"], ["a_folder"]),
    ("replay-missing", ["replay", "{folder}/nope.jsonl"], ["nope.jsonl"]),
    ("analyse-not-a-record", ["analyse", "{text.txt}", "--step", "1"], ["text.txt"]),
    (  # every check before any work: a search that is not one, a guide it does not take, a net that does not read
        "train-expert-search-not-a-search",
        ["train", "--config", "expert_iteration", "expert_search=greedy"],
        ["config key expert_search='greedy': not a search", "rollout or ismcts"],
    ),
    (
        "train-expert-guide",
        ["train", "--config", "expert_iteration", "expert_guide=own_playout=nope"],
        ["config key expert_guide='own_playout=nope'", "own_playout='nope'; choose one of"],
    ),
    *(
        (
            f"train-expert-search-net-{name}",
            ["train", "--config", "expert_iteration", f"expert_search=rollout,playouts=4,net={{{name}}}"],
            ["config key expert_search: net=", name, "cannot read it"],
        )
        for name in ("empty.npz", "other.npz", "checkpoint.pt", "random.npz")
    ),
    (
        "train-teacher-net-unreadable",
        ["train", "--config", "selfplay", "imitation_teacher=rollout,net={other.npz}"],
        ["config key imitation_teacher: net=", "other.npz", "cannot read it"],
    ),
    *(
        (f"tournament-{setting}-{name}", ["tournament", "--agents", f"{spec}{{{name}}}", "greedy"], words)
        for name in ("empty.npz", "other.npz", "checkpoint.pt", "random.npz")
        for setting, spec, words in (
            ("net", "rollout,playouts=4,net=", ["net=", name, "cannot read it"]),
            ("prior", "ismcts,prior=", ["prior=", name, "cannot read it"]),
        )
    ),
    (
        "train-rollout-workers-beyond-the-cores",
        ["train", "--config", "kernel", "n_envs=100000", "batch_size=100000", "rollout_workers=100000"],
        ["config key rollout_workers=100000: this machine has", "(4 per core)"],
    ),
    ("train-total-timesteps-1e23", ["train", "total_timesteps=1e23"], ["total_timesteps='1e23'", "1000000000000"]),
    ("tournament-empty-label", ["tournament", "--agents", "greedy", "=greedy"], ["'=greedy'", "no name before '='"]),
    ("tournament-out-empty", ["tournament", "--agents", "greedy", "random", "--out", ""], ["--out", "empty path"]),
    ("label-out-empty", ["label", "--out", "", "--deals", "1"], ["--out", "empty path"]),
    ("zoo-build-unknown", ["zoo", "build", "nope"], ["nope", "ppo-2p"]),
    ("bench-seconds", ["bench", "--seconds", "0"], ["seconds"]),
]


#: Settings this machine cannot run: refused before the run folder is made.
MISSING = [
    pytest.param(
        ["train", "--config", "kernel", "device=cuda"],
        [
            "config key device=cuda: this machine has no CUDA",
            "; use device=cpu, or device=auto (a GPU where one is present)\n",
        ],
        id="train-device-cuda-without-cuda",
        marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA"),
    ),
    pytest.param(
        ["train", "--config", "kernel", "device=mps"],
        [
            "config key device=mps: this machine has no Apple GPU (mps); use device=cpu, or device=auto (a GPU "
            "where one is present)\n"
        ],
        id="train-device-mps-elsewhere",
        marks=pytest.mark.skipif(torch.backends.mps.is_available(), reason="this machine has Apple's GPU"),
    ),
    pytest.param(
        ["train", "--config", "rllib_selfplay"],
        ["backend: rllib needs Ray RLlib: pip install 'treppen[ray]'"],
        id="train-rllib-without-ray",
        marks=pytest.mark.skipif(importlib.util.find_spec("ray") is not None, reason="Ray is installed"),
    ),
]


@pytest.mark.parametrize(("argv", "words"), [pytest.param(a, w, id=c) for c, a, w in CASES] + MISSING)
def test_bad_input_gives_one_line_and_status_2(argv, words, files, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # runs/ and runs/tournaments/ would appear here
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail("served despite a bad spec"))
    for name, path in files.items():
        argv = [part.replace(f"{{{name}}}", str(path)) for part in argv]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    line = err.removeprefix(f"treppen {argv[0]}: error: ")
    assert line != err and line.endswith("\n") and "\n" not in line[:-1], err  # one line
    assert len(line) < 2500, len(line)  # long values are cut
    for word in words:
        assert word in line, (word, line)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # no run or tournament folder


def test_bad_input_through_the_installed_command_shows_no_traceback(files, tmp_path):
    """The same line from the real command line, on stderr, with status 2."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    before = sorted(tmp_path.rglob("*"))
    for argv, word in (
        (["train", "--config", str(files["tag.yaml"])], "tag.yaml' line 1"),
        (["tournament", "--agents", "x" * 10_000, "greedy"], "(10000 characters)"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "treppen.apps.cli", *argv], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr, done.stderr
        assert word in done.stderr
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("", "the agent spec is empty"),
        ("x" * 10_000, "(10000 characters)"),
        ("greedy,seed=abc", "seed='abc' must be int or none"),
        ("json:loads", "json:loads"),
        ("/etc/passwd" if Path("/etc/passwd").is_file() else __file__, "cannot read it"),
    ],
)
def test_agents_load_raises_value_errors_naming_the_spec(spec, words):
    with pytest.raises(ValueError) as err:
        agents.load(spec)
    assert words in str(err.value) and len(str(err.value)) < 1500


#: A run folder's config.yaml that is no run's: (case, its bytes, words of the error line).
NOT_A_RUNS_CONFIG = [
    ("empty", b"", ["config.yaml' is empty, so it is no run's saved config; nothing was changed"]),
    ("comment-only", b"# nothing here\n", ["config.yaml' is empty"]),
    ("no-name", b"backend: kernel\nseed: 0\n", ["config.yaml' is not a run's saved config: it names no run"]),
    ("empty-name", b"backend: kernel\nname: ''\n", ["config.yaml' is not a run's saved config: it names no run"]),
    ("a-list", b"- backend\n- kernel\n", ["config.yaml' must hold a mapping"]),
    ("random-bytes", np.random.default_rng(1).bytes(300), ["config.yaml'"]),
]


@pytest.mark.parametrize(("content", "words"), [pytest.param(c, w, id=i) for i, c, w in NOT_A_RUNS_CONFIG])
def test_resuming_a_folder_whose_config_is_no_runs_changes_no_file(content, words, tmp_path, capsys):
    """``--resume`` reads the run's config first and refuses one that is empty, unreadable or not a
    run's (it was resumed as the sb3 recipe, rewriting a kernel run's config.yaml): exit 2, one line,
    every file as it was, no lock file."""
    run = tmp_path / "runs" / "kernel_run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "model_256_steps.pt").write_bytes(b"a checkpoint")
    (run / "metadata.json").write_text('{"seed": 0}\n')
    (run / "evals.jsonl").write_text('{"steps": 256}\n')
    (run / "config.yaml").write_bytes(content)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    assert cli.main(["train", "--resume", str(run)]) == 2
    out, err = capsys.readouterr()
    line = err.removeprefix("treppen train: error: ")
    assert line != err and line.endswith("\n") and "\n" not in line[:-1] and "Traceback" not in out + err, err
    assert f"config file '{run / 'config.yaml'}" in line
    for word in words:
        assert word in line, (word, line)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


@pytest.fixture
def closed_port() -> int:
    """A port of 127.0.0.1 where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    ("argv", "key"),
    [
        (["train", "--config", "kernel", "ray_address={address}"], "config key ray_address={address}"),
        (["train", "--config", "rllib_selfplay", "ray_address={address}"], "config key ray_address={address}"),
        (["tournament", "--agents", "greedy", "random", "--ray-address", "{address}"], "--ray-address={address}"),
        (
            ["label", "--out", "labels", "--deals", "1", "--ray-address", "ray://{address}"],
            "--ray-address=ray://{address}",
        ),
    ],
    ids=["train-kernel", "train-rllib", "tournament", "label"],
)
def test_an_unreachable_cluster_is_refused_before_any_folder(argv, key, closed_port, tmp_path, monkeypatch, capsys):
    """Where no cluster answers, one line names the address (without Ray: a TCP connection to its
    head), instead of a folder made and a minute of retries."""
    monkeypatch.chdir(tmp_path)
    address = f"127.0.0.1:{closed_port}"
    assert cli.main([part.replace("{address}", address) for part in argv]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"treppen {argv[0]}: error: {key.replace('{address}', address)}: no Ray cluster answers at {address} "
        "(Connection refused); start its head (ray start --head) or give the address it printed\n"
    )
    assert list(tmp_path.iterdir()) == []
