"""The Ray RLlib backend and Ray tournaments (docs/ARCHITECTURE.md "Scale-out") on a local Ray instance.

One Ray instance (127.0.0.1, 6 logical CPUs, no dashboard, its files in a temporary folder, no auth token
in the home folder) serves all these tests and is shut down in teardown, even after a failure.
One tiny PPO (2 env runners, 2 training iterations, started from an SB3 policy's weights as the
imitation warm start does) is shared by the checks. The two-node test runs its cluster in a process
of its own (tests/train/two_nodes.py), beside these tests on another xdist worker. Skipped without
the ``ray`` extra (``pip install -e '.[train,test,ray]'``); CI installs it (``.ci/run``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import treppen_env
from tests.train.run_end import assert_run_end
from treppen import agents
from treppen.agents.base import Agent, RandomAgent
from treppen.train.common.config_files import config_from_dict
from treppen_env.actions import NUM_ACTIONS

# Ray resolves 127.0.0.1 to the machine's outward address unless its cluster mode is off; off (read
# when ray is imported, which no test module does at import time), Ray stays on 127.0.0.1
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs the ray extra: pip install '.[ray]'"),
    pytest.mark.xdist_group("ray"),  # one Ray instance: all these tests on one xdist worker
]

TINY = {
    "backend": "rllib",
    "num_env_runners": 2,
    "n_envs": 1,
    "n_steps": 300,
    "batch_size": 100,
    "n_epochs": 1,
    "net_arch": [32],
    "pool_size": 2,
    "snapshot_every": 1_000_000,
    "progress": False,
    # the default recipe's parts off (TrainConfig's defaults are configs/selfplay.yaml's); RECIPE turns them on
    "policy": "mlp",
    "imitation_decisions": 0,
    "imitation_teacher": "greedy",
    "best_every": 0,
    "opponent_random": 0.2,
    "opponent_greedy": 0.4,
    "opponent_snapshot": 0.4,
    "opponent_best": 0.0,
    "learning_rate": 3e-4,
    "clip_range": 0.2,
    "ent_coef": 0.01,
    "elo_every": 0,
}


# Session scope: xdist may interleave this module's tests with others on its worker, and a module
# fixture would then start Ray and train again.
@pytest.fixture(scope="session")
def local_ray(tmp_path_factory):
    """A local Ray instance for these tests; shut down in teardown whatever happened."""
    import ray

    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE",)}
    os.environ["RAY_AUTH_MODE"] = "disabled"
    temp = tmp_path_factory.mktemp("ray")
    try:
        ray.init(
            address="local",
            num_cpus=6,  # logical CPUs (scheduling slots): room for two algorithms of 2 env runners
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            _temp_dir=str(temp),
            configure_logging=False,
            log_to_driver=False,
        )
        assert ray.util.get_node_ip_address() == "127.0.0.1"
        yield ray
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def trained(local_ray):
    """A PPO of :data:`TINY` before and after 2 training iterations, started from the weights of a
    fresh learner module (as after an imitation warm start)."""
    from treppen.train.rllib.backend import (
        build_algorithm,
        learner_module,
        learner_weights,
        module_state,
        stop_algorithm,
    )

    config = config_from_dict(dict(TINY))
    initial = module_state(learner_module(config))
    algo = build_algorithm(config, seed=0, initial=initial)
    try:
        before = {
            "initial": initial,
            "learner": learner_weights(algo),
            "runner_learner": runner_weights(algo, "learner"),
            "snapshot_0": runner_weights(algo, "snapshot_0"),
        }
        results = [algo.train() for _ in range(2)]
        yield algo, config, before, results
    finally:
        stop_algorithm(algo)


def runner_weights(algo, module: str) -> list[dict[str, np.ndarray]]:
    """``module``'s weights in every remote env runner."""

    def get(runner):
        return {k: v.detach().cpu().numpy().copy() for k, v in runner.module[module].state_dict().items()}

    return algo.env_runner_group.foreach_env_runner(get, local_env_runner=False)


