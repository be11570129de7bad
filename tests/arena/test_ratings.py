"""Tests for arena.ratings: known answers, synthetic strengths, bootstrap intervals and bad input."""

import csv
import dataclasses
import json
import math
import re
import warnings

import choix
import numpy as np
import pytest

from treppen.arena.plots import axis_label
from treppen.arena.ratings import (
    ELO_PER_NAT,
    Ratings,
    _unbounded,
    elo_text,
    fit_ratings,
    interval_text,
    reference_anchor,
)
from treppen.arena.results import print_table, write_outputs


def _elo(r, agent):
    return float(r.elo[r.agents.index(agent)])


def _two_player(wins, losses, draws, a="a", b="b"):
    """Records of one pairing: ``wins`` for a, ``losses`` for a, ``draws``; seats alternate."""
    results = [(1, 0)] * wins + [(0, 1)] * losses + [(5, 5)] * draws
    recs = []
    for k, (pa, pb) in enumerate(results):
        seats = [(a, pa), (b, pb)] if k % 2 == 0 else [(b, pb), (a, pa)]
        recs.append({"deal": k, "agents": [s[0] for s in seats], "points": [s[1] for s in seats]})
    return recs


def _synthetic(strengths, n_deals, n_seats, seed):
    """Deals whose finishing order is drawn from Plackett-Luce with the given Elo strengths.

    Sorting ``theta + Gumbel noise`` gives a Plackett-Luce ranking; points are minus the place.
    """
    rng = np.random.default_rng(seed)
    names = list(strengths)
    theta = np.array([strengths[a] for a in names]) / ELO_PER_NAT
    recs = []
    for k in range(n_deals):
        seats = rng.choice(len(names), size=n_seats, replace=False)
        noisy = theta[seats] + rng.gumbel(size=n_seats)
        place = np.argsort(np.argsort(-noisy))
        recs.append({"deal": k, "agents": [names[i] for i in seats], "points": [-int(p) for p in place]})
    return recs


def test_two_players_match_closed_form():
    # 60 wins, 25 losses, 15 draws: s = (60 + 7.5) / 100.
    r = fit_ratings(_two_player(60, 25, 15), anchor="b", prior=0.0, n_boot=0)
    s = 0.675
    assert _elo(r, "a") == pytest.approx(400 * math.log10(s / (1 - s)), abs=1e-6)
    assert _elo(r, "b") == 0.0
    assert r.agents == ("a", "b")
    i, j = r.agents.index("a"), r.agents.index("b")
    assert r.score[i, j] == pytest.approx(s) and r.score[j, i] == pytest.approx(1 - s)
    assert r.count[i, j] == r.count[j, i] == 100
    assert np.isnan(r.score[i, i]) and r.count[i, i] == 0
    assert list(r.games) == [100, 100]


def test_prior_shrinks_toward_equal_strength():
    exact = fit_ratings(_two_player(60, 25, 15), anchor="b", prior=0.0, n_boot=0)
    shrunk = fit_ratings(_two_player(60, 25, 15), anchor="b", prior=1.0, n_boot=0)
    assert _elo(exact, "a") == pytest.approx(126.9682, abs=1e-4)
    assert _elo(shrunk, "a") == pytest.approx(121.4617, abs=1e-4)


def test_symmetric_agents_tie():
    r = fit_ratings(_two_player(30, 30, 10), anchor="a", prior=0.0, n_boot=50)
    assert _elo(r, "b") == pytest.approx(0.0, abs=1e-9)
    # A rock-paper-scissors cycle: every agent is equally strong.
    cycle = _two_player(7, 3, 0, "a", "b") + _two_player(7, 3, 0, "b", "c") + _two_player(7, 3, 0, "c", "a")
    for k, rec in enumerate(cycle):
        rec["deal"] = k
    r = fit_ratings(cycle, anchor=None, prior=0.0, n_boot=0)
    np.testing.assert_allclose(r.elo, 0.0, atol=1e-9)


def test_matches_choix_on_pairwise_data():
    rng = np.random.default_rng(3)
    pairs = [tuple(rng.permutation(4)[:2]) for _ in range(300)]
    names = ["p0", "p1", "p2", "p3"]
    recs = [{"deal": k, "agents": [names[w], names[lo]], "points": [2, 1]} for k, (w, lo) in enumerate(pairs)]
    r = fit_ratings(recs, anchor=None, prior=0.05, n_boot=0)
    ref = choix.opt_pairwise(4, pairs, alpha=0.05, tol=1e-10) * ELO_PER_NAT
    ref -= ref.mean()
    np.testing.assert_allclose([_elo(r, a) for a in names], ref, atol=1e-3)


