"""``treppen mcp`` through the ``mcp`` SDK's own clients: a whole deal against greedy over stdio (its
record replays in the engine), bad moves that leave the game unchanged, the rules resource, and the
streamable HTTP transport on 127.0.0.1 behind the page's Host and Origin checks."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver.exceptions import ToolError
from starlette.testclient import TestClient

from treppen.apps.mcp_server import create_server
from treppen.apps.web import LocalOnly
from treppen_env import records
from treppen_env.actions import parse_action

SERVER = [sys.executable, "-m", "treppen.apps.cli", "mcp", "--opponents", "greedy", "random"]
ENV = {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}


async def call(session: ClientSession, tool: str, **arguments) -> tuple[bool, str]:
    """(whether it failed, its text) of one tool call (an error's text without the SDK's prefix)."""
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text
    return bool(result.is_error), text.removeprefix(f"Error executing tool {tool}: ")


def run_bounded(main, seconds: float):
    """Run the coroutine function ``main`` and return its result; fail after ``seconds``."""

    async def bounded():
        with anyio.fail_after(seconds):
            return await main()

    return anyio.run(bounded)


def legal_moves(text: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith("Legal moves ("))
    return line.split(": ", 1)[1].split(", ")


def game_id(text: str) -> str:
    return re.match(r"game_id: (\S+)", text).group(1)


async def play_a_deal(session: ClientSession) -> None:
    failed, text = await call(session, "new_game", opponents=["greedy"], seed=11)
    assert not failed, text
    gid = game_id(text)
    assert "players (P+1 greedy), episode: deal" in text and "your hand:" in text

    # a bad move: an error listing the legal moves, and the game as it was
    _, before = await call(session, "game_state", game_id=gid)
    for bad, reason in [("discard ZZ", "cannot read action 'discard ZZ'"), ("layoff KS high", "illegal move")]:
        failed, error = await call(session, "make_move", game_id=gid, move=bad)
        assert failed and error.startswith(reason), error
        assert f"The game is unchanged. Legal moves: {', '.join(legal_moves(before))}." in error
    assert (await call(session, "game_state", game_id=gid))[1] == before

    failed, hint = await call(session, "hint", game_id=gid)
    assert not failed and hint.startswith("Your moves ranked by rollout,playouts=500") and "playouts" in hint

    played = []
    text = before
    while "Legal moves (" in text:  # the person plays the first legal move listed
        move = legal_moves(text)[0]
        failed, text = await call(session, "make_move", game_id=gid, move=move)
        assert not failed, text
        played.append(parse_action(move))
    assert "The deal is over:" in text

    failed, lines = await call(session, "game_record", game_id=gid)
    (record,) = [json.loads(line) for line in lines.splitlines()]
    assert record["agents"] == ["human", "greedy"]
    seats = [step.seat for step in records.replay(record)][1:]
    assert [a for a, seat in zip(record["actions"], seats, strict=True) if seat == 0] == played
    records.check(record)  # the deal replays in the engine to the same outcome and points

    assert await call(session, "end_game", game_id=gid) == (False, f"game {gid} ended")
    failed, error = await call(session, "game_state", game_id=gid)
    assert failed and "expired or never existed" in error


def test_a_whole_deal_against_greedy_over_stdio():
    async def main():
        params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], env=ENV)
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            assert tools == {"new_game", "game_state", "make_move", "hint", "game_record", "end_game"}
            rules = await session.read_resource("treppen://rules/rum500")
            assert "500 Rum" in rules.contents[0].text and "layoff C set|low|high" in rules.contents[0].text
            failed, error = await call(session, "new_game", opponents=["hard"])
            assert failed and error == "opponents ['hard'] are not offered here; choose from ['greedy', 'random']"
            failed, error = await call(session, "new_game", opponents=["greedy", "random"], players=4)
            assert failed and error.startswith("players=4 needs 3 opponents")
            await play_a_deal(session)

    run_bounded(main, 300)


def test_a_four_player_game_deals_the_same_with_the_same_seed():
    server = create_server(["greedy", "random"], seed=1)

    async def main():
        texts = []
        for _ in range(2):
            result = await server.call_tool("new_game", {"opponents": ["random"], "players": 4, "seed": 5})
            texts.append(result.content[0].text)
        return texts

    first, second = run_bounded(main, 60)
    assert first.split("\n", 1)[1] == second.split("\n", 1)[1]  # all but the game id
    assert "4 players (P+1 random, P+2 random, P+3 random)" in first


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streamable_http_on_127_0_0_1():
    port = free_port()
    proc = subprocess.Popen([*SERVER, "--transport", "http", "--port", str(port)], env={**os.environ, **ENV})
    try:

        async def main():
            url = f"http://127.0.0.1:{port}/mcp"
            for _ in range(300):  # wait for the server to listen
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.1)
            async with streamable_http_client(url) as streams, ClientSession(*streams) as session:
                await session.initialize()
                failed, text = await call(session, "new_game", opponents=["random"], seed=2)
                assert not failed and "Legal moves (" in text

        run_bounded(main, 120)
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({"Host": "evil.example"}, "Host 'evil.example' is not this server"),
        (
            {"Host": "127.0.0.1:8765", "Origin": "http://evil.example"},
            "cross-origin request from 'http://evil.example'",
        ),
    ],
)
def test_http_refuses_other_hosts_and_origins(headers, error):
    app = LocalOnly(create_server(["greedy"]).streamable_http_app(host="127.0.0.1"))
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        answer = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers)
    assert answer.status_code == 403 and error in answer.json()["error"]


@pytest.mark.parametrize(
    ("tool", "arguments", "error"),
    [
        ("new_game", {"opponents": ["greedy"] * 500}, "500 opponents: a table seats you and at most 3 others"),
        ("new_game", {"players": 5}, "players=5: a table seats 2..4"),
        ("new_game", {"rules": "poker"}, "'rules' must be one of ['rum500', 'treppenromme']; got 'poker'"),
        ("new_game", {"seed": -1}, "seed=-1 must be in 0..4294967295"),
        ("make_move", {"game_id": "x", "move": "meld " * 100}, "a move is at most 120 characters"),
        ("game_state", {"game_id": "x" * 1000}, "no session 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx': it expired"),
    ],
)
def test_bad_arguments_are_clear_errors(tool, arguments, error):
    server = create_server(["greedy", "random"], seed=1)

    async def main():
        return await server.call_tool(tool, arguments)

    with pytest.raises(ToolError, match=re.escape(error)):
        run_bounded(main, 60)


@pytest.mark.parametrize(
    ("tool", "arguments", "error"),
    [
        ("new_game", {"seed": True}, "argument seed=True: Input should be a valid integer"),
        ("new_game", {"seed": "5"}, "argument seed='5': Input should be a valid integer"),
        ("new_game", {"seed": 5.0}, "argument seed=5.0: Input should be a valid integer"),
        ("new_game", {"players": 2.0}, "argument players=2.0: Input should be a valid integer"),
        ("new_game", {"players": False}, "argument players=False: Input should be a valid integer"),
        ("new_game", {"seed": "abc"}, "argument seed='abc': Input should be a valid integer"),
        ("new_game", {"opponents": "random"}, "argument opponents='random': Input should be a valid list"),
        ("new_game", {"opponents": [1]}, "argument opponents[0]=1: Input should be a valid string"),
        ("new_game", {"rules": 3, "seed": "x"}, "argument rules=3: Input should be a valid string (and 1 more)"),
        ("make_move", {"game_id": 3, "move": "draw"}, "argument game_id=3: Input should be a valid string"),
        ("make_move", {"move": "draw"}, "argument game_id is missing"),
    ],
)
def test_an_argument_of_the_wrong_type_is_one_line_naming_it_and_its_type(tool, arguments, error):
    """Integers are integers (a bool, a text of digits or a float is none), and the refusal is one line."""
    server = create_server(["greedy", "random"], seed=1)

    async def main():
        return await server.call_tool(tool, arguments)

    with pytest.raises(ToolError) as err:
        run_bounded(main, 60)
    assert str(err.value) == f"Error executing tool {tool}: {error}"