def fixed_observation(seed: int = 3) -> dict[str, np.ndarray]:
    """The first observation of a seeded deal, in the env's own keys."""
    env = treppen_env.env()
    env.reset(seed=seed)
    return env.observe(env.agent_selection)


class ModuleAgent(Agent):
    """Plays an RLlib module's greedy action (forward_inference, masked logits)."""

    def __init__(self, module):
        super().__init__()
        self.module = module

    def act(self, observation):
        import torch

        batch = {
            "obs": {
                "observations": torch.as_tensor(observation["observation"][None]),
                "action_mask": torch.as_tensor(observation["action_mask"][None]),
            }
        }
        with torch.no_grad():
            logits = self.module.forward_inference(batch)["action_dist_inputs"]
        return int(logits.argmax(dim=-1)[0])


def test_env_adapter_renames_the_observation_key_and_renders():
    from treppen.train.rllib.modules import TreppenRLlibEnv

    env = TreppenRLlibEnv({"num_players": 3})
    obs, _ = env.reset(seed=1)
    (agent,) = obs
    assert set(obs[agent]) == {"observations", "action_mask"}
    assert set(env.observation_space[agent].spaces) == {"observations", "action_mask"}
    assert env.observation_space[agent].contains(obs[agent])
    assert "stock:" in env.render()
    # a whole deal through RLlib's contract: every agent gets its final reward, rewards sum to 0
    rng = np.random.default_rng(0)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    done = False
    while not done:
        (agent,) = obs
        action = int(rng.choice(np.flatnonzero(obs[agent]["action_mask"])))
        obs, rewards, terminateds, truncateds, _ = env.step({agent: action})
        for a, r in rewards.items():
            totals[a] += r
        done = terminateds["__all__"] or truncateds["__all__"]
    assert set(rewards) == set(env.possible_agents)
    assert sum(totals.values()) == pytest.approx(0.0, abs=1e-9)


def test_seat_mapping_gives_the_learner_one_seat_per_episode():
    from treppen.train.rllib.modules import LEARNER, SeatMapping

    probs = {"random": 0.0, "greedy": 0.3, "snapshot": 0.3, "best": 0.2, "agent": 0.2}
    mapping = SeatMapping(3, probs, snapshots=2, agents=1)

    class Episode:
        def __init__(self, i):
            self.id_ = f"episode-{i}"

    seats_of_learner = []
    drawn: set[str] = set()
    for i in range(200):
        modules = [mapping(f"player_{s}", Episode(i)) for s in range(3)]
        assert modules == [mapping(f"player_{s}", Episode(i)) for s in range(3)]  # stable
        assert modules.count(LEARNER) == 1
        assert set(modules) - {LEARNER} <= {"greedy", "snapshot_0", "snapshot_1", "best", "agent_0"}
        seats_of_learner.append(modules.index(LEARNER))
        drawn.update(modules)
    assert set(seats_of_learner) == {0, 1, 2}
    assert drawn == {LEARNER, "greedy", "snapshot_0", "snapshot_1", "best", "agent_0"}  # every opponent kind
    with pytest.raises(ValueError, match="unknown opponent kind"):
        SeatMapping(2, {"rollout": 1.0}, snapshots=1)


POLICIES = [("mlp", "cards"), ("action_features", "cards"), ("action_features", "heuristic")]


@pytest.mark.parametrize(("policy", "features"), POLICIES)
def test_the_imitation_student_is_the_learner_module(policy, features):
    """The warm start trains the learner's own module (no SB3): after a fit on greedy's decisions
    the student plays greedy's moves more often, and a module loaded with its weights gives the
    student's masked log-probabilities and values."""
    import torch

    from treppen.train.common.imitation import agreement, collect, fit, make_teacher
    from treppen.train.rllib.backend import learner_module, module_state
    from treppen.train.rllib.modules import ModuleStudent

    values = {"policy": policy, "features": features, "net_arch": [32, 16], "card_dim": 8, "action_dim": 8}
    config = config_from_dict({"backend": "rllib", **values})
    torch.manual_seed(0)
    student = ModuleStudent(learner_module(config), learning_rate=1e-3)
    data = collect(lambda: make_teacher("greedy"), 300, seed=0, tables=4)
    before = agreement(student, data)["all"]
    fit(student, data, epochs=4, batch_size=32, learning_rate=3e-3)
    assert agreement(student, data)["all"] > before
    copy = learner_module(config)
    copy.load_state_dict({k: torch.as_tensor(v) for k, v in module_state(student.module).items()})  # every key
    obs, actions = torch.as_tensor(data.obs[:8]), torch.as_tensor(data.actions[:8])
    with torch.no_grad():
        for got, want in zip(ModuleStudent(copy, 1e-3).evaluate(obs, actions, data.masks[:8]),
                             student.evaluate(obs, actions, data.masks[:8]), strict=True):  # fmt: skip
            np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6)


