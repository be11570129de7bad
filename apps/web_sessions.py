"""The games of the web page and of ``treppen mcp`` (:mod:`treppen.apps.web`, :mod:`treppen.apps.mcp_server`):
a session per game, and the store that bounds them.

A request changes its session in one transaction (:meth:`Session.transaction`): the game, the
agents' memory, the log and the deals' records change together, and the records of the deals it
finished are written to the record file before the change is kept. When anything fails on the
way, the session is as it was before the request, and the error says why.

An agent at the table that cannot move (its ``act`` raises, or answers an illegal action: a
language model's endpoint that refuses, a third-party agent's bug) does not stop the game: the
greedy heuristic plays that move for it, and the log says so with the reason.
"""

from __future__ import annotations

import copy
import numbers
import pickle
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from treppen import agents
from treppen.agents.greedy import GreedyAgent
from treppen.agents.search import SearchAgent
from treppen.apps.options import MAX_SESSIONS
from treppen.apps.web_errors import BadRequest
from treppen.apps.web_views import cards, deal_summary, final_table, legal_moves, move_text, table_view
from treppen_env import records
from treppen_env.actions import NUM_ACTIONS
from treppen_env.engine import GameState
from treppen_env.history import History
from treppen_env.messages import PATH_LIMIT, cut, shorten

LOG_LENGTH = 14
#: Characters of an agent's failure shown in the log at most.
REASON_CHARS = 200


