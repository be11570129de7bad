"""Expert iteration (``backend: expert``; ``configs/expert_iteration.yaml``): a search labels positions,
a small net learns from the labels, and the next generation searches with that net.

Generation ``g`` (``gen_<g>/`` in the run folder), each stage written atomically, so ``--resume``
continues a generation that was cut off at its next stage:

1. ``labels.npz``: the search (``expert_search``; from generation 1 on guided by generation
   ``g - 1``'s net through ``expert_guide``, e.g. its own later turns played by the net) plays
   ``expert_deals`` deals against greedy, the search at every seat in turn; each of its decisions
   gives the observation, mask, the chosen move (the policy's label), the other seats' hands and,
   at the deal's end, the mover's score against the others as ``2 * score - 1`` (the value's
   label; a determinized world is fully known, so the value reads the hands);
2. ``net.npz``: :class:`~treppen.train.expert.policy_value_torch.KernelNet` (``expert_hidden`` units; from the
   generation before's weights) fitted to all generations' labels so far
   (:func:`treppen.train.expert.policy_value_torch.fit`);
3. a row of ``generations.jsonl``: the generation's search and its net's policy alone
   (:class:`treppen.agents.policy_value_net.NetAgent`) rated against greedy, and its search against the
   generation before's, head to head, on ``expert_decks`` duplicate decks
   (:func:`treppen.arena.strength.rate_against`), with 95% intervals.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from treppen import agents
from treppen.arena.strength import Strength, rate_against
from treppen.train.common.checkpoints import problem
from treppen.train.common.config import ExpertConfig
from treppen.train.common.rundir import next_commands, open_run_dir
from treppen.train.expert.policy_value_torch import KernelNet, fit
from treppen_env.aec import raw_env
from treppen_env.agent_core import policy_value_kernels
from treppen_env.files import append_jsonl, atomic_write, read_jsonl
from treppen_env.observation import OBS_SIZE

LABELS, NET, WEIGHTS, ROWS = "labels.npz", "net.npz", "net.pt", "generations.jsonl"


def search_spec(config: ExpertConfig, net: Path | None) -> str:
    """The generation's search: ``expert_search``, guided by ``net`` when there is one."""
    return config.expert_search if net is None else f"{config.expert_search},net={net},{config.expert_guide}"


def label_deals(config: ExpertConfig, spec: str, seed: int) -> dict[str, np.ndarray]:
    """The search's decisions in ``expert_deals`` deals against greedy (see the module docstring)."""
    rules = config.make_rules()
    columns: dict[str, list[Any]] = {k: [] for k in ("obs", "masks", "actions", "hands", "outcomes")}
    for deal in range(config.expert_deals):
        env = raw_env(num_players=config.num_players, rules=rules)
        env.reset(seed=seed + deal)
        searcher_seat = deal % config.num_players
        players = [
            agents.load(spec, seed=seed + deal, rules=rules)
            if s == searcher_seat
            else agents.load("greedy", rules=rules)
            for s in range(config.num_players)
        ]
        start = len(columns["actions"])
        while not env.game.deal_over:
            seat = env.game.current
            obs = env.observe(env.agent_selection)
            action = players[seat].act(obs)
            if seat == searcher_seat:
                columns["obs"].append(obs["observation"])
                columns["masks"].append(obs["action_mask"] != 0)
                columns["actions"].append(action)
                columns["hands"].append(_other_hands(list(env.game.hands), seat))
            env.step(action)
        points = env.game.deal_points or [0] * config.num_players
        mine = points[searcher_seat]
        score = np.mean(
            [1.0 if mine > p else 0.5 if mine == p else 0.0 for s, p in enumerate(points) if s != searcher_seat]
        )
        columns["outcomes"] += [2.0 * score - 1.0] * (len(columns["actions"]) - start)
    return {
        "obs": np.asarray(columns["obs"], dtype=np.float32).reshape(-1, OBS_SIZE),
        "masks": np.asarray(columns["masks"], dtype=bool).reshape(-1, policy_value_kernels.NUM_ACTIONS),
        "actions": np.asarray(columns["actions"], dtype=np.int64),
        "hands": np.asarray(columns["hands"], dtype=np.float32).reshape(-1, policy_value_kernels.VALUE_EXTRA),
        "outcomes": np.asarray(columns["outcomes"], dtype=np.float32),
    }


def _other_hands(hands: list[int], seat: int) -> np.ndarray:
    """The other seats' hands as 52 bits each, relative seats 1..3 (padded)."""
    n = len(hands)
    out = np.zeros(policy_value_kernels.VALUE_EXTRA, dtype=np.float32)
    for k in range(1, n):
        hand = hands[(seat + k) % n]
        out[(k - 1) * 52 : k * 52] = [(hand >> c) & 1 for c in range(52)]
    return out


def train_expert(config: ExpertConfig, resume: bool = False, command_line: list[str] | None = None) -> Path:
    """Run expert iteration as ``config`` says (see the module docstring); returns the run folder.

    :param resume: continue at the next stage not written; a stage whose file does not read whole
        (damaged) is done again (:func:`damaged_stages`).
    """
    run_dir = open_run_dir(config, resume, command_line or [])
    rows_path = run_dir / ROWS
    rated = {row["generation"] for row in read_jsonl(rows_path)}  # a line torn by a kill is cut from the file
    damaged = damaged_stages(run_dir) if resume else set()
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.torch_threads)
    try:
        _generations(config, run_dir, rated, damaged)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: every stage written is whole and kept
        print(f"\ninterrupted; the stages written are kept; continue with `treppen train --resume {run_dir}`")
        raise
    print_end(config, run_dir)
    return run_dir


