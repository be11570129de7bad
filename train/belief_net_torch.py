"""The belief net in torch: positions from deals the kernels play, a supervised fit, the held-out
log-loss by phase of the deal against the uniform deal, and the file the search reads
(:mod:`treppen.agents.belief_net`).

Labels are free: every recorded position knows where each card its mover cannot see truly lies
(:func:`treppen_env.agent_core.belief_net_kernels.record_deals`). The loss is the cross-entropy of
each such card's true place under the net's softmax over the places that hide cards (the
opponents' hidden parts and the stock), the mean over cards. The held-out figures score the
probabilities the search reads: scaled so that each place's sum to the cards it hides
(:func:`fit_counts`). The uniform deal gives a card the place's share of the unseen cards,
``hidden_l / unseen``.

Run ``python -m treppen.train.belief_net_torch --out belief_net.npz`` (``--help`` for the
settings); it prints the held-out log-loss by phase and writes a JSON report beside the file.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from treppen.agents.belief_net import save_belief_net
from treppen_env.agent_core import belief_net_kernels, greedy_kernels, plan_value, playout_kernels
from treppen_env.engine import GameState
from treppen_env.files import atomic_write_text
from treppen_env.rules import Rules

#: Phases of a deal the log-loss is reported by: turns (RULES §6.5) from each bound on.
PHASES = {"opening (turns 0-5)": 0, "middle (6-15)": 6, "late (16+)": 16}


class Positions(NamedTuple):
    """Recorded positions (:func:`record`): inputs float32 (N, NUM_INPUTS), places int8 (N, 52)
    (the true relative place of each unseen card, -1 seen), turns int64 (N,)."""

    inputs: np.ndarray
    places: np.ndarray
    turns: np.ndarray


def record(
    count: int,
    seed: int,
    num_players: int = 2,
    policies: tuple[str, ...] = ("greedy", "planner"),
    random_share: float = 0.1,
) -> Positions:
    """``count`` positions of ``treppenromme`` deals the kernels play, each seat a policy of
    ``policies`` (:data:`treppen_env.agent_core.playout_kernels.POLICIES`) drawn per deal, with
    ``random_share`` of uniformly random moves.

    :raises ValueError: for an unknown policy or a share outside [0, 1].
    """
    if not 0.0 <= random_share <= 1.0:
        raise ValueError(f"random_share={random_share} must lie in [0, 1]")
    rules = Rules()
    state = GameState(rules, num_players, np.random.default_rng(seed))
    state.deal()
    playout = playout_kernels.Playout(
        policies=np.zeros(num_players, dtype=np.int64),
        settings=greedy_kernels.settings_row(),
        values=plan_value.values_row(),
    )
    plan = belief_net_kernels.DealPlan(
        per_hand=rules.cards_dealt(num_players),
        dealer_first=rules.dealer_plays_first,
        choices=playout_kernels.seat_policies(list(policies), len(policies)),
        random_share=random_share,
    )
    out = belief_net_kernels.Recording(
        inputs=np.zeros((count, belief_net_kernels.NUM_INPUTS), dtype=np.float32),
        places=np.zeros((count, belief_net_kernels.NUM_CARDS), dtype=np.int8),
        turns=np.zeros(count, dtype=np.int64),
    )
    belief_net_kernels.record_deals(
        state.arrays().copy(), state.tables, playout, playout_kernels.scratch(), plan, seed, out
    )
    return Positions(*out)


def place_sizes(inputs: torch.Tensor) -> torch.Tensor:
    """How many cards each relative place hides in each position (float32 (B, NUM_REL), whole
    numbers): the stock's size, then each seat ``r``'s hidden cards (read from the input's scalars)."""
    k = belief_net_kernels
    stock = inputs[:, k.S_STOCK : k.S_STOCK + 1] * k.NUM_CARDS
    hidden = inputs[:, k.S_HIDDEN : k.S_HIDDEN + k.NUM_REL - 1] * k.HAND_SCALE
    return torch.round(torch.cat([stock, hidden], dim=1))


def open_places(inputs: torch.Tensor) -> torch.Tensor:
    """Which relative places hide cards in each position (bool (B, NUM_REL))."""
    return place_sizes(inputs) > 0


def uniform_log_loss(inputs: np.ndarray, places: np.ndarray) -> np.ndarray:
    """Each position's mean log-loss (float64 (N,)) of the uniform deal: a card's place ``l`` has
    probability ``hidden_l / unseen``."""
    sizes = place_sizes(torch.from_numpy(inputs)).numpy().astype(np.float64)
    unseen = places >= 0
    share = np.take_along_axis(sizes, np.where(unseen, places, 0).astype(np.int64), axis=1) / sizes.sum(
        1, keepdims=True
    )
    return -(np.log(np.where(unseen, share, 1.0))).sum(1) / unseen.sum(1)


def fit_counts(logp: torch.Tensor, inputs: torch.Tensor, unseen: torch.Tensor) -> torch.Tensor:
    """The log-probabilities ``logp`` (B, 52, NUM_REL) scaled as the kernels scale them
    (:func:`treppen_env.agent_core.belief_net_kernels.fit_counts`): each open place's column, over
    the ``unseen`` cards (bool (B, 52)), sums to the cards it hides, each card's row to 1."""
    sizes = place_sizes(inputs)
    opened = (sizes > 0)[:, None, :]
    log_sizes = torch.log(sizes.clamp(min=1))[:, None, :]
    hidden_rows = unseen[:, :, None]
    for _ in range(belief_net_kernels.SCALING_ROUNDS):
        column = torch.logsumexp(logp.masked_fill(~hidden_rows, float("-inf")), dim=1, keepdim=True)
        logp = torch.where(opened, logp - column + log_sizes, logp)
        logp = logp - torch.logsumexp(logp, dim=2, keepdim=True)
    return logp


class BeliefNetTorch(nn.Module):
    """The belief net (:mod:`treppen_env.agent_core.belief_net_kernels`): two ReLU layers of
    ``hidden`` units and ``52 x 4`` logits."""

    def __init__(self, hidden: int = 256):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(belief_net_kernels.NUM_INPUTS, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, belief_net_kernels.NUM_CARDS * belief_net_kernels.NUM_REL),
        )

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """Log-probabilities (B, 52, NUM_REL) over the open places (-inf elsewhere)."""
        logits = self.body(inputs).view(-1, belief_net_kernels.NUM_CARDS, belief_net_kernels.NUM_REL)
        logits = logits.masked_fill(~open_places(inputs)[:, None, :], float("-inf"))
        return torch.log_softmax(logits, dim=-1)

    def kernel_net(self) -> belief_net_kernels.BeliefNet:
        """The weights as the kernels read them (float32; ``w`` as (inputs, outputs))."""
        layers = [m for m in self.body if isinstance(m, nn.Linear)]
        arrays = []
        for layer in layers:
            arrays += [layer.weight.detach().numpy().T.copy(), layer.bias.detach().numpy().copy()]
        return belief_net_kernels.BeliefNet(*(np.ascontiguousarray(a, dtype=np.float32) for a in arrays))


