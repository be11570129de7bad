"""``treppen mcp``: the game served to MCP clients (desktop assistants, agent frameworks) on the official
``mcp`` SDK, over stdio or streamable HTTP on 127.0.0.1 (docs/guide/llm.md).

Tools (each answers text; an error answer says what was wrong):

- ``new_game(opponents, players, rules, episode, seed)``: a game against agents the server was
  started with (``--opponents``: specs, zoo names or the levels easy/medium/hard); the agents move
  until it is your turn; answers the game's id and :func:`game_text`;
- ``game_state(game_id)``: :func:`game_text`: the table as your observation shows it (hand,
  staircase with each card's depth, melds, the cards opponents are known to hold, points) and the
  legal moves in card notation (:func:`treppen_env.actions.action_to_str`);
- ``make_move(game_id, move)``: your move in that notation (:func:`treppen_env.actions.parse_action`),
  then the agents' moves until your turn comes again; a move that is unreadable or illegal is an
  error that lists the legal moves, and the game is unchanged;
- ``hint(game_id)``: your moves ranked by a short search from your observation
  (:data:`treppen.apps.web_replay.HINT_SPEC`);
- ``game_record(game_id)``: the finished deals as a record file's lines (docs/guide/records.md);
- ``end_game(game_id)``.

Resources: ``treppen://rules/<preset>``, the rules in plain text (:func:`treppen.agents.rules_text.rules_summary`).

Games are the web page's sessions (:class:`treppen.apps.web.App`), with its limits and checks: at most
``--max-sessions`` games (idle ones make room), unguessable ids, only the server's agents, every
argument validated. A tool either does what it says or changes nothing: each call is one
transaction on its game (:meth:`treppen.apps.web_sessions.Session.transaction`; the record of a
deal it ends is written before the change is kept), a failed ``new_game`` takes no place, and an
error is one line saying why. An agent that cannot move is played by the greedy heuristic
(:meth:`~treppen.apps.web_sessions.Session.agent_move`). Over HTTP the app sits behind
:class:`treppen.apps.web.LocalOnly` (Host and Origin checks against DNS rebinding) and is bound to
127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

from pydantic import Strict

from treppen.agents.human import render_view, seat_name
from treppen.agents.rules_text import rules_summary
from treppen.agents.zoo import LEVELS, cards
from treppen.apps.options import MAX_SEED, MAX_SESSIONS, add_server_arguments
from treppen.apps.options import seed as seed_type
from treppen.apps.web import App, LocalOnly
from treppen.apps.web_errors import BadRequest
from treppen.apps.web_sessions import Session
from treppen_env.actions import DRAW, action_to_str, parse_action
from treppen_env.cards import cards_to_str
from treppen_env.messages import cut, shorten
from treppen_env.observation import decode as decode_observation
from treppen_env.rules import MAX_PLAYERS, MIN_PLAYERS, PRESETS, make_rules

HOST = "127.0.0.1"
#: Agent moves played after one of yours at most (a deal has a few hundred turns at most, RULES §6.5).
MAX_AGENT_MOVES = 10_000
HINT_MOVES = 8
MAX_MOVE_CHARS = 120  # a 13-card run in notation is 57
NEW_GAME = (
    "Start a game: you at seat 0 against the given opponents (default: the first offered). opponents: agents "
    "by name, one per other seat, or one for every seat when players is given; rules: treppenromme or rum500; "
    "episode: deal (one deal) or game (deals until a total reaches 500); seed: 0..4294967295 replays the same "
    "deal. Answers the game_id, the table and your legal moves."
)
#: A whole number as JSON writes it: not ``true``, not ``"5"``, not ``2.0``.
StrictInt = Annotated[int, Strict()]
INSTRUCTIONS = (
    "Play Treppenrommé (staircase rummy) or 500 Rum against the server's agents. Read the rules resource "
    "treppen://rules/treppenromme, start with new_game, then call make_move with one of the legal moves that "
    "game_state lists, in their notation (e.g. 'draw', 'take 2', 'meld 7S 8S 9S', 'layoff QH low', 'discard KC')."
)


def default_opponents() -> list[str]:
    """The levels, greedy, random and every zoo agent."""
    return [*LEVELS, "greedy", "random", *cards()]


class Tables:
    """The tools' work on the page's sessions (:class:`treppen.apps.web.App`), person at seat 0.

    :param app: the sessions and the agents the games may seat.
    :raises nothing: errors of a call are :class:`treppen.apps.web_errors.BadRequest` naming what was wrong.
    """

    def __init__(self, app: App):
        self.app = app

    def new_game(
        self, opponents: Sequence[str] | None, players: int | None, rules: str, episode: str, seed: int | None
    ) -> str:
        """Start a game; answers its id and the table (see the module docstring).

        :raises BadRequest: for an opponent the server does not offer, a count of players that does not
            fit the opponents, an unknown preset or episode, or a seed outside 0..2**32-1.
        """
        chosen = list(opponents) if opponents else [self.app.specs[0]]
        if len(chosen) >= MAX_PLAYERS:
            raise BadRequest(f"{len(chosen)} opponents: a table seats you and at most {MAX_PLAYERS - 1} others")
        if players is not None:
            if not MIN_PLAYERS <= players <= MAX_PLAYERS:
                raise BadRequest(f"players={players}: a table seats {MIN_PLAYERS}..{MAX_PLAYERS}")
            if len(chosen) == 1:
                chosen *= players - 1
            elif len(chosen) != players - 1:
                raise BadRequest(
                    f"players={players} needs {players - 1} opponents (or one, for every seat); got {shorten(chosen)}"
                )
        unknown = [o for o in chosen if o not in self.app.specs]
        if unknown:
            raise BadRequest(f"opponents {shorten(unknown)} are not offered here; choose from {self.app.specs}")
        if seed is not None and not 0 <= seed <= MAX_SEED:
            raise BadRequest(f"seed={seed} must be in 0..{MAX_SEED}")
        seats: list[Any] = ["you", *(self.app.specs.index(o) for o in chosen)]
        data = {"mode": "play", "seats": seats, "rules": rules, "episode": episode}
        session = self.app.deal(data, seed=seed)
        with session.transaction():  # the agents' first moves, and the record of a deal they end
            log = self._agents_move(session)
        self.app.sessions.add(session)  # a game that failed to start takes no place
        return f"game_id: {session.id}\n{game_text(session, log)}"

    def state(self, game_id: str) -> str:
        session = self.app.sessions.get(game_id)
        with session.lock:
            return game_text(session, [])

    def move(self, game_id: str, move: str) -> str:
        """Play ``move`` for the person, then the agents until the person's turn or the end, as one
        transaction (:meth:`treppen.apps.web_sessions.Session.transaction`).

        :raises BadRequest: for a move that is unreadable or illegal (the game is unchanged; the
            message lists the legal moves), a game that is over or another seat's turn; a record
            that cannot be written (the game is unchanged).
        """
        if len(move) > MAX_MOVE_CHARS:
            raise BadRequest(f"a move is at most {MAX_MOVE_CHARS} characters (e.g. 'meld 7S 8S 9S'); got {len(move)}")
        session = self.app.sessions.get(game_id)
        with session.lock:
            try:
                action = parse_action(move)
                session.check_move(action)
            except (ValueError, BadRequest) as err:
                reason = err.detail if isinstance(err, BadRequest) else str(err)
                legal = "" if session.over else f" Legal moves: {', '.join(legal_texts(session))}."
                raise BadRequest(f"{reason}. The game is unchanged.{legal}") from None
            hand = set(self._hand(session))
            last = session.log[-1] if session.log else None
            try:
                with session.transaction():
                    session.play(action)
                    mine = _since(session.log, last)
                    theirs = self._agents_move(session)
            except BadRequest as err:
                raise BadRequest(f"{err.detail}. The game is unchanged.", err.status_code) from None
            if action == DRAW:  # what the person drew, as the terminal game says it
                mine[0] = {**mine[0], "move": f"draw ({cards_to_str(sorted(set(self._hand(session)) - hand))})"}
            return game_text(session, [*mine, *theirs])

    @staticmethod
    def _hand(session: Session) -> tuple[int, ...]:
        return decode_observation(session.env.observe(session.env.possible_agents[session.you])).hand

    def hint(self, game_id: str) -> str:
        session = self.app.sessions.get(game_id)
        answer = self.app.hint(session, {"version": session.version})
        lines = [f"Your moves ranked by {answer['agent']} (searched from what you see):"]
        for e in answer["estimates"][:HINT_MOVES]:
            found = (
                "not searched (the only move)"
                if e["win_rate"] is None
                else f"wins {e['win_rate']:.0%} of {e['playouts']} playouts, margin {e['margin']:+.0f} points"
            )
            lines.append(f"- {e['text']}: {found}" + (" (greedy's choice)" if e["greedy"] else ""))
        return "\n".join(lines)

    def record(self, game_id: str) -> str:
        session = self.app.sessions.get(game_id)
        lines = [json.dumps(r, separators=(",", ":")) for r in list(session.recorder.records)]
        return "\n".join(lines) if lines else "no deal of this game has finished yet"

    def end(self, game_id: str) -> str:
        self.app.sessions.remove(game_id)
        return f"game {game_id} ended"

    @staticmethod
    def _agents_move(session: Session) -> list[dict[str, Any]]:
        """Let the agents move until the person's turn or the end (one that cannot move is played
        by the greedy heuristic, :meth:`~treppen.apps.web_sessions.Session.agent_move`); the log
        lines of their moves."""
        lines: list[dict[str, Any]] = []
        for _ in range(MAX_AGENT_MOVES):
            if session.over or session.env.game.current == session.you:
                break
            last = session.log[-1] if session.log else None
            session.agent_move()
            lines += _since(session.log, last)
        return lines


def _since(log: list[dict[str, Any]], last: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The lines of the session's ``log`` after the line ``last`` (all for None). The session keeps
    its log short, dropping old lines, so a line is found by identity, not by index."""
    new: list[dict[str, Any]] = []
    for line in reversed(log):
        if line is last:
            break
        new.append(line)
    return new[::-1]


