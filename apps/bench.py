"""Environment throughput: random legal play, decision steps/s and deals/s (not a test).

Every decision reads the observation and the mask as NumPy arrays and picks uniformly among the
legal actions with a seeded ``numpy.random.Generator``:

- treppen: ``env.last()`` then ``np.flatnonzero(obs["action_mask"])``, for the wrapped ``env()``
  and ``raw_env``, over ``agent_iter()`` as PettingZoo users play;
- OpenSpiel ``gin_rummy`` (C++, when ``pyspiel`` is importable), the reference of docs/ARCHITECTURE.md
  "Performance notes", two ways:

  - ``observer``: its fast path, the Observer API (``make_observation(game)``, then
    ``set_from(state, player)`` writing into one NumPy buffer) with
    ``np.asarray(state.legal_actions_mask())``; this is the anchor of the ratios;
  - ``asarray``: ``np.asarray(state.observation_tensor())``, a new array per decision.

  Chance nodes are sampled from ``chance_outcomes()`` and are not counted as decisions.

The measurements are interleaved: ``--rounds`` rounds, in each of which every contender plays
whole deals for its slice (``--seconds`` / ``--rounds``, so a slice may run over by one deal), the
order reversed every other round. On a shared machine the load then falls on all contenders alike,
and the ratio is taken within each round. Reported: medians over the rounds with a distribution-free
confidence interval for the median (order statistics, coverage at least 95% from 6 rounds on; with
fewer it is the range of the rounds). Results are printed as a table and written as JSON
(atomically) to ``--out``.

Usage: ``treppen bench [--seconds 5] [--rounds 10] [--players 2 4] [--out PATH]`` (or
``python benchmarks/bench_env.py single`` with the same arguments).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

import numpy as np

from treppen.apps.options import positive_seconds, seed, whole
from treppen_env.files import atomic_write_text

DEFAULT_OUT = Path("runs") / "bench" / "bench_env.json"
#: The anchor of the ratios: OpenSpiel's fast path (docs/ARCHITECTURE.md "Performance notes").
ANCHOR = "open_spiel observer"
OPEN_SPIEL_MODES = ("observer", "asarray")

#: Plays one whole deal (or game) and returns the decisions taken.
PlayOne = Callable[[], int]


def treppen_player(wrapped: bool, num_players: int, rules: str, seed: int) -> PlayOne:
    """Random legal play in treppen's ``env()`` (``wrapped``) or ``raw_env``, one deal per call."""
    import treppen_env

    make = treppen_env.env if wrapped else treppen_env.raw_env
    env = make(num_players=num_players, rules=rules)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    fresh = [True]

    def play_one() -> int:
        if not fresh[0]:
            env.reset()
        fresh[0] = False
        steps = 0
        for _ in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[rng.integers(len(legal))]))
            steps += 1
        return steps

    return play_one


def open_spiel_player(mode: str, seed: int) -> PlayOne | None:
    """Random legal play in OpenSpiel's ``gin_rummy`` reading the observation the ``mode`` way
    (``"observer"`` or ``"asarray"``, see the module docstring); ``None`` without pyspiel.

    :raises ValueError: for an unknown mode.
    """
    if mode not in OPEN_SPIEL_MODES:
        raise ValueError(f"mode={mode!r}; choose one of {list(OPEN_SPIEL_MODES)}")
    try:
        import pyspiel  # type: ignore[import-not-found, import-untyped]
        from open_spiel.python.observation import make_observation  # type: ignore[import-not-found, import-untyped]
    except ImportError:
        return None
    game = pyspiel.load_game("gin_rummy")
    observer = make_observation(game)
    rng = np.random.default_rng(seed)

    def play_one() -> int:
        state = game.new_initial_state()
        steps = 0
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(_sample_chance(state.chance_outcomes(), rng.random()))
                continue
            if mode == "observer":
                observer.set_from(state, state.current_player())
            else:
                np.asarray(state.observation_tensor(), dtype=np.float32)
            legal = np.flatnonzero(np.asarray(state.legal_actions_mask()))
            state.apply_action(int(legal[rng.integers(len(legal))]))
            steps += 1
        return steps

    return play_one


