"""The lines that end every backend's run, checked alike in each backend's tests."""

from __future__ import annotations

import re
from pathlib import Path


def assert_run_end(out: str, run: Path, decks: int, steps: int | None = None) -> list[str]:
    """Assert that ``out``, a run's standard output, ends as every run does: the Elo of the final
    model on greedy = 0 over ``decks`` duplicate decks, the wall time for ``steps`` steps (any number
    when ``None``), and the next commands for the default table (two players, Treppenromme).

    :returns: the lines from the Elo header on.
    """
    end = out[out.index("Elo of the final model") :].splitlines()
    assert end[0] == f"Elo of the final model, greedy = 0, {decks} duplicate decks ({run / 'elo.jsonl'}):"
    count = r"\d+" if steps is None else str(steps)
    assert re.fullmatch(rf"total time: \d+ min \d+ s for {count} steps \(training and evaluations\)", end[-4]), end[-4]
    assert end[-3:] == [
        "next:",
        f"  play against it:   treppen play --opponents {run} --rules treppenromme",
        f"  rate it (greedy = 0) against the zoo:   treppen tournament --agents {run} ppo-2p search-2p greedy "
        "--players 2 --rules treppenromme --decks 100 --workers 2",
    ]
    return end
