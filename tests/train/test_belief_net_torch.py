"""The belief net in torch (train/belief_net_torch.py): the kernels play the exported weights as torch
computes them, the uniform deal's log-loss is exact, and the command writes a net the search loads."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch

from treppen.agents import GreedyAgent
from treppen.agents.belief_net import load_belief_net
from treppen.train import belief_net_torch
from treppen_env import raw_env
from treppen_env.agent_core import belief_net_kernels
from treppen_env.agent_core.belief_kernels import IN_STOCK


def test_the_kernels_play_the_exported_net_as_torch_computes_it() -> None:
    """On recorded positions (inputs written by the kernels), the kernels' probabilities of each
    unseen card's places equal torch's softmax scaled to the places' sizes within 1e-5, in absolute
    seats; each card's sum to 1, each place's to the cards it hides."""
    torch.manual_seed(0)
    net = belief_net_torch.BeliefNetTorch(hidden=32)
    for p in net.parameters():
        torch.nn.init.normal_(p, std=0.2)
    kernel_net = net.kernel_net()
    checked = 0
    for seed in range(4):
        env = raw_env(num_players=2)
        env.reset(seed=seed)
        greedy = GreedyAgent()
        history = belief_net_kernels.new_history()
        while not env.game.deal_over:
            state = env.game
            if state.phase.name == "DRAW":
                seat = state.current
                x = np.zeros(belief_net_kernels.NUM_INPUTS, np.float32)
                belief_net_kernels.belief_inputs(state.arrays(), seat, history, x)
                seen = x[belief_net_kernels.P_UNSEEN * 52 : (belief_net_kernels.P_UNSEEN + 1) * 52] == 0
                with torch.no_grad():
                    inputs = torch.from_numpy(x)[None]
                    want = belief_net_torch.fit_counts(net(inputs), inputs, torch.from_numpy(~seen)[None])
                    want = want.exp()[0].numpy()
                got = belief_net_kernels.card_probabilities(kernel_net, state.arrays(), seat, history)
                unseen = np.flatnonzero(~seen)
                hidden = (state.hands[1 - seat] & ~state.known[1 - seat]).bit_count()
                np.testing.assert_allclose(got[unseen].sum(1), 1.0, atol=1e-12)
                np.testing.assert_allclose(got[:, [1 - seat, IN_STOCK]].sum(0), [hidden, len(state.stock)], atol=1e-6)
                np.testing.assert_allclose(got[unseen, IN_STOCK], want[unseen, belief_net_kernels.REL_STOCK], atol=1e-5)
                np.testing.assert_allclose(got[unseen, 1 - seat], want[unseen, 1], atol=1e-5)
                checked += 1
            action = greedy.act(env.observe(env.agent_selection))
            belief_net_kernels.note_action(state.arrays(), state.tables.meld_bits, action, history)
            env.step(action)
    assert checked > 20


def test_the_uniform_deal_gives_each_card_its_place_share() -> None:
    """A position with 7 hidden cards and a stock of 28: a stock card costs -log(28/35), a hidden one
    -log(7/35); the mean over the labelled cards."""
    inputs = np.zeros((1, belief_net_kernels.NUM_INPUTS), np.float32)
    inputs[0, belief_net_kernels.S_STOCK] = 28 / 52
    inputs[0, belief_net_kernels.S_HIDDEN] = 7 / belief_net_kernels.HAND_SCALE
    places = np.full((1, 52), -1, np.int8)
    places[0, :28] = belief_net_kernels.REL_STOCK
    places[0, 28:35] = 1
    want = -(28 * math.log(28 / 35) + 7 * math.log(7 / 35)) / 35
    assert abs(belief_net_torch.uniform_log_loss(inputs, places)[0] - want) < 1e-12


def test_the_command_writes_a_net_and_its_report(tmp_path: Path) -> None:
    """A tiny run: the file loads as a 2-player belief net; the report holds each phase's log-loss,
    the uniform deal's that of the held-out positions (recorded with the run's seed) exactly."""
    out = tmp_path / "net.npz"
    belief_net_torch.main(
        [
            "--out",
            str(out),
            "--positions",
            "20000",
            "--chunk",
            "8000",
            "--held-out",
            "4000",
            "--hidden",
            "32",
            "--seed",
            "3",
        ]
    )
    net, players = load_belief_net(out)
    assert players == 2 and net.w1.shape == (belief_net_kernels.NUM_INPUTS, 32)
    report = json.loads(out.with_suffix(".json").read_text())
    assert set(report["held_out"]) == {*belief_net_torch.PHASES, "all"}
    assert report["held_out"]["all"]["positions"] == 4000
    held_out = belief_net_torch.record(4000, 3)
    assert report["held_out"]["all"]["uniform"] == float(
        belief_net_torch.uniform_log_loss(held_out.inputs, held_out.places).mean()
    )
    row = report["held_out"]["all"]
    assert row["ratio"] == row["net"] / row["uniform"] and 0 < row["net"] < math.inf
