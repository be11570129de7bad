"""The planner's view of each action (``features: planner``; treppen_env/agent_core/feature_kernels.py,
agents/heuristic_features.py): the nine heuristic columns from the planner's decision, its pick the
planner's action, its discard columns the planner's values; a net that reads them reads them in the
search's playouts and prior too (agents/search_net.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.agents.test_greedy_core import deal_states
from tests.agents.test_search import observe
from tests.agents.test_search_net import deal_states as searched_deal_states
from tests.env_helpers import swap_hidden
from treppen.agents import PlannerAgent
from treppen.agents.action_features import ACTION_FEATURES
from treppen.agents.action_net import feature_context, legal_rows
from treppen.agents.heuristic_features import heuristic_features, view_values
from treppen.agents.search_net import SearchNet
from treppen.agents.search_settings import RolloutSettings
from treppen.train.kernel.action_net_torch import ActionNet
from treppen_env.actions import DISCARD_BASE, MELD_BASE
from treppen_env.agent_core import feature_kernels, greedy_kernels, plan_value, playout_kernels, reader
from treppen_env.agent_core.planner_kernels import MEMORY_SEATS
from treppen_env.cards import NUM_CARDS
from treppen_env.core.tables import rules_table
from treppen_env.observation import encode
from treppen_env.rules import make_rules

PLANNER = view_values("planner")


def planner_features(state, preset: str) -> np.ndarray:
    """The planner's features of the mover's position, read from its observation."""
    return heuristic_features(encode(state, state.current), state.legal_mask(), preset, PLANNER)


@pytest.mark.parametrize(("preset", "players"), [("treppenromme", 2), ("rum500", 3)])
def test_the_pick_is_the_planners_action_and_its_best_score(preset: str, players: int) -> None:
    """Over whole greedy deals: the legal rows are the mask, the pick is the action of a planner
    that remembers nothing yet (a fresh :class:`PlannerAgent`) and has the best score up to ties;
    the planner's view is not greedy's (its picks and scores differ somewhere)."""
    seen = differ = 0
    for seed in range(3):
        for state in deal_states(preset, players, seed, greedy=True):
            obs, mask = encode(state, state.current), state.legal_mask()
            f = heuristic_features(obs, mask, preset, PLANNER)
            np.testing.assert_array_equal(f[:, feature_kernels.H_LEGAL], mask.astype(np.float32))
            action = PlannerAgent(rules=preset).act({"observation": obs, "action_mask": mask})
            assert np.flatnonzero(f[:, feature_kernels.H_PICK]).tolist() == [action]
            assert f[action, feature_kernels.H_GAP] == 0.0 or f[action, feature_kernels.H_SCORED] == 0.0
            differ += not np.array_equal(f, heuristic_features(obs, mask, preset))
            seen += 1
    assert seen > 40 and differ > seen // 2


def test_the_discard_columns_are_the_planners_values() -> None:
    """At a meld-phase position (RULES §4.4) each legal discard's weight, danger and score are the
    planner's (:mod:`treppen_env.agent_core.plan_value`), computed here from its decision."""
    preset = "treppenromme"
    for state in deal_states(preset, 2, 1, greedy=True):
        mask = state.legal_mask()
        if not mask[MELD_BASE:DISCARD_BASE].any() and mask[DISCARD_BASE:].sum() >= 5:
            break
    else:
        pytest.fail("no meld-phase position with five discards and no lay")
    f = planner_features(state, preset)
    inputs = reader.observation_inputs(encode(state, state.current))
    memory = np.zeros(MEMORY_SEATS, dtype=np.uint64)
    d = greedy_kernels.planner_decision(
        inputs, memory, rules_table(make_rules(preset)), PLANNER, greedy_kernels.workspace()
    )
    hand = inputs.cards[greedy_kernels.HAND]
    cards = [c for c in range(NUM_CARDS) if hand >> np.uint64(c) & np.uint64(1)]
    unseen = ~(d.ctx[plan_value.CTX_DEAD] | hand) & np.uint64((1 << NUM_CARDS) - 1)
    weights = {c: plan_value.weight(c, hand, unseen, d.ctx[plan_value.CTX_STAIRS], d.threat, PLANNER) for c in cards}
    kept = 0.0
    for c in cards:  # in the kernel's order: the sum is exact
        kept += weights[c]
    discards = np.flatnonzero(mask[DISCARD_BASE:])
    for c in discards.tolist():
        a = DISCARD_BASE + c
        value = plan_value.discard_value(c, weights[c], hand, unseen, d.ctx, PLANNER, d.danger[c], d.out_bonus)
        assert f[a, feature_kernels.H_WEIGHT] == np.float32(weights[c] / feature_kernels.CARD_SCALE)
        assert f[a, feature_kernels.H_DANGER] == np.float32(
            d.danger[c] * PLANNER[plan_value.V_DANGER] / feature_kernels.CARD_SCALE
        )
        assert f[a, feature_kernels.H_SCORE] == np.float32(
            np.clip((value - kept) / feature_kernels.SCORE_SCALE, -3.0, 3.0)
        )
    assert f[DISCARD_BASE + discards, feature_kernels.H_GAP].max() == 0.0


