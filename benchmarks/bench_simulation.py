"""Simulation speed (a benchmark, not a test): what the compiled core computes for the agents,
per CPU second of this process (``time.process_time``: one core, other load on the machine does
not count), from mid-deal positions (:func:`harness.positions`: 6-30 greedy moves into seeded deals).

Variants (the first word; ``--help`` after it lists its options):

- ``playouts``: greedy and random playouts per CPU second. Each position is sampled once from the
  mover's observation (:func:`treppen_env.determinize.sample_state`), then
  :func:`treppen_env.agent_core.playout_kernels.playouts` plays ``--playouts`` playouts from it, each from a fresh
  redeal of the unseen cards, as flat Monte Carlo search does. A round covers every position; the
  report gives the median of the rounds with its order-statistic interval (about 95% for 9 rounds:
  the 2nd-lowest to the 2nd-highest) and the moves a playout takes.
- ``search``: CPU seconds per decision of search agents by spec (default ``rollout`` and
  ``ismcts``; e.g. ``rollout,net=FILE,playout=net`` for playouts with an action net at every seat)
  at given playout budgets (whole ``agent.act`` calls, CPU time of this thread, after one untimed
  decision that loads the kernels), playouts per CPU second and the playouts that fit 0.25 s and
  1 s of CPU per decision.
- ``greedy``: CPU time of one :meth:`treppen.agents.GreedyAgent.act` (``--agent planner``: of
  :meth:`treppen.agents.PlannerAgent.act`) from an observation: the
  mean of ``--repeats`` calls per position after an untimed one; median over the positions with
  its distribution-free 95% interval, p90 and mean with bootstrap 95% intervals (2,000 resamples
  of the positions), in microseconds. With ``--baseline REV`` the ``GreedyAgent`` of
  ``agents/greedy.py`` at git revision ``REV`` (e.g. the pure-Python one, ``c15ef54``) is timed in
  the same run, the two alternating position by position, with the ratio baseline / current.
- ``net``: the kernels' network's cost per evaluation in microseconds: hidden units, the policy's
  logits of the legal actions and the value, at the layer shapes the configs use (target: 20 µs or
  less, so that a playout stays cheap).
- ``compile``: wall and CPU seconds from a fresh interpreter to a dealt state, its legal mask, one
  action and one observation of each preset: with an empty kernel cache (``NUMBA_CACHE_DIR`` a new
  folder: the first call after an install compiles those kernels) and again in a later process
  that loads the cache.

Usage: ``python benchmarks/bench_simulation.py VARIANT [options]``, e.g. ``playouts --players 2 4``,
``search --budgets 250 2000``, ``search --agents rollout rollout,net=FILE,playout=net``,
``greedy --baseline c15ef54``, ``net``, ``compile``. Each writes
``benchmarks/results/bench_simulation_<variant>.json``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
from harness import RESULTS, conditions, median_interval, observe, positions, rounds_of, run_variant, write

from treppen import agents
from treppen.agents import GreedyAgent
from treppen_env import raw_env
from treppen_env.agent_core import greedy_kernels, plan_value, playout_kernels, policy_value_kernels
from treppen_env.core.cache import kernel
from treppen_env.determinize import sample_state

#: The search agents the ``search`` variant times by default.
SEARCHERS = ["rollout", "ismcts"]


def parser_for(variant: str, description: str) -> argparse.ArgumentParser:
    """A variant's parser with the options every variant of this script shares."""
    parser = argparse.ArgumentParser(prog=f"bench_simulation {variant}", description=description)
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4], help="table sizes")
    parser.add_argument("--rules", default="treppenromme", help="rules preset")
    parser.add_argument("--seed", type=int, default=0, help="seed of the positions")
    parser.add_argument("--out", type=Path, default=RESULTS / f"bench_simulation_{variant}.json", help="JSON results")
    return parser


# --- playouts


def playout_rates(rules: str, players: int, count: int, rounds: int, playouts: int, policy: str, seed: int) -> dict:
    """Playouts per CPU second over ``rounds`` rounds (median, interval, all rounds), and moves per playout."""
    rng = np.random.default_rng(seed)
    samples = [sample_state(observe(s), rules, rng) for s in positions(rules, players, count, seed)]
    playout = playout_kernels.Playout(
        policies=playout_kernels.seat_policies(policy, players),
        settings=greedy_kernels.settings_row(),
        values=plan_value.values_row(),
    )
    points = np.zeros((playouts, players), dtype=np.int64)
    moves = [0]
    round_seed = iter(range(1, rounds + 2))

    def one_round() -> int:
        seed = next(round_seed)
        moves[0] = 0
        for k, s in enumerate(samples):
            moves[0] += playout_kernels.playouts(
                s.arrays(), s.tables.tab, s.tables.meld_bits, 0, playout, seed * 1000 + k, points
            )
        return len(samples) * playouts

    one_round()  # load (or compile) the kernels before timing
    return rounds_of(one_round, rounds) | {"moves_per_playout": moves[0] / (len(samples) * playouts)}


