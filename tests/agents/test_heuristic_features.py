"""The heuristic action features (treppen_env/agent_core/feature_kernels.py, agents/heuristic_features.py):
computed from the mover's information only, exact in built positions, the greedy pick marked."""

from __future__ import annotations

import numpy as np
import pytest

from tests.agents.test_greedy_core import deal_states
from tests.env_helpers import swap_hidden
from treppen.agents import GreedyAgent
from treppen.agents.heuristic_features import heuristic_features, rules_row
from treppen_env.actions import DISCARD_BASE, LAYOFF_BASE, MELD_BASE, NUM_ACTIONS
from treppen_env.agent_core import feature_kernels, greedy_kernels
from treppen_env.agent_hooks import heuristic_inputs
from treppen_env.core.tables import rules_table
from treppen_env.melds import meld_values
from treppen_env.observation import encode
from treppen_env.rules import make_rules


def state_features(state, seat: int, rules) -> np.ndarray:
    """The features of ``seat``'s position read from the engine state (the state path)."""
    out = np.empty((NUM_ACTIONS, feature_kernels.NUM_FEATURES), dtype=np.float32)
    mask = state.legal_mask().astype(np.int8)
    row, settings = rules_table(make_rules(rules)), greedy_kernels.settings_row()
    feature_kernels.action_features(heuristic_inputs(state, seat), mask, row, settings, greedy_kernels.workspace(), out)
    return out


@pytest.mark.parametrize(("preset", "players"), [("treppenromme", 2), ("rum500", 3)])
def test_features_read_only_what_the_mover_may_see(preset, players):
    """No peeking: swapping the cards the mover cannot see (stock order, opponents' unseen cards)
    changes no feature, from the observation or from the state, and both paths agree."""
    rng = np.random.default_rng(3)
    checked = 0
    for seed in range(3):
        for state in deal_states(preset, players, seed, greedy=True):
            seat = state.current
            other = swap_hidden(state, seat, rng)
            assert other.hands != state.hands or other.stock != state.stock or len(state.stock) < 2
            got = [heuristic_features(encode(s, seat), s.legal_mask(), preset) for s in (state, other)]
            got += [state_features(s, seat, preset) for s in (state, other)]
            for g in got[1:]:
                np.testing.assert_array_equal(got[0], g)
            checked += 1
    assert checked > 40


@pytest.mark.parametrize("preset", ["treppenromme", "rum500"])
def test_rows_mark_the_legal_actions_and_the_greedy_pick(preset):
    """Invariants over whole greedy deals: legal rows are the mask, the pick is greedy's action
    and has the best score up to ties (gap 0), every gap is in [-3, 0], scored rows are legal."""
    agent = GreedyAgent(rules=preset)
    for seed in range(4):
        for state in deal_states(preset, 2, seed, greedy=True):
            obs = encode(state, state.current)
            mask = state.legal_mask()
            f = heuristic_features(obs, mask, preset)
            np.testing.assert_array_equal(f[:, feature_kernels.H_LEGAL], mask.astype(np.float32))
            pick = agent.act({"observation": obs, "action_mask": mask})
            assert np.flatnonzero(f[:, feature_kernels.H_PICK]).tolist() == [pick]
            assert f[pick, feature_kernels.H_GAP] == 0.0 or f[pick, feature_kernels.H_SCORED] == 0.0
            assert (
                (f[:, feature_kernels.H_GAP] >= -feature_kernels.GAP_CLIP) & (f[:, feature_kernels.H_GAP] <= 0)
            ).all()
            assert not f[~mask.astype(bool)].any()


def test_built_meld_phase_position_exact_values():
    """A built meld-phase position (RULES §4.3-4.4): the meld books its value (§5.1), the
    discards carry the kernel's weights and dangers, the best discard's gap is 0 without a lay."""
    rules = make_rules("treppenromme")
    for state in deal_states("treppenromme", 2, 1, greedy=True):
        mask = state.legal_mask()
        if mask[MELD_BASE:LAYOFF_BASE].any() and mask[DISCARD_BASE:].any():
            break
    else:
        pytest.fail("no meld-phase position with a meld and a discard")
    f = heuristic_features(encode(state, state.current), mask, rules)
    values = meld_values(rules)
    for a in np.flatnonzero(mask[MELD_BASE:LAYOFF_BASE]) + MELD_BASE:
        assert f[a, feature_kernels.H_BOOKED] == np.float32(values[a - MELD_BASE] / feature_kernels.SCORE_SCALE)
        assert f[a, feature_kernels.H_SCORED] == 1.0
    discards = np.flatnonzero(mask[DISCARD_BASE:]) + DISCARD_BASE
    assert (f[discards, feature_kernels.H_WEIGHT] > 0).all()
    assert (f[discards, feature_kernels.H_BOOKED] == 0).all() and (f[discards, feature_kernels.H_USED] == 0).all()
    keys = f[discards, feature_kernels.H_WEIGHT] - f[discards, feature_kernels.H_DANGER]
    best = discards[np.argmax(keys)]
    gaps = f[discards, feature_kernels.H_GAP]
    assert gaps[np.argmax(keys)] == gaps.max()
    assert f[best, feature_kernels.H_SCORE] != 0.0


def test_draw_phase_takes_are_scored_as_greedy_ranks_them():
    """In draw positions (RULES §4.1-4.2) the stock is always scored; a take's plan uses a share
    of the taken cards in [0, 1], and the draw with gap 0 that greedy picks is the stock or the
    take greedy plays."""
    seen = 0
    for seed in range(3):
        for state in deal_states("treppenromme", 2, seed, greedy=True):
            mask = state.legal_mask()
            if mask[MELD_BASE:].any() or not mask[0]:
                continue
            f = heuristic_features(encode(state, state.current), mask, "treppenromme")
            assert f[0, feature_kernels.H_SCORED] == 1.0 and f[0, feature_kernels.H_USED] == 0.0
            takes = np.flatnonzero(mask[1:MELD_BASE]) + 1
            assert ((f[takes, feature_kernels.H_USED] >= 0) & (f[takes, feature_kernels.H_USED] <= 1)).all()
            assert (f[takes, feature_kernels.H_USED][f[takes, feature_kernels.H_SCORED] == 0] == 0).all()
            seen += 1
    assert seen > 20


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match=r"must be \(B, 969\) and \(B, 898\)"):
        heuristic_features(np.zeros((2, 969)), np.zeros((3, 898)))
    with pytest.raises(ValueError, match="a rules row has shape"):
        rules_row(np.zeros(3))
