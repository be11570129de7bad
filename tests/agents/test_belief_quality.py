"""The measures of beliefs' quality (treppen/agents/belief_quality.py): reliability tables and their
error on built predictions, log-loss, and the watched deals' invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest

from treppen.agents.belief_quality import calibration, log_loss, watch_deals


def test_a_reliability_table_groups_predictions_by_bin():
    p = np.array([0.05, 0.15, 0.15, 0.95, 1.0])
    truth = np.array([False, True, False, True, True])
    table = calibration(p, truth, bins=10)
    assert table.counts.tolist() == [1, 2, 0, 0, 0, 0, 0, 0, 0, 2]  # 1.0 falls in the last bin
    assert table.predicted[[0, 1, 9]].tolist() == pytest.approx([0.05, 0.15, 0.975])
    assert table.observed[[0, 1, 9]].tolist() == [0.0, 0.5, 1.0]
    assert math.isnan(table.predicted[2]) and math.isnan(table.observed[2])
    assert table.error == pytest.approx((0.05 + 2 * 0.35 + 2 * 0.025) / 5)


def test_a_calibrated_prediction_has_no_error():
    truth = np.array([True, False, False, False])
    assert calibration(np.full(4, 0.25), truth).error == 0.0
    assert log_loss(np.full(4, 0.25), truth) == pytest.approx(-(math.log(0.25) + 3 * math.log(0.75)) / 4)


@pytest.mark.parametrize(
    ("p", "truth", "bins", "message"),
    [
        ([0.5], [True, False], 10, "one equal length"),
        ([], [], 10, "one equal length"),
        ([[0.5]], [True], 10, "one equal length"),
        ([0.5], [1], 10, "must be bool"),
        ([1.5], [True], 10, r"in \[0, 1\]"),
        ([np.nan], [True], 10, r"in \[0, 1\]"),
        ([0.5], [True], 0, "bins=0 must be a whole number"),
        ([0.5], [True], 2.5, "bins=2.5 must be a whole number"),
    ],
)
def test_reliability_tables_and_log_loss_refuse_bad_input(p, truth, bins, message):
    with pytest.raises(ValueError, match=message):
        calibration(np.array(p), np.array(truth), bins)
    if "bins" not in message:
        with pytest.raises(ValueError, match=message):
            log_loss(np.array(p), np.array(truth))


def test_watched_turns_give_the_opponents_hand_its_size_and_repeat_under_a_seed():
    turns = watch_deals(1, seed=41)
    again = watch_deals(1, seed=41)
    assert len(turns) == len(again) == 10 and [t.turn for t in turns] == list(range(10))
    for turn, same in zip(turns, again, strict=True):
        held = int(turn.in_hand.sum())
        assert turn.predicted["uniform"].sum() == pytest.approx(held)  # both deal the hand as many cards
        assert turn.predicted["net"].sum() == pytest.approx(held, abs=1e-6)
        assert ((turn.predicted["net"] > 0) & (turn.predicted["net"] < 1)).all()
        assert np.array_equal(turn.predicted["net"], same.predicted["net"])
    assert watch_deals(0, seed=41) == []
    for bad in ({"deals": -1}, {"deals": 1.5}, {"seed": None}, {"greedy_samples": 1.5}):
        with pytest.raises(ValueError, match=f"{next(iter(bad))}=.* must be a whole number of 0 or more"):
            watch_deals(**{"deals": 1, "seed": 41, **bad})
