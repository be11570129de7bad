"""Game records: round trips, replays without the RNG, and tampered records (docs/ARCHITECTURE.md "Game records")."""

from __future__ import annotations

import collections
import copy
import gzip
import json

import numpy as np
import pytest

from tests.env_helpers import B_DECK, B_TURN_1, random_action
from treppen.arena.match import play_match
from treppen_env import raw_env, records
from treppen_env.actions import DISCARD_BASE, parse_action
from treppen_env.cards import card_to_str
from treppen_env.records import RecordError


class RandomSeat:
    """Random legal actions from one generator shared by the seats (the deals of the tests below)."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def act(self, observation: dict) -> int:
        return random_action(observation, self.rng)


def play_recorded(seed: int, num_players: int = 2, rules: str = "treppenromme", episode: str = "deal", **options):
    """Play random deals in a seeded env (``play_match``) and record them (``record_match``);
    return the env at the end, the match result and the records."""
    env_kwargs = {"num_players": num_players, "rules": rules, "episode": episode, **options}
    env = raw_env(**env_kwargs)
    reset_options = {"dealer": seed % num_players}
    seats = [RandomSeat(np.random.default_rng(seed))] * num_players
    result = play_match(env, seats, seed=seed, options=reset_options)
    recs = records.record_match(
        result.actions, [f"random-{s}" for s in range(num_players)], seed=seed, options=reset_options,
        extra={"seed": seed}, **env_kwargs,
    )  # fmt: skip
    return env, result, recs


def final_state(record):
    (last,) = collections.deque(records.replay(record), maxlen=1)
    return last.env.game


def test_scripted_deal_record_fields():
    """A stacked deal (env_helpers scenario B) recorded action by action: exact fields."""
    env = raw_env(num_players=2)
    env.reset(options={"deck": B_DECK, "dealer": 0})
    # hands are sets, so the order within a hand is not kept, but the deck deals the same position
    assert records.deck_of(env.game) != B_DECK
    recorder = records.Recorder(env, ["human", "greedy"])
    replayed = raw_env(num_players=2)
    replayed.reset(options={"deck": records.deck_of(env.game), "dealer": 0})
    assert replayed.game.hands == env.game.hands
    assert replayed.game.stock == env.game.stock and replayed.game.staircase == env.game.staircase
    for text in B_TURN_1:
        env.step(parse_action(text))
        assert recorder.step(parse_action(text)) is None
    assert recorder.records == []


def test_round_trip_plain_and_gzip(tmp_path):
    recs = [r for seed in range(6) for r in play_recorded(seed, num_players=2 + seed % 3)[2]]
    assert len(recs) == 6
    for name in ("deals.jsonl", "deals.jsonl.gz"):
        path = records.write(tmp_path / name, recs)
        assert records.read(path) == recs
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp file left
    with gzip.open(tmp_path / "deals.jsonl.gz", "rt") as f:
        assert json.loads(f.readline())["format"] == "treppen-record/1"
    for rec in recs:
        records.check(rec)
        assert set(records.REQUIRED) <= set(rec) and len(rec["deck"]) == 52 and rec["seed"] in range(6)


def test_replay_reproduces_the_deal():
    """The replay ends in exactly the state the deal ended in: hands, melds, staircase, points."""
    for seed in range(5):
        env, _, (rec,) = play_recorded(seed, num_players=3, rules="rum500")
        original, replayed = env.game, final_state(rec)
        assert replayed.hands == original.hands and replayed.staircase == original.staircase
        assert [(m.owner, m.cards) for m in replayed.melds] == [(m.owner, m.cards) for m in original.melds]
        assert replayed.deal_points == original.deal_points == rec["deal_points"]
        assert rec["outcome"] == original.outcome
        assert rec["rules"] == "rum500" and rec["rules_options"] == {}


def test_game_records_every_deal():
    env, _, recs = play_recorded(3, num_players=2, episode="game", target=300)
    assert len(recs) == env.game.deals_played == 3
    assert [r["game_deal"] for r in recs] == list(range(1, len(recs) + 1))
    assert [r["dealer"] for r in recs] == [(3 % 2 + i) % 2 for i in range(len(recs))]  # the deal passes left
    assert recs[-1]["totals"] == env.game.totals
    assert np.sum([r["deal_points"] for r in recs], axis=0).tolist() == env.game.totals
    for rec in recs:
        assert rec["rules_options"] == {"target": 300}
        records.check(rec)


def reshuffled_record():
    for seed in range(200):
        _, _, (rec,) = play_recorded(seed, stock_exhausted="reshuffle", max_turns=400)
        if rec["reshuffles"]:
            return rec
    raise AssertionError("no reshuffle in 200 random deals")


def test_reshuffles_replay_without_the_rng():
    rec = reshuffled_record()
    records.check(rec)  # the replay's env is unseeded: the stock comes from the record
    step = rec["reshuffles"][0]["step"]
    assert rec["actions"][step] >= DISCARD_BASE  # the discard that emptied the stock
    after = next(s for s in records.replay(rec) if s.index == step)
    assert [card_to_str(c) for c in after.env.game.stock[::-1]] == rec["reshuffles"][0]["stock"]

    swapped = copy.deepcopy(rec)
    stock = swapped["reshuffles"][0]["stock"]
    stock[0], stock[-1] = stock[-1], stock[0]
    if stock[0] != stock[-1]:
        with pytest.raises(RecordError):  # another stock order: some later step disagrees
            records.check(swapped)

    moved = copy.deepcopy(rec)
    moved["reshuffles"][0]["step"] = step + 1
    with pytest.raises(RecordError, match=rf"step {step} .*the record says at step {step + 1}"):
        records.check(moved)

    missing = copy.deepcopy(rec)
    missing["reshuffles"] = []
    with pytest.raises(RecordError, match=rf"step {step} .*record has no reshuffle"):
        records.check(missing)


def test_tampered_action_fails_at_its_step():
    _, _, (rec,) = play_recorded(7)
    k = 5  # a meld-phase step is followed by actions that depend on it; make step k a draw instead
    tampered = copy.deepcopy(rec)
    tampered["actions"][k] = 897 if tampered["actions"][k] != 897 else 896  # discard a card not in hand, or drawn
    state = next(s for s in records.replay(rec) if s.index == k - 1).env.game
    assert not state.legal_mask()[tampered["actions"][k]]
    with pytest.raises(
        RecordError, match=rf"^record, step {k} \(player {state.current}, action {tampered['actions'][k]}\)"
    ):
        records.check(tampered)


def test_tampered_end_fails_with_clear_errors():
    _, _, (rec,) = play_recorded(11)
    last = len(rec["actions"]) - 1
    points = copy.deepcopy(rec)
    points["deal_points"][0] += 1
    with pytest.raises(RecordError, match=rf"step {last}: the replay ends .* the record says"):
        records.check(points)
    short = {**rec, "actions": rec["actions"][:-1]}
    with pytest.raises(RecordError, match=rf"step {last - 1}: the actions end but the deal is not over"):
        records.check(short)
    longer = {**rec, "actions": [*rec["actions"], 0]}
    with pytest.raises(RecordError, match=rf"step {last + 1}: the deal is already over"):
        records.check(longer)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "treppen-record/0"}, "format 'treppen-record/0'"),
        ({"num_players": 5}, "num_players 5"),
        ({"dealer": 2}, "dealer 2 is not a seat 0..1"),
        ({"deck": ["AS"] * 52}, "repeated: AS"),
        ({"agents": ["greedy"]}, "agents must be a list of 2"),
        ({"actions": [0, -1]}, "actions must be a list of action indices"),
        ({"rules_options": {"jokers": 2}}, "unknown rules option"),
        ({"outcome": "won"}, "outcome 'won'"),
    ],
)
def test_malformed_records_are_named(tmp_path, change, message):
    _, _, (rec,) = play_recorded(1)
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(rec) + "\n\n" + json.dumps({**rec, **change}) + "\n")
    with pytest.raises(RecordError, match=rf"r.jsonl, line 3: .*{message}"):
        records.read(path)


def test_unreadable_files(tmp_path):
    (tmp_path / "x.jsonl").write_text('{"format": "treppen-record/1"\n')
    with pytest.raises(RecordError, match=r"x.jsonl, line 1, column \d+: not a JSON object"):
        records.read(tmp_path / "x.jsonl")
    (tmp_path / "y.jsonl.gz").write_text("not gzip")
    with pytest.raises(RecordError, match=r"y.jsonl.gz: cannot read it as a record file"):
        records.read(tmp_path / "y.jsonl.gz")
    with pytest.raises(FileNotFoundError):
        records.read(tmp_path / "none.jsonl")
    with pytest.raises(ValueError, match="cannot append to gzipped"):
        records.append(tmp_path / "z.jsonl.gz", {})


def test_append_and_record_match(tmp_path):
    """record_match records what the match loop played: its actions, outcome and deal points."""
    _, result, (rec,) = play_recorded(4, num_players=3)
    assert rec["actions"] == result.actions and rec["agents"] == ["random-0", "random-1", "random-2"]
    assert (rec["outcome"], rec["went_out"]) == (result.outcome, result.went_out)
    assert rec["deal_points"] == result.deal_points
    assert rec["dealer"] == 4 % 3 and rec["deck"] == records.deck_of(raw_env_dealt(4, 3))
    records.append(tmp_path / "a.jsonl", rec)
    records.append(tmp_path / "a.jsonl", rec)
    assert records.read(tmp_path / "a.jsonl") == [rec, rec]
    assert records.record_match(rec["actions"][:3], rec["agents"], seed=4, num_players=3) == []
    with pytest.raises(RecordError, match=r"match, step 3 \(player \d, action 0\)"):
        records.record_match([*rec["actions"][:3], 0], rec["agents"], seed=4, num_players=3)


def raw_env_dealt(seed: int, num_players: int):
    env = raw_env(num_players=num_players)
    env.reset(seed=seed, options={"dealer": seed % num_players})
    return env.game


def test_game_record_match_records_every_deal():
    env, result, recs = play_recorded(3, num_players=2, episode="game", target=300)
    assert [a for r in recs for a in r["actions"]] == result.actions
    assert recs[-1]["totals"] == env.game.totals and recs[-1]["deal_points"] == result.deal_points


def test_replay_command_prints_every_move(tmp_path, capsys):
    from treppen.apps.cli import main

    _, _, recs = play_recorded(3, num_players=2, episode="game", target=300)
    path = records.write(tmp_path / "game.jsonl.gz", recs)
    assert main(["replay", str(path), "--deal", "2"]) == 0
    out = capsys.readouterr().out
    rec = recs[1]
    head = f"record 2 of 3 in {path}: treppenromme, P0 random-0, P1 random-1; deal 2 of a game\n"
    assert out.startswith(head + "deal 2, turn 0, dealer P0")
    assert out.count("staircase (") == len(rec["actions"]) + 1  # the table before the first move and after each
    assert f"\n{len(rec['actions'])}. P" in out and f"\n{len(rec['actions']) + 1}. P" not in out
    outcome = rec["outcome"].replace("_", " ")
    assert out.endswith(f"result: {outcome}; deal points {rec['deal_points']} (replay checked)\n")
    assert main(["replay", str(path), "--deal", "2", "--moves-only"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(rec["actions"]) + 2 and all(lines)  # header, one line a move, result: no blanks
    assert main(["replay", str(path), "--deal", "4"]) == 2
    assert "--deal 4: " in capsys.readouterr().err
    tampered = {**rec, "deal_points": [0, 0]}
    records.write(tmp_path / "bad.jsonl", [tampered])
    assert main(["replay", str(tmp_path / "bad.jsonl"), "--moves-only"]) == 2
    assert f"bad.jsonl, record 1, step {len(rec['actions']) - 1}: the replay ends" in capsys.readouterr().err


def test_replay_into_a_closed_pipe_stops_quietly(tmp_path):
    """``treppen replay FILE | head -1``: no BrokenPipeError traceback."""
    import subprocess
    import sys

    _, _, recs = play_recorded(3, num_players=2, episode="game", target=300)
    path = records.write(tmp_path / "game.jsonl", recs * 20)
    command = [sys.executable, "-m", "treppen.apps.cli", "replay", str(path), "--deal", "2"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"record 2 of 60")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 141 and "Traceback" not in err, err


def test_tournament_records_every_deal_once(tmp_path):
    """``treppen tournament --record``: one game record per deal, replaying to the deal's result;
    a resumed tournament appends only the new deals."""
    from treppen.arena.tournament import run_tournament

    path = tmp_path / "rec" / "t.jsonl"
    agents = {"random": "random", "greedy": "greedy"}
    results = run_tournament(agents, decks=2, out=tmp_path / "out", record_to=path)
    recs = records.read(path)
    assert [r["deal_id"] for r in recs] == [r["deal"] for r in results] and len(recs) == 4
    for rec, result in zip(recs, results, strict=True):
        records.check(rec)
        assert rec["agents"] == result["agents"] and rec["deal_points"] == result["points"]
        assert rec["dealer"] == result["dealer"] and "game_record" not in result
    assert recs[0]["deck"] == recs[1]["deck"] and recs[0]["agents"] == recs[1]["agents"][::-1]  # duplicate deals
    with open(path, "a") as f:
        f.write('{"format": "treppen-rec')  # an interruption while writing a line
    run_tournament(agents, decks=3, out=tmp_path / "out", record_to=path)
    again = records.read(path)
    assert again[:4] == recs and len(again) == 6 and len({r["deal_id"] for r in again}) == 6


def test_repair_cuts_only_an_unfinished_last_line(tmp_path):
    _, _, (rec,) = play_recorded(2)
    path = tmp_path / "r.jsonl"
    records.append(path, rec)
    path.write_text(path.read_text() + '{"format"')
    with pytest.raises(RecordError, match=r"r.jsonl, line 2, column \d+: not a JSON object"):
        records.read(path)
    assert (
        records.read(path, repair=True) == [rec] and path.read_text() == json.dumps(rec, separators=(",", ":")) + "\n"
    )
    path.write_text(path.read_text().rstrip("\n"))  # whole but for its newline: appending goes on
    records.append(path, rec)
    assert records.read(path) == [rec, rec]
    path.write_text("[1]\n" + path.read_text())
    with pytest.raises(RecordError, match=r"line 1: a record is a JSON object"):
        records.read(path, repair=True)  # only a last line is repaired
