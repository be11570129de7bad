"""The web app behind ``treppen serve``: play, watch and replay deals in a browser.

A Starlette app with a JSON API and one static page (plain HTML/JS, no build step):

- ``GET /api/config``: the agents the server was started with (the page can pick only these), the
  rules presets and the seat range;
- ``POST /api/sessions`` ``{"mode": "play"|"watch", "seats": [...], "rules", "episode"}``: a new
  game; ``seats`` lists per seat ``"you"`` (exactly one in play mode, none in watch mode) or the
  index of a server agent. Each browser tab creates its own session (an unguessable id), so two
  tabs play two separate games;
- ``GET /api/sessions/{id}``: the table from the player's seat (all hands when watching);
- ``POST /api/sessions/{id}/move`` ``{"action", "version"}``: the person's move, legal per the mask;
- ``POST /api/sessions/{id}/advance`` ``{"version"}``: one agent move (the page paces them);
- ``DELETE /api/sessions/{id}``: end a game (404 for an unknown one);
- ``GET /api/sessions/{id}/record``: the session's finished deals as a record file (JSONL);
- ``POST /api/replay?deal=N``: the body is a record file's content (plain or gzipped; never a
  server path); answers the deals it holds and every position of deal N;
- ``POST /api/sessions/{id}/hint`` ``{"version"}`` and ``POST /api/replay/hint?deal=N&step=K``
  (the body as for ``/api/replay``): the moves of the person's position (play mode, their turn)
  or of the position before move K of deal N ranked by a short search
  (:data:`treppen.apps.web_replay.HINT_SPEC`, :mod:`treppen.apps.analyse`), searched from the observation of the
  player to move only.

Searches run under wall-clock deadlines behind a limiter with a fair queue per session
(:mod:`treppen.apps.web_limits`): a search agent's move takes at most about
:data:`~treppen.apps.web_limits.MOVE_DEADLINE`, a hint :data:`~treppen.apps.web_limits.HINT_DEADLINE`
(its answer says how many playouts it got and whether the deadline cut it short); when the
server is too busy to start one in time, the agent moves at its floor budget and a hint gets 503
with ``Retry-After``.

A move that is illegal, not the person's turn, or made on an outdated table (``version``) gets a
4xx answer with a clear message, and the game goes on. A request changes its game in one
transaction, the record of a deal it ends written first (:meth:`treppen.apps.web_sessions.Session.transaction`):
when that fails, the answer says why and the game is as it was. An agent that cannot move is
played by the greedy heuristic, the log saying why. Every request is validated and every
malformed one gets a 4xx naming the field and what is allowed. Bodies are bounded, and so are the
sessions (idle ones make room; when all are in play a new game gets 429) and the record files
parsed at once, so no request can crash the server or grow it without bound. :class:`LocalOnly`
keeps other web sites out (Host and Origin checks), and state-changing requests must be JSON.

This module holds the server's state (:class:`App`), the request checks, :class:`LocalOnly` and
:func:`create_app`; the sessions are in :mod:`treppen.apps.web_sessions`, the JSON views of a position in
:mod:`treppen.apps.web_views`, the reading and replaying of uploaded record files in :mod:`treppen.apps.web_replay`
and :class:`BadRequest` in :mod:`treppen.apps.web_errors`.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import re
import secrets
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from treppen import agents
from treppen.agents import zoo
from treppen.agents.search import SearchAgent
from treppen.apps.analyse import analyse_position, analyser
from treppen.apps.options import MAX_SESSIONS, writable_folder
from treppen.apps.web_errors import BadRequest
from treppen.apps.web_limits import HINT_DEADLINE, MOVE_DEADLINE, Limiter
from treppen.apps.web_replay import HINT_SPEC, MAX_RECORD_BYTES, replay_frames, replay_hint
from treppen.apps.web_sessions import Session, SessionStore
from treppen.apps.web_views import (
    beliefs_view,
    hint_view,
    search_view,
)
from treppen.apps.zoo_command import level_label
from treppen_env import raw_env, records
from treppen_env.actions import NUM_ACTIONS
from treppen_env.history import History
from treppen_env.messages import whole_number
from treppen_env.rules import MAX_PLAYERS, MIN_PLAYERS, PRESETS

STATIC = Path(__file__).with_name("static")
YOU = "you"
MODES = ("play", "watch")
EPISODES = ("deal", "game")
MAX_JSON_BYTES = 16 * 1024
REPLAY_SLOTS = 2  # record files parsed at once; more uploads wait
JSON_TYPES = ("application/json",)
RECORD_TYPES = ("application/octet-stream", "application/gzip", "application/x-gzip", "application/jsonl")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
_DIGITS = re.compile(r"[0-9]{1,12}")


# ---------------------------------------------------------------------------------- request parsing
def _content_type(request: Request, allowed: Sequence[str]) -> None:
    """Refuse a body of another media type (415): a cross-site form cannot send ``allowed`` ones
    without the browser asking the server first (CORS), so this blocks cross-site requests.

    :raises BadRequest: 415 naming the allowed types.
    """
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in allowed:
        raise BadRequest(f"Content-Type {media[:60] or 'missing'!r}: this request takes {' or '.join(allowed)}", 415)


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, at most ``limit`` bytes (413 otherwise)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not _DIGITS.fullmatch(declared) or int(declared) > limit):
        raise BadRequest(f"request body too large (at most {limit} bytes)", 413)
    chunks, size = [], 0
    async for chunk in request.stream():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise BadRequest(f"request body too large (at most {limit} bytes)", 413)
    return b"".join(chunks)


async def _record_body(request: Request) -> bytes:
    """The record file's content in the body (``RECORD_TYPES``, at most ``MAX_RECORD_BYTES``).

    :raises BadRequest: 415 for another type, 413 for a larger body.
    """
    _content_type(request, RECORD_TYPES)
    return await _read_body(request, MAX_RECORD_BYTES)


async def _json(request: Request) -> dict[str, Any]:
    """The JSON object of the body (``application/json``, at most ``MAX_JSON_BYTES``).

    :raises BadRequest: 415 for another type, 413 for a larger body, 400 for a body that is not a
        JSON object.
    """
    _content_type(request, JSON_TYPES)
    body = await _read_body(request, MAX_JSON_BYTES)
    try:
        data = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise BadRequest(f"the request body is not JSON ({getattr(err, 'msg', 'not UTF-8')})") from None
    except RecursionError:
        raise BadRequest("the request body is JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the request body must be a JSON object, not {type(data).__name__}")
    return data


def _query_number(request: Request, key: str, default: str, noun: str) -> int:
    """The query parameter ``key`` (``default`` when absent) as a number 1..10**9.

    :raises BadRequest: 400 naming ``key`` and what it must be (a ``noun`` number).
    """
    value = request.query_params.get(key, default)
    if not _DIGITS.fullmatch(value) or not 1 <= int(value) <= 10**9:
        raise BadRequest(f"{key}={value[:20]!r} must be a {noun} number 1, 2, ... (1 = the first)")
    return int(value)


def _int(data: dict[str, Any], key: str, low: int, high: int) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadRequest(f"{key!r} must be an integer in {low}..{high}; got {value!r}"[:300])
    return value


def _choice(data: dict[str, Any], key: str, choices: Sequence[str], default: str) -> str:
    value = data.get(key, default)
    if value not in choices:
        raise BadRequest(f"{key!r} must be one of {list(choices)}; got {value!r}"[:300])
    return str(value)


# ---------------------------------------------------------------------------------- the app
class App:
    """The server's state: the agent specs it was started with, the sessions, the record folder.

    :param opponents: agent specs the page may seat (``agents.load`` specs, or the levels ``easy``,
        ``medium`` and ``hard``, each resolved to its agent at the table, :func:`treppen.agents.zoo.table_spec`;
        not ``human``). The page lists them with their strength (``config()["labels"]``).
    :param record_dir: the folder where finished deals are appended as records (one file per session), or None.
    :param max_sessions: sessions kept at once.
    :param seed: seeds the deals and agents (None: fresh entropy), for tests.
    :raises ValueError: for an unknown spec or ``human`` among the opponents, a ``record_dir`` that
        is a file or cannot be written in (:func:`treppen.apps.options.writable_folder`), or a
        ``seed`` that is not a whole number of at least 0.
    """

    def __init__(
        self,
        opponents: Sequence[str],
        record_dir: str | Path | None = None,
        max_sessions: int = MAX_SESSIONS,
        seed: int | None = None,
    ):
        specs = list(dict.fromkeys(str(s) for s in opponents))
        if not specs:
            raise ValueError("give at least one opponent spec (e.g. greedy)")
        for spec in specs:
            if spec.strip().lower().split(",")[0] == "human":
                raise ValueError("'human' cannot be a server opponent: the person plays in the page")
            agents.load(zoo.table_spec(spec, 2, "treppenromme"))  # fail at start, not in a request
        self.specs = specs
        self.record_dir = None if record_dir is None else writable_folder(record_dir)
        self.sessions = SessionStore(max_sessions)
        self._seeds = np.random.SeedSequence(None if seed is None else whole_number(seed, "seed"))

    def config(self) -> dict[str, Any]:
        return {
            "agents": self.specs,
            "labels": [level_label(s) if s in zoo.LEVELS else s for s in self.specs],
            "rules": sorted(PRESETS),
            "episodes": list(EPISODES),
            "min_players": MIN_PLAYERS,
            "max_players": MAX_PLAYERS,
        }

    def next_seed(self) -> int:
        """A new seed from the server's seed sequence (for a deal, or a hint's search)."""
        return int(self._seeds.spawn(1)[0].generate_state(1)[0])

    def new_session(self, data: dict[str, Any], seed: int | None = None) -> Session:
        """A new game from the page's choices, kept in :attr:`sessions` (see :meth:`deal`)."""
        session = self.deal(data, seed)
        self.sessions.add(session)
        return session

    def deal(self, data: dict[str, Any], seed: int | None = None) -> Session:
        """A new game from the page's choices (validated: only indices of the server's agents), not
        kept yet: the caller adds it to :attr:`sessions` (``treppen mcp`` first lets the agents move).

        :param seed: seeds the deal and the agents (None: the next seed of the server's sequence;
            ``treppen mcp`` passes its client's).

        :raises BadRequest: 400 naming the field that is wrong and what it allows; 429 when the
            server is full of games in play (see :class:`SessionStore`).
        """
        mode = _choice(data, "mode", MODES, "play")
        rules = _choice(data, "rules", sorted(PRESETS), "treppenromme")
        episode = _choice(data, "episode", EPISODES, "deal")
        seats = data.get("seats")
        if not isinstance(seats, list) or not MIN_PLAYERS <= len(seats) <= MAX_PLAYERS:
            raise BadRequest(f"'seats' must be a list of {MIN_PLAYERS}..{MAX_PLAYERS} entries")
        specs: list[str] = []
        for i, entry in enumerate(seats):
            if entry == YOU:
                specs.append(YOU)
            elif isinstance(entry, int) and not isinstance(entry, bool) and 0 <= entry < len(self.specs):
                specs.append(zoo.table_spec(self.specs[entry], len(seats), rules))
            else:
                allowed = f"'you' nor an agent 0..{len(self.specs) - 1}"
                raise BadRequest(f"seat {i}: {str(entry)[:40]!r} is neither {allowed}")
        people = specs.count(YOU)
        if people != (1 if mode == "play" else 0):
            wanted = "exactly one seat 'you'" if mode == "play" else "no seat 'you'"
            raise BadRequest(f"{mode} mode needs {wanted}; got {people}")
        self.sessions.make_room()  # a full server says so before it deals and loads the agents
        seed = self.next_seed() if seed is None else seed
        env = raw_env(num_players=len(specs), rules=rules, episode=episode)
        env.reset(seed=seed, options={"dealer": seed % len(specs)})
        players = [None if s == YOU else agents.load(s, seed=seed + i, rules=env.rules) for i, s in enumerate(specs)]
        sid = secrets.token_urlsafe(18)
        recorded_specs = ["human" if s == YOU else s for s in specs]  # the person is "human", as in treppen play
        recorder = records.Recorder(env, recorded_specs, extra={"source": "serve"})
        you = specs.index(YOU) if YOU in specs else None
        session = Session(sid, mode, specs, env, players, recorder, you, record_path=self._record_path(sid))
        session.history = History(env.rules) if you is not None else None
        return session

    def _record_path(self, sid: str) -> Path | None:
        """The record file of session ``sid`` in :attr:`record_dir` (None: no records)."""
        if self.record_dir is None:
            return None
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        return self.record_dir / f"serve-{stamp}-{sid[:8]}.jsonl"

    @staticmethod
    def move(session: Session, data: dict[str, Any]) -> dict[str, Any]:
        """The person's move: their turn, the current version, a legal action; returns the table after it.

        :raises BadRequest: 400 for a malformed or illegal action (the engine's reason), 409 for a
            game that is over, an outdated ``version`` or a move out of turn; 500 when the record
            of the deal it ends cannot be written (the move is then undone).
        """
        action = _int(data, "action", 0, NUM_ACTIONS - 1)
        version = _int(data, "version", 0, 10**9)
        with session.lock:
            if not session.over and version != session.version:
                raise BadRequest(
                    f"stale move: the table is at version {session.version}, the move was made at {version}; "
                    "reload the table",
                    409,
                )
            session.check_move(action)
            with session.transaction():
                session.play(action)
            return session.view()

    @staticmethod
    def advance(session: Session, data: dict[str, Any], ends: float | None = None) -> dict[str, Any]:
        """One agent move (the seat to move must be an agent's; one that cannot move is played by
        the greedy heuristic, :meth:`Session.agent_move`); returns the table after it.

        :param ends: when a search agent's move must be chosen (:meth:`Session.agent_move`).
        :raises BadRequest: 400 for a malformed ``version``; 409 for a game that is over, an outdated
            ``version`` or the person's turn; 500 when the record of the deal it ends cannot be
            written (the move is then undone).
        """
        version = _int(data, "version", 0, 10**9)
        with session.lock:
            _check_current(session, version)
            with session.transaction():
                session.agent_move(ends)
            return session.view()

    @staticmethod
    def searches(session: Session) -> bool:
        """Whether the seat to move is a search agent's (its move goes through the limiter)."""
        return isinstance(session.players[session.env.game.current], SearchAgent)

    def hint(self, session: Session, data: dict[str, Any], ends: float | None = None) -> dict[str, Any]:
        """The person's moves ranked by :data:`HINT_SPEC` under the session's rules, searched from
        their observation only (their turn in play mode, at the current ``version``).

        :param ends: when the search must end (``time.monotonic()`` seconds; ``None``: no deadline).
        :return: ``version``, ``agent`` (the spec), ``estimates``, ``beliefs`` and ``search``: the
            playouts it ran, its playout ``budget`` and whether the deadline ``cut_short`` it.
        :raises BadRequest: 400 for a malformed ``version``; 409 for a game that is over, an outdated
            ``version``, watch mode or another seat's turn.
        """
        version = _int(data, "version", 0, 10**9)
        with session.lock:
            _check_current(session, version)
            if session.mode != "play" or session.env.game.current != session.you:
                raise BadRequest("a hint is for your own turn in play mode", 409)
            searcher = analyser(HINT_SPEC, self.next_seed(), session.env.rules)
            if ends is not None:
                searcher.finish_by(ends)
            if session.history is not None:  # the beliefs: what the person saw the others do
                searcher.history = copy.deepcopy(session.history)
            estimates = analyse_position(session.env, searcher)
            return {
                "version": version,
                "agent": HINT_SPEC,
                "estimates": hint_view(estimates, session.env.game),
                "beliefs": beliefs_view(estimates.beliefs, len(session.env.game.stock)),
                "search": search_view(estimates, searcher),
            }

    @staticmethod
    def view(session: Session) -> dict[str, Any]:
        """The table, read under the session's lock (a move may be under way in another request)."""
        with session.lock:
            return session.view()


