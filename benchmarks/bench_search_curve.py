"""Search strength against its budget: Elo over greedy at several playout budgets (a benchmark, not a test).

Usage::

    python benchmarks/bench_search_curve.py --agent rollout --budgets 250 500 1000 2000 \\
        --settings treppenromme:2 treppenromme:4 --decks 100 --workers 2

For every setting (rules preset x players) and budget it plays a duplicate tournament of
``AGENT,playouts=BUDGET`` against greedy with the project's tournament code
(:func:`treppen.arena.tournament.run_tournament`; at a table of more than 2 seats the other seats are
copies of greedy) and rates it (:func:`treppen.arena.ratings.fit_ratings`, greedy = 0 Elo, 95% bootstrap
intervals over decks). Each budget's CPU seconds per decision come from
:func:`bench_search.measure` (mid-deal positions of the same setting). Under ``--out`` it writes
one tournament folder per point (a rerun resumes them), ``curve.json`` (atomically), ``curve.md``
(a table per setting) and ``curve.png`` (Elo against seconds per decision, log scale).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search import measure

from treppen.arena.plots import save_figure
from treppen.arena.scale import interval_text, rating_text
from treppen.arena.strength import rate_against
from treppen_env.files import atomic_write_text

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "runs" / "bench" / "search_curve"


def point(agent: str, budget: int, rules: str, players: int, decks: int, workers: int, out: Path) -> dict:
    """One budget's tournament against greedy: the searcher's Elo, interval, score and LOS."""
    found = rate_against(f"{agent},playouts={budget}", "greedy", players, rules, decks, 0, workers, out, progress=True)
    return {
        "playouts": budget,
        "elo": found.elo,
        "ci": [found.low, found.high],
        "score_vs_greedy": found.score,
        "los_vs_greedy": found.likelihood,
        "decks": found.decks,
    }


def table(setting: dict) -> str:
    """A Markdown table of one setting's curve."""
    lines = [
        f"**{setting['rules']}, {setting['players']} players** "
        f"(Elo against greedy, {setting['decks']} duplicate decks)",
        "",
        "| playouts | CPU s per decision | Elo | 95% interval | score vs greedy | P(stronger) |",
        "|---|---|---|---|---|---|",
    ]
    for p in setting["points"]:
        ci = interval_text(*p["ci"])
        lines.append(
            f"| {p['playouts']} | {p['cpu_s']:.3f} | {p['elo']:+.0f} | {ci} | "
            f"{p['score_vs_greedy']:.3f} | {p['los_vs_greedy']:.2f} |"
        )
    return "\n".join(lines)


def plot(doc: dict, path: Path) -> None:
    """Elo against CPU seconds per decision (log scale), one line per setting of ``curve.json``."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for s in doc["settings"]:
        x = [p["cpu_s"] for p in s["points"]]
        y = [p["elo"] for p in s["points"]]
        err = [[p["elo"] - p["ci"][0] for p in s["points"]], [p["ci"][1] - p["elo"] for p in s["points"]]]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=f"{s['rules']}, {s['players']} players")
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("CPU seconds per decision")
    ax.set_ylabel("Elo against greedy (95% interval)")
    ax.set_title(f"{doc['agent']}: strength against budget")
    ax.legend()
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", default="rollout", help="search agent spec without a budget")
    parser.add_argument("--budgets", type=int, nargs="+", default=[250, 500, 1000, 2000], help="playouts")
    parser.add_argument("--settings", nargs="+", default=["treppenromme:2", "treppenromme:4"], help="RULES:PLAYERS")
    parser.add_argument("--decks", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--positions", type=int, default=20, help="mid-deal positions timed per setting")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    settings = []
    for item in args.settings:
        rules, players = item.split(":")
        timing = measure(rules, int(players), args.positions, args.budgets, seed=0)
        per_decision = timing["cpu_s_per_decision"][args.agent.split(",")[0]]
        points = []
        for budget in args.budgets:
            folder = args.out / f"{rules}_{players}p_{budget}"
            p = point(args.agent, budget, rules, int(players), args.decks, args.workers, folder)
            points.append(p | {"cpu_s": per_decision[str(budget)]})
            print(f"{item} playouts={budget}: {rating_text(p['elo'], *p['ci'])} Elo vs greedy")
        settings.append({"rules": rules, "players": int(players), "decks": args.decks, "points": points})
    doc = {"agent": args.agent, "settings": settings}
    atomic_write_text(args.out / "curve.json", json.dumps(doc, indent=2) + "\n")
    atomic_write_text(args.out / "curve.md", "\n\n".join(table(s) for s in settings) + "\n")
    plot(doc, args.out / "curve.png")
    print(f"results in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