def legal_texts(session: Session) -> list[str]:
    """The person's legal moves in card notation (empty when it is not their turn)."""
    mask = session.env.observe(session.env.possible_agents[session.you])["action_mask"]
    return [action_to_str(int(a)) for a in mask.nonzero()[0]]


def game_text(session: Session, log: Sequence[dict[str, Any]]) -> str:
    """The game as the person sees it: the moves in ``log`` (seats named as :func:`seat_name`), the
    table (:func:`treppen.agents.human.render_view`) and the legal moves, or how the game ended."""
    you = session.you or 0
    n = len(session.seats)
    opponents = ", ".join(f"{seat_name((s - you) % n)} {spec}" for s, spec in enumerate(session.seats) if s != you)
    lines = [f"{session.env.rules.name}, {n} players ({opponents}), episode: {session.env.episode}"]
    for entry in log:
        who = "" if entry["seat"] is None else f"{seat_name((entry['seat'] - you) % n)}: "
        points = f" ({entry['points']:+d})" if entry.get("points") else ""
        lines.append(f"  {who}{entry['move']}{points}")
    observation = session.env.observe(session.env.possible_agents[you])
    moves = legal_texts(session)
    lines.append(render_view(decode_observation(observation), [parse_action(m) for m in moves]))
    if session.over:
        summary = session.summary or {}
        points = ", ".join(f"{seat_name((s - you) % n)} {p}" for s, p in enumerate(summary.get("deal_points", [])))
        lines.append(f"The {session.env.episode} is over: {summary.get('outcome_text', '')}; deal points {points}.")
        lines.append("Start another with new_game; game_record gives the record of its deals.")
    else:
        lines.append(f"Legal moves ({len(moves)}): " + ", ".join(moves))
        lines.append("Play one with make_move.")
    return "\n".join(lines)