def test_the_planners_features_read_only_what_the_mover_may_see() -> None:
    rng = np.random.default_rng(5)
    checked = 0
    for state in deal_states("rum500", 3, 2, greedy=True):
        other = swap_hidden(state, state.current, rng)
        np.testing.assert_array_equal(planner_features(state, "rum500"), planner_features(other, "rum500"))
        checked += 1
    assert checked > 20


def test_values_of_another_shape_are_refused() -> None:
    with pytest.raises(ValueError, match=r"values has shape \(3,\); expected \(0,\) \(greedy\) or \(13,\)"):
        heuristic_features(np.zeros(969), np.ones(898), values=np.zeros(3))


@pytest.fixture(scope="module")
def planner_net(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small action net with planner features and spread logits, leaning to the planner's move."""
    torch.manual_seed(6)
    net = ActionNet(32, 16, "planner", pick_init=1.0)
    net.load_flat(net.export() * 2.0)
    return net.save(tmp_path_factory.mktemp("planner_net") / "final_model.npz")


def test_the_search_reads_the_planners_features_in_its_playouts_and_prior(planner_net: Path) -> None:
    """At every position of a deal the playout kernel lists the legal moves with the planner's
    columns and scores them as torch does on them (logits within 1e-5); the prior's probabilities
    are torch's softmax (within 1e-6); the planner's columns differ from greedy's somewhere."""
    rules = make_rules("treppenromme")
    net = ActionNet.load(planner_net)
    assert net.features == "planner"
    search_net = SearchNet(planner_net, rules)
    work = search_net.scratch(RolloutSettings(net=str(planner_net), net_pick="argmax"))
    ctx, settings = feature_context(rules), greedy_kernels.settings_row()
    positions = searched_deal_states("treppenromme", 2, 2)
    differ = 0
    for state in positions:
        pos = state.arrays().copy()
        playout_kernels.start(pos.u64, pos.i8, pos.i64, state.tables.tab, state.tables.meld_bits, work)
        n = playout_kernels.action_net_logits(pos, state.tables.tab, settings, work)
        obs, mask = encode(state, state.current)[None], state.legal_mask()[None].astype(np.int8)
        rows = legal_rows(obs, mask, ctx, "planner")
        np.testing.assert_array_equal(work.net.rows.acts[:n], rows.acts)
        np.testing.assert_array_equal(work.net.rows.feats[:n], rows.feats)
        greedy_rows = legal_rows(obs, mask, ctx, "heuristic")
        differ += not np.array_equal(rows.feats[:, ACTION_FEATURES:], greedy_rows.feats[:, ACTION_FEATURES:])
        with torch.no_grad():
            logits, _ = net(torch.from_numpy(obs), torch.from_numpy(rows.feats), torch.from_numpy(rows.counts))
        np.testing.assert_allclose(work.net.logits[:n], logits[0].numpy(), atol=1e-5, rtol=0)
        probs = search_net.probabilities(observe(state))
        np.testing.assert_allclose(probs[rows.acts], torch.softmax(logits[0], 0).numpy(), atol=1e-6, rtol=0)
    assert len(positions) > 30 and differ > 10
