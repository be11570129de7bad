"""Tests for arena.tournament, arena.results and arena.plots: the duplicate schedule, mirrored
results of identical agents, resuming, parallel workers, output files and bad input."""

import csv
import json
import re
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from treppen import agents
from treppen.agents.base import RandomAgent
from treppen.apps import cli
from treppen.arena.match import build_agents
from treppen.arena.ratings import fit_ratings
from treppen.arena.results import RESULTS_FILE, load_results, read_results, record_key
from treppen.arena.tournament import resolve_specs, run_tournament
from treppen_env.rules import make_rules


def _canon(records):
    return sorted(json.dumps(r, sort_keys=True) for r in records)


def _pair_random(names=("a", "b")):
    return {n: RandomAgent() for n in names}


def test_identical_random_agents_mirror_each_other():
    records = run_tournament(_pair_random(), players=2, decks=8, seed=1)
    assert len(records) == 16
    for first, second in zip(records[::2], records[1::2], strict=True):
        assert first["deck_id"] == second["deck_id"] and (first["rotation"], second["rotation"]) == (0, 1)
        assert second["agents"] == first["agents"][::-1]
        assert second["points"] == first["points"]  # same game, names swapped
        assert second["steps"] == first["steps"] and second["outcome"] == first["outcome"]
    ratings = fit_ratings(records, anchor=None, n_boot=50)
    assert ratings.elo == pytest.approx([0.0, 0.0], abs=1e-6)
    assert ratings.score[0, 1] == ratings.score[1, 0] == 0.5
    assert ratings.count[0, 1] == ratings.count[1, 0] == 16
    assert list(ratings.games) == [16, 16]


def test_greedy_rates_clearly_above_random():
    players = {"random": agents.load("random"), "greedy": agents.load("greedy")}
    records = run_tournament(players, players=2, decks=10, seed=0)
    ratings = fit_ratings(records, anchor="random", n_boot=200, seed=0)
    assert ratings.agents == ("greedy", "random")
    assert ratings.score[0, 1] == 1.0 and ratings.count[0, 1] == 20  # greedy wins all 20 deals
    # so only the prior bounds its rating, and the data bound no side of its interval above
    assert ratings.elo == pytest.approx([1013.5109, 0.0], abs=1e-4)
    assert ratings.unbounded == ("above", None) and ratings.ci_low[0] == ratings.ci_high[0] == np.inf


def test_three_players_balance_seats_and_outcomes():
    records = run_tournament(_pair_random("abc"), players=3, decks=2, seed=5)
    assert len(records) == 6
    assert Counter((a, i) for r in records for i, a in enumerate(r["agents"])) == Counter(
        {(a, i): 2 for a in "abc" for i in range(3)}
    )
    for r in records:
        assert len(r["points"]) == 3 and r["outcome"] in ("went_out", "romme", "stock_exhausted", "max_turns")


def test_resume_after_limit_neither_duplicates_nor_loses_deals(tmp_path):
    full = run_tournament(_pair_random("abc"), decks=3, seed=2)
    keys = {record_key(r) for r in full}
    new = []
    first = run_tournament(_pair_random("abc"), decks=3, seed=2, out=tmp_path, limit=7, on_record=new.append)
    assert len(first) == len(new) == 7
    assert len((tmp_path / RESULTS_FILE).read_text().splitlines()) == 7
    new.clear()
    second = run_tournament(_pair_random("abc"), decks=3, seed=2, out=tmp_path, on_record=new.append)
    assert len(new) == len(full) - 7
    lines = (tmp_path / RESULTS_FILE).read_text().splitlines()
    assert len(lines) == len(full) == 18
    assert {record_key(json.loads(line)) for line in lines} == keys
    assert _canon(second) == _canon(full)
    # nothing left to play
    assert run_tournament(_pair_random("abc"), decks=3, seed=2, out=tmp_path, on_record=new.append) == second
    assert len(new) == len(full) - 7


