"""What the benchmark scripts share (not a benchmark itself): variants by name, timed rounds with
their median and interval, mid-deal positions, and result files with the run's conditions.

Every script answers one question and names its variants as a first word
(``python benchmarks/bench_simulation.py playouts --players 2``); ``--help`` after the variant gives
its options. Results go, as JSON written atomically, to ``benchmarks/results/<script>[_<variant>].json``
(not committed), with the date, the machine and the load average before and after the run.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from treppen.agents import GreedyAgent, RolloutAgent
from treppen.apps.bench import median_interval
from treppen_env.engine import GameState
from treppen_env.files import atomic_write_text
from treppen_env.observation import encode
from treppen_env.rules import make_rules

__all__ = ["RESULTS", "conditions", "median_interval", "observe", "positions", "rounds_of", "run_variant", "write"]

#: Where every benchmark writes its results (ignored by git).
RESULTS = Path(__file__).resolve().parent / "results"

#: A variant's entry point: its own arguments in, an exit status out.
Variant = Callable[[Sequence[str] | None], int]


def run_variant(variants: dict[str, Variant], argv: Sequence[str] | None = None, default: str | None = None) -> int:
    """Run the variant named by the first word of ``argv`` (``sys.argv[1:]`` when ``None``) with the
    rest, or ``default`` with all of ``argv`` when the first word names none.

    :returns: the variant's exit status, or 2 (with the variants listed) when none is named and
        there is no default.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in variants:
        return variants[args[0]](args[1:])
    if default is None:
        print(f"name a variant first: {' | '.join(variants)} (then --help for its options)", file=sys.stderr)
        return 2
    if args[:1] in (["-h"], ["--help"]):
        print(f"variants: {' | '.join(variants)} (default {default}); the default's options:\n")
    return variants[default](args)


def conditions() -> dict[str, Any]:
    """The run's conditions: UTC time, Python, platform, CPUs, the 1/5/15-minute load average and
    whether a trace or profile hook slows every Python call (a no-op ``sys.settrace`` halves
    ``env()``'s decisions per CPU second and leaves the kernels nearly as fast)."""
    return {
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "trace_or_profile_hook": sys.gettrace() is not None or sys.getprofile() is not None,
    }


def write(path: Path | str, doc: dict[str, Any], before: dict[str, Any] | None = None) -> Path:
    """Write ``doc`` with the conditions of the run (``before``: :func:`conditions` at its start;
    the load average at the end is added) as JSON to ``path``, atomically; returns the path."""
    path = Path(path)
    doc = {"conditions": before or conditions(), "load_average_after": conditions()["load_average"], **doc}
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
    print(f"results in {path}")
    return path


def rounds_of(fn: Callable[[], int], rounds: int) -> dict[str, Any]:
    """``fn()`` (which returns a count) run ``rounds`` times, each timed in CPU seconds of this
    process (``time.process_time``): the median count per CPU second, its order-statistic interval
    (:func:`median_interval`) and every round's rate."""
    rates = []
    for _ in range(rounds):
        cpu = time.process_time()
        done = fn()
        rates.append(done / (time.process_time() - cpu))
    median, low, high = median_interval(rates)
    return {"median": median, "low": low, "high": high, "rounds": rates}


def positions(rules_name: str, players: int, count: int, seed: int) -> list[GameState]:
    """``count`` mid-deal positions: 6-30 greedy moves into seeded deals, the deal not over and the
    mover with more than one searched move."""
    rules = make_rules(rules_name)
    greedy = GreedyAgent(rules=rules)
    rng = np.random.default_rng(seed)
    out: list[GameState] = []
    while len(out) < count:
        state = GameState(rules, players, np.random.default_rng(int(rng.integers(2**31))))
        state.deal(int(rng.integers(players)))
        for _ in range(int(rng.integers(6, 31))):
            if state.deal_over:
                break
            state.apply(greedy.act(observe(state)))
        if not state.deal_over and RolloutAgent(rules=rules, playouts=1).analyse(observe(state))[0].playouts:
            out.append(state)
    return out


def observe(state: GameState) -> dict[str, np.ndarray]:
    """The mover's observation dict of ``state`` (``observation`` float32 (969,), ``action_mask``)."""
    return {"observation": encode(state, state.current), "action_mask": state.legal_mask().copy()}
