"""Tests of the imitation warm start (train/common/imitation.py): recorded decisions and value targets,
and a student that reproduces its teacher."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from treppen import agents
from treppen.agents.base import Agent, legal_actions
from treppen.agents.heuristic_features import heuristic_features
from treppen.apps import cli
from treppen.train.common.imitation import (
    DECISION_KINDS,
    agreement,
    collect,
    decision_kind,
    fit,
    make_teacher,
)
from treppen.train.sb3.policy_net import ActionFeaturePolicy
from treppen.train.sb3.pool import SelfPlayEnv
from treppen.train.sb3.student import PolicyStudent
from treppen_env import raw_env
from treppen_env.actions import DISCARD_BASE, DRAW, encode_layoff, encode_meld, encode_take, parse_action
from treppen_env.agent_core.feature_kernels import H_GAP, H_PICK
from treppen_env.observation import SLICES


class DrawDiscardHighest(Agent):
    """One obviously right move everywhere: draw from the stock (RULES §4.1), never meld, discard
    the card with the highest index (§4.4); the first legal action when neither is possible."""

    def act(self, observation: dict[str, Any]) -> int:
        legal = legal_actions(observation)
        if legal[0] == DRAW:
            return DRAW
        discards = legal[legal >= DISCARD_BASE]
        return int(discards[-1] if discards.size else legal[0])


def test_decision_kinds():
    actions = [DRAW, encode_take(3), encode_meld(70), encode_layoff(5, "low"), parse_action("discard TD")]
    assert [DECISION_KINDS[k] for k in decision_kind(np.array(actions))] == [
        "draw",
        "draw",
        "meld",
        "layoff",
        "discard",
    ]


def test_collect_labels_every_seat_and_discounts_the_deal_result():
    data = collect(DrawDiscardHighest, 100, num_players=3, seed=5, tables=2)
    assert len(data) >= 100 and data.obs.shape == (len(data), 969) and data.masks.shape == (len(data), 898)
    assert data.masks[np.arange(len(data)), data.actions].all()  # labels are legal
    assert (data.obs[:, SLICES["to_move"]].argmax(axis=1) == 0).all()  # each observation is its mover's
    again = collect(DrawDiscardHighest, 100, num_players=3, seed=5, tables=2)
    np.testing.assert_array_equal(again.actions, data.actions)  # seeded


def test_value_targets_replay_one_deal():
    data = collect(lambda: make_teacher("greedy"), 1, seed=5, gamma=0.5, tables=1)  # one whole deal
    env = raw_env(num_players=2)
    env.reset(seed=5 * 1_000_003)
    teacher = make_teacher("greedy")
    teacher.reset(seed=5 * 1_000_003)
    seats, actions = [], []
    while not env.game.deal_over:
        seats.append(env.game.current)
        actions.append(teacher.act(env.observe(env.agent_selection)))
        env.step(actions[-1])
    assert data.actions.tolist() == actions
    expected = []
    for i, seat in enumerate(seats):  # the seat's reward, halved for each later decision of the seat
        later = seats[i + 1 :].count(seat)
        expected.append(env.rewards[env.possible_agents[seat]] * 0.5**later)
    np.testing.assert_allclose(data.returns, expected, rtol=1e-6)
    assert data.returns[-2:].tolist() != [0.0, 0.0]


def test_student_reproduces_the_teacher():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    env = SelfPlayEnv(probs={"random": 1.0}, seed=0)
    kwargs = {"hidden": 32, "card_dim": 16, "action_dim": 16}
    model = MaskablePPO(ActionFeaturePolicy, env, n_steps=32, batch_size=16, seed=0, device="cpu", policy_kwargs=kwargs)
    data = collect(DrawDiscardHighest, 300, seed=0, tables=4)
    holdout = collect(DrawDiscardHighest, 300, seed=1, tables=4)
    before = agreement(PolicyStudent(model.policy), holdout)
    losses = fit(PolicyStudent(model.policy), data, epochs=6, batch_size=32, learning_rate=3e-3)
    after = agreement(PolicyStudent(model.policy), holdout)
    assert before["all"] < 0.6 and before["decisions"] == len(holdout) == 592
    assert after["draw"] == 1.0 and after["discard"] >= 0.98  # never melds: meld and lay-off are NaN
    assert losses["loss"] < 0.1


def test_heuristic_student_reproduces_greedy_where_one_move_is_right():
    """With heuristic features (``features="heuristic"``), a student trained briefly on greedy plays
    greedy's move in every held-out position with one right move: two or more legal actions, and
    greedy's score at least a point above every other's (``H_GAP`` of the best other <= -0.1)."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    env = SelfPlayEnv(probs={"random": 1.0}, seed=0)
    kwargs = {"hidden": 32, "card_dim": 16, "action_dim": 16, "features": "heuristic"}
    model = MaskablePPO(ActionFeaturePolicy, env, n_steps=32, batch_size=16, seed=0, device="cpu", policy_kwargs=kwargs)
    data = collect(lambda: make_teacher("greedy"), 1500, seed=0, tables=8)
    holdout = collect(lambda: make_teacher("greedy"), 800, seed=1, tables=8)
    fit(PolicyStudent(model.policy), data, epochs=12, batch_size=64, learning_rate=3e-3)
    f = heuristic_features(holdout.obs, holdout.masks)
    others = holdout.masks & (f[..., H_PICK] == 0)
    second = np.where(others, f[..., H_GAP], -np.inf).max(axis=1)
    clear = (holdout.masks.sum(axis=1) > 1) & (second <= -0.1)
    assert clear.sum() > 250
    chosen = PolicyStudent(model.policy).act(holdout.obs[clear], holdout.masks[clear])
    np.testing.assert_array_equal(chosen, holdout.actions[clear])