def _sample_chance(outcomes: list[tuple[int, float]], u: float) -> int:
    """The outcome whose cumulative probability first exceeds ``u`` (``u`` uniform in [0, 1))."""
    acc = 0.0
    for action, prob in outcomes:
        acc += prob
        if u < acc:
            return action
    return outcomes[-1][0]  # rounding: the probabilities may sum to slightly less than 1


def _play_for(play_one: PlayOne, seconds: float) -> tuple[int, int, float]:
    """Play whole deals until ``seconds`` have passed: (decisions, deals, elapsed seconds)."""
    steps = deals = 0
    start = time.perf_counter()
    while True:
        steps += play_one()
        deals += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps, deals, elapsed


def median_interval(values: Sequence[float], coverage: float = 0.95) -> tuple[float, float, float]:
    """Median of ``values`` and a distribution-free confidence interval for it (order statistics).

    The interval ``(x_(k), x_(n+1-k))`` of the sorted values has coverage
    ``1 - 2 P(Binomial(n, 1/2) < k)``; ``k`` is the largest with coverage at least ``coverage``,
    or 1 (the range) when even the range falls short.

    :raises ValueError: for no values.
    """
    if not values:
        raise ValueError("no values")
    xs = sorted(values)
    n = len(xs)
    k = 1
    while 2 * (k + 1) <= n + 1 and 1 - 2 * _binomial_cdf(n, k) >= coverage:
        k += 1
    return statistics.median(xs), xs[k - 1], xs[n - k]