def _check_current(session: Session, version: int) -> None:
    """:raises BadRequest: 409 for a game that is over or a request made on an outdated table."""
    if session.over:
        raise BadRequest("the game is over; start a new one", 409)
    if version != session.version:
        raise BadRequest(f"stale request: the table is at version {session.version}, not {version}", 409)


class LocalOnly:
    """ASGI middleware that keeps other web sites out, as Jupyter does on localhost.

    - The ``Host`` header must name this server (``LOCAL_HOSTS`` or ``hosts``): a page of another
      site cannot reach it through a name rebound to 127.0.0.1 (DNS rebinding).
    - A state-changing request (not GET/HEAD/OPTIONS) that carries an ``Origin`` must come from
      this server's own origin: another site's page cannot create, play or end games.

    Refusals are 403 with a JSON ``error`` saying why. (The handlers also require a JSON or file
    media type, which a cross-site form cannot send.)
    """

    def __init__(self, app: ASGIApp, hosts: Sequence[str] = ()):
        self.app = app
        self.hosts = {h.lower().strip("[]") for h in (*LOCAL_HOSTS, *hosts)}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(Headers(scope=scope), scope["method"])
            if refusal:
                await JSONResponse({"error": refusal}, status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, headers: Headers, method: str) -> str | None:
        """Why a request with these headers is refused, or None."""
        host = headers.get("host", "")
        if _hostname(host) not in self.hosts:
            allowed = ", ".join(sorted(self.hosts))
            return f"Host {host[:80]!r} is not this server (allowed: {allowed}); open the page by one of these names"
        origin = headers.get("origin")
        if method not in SAFE_METHODS and origin is not None and _netloc(origin) != host.lower():
            return f"cross-origin request from {origin[:80]!r} refused: only this server's own page may change games"
        return None