def test_search_teacher_labels_in_batches_and_gives_value_estimates():
    """A search teacher labels through its batch call over two threads; with ``values="search"``
    the value targets are its estimates where it searched, the deal results elsewhere."""
    teacher = lambda: make_teacher("rollout,playouts=16")  # noqa: E731
    results = collect(teacher, 60, seed=3, tables=4, threads=2)
    estimates = collect(teacher, 60, seed=3, tables=4, threads=2, values="search")
    np.testing.assert_array_equal(results.actions, estimates.actions)  # seeded, whatever the values
    assert results.masks[np.arange(len(results)), results.actions].all()
    searched = results.returns != estimates.returns
    assert 0 < searched.sum() < len(results)
    assert (np.abs(estimates.returns) <= 4).all()
    with pytest.raises(ValueError, match="values='search' needs a search teacher"):
        collect(lambda: make_teacher("greedy"), 10, values="search")
    with pytest.raises(ValueError, match=r"values='best'; choose one of \['results', 'search'\]"):
        collect(teacher, 10, values="best")


def test_a_search_guided_by_a_prior_can_teach():
    """Expert iteration: an IS-MCTS teacher with a policy prior (here a stand-in that favours
    the highest legal action) labels through the same batch call."""
    spec = "ismcts,playouts=24,prior=tests.agents.prior_stub:LastMovePrior"
    data = collect(lambda: make_teacher(spec), 40, seed=2, tables=2, threads=2)
    assert data.masks[np.arange(len(data)), data.actions].all()
    plain = collect(lambda: make_teacher("ismcts,playouts=24"), 40, seed=2, tables=2, threads=2)
    assert (data.actions >= DISCARD_BASE).sum() and data.actions.tolist() != plain.actions.tolist()


def test_heuristic_policy_needs_the_mask():
    env = SelfPlayEnv(probs={"random": 1.0}, seed=0)
    kwargs = {"hidden": 16, "card_dim": 8, "action_dim": 8, "features": "heuristic"}
    model = MaskablePPO(ActionFeaturePolicy, env, n_steps=32, batch_size=16, seed=0, device="cpu", policy_kwargs=kwargs)
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError, match="features='heuristic' needs the action mask"):
        model.predict(obs)
    action, _ = model.predict(obs, action_masks=env.action_masks())
    assert env.action_masks()[int(action)]


