"""``treppen mcp``'s tools do what they say or change nothing, through the ``mcp`` SDK's
client: opponents that cannot move are played by the greedy heuristic, a record that cannot be
written undoes the move, a failed ``new_game`` takes no place, bad settings are refused at start,
and a seeded random sequence of good and bad calls never changes a game by a call that failed."""

from __future__ import annotations

import json
import re
import sys

import anyio
import numpy as np
import pytest
from mcp import Client

from tests import chat_server
from treppen.apps import cli, mcp_server
from treppen.apps.mcp_server import create_server
from treppen.apps.web import App
from treppen_env import records

RAISING = "tests.apps.failing_agents:Raising"
ILLEGAL = "tests.apps.failing_agents:Illegal"
FLAKY = "tests.apps.failing_agents:Flaky"


def run_bounded(main, seconds: float):
    """Run the coroutine function ``main`` and return its result; fail after ``seconds``."""

    async def bounded():
        with anyio.fail_after(seconds):
            return await main()

    return anyio.run(bounded)


async def call(client: Client, tool: str, **arguments) -> tuple[bool, str]:
    """(whether it failed, its text without the SDK's prefix) of one tool call."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text
    return bool(result.is_error), text.removeprefix(f"Error executing tool {tool}: ")


def game_id(text: str) -> str:
    return text.split("\n", 1)[0].removeprefix("game_id: ")


def legal_moves(text: str) -> list[str]:
    line = next((line for line in text.splitlines() if line.startswith("Legal moves (")), None)
    return [] if line is None else line.split(": ", 1)[1].split(", ")


@pytest.fixture
def refusing_endpoint():
    """A chat endpoint that refuses every request with 401 (a wrong key): the llm agent raises."""
    server = chat_server.start()
    server.script = [("status", 401)] * 10_000
    yield f"llm,base_url={server.url},model=x,timeout=5"
    chat_server.stop(server)


@pytest.fixture
def kept_apps(monkeypatch):
    """The :class:`App` of each server made in the test, to read its sessions."""
    made: list[App] = []

    class Kept(App):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(mcp_server, "App", Kept)
    return made


# ------------------------------------------------------------------ opponents that cannot move
@pytest.mark.parametrize("seed", [0, 1])  # seed 1: the model deals and moves first, inside new_game
def test_a_refusing_model_endpoint_is_played_by_greedy_and_the_game_ends(refusing_endpoint, seed):
    server = create_server([refusing_endpoint], max_sessions=1, seed=3)

    async def main():
        async with Client(server) as client:
            failed, text = await call(client, "new_game", seed=seed)
            assert not failed, text
            gid = game_id(text)
            turns = 0
            while legal_moves(text):
                failed, text = await call(client, "make_move", game_id=gid, move=legal_moves(text)[0])
                assert not failed, text
                turns += 1
            assert "The deal is over:" in text and turns > 5
            failed, lines = await call(client, "game_record", game_id=gid)
            (record,) = [json.loads(line) for line in lines.splitlines()]
            records.check(record)
            assert await call(client, "end_game", game_id=gid) == (False, f"game {gid} ended")
            failed, text = await call(client, "new_game", seed=seed)  # the one place is free again
            assert not failed, text
            return text

    text = run_bounded(main, 240)
    if seed == 1:  # the model's first move, in new_game
        first, *rest = [line for line in text.splitlines() if line.startswith("  P+1: ")]
        assert re.fullmatch(r"  P\+1: (draw|take 1 \(..\)) \(greedy's move: the agent failed: .*401.*\)", first)
        assert rest and all("(greedy's move: the agent failed: " in line for line in rest), rest


@pytest.mark.parametrize("spec", [RAISING, ILLEGAL])
def test_an_agent_that_raises_or_answers_an_illegal_move_is_played_by_greedy(spec):
    server = create_server([spec, "greedy"], seed=3)

    async def main():
        async with Client(server) as client:
            failed, theirs = await call(client, "new_game", opponents=[spec], seed=1)  # their turn first
            _, greedy = await call(client, "new_game", opponents=["greedy"], seed=1)
            return failed, theirs, greedy

    failed, theirs, greedy = run_bounded(main, 60)
    reason = "the model's endpoint is down" if spec == RAISING else r"it answered action \d+, which is not legal now"
    note = rf" \(greedy's move: the agent failed: {reason}\)"
    assert not failed
    moves = [line for line in theirs.splitlines() if line.startswith("  P+1: ")]
    assert len(moves) >= 2 and all(re.search(note, line) for line in moves), moves
    assert re.sub(note, "", theirs.split("\n", 1)[1]).replace(spec, "greedy") == greedy.split("\n", 1)[1]


# ------------------------------------------------------------------ records
def test_a_record_that_cannot_be_written_undoes_the_move(tmp_path):
    """The record folder's place is taken by a file: moves go on until the one that ends the deal,
    which fails naming the file, and the game is as before; with the folder back, the same move
    ends the deal and its record is written."""
    folder = tmp_path / "rec"
    server = create_server(["greedy"], record_dir=folder, seed=3)

    async def main():
        async with Client(server) as client:
            _, text = await call(client, "new_game", seed=4)
            gid = game_id(text)
            folder.write_text("not a folder")
            for _ in range(500):
                _, state = await call(client, "game_state", game_id=gid)
                failed, text = await call(client, "make_move", game_id=gid, move=legal_moves(state)[0])
                if failed:
                    break
                assert legal_moves(text), text  # a deal cannot end without its record
            assert failed and "\n" not in text, text
            assert re.fullmatch(
                rf"the deal's record cannot be written to '{folder}/serve-\S+\.jsonl': "
                r"(Not a directory|File exists)\. The game is unchanged\.",
                text,
            ), text
            assert await call(client, "game_state", game_id=gid) == (False, state)
            assert await call(client, "game_record", game_id=gid) == (False, "no deal of this game has finished yet")
            folder.unlink()
            failed, over = await call(client, "make_move", game_id=gid, move=legal_moves(state)[0])
            assert not failed and "The deal is over:" in over, over
            _, lines = await call(client, "game_record", game_id=gid)
            return lines

    lines = run_bounded(main, 240)
    (path,) = folder.iterdir()
    assert [json.loads(line) for line in lines.splitlines()] == records.read(path)


@pytest.mark.parametrize("kind", ["file", "unwritable"])
def test_a_record_folder_that_will_fail_is_refused_at_start(tmp_path, capsys, kind):
    if kind == "unwritable" and not sys.platform.startswith("linux"):
        pytest.skip("/proc/self takes no new file on Linux only")
    record = tmp_path / "records.jsonl" if kind == "file" else "/proc/self"
    if kind == "file":
        record.write_text("")
    reason = "is a file, or lies under one; name a folder" if kind == "file" else "takes no new file"
    with pytest.raises(ValueError, match=reason):
        create_server(["greedy"], record_dir=record)
    assert cli.main(["mcp", "--record", str(record)]) == 2
    assert capsys.readouterr().err.startswith(f"treppen mcp: error: argument --record: '{record}' {reason}")


# ------------------------------------------------------------------ echoes and settings
MEGABYTE = "x" * 1_000_000


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (
            {"opponents": [MEGABYTE]},
            r"opponents \['x{30,}\.\.\.x{30,}'\] are not offered here; choose from \['greedy'\]",
        ),
        ({"opponents": [MEGABYTE, "greedy"], "players": 4}, r"players=4 needs 3 opponents .*; got \['x{30,}\.\.\.x+"),
        ({"rules": MEGABYTE}, r"'rules' must be one of \['rum500', 'treppenromme'\]; got 'x+"),
    ],
)
def test_an_error_cuts_a_megabyte_argument(kept_apps, arguments, error):
    server = create_server(["greedy"], seed=1)

    async def main():
        async with Client(server) as client:
            return await call(client, "new_game", **arguments)

    failed, text = run_bounded(main, 60)
    assert failed and re.match(error, text) and len(text) < 400, text[:500]
    assert len(kept_apps[0].sessions) == 0


def test_a_negative_seed_names_the_option(capsys):
    assert cli.main(["mcp", "--seed", "-1"]) == 2
    assert capsys.readouterr().err == "treppen mcp: error: argument --seed: '-1' is not a seed 0..4294967295\n"


# ------------------------------------------------------------------ the property
MAX_SESSIONS = 3


def fingerprint(session) -> tuple:
    """What a call may change in a session: the game (every seat's observation, the hands and the
    stock), its log, version, summary and records."""
    env = session.env
    seats = tuple(env.observe(a)["observation"].tobytes() for a in env.possible_agents)
    state = env.game
    return (
        seats,
        tuple(state.hands),
        tuple(state.stock),
        env.agent_selection,
        session.version,
        json.dumps(session.log),
        json.dumps(session.summary),
        json.dumps(session.recorder.records),
    )


def random_call(rng: np.random.Generator, live: list[str], states: dict[str, str], offered: list[str]):
    """A tool call, good or bad: (tool, arguments); without a game, most likely a new one; a game
    over is ended, now and then one in play."""
    weights = np.array([0.1 if live else 2.0, 0.72, 0.05, 0.05, 0.02, 0.06])
    tool = rng.choice(
        ["new_game", "make_move", "game_state", "game_record", "hint", "end_game"], p=weights / weights.sum()
    )
    some_game = str(rng.choice(live)) if live and rng.random() < 0.95 else "no-such-game"
    if tool == "end_game":
        over = [gid for gid in live if " is over: " in states[gid]]
        some_game = over[0] if over else some_game if rng.random() < 0.2 else "no-such-game"
    if tool == "new_game":  # each argument bad one time in ten
        good = {
            "opponents": [None, [str(rng.choice(offered))], [str(o) for o in rng.choice(offered, 2)]][rng.integers(3)],
            "rules": ["treppenromme", "rum500"][rng.integers(2)],
            "episode": ["deal", "deal", "game"][rng.integers(3)],
            "seed": [None, int(rng.integers(2**32))][rng.integers(2)],
        }
        bad = {"opponents": [["nobody"], ["x" * 2000]][rng.integers(2)], "players": 5, "rules": "poker",
               "episode": "week", "seed": -1}  # fmt: skip
        arguments = {k: bad[k] if rng.random() < 0.1 else good.get(k) for k in bad}
        return tool, {k: v for k, v in arguments.items() if v is not None}
    if tool == "make_move":
        legal = legal_moves(states.get(some_game, ""))
        moves = ["discard ZZ", "layoff KS high", "meld " * 40, "take 40", "draw"]
        move = legal[0] if legal and rng.random() < 0.9 else str(rng.choice(moves))
        if legal and move == legal[0] and rng.random() < 0.3:
            move = str(rng.choice(legal))
        return tool, {"game_id": some_game, "move": move}
    return tool, {"game_id": some_game}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_random_sequence_of_calls_never_changes_a_game_by_a_failed_one(seed, tmp_path, kept_apps):
    """Good and bad calls in a seeded random order, against failing opponents (an agent that raises
    or answers illegal moves, a model endpoint that refuses, garbles or answers) with records to a
    folder that is now and then replaced by a file: after every call that failed, every game is as
    it was, and no game was added; a new game is never refused while fewer than --max-sessions
    games are live; every game not over waits for the person's move."""
    rng = np.random.default_rng(seed)
    endpoint = chat_server.start()
    replies = [("status", 401), ("status", 500), ("garbage",), "I pass", None]
    endpoint.script = [replies[i] for i in rng.integers(len(replies), size=5000)]  # None: a legal move
    llm = f"llm,base_url={endpoint.url},model=x,timeout=5"
    offered = [llm, "greedy", "random", FLAKY, RAISING]  # the first: a game that names no opponents
    folder = tmp_path / "rec"
    away = tmp_path / "away"
    folder.mkdir()
    server = create_server(offered, record_dir=folder, max_sessions=MAX_SESSIONS, seed=seed)
    counts = {"failed": 0, "record failures": 0, "deals": 0, "full": 0}

    async def texts(client: Client, live: list[str]) -> dict[str, str]:
        return {gid: (await call(client, "game_state", game_id=gid))[1] for gid in live}

    async def main():
        app = kept_apps[0]
        live: list[str] = []
        async with Client(server) as client:
            states: dict[str, str] = {}
            for step in range(300):
                if rng.random() < 0.06:  # the record folder goes away, or comes back
                    if folder.is_dir():
                        folder.rename(away)
                        folder.write_text("in the folder's place")
                    else:
                        folder.unlink()
                        away.rename(folder)
                tool, arguments = random_call(rng, live, states, offered)
                if step == 0:  # the model deals, and moves first
                    tool, arguments = "new_game", {"opponents": [llm], "seed": 1}
                before = {gid: fingerprint(app.sessions._sessions[gid]) for gid in live}
                failed, text = await call(client, tool, **arguments)
                if failed:
                    counts["failed"] += 1
                    assert "\n" not in text and 0 < len(text) < 2500, text
                    after = {gid: fingerprint(app.sessions._sessions[gid]) for gid in live}
                    assert after == before, (tool, arguments, text)
                    assert sorted(app.sessions._sessions) == sorted(live), (tool, text)
                    counts["record failures"] += "record cannot be written" in text
                    if "the server is full" in text:
                        counts["full"] += 1
                        assert len(live) >= MAX_SESSIONS
                elif tool == "new_game":
                    live.append(game_id(text))
                elif tool == "end_game":
                    live.remove(arguments["game_id"])
                counts["deals"] += tool == "make_move" and not failed and " over: " in text
                states = await texts(client, live)
                for state in states.values():  # never stuck: the person's turn, or over
                    assert legal_moves(state) or " is over: " in state, state
        return live

    try:
        run_bounded(main, 600)
    finally:
        chat_server.stop(endpoint)
    assert counts["failed"] > 20 and counts["deals"] > 0 and endpoint.requests, counts