@pytest.mark.parametrize("n_seats", [2, 3, 4])
def test_recovers_known_strengths(n_seats):
    strengths = {"weak": 0.0, "mid": 200.0, "strong": 400.0, "extra": 100.0}
    recs = _synthetic(strengths, 2000, n_seats, seed=n_seats)
    r = fit_ratings(recs, anchor="weak", n_boot=100, seed=1)
    assert r.agents == ("strong", "mid", "extra", "weak")
    for agent, elo in strengths.items():
        assert _elo(r, agent) == pytest.approx(elo, abs=40)
        k = r.agents.index(agent)
        assert r.ci_low[k] - 10 <= elo <= r.ci_high[k] + 10
    assert r.los[0, 3] == 1.0 and r.los[3, 0] == 0.0


def test_multiplayer_ties_share_a_place():
    rec = {"deal": 0, "agents": ["a", "b", "c", "d"], "points": [10, 10, -5, 30]}
    r = fit_ratings([rec], anchor=None, prior=0.1, n_boot=0)
    score = {(a, b): r.score[r.agents.index(a), r.agents.index(b)] for a in "abcd" for b in "abcd" if a != b}
    assert score["a", "b"] == score["b", "a"] == 0.5
    assert score["d", "a"] == score["a", "c"] == score["b", "c"] == 1.0
    assert r.agents[0] == "d" and r.agents[-1] == "c"
    assert _elo(r, "a") == pytest.approx(_elo(r, "b"), abs=1e-9)


def test_same_agent_in_two_seats_is_not_compared_with_itself():
    rec = {"deal": 0, "agents": ["a", "a", "b"], "points": [3, 1, 2]}
    r = fit_ratings([rec], anchor=None, n_boot=0)
    i, j = r.agents.index("a"), r.agents.index("b")
    assert r.count[i, j] == 2 and r.score[i, j] == 0.5 and r.count[i, i] == 0
    assert list(r.games) == [1, 1]


def test_intervals_shrink_with_more_deals():
    strengths = {"x": 0.0, "y": 150.0}
    small = fit_ratings(_synthetic(strengths, 100, 2, seed=5), anchor="x", n_boot=200, seed=0)
    large = fit_ratings(_synthetic(strengths, 1600, 2, seed=6), anchor="x", n_boot=200, seed=0)
    k_small, k_large = small.agents.index("y"), large.agents.index("y")
    width_small = small.ci_high[k_small] - small.ci_low[k_small]
    width_large = large.ci_high[k_large] - large.ci_low[k_large]
    assert width_large < 0.4 * width_small  # about 1/4 expected from 16 times the deals


def test_order_independent():
    recs = _synthetic({"a": 0.0, "b": 100.0, "c": 300.0}, 300, 3, seed=7)
    shuffled = [recs[i] for i in np.random.default_rng(0).permutation(len(recs))]
    r1 = fit_ratings(recs, n_boot=50, seed=11)
    r2 = fit_ratings(shuffled, n_boot=50, seed=11)
    assert r1.agents == r2.agents
    for field in ("elo", "ci_low", "ci_high", "score", "count", "los"):
        np.testing.assert_array_equal(getattr(r1, field), getattr(r2, field))


def test_bootstrap_resamples_whole_decks():
    recs = _synthetic({"a": 0.0, "b": 100.0}, 40, 2, seed=8)
    for k, rec in enumerate(recs):
        rec["deck_id"] = k // 4
    r = fit_ratings(recs, anchor="a", n_boot=20)
    assert (r.n_deals, r.n_groups, r.n_boot) == (40, 10, 20)
    # Without a deck id (absent or None) each deal is its own unit: decks 0, 1, 2 plus 30 deals.
    mixed = (
        recs[:10]
        + [{**rec, "deck_id": None} for rec in recs[10:20]]
        + [{k: v for k, v in rec.items() if k != "deck_id"} for rec in recs[20:]]
    )
    assert fit_ratings(mixed, n_boot=0).n_groups == 33


def test_los_is_complementary():
    r = fit_ratings(_synthetic({"a": 0.0, "b": 50.0, "c": 60.0}, 200, 2, seed=9), n_boot=100)
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose((r.los + r.los.T)[off], 1.0)
    assert np.isnan(np.diag(r.los)).all()
    assert 0 < r.los[1, 2] < 1


def test_unbeaten_agent_needs_prior():
    recs = _two_player(10, 0, 0)
    r = fit_ratings(recs, anchor="b", n_boot=30)
    assert 400 < _elo(r, "a") < math.inf  # the prior keeps the point estimate finite
    with pytest.raises(ValueError, match=r"infinite.*prior > 0"):
        fit_ratings(recs, prior=0.0)