@pytest.mark.parametrize(("policy", "features"), POLICIES)
def test_module_masks_illegal_actions_and_the_numpy_export_agrees(policy, features, tmp_path):
    import torch

    from treppen.train.rllib.backend import policy_arrays
    from treppen.train.rllib.modules import MaskedPolicyModule, TreppenRLlibEnv

    env = TreppenRLlibEnv()
    model_config = {"policy": policy, "features": features, "net_arch": [32], "card_dim": 8, "action_dim": 8}
    torch.manual_seed(0)
    module = MaskedPolicyModule(
        observation_space=env.observation_space["player_0"],
        action_space=env.action_space["player_0"],
        model_config=model_config,
    )
    obs = fixed_observation()
    mask = torch.as_tensor(obs["action_mask"][None])
    batch = {"obs": {"observations": torch.as_tensor(obs["observation"][None]), "action_mask": mask}}
    with torch.no_grad():
        logits = module.forward_exploration(batch)["action_dist_inputs"][0]
        values = module.compute_values(batch)
    assert values.shape == (1,)
    legal = np.flatnonzero(obs["action_mask"])
    assert (logits[obs["action_mask"] == 0] < -1e30).all() and (logits[legal] > -1e30).all()
    config = config_from_dict(
        {"backend": "rllib", "policy": policy, "features": features, "net_arch": [32], "card_dim": 8, "action_dim": 8}
    )
    weights = {k: v.detach().numpy() for k, v in module.state_dict().items()}
    np.savez(tmp_path / "policy.npz", **policy_arrays(config, weights))
    assert agents.load(tmp_path / "policy.npz").act(obs) == int(logits.argmax())


def test_training_samples_steps_and_finishes_episodes(trained):
    from treppen.train.rllib.backend import iteration_steps

    _, config, _, results = trained
    runners = results[-1]["env_runners"]
    batch = config.n_steps * config.n_envs
    assert runners["num_env_steps_sampled_lifetime"] >= 2 * batch
    assert runners["num_episodes_lifetime"] >= 1
    assert all(iteration_steps(r) > 0 for r in results)
    assert results[-1]["learners"]["learner"]["num_module_steps_trained"] > 0


def test_env_runners_live_in_different_processes(trained):
    algo = trained[0]
    pids = algo.env_runner_group.foreach_env_runner(lambda runner: os.getpid(), local_env_runner=False)
    assert len(pids) == 2
    assert len(set(pids)) == 2
    assert os.getpid() not in pids


def test_learner_weights_change_and_frozen_snapshots_do_not(trained):
    from treppen.train.rllib.backend import learner_weights

    algo, _, before, _ = trained
    # the learner started from the given weights, in the learner and in every env runner
    for key, value in before["initial"].items():
        np.testing.assert_array_equal(before["learner"][key], value)
        for runner in before["runner_learner"]:
            np.testing.assert_array_equal(runner[key], value)
    after = learner_weights(algo)
    assert any(not np.array_equal(before["learner"][k], after[k]) for k in after)
    # the snapshot slots started as copies of the initial learner, and stayed so in every runner
    for runner_before, runner_after in zip(before["snapshot_0"], runner_weights(algo, "snapshot_0"), strict=True):
        for key, value in runner_after.items():
            np.testing.assert_array_equal(value, runner_before[key])
            np.testing.assert_array_equal(value, before["learner"][key])
    snapshot = algo.learner_group.get_weights(["snapshot_0"])["snapshot_0"]
    for key, value in snapshot.items():
        np.testing.assert_array_equal(np.asarray(value), before["learner"][key])


