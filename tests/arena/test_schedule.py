"""The duplicate schedule (arena.schedule): every deck at every table in every seat rotation, and
seating orders balanced so that copies of one agent meet the same neighbours."""

from collections import Counter
from itertools import combinations, permutations
from math import factorial

import pytest

from treppen.arena.ratings import fit_ratings
from treppen.arena.schedule import schedule, seating_orders
from treppen.arena.tournament import run_tournament


@pytest.mark.parametrize(
    ("names", "players", "tables_per_deck"),
    [
        (["a", "b"], 2, None),
        (["a", "b", "c", "d"], 2, None),
        (["a", "b", "c"], 3, None),
        (["a", "b", "c", "d"], 3, None),
        (["a", "b", "c", "d", "e"], 4, 1),
    ],
)
def test_schedule_is_duplicate(names, players, tables_per_deck):
    decks = 5
    specs = schedule(names, players, decks, seed=3, tables_per_deck=tables_per_deck)
    n_tables = len(list(combinations(names, players))) if tables_per_deck is None else tables_per_deck
    assert len(specs) == decks * n_tables * players
    assert len({s.key for s in specs}) == len(specs)
    by_table = {}
    for s in specs:
        assert sorted(s.deck) == list(range(52))
        assert sorted(s.seats) == sorted(s.table)
        by_table.setdefault((s.deck_id, s.table), []).append(s)
    for group in by_table.values():
        # every deck is replayed in all rotations of one seating order, same deck, dealer and seeds
        order = group[0].seats
        assert [s.rotation for s in group] == list(range(players))
        assert [s.seats for s in group] == [order[r:] + order[:r] for r in range(players)]
        assert len({(s.deck, s.dealer, s.seed, s.agent_seeds) for s in group}) == 1
    seat_counts = Counter((a, i) for s in specs for i, a in enumerate(s.seats))
    assert len(set(seat_counts.values())) == 1 and len(seat_counts) == len(names) * players
    assert len({s.deck for s in specs}) == decks
    # pure, and deck i does not depend on the number of decks
    assert schedule(names, players, decks, seed=3, tables_per_deck=tables_per_deck) == specs
    longer = schedule(names, players, decks + 2, seed=3, tables_per_deck=tables_per_deck)
    assert longer[: len(specs)] == specs
    assert schedule(names, players, decks, seed=4, tables_per_deck=tables_per_deck)[0].deck != specs[0].deck


def test_seating_orders_are_every_circular_order():
    for players in (2, 3, 4):
        table = tuple("abcd"[:players])
        orders = seating_orders(table)
        assert len(orders) == factorial(players - 1)
        rotations = {o[r:] + o[:r] for o in orders for r in range(players)}
        assert rotations == set(permutations(table))  # every seating, each exactly once


@pytest.mark.parametrize(
    ("names", "players", "tables_per_deck"),
    [
        (["a", "b", "c"], 3, None),
        (["a", "b", "c", "d"], 3, None),
        (["a", "b", "c", "d"], 4, None),
        (["a", "b", "c", "d", "e"], 4, 2),
        (["a", "b", "c", "d", "e"], 3, 4),
    ],
)
def test_every_ordered_pair_sits_at_every_distance_equally_often(names, players, tables_per_deck):
    """The seat bias that rotating seats alone leaves: with rotations only, one agent always sat right before the same
    other. Now, over (players - 1)! visits of each table, each ordered pair of agents at a table
    sits at each distance 1 .. players - 1 (seats after) equally often."""
    tables = list(combinations(names, players))
    k = len(tables) if tables_per_deck is None else tables_per_deck
    visits = factorial(players - 1)
    decks = visits * len(tables) // k
    assert decks * k == visits * len(tables)  # every table visited exactly `visits` times
    specs = schedule(names, players, decks, seed=0, tables_per_deck=tables_per_deck)
    distance = Counter()
    for s in specs:
        for i, j in permutations(range(players), 2):
            distance[s.table, s.seats[i], s.seats[j], (j - i) % players] += 1
    expected = {
        (t, x, y, d): visits * players // (players - 1)
        for t in tables
        for x, y in permutations(t, 2)
        for d in range(1, players)
    }
    assert distance == expected


def test_copies_of_greedy_rate_equal_at_four_seats():
    """Random and three copies of greedy at 4 seats over 12 decks (2 x 3!, balanced): the copies
    rate within each other's 95% intervals, all far above random. (With rotations only, the copy
    seated just before random rated 26-28 Elo above the other two.)"""
    entrants = {"random": "random", "greedy": "greedy", "greedy-2": "greedy", "greedy-3": "greedy"}
    records = run_tournament(entrants, players=4, decks=12, seed=0)
    assert len(records) == 12 * 4
    before_random = Counter(r["agents"][r["agents"].index("random") - 1] for r in records)
    assert before_random == {"greedy": 16, "greedy-2": 16, "greedy-3": 16}  # the seat that feeds random
    ratings = fit_ratings(records, anchor="random", n_boot=200, seed=0)
    copies = [ratings.agents.index(name) for name in ("greedy", "greedy-2", "greedy-3")]
    for i in copies:
        assert ratings.elo[i] > 200
        for j in copies:
            assert ratings.ci_low[j] <= ratings.elo[i] <= ratings.ci_high[j]
