"""Playing strength (a benchmark, not a test): Elo on duplicate decks with the project's tournament
code. Variants (the first word; ``--help`` after it lists its options; without one, ``ladder``):

- ``ladder``: an Elo ladder of random, greedy and given models (below);
- ``curve``: a search agent's Elo against greedy at several playout budgets, beside its CPU seconds
  per decision (:func:`curve`);
- ``learner``: trained models' Elo against greedy beside the CPU minutes that trained them (:func:`learner`);
- ``levers``: search settings rated against one reference on the same decks (:func:`levers`);
- ``peek``: the ceiling better beliefs could reach, a searcher shown hidden cards (:func:`peek`);
- ``beliefs``: the search with learned beliefs head to head against today's, at equal CPU time (:func:`beliefs`);
- ``zoo``: each shipped zoo agent's first action in a fresh process, and its Elo played again (:func:`zoo`).

Results go under ``benchmarks/results/`` (``strength/``, ``search_curve/``, ``learner_curve/``, ``levers/``,
``bench_strength_peek.json``, ``beliefs/``, ``bench_strength_zoo.json``).

``ladder``: for every setting (rules preset x players) it plays a duplicate tournament with the project's
tournament code (:func:`treppen.arena.tournament.run_tournament`: every deck replayed in every seat
rotation at every table), rates it (:func:`treppen.arena.ratings.fit_ratings`, greedy = 0 Elo, 95% bootstrap
intervals over decks) and writes, under ``--out``:

- ``<rules>_<players>p/``: the tournament's ``results.jsonl`` (rerunning resumes), ``ratings.csv``,
  ``ratings.json``, ``elo.png`` and ``pairwise.png``;
- ``ladder.md``: one table per setting (Elo, interval, head-to-head score against greedy and the
  likelihood that the agent is stronger than greedy);
- ``ladder.png``: the ladders side by side.

Usage::

    python benchmarks/bench_strength.py ladder --agents runs/a/final_model.zip best=runs/a/best_model.zip \\
        --settings treppenromme:2 treppenromme:4 rum500:2 rum500:4 --decks 100 --workers 2

A 4-player table needs 4 agents: copies of random and greedy fill up the entrants. Tournaments
of many decks take long on 2 cores (a model plays ~1 ms per decision, greedy ~1-3 ms).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker
import numpy as np
from harness import RESULTS, run_variant, write

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from treppen.agents import RolloutAgent, zoo
from treppen.agents.search import _Root
from treppen.apps.zoo_command import strength_text
from treppen.arena.plots import plot_elo, save_figure
from treppen.arena.ratings import Ratings, fit_ratings
from treppen.arena.results import write_outputs
from treppen.arena.scale import interval_text, rating_text
from treppen.arena.schedule import schedule
from treppen.arena.strength import CARD_DECKS, rate_against
from treppen.arena.tournament import resolve_specs, run_tournament
from treppen_env import raw_env
from treppen_env.files import atomic_write_text

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "strength"


def entrants(models: list[str], players: int) -> dict[str, str]:
    """Random, greedy and the models by name; copies of random and greedy up to ``players`` agents."""
    specs = resolve_specs(["random", "greedy", *models])
    fillers = iter(["random", "greedy"] * 2)
    while len(specs) < players:
        specs = resolve_specs([*specs.values(), next(fillers)]) | specs
    return specs


def ladder_table(ratings: Ratings, title: str) -> str:
    """A Markdown table of one ladder: Elo, 95% interval, score and likelihood of superiority vs greedy."""
    at = {name: i for i, name in enumerate(ratings.agents)}
    g = at.get("greedy")
    lines = [
        f"**{title}** ({ratings.n_groups} duplicate decks, {ratings.n_deals} deals; Elo, {ratings.scale})",
        "",
        "| rank | agent | Elo | 95% interval | score vs greedy | P(stronger than greedy) |",
        "|---|---|---|---|---|---|",
    ]
    for i, name in enumerate(ratings.agents):
        vs = "-" if g is None or i == g or not ratings.count[i, g] else f"{ratings.score[i, g]:.3f}"
        los = "-" if g is None or i == g or math.isnan(ratings.los[i, g]) else f"{ratings.los[i, g]:.2f}"
        ci = interval_text(ratings.ci_low[i], ratings.ci_high[i])
        lines.append(f"| {ratings.ranks[i]} | {name} | {ratings.elo[i]:+.0f} | {ci} | {vs} | {los} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", nargs="*", default=[], help="model specs (NAME=SPEC to name one)")
    parser.add_argument(
        "--settings",
        nargs="+",
        default=["treppenromme:2", "treppenromme:4", "rum500:2", "rum500:4"],
        help="RULES:PLAYERS pairs",
    )
    parser.add_argument("--decks", type=int, default=100, help="duplicate decks per setting")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--seed", type=int, default=0, help="tournament seed")
    parser.add_argument("--boot", type=int, default=1000, help="bootstrap resamples for the intervals")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    args = parser.parse_args(argv)

    tables, ladders = [], []
    for setting in args.settings:
        rules, _, players_text = setting.partition(":")
        players = int(players_text)
        specs = entrants(args.agents, players)
        out = args.out / f"{rules}_{players}p"
        start = time.perf_counter()
        records = run_tournament(specs, players, args.decks, args.seed, args.workers, out, rules, progress=True)
        ratings = fit_ratings(records, n_boot=args.boot, seed=args.seed)  # greedy = 0
        write_outputs(out, ratings, specs)
        title = f"{rules}, {players} players"
        tables.append(ladder_table(ratings, title) + f"\n\n({time.perf_counter() - start:.0f} s this run)")
        ladders.append((title, ratings))
        print(tables[-1], "\n", flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "ladder.md", "\n\n".join(tables) + "\n")
    summary = {title: ratings.to_dict() for title, ratings in ladders}
    atomic_write_text(args.out / "ladder.json", json.dumps(summary, indent=1) + "\n")
    fig, axes = plt.subplots(
        1, len(ladders), figsize=(5 * len(ladders), 0.5 * max(len(r.agents) for _, r in ladders) + 2)
    )
    for ax, (title, ratings) in zip([axes] if len(ladders) == 1 else axes, ladders, strict=True):
        plot_elo(ratings, ax=ax)
        ax.set_title(title)
    save_figure(fig, args.out / "ladder.png")
    print(f"ladders in {args.out}/ (ladder.md, ladder.json, ladder.png, one folder per setting)")
    return 0


# --- curve: search strength against its budget


def curve_point(agent: str, budget: int, rules: str, players: int, decks: int, workers: int, out: Path) -> dict:
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


def curve_table(setting: dict) -> str:
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


def curve_plot(doc: dict, path: Path, x: str = "cpu_s", xlabel: str = "CPU seconds per decision") -> None:
    """Elo against the points' ``x`` (log scale, labelled ``xlabel``), one line per setting of a
    curve document (``curve.json``, ``learner_curve.json``)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for s in doc["settings"]:
        xs = [p[x] for p in s["points"]]
        y = [p["elo"] for p in s["points"]]
        err = [[p["elo"] - p["ci"][0] for p in s["points"]], [p["ci"][1] - p["elo"] for p in s["points"]]]
        ax.errorbar(xs, y, yerr=err, marker="o", capsize=3, label=f"{s['rules']}, {s['players']} players")
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Elo against greedy (95% interval)")
    ax.set_title(f"{doc['agent']}:\nstrength against {xlabel.split(' per ')[0]}")
    ax.legend()
    save_figure(fig, path)