@contextmanager
def _tool_errors() -> Iterator[None]:
    """A failed call becomes the tool's error answer, one line cut to a fixed length: a refusal
    (:class:`BadRequest`) with its reason only, any other failure with its kind and message (its
    traceback goes to the server's log). The call has changed nothing (the tools' transactions)."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        yield
    except BadRequest as err:
        raise ToolError(cut(str(err.detail))) from None
    except Exception as err:
        logging.getLogger(__name__).exception("a tool call failed")
        raise ToolError(cut(f"the server failed ({type(err).__name__}: {err}); nothing was changed")) from None


def create_server(
    opponents: Sequence[str] | None = None,
    record_dir: str | Path | None = None,
    max_sessions: int = MAX_SESSIONS,
    seed: int | None = None,
) -> Any:
    """The MCP server (an ``mcp.server.mcpserver.MCPServer``) with the tools and resources of the
    module docstring.

    :param opponents: agent specs the games may seat (default :func:`default_opponents`).
    :param record_dir: the folder where finished deals are appended as records, or None.
    :param max_sessions: games kept at once.
    :param seed: seeds the games that name no seed (None: fresh entropy).
    :raises ValueError: for an unknown spec or ``human`` among the opponents, a ``record_dir`` that
        is a file or cannot be written in, or a seed below 0 (see :class:`treppen.apps.web.App`).
    """
    tables = Tables(App(opponents or default_opponents(), record_dir, max_sessions, seed))
    server = _server_class()("treppen", instructions=INSTRUCTIONS, log_level="WARNING")
    offered = ", ".join(tables.app.specs)

    @server.tool(description=f"{NEW_GAME} Opponents offered: {offered}.")
    def new_game(
        opponents: list[str] | None = None,
        players: StrictInt | None = None,
        rules: str = "treppenromme",
        episode: str = "deal",
        seed: StrictInt | None = None,
    ) -> str:
        with _tool_errors():
            return tables.new_game(opponents, players, rules, episode, seed)

    @server.tool()
    def game_state(game_id: str) -> str:
        """The table as you see it (your hand, the staircase with each card's depth for 'take D', the
        melds, the cards opponents are known to hold, points) and your legal moves in card notation."""
        with _tool_errors():
            return tables.state(game_id)

    @server.tool()
    def make_move(game_id: str, move: str) -> str:
        """Play your move in card notation, e.g. 'draw', 'take 2', 'meld 7S 8S 9S', 'layoff QH low',
        'discard KC'; the opponents then move until it is your turn again. Answers their moves and the
        table. An unreadable or illegal move is an error listing the legal moves; the game is unchanged."""
        with _tool_errors():
            return tables.move(game_id, move)

    @server.tool()
    def hint(game_id: str) -> str:
        """Your legal moves ranked by a short search from what you can see (win rate, point margin)."""
        with _tool_errors():
            return tables.hint(game_id)

    @server.tool()
    def game_record(game_id: str) -> str:
        """The game's finished deals as JSON lines (the record format that treppen replay reads)."""
        with _tool_errors():
            return tables.record(game_id)

    @server.tool()
    def end_game(game_id: str) -> str:
        """End a game and forget it."""
        with _tool_errors():
            return tables.end(game_id)

    for preset in sorted(PRESETS):
        uri = f"treppen://rules/{preset}"
        server.resource(uri, name=f"rules-{preset}", mime_type="text/plain")(
            _constant(rules_summary(make_rules(preset)))
        )
    return server


