"""The compiled engine against recorded behaviour: 72 seeded deals (2-4 players, both presets,
reshuffles and the turn cap) digested step by step (masks, actions, every seat's observation,
outcome and points), recorded from the pure-Python engine before the compiled core."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.treppen_env.golden_play import CASES, digest

GOLDEN = json.loads((Path(__file__).parents[1] / "fixtures" / "engine_golden.json").read_text())


def test_the_golden_file_covers_every_case() -> None:
    assert [tuple(g["case"]) for g in GOLDEN] == [tuple(c) for c in CASES]
    assert {g["outcome"] for g in GOLDEN} >= {"went_out", "stock_exhausted", "max_turns"}


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda g: "-".join(map(str, g["case"][:2] + g["case"][3:])))
def test_a_seeded_deal_plays_as_recorded(golden: dict) -> None:
    preset, players, options, seed = golden["case"]
    assert digest(preset, players, options, seed) == golden