def curve(argv: Sequence[str] | None = None) -> int:
    """Search strength against its budget: for every setting (rules preset x players) and budget a
    duplicate tournament of ``AGENT,playouts=BUDGET`` against greedy (at a table of more than 2
    seats the other seats are copies of greedy), rated with greedy = 0 Elo; each budget's CPU
    seconds per decision from ``bench_simulation.py search`` on mid-deal positions of the same
    setting. Under ``--out``: one tournament folder per point (a rerun resumes them),
    ``curve.json``, ``curve.md`` (a table per setting) and ``curve.png`` (Elo against seconds per
    decision, log scale). ``bench_strength.py curve --agent rollout --budgets 250 500 1000 2000
    --settings treppenromme:2 treppenromme:4 --decks 100 --workers 2``.
    """
    from bench_simulation import search_seconds

    parser = argparse.ArgumentParser(prog="bench_strength curve", description="search strength against its budget")
    parser.add_argument("--agent", default="rollout", help="search agent spec without a budget")
    parser.add_argument("--budgets", type=int, nargs="+", default=[250, 500, 1000, 2000], help="playouts")
    parser.add_argument("--settings", nargs="+", default=["treppenromme:2", "treppenromme:4"], help="RULES:PLAYERS")
    parser.add_argument("--decks", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--positions", type=int, default=20, help="mid-deal positions timed per setting")
    parser.add_argument("--out", type=Path, default=RESULTS / "search_curve")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    settings = []
    for item in args.settings:
        rules, players = item.split(":")
        timing = search_seconds(rules, int(players), args.positions, args.budgets, seed=0)
        per_decision = timing["cpu_s_per_decision"][args.agent.split(",")[0]]
        points = []
        for budget in args.budgets:
            folder = args.out / f"{rules}_{players}p_{budget}"
            p = curve_point(args.agent, budget, rules, int(players), args.decks, args.workers, folder)
            points.append(p | {"cpu_s": per_decision[str(budget)]})
            print(f"{item} playouts={budget}: {rating_text(p['elo'], *p['ci'])} Elo vs greedy")
        settings.append({"rules": rules, "players": int(players), "decks": args.decks, "points": points})
    doc = {"agent": args.agent, "settings": settings}
    write(args.out / "curve.json", doc)
    atomic_write_text(args.out / "curve.md", "\n\n".join(curve_table(s) for s in settings) + "\n")
    curve_plot(doc, args.out / "curve.png")
    return 0


# --- learner: a training run's strength against its cost


def learner(argv: Sequence[str] | None = None) -> int:
    """A learner's strength against the CPU time that trained it: every ``--models MINUTES=PATH``
    (a model trained in that many CPU minutes: a run's final model or a checkpoint's net) plays
    greedy on the same duplicate decks of ``--seed`` (:func:`treppen.arena.strength.rate_against`,
    greedy = 0 Elo, 95% bootstrap intervals over decks). Under ``--out``: a tournament folder per
    model (a rerun resumes it), ``learner_curve.json``, ``learner_curve.md`` and
    ``learner_curve.png`` (Elo against CPU minutes, log scale). ``bench_strength.py learner
    --models 1=runs/a/final_model.npz 4.5=runs/b/final_model.npz --decks 1000 --seed 9001``.
    """
    parser = argparse.ArgumentParser(prog="bench_strength learner", description="a learner's strength against its cost")
    parser.add_argument("--models", nargs="+", required=True, help="MINUTES=PATH: CPU minutes of training, the model")
    parser.add_argument("--label", default="the batched learner", help="the curve's name in the figure")
    parser.add_argument("--rules", default="treppenromme")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--decks", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0, help="the decks' seed: one that no setting was chosen on")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS / "learner_curve")
    args = parser.parse_args(argv)
    points = []
    for item in args.models:
        minutes, _, path = item.partition("=")
        if not path:
            parser.error(f"--models: {item!r} is not MINUTES=PATH")
        out = args.out / f"{float(minutes):g}_cpu_min"
        found = rate_against(path, "greedy", args.players, args.rules, args.decks, args.seed, args.workers, out)
        points.append({"cpu_min": float(minutes), "model": path, "elo": found.elo, "ci": [found.low, found.high]})
        print(f"{float(minutes):g} CPU min ({path}): {rating_text(found.elo, found.low, found.high)} Elo vs greedy")
    setting = {"rules": args.rules, "players": args.players, "decks": args.decks, "seed": args.seed, "points": points}
    doc = {"agent": args.label, "settings": [setting]}
    write(args.out / "learner_curve.json", doc)
    lines = [
        f"**{args.label}, {args.rules}, {args.players} players** (Elo against greedy, {args.decks} duplicate decks"
        f" of seed {args.seed})",
        "",
        "| CPU minutes of training | model | Elo | 95% interval |",
        "|---|---|---|---|",
    ]
    lines += [f"| {p['cpu_min']:g} | `{p['model']}` | {p['elo']:+.0f} | {interval_text(*p['ci'])} |" for p in points]
    atomic_write_text(args.out / "learner_curve.md", "\n".join(lines) + "\n")
    curve_plot(doc, args.out / "learner_curve.png", x="cpu_min", xlabel="CPU minutes of training")
    return 0


# --- levers: which search setting gives what


def levers(argv: Sequence[str] | None = None) -> int:
    """Which lever gives what (a diagnostic): each ``--agents`` spec plays ``--reference`` (default
    ``rollout``, today's search) on the same duplicate decks (:func:`treppen.arena.strength.rate_against`,
    95% bootstrap intervals over decks); the table gives each one's Elo, interval, score and
    likelihood of being the stronger. Typical rows: the playout policy swapped at a fixed playout
    count (``own_playout=net`` with a kernels' net, ``playout=random``), beliefs on and off
    (``beliefs=greedy``), the objective (``objective=margin``) against what the ratings count
    (``win``). ``bench_strength.py levers --reference rollout,playouts=500 --decks 40 --agents
    rollout,playouts=500,beliefs=greedy rollout,playouts=500,objective=margin``.
    """
    parser = argparse.ArgumentParser(prog="bench_strength levers", description="search settings against a reference")
    parser.add_argument("--agents", nargs="+", required=True, help="agent specs to rate")
    parser.add_argument("--reference", default="rollout", help="the spec rated 0")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--rules", default="treppenromme")
    parser.add_argument("--decks", type=int, default=40)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "levers")
    args = parser.parse_args(argv)
    rows = {}
    print(f"| agent | Elo vs {args.reference} | 95% interval | score | P(stronger) |\n|---|---|---|---|---|")
    for k, spec in enumerate(args.agents):
        found = rate_against(
            spec, args.reference, args.players, args.rules, args.decks, args.seed, args.workers, args.out / str(k)
        )
        rows[spec] = found.to_dict()
        print(f"| `{spec}` | {found.elo:+.0f} | [{found.low:+.0f}, {found.high:+.0f}] | {found.score:.3f} | "
              f"{found.likelihood:.2f} |", flush=True)  # fmt: skip
    write(args.out / "levers.json", {"reference": args.reference, "rows": rows})
    return 0