def _decks(records, deals_per_deck=2):
    for k, rec in enumerate(records):
        rec["deck_id"] = k // deals_per_deck
    return records


# Score matrices by hand: wins[i, j] = score of agent i against agent j (agents a, b, c, d in order).
CHAIN = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=float)  # a beat b, b beat c, nothing else
CHAIN_BC_DRAW = np.array([[0, 1, 0], [0, 0, 0.5], [0, 0.5, 0]])  # a beat b, b and c drew
TWO_ISLANDS = np.array([[0, 2, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]], dtype=float)  # a-b, c-d apart


@pytest.mark.parametrize(
    ("wins", "anchor", "above", "below"),
    [
        (CHAIN, 1, [True, False, False], [False, False, True]),  # relative to b: a has no ceiling, c no floor
        (CHAIN, None, [True, True, False], [False, True, True]),  # relative to the mean: b has neither
        (CHAIN, 0, [False, False, False], [False, True, True]),
        (CHAIN_BC_DRAW, 1, [True, False, False], [False, False, False]),
        (CHAIN_BC_DRAW, 2, [True, False, False], [False, False, False]),
        (TWO_ISLANDS, 0, [False, False, True, True], [False, False, True, True]),
        (TWO_ISLANDS, None, [True] * 4, [True] * 4),
        (np.ones((3, 3)) - np.eye(3), None, [False] * 3, [False] * 3),  # strongly connected: all bounded
    ],
)
def test_which_ratings_the_data_do_not_bound(wins, anchor, above, below):
    got_above, got_below = _unbounded(wins, anchor)
    assert got_above.tolist() == above and got_below.tolist() == below


def test_agent_that_won_everything_gets_no_interval_from_the_prior():
    # 4 decks of 2 deals, a wins all 8: every resample is all wins, so no resample bounds a above.
    recs = _decks(_two_player(8, 0, 0))
    r = fit_ratings(recs, anchor="b", n_boot=200)
    assert (r.ci_low[0], r.ci_high[0]) == (math.inf, math.inf) and (r.ci_low[1], r.ci_high[1]) == (0.0, 0.0)
    assert r.unbounded == ("above", None)
    assert [row[3] for row in r.table(header=False)] == ["unbounded above", "anchor"]  # fixed at 0
    r = fit_ratings(recs, anchor=None, n_boot=200)  # relative to the mean, b has no floor either
    assert r.unbounded == ("above", "below")
    assert [row[3] for row in r.table(header=False)] == ["unbounded above", "unbounded below"]
    d = json.loads(json.dumps(r.to_dict()))  # strict JSON: no Infinity
    assert (d["ci_low"], d["ci_high"], d["unbounded"]) == ([None, None], [None, None], ["above", "below"])
    back = Ratings.from_dict(d)
    np.testing.assert_array_equal(back.ci_low, [math.inf, -math.inf])
    np.testing.assert_array_equal(back.ci_high, [math.inf, -math.inf])


def test_unbeaten_agent_among_others_leaves_only_its_own_interval_open():
    # a beats b and c in every deal; b and c share their deals 21:15, so their ratings are bounded.
    recs = _two_player(6, 0, 0, "a", "b") + _two_player(6, 0, 0, "a", "c") + _two_player(21, 15, 0, "b", "c")
    for k, rec in enumerate(recs):
        rec["deal"] = k
    r = fit_ratings(_decks(recs), anchor="c", n_boot=200)
    assert r.agents == ("a", "b", "c") and r.unbounded == ("above", None, None)
    assert r.ci_low[0] == r.ci_high[0] == math.inf
    assert np.isfinite([r.ci_low[1], r.ci_high[1]]).all() and r.ci_low[1] < r.elo[1] < r.ci_high[1]


def test_one_loss_in_forty_leaves_the_upper_end_open():
    # About 36% of resamples miss the one loss and leave a unbounded above; the lower end stays finite.
    r = fit_ratings(_two_player(39, 1, 0), anchor="b", n_boot=500, seed=0)
    assert r.unbounded == ("above", None) and r.ci_high[0] == math.inf
    assert 200 < r.ci_low[0] < r.elo[0]
    assert r.table(header=False)[0][3] == f"> {r.ci_low[0]:+.0f}"


def test_prior_zero_intervals_stay_finite_on_connected_data():
    r = fit_ratings(_two_player(30, 10, 0), anchor="b", prior=0.0, n_boot=100, seed=0)
    assert r.unbounded == (None, None) and np.isfinite(r.ci_low).all() and np.isfinite(r.ci_high).all()