def position_losses(logp: torch.Tensor, places: torch.Tensor) -> torch.Tensor:
    """Each position's mean log-loss (B,) over its unseen cards (``places`` >= 0, their true
    places) under the log-probabilities ``logp`` (B, 52, NUM_REL)."""
    unseen = places >= 0
    picked = logp.gather(2, places.clamp(min=0).long()[:, :, None])[:, :, 0]
    return -(torch.where(unseen, picked, torch.zeros_like(picked))).sum(1) / unseen.sum(1)


def chunks(total: int, size: int, seed: int, random_share: float) -> Iterator[Positions]:
    """``total`` training positions recorded afresh in chunks of ``size`` (chunk ``k`` from the
    seed ``seed + 1 + k``), so that no position is seen twice and memory stays one chunk's."""
    for k, start in enumerate(range(0, total, size)):
        yield record(min(size, total - start), seed + 1 + k, random_share=random_share)


def fit(train: Iterable[Positions], total: int, batch: int, lr: float, hidden: int, seed: int) -> BeliefNetTorch:
    """A belief net fitted by Adam (a one-cycle learning rate over ``total`` positions) on the mean
    log-loss per position, one pass over each chunk of ``train``."""
    torch.manual_seed(seed)
    net = BeliefNetTorch(hidden)
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=max(total // batch, 1))
    generator = torch.Generator().manual_seed(seed)
    steps, seen = 0, 0
    for chunk in train:
        inputs, places = torch.from_numpy(chunk.inputs), torch.from_numpy(chunk.places)
        order = torch.randperm(len(inputs), generator=generator)
        losses = []
        for start in range(0, len(order) - batch + 1, batch):
            if steps >= total // batch:
                break
            rows = order[start : start + batch]
            loss = position_losses(net(inputs[rows]), places[rows]).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            steps += 1
            losses.append(loss.item())
        seen += len(inputs)
        print(f"{seen:,} positions: train log-loss {np.mean(losses):.4f}", flush=True)
    return net


def report(net: BeliefNetTorch, held_out: Positions) -> dict[str, dict[str, float]]:
    """Held-out mean log-loss per unseen card, the net's (its probabilities as the kernels give them,
    :func:`fit_counts`) and the uniform deal's, by phase of the deal (:data:`PHASES`) and in all,
    with the positions counted."""
    losses = []
    with torch.no_grad():
        for k in range(0, len(held_out.inputs), 4096):
            inputs = torch.from_numpy(held_out.inputs[k : k + 4096])
            places = torch.from_numpy(held_out.places[k : k + 4096])
            losses.append(position_losses(fit_counts(net(inputs), inputs, places >= 0), places).numpy())
    learned = np.concatenate(losses)
    uniform = uniform_log_loss(held_out.inputs, held_out.places)
    bounds = [*PHASES.values(), np.inf]
    rows = {}
    for (name, low), high in zip(PHASES.items(), bounds[1:], strict=True):
        pick = (held_out.turns >= low) & (held_out.turns < high)
        rows[name] = {
            "positions": int(pick.sum()),
            "net": float(learned[pick].mean()),
            "uniform": float(uniform[pick].mean()),
        }
    rows["all"] = {"positions": len(learned), "net": float(learned.mean()), "uniform": float(uniform.mean())}
    for row in rows.values():
        row["ratio"] = row["net"] / row["uniform"]
    return rows


def main(argv: list[str] | None = None) -> None:
    """Record, fit, report and write a belief net (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m treppen.train.belief_net_torch", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", required=True, help="the belief net's file (.npz)")
    parser.add_argument("--positions", type=int, default=8_000_000, help="training positions, each recorded afresh")
    parser.add_argument("--chunk", type=int, default=1_000_000, help="positions recorded at a time")
    parser.add_argument("--held-out", type=int, default=50_000, help="held-out positions (recorded with --seed itself)")
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--random-share", type=float, default=0.1, help="share of random moves in the recorded deals")
    args = parser.parse_args(argv)
    started = time.process_time()
    held_out = record(args.held_out, args.seed, random_share=args.random_share)
    train = chunks(args.positions, args.chunk, args.seed, args.random_share)
    net = fit(train, args.positions, args.batch, args.lr, args.hidden, args.seed)
    rows = report(net, held_out)
    for name, row in rows.items():
        losses = f"net {row['net']:.4f}  uniform {row['uniform']:.4f}  ratio {row['ratio']:.3f}"
        print(f"{name:22s} {row['positions']:8d} positions  {losses}")
    save_belief_net(args.out, net.kernel_net(), num_players=2)
    summary = {"settings": vars(args), "held_out": rows, "cpu_seconds": time.process_time() - started}
    atomic_write_text(Path(args.out).with_suffix(".json"), json.dumps(summary, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