def _generations(config: ExpertConfig, run_dir: Path, rated: set[int], damaged: set[Path]) -> None:
    """Each generation's stages that are not written (see the module docstring)."""
    rows_path = run_dir / ROWS
    previous: Path | None = None
    for g in range(config.expert_generations):
        folder = run_dir / f"gen_{g}"
        folder.mkdir(exist_ok=True)
        spec = search_spec(config, previous)
        start = time.process_time()
        if not _written(folder, [LABELS], damaged):
            data = label_deals(config, spec, config.seed * 100_003 + g * 10_007)
            _save_labels(folder / LABELS, data)
            print(f"generation {g}: {len(data['actions'])} decisions labelled by {spec}", flush=True)
        if not _written(folder, [WEIGHTS, NET], damaged):
            net = KernelNet(config.expert_hidden)
            if previous is not None:
                _load_weights(net, run_dir / f"gen_{g - 1}" / WEIGHTS)
            data = _all_labels(run_dir, g)
            stats = fit(
                net, data["obs"], data["masks"], data["actions"], data["hands"], data["outcomes"],
                config.imitation_epochs, config.imitation_batch_size, config.imitation_learning_rate, config.seed + g,
            )  # fmt: skip
            atomic_write(folder / WEIGHTS, functools.partial(torch.save, net.state_dict()), suffix=".pt")
            net.save(folder / NET)
            print(f"generation {g}: net fitted ({stats})", flush=True)
        guided = search_spec(config, folder / NET)
        if g not in rated:
            row = _rate(config, run_dir, g, guided, previous)
            row["cpu_s"] = round(time.process_time() - start, 1)
            append_jsonl(rows_path, row)
            print(f"generation {g}: {json.dumps(row)}", flush=True)
        previous = folder / NET


def damaged_stages(run_dir: Path) -> set[Path]:
    """The stage files of the run (``gen_*/labels.npz``, ``net.pt``, ``net.npz``) that do not read
    whole (cut short, damaged), named in one line on stdout; their stages are done again."""
    damaged: dict[Path, str] = {}
    for path in sorted(run_dir.glob("gen_*/*")):
        if path.name in (LABELS, NET, WEIGHTS):
            try:
                _read_stage(path)
            except Exception as err:  # the file's damage, whatever the loader makes of it
                damaged[path] = problem(err)
    if damaged:
        named = "; ".join(f"{path} ({why})" for path, why in damaged.items())
        print(f"doing the stages of {len(damaged)} damaged file{'s' * (len(damaged) > 1)} again: {named}")
    return set(damaged)


def _read_stage(path: Path) -> None:
    """Read a stage file whole (every array of an ``.npz``: their CRCs are checked on reading)."""
    if path.suffix == ".pt":
        torch.load(path, weights_only=True)
        return
    with np.load(path) as data:
        for name in data.files:
            data[name]


def _written(folder: Path, names: list[str], damaged: set[Path]) -> bool:
    """Whether a stage's files are all in ``folder`` and none is damaged."""
    return all((folder / name).is_file() and folder / name not in damaged for name in names)


def print_end(config: ExpertConfig, run_dir: Path) -> None:
    """The last lines of a run: the last generation's search and net alone against greedy (Elo,
    greedy = 0), and the commands that use its search (:func:`treppen.train.common.rundir.next_commands`)."""
    rows = {row["generation"]: row for row in read_jsonl(run_dir / ROWS)}
    last = rows[max(rows)]
    print(f"expert iteration: {run_dir / ROWS}")
    print(f"Elo of generation {last['generation']}, greedy = 0, {config.expert_decks} duplicate decks:")
    print(f"  its search  {Strength(**last['search_vs_greedy']).text()}")
    print(f"  its net     {Strength(**last['policy_vs_greedy']).text()}")
    print(next_commands(last["search"], config.num_players, config.rules))


def _save_labels(path: Path, data: dict[str, np.ndarray]) -> None:
    def write(tmp: str) -> None:
        np.savez(tmp, obs=data["obs"], masks=data["masks"], actions=data["actions"], hands=data["hands"],
                 outcomes=data["outcomes"])  # fmt: skip

    atomic_write(path, write, suffix=".npz")


def _load_weights(net: KernelNet, path: Path) -> None:
    if path.is_file():
        net.load_state_dict(torch.load(path, weights_only=True))


def _all_labels(run_dir: Path, g: int) -> dict[str, np.ndarray]:
    """Every generation's labels up to ``g``, stacked."""
    parts = []
    for k in range(g + 1):
        with np.load(run_dir / f"gen_{k}" / LABELS) as data:
            parts.append({name: data[name] for name in data.files})
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def _rate(config: ExpertConfig, run_dir: Path, g: int, guided: str, previous: Path | None) -> dict[str, Any]:
    """The generation's ratings (see the module docstring)."""
    out = run_dir / f"gen_{g}" / "ratings"

    def rate(agent: str, reference: str, name: str) -> dict[str, Any]:
        return rate_against(
            agent, reference, config.num_players, config.make_rules(), config.expert_decks, 2026, 1, out / name,
            config.progress,
        ).to_dict()  # fmt: skip

    row: dict[str, Any] = {"generation": g, "search": guided}
    row["search_vs_greedy"] = rate(guided, "greedy", "search")
    row["policy_vs_greedy"] = rate(str(run_dir / f"gen_{g}" / NET), "greedy", "policy")
    row["search_vs_previous"] = rate(guided, search_spec(config, previous), "previous")
    return row