def _binomial_cdf(n: int, k: int) -> float:
    """P(Binomial(n, 1/2) <= k)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def interleaved(
    contenders: dict[str, PlayOne], seconds: float, rounds: int, log: Callable[[str], None] = print
) -> dict[str, list[tuple[int, int, float]]]:
    """Measure the contenders in ``rounds`` interleaved rounds of ``seconds / rounds`` each.

    :returns: per contender, per round (decisions, deals, elapsed seconds).
    """
    for play_one in contenders.values():
        play_one()  # warm-up, not timed
    names = list(contenders)
    slice_s = seconds / rounds
    out: dict[str, list[tuple[int, int, float]]] = {name: [] for name in names}
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            out[name].append(_play_for(contenders[name], slice_s))
        rates = "  ".join(f"{name} {out[name][-1][0] / out[name][-1][2]:,.0f}" for name in names)
        log(f"round {r + 1:>2}/{rounds}: decisions/s  {rates}")
    return out


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def run_benchmarks(
    seconds: float = 5.0,
    players: Sequence[int] = (2, 4),
    rules: str = "treppenromme",
    seed: int = 0,
    open_spiel: bool = True,
    rounds: int = 10,
    log: Callable[[str], None] = print,
) -> dict:
    """Run the interleaved measurements and return the results (the JSON document of :func:`run`).

    :param seconds: time per contender in all, split over the rounds.
    :param players: player counts to measure treppen with.
    :param rules: treppen rules preset.
    :param seed: seeds the deals and the action choices.
    :param open_spiel: also measure OpenSpiel's ``gin_rummy`` (both ways) when pyspiel is importable.
    :param rounds: interleaved rounds; each figure is the median over them.
    :param log: called with each line of the table.
    :raises ValueError: for a non-positive ``seconds`` or ``rounds``.
    """
    if seconds <= 0 or rounds < 1:
        raise ValueError(f"seconds={seconds} must be positive and rounds={rounds} at least 1")
    contenders: dict[str, PlayOne] = {}
    meta: dict[str, tuple[str, int]] = {}
    for num_players in players:
        for wrapped in (True, False):
            name = f"treppen {'env()' if wrapped else 'raw_env'} {num_players}p"
            contenders[name] = treppen_player(wrapped, num_players, rules, seed)
            meta[name] = (f"treppen {rules}", num_players)
    skipped = []
    if open_spiel:
        for mode in OPEN_SPIEL_MODES:
            play_one = open_spiel_player(mode, seed)
            if play_one is None:
                skipped.append(f"open_spiel {mode}")
                continue
            contenders[f"open_spiel {mode}"] = play_one
            meta[f"open_spiel {mode}"] = ("open_spiel gin_rummy", 2)
    if skipped:
        log(f"skipped (pyspiel is not importable): {', '.join(skipped)}")

    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    raw = interleaved(contenders, seconds, rounds, log)
    header = f"{'contender':<24}{'game':<24}{'players':>8}{'decisions/s':>14}{'interval':>20}{'deals/s':>10}"
    log(f"medians over {rounds} rounds\n{header}\n{'-' * len(header)}")
    results = []
    for name, per_round in raw.items():
        rates = [steps / elapsed for steps, _, elapsed in per_round]
        mid, lo, hi = median_interval(rates)
        steps = sum(s for s, _, _ in per_round)
        deals = sum(d for _, d, _ in per_round)
        elapsed = sum(e for _, _, e in per_round)
        game, num_players = meta[name]
        row = {
            "contender": name,
            "game": game,
            "players": num_players,
            "steps_per_s": mid,
            "steps_per_s_interval": [lo, hi],
            "rounds_steps_per_s": rates,
            "deals_per_s": deals / elapsed,
            "decisions_per_deal": steps / deals,
            "decisions": steps,
            "seconds": round(elapsed, 3),
        }
        results.append(row)
        interval = f"[{lo:,.0f}, {hi:,.0f}]"
        log(f"{name:<24}{game:<24}{num_players:>8}{mid:>14,.0f}{interval:>20}{row['deals_per_s']:>10,.1f}")
    ratios = {}
    two_player = [name for name in raw if name.startswith("treppen") and meta[name][1] == 2]
    for reference in (f"open_spiel {mode}" for mode in OPEN_SPIEL_MODES):
        if reference not in raw:
            continue
        for name in two_player:
            pairs = zip(raw[name], raw[reference], strict=True)
            round_ratios = [(s / e) / (rs / re) for (s, _, e), (rs, _, re) in pairs]
            mid, lo, hi = median_interval(round_ratios)
            key = f"{name.removesuffix(' 2p')} / {reference}"
            ratios[key] = {"median": mid, "interval": [lo, hi], "rounds": round_ratios}
            log(f"ratio decisions/s {key}: {mid:.2f} [{lo:.2f}, {hi:.2f}]")
    return {
        "benchmark": "random legal play, observation and mask read as NumPy at every decision, interleaved rounds",
        "anchor": ANCHOR,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "settings": {"seconds": seconds, "players": list(players), "rules": rules, "seed": seed, "rounds": rounds},
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg() if hasattr(os, "getloadavg") else None,
            "numpy": np.__version__,
            "pettingzoo": _version("pettingzoo"),
            "open_spiel": _version("open_spiel"),
        },
        "results": results,
        "ratios": ratios,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``treppen bench`` (and of ``benchmarks/bench_env.py single``)."""
    parser.add_argument(
        "--seconds",
        type=positive_seconds,
        default=5.0,
        help="time per contender in all, split over the rounds (default 5)",
    )
    parser.add_argument(
        "--rounds", type=whole(1), default=10, help="interleaved rounds; figures are medians over them (default 10)"
    )
    parser.add_argument(
        "--players",
        type=int,
        nargs="+",
        default=[2, 4],
        choices=[2, 3, 4],
        help="treppen player counts (default 2 4)",
    )
    parser.add_argument(
        "--rules",
        default="treppenromme",
        choices=["treppenromme", "rum500"],
        help="treppen rules preset (default treppenromme)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the deals and action choices")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON results (default {DEFAULT_OUT})")
    parser.add_argument(
        "--no-open-spiel", dest="open_spiel", action="store_false", help="skip the OpenSpiel gin_rummy reference"
    )


def run(args: argparse.Namespace) -> int:
    """Run the benchmarks, print the table and write the JSON; returns 0.

    :raises ValueError: for a non-positive ``--seconds`` or ``--rounds``.
    """
    print(
        f"random legal play, {args.seconds:g} s per contender in {args.rounds} interleaved rounds "
        f"({os.cpu_count()} CPUs)",
        flush=True,
    )
    doc = run_benchmarks(
        args.seconds,
        args.players,
        args.rules,
        args.seed,
        args.open_spiel,
        args.rounds,
        log=lambda line: print(line, flush=True),
    )
    atomic_write_text(args.out, json.dumps(doc, indent=2) + "\n")
    print(f"results written to {args.out}")
    return 0
