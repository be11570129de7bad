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


def recorded_and_played(model: Path) -> tuple[list[int], list[int]]:
    """The fixture's recorded actions, and those the model at ``model`` plays on its positions."""
    recorded = json.loads((FIXTURES / "legacy_model_actions.json").read_text())
    agent = agents.load(model)
    played = [
        agent.act(
            {
                "observation": np.asarray(p["observation"], np.float32),
                "action_mask": np.asarray(p["action_mask"], np.int8),
            }
        )
        for p in recorded["positions"]
    ]
    return recorded["actions"], played


def test_a_model_saved_before_the_rename_loads_and_plays_the_same_actions() -> None:
    recorded, played = recorded_and_played(FIXTURES / "legacy_model.zip")
    assert played == recorded
    assert len(set(played)) > 5  # the positions ask for draws, takes and discards alike


def test_only_the_old_module_names_are_mapped(tmp_path: Path) -> None:
    classes = legacy_classes(FIXTURES / "legacy_model.zip")
    assert list(classes) == ["policy_class"]
    assert classes["policy_class"].__module__ == "treppen.train.sb3.policy_net"
    agents.load(FIXTURES / "legacy_model.zip").model.save(tmp_path / "resaved.zip")
    assert legacy_classes(tmp_path / "resaved.zip") == {}  # saved today: nothing to map


def test_a_model_saved_before_train_had_a_package_per_backend_loads(tmp_path: Path, monkeypatch) -> None:
    # treppen 0.2 pickled the policy class as treppen.train.policy_net.ActionFeaturePolicy (today
    # it is treppen.train.sb3.policy_net): a saved model whose data names the old module
    import base64
    import pickle
    import sys
    import types
    import zipfile

    from treppen.train.sb3.policy_net import ActionFeaturePolicy

    agents.load(FIXTURES / "legacy_model.zip").model.save(tmp_path / "today.zip")
    old_module = types.ModuleType("treppen.train.policy_net")
    old_class = type("ActionFeaturePolicy", (), {"__module__": old_module.__name__})
    old_module.ActionFeaturePolicy = old_class  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, old_module.__name__, old_module)
    payload = pickle.dumps(old_class)  # a reference by module and name, as SB3's cloudpickle writes one
    monkeypatch.delitem(sys.modules, old_module.__name__)
    with zipfile.ZipFile(tmp_path / "today.zip") as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    data["policy_class"][":serialized:"] = base64.b64encode(payload).decode()
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(tmp_path / "before.zip", "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    assert legacy_classes(tmp_path / "before.zip") == {"policy_class": ActionFeaturePolicy}
    recorded, played = recorded_and_played(tmp_path / "before.zip")
    assert played == recorded