@pytest.mark.parametrize(
    ("low", "high", "text"),
    [
        (12.4, 80.6, "[+12, +81]"),
        (-30.0, -5.0, "[-30, -5]"),
        (12.4, math.inf, "> +12"),
        (-math.inf, -120.2, "< -120"),
        (math.inf, math.inf, "unbounded above"),
        (-math.inf, -math.inf, "unbounded below"),
        (-math.inf, math.inf, "unbounded"),
        (math.nan, math.nan, "-"),
    ],
)
def test_interval_text(low, high, text):
    assert interval_text(low, high) == text


def test_tied_elo_values_share_a_rank():
    r = fit_ratings(_two_player(30, 30, 10), anchor="a", prior=0.0, n_boot=0)
    assert r.ranks == (1, 1) and [row[0] for row in r.table(header=False)] == ["1", "1"]
    # c and d are copies that each beat b 3:1 and lost to a 1:3.
    recs = []
    for copy in ("c", "d"):
        recs += _two_player(3, 1, 0, copy, "b") + _two_player(1, 3, 0, copy, "a")
    for k, rec in enumerate(recs):
        rec["deal"] = k
    r = fit_ratings(recs, anchor="b", n_boot=0)
    assert r.agents == ("a", "c", "d", "b") and r.ranks == (1, 2, 2, 4)


def test_outputs_of_unbounded_ratings(tmp_path, capsys):
    r = fit_ratings(_decks(_two_player(8, 0, 0, "a_rather_long_agent_name_that_a_narrow_table_would_cut", "b")), "b")
    write_outputs(tmp_path, r)
    rows = list(csv.DictReader((tmp_path / "ratings.csv").open()))
    assert [(row["ci_low"], row["ci_high"], row["unbounded"]) for row in rows] == [("", "", "above"), ("0", "0", "")]
    assert Ratings.from_dict(json.loads((tmp_path / "ratings.json").read_text())).unbounded == ("above", None)
    assert (tmp_path / "elo.png").read_bytes()[:4] == b"\x89PNG"
    print_table(r)  # captured, so not a terminal: the table must not cut the name
    printed = capsys.readouterr().out
    assert "a_rather_long_agent_name_that_a_narrow_table_would_cut" in printed
    assert "unbounded above" in printed and "unbounded: the data do not bound that side" in printed
    assert "score: mean result against each other seat of a deal" in printed


def test_prior_zero_bootstrap_skips_infinite_resamples():
    r = fit_ratings(_two_player(1, 1, 0), anchor="b", prior=0.0, n_boot=100, seed=0)
    assert r.n_boot == 45  # the 55 resamples with only a's win (or only b's) are left out
    assert list(r.elo) == list(r.ci_low) == list(r.ci_high) == [0.0, 0.0]


def test_anchor_fallback_and_requirement():
    recs = _two_player(6, 4, 0)
    r = fit_ratings(recs, anchor="random", n_boot=0)
    assert r.anchor is None and sum(r.elo) == pytest.approx(0.0, abs=1e-9)
    assert fit_ratings(recs, anchor="b", n_boot=0).anchor == "b"
    with pytest.raises(ValueError, match="anchor 'random' played no deal"):
        fit_ratings(recs, anchor="random", require_anchor=True)


def test_to_dict_and_table():
    r = fit_ratings(_two_player(6, 3, 1), anchor="b", n_boot=20)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["agents"] == ["a", "b"] and d["anchor"] == "b" and d["score"][0][0] is None
    assert d["count"] == [[0, 10], [10, 0]] and d["n_boot"] == 20
    rows = r.table()
    assert rows[0] == ("rank", "agent", "elo", "ci", "games", "score")
    assert rows[1][:2] == ("1", "a") and rows[1][4:] == ("10", "0.650")
    assert rows[2][2] == "+0" and len(r.table(header=False)) == 2
    assert fit_ratings(_two_player(6, 3, 1), n_boot=0).table()[1][3] == "-"


