"""``treppen analyse``: a recorded position's moves ranked by search (docs/ARCHITECTURE.md "Command line")."""

from __future__ import annotations

import math
import re

import pytest

from tests.treppen_env.test_records import play_recorded
from treppen.agents import RolloutAgent
from treppen.agents.search import MoveEstimate
from treppen.apps.analyse import NOTE, format_table
from treppen.apps.cli import main
from treppen_env import records
from treppen_env.cards import bits_to_cards

BUDGET = 20
AGENT = f"rollout,playouts={BUDGET}"


@pytest.fixture(scope="module")
def game_file(tmp_path_factory):
    """Three random deals of a game (the replay tests' records) in a record file, and the records."""
    _, _, recs = play_recorded(3, num_players=2, episode="game", target=300)
    return records.write(tmp_path_factory.mktemp("analyse") / "game.jsonl", recs), recs


def table_rows(out: str) -> list[list[str]]:
    """The rows below the table's header, cells split at runs of two or more spaces."""
    lines = out.splitlines()
    (head,) = [i for i, line in enumerate(lines) if line.startswith("rank  move")]
    rows = []
    for line in lines[head + 1 :]:
        if not re.match(r" *\d+  ", line):
            break
        rows.append(re.split(r" {2,}", line.strip()))
    return rows


def expected_row(rank: int, e: MoveEstimate, played: int) -> list[str]:
    marks = ", ".join(mark for mark, on in (("greedy", e.greedy), ("played", e.action == played)) if on)

    def se(value: float, digits: int) -> str:  # fewer than 2 playouts (sequential halving): no error
        return "-" if math.isnan(value) else f"{value:.{digits}f}"

    win, margin = f"{e.win_rate:.3f} ± {se(e.win_se, 3)}", f"{e.margin:.1f} ± {se(e.margin_se, 1)}"
    return [str(rank), e.move, str(e.playouts), win, margin, *([marks] if marks else [])]


@pytest.mark.parametrize("step", [1, 6])
def test_the_table_ranks_every_searched_move_of_the_position_before_the_step(game_file, capsys, step):
    path, recs = game_file
    record = recs[1]
    assert main(["analyse", str(path), "--deal", "2", "--step", str(step), "--agent", AGENT, "--seed", "4"]) == 0
    out = capsys.readouterr().out
    for replayed in records.replay(record):  # the position before move `step`: after step - 1 moves
        if replayed.index == step - 2:
            break
    env = replayed.env
    seat = env.game.current
    agent = RolloutAgent(seed=4, playouts=BUDGET, rules=env.rules)
    known = bits_to_cards(env.game.known[seat])
    estimates = agent.analyse(env.observe(env.agent_selection), known=known)
    played = record["actions"][step - 1]
    assert len(estimates) >= 2 and sum(e.playouts for e in estimates) == BUDGET
    assert table_rows(out) == [expected_row(rank, e, played) for rank, e in enumerate(estimates, 1)]
    assert sum(row[-1].endswith("played") for row in table_rows(out)) == 1
    lines = out.splitlines()
    assert lines[0] == f"record 2 of 3 in {path}: treppenromme, P0 random-0, P1 random-1; deal 2 of a game"
    moves = len(record["actions"])
    assert lines[1] == f"before move {step} of {moves}: P{seat} (random-{seat}) to move, as P{seat} sees it"
    assert f"\n{agent!r}, seed 4:\nrank  move " in out
    tail = out.split(f"\n{NOTE}\n")[1].splitlines()  # then what the opponent likely holds
    assert tail[0] == "beliefs (uniform): the cards each opponent most likely holds" and len(tail) == 2
    held, uniform = tail[1].removeprefix("  P+1: ").split("  (")
    assert len(held.split("  ")) == 8 and all(item.endswith("%") for item in held.split("  "))
    other = 1 - seat
    hidden = (env.game.hands[other] & ~env.game.known[other]).bit_count()
    assert uniform == f"uniform deal: {hidden / (hidden + len(env.game.stock)):.0%} each)"


def test_the_records_rules_reach_the_agent(tmp_path, capsys):
    _, _, recs = play_recorded(5, rules="rum500")
    path = records.write(tmp_path / "rum500.jsonl.gz", recs)
    assert main(["analyse", str(path), "--step", "1", "--agent", AGENT]) == 0
    out = capsys.readouterr().out
    assert "\nRolloutAgent(rules='rum500', playout='greedy', moves='plan', objective='win', playouts=20," in out
    assert out.startswith(f"record 1 of 1 in {path}: rum500, P0 random-0, P1 random-1;")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--deal", "4", "--step", "1"], "--deal 4: {path} holds deals 1..3"),
        (["--deal", "2", "--step", "0"], "argument --step: '0' is not a move number of at least 1"),
        (["--deal", "2", "--step", "{n+2}"], "{path}, record 2, step {n+2}: the deal has moves 1..{n}"),
        (
            ["--deal", "2", "--step", "{n+1}"],
            "{path}, record 2, step {n+1}: the deal is over after its {n} moves; choose a step 1..{n}",
        ),
        (
            ["--deal", "2", "--step", "1", "--agent", "greedy"],
            "agent 'greedy' does not search, so it cannot rank moves; give a search agent: rollout or ismcts "
            "with settings, e.g. rollout,playouts=500",
        ),
        (["--deal", "2", "--step", "1", "--agent", "nobody"], "unknown agent spec 'nobody'; valid specs: "),
    ],
)
def test_bad_input_is_a_one_line_error_with_status_2(game_file, capsys, argv, message):
    path, recs = game_file
    n = len(recs[1]["actions"])
    names = {"path": path, "n": n, "n+1": n + 1, "n+2": n + 2}
    argv = [a.format_map(names) for a in argv]
    assert main(["analyse", str(path), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"treppen analyse: error: {message.format_map(names)}")
    assert captured.err.count("\n") == 1


def test_help_says_which_position_a_step_is(capsys):
    with pytest.raises(SystemExit):
        main(["analyse", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the position before move K is played, moves numbered as treppen replay prints them (1 = the first)" in text
    assert "(default rollout); the record's rules reach it" in text


def test_format_table_marks_greedy_and_the_played_move_and_shows_missing_values():
    estimates = [
        MoveEstimate(846, "discard AS", 3, 2 / 3, 0.3333, 12.5, 20.25, greedy=False),
        MoveEstimate(847, "discard 2S", 1, 0.0, math.nan, -40.0, math.nan, greedy=True),
        MoveEstimate(0, "draw", 0, math.nan, math.nan, math.nan, math.nan, greedy=False),
    ]
    assert format_table(estimates, played=847) == "\n".join(
        [
            "rank  move        playouts       win rate  margin (points)",
            "   1  discard AS         3  0.667 ± 0.333      12.5 ± 20.2",
            "   2  discard 2S         1      0.000 ± -        -40.0 ± -  greedy, played",
            "   3  draw               0              -                -",
            NOTE,
        ]
    )
    (only,) = estimates[2:]
    assert format_table([only], played=1).splitlines()[2:] == [
        "played: take 1 (not a searched move; moves=all searches every legal move)",
        "one searched move: it is played without playouts",
        NOTE,
    ]