def test_resume_after_cut_off_file(tmp_path):
    full = run_tournament(_pair_random(), decks=4, seed=0, out=tmp_path)
    path = tmp_path / RESULTS_FILE
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]) + lines[3][:25])  # killed while writing line 4
    assert len(read_results(tmp_path)) == 3
    resumed = run_tournament(_pair_random(), decks=4, seed=0, out=tmp_path)
    assert _canon(resumed) == _canon(full)
    assert _canon(read_results(tmp_path)) == _canon(full)
    assert len(path.read_text().splitlines()) == len(full)


def test_more_deals_extend_but_other_settings_fail(tmp_path):
    run_tournament(_pair_random(), decks=2, seed=0, out=tmp_path)
    new = []
    records = run_tournament(_pair_random(), decks=3, seed=0, out=tmp_path, on_record=new.append)
    assert len(records) == 6 and {r["deck_id"] for r in new} == {2}
    with pytest.raises(ValueError, match="seed=0"):
        run_tournament(_pair_random(), decks=3, seed=1, out=tmp_path)
    with pytest.raises(ValueError, match="agents="):
        run_tournament(_pair_random("ax"), decks=3, seed=0, out=tmp_path)
    with pytest.raises(ValueError, match="decks may only grow"):
        run_tournament(_pair_random(), decks=2, seed=0, out=tmp_path)


def test_the_rules_object_reaches_every_deal_and_tournament_json(tmp_path):
    """One rules object: max_turns=5 cuts every deal off (RULES §6.5); tournament.json records the
    preset and the options that differ from it, and other rules do not resume."""
    rules = make_rules("rum500", max_turns=5)
    records = run_tournament(_pair_random(), decks=2, seed=0, out=tmp_path, rules=rules)
    assert [r["outcome"] for r in records] == ["max_turns"] * 4
    header = json.loads((tmp_path / "tournament.json").read_text())
    assert header["rules"] == {"preset": "rum500", "options": {"max_turns": 5}}
    with pytest.raises(ValueError, match="rules="):
        run_tournament(_pair_random(), decks=2, seed=0, out=tmp_path, rules="rum500")


def test_malformed_line_in_the_middle_is_an_error(tmp_path):
    run_tournament(_pair_random(), decks=2, seed=0, out=tmp_path)
    path = tmp_path / RESULTS_FILE
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "{oops", *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match=r"results.jsonl:2"):
        read_results(tmp_path)


def test_two_workers_give_the_same_records_as_one(tmp_path):
    specs = {"random": "random", "greedy": "greedy", "random-2": "random"}
    one = run_tournament(specs, decks=2, seed=7)
    two = run_tournament(specs, decks=2, seed=7, workers=2, out=tmp_path)
    assert len(one) == 12
    assert _canon(two) == _canon(one)
    assert _canon(read_results(tmp_path)) == _canon(one)


