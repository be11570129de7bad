"""CPU time of one :meth:`treppen.agents.GreedyAgent.act` call from an observation (a benchmark, not a test).

Usage: ``python benchmarks/bench_greedy.py [--positions 100] [--players 2 4] [--repeats 20]
[--rules treppenromme] [--baseline REV] [--out runs/bench/bench_greedy.json]``

The positions are those of ``benchmarks/bench_search.py`` (greedy self-play, 6-30 moves into
seeded deals; by default 100 per table size, 200 in all). Each position's observation dict is
built once; its time is the mean CPU time (``time.process_time``) of ``--repeats`` calls of
``act``, after one untimed call (which also compiles on a cold cache). The report gives the
median over the positions with its distribution-free 95% interval, and p90 and mean with
bootstrap 95% intervals (2,000 resamples of the positions), in microseconds.

With ``--baseline REV`` the ``GreedyAgent`` of ``agents/greedy.py`` at git revision ``REV`` (e.g.
the pure-Python one, ``c15ef54``) is timed in the same run, the two alternating position by
position, and the report adds the ratio baseline / current: of the medians, and the median of
the per-position ratios with its 95% interval. The JSON goes atomically to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
import types
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search import observe, positions

from treppen.agents import GreedyAgent
from treppen.apps.bench import median_interval
from treppen_env.files import atomic_write_text


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


def per_position(
    rules: str, players: list[int], count: int, repeats: int, seed: int, baseline: type | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Mean CPU seconds of ``act`` at each position (table sizes in order), of the current agent
    and of ``baseline`` (alternating which goes first), or ``None`` without one."""
    out, base = [], []
    for p in players:
        agent = GreedyAgent(rules=rules)
        other = None if baseline is None else baseline(rules=rules)
        for i, state in enumerate(positions(rules, p, count, seed)):
            obs = observe(state)
            if other is None:
                out.append(cpu_per_call(agent, obs, repeats))
            elif i % 2:
                out.append(cpu_per_call(agent, obs, repeats))
                base.append(cpu_per_call(other, obs, repeats))
            else:
                base.append(cpu_per_call(other, obs, repeats))
                out.append(cpu_per_call(agent, obs, repeats))
    return np.asarray(out), None if baseline is None else np.asarray(base)


def summary(times: np.ndarray, seed: int = 0, resamples: int = 2000) -> dict[str, dict[str, float]]:
    """Median (order-statistic 95% interval), p90 and mean (bootstrap 95% intervals) of ``times``,
    in microseconds."""
    rng = np.random.default_rng(seed)
    boot = times[rng.integers(times.size, size=(resamples, times.size))]
    stats = {
        "p90": lambda x: np.percentile(x, 90, axis=-1),
        "mean": lambda x: np.mean(x, axis=-1),
    }
    median, lo, hi = median_interval(times.tolist())
    out = {"median": {"us": median * 1e6, "ci95_us": [lo * 1e6, hi * 1e6]}}
    for name, fn in stats.items():
        lo, hi = np.percentile(fn(boot), [2.5, 97.5])
        out[name] = {"us": float(fn(times)) * 1e6, "ci95_us": [float(lo) * 1e6, float(hi) * 1e6]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_greedy", description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=100, help="mid-deal positions per table size")
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4], help="table sizes")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per position")
    parser.add_argument("--rules", default="treppenromme", help="rules preset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="", help="free text stored with the results")
    parser.add_argument("--baseline", default=None, help="git revision whose GreedyAgent is timed too")
    parser.add_argument("--out", default="runs/bench/bench_greedy.json", help="JSON results file")
    args = parser.parse_args(argv)
    baseline = None if args.baseline is None else baseline_agent_class(args.baseline)
    times, base = per_position(args.rules, args.players, args.positions, args.repeats, args.seed, baseline)
    doc = {
        "benchmark": "bench_greedy",
        "label": args.label,
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "rules": args.rules,
        "players": args.players,
        "positions": int(times.size),
        "repeats": args.repeats,
        "act_cpu": summary(times),
        "per_position_us": [round(float(t) * 1e6, 3) for t in times],
    }
    if base is not None:
        ratio, lo, hi = median_interval((base / times).tolist())
        doc["baseline"] = {
            "rev": args.baseline,
            "act_cpu": summary(base),
            "per_position_us": [round(float(t) * 1e6, 3) for t in base],
            "ratio_of_medians": float(np.median(base) / np.median(times)),
            "median_ratio": {"ratio": ratio, "ci95": [lo, hi]},
        }
    atomic_write_text(Path(args.out), json.dumps(doc, indent=2) + "\n")
    for name, s in doc["act_cpu"].items():
        lo, hi = s["ci95_us"]
        print(f"act {name}: {s['us']:.1f} us (95% CI {lo:.1f}-{hi:.1f})")
    if base is not None:
        for name, s in doc["baseline"]["act_cpu"].items():
            lo, hi = s["ci95_us"]
            print(f"baseline {args.baseline} act {name}: {s['us']:.1f} us (95% CI {lo:.1f}-{hi:.1f})")
        r = doc["baseline"]["median_ratio"]
        print(
            f"baseline / current: ratio of medians {doc['baseline']['ratio_of_medians']:.1f}, "
            f"median per-position ratio {r['ratio']:.1f} (95% CI {r['ci95'][0]:.1f}-{r['ci95'][1]:.1f})"
        )
    print(f"{times.size} positions; results in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