def test_save_restore_gives_the_same_action_and_the_export_agrees(trained, tmp_path, capsys):
    from treppen.train.rllib.backend import (
        build_algorithm,
        export_policy,
        iteration_steps,
        newest_checkpoint,
        restore,
        save_checkpoint,
        stop_algorithm,
    )

    algo, config, _, results = trained
    steps = sum(iteration_steps(r) for r in results)  # as the training loop counts them
    obs = fixed_observation()
    action = ModuleAgent(algo.get_module("learner")).act(obs)
    checkpoint = save_checkpoint(algo, config, tmp_path, steps=steps)
    assert checkpoint.name == f"rllib_{steps}_steps" and (tmp_path / f"policy_{steps}_steps.npz").is_file()
    # a newer checkpoint whose learner weights are cut short, and a file of garbage named
    # as the newest: passed over, named; the steps are read from the checkpoint, not its name
    damaged = save_checkpoint(algo, config, tmp_path, steps=steps + 2) / "learner_group/learner/rl_module/learner"
    (damaged / "module_state.pkl").write_bytes((damaged / "module_state.pkl").read_bytes()[:100])
    (tmp_path / "rllib_999999_steps").write_bytes(b"garbage")
    # restored as --resume does, into an algorithm without remote env runners (no new processes)
    local = config_from_dict({**TINY, "num_env_runners": 0})
    restored = build_algorithm(local, seed=1)
    try:
        capsys.readouterr()
        assert restore(restored, newest_checkpoint(tmp_path)) == steps
        assert capsys.readouterr().out == (
            f"passed over 2 damaged checkpoints, newest first: {tmp_path / 'rllib_999999_steps'} "
            f"(ValueError: not a checkpoint folder); "
            f"{tmp_path / f'rllib_{steps + 2}_steps'} (UnpicklingError: pickle data was truncated)\n"
            f"resuming from {checkpoint} ({steps} steps)\n"
        )
        module = restored.get_module("learner")
        assert ModuleAgent(module).act(obs) == action
        # the Ray-free export plays the same action
        path = export_policy(algo, config, tmp_path / "final_policy.npz", steps=1)
        assert agents.load(path).act(obs) == action
        # 50 deals of the restored policy against random: all legal (the classic env would flag one)
        player, opponent = ModuleAgent(module), RandomAgent(seed=0)
        for seed in range(50):
            env = treppen_env.env()
            env.reset(seed=seed)
            for agent in env.agent_iter():
                observation, _, terminated, truncated, info = env.last()
                if terminated or truncated:
                    assert "illegal_action" not in info
                    env.step(None)
                    continue
                me = (agent == "player_0") == (seed % 2 == 0)
                choice = (player if me else opponent).act(observation)
                assert observation["action_mask"][choice] == 1
                env.step(choice)
    finally:
        stop_algorithm(restored)


RECIPE = {  # the default recipe's parts, tiny: imitation, keep-best, every opponent kind
    "imitation_decisions": 150,
    "imitation_rounds": 1,  # a DAgger round of an untrained student leads greedy, its labeller, into slow states
    "imitation_holdout": 100,
    "imitation_epochs": 1,
    "best_every": 100,
    "best_decks": 1,
    "opponent_random": 0.2,
    "opponent_greedy": 0.2,
    "opponent_snapshot": 0.2,
    "opponent_best": 0.2,
    "opponent_agent": 0.2,
    "opponent_agents": ["random"],
}