def test_cli_writes_files_that_parse(tmp_path, capsys):
    out = tmp_path / "t"
    argv = ["tournament", "--agents", "random", "greedy", "--decks", "3", "--out", str(out), "--boot", "50"]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "Elo (6 deals, 3 decks, greedy = 0)" in printed and "tournament in" not in printed  # the one scale
    assert re.search(r"│ +1 │ greedy +│ +\+0 │ +anchor │", printed)
    header = json.loads((out / "tournament.json").read_text())
    assert header["agents"] == {"random": "random", "greedy": "greedy"} and header["decks"] == 3
    data = json.loads((out / "ratings.json").read_text())
    assert data["agents"] == ["greedy", "random"] and data["anchor"] == "greedy"
    for key in ("score", "count", "los"):
        assert np.asarray(data[key], dtype=float).shape == (2, 2)
    rows = list(csv.DictReader((out / "ratings.csv").open()))
    assert [r["agent"] for r in rows] == ["greedy", "random"] and float(rows[0]["elo"]) == 0.0
    for name in ("elo.png", "pairwise.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    records, ratings = load_results(out)
    assert len(records) == 6 and ratings.agents == ("greedy", "random")
    assert ratings.elo[0] == pytest.approx(data["elo"][0])
    assert not list(out.glob("*.tmp*"))
    # rerunning resumes: nothing new is played, it says so, the files stay valid
    assert cli.main(argv) == 0
    assert len(read_results(out)) == 6
    assert capsys.readouterr().out.startswith(f"tournament in {out}: complete; rating the results again\n")
    # more decks: the played deals are kept
    assert cli.main([*argv[:5], "4", *argv[6:]]) == 0
    assert len(read_results(out)) == 8
    assert capsys.readouterr().out.startswith(f"tournament in {out}: resuming, 6 of 8 deals played\n")


def test_deals_is_a_deprecated_alias_of_decks(tmp_path, capsys):
    """``--deals`` counted decks; it still works, with a visible warning, and must agree with
    ``--decks`` when both are given."""
    out = tmp_path / "t"
    argv = ["tournament", "--agents", "random", "random", "--out", str(out), "--boot", "0"]
    with pytest.warns(DeprecationWarning, match="--deals is deprecated"):
        assert cli.main([*argv, "--deals", "2"]) == 0
    assert "warning: --deals is deprecated and counts decks; use --decks" in capsys.readouterr().err
    assert json.loads((out / "tournament.json").read_text())["decks"] == 2
    assert len(read_results(out)) == 2 * 2
    with pytest.warns(DeprecationWarning):
        assert cli.main([*argv, "--deals", "2", "--decks", "3"]) == 2
    assert "--decks 3 and --deals 2 disagree" in capsys.readouterr().err


def test_a_folder_of_the_old_format_is_not_resumed(tmp_path):
    """Format 1 seated 3 and 4 players in cyclic orders only and counted 'deals'."""
    run_tournament(_pair_random(), decks=1, seed=0, out=tmp_path)
    header = json.loads((tmp_path / "tournament.json").read_text())
    assert header["version"] == 2
    header["version"] = 1
    (tmp_path / "tournament.json").write_text(json.dumps(header))
    with pytest.raises(ValueError, match=r"format version 1 \(now 2.*pass a new --out"):
        run_tournament(_pair_random(), decks=1, seed=0, out=tmp_path)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--agents", "random", "no_such_agent"], "no_such_agent"),
        (["--agents", "random"], "at least 2 agents"),
        (["--agents", "random", "greedy", "--players", "5"], "argument --players: '5' is not a whole number 2..4"),
        (["--agents", "random", "greedy", "--players", "3"], "3-player table needs at least 3 agents"),
        (["--agents", "random", "greedy", "--decks", "0"], "argument --decks: '0' is not a whole number of at least 1"),
        (["--agents", "random", "human"], "human"),
        (["--agents", "nobody"], "error: unknown agent spec 'nobody'; valid specs"),  # named before the count
        (["--agents", "grredy", "random"], "error: unknown agent spec 'grredy' (did you mean greedy?); valid specs"),
        (
            ["--agents", "random", "greedy", "--max-fallback", "20"],
            "argument --max-fallback: '20' is not a share from 0 to 1",
        ),
        (
            ["--agents", "random", "nobody"],
            "valid specs: the levels ['easy', 'medium', 'hard'], the built-in agents "
            "['greedy', 'ismcts', 'llm', 'planner', 'random', 'rollout'], the zoo's agents",
        ),  # no human: it cannot play here
    ],
)
def test_bad_input_is_a_clear_error(tmp_path, capsys, argv, message):
    assert cli.main(["tournament", *argv, "--out", str(tmp_path / "t")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "t" / RESULTS_FILE).exists()


def test_the_levels_of_play_and_serve_are_agent_specs(tmp_path, capsys):
    """easy is greedy, so it is the scale's zero, and the title names greedy; medium the zoo's policy for the table."""
    assert cli.main(["tournament", "--agents", "easy", "medium", "--decks", "1", "--out", str(tmp_path / "l")]) == 0
    levels = json.loads((tmp_path / "l" / "ratings.json").read_text())
    assert levels["anchor"] == "easy" and levels["specs"] == {"easy": "greedy", "medium": "ppo-2p"}
    assert "Elo (2 deals, 1 decks, greedy = 0 (easy))" in capsys.readouterr().out


def test_agent_names_from_specs():
    names = resolve_specs(["random", "random", "runs/exp1/final_model.zip", "runs/exp1", "best=greedy"])
    assert list(names) == ["random", "random-2", "exp1", "exp1-2", "best"]
    assert names["best"] == "greedy" and names["random-2"] == "random"
    more = resolve_specs(["runs/x/best_model.zip", "runs/y/model.zip", "runs/x/ckpt/ck_100_steps.zip"])
    assert list(more) == ["x-best_model", "y", "ck_100_steps"]


def test_search_agents_play_a_rum500_tournament_without_spelling_the_rules():
    """``run_tournament(rules=...)`` hands the game's rules to each agent it builds from a spec: a
    search agent simulating treppenromme would raise on a rum500 mask (RULES §4.2)."""
    records = run_tournament({"greedy": "greedy", "ismcts": "ismcts,playouts=2"}, decks=1, rules="rum500", seed=3)
    assert len(records) == 2 and all(r["steps"] > 0 for r in records)


def test_the_estimate_builds_the_agents_with_the_tables_rules(monkeypatch, tmp_path):
    """A search agent simulating treppenromme would raise on a rum500 mask while it is timed."""
    from treppen.apps import tournament_command as command
    from treppen_env.rules import make_rules

    timed = {}

    def decision_seconds(agent, *_):
        timed[agent.name] = getattr(agent, "rules", None)
        return 0.0

    monkeypatch.setattr(command, "decision_seconds", decision_seconds)
    argv = ["tournament", "--agents", "greedy", "rollout,playouts=4", "--rules", "rum500", "--decks", "1"]
    assert cli.main([*argv, "--out", str(tmp_path / "t"), "--boot", "0"]) == 0
    assert timed["rollout"] == make_rules("rum500")


def test_a_long_run_is_estimated_first(monkeypatch):
    from treppen import agents
    from treppen.apps import tournament_command as command
    from treppen_env.rules import make_rules

    rules = make_rules("treppenromme")
    greedy = agents.load("greedy")
    acts = []
    monkeypatch.setattr(greedy, "act", lambda observation, act=greedy.act: acts.append(1) or act(observation))
    # a fake clock: the first decision (which compiles the kernels in a fresh install) 5 s, the others 1/8 s
    clock = SimpleNamespace(perf_counter=lambda: 5.0 * min(len(acts), 1) + 0.125 * max(len(acts) - 1, 0))
    monkeypatch.setattr(command, "time", clock)
    assert command.decision_seconds(greedy, 2, rules) == 0.125  # 8 decisions timed after an untimed one
    assert len(acts) == command.PROBE_DECISIONS + 1 == 9
    slow = {"GreedyAgent": 0.002, "ISMCTSAgent": 0.25}  # seconds a decision; random and rollout 0
    monkeypatch.setattr(command, "decision_seconds", lambda agent, *_: slow.get(type(agent).__name__, 0.0))
    quick = build_agents({"greedy": "greedy", "random": "random"}, rules)
    assert command.estimate_text(quick, 2, rules, 600, 1) is None  # 36 s: quick
    specs = {"greedy": "greedy", "ismcts,playouts=40": "ismcts,playouts=40", "rollout": "rollout,playouts=100"}
    specs = build_agents(specs, rules)
    text = command.estimate_text(specs, 2, rules, 180, 1)
    assert text == (
        "estimate: about 15 min for 180 deals on 1 worker (ismcts,playouts=40: 0.25 s a decision, "
        "about 60 decisions a deal); Ctrl-C stops, the same command resumes"
    )
    assert command.estimate_text(specs, 2, rules, 180, 4).startswith("estimate: about 4 min for 180 deals on 4 workers")
    assert command.estimate_text(specs, 2, rules, 0, 1) is None