def _server_class() -> type[Any]:
    """``mcp``'s ``MCPServer`` whose refusal of a call's arguments (a wrong type, a missing one) is one
    line naming the argument and the type it wants (:func:`argument_error`), as every other error."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import ValidationError

    class Server(MCPServer):  # type: ignore[misc]
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as err:
                if not isinstance(err.__cause__, ValidationError):
                    raise
                raise ToolError(f"Error executing tool {name}: {argument_error(err.__cause__)}") from None

    return Server


def argument_error(err: Any) -> str:
    """The first problem of a tool call's arguments (a pydantic ``ValidationError``) as one line:
    ``argument seed=True: Input should be a valid integer``, or ``argument game_id is missing``."""
    first = err.errors(include_url=False)[0]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
    if first["type"] == "missing":
        return f"argument {where} is missing"
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return cut(f"argument {where}={shorten(first['input'])}: {first['msg']}{more}")


def _constant(text: str) -> Callable[[], str]:
    """A function answering ``text`` (a static resource's reader)."""
    return lambda: text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (an assistant starts the server itself; default) or streamable HTTP on 127.0.0.1",
    )
    parser.add_argument(
        "--opponents",
        nargs="+",
        default=None,
        metavar="SPEC",
        help="agents the games may seat (default: easy medium hard greedy random and the zoo's agents)",
    )
    add_server_arguments(parser, 8765, "HTTP port on 127.0.0.1")
    parser.add_argument("--seed", type=seed_type, default=None, help="seeds the games that name none (default: fresh)")


def run(args: argparse.Namespace) -> int:
    """Serve until the client closes stdio, or until interrupted (HTTP).

    :raises ValueError: for a bad agent spec (or ``human``).
    """
    server = create_server(args.opponents, args.record, args.max_sessions, args.seed)
    if args.transport == "stdio":
        server.run("stdio")
        return 0
    import sys

    import uvicorn

    app = LocalOnly(server.streamable_http_app(host=HOST))
    print(f"treppen mcp: serving http://{HOST}:{args.port}/mcp (Ctrl-C stops)", file=sys.stderr)
    uvicorn.run(app, host=HOST, port=args.port, log_level="warning")
    return 0