def test_train_command_runs_the_recipe_writes_the_run_folder_and_resumes(local_ray, tmp_path, capsys):
    from treppen.train.launch import train

    overrides = {"total_timesteps": 200, "eval_deals": 4, "elo_every": 100, "elo_decks": 2, "runs_dir": str(tmp_path)}
    config = config_from_dict({**TINY, **RECIPE, **overrides, "name": "run"})
    run_dir = train(config)
    # the last lines as every backend's: the Elo on greedy = 0, the time, the next commands
    out = capsys.readouterr().out
    assert_run_end(out, run_dir, decks=2)
    for name in ("config.yaml", "metadata.json", "evals.jsonl", "elo.jsonl", "final_policy.npz", "best_policy.npz"):
        assert (run_dir / name).is_file(), name
    assert list((run_dir / "tb").rglob("events.out.tfevents.*"))
    (checkpoint,) = sorted((run_dir / "checkpoints").glob("rllib_*_steps"))
    first = int(checkpoint.name.split("_")[1])
    assert first >= 200
    evals = [json.loads(line) for line in (run_dir / "evals.jsonl").read_text().splitlines()]
    assert evals[-1]["steps"] == first
    assert evals[-1]["random"]["illegal_actions"] == 0 and evals[-1]["random"]["deals"] == 4
    player = agents.load(run_dir)  # without Ray: NumPy
    assert player.act(fixed_observation()) in range(NUM_ACTIONS)
    # the imitation warm start ran its rounds; keep-best gated during the run and at its end
    rounds = [json.loads(line) for line in (run_dir / "imitation.jsonl").read_text().splitlines()]
    assert [r["round"] for r in rounds] == [0]
    gates = [json.loads(line) for line in (run_dir / "best.jsonl").read_text().splitlines()]
    assert gates and gates[-1]["steps"] == first
    assert (run_dir / "checkpoints" / "best_module.npz").is_file()

    resumed = config_from_dict({**TINY, **RECIPE, **overrides, "name": "run", "total_timesteps": first + 1})
    train(resumed, resume=True)
    steps = sorted(int(p.name.split("_")[1]) for p in (run_dir / "checkpoints").glob("rllib_*_steps"))
    assert steps[0] == first and steps[-1] > first
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert len(meta["resumes"]) == 1
    assert len((run_dir / "imitation.jsonl").read_text().splitlines()) == 1  # no imitation on resume


def test_a_killed_env_runner_is_restarted_and_training_goes_on(local_ray, tmp_path):
    from treppen.train.rllib.backend import (
        build_algorithm,
        iteration_steps,
        learner_weights,
        save_checkpoint,
        set_modules,
        stop_algorithm,
    )

    config = config_from_dict(dict(TINY))
    algo = build_algorithm(config, seed=2)
    try:
        steps = iteration_steps(algo.train())
        set_modules(algo, {"snapshot_1": learner_weights(algo)})  # a snapshot taken after the start
        checkpoint = save_checkpoint(algo, config, tmp_path, steps)
        pids = algo.env_runner_group.foreach_env_runner(lambda runner: os.getpid(), local_env_runner=False)
        os.kill(pids[0], signal.SIGKILL)
        deadline = time.monotonic() + 90
        while True:  # the other runner samples on; RLlib brings the killed one back when Ray restarted it
            assert iteration_steps(algo.train()) > 0
            if algo.env_runner_group.num_healthy_remote_workers() == 2 or time.monotonic() > deadline:
                break
        assert algo.env_runner_group.num_healthy_remote_workers() == 2
        new_pids = algo.env_runner_group.foreach_env_runner(lambda runner: os.getpid(), local_env_runner=False)
        assert pids[0] not in new_pids and pids[1] in new_pids
        # the restarted runner plays the current learner and the current snapshots
        weights = learner_weights(algo)
        snapshot = algo.learner_group.get_weights(["snapshot_1"])["snapshot_1"]
        for runner, runner_snapshot in zip(
            runner_weights(algo, "learner"), runner_weights(algo, "snapshot_1"), strict=True
        ):
            for key, value in runner.items():
                np.testing.assert_allclose(value, weights[key], atol=1e-6)
                np.testing.assert_array_equal(runner_snapshot[key], np.asarray(snapshot[key]))
        assert checkpoint.is_dir() and (tmp_path / f"policy_{steps}_steps.npz").is_file()  # nothing lost
    finally:
        stop_algorithm(algo)