@pytest.mark.parametrize(
    ("records", "kwargs", "match"),
    [
        ([], {}, "at least 2 distinct agents"),
        ([{"deal": 0, "agents": ["a", "a"], "points": [1, 0]}], {}, "at least 2 distinct agents"),
        ([{"deal": 0, "agents": ["a", "b", "c"], "points": [1, 0]}], {}, "one points entry per seat"),
        ([{"deal": 0, "agents": ["a"], "points": [1]}], {}, "at least 2 seats"),
        ([{"deal": 0, "agents": ["a", "b"]}], {}, "keys 'deal', 'agents', 'points'"),
        ([{"deal": 0, "agents": ["a", "b"], "points": [1, "x"]}], {}, "points must be numbers"),
        ([{"deal": 0, "agents": ["a", "b"], "points": [1, math.nan]}], {}, "points must be finite"),
        ([{"deal": 0, "agents": ["a", 3], "points": [1, 0]}], {}, "agent names must be strings"),
        ([{"deal": 0, "agents": ["a", "b"], "points": [1, 0]}], {"prior": -1.0}, "prior >= 0"),
        ([{"deal": 0, "agents": ["a", "b"], "points": [1, 0]}], {"ci_level": 1.0}, "ci_level"),
    ],
)
def test_bad_input_raises(records, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit_ratings(records, **kwargs)


def test_scale_names_the_zero(capsys):
    anchored = fit_ratings(_two_player(6, 4, 0), anchor="b", prior=0.0, n_boot=0)
    free = fit_ratings(_two_player(6, 4, 0), anchor=None, prior=0.0, n_boot=0)
    assert (anchored.scale, free.scale) == ("b = 0", "mean = 0")
    print_table(free)
    printed = capsys.readouterr().out
    assert "Elo (10 deals, 10 decks, mean = 0)" in printed and "None" not in printed


def test_an_anchor_named_otherwise_names_what_it_plays(tmp_path, capsys):
    """The level easy plays greedy: the one scale is greedy = 0, and the title says so (docs/guide/tournaments.md)."""
    r = dataclasses.replace(fit_ratings(_two_player(6, 4, 0, "medium", "easy"), anchor="easy"), anchor_spec="greedy")
    assert r.scale == "greedy = 0 (easy)"
    assert dataclasses.replace(r, anchor_spec="easy").scale == "easy = 0"
    print_table(r)
    assert "Elo (10 deals, 10 decks, greedy = 0 (easy))" in capsys.readouterr().out
    write_outputs(tmp_path, r)
    data = json.loads((tmp_path / "ratings.json").read_text())
    assert data["anchor_spec"] == "greedy" and Ratings.from_dict(data).scale == "greedy = 0 (easy)"
    del data["anchor_spec"]  # a file written before the field reads as before
    assert Ratings.from_dict(data).scale == "easy = 0"


def test_marked_agents_end_in_a_star_and_the_note_says_why(capsys):
    r = fit_ratings(_two_player(6, 4, 0, "llm", "greedy"), anchor="greedy", n_boot=0)
    print_table(r, marked=["llm"], limit=0.25)
    printed = capsys.readouterr().out
    assert re.search(r"│ +\d │ llm \* +│", printed) and re.search(r"│ +\d │ greedy +│", printed)
    note = "*: the fallback played more than 25% of this agent's decisions (see Model calls): its Elo rates"
    assert note in " ".join(printed.split())
    print_table(r)
    assert "*" not in capsys.readouterr().out


def test_long_names_keep_the_plots_laid_out(tmp_path):
    """A spec with settings is an agent's name: its axis label wraps, and the layout holds (no
    'constrained_layout not applied' warning)."""
    name = "llm,base_url=http://127.0.0.1:8080/v1,model=qwen3-8b-instruct-q4_k_m,temperature=0.2,timeout=30"
    r = fit_ratings(_decks(_two_player(6, 4, 0, name, "greedy")), anchor="greedy", n_boot=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_outputs(tmp_path, r)
    assert (tmp_path / "pairwise.png").read_bytes()[:4] == b"\x89PNG"
    lines = ["llm,", "base_url=htt….0.1:8080/v1,", "model=qwen3-…truct-q4_k_m,", "temperature=0.2,..."]
    assert axis_label(name) == "\n".join(lines)  # pieces over 25 characters cut in the middle, 4 lines at most
    assert axis_label("greedy") == "greedy" and axis_label("ismcts,seconds=1") == "ismcts,seconds=1"
    assert axis_label(",".join("abcdefghijklmnopqrstuvwxyz" * 3)).endswith("\nn,o,p,q,r,s,t,u,v,w,x,y,z,...")


def test_the_scale_is_greedy_0_and_random_0_only_without_greedy():
    assert reference_anchor(["greedy", "mcts", "random"]) == "greedy"
    assert reference_anchor(["mcts", "random"]) == "random"
    assert reference_anchor(["mcts", "ismcts"]) is None
    assert elo_text(-0.3) == "+0" and elo_text(-0.6) == "-1" and interval_text(-0.4, 0.2) == "[+0, +0]"
