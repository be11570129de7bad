"""Models saved by treppen 0.1, before the package rename (agents, train, ... became
treppen.agents, treppen.train, ...), still load and play the same actions (issue: a wheel that
works outside a clone). The fixture is written by tests/fixtures/make_legacy_model.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from treppen import agents
from treppen.agents.policy import legacy_classes

pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_a_model_saved_before_the_rename_loads_and_plays_the_same_actions() -> None:
    recorded = json.loads((FIXTURES / "legacy_model_actions.json").read_text())
    agent = agents.load(FIXTURES / "legacy_model.zip")
    played = [
        agent.act(
            {
                "observation": np.asarray(p["observation"], np.float32),
                "action_mask": np.asarray(p["action_mask"], np.int8),
            }
        )
        for p in recorded["positions"]
    ]
    assert played == recorded["actions"]
    assert len(set(played)) > 5  # the positions ask for draws, takes and discards alike


def test_only_the_old_module_names_are_mapped(tmp_path: Path) -> None:
    classes = legacy_classes(FIXTURES / "legacy_model.zip")
    assert list(classes) == ["policy_class"]
    assert classes["policy_class"].__module__ == "treppen.train.sb3.policy_net"
    agents.load(FIXTURES / "legacy_model.zip").model.save(tmp_path / "resaved.zip")
    assert legacy_classes(tmp_path / "resaved.zip") == {}  # saved today: nothing to map
