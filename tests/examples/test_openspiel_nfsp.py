"""The OpenSpiel NFSP example (examples/openspiel_nfsp.py) trains and rates with tiny flags."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("pyspiel")
pytest.importorskip("tree")  # dm-tree, which OpenSpiel's pytorch NFSP imports

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openspiel_nfsp.py"


def test_the_example_trains_and_rates_against_greedy() -> None:
    spec = importlib.util.spec_from_file_location("openspiel_nfsp", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(["--minutes", "0.01", "--decks", "1", "--hidden", "8"])
    assert set(result) == {"deals_trained", "train_seconds", "rate_seconds", "elo_vs_greedy", "score_vs_greedy"}
    assert result["deals_trained"] >= 1 and 4 * result["score_vs_greedy"] in {0, 1, 2, 3, 4}  # 2 deals
