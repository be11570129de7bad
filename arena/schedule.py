"""The duplicate schedule of a tournament: which deck is played at which table in which seating.

Pure: no agents, no files. Deck ``i`` (with its dealer, reshuffle seed and agent seeds) comes from a
generator seeded with ``(seed, i)``, so it is the same in every run and does not depend on ``decks``.
Each deck is replayed at every table (all ``players``-agent combinations of the agents, or
``tables_per_deck`` of them taken in turn) in every rotation of one seating order, so every agent
holds every seat once per deck and table and the luck of the cards cancels out.

Seating orders: a rotation keeps who sits right before whom. With 3 or 4 seats the seating order
of a table therefore changes from deck to deck, through all its ``(players - 1)!`` circular orders
(for 4 seats no smaller set is balanced: the complete directed graph on 4 vertices has no
decomposition into directed Hamiltonian cycles, Tillson 1980). Over every ``(players - 1)!``
visits of a table each ordered pair of its agents sits at every seat distance (1 .. players - 1
seats after) equally often, so copies of one agent meet the same neighbours and rate equal. With
2 seats there is one order and the schedule is a round robin with both seatings.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from treppen_env.rules import Rules, make_rules

Key = tuple[int, tuple[str, ...], int]
"""``(deck_id, table, rotation)``: what identifies a deal of a schedule."""


@dataclass(frozen=True)
class DealSpec:
    """One deal of a schedule: a deck replayed with one seating of one table.

    :param deck_id: index of the deck (the duplicate unit)
    :param table: the agents at the table, in table order
    :param rotation: seat ``s`` holds ``order[(s + rotation) % players]``, where ``order`` is the
        table's seating order for this deck (see :func:`seating_orders`)
    :param seats: the agent of each seat
    :param dealer: the dealing seat
    :param deck: the 52 card indices, top first
    :param seed: the environment seed (reshuffles), shared by all deals of the deck
    :param agent_seeds: the seed each seat's agent is reset with; it depends on the deck and seat only,
        so the agents' own randomness is duplicated too (two copies of one agent mirror each other)
    :param players: number of seats
    :param rules: the rules of the deal (RULES §8)
    """

    deck_id: int
    table: tuple[str, ...]
    rotation: int
    seats: tuple[str, ...]
    dealer: int
    deck: tuple[int, ...]
    seed: int
    agent_seeds: tuple[int, ...]
    players: int
    rules: Rules

    @property
    def key(self) -> Key:
        """``(deck_id, table, rotation)``: what identifies the deal in ``results.jsonl``."""
        return (self.deck_id, self.table, self.rotation)

    @property
    def deal_id(self) -> str:
        """The deal id written to the record (``deal``)."""
        return f"{self.deck_id}:{','.join(self.table)}:{self.rotation}"


def _derive_seed(*entropy: int) -> int:
    """A 32-bit seed derived from non-negative integers (stable across runs and platforms)."""
    return int(np.random.SeedSequence(list(entropy)).generate_state(1)[0])


def check_settings(agent_names: Sequence[str], players: int, decks: int, seed: int, workers: int = 1) -> None:
    """Check tournament settings.

    :raises ValueError: naming the problem: fewer than 2 agents, repeated names, players not in
        2..4, fewer agents than seats, decks < 1, a negative seed or workers < 1
    """
    names = list(agent_names)
    if len(names) < 2:
        raise ValueError(f"a tournament needs at least 2 agents; got {len(names)}: {names}")
    if len(set(names)) != len(names):
        raise ValueError(f"agent names must be distinct; got {names}")
    if isinstance(players, bool) or players not in (2, 3, 4):
        raise ValueError(f"players={players!r}; choose 2, 3 or 4")
    if len(names) < players:
        raise ValueError(
            f"a {players}-player table needs at least {players} agents; got {len(names)}: {names}. "
            f"Give a spec twice (e.g. --agents random random greedy) to seat copies of one agent."
        )
    if decks < 1:
        raise ValueError(f"decks={decks}; need at least 1 deck")
    if seed < 0:
        raise ValueError(f"seed={seed}; need a non-negative integer")
    if workers < 1:
        raise ValueError(f"workers={workers}; need at least 1")


def seating_orders(table: Sequence[str]) -> list[tuple[str, ...]]:
    """The circular seating orders of ``table``: its first agent first, the others in every order.

    ``(players - 1)!`` orders (1, 2 or 6); no two are rotations of each other.
    """
    first, *rest = table
    return [(first, *others) for others in itertools.permutations(rest)]


def schedule(
    agent_names: Sequence[str],
    players: int,
    decks: int,
    seed: int,
    rules: Rules | str = "treppenromme",
    tables_per_deck: int | None = None,
) -> list[DealSpec]:
    """The duplicate schedule: every deck at every table in every rotation of a seating order.

    Pure: the same arguments give the same list, deck by deck, and deck ``i`` does not depend on
    ``decks``. Tables are the ``players``-combinations of ``agent_names`` (in their order); with
    ``tables_per_deck = k`` deck ``i`` gets combinations ``i*k .. i*k+k-1`` (cyclically), so over
    the decks every table comes up equally often. The ``v``-th visit of a table uses its seating
    order ``v mod (players - 1)!`` (see the module docstring): seat distances between agents are
    balanced exactly when each table is visited a multiple of ``(players - 1)!`` times (e.g. decks
    a multiple of 2 for 3 players and of 6 for 4, with all tables per deck).

    :param agent_names: distinct agent names
    :param players: seats per table, 2..4
    :param decks: number of decks
    :param seed: tournament seed (non-negative)
    :param rules: the rules (or a preset name), handed to every deal as they are
    :param tables_per_deck: tables per deck, default all combinations
    :return: deal specs, deck-major
    :raises ValueError: for bad settings (see :func:`check_settings`) or rules
    """
    check_settings(agent_names, players, decks, seed)
    rules = make_rules(rules)
    rules.check_players(players)
    combos = list(itertools.combinations(agent_names, players))
    k = len(combos) if tables_per_deck is None else tables_per_deck
    if not 1 <= k <= len(combos):
        raise ValueError(f"tables_per_deck={tables_per_deck}; choose 1..{len(combos)} (all combinations)")
    orders = [seating_orders(table) for table in combos]
    specs = []
    for deck_id in range(decks):
        rng = np.random.default_rng([seed, deck_id])
        deck = tuple(int(c) for c in rng.permutation(52))
        dealer = int(rng.integers(players))
        env_seed = int(rng.integers(2**31))
        agent_seeds = tuple(_derive_seed(seed, deck_id, s) for s in range(players))
        for j in range(k):
            visit, t = divmod(deck_id * k + j, len(combos))
            table = combos[t]
            order = orders[t][visit % len(orders[t])]
            for r in range(players):
                seats = tuple(order[(s + r) % players] for s in range(players))
                specs.append(DealSpec(deck_id, table, r, seats, dealer, deck, env_seed, agent_seeds, players, rules))
    return specs