@dataclass
class Session:
    """One game in one browser tab (or of one MCP client): the env, the agents of the other seats,
    the log and the records.

    :param record_path: the file the finished deals are appended to, or None.
    """

    id: str
    mode: str
    seats: list[str]  # spec per seat, YOU for the person
    env: Any
    players: list[agents.Agent | None]
    recorder: records.Recorder
    you: int | None
    record_path: Path | None = None
    version: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)
    #: What the person saw the opponents do this deal (their rebuilt decisions), for the hint's beliefs.
    history: History | None = None
    #: The agent that moves for a seat whose agent cannot (made when first needed).
    fallback: agents.Agent | None = None

    def __post_init__(self) -> None:
        #: Whether each seat's agent can be copied, to be restored after a failed request (an
        #: ``llm`` agent cannot: it holds a connection; it keeps what it saw).
        self._copyable = [player is not None and _copyable(player) for player in self.players]

    @property
    def over(self) -> bool:
        """Whether the episode (the deal, or the game) has ended."""
        agent = self.env.agent_selection
        return bool(self.env.terminations[agent] or self.env.truncations[agent])

    def view(self) -> dict[str, Any]:
        state: GameState = self.env.game
        hidden = self.mode == "play" and not state.deal_over  # the hands are shown when the deal is over
        table = table_view(state, self.seats, self.you if hidden else None)
        to_move = table["to_move"]
        yours = not self.over and to_move is not None and to_move == self.you
        mask = state.legal_mask() if yours else np.zeros(0, dtype=np.int8)
        return {
            "session": self.id,
            "mode": self.mode,
            "episode": self.env.episode,
            "version": self.version,
            "you": self.you,
            "over": self.over,
            "your_turn": yours,
            "agent_to_move": not self.over and to_move is not None and to_move != self.you,
            "table": table,
            "legal": legal_moves(state, mask) if yours else None,
            "log": self.log[-LOG_LENGTH:],
            "summary": self.summary,
            "records": len(self.recorder.records),
        }

    # ------------------------------------------------------------------ moves
    def check_move(self, action: int) -> None:
        """Refuse the person's ``action`` unless it is their turn and the action is legal.

        :raises BadRequest: 409 for a game that is over or another seat's turn, 400 for an illegal
            action (the engine's reason).
        """
        if self.over:
            raise BadRequest("the game is over; start a new one", 409)
        if self.mode != "play" or self.env.game.current != self.you:
            raise BadRequest("it is not your turn", 409)
        if not self.env.game.legal_mask()[action]:
            try:
                self.env.game.apply(action)  # raises the engine's reason, leaves the state as it is
            except ValueError as err:
                raise BadRequest(f"illegal move: {err}") from None
            raise AssertionError("the mask and the engine disagree")  # pragma: no cover

    def agent_move(self, ends: float | None = None) -> None:
        """Play the move of the agent to move: its own, or the greedy heuristic's when it cannot
        move (its ``act`` raised, or answered an illegal action; the log names the reason).

        :param ends: when a search agent's move must be chosen (``time.monotonic()`` seconds): its
            ``deadline`` is the time left then (0 when it has passed: the floor budget,
            :mod:`treppen.agents.search_settings`); ``None``: the agent's own budget.
        :raises BadRequest: 409 when it is the person's turn.
        """
        player = self.players[self.env.game.current]
        if player is None:
            raise BadRequest("it is your turn, not an agent's", 409)
        if ends is not None and isinstance(player, SearchAgent):
            player.finish_by(ends)
        observation = self.env.observe(self.env.agent_selection)
        try:
            action = player.act(observation)
            if not isinstance(action, numbers.Integral) or not 0 <= int(action) < NUM_ACTIONS:
                raise ValueError(f"it answered {shorten(action)}, not an action 0..{NUM_ACTIONS - 1}")
            if not observation["action_mask"][action]:
                raise ValueError(f"it answered action {action}, which is not legal now")
        except Exception as err:  # an agent's failure is its seat's, not the server's: greedy moves for it
            if self.fallback is None:
                self.fallback = GreedyAgent(rules=self.env.rules)
            reason = cut(str(err) or type(err).__name__, REASON_CHARS)
            self.play(self.fallback.act(observation), f"greedy's move: the agent failed: {reason}")
            return
        self.play(int(action))

    def play(self, action: int, note: str | None = None) -> None:
        """Play ``action`` for the seat to move (legality checked by the caller or the env) and log it
        with the points it booked (and ``note``, when given); a move that ends a deal logs the
        mover's deal points less what it had booked, and sets :attr:`summary`."""
        state: GameState = self.env.game
        seat = state.current
        if seat == self.you and self.history is not None:  # the person's decision: what they saw
            self.history.observe(self.env.observe(self.env.agent_selection), state.known[seat])
            self.history.acted(action)
        deals = state.deals_played
        before = state.points[seat]
        text = move_text(action, cards(state.staircase)) + ("" if note is None else f" ({note})")
        self.env.step(action)
        if self.history is not None and state.deals_played != deals:
            self.history.reset()
        record = self.recorder.step(action)
        self.version += 1
        if record is None:
            self.log.append({"seat": seat, "move": text, "points": state.points[seat] - before})
        else:
            summary = self.summary = deal_summary(self.env, final_table(record, self.seats))
            # the deal's end scores it: the going-out credit, or the hand deducted (RULES §6)
            self.log.append({"seat": seat, "move": text, "points": summary["deal_points"][seat] - before})
            points = " / ".join(map(str, summary["deal_points"]))
            self.log.append({"seat": None, "move": f"deal {summary['deal']} over: {summary['outcome_text']}; {points}"})
        del self.log[: -LOG_LENGTH * 2]

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The changes made in the block, kept as one: when it ends, the records of the deals it
        finished are appended to :attr:`record_path`; when that or the block fails, the session
        (game, agents, log, records, version) is restored as it was before, and the error goes on.

        :raises BadRequest: 500 when a record cannot be written (the reason and the file named).
        """
        saved = self._saved()
        finished = len(self.recorder.records)
        try:
            yield
            self._write(self.recorder.records[finished:])
        except BaseException:
            self._restore(saved)
            raise

    def _saved(self) -> dict[str, Any]:
        """A copy of what a request may change (one deep copy: the recorder keeps its env)."""
        players = [p if keep else None for p, keep in zip(self.players, self._copyable, strict=True)]
        parts = {"env": self.env, "recorder": self.recorder, "history": self.history, "fallback": self.fallback}
        return copy.deepcopy(
            {**parts, "players": players, "log": self.log, "summary": self.summary, "version": self.version}
        )

    def _restore(self, saved: dict[str, Any]) -> None:
        copies = zip(self.players, saved.pop("players"), self._copyable, strict=True)
        self.players = [copied if keep else player for player, copied, keep in copies]
        for name, value in saved.items():
            setattr(self, name, value)

    def _write(self, finished: list[dict[str, Any]]) -> None:
        """Append the ``finished`` deals' records to :attr:`record_path` (none: nothing to do).

        :raises BadRequest: 500 naming the file and the reason, when one cannot be written.
        """
        if self.record_path is None:
            return
        for record in finished:
            try:
                records.append(self.record_path, record)
            except OSError as err:
                path = shorten(str(self.record_path), PATH_LIMIT)
                raise BadRequest(f"the deal's record cannot be written to {path}: {err.strerror or err}", 500) from None


def _copyable(player: agents.Agent) -> bool:
    """Whether ``player`` can be copied (a request that fails restores its copy)."""
    try:
        pickle.dumps(player)
    except Exception:  # whatever an agent holds (a connection, a lock) may refuse, in any way
        return False
    return True


class SessionStore:
    """Sessions by id: at most ``max_sessions``, none unused for longer than ``ttl`` seconds.

    When full, a new session takes the place of the one unused the longest, finished games first;
    a session used in the last ``protect`` seconds is never dropped (the store is then full:
    :meth:`add` answers 429).
    """

    def __init__(self, max_sessions: int = MAX_SESSIONS, ttl: float = 3600.0, protect: float = 300.0):
        self.max_sessions = max_sessions
        self.ttl = ttl
        self.protect = protect
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def make_room(self) -> None:
        """Make room for one more session (the expired ones go, then, when full, an idle one), so
        that a full server refuses a new game before building it.

        :raises BadRequest: 429 when every kept session was used in the last ``protect`` seconds.
        """
        with self._lock:
            self._make_room()

    def add(self, session: Session) -> None:
        """Keep ``session``, dropping an idle one when full.

        :raises BadRequest: 429 when every kept session was used in the last ``protect`` seconds.
        """
        with self._lock:
            self._make_room()
            self._sessions[session.id] = session

    def get(self, sid: str) -> Session:
        """The session ``sid``; :class:`BadRequest` 404 when there is none (unknown or expired)."""
        with self._lock:
            self._expire()
            session = self._sessions.get(sid)
            if session is None:
                raise _no_session(sid)
            self._sessions.move_to_end(sid)
            session.last_used = time.monotonic()
            return session

    def remove(self, sid: str) -> None:
        """Drop the session ``sid``; :class:`BadRequest` 404 when there is none."""
        with self._lock:
            if self._sessions.pop(sid, None) is None:
                raise _no_session(sid)

    def __len__(self) -> int:
        return len(self._sessions)

    def _make_room(self) -> None:
        self._expire()
        if len(self._sessions) >= self.max_sessions:
            self._evict_idle()

    def _expire(self) -> None:
        now = time.monotonic()
        for sid in [s for s, v in self._sessions.items() if now - v.last_used > self.ttl]:
            del self._sessions[sid]

    def _evict_idle(self) -> None:
        now = time.monotonic()
        idle = [s for s in self._sessions.values() if now - s.last_used >= self.protect]
        if not idle:
            raise BadRequest(
                f"the server is full: {self.max_sessions} games, each played in the last "
                f"{self.protect / 60:g} minutes; finish or close one, or try again later",
                429,
            )
        victim = min(idle, key=lambda s: (not s.over, s.last_used))  # finished games first, then the oldest
        del self._sessions[victim.id]


def _no_session(sid: str) -> BadRequest:
    return BadRequest(f"no session {sid[:40]!r}: it expired or never existed; start a new game", 404)