def _hostname(host: str) -> str | None:
    """The host name of a ``Host`` header value (``"[::1]:8000"`` -> ``"::1"``), None if malformed."""
    try:
        return urlsplit(f"//{host}").hostname
    except ValueError:
        return None


def _netloc(origin: str) -> str | None:
    """``host:port`` of an ``Origin`` (``"http://127.0.0.1:8000"``), None for ``null`` or a malformed one."""
    try:
        parts = urlsplit(origin)
    except ValueError:
        return None
    return parts.netloc.lower() if parts.scheme in ("http", "https") else None


def create_app(
    opponents: Sequence[str],
    record_dir: str | Path | None = None,
    max_sessions: int = MAX_SESSIONS,
    seed: int | None = None,
    hosts: Sequence[str] = (),
    search_slots: int | None = None,
) -> Starlette:
    """The app of ``treppen serve`` (arguments as :class:`App`), behind :class:`LocalOnly`.

    :param hosts: ``Host`` names allowed besides ``LOCAL_HOSTS`` (the address it is served on).
    :param search_slots: searches at once (:class:`~treppen.apps.web_limits.Limiter`; default:
        the cores this process may use).
    """
    app_state = App(opponents, record_dir, max_sessions, seed)
    replay_slots = asyncio.Semaphore(REPLAY_SLOTS)
    limiter = Limiter(search_slots)

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def favicon(request: Request) -> Response:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    async def config(request: Request) -> Response:
        return JSONResponse(app_state.config())

    async def new_session(request: Request) -> Response:
        data = await _json(request)
        session = await run_in_threadpool(app_state.new_session, data)
        return JSONResponse(session.view())

    async def get_session(request: Request) -> Response:
        session = app_state.sessions.get(request.path_params["sid"])
        return JSONResponse(await run_in_threadpool(App.view, session))

    async def delete_session(request: Request) -> Response:
        app_state.sessions.remove(request.path_params["sid"])  # 404 for an unknown one
        return JSONResponse({"deleted": True})

    def acting(
        method: Callable[..., dict[str, Any]], deadline: float | None = None, refuse: bool = False
    ) -> Callable[[Request], Any]:
        """An endpoint answering by ``method(session, data)``; with a ``deadline``, a search behind
        the limiter (a hint always, with ``refuse``; an agent's move when that agent searches)."""

        async def endpoint(request: Request) -> Response:
            arrived = time.monotonic()
            session = app_state.sessions.get(request.path_params["sid"])
            data = await _json(request)
            if deadline is None or not (refuse or App.searches(session)):
                return JSONResponse(await run_in_threadpool(method, session, data))
            work = functools.partial(method, session, data)
            return await limiter.run(session.id, arrived + deadline, work, refuse)

        return endpoint

    async def session_record(request: Request) -> Response:
        session = app_state.sessions.get(request.path_params["sid"])
        text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in list(session.recorder.records))
        headers = {"Content-Disposition": f'attachment; filename="treppen-{session.id[:8]}.jsonl"'}
        return Response(text, media_type="application/jsonl", headers=headers)

    async def replay(request: Request) -> Response:
        deal = _query_number(request, "deal", "1", "deal")
        content = await _record_body(request)
        async with replay_slots:  # a parse holds the file's objects: a few at once bound the memory
            return JSONResponse(await run_in_threadpool(replay_frames, content, deal))

    async def replay_hint_endpoint(request: Request) -> Response:
        deal = _query_number(request, "deal", "1", "deal")
        step = _query_number(request, "step", "", "move")
        content = await _record_body(request)
        seed = app_state.next_seed()
        async with replay_slots:  # the parse as for a replay, then a short search (due from the upload's end)
            hinted = functools.partial(replay_hint, content, deal, step, seed)
            return await limiter.run("replay", time.monotonic() + HINT_DEADLINE, hinted, refuse=True)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return JSONResponse({"error": exc.detail}, status_code=exc.status_code)

    async def server_error(request: Request, exc: Exception) -> Response:
        # the traceback goes to the server's log; the page gets no internals
        return JSONResponse({"error": "server error (the server's log has the details)"}, status_code=500)

    routes = [
        Route("/", index),
        Route("/favicon.ico", favicon),
        Route("/api/config", config),
        Route("/api/sessions", new_session, methods=["POST"]),
        Route("/api/sessions/{sid}", get_session),
        Route("/api/sessions/{sid}", delete_session, methods=["DELETE"]),
        Route("/api/sessions/{sid}/move", acting(App.move), methods=["POST"]),
        Route("/api/sessions/{sid}/advance", acting(App.advance, MOVE_DEADLINE), methods=["POST"]),
        Route("/api/sessions/{sid}/hint", acting(app_state.hint, HINT_DEADLINE, refuse=True), methods=["POST"]),
        Route("/api/sessions/{sid}/record", session_record),
        Route("/api/replay", replay, methods=["POST"]),
        Route("/api/replay/hint", replay_hint_endpoint, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(LocalOnly, hosts=hosts)],
        exception_handlers={HTTPException: http_error, Exception: server_error},
    )
    app.state.treppen = app_state
    app.state.limiter = limiter
    return app