@pytest.mark.xdist_group("two_nodes")  # its cluster lives in a process of its own; no Ray in this one
def test_two_nodes_on_localhost_train_resume_on_one_and_play_a_tournament(tmp_path_factory):
    from treppen.arena.tournament import run_tournament

    out = Path(tmp_path_factory.mktemp("nodes"))
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "tests.train.two_nodes", str(out)], env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((out / "two_nodes.json").read_text())
    # one env runner on each node, and training progressed there
    assert len(report["nodes"]) == 2 and report["runner_nodes"] == report["nodes"]
    assert report["addresses"] == ["127.0.0.1"]
    assert report["steps"] > 0
    # the checkpoint taken on two nodes resumes on one, playing the same action
    assert report["resumed_nodes"] == 1 and report["resumed_action"] == report["action"]
    # the tournament's deals ran on both nodes and gave the local run's results
    spread = re.search(r"ray: 32 deals on 2 nodes: (\w+) \d+, (\w+) \d+", report["tournament_stderr"])
    assert spread is not None, report["tournament_stderr"]
    assert set(spread.groups()) == {n[:8] for n in report["nodes"]}
    local = run_tournament({"random": "random", "greedy": "greedy"}, decks=16, seed=5, out=out / "local")
    lines = {name: (out / name / "results.jsonl").read_text().splitlines() for name in ("on_ray", "local")}
    assert sorted(lines["on_ray"]) == sorted(lines["local"])  # the same lines, in the order the deals finished
    assert len(local) == 32
    # shutdown left no Ray process and no Ray folder
    pids = report["pids"] + report["runner_pids"] + report["resumed_pids"]
    assert pids and not [pid for pid in pids if Path(f"/proc/{pid}").exists() and not _zombie(pid)]
    assert not Path(report["temp"]).exists()
    assert not [p for p in Path("/proc").glob("[0-9]*/cmdline") if report["temp"].encode() in _read(p)]


@pytest.mark.xdist_group("two_nodes")  # clusters in a process of their own, one after the other
def test_losing_a_node_loses_no_deal_and_training_goes_on_or_resumes(tmp_path_factory):
    from tests.train.node_loss import AGENTS, DEALS, LOSE_AFTER, TOTAL
    from treppen.arena.tournament import run_tournament

    out = Path(tmp_path_factory.mktemp("node_loss"))
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "tests.train.node_loss", str(out)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((out / "node_loss.json").read_text())
    # the tournament: a worker node removed after LOSE_AFTER deals; every deal once, as a local run's
    played = report["tournament"]
    assert played["returncode"] == 0 and LOSE_AFTER <= played["lost_at"] < DEALS, played["stderr"][-2000:]
    local = run_tournament({spec: spec for spec in AGENTS}, decks=24, seed=5, out=out / "local")
    assert len(local) == DEALS
    assert sorted(played["lines"]) == sorted((out / "local" / "results.jsonl").read_text().splitlines())
    assert len({json.loads(line)["deal"] for line in played["lines"]}) == DEALS
    spread = re.search(rf"ray: {DEALS} deals on 2 nodes: \w+ (\d+), \w+ (\d+)", played["stderr"])
    assert spread is not None and min(map(int, spread.groups())) > 0, played["stderr"][-2000:]  # both nodes played
    # training with an env runner on each node: the lost node's runner is gone, the other samples on
    on = report["train_on"]
    assert on["first"]["returncode"] == 0, on["first"]["stderr"][-2000:]
    assert on["final_policy"] and _steps(on["checkpoints"][-1]) >= TOTAL
    # training whose only env runner was on the lost node: it stops, resumable, and --resume finishes
    stopped = report["train_stopped"]
    run_dir = out / "runs" / "train_stopped"
    assert stopped["first"]["returncode"] == 3
    assert f"continue with `treppen train --resume {run_dir}`" in stopped["first"]["stderr"]
    (kept,) = stopped["checkpoints_after_loss"]
    assert _steps(kept) < TOTAL and f"saved {run_dir / 'checkpoints' / kept}" in stopped["first"]["stderr"]
    policy = agents.load(run_dir / "checkpoints" / f"policy_{_steps(kept)}_steps.npz")  # the policy at the stop
    assert policy.act(fixed_observation()) in range(NUM_ACTIONS)
    assert stopped["resumed"]["returncode"] == 0, stopped["resumed"]["stderr"][-2000:]
    assert f"resuming from {run_dir / 'checkpoints' / kept} ({_steps(kept)} steps)" in stopped["resumed"]["stdout"]
    assert stopped["final_policy"] and _steps(stopped["checkpoints"][-1]) >= TOTAL
    assert len(json.loads((run_dir / "metadata.json").read_text())["resumes"]) == 1