# --- peek: the ceiling of better beliefs


class Peeker(RolloutAgent):
    """A rollout searcher whose root is the engine's true state, its opponent's hand known to it
    (``stock=False``: the stock is still dealt afresh) or everything (``stock=True``). It reads the
    engine's state, which no agent may: a benchmark of the ceiling, never a player."""

    def __init__(self, env: Any, stock: bool, **settings: Any):
        super().__init__(**settings)
        self.env, self.stock = env, stock

    def _root(self, observation: dict[str, Any], own_known: int) -> _Root:
        state = self.env.game.clone()
        state.known = list(state.hands)  # every hand is known to the searcher
        root = _Root(state, self)
        if self.stock:
            root.beliefs = root.beliefs._replace(candidates=0)
        return root


def peek_deal(deck: list[str], seats: list[Any], env: Any) -> list[int]:
    """Play one 2-player deal of ``deck`` with ``seats``; the deal's points."""
    env.reset(options={"deck": deck, "dealer": 0})
    for agent in seats:
        agent.reset()
    while not env.game.deal_over:
        env.step(seats[env.game.current].act(env.observe(env.agent_selection)))
    return env.game.deal_points


def peek(argv: Sequence[str] | None = None) -> int:
    """The most better beliefs could give (a diagnostic): a rollout searcher shown the opponent's
    true hand (the stock still unknown and shuffled), and one shown the stock's order too, each
    head to head against the same searcher without them, on duplicate decks (2 players). Every
    deck is played twice, the seats swapped; the score counts more points 1, equal 0.5, with a 95%
    bootstrap interval over decks and its Elo. ``bench_strength.py peek [--decks 60] [--playouts 2000]``.
    """
    parser = argparse.ArgumentParser(prog="bench_strength peek", description="the ceiling of better beliefs")
    parser.add_argument("--decks", type=int, default=60)
    parser.add_argument("--playouts", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_strength_peek.json")
    args = parser.parse_args(argv)
    decks = [d.deck for d in schedule(["a", "b"], 2, args.decks, 2026) if d.seats == ("a", "b")]
    results = {}
    for stock in (False, True):
        per_deck = []
        for k, deck in enumerate(decks):
            env = raw_env(num_players=2)
            row = []
            for seat in (0, 1):
                seats = [RolloutAgent(seed=k, playouts=args.playouts)]
                seats.insert(seat, Peeker(env, stock, seed=k, playouts=args.playouts))
                mine, theirs = (points := peek_deal(list(deck), seats, env))[seat], points[1 - seat]
                row.append(1.0 if mine > theirs else 0.5 if mine == theirs else 0.0)
            per_deck.append(np.mean(row))
        scores = np.array(per_deck)
        boot = np.random.default_rng(0).choice(scores, (2000, scores.size)).mean(axis=1)
        low, high = np.quantile(boot, [0.025, 0.975])
        name = "hand and stock shown" if stock else "opponent's hand shown"
        clipped = min(max(float(scores.mean()), 1e-3), 1 - 1e-3)
        elo = 400 * math.log10(clipped / (1 - clipped))
        results[name] = {"score": float(scores.mean()), "low": float(low), "high": float(high), "elo": elo,
                         "decks": len(decks)}  # fmt: skip
        print(f"{name}: score {scores.mean():.3f} [{low:.3f}, {high:.3f}], about {elo:+.0f} Elo")
    write(args.out, results)
    return 0


# --- beliefs: learned beliefs against the uniform deal, at equal CPU time


def decision_seconds(specs: list[str], deals: int, seed: int) -> dict[str, float]:
    """Each spec's median CPU seconds per decision (its thread's time around ``act``), over the
    decisions of ``deals`` 2-player deals the first two specs play against each other, seats
    alternating."""
    from treppen import agents

    times: dict[str, list[float]] = {spec: [] for spec in specs[:2]}
    env = raw_env(num_players=2)
    for k in range(deals):
        seats = [agents.load(spec, seed=seed + k) for spec in specs[:2]]
        names = list(specs[:2]) if k % 2 == 0 else list(reversed(specs[:2]))
        if k % 2:
            seats.reverse()
        env.reset(seed=seed + k)
        for agent in seats:
            agent.reset()
        while not env.game.deal_over:
            seat = env.game.current
            started = time.thread_time()
            action = seats[seat].act(env.observe(env.agent_selection))
            times[names[seat]].append(time.thread_time() - started)
            env.step(action)
    return {spec: float(np.median(t)) for spec, t in times.items()}


def beliefs(argv: Sequence[str] | None = None) -> int:
    """The search with learned beliefs (``beliefs=net``) against the same search dealing uniformly
    (a target of the beliefs' work): each spec's median CPU seconds per decision on the decisions of
    ``--timing-deals`` deals they play against each other, then the head-to-head Elo of ``--agent``
    against ``--reference`` on ``--decks`` duplicate decks of ``--seed`` (the tournament code,
    95% bootstrap intervals over decks). ``bench_strength.py beliefs --decks 200 --seed 5003``.
    """
    parser = argparse.ArgumentParser(prog="bench_strength beliefs", description="learned beliefs head to head")
    parser.add_argument("--agent", default="search-2p,beliefs=net", help="the spec with learned beliefs")
    parser.add_argument("--reference", default="search-2p", help="the spec rated 0")
    parser.add_argument("--decks", type=int, default=200)
    parser.add_argument("--seed", type=int, default=5003)
    parser.add_argument("--timing-deals", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "beliefs")
    args = parser.parse_args(argv)
    seconds = decision_seconds([args.agent, args.reference], args.timing_deals, args.seed)
    ratio = seconds[args.agent] / seconds[args.reference]
    print(f"median CPU s per decision: {args.agent} {seconds[args.agent]:.4f}, {args.reference} "
          f"{seconds[args.reference]:.4f} (ratio {ratio:.3f})", flush=True)  # fmt: skip
    found = rate_against(args.agent, args.reference, 2, "treppenromme", args.decks, args.seed, args.workers, args.out)
    rating = rating_text(found.elo, found.low, found.high)
    print(f"{args.agent} vs {args.reference}: {rating} Elo, score {found.score:.3f}, "
          f"P(stronger) {found.likelihood:.3f}, {found.decks} decks of seed {args.seed}")  # fmt: skip
    write(args.out / "beliefs.json", {"median_cpu_s": seconds, "ratio": ratio, "seed": args.seed, **found.to_dict()})
    return 0


# --- zoo: the shipped agents' first action and Elo


#: The fresh process: the import, the load by name, one deal's first observation and action of the
#: zoo agent; it prints the wall and CPU seconds from the import's start, the wall seconds from its
#: end, and whether torch was imported.
_FIRST_ACTION = """
import sys, time
start, cpu = time.perf_counter(), time.process_time()
import treppen_env
from treppen import agents
imported = time.perf_counter()
name, players, rules = sys.argv[1], int(sys.argv[2]), sys.argv[3]
env = treppen_env.env(num_players=players, rules=rules)
env.reset(seed=0)
agent = agents.load(name, rules=rules, seed=0)
agent.act(env.observe(env.agent_selection))
end = time.perf_counter()
print(end - start, time.process_time() - cpu, end - imported, "torch" in sys.modules)
"""
#: A zoo agent's first action after the import, wall seconds (target).
FIRST_ACTION_TARGET_S = 2.0


def first_action(card: zoo.ModelCard) -> dict[str, float | bool]:
    """Wall and CPU seconds from the import to the first action of ``card``'s agent in a fresh
    process, and whether that process imported torch.

    :raises RuntimeError: when the process fails (its stderr in the message).
    """
    command = [sys.executable, "-c", _FIRST_ACTION, card.name, str(card.num_players), card.rules]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{card.name}: the first action failed:\n{done.stderr[-2000:]}")
    wall, cpu, after, torch = done.stdout.split()
    return {
        "first_action_s": float(wall),
        "first_action_cpu_s": float(cpu),
        "after_import_s": float(after),
        "torch_imported": torch == "True",
    }


def zoo_main(argv: Sequence[str] | None = None) -> int:
    """The model zoo's shipped agents: for every card (:func:`treppen.agents.zoo.cards`, or the
    names given) a new Python process imports ``treppen``, loads the agent by name, deals a table of
    the card's game and times the agent's first action from the import on (wall seconds; the
    kernels load from the disk cache, as after any first use) and from its end, and reports whether
    torch was imported (a zoo agent must play without it; target: under 2 s after the import). With
    ``--decks N`` each agent is also rated against greedy on N duplicate decks of the card's deck
    seed, beside the Elo its card states. ``bench_strength.py zoo [NAME ...] [--decks 0] [--workers 2]``.
    """
    parser = argparse.ArgumentParser(prog="bench_strength zoo", description="the zoo's agents: first action, Elo")
    parser.add_argument("names", nargs="*", help="zoo agents (default: every card)")
    parser.add_argument("--decks", type=int, default=0, help="rate each against greedy on this many decks (0: no)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the rating tournaments")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_strength_zoo.json", help="JSON results file")
    args = parser.parse_args(argv)
    cards = [zoo.card(name) for name in args.names] or list(zoo.cards().values())
    rows = {}
    print("| agent | first action, import included (s wall) | (CPU s) | after the import (s wall) | torch imported |"
          " card's Elo | Elo played again |\n|---|---|---|---|---|---|---|")  # fmt: skip
    for card in cards:
        row: dict = first_action(card)
        again = "-"
        if args.decks:
            seed = card.elo.get("decks", CARD_DECKS)["seed"]
            found = rate_against(card.name, "greedy", card.num_players, card.rules, args.decks, seed, args.workers)
            row["elo"] = found.to_dict()
            again = f"{rating_text(found.elo, found.low, found.high)} ({args.decks} decks)"
        rows[card.name] = row
        times = f"{row['first_action_s']:.2f} | {row['first_action_cpu_s']:.2f} | {row['after_import_s']:.2f}"
        print(f"| `{card.name}` | {times} | {row['torch_imported']} | {strength_text(card)} | {again} |")
    slow = [
        name for name, row in rows.items() if row["after_import_s"] >= FIRST_ACTION_TARGET_S or row["torch_imported"]
    ]
    if slow:
        print(f"over {FIRST_ACTION_TARGET_S} s or with torch: {slow}")
    write(args.out, {"target_first_action_s": FIRST_ACTION_TARGET_S, "agents": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(
        run_variant(
            {
                "ladder": main,
                "curve": curve,
                "learner": learner,
                "levers": levers,
                "peek": peek,
                "beliefs": beliefs,
                "zoo": zoo_main,
            },
            default="ladder",
        )
    )