def test_train_with_imitation_keep_best_and_resume(tmp_path, capsys, tiny_train):

    overrides = [
        *tiny_train,
        "policy=action_features",
        "net_arch=[32]",
        "card_dim=8",
        "action_dim=8",
        "imitation_decisions=60",
        "imitation_teacher=rollout,playouts=8",
        "imitation_value=search",
        "imitation_rounds=2",
        "imitation_epochs=1",
        "imitation_holdout=40",
        "opponent_random=0",
        "opponent_greedy=0.4",
        "opponent_snapshot=0.4",
        "opponent_best=0.2",
        "best_every=256",
        "best_decks=1",
        f"runs_dir={tmp_path}",
        "name=imit",
    ]
    assert cli.main(["train", *overrides]) == 0
    run = tmp_path / "imit"
    assert "agreement with the teacher" in capsys.readouterr().out
    rounds = [json.loads(line) for line in (run / "imitation.jsonl").read_text().splitlines()]
    assert [r["round"] for r in rounds] == [0, 1]
    assert rounds[1]["decisions"] > rounds[0]["decisions"] >= 60  # DAgger aggregates the rounds
    assert set(rounds[1]["holdout"]) == {"all", "decisions", *DECISION_KINDS}
    assert any((run / "tb" / "imitation").glob("events.out.tfevents.*"))
    assert (run / "checkpoints" / "imitation_round_1.pt").is_file()
    assert isinstance(agents.load(str(run)), agents.PolicyAgent)
    assert isinstance(agents.load(str(run / "best_model.zip")), agents.PolicyAgent)
    gates = [json.loads(line) for line in (run / "best.jsonl").read_text().splitlines()]
    assert [g["steps"] for g in gates] == [256, 512] and all(g["comparisons"] == 2 for g in gates)
    # interrupted after imitation, before the first PPO checkpoint: resume skips the finished rounds
    for path in [*(run / "checkpoints").glob("model_*.zip"), run / "final_model.zip"]:
        path.unlink()
    whole = (run / "imitation.jsonl").read_text()
    for name in ("imitation.jsonl", "best.jsonl"):  # a kill while appending: the resume cuts the torn line
        with (run / name).open("a") as log:
            log.write('{"round": 2, "decis')
    assert cli.main(["train", "--resume", str(run)]) == 0
    assert "imitation: 2 rounds done" in capsys.readouterr().out
    assert (run / "imitation.jsonl").read_text() == whole
    assert all(line.endswith("}") for line in (run / "best.jsonl").read_text().splitlines())


def test_the_imitation_bar_knows_its_total_from_the_start(tmp_path, capsys):
    """The bar's total is set before the first decision and is its final count: collections count
    their targets (the deals in play finish past them), fits their epochs times those targets."""
    import re

    from treppen.train.common.config import SB3Config
    from treppen.train.common.imitation import warm_start

    env = SelfPlayEnv(probs={"random": 1.0}, seed=0)
    model = MaskablePPO(ActionFeaturePolicy, env, n_steps=32, batch_size=16, seed=0, device="cpu",
                        policy_kwargs={"hidden": 16, "card_dim": 8, "action_dim": 8})  # fmt: skip
    config = SB3Config(imitation_decisions=50, imitation_rounds=2, imitation_epochs=2, imitation_holdout=30,
                         imitation_teacher="greedy", imitation_value="results", progress=True)  # fmt: skip
    (tmp_path / "checkpoints").mkdir()
    warm_start(PolicyStudent(model.policy), config, tmp_path)
    shown = re.findall(r"(\d+)/(\d+) \[", capsys.readouterr().err)
    total = 30 + 2 * 50 + 2 * 50 * (1 + 2)  # holdout and two rounds' targets; the fits: 2 epochs of 50, of 100
    assert {int(t) for _, t in shown} == {total}  # the one total, from the first line on
    assert int(shown[-1][0]) == total
    assert [int(n) for n, _ in shown] == sorted(int(n) for n, _ in shown)