def _steps(checkpoint: str) -> int:
    return int(checkpoint.split("_")[1])


def _zombie(pid: int) -> bool:
    return _read(Path(f"/proc/{pid}/stat")).split(b") ")[-1][:1] == b"Z"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # the process ended meanwhile
        return b""


def test_tournament_on_ray_matches_the_local_one_and_resumes(local_ray, tmp_path):
    from treppen.arena.tournament import run_tournament

    entrants = {"random": "random", "greedy": "greedy"}
    local = run_tournament(entrants, decks=6, seed=5)
    partial = run_tournament(entrants, decks=6, seed=5, out=tmp_path, limit=5, ray_address="auto")
    assert len(partial) == 5
    on_ray = run_tournament(entrants, decks=6, seed=5, out=tmp_path, ray_address="auto")
    assert on_ray == local
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 12


#: ``treppen train --config rllib_selfplay``, tiny: one env runner, a checkpoint every iteration (about 100 steps).
STOPPED_RUN = [
    "train",
    "--config",
    "rllib_selfplay",
    "runs_dir=runs",
    "name=long",
    "num_env_runners=1",
    "n_envs=1",
    "n_steps=100",
    "batch_size=100",
    "n_epochs=1",
    "net_arch=[32]",
    "policy=mlp",
    "imitation_decisions=0",
    "best_every=0",
    "opponent_best=0",
    "opponent_snapshot=0.4",
    "elo_every=0",
    "checkpoint_every=100",
    "pool_size=1",
    "progress=false",
]


@pytest.mark.parametrize(
    ("signum", "group", "status"), [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143)], ids=["ctrl-c", "sigterm"]
)
def test_a_stopped_run_writes_a_checkpoint_names_the_resume_and_resumes_past_a_garbage_file(
    tmp_path, signum, group, status
):
    from tests.apps.test_interrupts import start, stop, wait_for
    from treppen.train.rllib.backend import read_checkpoint

    checkpoints = tmp_path / "runs" / "long" / "checkpoints"
    process = start([*STOPPED_RUN, "total_timesteps=100000000"], tmp_path)
    wait_for(lambda: any(checkpoints.glob("rllib_*_steps")), process)
    code, out, err = stop(process, signum, group)
    assert code == status and "Traceback" not in out + err, err
    last = out.splitlines()[-1]
    steps = int(last.split()[2])
    saved = Path("runs") / "long" / "checkpoints" / f"rllib_{steps}_steps"
    assert last == f"interrupted at {steps} steps; saved {saved}; continue with `treppen train --resume runs/long`"
    assert read_checkpoint(tmp_path / saved) == steps
    assert not list(checkpoints.glob(".tmp_*"))  # no half-written checkpoint
    # a file of garbage named as the newest checkpoint is passed over, named; the saved one resumes
    garbage = Path("runs") / "long" / "checkpoints" / "rllib_99999999_steps"
    (tmp_path / garbage).write_bytes(b"garbage")
    argv = ["train", "--resume", "runs/long", f"total_timesteps={steps + 1}"]
    done = subprocess.run(
        [sys.executable, "-m", "treppen.apps.cli", *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert f"passed over 1 damaged checkpoint, newest first: {garbage} (ValueError: not a checkpoint folder)" in lines
    assert f"resuming from {saved} ({steps} steps)" in lines
    assert (tmp_path / "runs" / "long" / "final_policy.npz").is_file()