def playouts_main(argv: Sequence[str] | None = None) -> int:
    parser = parser_for("playouts", "compiled greedy and random playouts from mid-deal per CPU second")
    parser.add_argument("--positions", type=int, default=40, help="mid-deal positions per table size")
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds over all positions")
    parser.add_argument("--playouts", type=int, default=200, help="playouts per position and round")
    args = parser.parse_args(argv)
    before = conditions()
    runs = []
    for players in args.players:
        for policy in ("greedy", "random"):
            r = playout_rates(args.rules, players, args.positions, args.rounds, args.playouts, policy, args.seed)
            runs.append({"rules": args.rules, "players": players, "policy": policy, "playouts_per_cpu_s": r})
            print(
                f"{players}p {args.rules} {policy}: {r['median']:,.0f} playouts per CPU s "
                f"[{r['low']:,.0f}, {r['high']:,.0f}], {r['moves_per_playout']:.0f} moves a playout"
            )
    write(args.out, {"settings": vars(args) | {"out": str(args.out)}, "results": runs}, before)
    return 0


# --- search


def search_seconds(rules: str, players: int, count: int, specs: list[str], budgets: list[int], seed: int) -> dict:
    """Mean CPU seconds per decision of each search agent (by spec) and budget over the positions."""
    observations = [observe(s) for s in positions(rules, players, count, seed)]
    per_decision: dict[str, dict[str, float]] = {}
    for spec in specs:
        agents.load(f"{spec},playouts=2", seed=seed, rules=rules).act(observations[0])  # load the kernels
        per_decision[spec] = {}
        for budget in budgets:
            agent = agents.load(f"{spec},playouts={budget}", seed=seed, rules=rules)
            spent, searched = 0.0, 0
            for obs in observations:
                start = time.thread_time()
                agent.act(obs)
                if agent.simulations:
                    spent += time.thread_time() - start
                    searched += 1
            per_decision[spec][str(budget)] = spent / max(searched, 1)
    rates = {spec: max(budgets) / per_decision[spec][str(max(budgets))] for spec in specs}
    return {
        "rules": rules,
        "players": players,
        "positions": len(observations),
        "cpu_s_per_decision": per_decision,
        "playouts_per_cpu_s": rates,
        "playouts_for_cpu_s": {spec: {"0.25": int(0.25 * r), "1.0": int(r)} for spec, r in rates.items()},
    }


def search_main(argv: Sequence[str] | None = None) -> int:
    parser = parser_for("search", "CPU seconds per search decision at given playout budgets")
    parser.add_argument("--positions", type=int, default=20, help="mid-deal positions per table size")
    parser.add_argument("--budgets", type=int, nargs="+", default=[250, 500, 1000, 2000, 4000], help="playouts")
    parser.add_argument("--agents", nargs="+", default=SEARCHERS, metavar="SPEC", help="search agents by spec")
    args = parser.parse_args(argv)
    before = conditions()
    runs = [search_seconds(args.rules, p, args.positions, args.agents, args.budgets, args.seed) for p in args.players]
    for r in runs:
        for name, by_budget in r["cpu_s_per_decision"].items():
            times = ", ".join(f"{b}: {s:.3f} s" for b, s in by_budget.items())
            print(f"{r['players']}p {r['rules']} {name}: CPU s per decision by playouts {times}")
            fits = r["playouts_for_cpu_s"][name]
            print(f"  {r['playouts_per_cpu_s'][name]:.0f} playouts/CPU-s; for 0.25 s / 1 s: {fits}")
    write(args.out, {"results": runs}, before)
    return 0


# --- greedy


def baseline_agent_class(rev: str) -> type:
    """``GreedyAgent`` of ``agents/greedy.py`` at git revision ``rev``, loaded as its own module."""
    root = Path(__file__).resolve().parent.parent
    source = subprocess.check_output(["git", "show", f"{rev}:agents/greedy.py"], cwd=root, text=True)
    module = types.ModuleType("greedy_baseline")
    module.__file__ = f"{rev}:agents/greedy.py"
    sys.modules[module.__name__] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module.GreedyAgent


def cpu_per_call(agent: object, obs: dict, repeats: int) -> float:
    """Mean CPU seconds of ``agent.act(obs)`` over ``repeats`` calls, after one untimed call."""
    act = agent.act  # type: ignore[attr-defined]
    act(obs)
    cpu = time.process_time()
    for _ in range(repeats):
        act(obs)
    return (time.process_time() - cpu) / repeats


def greedy_times(args: argparse.Namespace, baseline: type | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Mean CPU seconds of ``act`` at each position (table sizes in order), of the current agent
    and of ``baseline`` (alternating which goes first), or ``None`` without one."""
    out, base = [], []
    for p in args.players:
        agent = agents.load(args.agent, rules=args.rules)
        other = None if baseline is None else baseline(rules=args.rules)
        for i, state in enumerate(positions(args.rules, p, args.positions, args.seed)):
            obs = observe(state)
            first, second = (agent, other) if i % 2 else (other, agent)
            for who in (first, second):
                if who is not None:
                    (out if who is agent else base).append(cpu_per_call(who, obs, args.repeats))
    return np.asarray(out), None if baseline is None else np.asarray(base)


def summary(times: np.ndarray, seed: int = 0, resamples: int = 2000) -> dict[str, dict[str, float]]:
    """Median (order-statistic 95% interval), p90 and mean (bootstrap 95% intervals) of ``times``,
    in microseconds."""
    rng = np.random.default_rng(seed)
    boot = times[rng.integers(times.size, size=(resamples, times.size))]
    median, lo, hi = median_interval(times.tolist())
    out = {"median": {"us": median * 1e6, "ci95_us": [lo * 1e6, hi * 1e6]}}
    for name, fn in {"p90": lambda x: np.percentile(x, 90, axis=-1), "mean": lambda x: np.mean(x, axis=-1)}.items():
        lo, hi = np.percentile(fn(boot), [2.5, 97.5])
        out[name] = {"us": float(fn(times)) * 1e6, "ci95_us": [float(lo) * 1e6, float(hi) * 1e6]}
    return out


def greedy_main(argv: Sequence[str] | None = None) -> int:
    parser = parser_for("greedy", "CPU time of one GreedyAgent.act (or PlannerAgent.act) from an observation")
    parser.add_argument("--agent", default="greedy", choices=["greedy", "planner"], help="the heuristic timed")
    parser.add_argument("--positions", type=int, default=100, help="mid-deal positions per table size")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per position")
    parser.add_argument("--label", default="", help="free text stored with the results")
    parser.add_argument("--baseline", default=None, help="git revision whose GreedyAgent is timed too")
    args = parser.parse_args(argv)
    before = conditions()
    times, base = greedy_times(args, None if args.baseline is None else baseline_agent_class(args.baseline))
    doc: dict = {"label": args.label, "agent": args.agent, "rules": args.rules, "players": args.players,
                 "positions": int(times.size), "repeats": args.repeats, "act_cpu": summary(times),
                 "per_position_us": [round(float(t) * 1e6, 3) for t in times]}  # fmt: skip
    for name, s in doc["act_cpu"].items():
        print(f"act {name}: {s['us']:.1f} us (95% CI {s['ci95_us'][0]:.1f}-{s['ci95_us'][1]:.1f})")
    if base is not None:
        ratio, lo, hi = median_interval((base / times).tolist())
        doc["baseline"] = {"rev": args.baseline, "act_cpu": summary(base),
                           "per_position_us": [round(float(t) * 1e6, 3) for t in base],
                           "ratio_of_medians": float(np.median(base) / np.median(times)),
                           "median_ratio": {"ratio": ratio, "ci95": [lo, hi]}}  # fmt: skip
        print(
            f"baseline {args.baseline} / current: ratio of medians {doc['baseline']['ratio_of_medians']:.1f}, "
            f"median per-position ratio {ratio:.1f} (95% CI {lo:.1f}-{hi:.1f})"
        )
    write(args.out, doc, before)
    return 0


# --- net


NET_SHAPES = ((32, 1), (64, 1), (64, 2))


class Positions(NamedTuple):
    """The positions the net is timed on (a kernel bundle)."""

    #: float32 (P, 969) observations and int8 (P, 898) their legal masks.
    obs: np.ndarray
    masks: np.ndarray
    #: uint64 (P, U64_SIZE): each position's card bitsets, and int64 (P,) its seat to move.
    u64s: np.ndarray
    seats: np.ndarray


class NetWork(NamedTuple):
    """The arrays one evaluation works in (a kernel bundle)."""

    #: float32 (H,): the hidden units, and the scratch of deeper layers.
    hidden: np.ndarray
    spare: np.ndarray
    #: float64 (898,): the legal logits.
    logits: np.ndarray


@kernel
def evaluate_all(w: np.ndarray, shape: np.ndarray, data: Positions, repeats: int, work: NetWork) -> float:
    """Every position's hidden units, legal logits and value, ``repeats`` times; their sum
    (``w``, ``shape``: the net, :mod:`treppen_env.agent_core.policy_value_kernels`)."""
    total = 0.0
    for _ in range(repeats):
        for i in range(data.obs.shape[0]):
            policy_value_kernels.hidden_units(w, shape, data.obs[i], work.hidden, work.spare)
            policy_value_kernels.policy_logits(w, shape, work.hidden, data.masks[i], work.logits)
            total += policy_value_kernels.value(w, shape, work.hidden, data.u64s[i], data.seats[i], 2)
    return total


def net_main(argv: Sequence[str] | None = None) -> int:
    import torch

    from treppen.train.expert.policy_value_torch import KernelNet

    parser = parser_for("net", "the kernels' network's cost per evaluation")
    parser.add_argument("--positions", type=int, default=200, help="positions of greedy 2-player play")
    parser.add_argument("--repeats", type=int, default=50, help="evaluations of each position")
    args = parser.parse_args(argv)
    before = conditions()
    obs, masks, u64s, seats, seed = [], [], [], [], 0
    while len(obs) < args.positions:
        env = raw_env(num_players=2)
        env.reset(seed=seed)
        greedy = GreedyAgent()
        while not env.game.deal_over and len(obs) < args.positions:
            o = env.observe(env.agent_selection)
            obs.append(o["observation"])
            masks.append(o["action_mask"])
            u64s.append(env.game.arrays().u64.copy())
            seats.append(env.game.current)
            env.step(greedy.act(o))
        seed += 1
    data = Positions(
        obs=np.stack(obs), masks=np.stack(masks), u64s=np.stack(u64s), seats=np.array(seats, dtype=np.int64)
    )
    results = {}
    for hidden, depth in NET_SHAPES:
        torch.manual_seed(0)
        w, shape = KernelNet(hidden, depth).export()
        work = NetWork(
            hidden=np.zeros(hidden, np.float32),
            spare=np.zeros(hidden, np.float32),
            logits=np.zeros(policy_value_kernels.NUM_ACTIONS),
        )
        evaluate_all(w, shape, data, 1, work)  # compile
        start = time.process_time()
        evaluate_all(w, shape, data, args.repeats, work)
        micros = (time.process_time() - start) / (args.repeats * args.positions) * 1e6
        results[f"H={hidden}, depth={depth}"] = micros
        print(f"H={hidden}, depth {depth}: {micros:.2f} µs per evaluation (hidden units, legal logits, value)")
    write(args.out, {"us_per_evaluation": results}, before)
    return 0


# --- compile


#: The fresh process: imports, then a deal, its mask, one action and one observation of each preset;
#: it prints its wall and CPU seconds.
_FIRST_CALL = """
import time
start, cpu = time.perf_counter(), time.process_time()
import numpy as np
from treppen_env.engine import GameState
from treppen_env.observation import encode
from treppen_env.rules import make_rules
for preset in ("treppenromme", "rum500"):
    state = GameState(make_rules(preset), 2, np.random.default_rng(0))
    state.deal(0)
    state.apply(int(np.flatnonzero(state.legal_mask())[0]))
    encode(state, 0)
print(time.perf_counter() - start, time.process_time() - cpu)
"""


def compile_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_simulation compile", description="seconds to the first action")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_simulation_compile.json", help="JSON results")
    args = parser.parse_args(argv)
    before = conditions()
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for name in ("fresh_cache", "later_process"):
            done = subprocess.run([sys.executable, "-c", _FIRST_CALL], env=env, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(done.stderr)
            wall, cpu = map(float, done.stdout.split())
            out[name] = {"wall_s": wall, "cpu_s": cpu}
            print(f"first action, {name.replace('_', ' ')}: {cpu:.2f} CPU s ({wall:.2f} s wall)")
    write(args.out, {"first_call_s": out}, before)
    return 0


VARIANTS = {
    "playouts": playouts_main,
    "search": search_main,
    "greedy": greedy_main,
    "net": net_main,
    "compile": compile_main,
}

if __name__ == "__main__":
    raise SystemExit(run_variant(VARIANTS))
